//! Schema dialects: one tool definition, exported in the form each consumer accepts.
//!
//! The internal form of every schema is JSON Schema 2020-12 as schemars 1.x produces it, with an
//! object root. Each dialect is a pure function from that form:
//!
//! | dialect | shape | source of the rules |
//! | --- | --- | --- |
//! | [`Dialect::Mcp`] | MCP `Tool`: `name`, `description`, `inputSchema`, `outputSchema`, `annotations` | MCP specification 2025-06-18, "Tools" |
//! | [`Dialect::OpenAi`] | OpenAI function tool (Responses API): `{"type":"function","name","description","parameters","strict":false}` | OpenAI API reference, "Function calling" |
//! | [`Dialect::OpenAiStrict`] | the same with `"strict": true` (or `false` with a note when the schema cannot be strict) | OpenAI "Structured Outputs" → "Supported schemas" ([`openai_strict`]) |
//! | [`Dialect::Anthropic`] | Anthropic tool: `name`, `description`, `input_schema` | Anthropic API reference, "Tool use" |
//! | [`Dialect::Gemini`] | one `functionDeclarations` entry: `name`, `description`, `parameters` | Gemini API reference, "Function calling", `Schema` (OpenAPI 3.0 subset) ([`gemini`]) |
//!
//! Rules applied by all of them: the tool name must match `^[a-zA-Z0-9_-]{1,64}$` (the OpenAI,
//! Anthropic and Gemini limit; MCP is laxer but a name exported to MCP may be forwarded to any),
//! the root schema is an object with `properties` (MCP requires `type: object`; the providers
//! reject other roots), and the shared rules of [`normalize`]: numeric widths as
//! `minimum`/`maximum` instead of schemars' `format`s, acyclic `$ref`s inlined with the
//! use-site description winning (JSON Schema 2020-12 §8.2.3.1 allows siblings of
//! `$ref`, but draft-07 consumers and several clients ignore them or cannot follow references),
//! documented unit enums as `enum`. Only MCP keeps the `$schema` keyword (restated as
//! 2020-12, the draft the lowering writes).
//!
//! MCP and Anthropic inline acyclic references too: both are inline profiles (MCP clients in
//! "compat mode" do not follow `$ref`); inlining
//! keeps every 2020-12 keyword, so nothing is lost.
//!
//! Recursive types keep `$ref` into `$defs` in every dialect except Gemini, which has no `$ref`:
//! there they are unrolled to [`ExportOptions::recursion_depth`] levels (3 by default) with a
//! described placeholder below, noted ([`unroll`]). Every definition keeps its `$ref` when
//! inlining would copy more than
//! [`refs::MAX_INLINED_VALUES`] JSON values (Gemini: an export error, "too large once `$ref`s
//! are inlined"); a keyword beside such a `$ref` is moved into `{"allOf": [{"$ref": ...}]}` (`anyOf` for
//! OpenAI strict), so no `description` is ever a sibling of `$ref`.
//!
//! Dialect-specific rules:
//! - `mcp` (MCP 2025-06-18, "Tools": `inputSchema` is a JSON Schema object): an optional
//!   property's `type: [T, "null"]` / `anyOf: [X, {type: null}]` becomes plain `T` / `X`:
//!   an absent key already means `None`, and clients that require a single `type` string accept
//!   it. Not in `outputSchema`, where serde writes `None` as `null`. Everything else is JSON
//!   Schema 2020-12 kept as is.
//! - `openai`, `anthropic`: the shared rules only.
//!
//! Every transformation that changes what a schema accepts (a removed constraint or keyword, a
//! strict→non-strict fallback) is returned by [`export_with_notes`]; the argument validator still
//! enforces the original schema. [`check::check`] checks an exported definition against the
//! rules of its dialect, written from the providers' documents.

pub mod check;
pub mod gemini;
pub mod normalize;
pub mod openai_strict;
pub mod refs;
pub mod unroll;

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::names::validate_tool_name;
use normalize::{Notes, Recursion};

/// A target format for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// MCP `Tool` objects (`tools/list`).
    Mcp,
    /// OpenAI function tools (non-strict).
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI function tools with `strict: true` (structured outputs rules).
    #[serde(rename = "openai-strict")]
    OpenAiStrict,
    /// Anthropic tools.
    Anthropic,
    /// Gemini `functionDeclarations` entries.
    Gemini,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 5] = [
        Self::Mcp,
        Self::OpenAi,
        Self::OpenAiStrict,
        Self::Anthropic,
        Self::Gemini,
    ];

    /// The dialect's name on the command line and in URLs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::OpenAi => "openai",
            Self::OpenAiStrict => "openai-strict",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
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
                let all: Vec<&str> = Self::ALL.iter().map(|d| d.as_str()).collect();
                format!(
                    "unknown dialect `{s}` (expected one of: {})",
                    all.join(", ")
                )
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

/// How a tool is exported, beyond its dialect: the defaults of [`export`] and
/// [`export_with_notes`], or set with the builder methods for [`export_with_options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// How many levels of a recursive type a dialect without `$ref` describes, counted in copies
    /// of the type on one path from the root, per type (default
    /// [`ExportOptions::DEFAULT_RECURSION_DEPTH`]; 0 is taken as 1). The rule comes from
    /// Gemini: its `Schema` object has no `$ref` / `$defs`, so a recursive type is inlined this
    /// many times and then replaced by a placeholder whose description says so ([`unroll`]).
    /// Dialects with `$ref` keep recursion as is and ignore it.
    pub recursion_depth: usize,
}

impl ExportOptions {
    /// The default [`recursion_depth`](Self::recursion_depth): 3 levels.
    pub const DEFAULT_RECURSION_DEPTH: usize = 3;

    /// The defaults.
    pub const fn new() -> Self {
        Self {
            recursion_depth: Self::DEFAULT_RECURSION_DEPTH,
        }
    }

    /// The same options with [`recursion_depth`](Self::recursion_depth) set to `levels`
    /// (0 is taken as 1).
    #[must_use]
    pub const fn with_recursion_depth(mut self, levels: usize) -> Self {
        self.recursion_depth = levels;
        self
    }
}

impl Default for ExportOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Exports one tool in `dialect` (the value of [`export_with_notes`]).
///
/// # Errors
/// As [`export_with_notes`].
pub fn export(dialect: Dialect, tool: &ToolSchema<'_>) -> Result<Value, ExportError> {
    export_with_notes(dialect, tool).map(|(v, _)| v)
}

/// Exports one tool in `dialect`, with the notes on every transformation that changed what the
/// exported schema accepts: each `"<JSON pointer into the exported schema>: <what and why>"`, or
/// a sentence about the whole tool, such as the fallback to `"strict": false`.
///
/// # Errors
/// [`ExportError`] when the name breaks `^[a-zA-Z0-9_-]{1,64}$`, the input schema's root is not
/// an object schema, a `$ref` is dangling or not local, or the schema is too large once its
/// `$ref`s are inlined in a dialect without references (Gemini).
pub fn export_with_notes(
    dialect: Dialect,
    tool: &ToolSchema<'_>,
) -> Result<(Value, Vec<String>), ExportError> {
    export_with_options(dialect, tool, &ExportOptions::default())
}

/// [`export_with_notes`] with `options` instead of the defaults (a recursive type unrolled to
/// [`ExportOptions::recursion_depth`] levels in Gemini).
///
/// # Errors
/// As [`export_with_notes`].
pub fn export_with_options(
    dialect: Dialect,
    tool: &ToolSchema<'_>,
    options: &ExportOptions,
) -> Result<(Value, Vec<String>), ExportError> {
    let fail = |message: String| ExportError {
        tool: tool.name.to_string(),
        dialect,
        message,
    };
    // `{source}.{tool}` is exported as `{source}__{tool}` (names::exported_name).
    let name = crate::names::exported_name(tool.name);
    let name = name.as_ref();
    validate_tool_name(name).map_err(|e| fail(e.to_string()))?;
    let input = Value::Object(object_root(tool.input_schema).map_err(fail)?);
    let mut notes = Notes::default();
    let mut out = Map::new();
    let keep = Recursion::Keep("allOf");
    match dialect {
        Dialect::Mcp => {
            out.insert("name".into(), name.into());
            out.insert("description".into(), tool.description.into());
            let input = mcp_schema(input).map_err(fail)?;
            out.insert("inputSchema".into(), stated_2020_12(input));
            if let Some(o) = tool.output_schema {
                let o = Value::Object(object_root(o).map_err(fail)?);
                // Output keeps its `null`s: serde writes `None` as `null` in `structuredContent`.
                let o = normalize::common(o, keep, &mut notes).map_err(fail)?;
                out.insert("outputSchema".into(), stated_2020_12(o));
            }
            if let Some(a) = &tool.annotations {
                out.insert("annotations".into(), a.clone());
            }
        }
        Dialect::OpenAi | Dialect::OpenAiStrict => {
            out.insert("type".into(), "function".into());
            out.insert("name".into(), name.into());
            out.insert("description".into(), tool.description.into());
            let loose = || {
                normalize::common(input.clone(), keep, &mut Notes::default())
                    .map(without_schema_uri)
            };
            let (params, strict) = if dialect == Dialect::OpenAi {
                (loose().map_err(fail)?, false)
            } else {
                let strict = normalize::common(input.clone(), Recursion::Keep("anyOf"), &mut notes)
                    .map_err(fail)?;
                let mut local = Notes::default();
                let lowered = openai_strict::lower(strict.clone(), &mut local).or_else(|why| {
                    // Arguments strict mode cannot describe, carried as JSON text instead.
                    let mut carried = strict;
                    local = Notes::default();
                    if openai_strict::carry_as_json_text(&mut carried, &mut local).is_empty() {
                        return Err(why);
                    }
                    openai_strict::lower(carried, &mut local).map_err(|_| why)
                });
                match lowered {
                    Ok(p) => {
                        notes.list.extend(local.list);
                        (p, true)
                    }
                    Err(why) => {
                        notes.push_whole(format!(
                            "cannot be strict ({why}): exported with \"strict\": false"
                        ));
                        (loose().map_err(fail)?, false)
                    }
                }
            };
            out.insert("parameters".into(), params);
            out.insert("strict".into(), strict.into());
        }
        Dialect::Anthropic => {
            out.insert("name".into(), name.into());
            out.insert("description".into(), tool.description.into());
            let schema = normalize::common(input, keep, &mut notes).map_err(fail)?;
            out.insert("input_schema".into(), without_schema_uri(schema));
        }
        Dialect::Gemini => {
            out.insert("name".into(), name.into());
            out.insert("description".into(), tool.description.into());
            let depth = options.recursion_depth.max(1);
            let schema =
                normalize::common(input, Recursion::Unroll(depth), &mut notes).map_err(fail)?;
            let params = gemini::lower(schema, &mut notes).map_err(fail)?;
            let empty = params
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if !empty {
                out.insert("parameters".into(), params);
            }
        }
    }
    Ok((Value::Object(out), notes.list))
}

/// MCP input schemas: the shared rules, then optional properties lose their `null`
/// alternative.
fn mcp_schema(schema: Value) -> Result<Value, String> {
    let mut schema = normalize::common(schema, Recursion::Keep("allOf"), &mut Notes::default())?;
    normalize::walk(&mut schema, "", &mut |m, _| {
        let required: Vec<Value> = match m.get("required") {
            Some(Value::Array(r)) => r.clone(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(props)) = m.get_mut("properties") {
            for (name, p) in props.iter_mut() {
                if let Value::Object(p) = p
                    && !required.iter().any(|r| r == name)
                {
                    // `default: null` would now contradict the type; absent means the same.
                    if normalize::strip_null(p) && p.get("default") == Some(&Value::Null) {
                        p.remove("default");
                    }
                }
            }
        }
        Ok(())
    })?;
    Ok(schema)
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

/// JSON Schema 2020-12's meta-schema URI.
pub const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A `$schema` of another draft (a remote draft-07 schema) restated as 2020-12: the lowering
/// writes 2020-12 (`$defs`, type arrays), and 2020-12 is MCP's default dialect.
fn stated_2020_12(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema
        && let Some(uri) = map.get_mut("$schema")
    {
        *uri = JSON_SCHEMA_2020_12.into();
    }
    schema
}

fn without_schema_uri(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

#[cfg(test)]
mod cases;
#[cfg(test)]
mod cases_kinds;
#[cfg(test)]
mod cases_recursion;
#[cfg(test)]
mod cases_size;
#[cfg(test)]
mod rules;

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
                Dialect::OpenAi | Dialect::OpenAiStrict => &v["parameters"],
                Dialect::Anthropic => &v["input_schema"],
                Dialect::Gemini => {
                    // Gemini rejects an empty `properties`: no-arg tools have no `parameters`.
                    assert!(v.get("parameters").is_none(), "{v}");
                    continue;
                }
            };
            assert_eq!(schema["type"], "object", "{d}");
            assert_eq!(schema["properties"], json!({}), "{d}");
            assert_eq!(schema.get("$schema").is_some(), d == Dialect::Mcp, "{d}");
        }
    }

    #[test]
    fn bad_names_and_roots_are_export_errors() {
        let input = json!({"type": "object"});
        // `{source}.{tool}` is exported as `{source}__{tool}`; other illegal characters stay
        // errors, naming the tool.
        let v = export(Dialect::OpenAi, &tool("gh.list_issues", &input)).unwrap();
        assert_eq!(v["name"], "gh__list_issues");
        let e = export(Dialect::OpenAi, &tool("a b", &input)).unwrap_err();
        assert!(e.to_string().contains("`a b`"), "{e}");
        let e = export(Dialect::OpenAi, &tool("a.b.c", &input)).unwrap_err();
        assert!(e.to_string().contains("'.' at position 4"), "{e}");
        let long = format!("src.{}", "x".repeat(60));
        let e = export(Dialect::Anthropic, &tool(&long, &input)).unwrap_err();
        assert!(e.message.contains("65 characters long"), "{e}");
        let e = export(Dialect::Mcp, &tool("x", &json!({"type": "string"}))).unwrap_err();
        assert!(e.message.contains("type: object"), "{e}");
    }

    #[test]
    fn dialect_names_parse() {
        for d in Dialect::ALL {
            assert_eq!(d.as_str().parse::<Dialect>().unwrap(), d);
        }
        assert_eq!(
            "openai-strict".parse::<Dialect>(),
            Ok(Dialect::OpenAiStrict)
        );
        assert_eq!(
            serde_json::to_value(Dialect::OpenAiStrict).unwrap(),
            "openai-strict"
        );
        let e = "gpt".parse::<Dialect>().unwrap_err();
        assert!(e.contains("openai-strict, anthropic, gemini"), "{e}");
    }
}
