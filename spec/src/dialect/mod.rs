//! Schema dialects: one tool definition, exported in the form each consumer accepts.
//!
//! The internal form of every schema is JSON Schema 2020-12 as schemars 1.x produces it, with an
//! object root. Each dialect is a pure function from that form:
//!
//! | dialect | shape | source of the rules |
//! | --- | --- | --- |
//! | [`Dialect::Mcp`] | MCP `Tool`: `name`, `description`, `inputSchema`, `outputSchema`, `annotations` | MCP specification 2025-06-18, "Tools" |
//! | [`Dialect::OpenAi`] | OpenAI function tool (Responses API): `{"type":"function","name","description","parameters","strict":false}` | OpenAI API reference, "Function calling" |
//! | [`Dialect::Anthropic`] | Anthropic tool: `name`, `description`, `input_schema` | Anthropic API reference, "Tool use" |
//!
//! Rules applied by all three: the tool name must match `^[a-zA-Z0-9_-]{1,64}$` (the OpenAI and
//! Anthropic limit; MCP is laxer but a name exported to MCP may be forwarded to either), and the
//! root schema is an object with `properties` (MCP requires `type: object`; OpenAI and Anthropic
//! reject other roots). OpenAI and Anthropic do not get the `$schema` keyword.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::names::validate_tool_name;

/// A target format for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// MCP `Tool` objects (`tools/list`).
    Mcp,
    /// OpenAI function tools (non-strict).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic tools.
    Anthropic,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 3] = [Self::Mcp, Self::OpenAi, Self::Anthropic];

    /// The dialect's name on the command line and in URLs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| {
                format!("unknown dialect `{s}` (expected one of: mcp, openai, anthropic)")
            })
    }
}

/// The parts of a tool a dialect exports (borrowed from a descriptor).
#[derive(Debug, Clone)]
pub struct ToolSchema<'a> {
    /// The tool name.
    pub name: &'a str,
    /// The description shown to models.
    pub description: &'a str,
    /// JSON Schema 2020-12 of the arguments (object root).
    pub input_schema: &'a Value,
    /// JSON Schema 2020-12 of the structured result, if any (object root).
    pub output_schema: Option<&'a Value>,
    /// MCP annotations as JSON, if any.
    pub annotations: Option<Value>,
}

/// A tool that cannot be exported in a dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot export tool `{tool}` as {dialect}: {message}")]
pub struct ExportError {
    /// The tool's name.
    pub tool: String,
    /// The dialect.
    pub dialect: Dialect,
    /// What is wrong.
    pub message: String,
}

/// Exports one tool in `dialect`.
///
/// # Errors
/// [`ExportError`] when the name breaks `^[a-zA-Z0-9_-]{1,64}$` or the input schema's root is not
/// an object schema.
pub fn export(dialect: Dialect, tool: &ToolSchema<'_>) -> Result<Value, ExportError> {
    let fail = |message: String| ExportError {
        tool: tool.name.to_string(),
        dialect,
        message,
    };
    validate_tool_name(tool.name).map_err(|e| fail(e.to_string()))?;
    let input = object_root(tool.input_schema).map_err(fail)?;
    let mut out = Map::new();
    match dialect {
        Dialect::Mcp => {
            out.insert("name".into(), tool.name.into());
            out.insert("description".into(), tool.description.into());
            out.insert("inputSchema".into(), Value::Object(input));
            if let Some(o) = tool.output_schema {
                out.insert(
                    "outputSchema".into(),
                    Value::Object(object_root(o).map_err(fail)?),
                );
            }
            if let Some(a) = &tool.annotations {
                out.insert("annotations".into(), a.clone());
            }
        }
        Dialect::OpenAi => {
            out.insert("type".into(), "function".into());
            out.insert("name".into(), tool.name.into());
            out.insert("description".into(), tool.description.into());
            out.insert(
                "parameters".into(),
                Value::Object(without_schema_uri(input)),
            );
            out.insert("strict".into(), false.into());
        }
        Dialect::Anthropic => {
            out.insert("name".into(), tool.name.into());
            out.insert("description".into(), tool.description.into());
            out.insert(
                "input_schema".into(),
                Value::Object(without_schema_uri(input)),
            );
        }
    }
    Ok(Value::Object(out))
}

/// The schema as an object root with `type: object` and `properties`.
fn object_root(schema: &Value) -> Result<Map<String, Value>, String> {
    let Value::Object(map) = schema else {
        return Err(format!(
            "the schema root must be a JSON object, got `{schema}`"
        ));
    };
    let mut map = map.clone();
    match map.get("type") {
        None => {
            map.insert("type".into(), "object".into());
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "the schema root must have `type: object`, it has `type: {other}`"
            ));
        }
    }
    map.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Ok(map)
}

fn without_schema_uri(mut map: Map<String, Value>) -> Map<String, Value> {
    map.remove("$schema");
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool<'a>(name: &'a str, input: &'a Value) -> ToolSchema<'a> {
        ToolSchema {
            name,
            description: "d",
            input_schema: input,
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn empty_schema_gets_object_root_in_every_dialect() {
        let input = json!({"$schema": "https://json-schema.org/draft/2020-12/schema"});
        for d in Dialect::ALL {
            let v = export(d, &tool("ping", &input)).unwrap();
            let schema = match d {
                Dialect::Mcp => &v["inputSchema"],
                Dialect::OpenAi => &v["parameters"],
                Dialect::Anthropic => &v["input_schema"],
            };
            assert_eq!(schema["type"], "object", "{d}");
            assert_eq!(schema["properties"], json!({}), "{d}");
            assert_eq!(schema.get("$schema").is_some(), d == Dialect::Mcp, "{d}");
        }
    }

    #[test]
    fn bad_names_and_roots_are_export_errors() {
        let input = json!({"type": "object"});
        let e = export(Dialect::OpenAi, &tool("a.b", &input)).unwrap_err();
        assert!(e.to_string().contains("`a.b`"), "{e}");
        let e = export(Dialect::Mcp, &tool("x", &json!({"type": "string"}))).unwrap_err();
        assert!(e.message.contains("type: object"), "{e}");
    }

    #[test]
    fn dialect_names_parse() {
        for d in Dialect::ALL {
            assert_eq!(d.as_str().parse::<Dialect>().unwrap(), d);
        }
        assert!("gemini".parse::<Dialect>().is_err());
    }
}
