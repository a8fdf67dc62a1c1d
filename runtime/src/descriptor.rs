//! [`ToolDescriptor`]: what a tool is, shared by every source.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_model::config::ExtraArguments;
use toolgate_model::dialect::{self, Dialect, ExportError, ToolSchema};

/// MCP tool annotations (MCP 2025-06-18, `ToolAnnotations`): hints for clients, never trusted for
/// security decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world (the internet) rather than a closed domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// `true` when no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Everything known about one tool: its name, description, input and output schemas
/// (JSON Schema 2020-12, object roots), MCP annotations, and toolgate's own metadata.
///
/// The same type describes a compiled `#[tool]` function, an OpenAPI operation, a remote MCP tool
/// or an A2A skill. Serialized (for `toolgate list --json` and the REST API) with snake_case keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolDescriptor {
    /// The tool's name inside the toolset: `^[a-zA-Z0-9_-]{1,64}$` for local tools,
    /// `{source}.{tool}` for remote ones.
    pub name: String,
    /// What the tool does, written for a model (from the doc comment for `#[tool]` functions).
    pub description: String,
    /// JSON Schema 2020-12 of the arguments object (root `type: object`).
    pub input_schema: Value,
    /// JSON Schema 2020-12 of `structuredContent`, when the tool returns structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP tool annotations.
    #[serde(default, skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// The id of the source that offers the tool (`local` for compiled tools).
    pub source: String,
    /// A category for grouping and filtering (`toolgate list --category`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The tool's version (semver), if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The longest a call may take; `None` = the toolset's default.
    #[serde(
        default,
        with = "duration_ms",
        rename = "timeout_ms",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<u64>")]
    pub timeout: Option<Duration>,
    /// The tool can do harm (delete, pay, send); policies may require a role to call it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dangerous: bool,
    /// Callers must be authenticated to call it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_auth: bool,
    /// The function runs on tokio's blocking thread pool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
    /// What happens to argument keys the input schema refuses, as the tool declares it
    /// (`#[tool(extra = "strip")]`); the toolset's per-tool policy overrides it.
    #[serde(default, skip_serializing_if = "ExtraArguments::is_reject")]
    pub extra_arguments: ExtraArguments,
}

impl ToolDescriptor {
    /// The view of this tool that schema dialects export.
    pub fn schema_view(&self) -> ToolSchema<'_> {
        ToolSchema {
            name: &self.name,
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref(),
            annotations: if self.annotations.is_empty() {
                None
            } else {
                Some(serde_json::to_value(&self.annotations).unwrap_or(Value::Null))
            },
        }
    }

    /// The tool's definition in `dialect` (an MCP `Tool`, an OpenAI function, an Anthropic tool).
    ///
    /// # Errors
    /// [`ExportError`] when the schema cannot be expressed in the dialect; the error names the
    /// tool and the construct.
    pub fn export(&self, dialect: Dialect) -> Result<Value, ExportError> {
        dialect::export(dialect, &self.schema_view())
    }

    /// The tool's definition in `dialect` and its export notes: every transformation that
    /// changed what the exported schema accepts (`"<pointer>: <what and why>"`), such as a
    /// constraint the dialect cannot express. Arguments are still validated against the
    /// original schema.
    ///
    /// # Errors
    /// As [`export`](Self::export).
    pub fn export_with_notes(&self, dialect: Dialect) -> Result<(Value, Vec<String>), ExportError> {
        dialect::export_with_notes(dialect, &self.schema_view())
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
