//! `policy.guardrails` and the `guardrails:` lists that name them: patterns that do not compile,
//! guardrails that do nothing, webhook settings that cannot work.

use super::super::location::escape;
use super::super::{Diagnostic, GuardrailConfig, LoadedConfig};

/// The errors of `policy.guardrails.*`, and a warning per name a `guardrails:` list gives (in
/// `policy`, or of a virtual server in `gateway.servers`) that the file does not define (fine
/// when the application registers it in code).
pub(super) fn check(
    cfg: &LoadedConfig,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    let p = &cfg.policy;
    for (name, g) in &p.guardrails {
        check_one(
            cfg,
            &format!("/policy/guardrails/{}", escape(name)),
            g,
            errors,
        );
    }
    let levels = std::iter::once(("/policy/defaults".to_string(), &p.defaults))
        .chain(
            p.tools
                .iter()
                .map(|(k, v)| (format!("/policy/tools/{}", escape(k)), v)),
        )
        .chain(
            p.sources
                .iter()
                .map(|(k, v)| (format!("/policy/sources/{}", escape(k)), v)),
        );
    let lists = levels
        .map(|(at, tp)| (at, tp.guardrails.as_deref().unwrap_or_default()))
        .chain(
            cfg.gateway
                .servers
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("/gateway/servers/{i}"), s.guardrails.as_slice())),
        );
    for (at, names) in lists {
        for (i, name) in names.iter().enumerate() {
            if !p.guardrails.contains_key(name) {
                let pointer = format!("{at}/guardrails/{i}");
                let defined: Vec<&str> = p.guardrails.keys().map(String::as_str).collect();
                let hint = if defined.is_empty() {
                    "this file defines no `policy.guardrails` (fine if the application registers \
                     it in code)"
                        .to_string()
                } else {
                    format!(
                        "guardrails defined in this file: `{}` (fine if the application \
                         registers `{name}` in code)",
                        defined.join("`, `")
                    )
                };
                warnings.push(
                    Diagnostic::warning(
                        &cfg.path,
                        Some(cfg.locate(&pointer)),
                        format!("unknown guardrail `{name}`"),
                    )
                    .with_hint(hint),
                );
            }
        }
    }
}

/// The error of `pattern` as a regular expression, if it does not compile.
fn regex_error(pattern: &str) -> Option<String> {
    regex::Regex::new(pattern)
        .err()
        .map(|e| format!("`{pattern}` is not a valid regular expression: {e}"))
}

fn check_one(cfg: &LoadedConfig, at: &str, g: &GuardrailConfig, errors: &mut Vec<Diagnostic>) {
    if g.mask.is_none() && g.deny.is_empty() && g.webhook.is_none() {
        errors.push(
            cfg.error_at(
                at,
                "this guardrail has no `mask`, `deny` or `webhook`, so it does nothing",
            )
            .with_hint("e.g. mask: {detectors: [email, card, secrets]}"),
        );
    }
    if let Some(m) = &g.mask {
        if m.detectors.is_empty() && m.patterns.is_empty() {
            errors.push(cfg.error_at(
                &format!("{at}/mask"),
                "this mask has no detector and no pattern, so it masks nothing",
            ));
        }
        if !m.results && !m.arguments {
            errors.push(cfg.error_at(
                &format!("{at}/mask"),
                "`results: false` and `arguments: false`: this mask applies nowhere",
            ));
        }
        for (i, pat) in m.patterns.iter().enumerate() {
            let here = format!("{at}/mask/patterns/{i}");
            if pat.name.trim().is_empty() {
                errors.push(cfg.error_at(&format!("{here}/name"), "`name` is empty: name the pattern (it is the `{kind}` of its replacement and its metric label)"));
            }
            if let Some(e) = regex_error(&pat.regex) {
                errors.push(cfg.error_at(&format!("{here}/regex"), e));
            } else if regex::Regex::new(&pat.regex).is_ok_and(|r| r.is_match("")) {
                errors.push(cfg.error_at(
                    &format!("{here}/regex"),
                    format!(
                        "`{}` matches the empty text, so it would mask between every character",
                        pat.regex
                    ),
                ));
            }
        }
    }
    for (i, rule) in g.deny.iter().enumerate() {
        let here = format!("{at}/deny/{i}");
        if rule.name.trim().is_empty() {
            errors.push(cfg.error_at(
                &format!("{here}/name"),
                "`name` is empty: name the rule (refusals and metrics show it)",
            ));
        }
        if let Some(e) = regex_error(&rule.pattern) {
            errors.push(cfg.error_at(&format!("{here}/pattern"), e));
        }
        if rule
            .argument
            .as_deref()
            .is_some_and(|a| a.trim().is_empty())
        {
            errors.push(cfg.error_at(&format!("{here}/argument"), "`argument` is empty: name the argument (`query`), give a JSON pointer (`/filter/sql`), or leave it out to check every argument"));
        }
    }
    if let Some(w) = &g.webhook {
        let raw = w.url.raw();
        if !raw.contains("${") && !super::is_http_url(raw) {
            errors.push(cfg.error_at(
                &format!("{at}/webhook/url"),
                "the webhook `url` must be an absolute `http://` or `https://` URL",
            ));
        }
        if w.timeout_ms == 0 {
            errors.push(cfg.error_at(
                &format!("{at}/webhook/timeout_ms"),
                "`timeout_ms: 0` would time out every check at once; use at least 1 (milliseconds)",
            ));
        }
        if w.on.is_empty() {
            errors.push(cfg.error_at(
                &format!("{at}/webhook/on"),
                "`on` is empty, so the webhook is never asked; give `arguments`, `result` or both",
            ));
        }
    }
}
