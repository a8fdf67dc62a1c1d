//! `tools.json_schema`: tools defined by JSON Schema documents and answered by one handler.

use serde::{Deserialize, Serialize};

use crate::import::DefinitionFormat;

/// A document of tool definitions (name, description, JSON Schema), compiled in at build time:
/// each definition becomes a tool `{id}.{name}` whose arguments are validated against its
/// schema, and every call goes to `handler`.
///
/// ```yaml
/// tools:
///   json_schema:
///     - id: bfcl
///       file: defs/functions.json      # relative to tools.yaml
///       format: bfcl                   # or json_schema (the default)
///       handler: crate::handlers::bfcl # async fn(JsonToolCall) -> Result<ToolOutput, ToolError>
///       allow: ["math_*"]
/// ```
///
/// The file is a JSON array of definitions, an object with a `tools` or `functions` array, one
/// definition, or JSON Lines (BFCL's files); see `toolgate_model::import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaSource {
    /// The source id, prefix of its tools (`{id}.{name}`).
    pub id: String,
    /// The definitions' file, relative to tools.yaml.
    pub file: String,
    /// The definitions' format.
    #[serde(default = "json_schema_format")]
    pub format: DefinitionFormat,
    /// The Rust path of the handler every call goes to: a function (or anything callable)
    /// taking a `toolgate::JsonToolCall` and returning a future of
    /// `Result<ToolOutput, ToolError>`, e.g. `crate::handlers::answer`.
    pub handler: String,
    /// Whether tool names are prefixed with `{id}.` (default `true`); unprefixed names must not
    /// collide with other tools.
    #[serde(default = "yes")]
    pub prefix: bool,
    /// The category every tool of the source is listed under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Only definitions whose name (as written, or as imported) matches one of these names or
    /// globs (`*`, `?`, `[..]`) are compiled in; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Definitions matching one of these names or globs are left out (wins over `allow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

fn json_schema_format() -> DefinitionFormat {
    DefinitionFormat::JsonSchema
}

fn yes() -> bool {
    true
}
