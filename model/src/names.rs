//! Name rules shared by the code generator and the runtime.
//!
//! * A **tool name** as exported to a model matches `^[a-zA-Z0-9_-]{1,64}$` (the limit of the
//!   OpenAI and Anthropic tool-calling APIs). [`validate_tool_name`] checks it.
//! * A **source id** (the `id:` of an `openapi`, `mcp` or `a2a` entry) prefixes its tools as
//!   `{source_id}.{tool}` inside toolgate and `{source_id}__{tool}` when exported. It uses the same
//!   characters, must not contain `__` (so the exported form splits back at its first `__`) and
//!   must not be `local` (the id of the compiled tools). [`validate_source_id`] checks it.

/// The longest tool name the OpenAI and Anthropic APIs accept, in characters.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// The source id of the compiled (`#[tool]`) tools; no configured source may use it.
pub const LOCAL_SOURCE_ID: &str = "local";

/// Why a name breaks the rules of this module. Its `Display` says which character, at which
/// position, or the length, and quotes the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is the empty string.
    #[error("the name is empty; names must match `^[a-zA-Z0-9_-]{{1,64}}$`")]
    Empty,
    /// The name is longer than [`MAX_TOOL_NAME_LEN`] characters.
    #[error(
        "`{name}` is {len} characters long; names may have at most {max} characters \
         (the OpenAI/Anthropic limit)"
    )]
    TooLong {
        /// The offending name.
        name: String,
        /// Its length in characters.
        len: usize,
        /// The maximum length.
        max: usize,
    },
    /// The name contains a character outside `[a-zA-Z0-9_-]`.
    #[error(
        "`{name}` contains {ch:?} at position {position}; names may only contain ASCII letters, \
         digits, `_` and `-`"
    )]
    InvalidChar {
        /// The offending name.
        name: String,
        /// The first character that is not allowed.
        ch: char,
        /// Its position (0-based, in characters).
        position: usize,
    },
    /// A source id contains `__`, which is the separator of exported remote tool names.
    #[error(
        "source id `{name}` contains `__`, the separator of exported remote tool names \
         (`{{source}}__{{tool}}`)"
    )]
    DoubleUnderscore {
        /// The offending id.
        name: String,
    },
    /// A source id is reserved.
    #[error("source id `{name}` is reserved (it names the compiled tools)")]
    Reserved {
        /// The offending id.
        name: String,
    },
}

/// Checks that `name` may be exported as a tool name: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// # Errors
/// [`NameError::Empty`], [`NameError::TooLong`] or [`NameError::InvalidChar`] (the first bad
/// character and its position).
///
/// ```
/// use toolgate_model::validate_tool_name;
/// assert!(validate_tool_name("read_file").is_ok());
/// let err = validate_tool_name("read file").unwrap_err();
/// assert!(err.to_string().contains("' ' at position 4"));
/// ```
pub fn validate_tool_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some((position, ch)) = name.chars().enumerate().find(|(_, c)| !is_name_char(*c)) {
        return Err(NameError::InvalidChar {
            name: name.to_string(),
            ch,
            position,
        });
    }
    let len = name.chars().count();
    if len > MAX_TOOL_NAME_LEN {
        return Err(NameError::TooLong {
            name: name.to_string(),
            len,
            max: MAX_TOOL_NAME_LEN,
        });
    }
    Ok(())
}

/// Checks a source id (`id:` of an `openapi`, `mcp` or `a2a` entry): the tool-name rule, no `__`,
/// not `local`.
///
/// # Errors
/// Any [`NameError`].
pub fn validate_source_id(id: &str) -> Result<(), NameError> {
    validate_tool_name(id)?;
    if id.contains("__") {
        return Err(NameError::DoubleUnderscore {
            name: id.to_string(),
        });
    }
    if id == LOCAL_SOURCE_ID {
        return Err(NameError::Reserved {
            name: id.to_string(),
        });
    }
    Ok(())
}

/// The separator of `{source_id}.{tool}` inside toolgate.
pub const SOURCE_SEPARATOR: char = '.';

/// The separator of `{source_id}__{tool}` in exported names.
pub const EXPORTED_SEPARATOR: &str = "__";

/// The name a model sees for tool `name`: `{source}.{tool}` becomes `{source}__{tool}` (the
/// first `.` only; a source id never contains `__`, so [`internal_name`] reverses it). A name
/// without `.` is returned as is.
///
/// ```
/// use toolgate_model::names::{exported_name, internal_name};
/// assert_eq!(exported_name("github.list_issues"), "github__list_issues");
/// assert_eq!(exported_name("read_file"), "read_file");
/// assert_eq!(internal_name("github__list_issues"), "github.list_issues");
/// ```
pub fn exported_name(name: &str) -> std::borrow::Cow<'_, str> {
    match name.split_once(SOURCE_SEPARATOR) {
        Some((source, tool)) => format!("{source}{EXPORTED_SEPARATOR}{tool}").into(),
        None => name.into(),
    }
}

/// The name inside toolgate of an exported name (the reverse of [`exported_name`]): the first
/// `__` becomes `.`. A name without `__` is returned as is.
pub fn internal_name(exported: &str) -> std::borrow::Cow<'_, str> {
    match exported.split_once(EXPORTED_SEPARATOR) {
        Some((source, tool)) => format!("{source}{SOURCE_SEPARATOR}{tool}").into(),
        None => exported.into(),
    }
}

/// Whether `c` may appear in a tool name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// FNV-1a, 32 bits (offset basis 0x811c9dc5, prime 0x01000193), over the UTF-8 bytes: the hash
/// of the suffix of shortened names, the same on every platform and in every release.
pub fn fnv1a32(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (one `_` per character).
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect()
}

/// `name` shortened to `max` characters with a hash suffix of `original` when it is longer
///; `None` when it fits. See [`with_hash`] for the shape.
pub fn shorten(name: &str, original: &str, max: usize) -> Option<String> {
    (name.len() > max).then(|| with_hash(name, original, max))
}

/// `name` (ASCII) cut to its first `max - 9` characters, then `_` and the 8 lower-case hex
/// digits of [`fnv1a32`] of `original`: at most `max` characters. With `max` of 9 or less, only
/// the first `max` (at least 1) hex digits.
pub fn with_hash(name: &str, original: &str, max: usize) -> String {
    let hash = format!("{:08x}", fnv1a32(original));
    if max <= 9 {
        return hash.chars().take(max.max(1)).collect();
    }
    let keep: String = name.chars().take(max - 9).collect();
    format!("{keep}_{hash}")
}

/// A name a provider accepts for `name`, in at most `max` characters: [`sanitize`]d, then
/// [`shorten`]ed with the hash of `name` itself when too long. A name that is
/// already legal and fits is returned unchanged. The OpenAPI conversion and remote MCP tools
/// both use this rule; a remote tool gets `max` = 64 minus its `{source_id}__` prefix.
///
/// ```
/// use toolgate_model::names::provider_safe;
/// assert_eq!(provider_safe("admin.tools.list", 57), "admin_tools_list");
/// assert_eq!(provider_safe("Report builder", 57), "Report_builder");
/// let long = provider_safe(&"x".repeat(70), 57);
/// assert_eq!(long.len(), 57);
/// assert_eq!(&long[..49], "x".repeat(48) + "_");
/// ```
pub fn provider_safe(name: &str, max: usize) -> String {
    let clean = sanitize(name);
    shorten(&clean, name, max).unwrap_or(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_legal_names() {
        for n in ["a", "read_file", "get-weather", "A1_b-2", &"x".repeat(64)] {
            assert!(validate_tool_name(n).is_ok(), "{n}");
        }
    }

    #[test]
    fn rejects_with_reason() {
        assert_eq!(validate_tool_name(""), Err(NameError::Empty));
        let e = validate_tool_name("fs.read").unwrap_err();
        assert!(e.to_string().contains("'.' at position 2"), "{e}");
        let e = validate_tool_name(&"x".repeat(65)).unwrap_err();
        assert!(e.to_string().contains("65 characters long"), "{e}");
        assert!(e.to_string().contains("at most 64"), "{e}");
        let e = validate_tool_name("café").unwrap_err();
        assert!(e.to_string().contains("'é' at position 3"), "{e}");
    }

    #[test]
    fn provider_safe_names() {
        // illegal characters become `_`, a legal name is kept as is.
        assert_eq!(provider_safe("admin.tools.list", 57), "admin_tools_list");
        assert_eq!(provider_safe("Report builder", 57), "Report_builder");
        assert_eq!(provider_safe("a/b:c", 64), "a_b_c");
        assert_eq!(provider_safe("café", 64), "caf_");
        assert_eq!(provider_safe("read_file", 64), "read_file");
        // Too long: truncated, `_`, 8 hex of FNV-1a of the original (not the sanitised) name.
        let long = format!("reports.{}", "y".repeat(62));
        let safe = provider_safe(&long, 57);
        assert_eq!(safe.len(), 57);
        assert_eq!(
            safe,
            format!("reports_{}_{:08x}", "y".repeat(40), fnv1a32(&long))
        );
        assert!(validate_tool_name(&format!("files__{safe}")).is_ok());
        assert_ne!(
            provider_safe(&long, 57),
            provider_safe(&long.replace('.', " "), 57),
            "the hash is of the original name"
        );
        assert_eq!(fnv1a32(""), 0x811c_9dc5);
        assert_eq!(fnv1a32("a"), 0xe40c_292c);
        assert_eq!(
            with_hash("abc", "abc", 5),
            format!("{:08x}", fnv1a32("abc"))[..5]
        );
    }

    #[test]
    fn source_ids() {
        assert!(validate_source_id("github").is_ok());
        assert!(matches!(
            validate_source_id("a__b"),
            Err(NameError::DoubleUnderscore { .. })
        ));
        assert!(matches!(
            validate_source_id("local"),
            Err(NameError::Reserved { .. })
        ));
    }
}
