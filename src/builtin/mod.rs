//! toolgate's built-in tools, as plain Rust functions.
//!
//! Every tool has typed, documented argument and result structs (serde + schemars: the `///`
//! docs become the descriptions an LLM reads) and a typed error enum. The `#[tool]` wrappers
//! that register them in a toolset live elsewhere; this module holds only the logic.
//!
//! | tool | function | settings |
//! | --- | --- | --- |
//! | `fetch` | [`fetch::fetch`] (async) | [`fetch::FetchSettings`] |
//! | `read_file` | [`files::read_file`] | [`files::FilesSettings`] |
//! | `list_dir` | [`files::list_dir`] | [`files::FilesSettings`] |
//! | `calc` | [`calc::calc`] | none |
//! | `jq` | [`jq::jq`] | none |
//! | `clock` | [`clock::clock`] | none |

pub mod calc;
pub mod clock;
pub mod fetch;
pub mod files;
pub mod jq;

use serde::{Deserialize, Serialize};

/// Operator settings of the built-in tools: the `settings:` section of `tools.yaml`.
///
/// Every field has a default, so an empty section (or none at all) is valid; unknown keys are
/// rejected so that a typo does not silently fall back to a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BuiltinSettings {
    /// Settings of the `fetch` tool (host allowlist, size and time limits).
    pub fetch: fetch::FetchSettings,
    /// Settings of the `read_file` and `list_dir` tools (the root directory they are confined to).
    pub files: files::FilesSettings,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_defaults_and_unknown_fields() {
        let s: BuiltinSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(s, BuiltinSettings::default());
        assert!(s.fetch.allow_hosts.is_empty());
        assert_eq!(s.fetch.max_bytes, 1024 * 1024);
        assert_eq!(s.fetch.timeout_ms, 10_000);
        assert!(!s.fetch.allow_private);
        assert_eq!(s.files.root, std::path::PathBuf::from("."));
        assert_eq!(s.files.max_bytes, 1024 * 1024);

        let s: BuiltinSettings = serde_json::from_value(serde_json::json!({
            "fetch": { "allow_hosts": ["example.com", "*.example.org"], "timeout_ms": 500 },
            "files": { "root": "/srv/data" }
        }))
        .unwrap();
        assert_eq!(s.fetch.allow_hosts.len(), 2);
        assert_eq!(s.fetch.timeout_ms, 500);
        assert_eq!(s.fetch.max_bytes, 1024 * 1024);
        assert_eq!(s.files.root, std::path::PathBuf::from("/srv/data"));

        let err = serde_json::from_value::<BuiltinSettings>(serde_json::json!({"fetc": {}}));
        assert!(err.is_err());
        let err = serde_json::from_value::<BuiltinSettings>(
            serde_json::json!({"fetch": {"allow_host": []}}),
        );
        assert!(err.is_err());
    }
}
