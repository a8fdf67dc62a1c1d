//! Tool names, argument names and operation filters.
//!
//! - A tool is named after its `operationId`, every character outside `[a-zA-Z0-9_-]` replaced
//!   by `_`.
//! - Without `operationId`: `{method}_{segments}`, each path segment snake_cased and a
//!   `{param}` segment written `by_{param_snake}`: `GET /accounts/{accountId}/transactions` →
//!   `get_accounts_by_account_id_transactions`. It depends only on the method and path.
//! - A name longer than the limit keeps its first `limit - 9` characters, then `_` and 8 hex
//!   digits of the FNV-1a 32-bit hash of the name before shortening (the raw `operationId`, or
//!   the derived name), the same on every platform.

// The sanitising, shortening and hash rule is shared with remote MCP tools, so it lives in
// `crate::names`.
#[cfg(test)]
pub(crate) use crate::names::fnv1a32;
pub(crate) use crate::names::{sanitize, shorten};

/// `accountId` → `account_id`, `X-Rate.Limit` → `x_rate_limit`.
pub(crate) fn snake(text: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    out.trim_end_matches('_').to_string()
}

/// The name of an operation without `operationId`.
pub(crate) fn derived(method: &str, path: &str) -> String {
    let mut parts = vec![method.to_ascii_lowercase()];
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let s = if let Some(p) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            format!("by_{}", snake(p))
        } else {
            // `{id}.json`, `{a}-{b}`: the parameters inside a segment also become `by_`.
            let s = seg.replace('{', " by ").replace('}', " ");
            snake(&s)
        };
        if !s.is_empty() {
            parts.push(s);
        }
    }
    parts.join("_")
}

/// Whether `name` may be an input-schema property: `^[a-zA-Z0-9_.-]{1,64}$` (the Anthropic
/// `input_schema` property-name rule, the strictest of the providers').
pub(crate) fn valid_arg(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `name` made a valid property name: invalid characters → `_`, at most 64 characters.
pub(crate) fn arg_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() { "arg".to_string() } else { s }
}

/// Whether the path template matches a glob of `OperationFilter::paths`: `*` matches within one
/// segment (any characters but `/`), `**` any number of whole segments.
pub(crate) fn path_matches(glob: &str, path: &str) -> bool {
    let g: Vec<&str> = glob.split('/').filter(|s| !s.is_empty()).collect();
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segs_match(&g, &p)
}

fn segs_match(g: &[&str], p: &[&str]) -> bool {
    match g.split_first() {
        None => p.is_empty(),
        Some((&"**", rest)) => (0..=p.len()).any(|i| segs_match(rest, p.get(i..).unwrap_or(&[]))),
        Some((first, rest)) => match p.split_first() {
            Some((s, prest)) => seg_match(first, s) && segs_match(rest, prest),
            None => false,
        },
    }
}

/// One segment against a pattern with `*` wildcards.
fn seg_match(pat: &str, s: &str) -> bool {
    let parts: Vec<&str> = pat.split('*').collect();
    if parts.len() == 1 {
        return pat == s;
    }
    let (first, last) = (
        parts.first().copied().unwrap_or(""),
        parts.last().copied().unwrap_or(""),
    );
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = s.get(first.len()..s.len() - last.len()).unwrap_or("");
    for mid in parts.iter().skip(1).take(parts.len().saturating_sub(2)) {
        match rest.find(mid) {
            Some(i) => rest = rest.get(i + mid.len()..).unwrap_or(""),
            None => return false,
        }
    }
    true
}
