//! The exported tool-name rule.

/// Why a name cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("tool name is empty (must match ^[a-zA-Z0-9_-]{{1,64}}$)")]
    Empty,
    /// The name is longer than 64 characters.
    #[error("tool name `{name}` is {len} characters long; the limit is 64 (OpenAI and Anthropic)")]
    TooLong {
        /// The name.
        name: String,
        /// Its length in characters.
        len: usize,
    },
    /// The name has a character outside `[a-zA-Z0-9_-]`.
    #[error(
        "tool name `{name}` contains {found:?} at position {index}; only ASCII letters, digits, `_` and `-` are allowed (^[a-zA-Z0-9_-]{{1,64}}$)"
    )]
    BadChar {
        /// The name.
        name: String,
        /// The offending character.
        found: char,
        /// Its position (0-based, in characters).
        index: usize,
    },
}

/// Checks `name` against `^[a-zA-Z0-9_-]{1,64}$`, the rule OpenAI and Anthropic apply to tool
/// names (OpenAI: function `name`; Anthropic: tool `name`).
///
/// # Errors
/// [`NameError`] saying which character or how long.
pub fn validate_tool_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some((index, found)) = name
        .chars()
        .enumerate()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(NameError::BadChar {
            name: name.to_string(),
            found,
            index,
        });
    }
    let len = name.chars().count();
    if len > 64 {
        return Err(NameError::TooLong {
            name: name.to_string(),
            len,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        assert!(validate_tool_name("read_file-2").is_ok());
        assert!(validate_tool_name(&"a".repeat(64)).is_ok());
        assert!(matches!(
            validate_tool_name(&"a".repeat(65)),
            Err(NameError::TooLong { len: 65, .. })
        ));
        assert!(matches!(
            validate_tool_name("a b"),
            Err(NameError::BadChar {
                found: ' ',
                index: 1,
                ..
            })
        ));
        assert_eq!(validate_tool_name(""), Err(NameError::Empty));
    }
}
