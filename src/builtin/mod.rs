//! toolgate's built-in tools.
//!
//! Every tool has typed, documented argument and result structs (serde + schemars: the `///`
//! docs become the descriptions an LLM reads) and a typed error enum mapped to a
//! [`ToolError`](crate::ToolError) kind. The logic lives in one module per tool; [`tools`] holds
//! the thin `#[tool]` wrappers, which the repository's `tools.yaml` compiles into [`toolset`].
//!
//! | tool | function | settings |
//! | --- | --- | --- |
//! | `fetch` | [`fetch::fetch`] (async) | [`fetch::FetchSettings`] |
//! | `read_file` | [`files::read_file`] | [`files::FilesSettings`] |
//! | `list_dir` | [`files::list_dir`] | [`files::FilesSettings`] |
//! | `calc` | [`calc::calc`] | none |
//! | `jq` | [`jq::JqPool::run`] | [`jq::JqSettings`] |
//! | `current_time` | [`clock::clock`] | none |
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = toolgate::builtin::toolset(Default::default()).build()?;
//! let out = tools.call("calc", serde_json::json!({"expression": "6 * 7"})).await?;
//! # Ok(()) }
//! ```

pub mod calc;
pub mod clock;
pub mod fetch;
pub mod files;
pub mod jq;
pub mod tools;

/// The built-in toolset, compiled by `build.rs` from the repository's `tools.yaml`.
pub mod toolset {
    crate::include_toolset!();
}

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ToolError;

/// The shared state of the built-in tools: their settings, one pooled HTTP client and the
/// `jq` worker processes.
#[derive(Debug)]
pub struct Builtins {
    /// The operator's settings.
    pub settings: BuiltinSettings,
    /// The worker processes `jq` runs filters in (none start before the first call).
    pub jq: jq::JqPool,
    client: Result<reqwest::Client, String>,
}

impl Builtins {
    /// State for the built-in tools under `settings` (builds the HTTP client once).
    pub fn new(settings: BuiltinSettings) -> Self {
        let client = fetch::client(&settings.fetch).map_err(|e| e.to_string());
        let jq = jq::JqPool::new(&settings.jq);
        Self {
            settings,
            jq,
            client,
        }
    }

    /// The shared HTTP client, or why it could not be built.
    ///
    /// # Errors
    /// `internal` when the client could not be built at start-up.
    pub fn http_client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .as_ref()
            .map_err(|e| ToolError::internal(format!("the HTTP client is unavailable: {e}")))
    }
}

/// The built-in toolset under `settings`, ready to `.build()` (or to add more sources to).
pub fn toolset(settings: BuiltinSettings) -> crate::ToolsetBuilder {
    toolset::toolset().state(Builtins::new(settings))
}

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
    /// Settings of the `jq` tool (its worker processes' memory, time and number).
    pub jq: jq::JqSettings,
}

impl BuiltinSettings {
    /// Reads the `fetch`, `files` and `jq` entries of a tools.yaml `settings:` section (other entries
    /// belong to other features and are left alone); a relative `files.root` is taken relative to
    /// `base` (the folder of the tools.yaml).
    ///
    /// # Errors
    /// [`SettingsError`] naming the JSON pointer of the value that does not fit
    /// (`/settings/fetch/allow_host`), so the caller can point at its tools.yaml line.
    pub fn from_config(
        settings: &BTreeMap<String, serde_json::Value>,
        base: &Path,
    ) -> Result<Self, SettingsError> {
        fn entry<T: serde::de::DeserializeOwned + Default>(
            settings: &BTreeMap<String, serde_json::Value>,
            key: &str,
        ) -> Result<T, SettingsError> {
            let Some(value) = settings.get(key) else {
                return Ok(T::default());
            };
            serde_path_to_error::deserialize(value).map_err(|e| {
                let mut pointer = format!("/settings/{key}");
                for seg in e.path().iter() {
                    if let serde_path_to_error::Segment::Map { key } = seg {
                        pointer.push('/');
                        pointer.push_str(key);
                    } else if let serde_path_to_error::Segment::Seq { index } = seg {
                        pointer.push('/');
                        pointer.push_str(&index.to_string());
                    }
                }
                SettingsError {
                    pointer,
                    message: format!("settings.{key}: {}", e.inner()),
                }
            })
        }
        let mut out = Self {
            fetch: entry(settings, "fetch")?,
            files: entry(settings, "files")?,
            jq: entry(settings, "jq")?,
        };
        if let Err((field, message)) = out.jq.validate() {
            return Err(SettingsError {
                pointer: format!("/settings/jq/{field}"),
                message: format!("settings.jq.{field}: {message}"),
            });
        }
        if let Some(root) = &mut out.files.root {
            if root.is_relative() {
                *root = base.join(&*root);
            }
            if !root.is_dir() {
                return Err(SettingsError {
                    pointer: "/settings/files/root".into(),
                    message: format!(
                        "settings.files.root: `{}` is not a directory",
                        root.display()
                    ),
                });
            }
        }
        for (i, host) in out.fetch.allow_hosts.iter().enumerate() {
            if host.contains("://") || host.contains('/') || host.trim().is_empty() {
                return Err(SettingsError {
                    pointer: format!("/settings/fetch/allow_hosts/{i}"),
                    message: format!(
                        "settings.fetch.allow_hosts: `{host}` is not a host name; write the host alone (`example.com`, `*.example.com`, `127.0.0.1`), without scheme or path"
                    ),
                });
            }
        }
        Ok(out)
    }
}

/// A `settings:` entry of tools.yaml that does not fit the built-in tools' settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SettingsError {
    /// JSON pointer of the offending value in tools.yaml (`/settings/fetch/max_bytes`).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_errors_point_at_the_value() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        let settings = |v: serde_json::Value| -> BTreeMap<String, serde_json::Value> {
            serde_json::from_value(v).unwrap()
        };
        let e = BuiltinSettings::from_config(
            &settings(
                serde_json::json!({"fetch": {"allow_hosts": ["ok.example", "http://x.example"]}}),
            ),
            base,
        )
        .unwrap_err();
        assert_eq!(e.pointer, "/settings/fetch/allow_hosts/1");
        let e = BuiltinSettings::from_config(
            &settings(serde_json::json!({"files": {"root": "no/such/dir"}})),
            base,
        )
        .unwrap_err();
        assert_eq!(e.pointer, "/settings/files/root");
        let e = BuiltinSettings::from_config(
            &settings(serde_json::json!({"fetch": {"max_bytes": "big"}})),
            base,
        )
        .unwrap_err();
        assert_eq!(e.pointer, "/settings/fetch/max_bytes");
        // A jq memory limit the worker cannot start under is refused at load, with the floor.
        let e = BuiltinSettings::from_config(
            &settings(serde_json::json!({"jq": {"memory_mb": 128}})),
            base,
        )
        .unwrap_err();
        assert_eq!(e.pointer, "/settings/jq/memory_mb");
        assert!(e.message.contains("at least 256"), "{}", e.message);
        let ok = BuiltinSettings::from_config(
            &settings(serde_json::json!({"files": {"root": "src"}})),
            base,
        )
        .unwrap();
        assert_eq!(ok.files.root, Some(base.join("src")));
    }

    #[test]
    fn settings_defaults_and_unknown_fields() {
        let s: BuiltinSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(s, BuiltinSettings::default());
        assert!(s.fetch.allow_hosts.is_empty());
        assert_eq!(s.fetch.max_bytes, 1024 * 1024);
        assert_eq!(s.fetch.timeout_ms, 10_000);
        assert!(!s.fetch.allow_private);
        assert_eq!(
            s.files.root, None,
            "no directory is shared unless one is set"
        );
        assert_eq!(s.files.max_bytes, 1024 * 1024);

        let s: BuiltinSettings = serde_json::from_value(serde_json::json!({
            "fetch": { "allow_hosts": ["example.com", "*.example.org"], "timeout_ms": 500 },
            "files": { "root": "/srv/data" }
        }))
        .unwrap();
        assert_eq!(s.fetch.allow_hosts.len(), 2);
        assert_eq!(s.fetch.timeout_ms, 500);
        assert_eq!(s.fetch.max_bytes, 1024 * 1024);
        assert_eq!(s.files.root, Some(std::path::PathBuf::from("/srv/data")));

        let err = serde_json::from_value::<BuiltinSettings>(serde_json::json!({"fetc": {}}));
        assert!(err.is_err());
        let err = serde_json::from_value::<BuiltinSettings>(
            serde_json::json!({"fetch": {"allow_host": []}}),
        );
        assert!(err.is_err());
    }
}
