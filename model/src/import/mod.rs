//! Importing tool definitions written in foreign formats into toolgate's internal form: a name
//! fit for every provider, a description and a JSON Schema 2020-12 input schema with an object
//! root (the form [`crate::dialect`] exports from).
//!
//! Two [`DefinitionFormat`]s:
//!
//! - [`DefinitionFormat::JsonSchema`]: `{name, description, parameters | input_schema |
//!   inputSchema}`, the shape of an OpenAI function (also wrapped as `{"type": "function",
//!   "function": {...}}`, the Chat Completions form), an Anthropic tool and an MCP `Tool`. The
//!   schema is taken as it is, except that a missing root `type` becomes `"object"` and a missing
//!   `properties` becomes `{}` (every provider wants both; JSON Schema reads their absence the
//!   same way). A root `type` other than `object` is an error, as in [`crate::dialect`].
//! - [`DefinitionFormat::Bfcl`]: the dialect of the Berkeley Function Calling Leaderboard
//!   (`type: dict`, `float`, `tuple`, `any`, Java and JavaScript type names, `optional` flags);
//!   see [`bfcl`] for every rule and where it comes from.
//!
//! **Names.** An imported name must match `^[a-zA-Z0-9_-]{1,64}$`
//! ([`crate::names::validate_tool_name`]). A `.` is mapped to `_` first, as BFCL's own handlers
//! do for OpenAI, Anthropic, Gemini and the other providers that reject it
//! (`bfcl_eval/model_handler/utils.py`, `convert_to_tool`: `re.sub(r"\.", "_", item["name"])`;
//! the regex in its comment is the same rule); the rename is noted. Any other character outside
//! the rule, or a name too long, is an [`ImportError`].
//!
//! **Documents** ([`import_document`]): a JSON array of definitions, an object with a `tools` or
//! `functions` array, a single definition, or JSON Lines (BFCL's `.json` files are JSON Lines)
//! whose lines are definitions or test entries carrying a `function` list. A test entry without
//! inline definitions (BFCL's multi-turn entries name `involved_classes` instead) contributes
//! none. **Duplicates**: BFCL repeats one function on many lines, and sometimes gives one name
//! different definitions. Identical imports (same original name, description and schema) collapse
//! into the first; a different definition under a name already taken is kept under the first free
//! name `{name}_2`, `{name}_3`, ... (in document order, so the result is deterministic) with a
//! note naming where the first definition is. No definition is dropped.

pub mod bfcl;

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::names::{MAX_TOOL_NAME_LEN, validate_tool_name};

/// One tool definition imported from a foreign format, in toolgate's internal form.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImportedTool {
    /// The name to export: matches `^[a-zA-Z0-9_-]{1,64}$` (a `.` of the original is mapped to
    /// `_`, as BFCL's own OpenAI handler does; duplicates get a `_2`, `_3`, ... suffix).
    pub name: String,
    /// The name as written in the source document.
    pub original_name: String,
    /// What the tool does, as written (empty when the source has none).
    pub description: String,
    /// JSON Schema 2020-12 of the arguments: an object root with `properties` (also when the
    /// tool takes no parameters).
    pub input_schema: Value,
    /// JSON Schema of the structured result, when the definition has one (MCP `outputSchema`,
    /// an object root).
    pub output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, ...), when the definition has them (MCP `annotations`
    /// merged with a top-level `title`).
    pub annotations: Option<Value>,
    /// Every lossy or surprising conversion, each `"<JSON pointer into the source definition>:
    /// <what>"`.
    pub notes: Vec<String>,
    /// Where the definition is in the document given to [`import_document`] (a JSON pointer, as
    /// in [`ImportError`]; empty from [`import_definition`]).
    pub location: String,
}

impl ImportedTool {
    /// The first rule a provider would refuse this tool for, exported as `name` (its name in a
    /// toolset) in `mcp`, `openai` and `anthropic`: an export error, or a violation found by
    /// [`check`](crate::dialect::check::check) (annotation keys included, as written). Gemini is
    /// left out: it cannot express some valid tools (recursion), which is an export-time error
    /// for that dialect only. The one check of imported tools, at build time (codegen) and at
    /// run time (`JsonSchemaSource`).
    ///
    /// # Errors
    /// What is wrong, with the dialect and the pointer into the exported definition.
    pub fn check_exports(&self, name: &str) -> Result<(), String> {
        use crate::dialect::{Dialect, ToolSchema, check::check, export};
        let view = ToolSchema {
            name,
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref(),
            annotations: self.annotations.clone(),
        };
        for dialect in [Dialect::Mcp, Dialect::OpenAi, Dialect::Anthropic] {
            let def = export(dialect, &view).map_err(|e| e.message)?;
            if let Some(v) = check(dialect, &def).into_iter().next() {
                return Err(format!("as {dialect}, {v}"));
            }
        }
        Ok(())
    }
}

/// The format of the definitions given to [`import_document`] and [`import_definition`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DefinitionFormat {
    /// `{name, description, parameters | input_schema | inputSchema}` with a JSON Schema: the
    /// OpenAI, Anthropic and MCP shapes.
    JsonSchema,
    /// The Berkeley Function Calling Leaderboard's dialect (see [`bfcl`]).
    Bfcl,
}

/// A definition that cannot be imported.
///
/// `pointer` is a JSON pointer (RFC 6901) into the document given to [`import_document`] (for
/// JSON Lines, the document reads as the array of its lines: `/11/function/0` is the first
/// definition on line 12), or into the definition given to [`import_definition`]. `message`
/// names the definition and says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {}: {message}", if pointer.is_empty() { "/" } else { pointer })]
pub struct ImportError {
    /// Where the problem is.
    pub pointer: String,
    /// What is wrong, naming the definition.
    pub message: String,
}

impl ImportError {
    pub(crate) fn new(pointer: impl Into<String>, message: impl fmt::Display) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.to_string(),
        }
    }

    /// The same error located inside the document at `prefix`.
    fn within(mut self, prefix: &str) -> Self {
        self.pointer = format!("{prefix}{}", self.pointer);
        self
    }
}

/// Reads a document of definitions: a JSON array, an object with a `tools`/`functions` array, a
/// single definition, or JSON Lines whose lines carry a `function` list (BFCL's files) or are
/// definitions themselves (BFCL's `multi_turn_func_doc`). Identical duplicates collapse; a
/// different definition under a taken name is renamed `{name}_2`, ... (see the module docs).
///
/// # Errors
/// The first definition that cannot be imported ([`import_definition`]), with its pointer in the
/// document; a line of JSON Lines that is not JSON; a document that is neither.
pub fn import_document(
    format: DefinitionFormat,
    text: &str,
) -> Result<Vec<ImportedTool>, ImportError> {
    let mut found: Vec<(String, Value)> = Vec::new();
    match serde_json::from_str::<Value>(text) {
        Ok(doc) => collect(&doc, "", &mut found)?,
        Err(whole) => {
            let mut lines = 0;
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                lines += 1;
                let at = format!("/{i}");
                let v: Value = serde_json::from_str(line).map_err(|e| {
                    if lines == 1 {
                        // Not JSON Lines either: the document was meant as one JSON value,
                        // and its own error says where it breaks.
                        ImportError::new("", format!("the document is not JSON: {whole}"))
                    } else {
                        // A line on its own: its column, without serde's "line 1".
                        let why = e.to_string().replace(" at line 1 column ", " at column ");
                        ImportError::new(&at, format!("line {} is not JSON: {why}", i + 1))
                    }
                })?;
                collect(&v, &at, &mut found)?;
            }
        }
    }
    let mut out: Vec<ImportedTool> = Vec::new();
    // original name -> indexes in `out` of its variants; exported name -> where it was defined.
    let mut variants: HashMap<String, Vec<usize>> = HashMap::new();
    let mut taken: HashMap<String, String> = HashMap::new();
    for (at, def) in found {
        let mut tool = import_definition(format, &def).map_err(|e| e.within(&at))?;
        tool.location.clone_from(&at);
        let same = variants.get(&tool.original_name).is_some_and(|ix| {
            ix.iter().any(|&i| {
                out[i].description == tool.description && out[i].input_schema == tool.input_schema
            })
        });
        if same {
            continue;
        }
        let tool = match taken.get(&tool.name) {
            None => tool,
            Some(first) => rename(tool, first, &taken),
        };
        taken.insert(tool.name.clone(), at);
        variants
            .entry(tool.original_name.clone())
            .or_default()
            .push(out.len());
        out.push(tool);
    }
    Ok(out)
}

/// `tool` under the first free name `{name}_{k}`, `k >= 2` (the base cut so that the result has
/// at most 64 characters), with a note.
fn rename(mut tool: ImportedTool, first: &str, taken: &HashMap<String, String>) -> ImportedTool {
    let free = (2usize..)
        .map(|k| {
            let suffix = format!("_{k}");
            let keep = MAX_TOOL_NAME_LEN.saturating_sub(suffix.len());
            let base: String = tool.name.chars().take(keep).collect();
            format!("{base}{suffix}")
        })
        .find(|n| !taken.contains_key(n))
        .unwrap_or_default();
    tool.notes.push(format!(
        "/name: renamed `{}` to `{free}`: an earlier, different definition (at {}) has that name",
        tool.name,
        if first.is_empty() { "/" } else { first }
    ));
    tool.name = free;
    tool
}

/// The definitions in `v` (at `at` in the document), in order.
fn collect(v: &Value, at: &str, out: &mut Vec<(String, Value)>) -> Result<(), ImportError> {
    let list = |key: &str, items: &[Value], out: &mut Vec<(String, Value)>| {
        for (i, d) in items.iter().enumerate() {
            out.push((format!("{at}/{key}{i}"), d.clone()));
        }
    };
    match v {
        Value::Array(items) => list("", items, out),
        Value::Object(m) => {
            if let Some(result @ Value::Object(r)) = m.get("result")
                && r.contains_key("tools")
            {
                // A saved MCP `tools/list` response: {"jsonrpc", "id", "result": {"tools"}}.
                return collect(result, &format!("{at}/result"), out);
            }
            if let Some(Value::Array(items)) = m.get("tools") {
                list("tools/", items, out);
            } else if let Some(Value::Array(items)) = m.get("functions") {
                list("functions/", items, out);
            } else if let Some(Value::Array(items)) = m.get("function") {
                list("function/", items, out); // a BFCL test entry
            } else if m.contains_key("name") || m.get("function").is_some_and(Value::is_object) {
                out.push((at.to_string(), v.clone()));
            } else if !(m.contains_key("id") && m.contains_key("question")) {
                // Only a BFCL test entry may carry no definitions (`function: ""`, or
                // `involved_classes` naming definitions kept in other files).
                return Err(ImportError::new(
                    at,
                    "neither a definition (no `name`) nor a list of definitions \
                     (`tools`, `functions` or `function`)",
                ));
            }
        }
        other => {
            return Err(ImportError::new(
                at,
                format!("expected a definition or a list of definitions, got `{other}`"),
            ));
        }
    }
    Ok(())
}

/// Imports one definition written in `format`.
///
/// # Errors
/// [`ImportError`] naming the definition and the JSON pointer of the problem: not an object, no
/// string `name`, a name that breaks `^[a-zA-Z0-9_-]{1,64}$` after `.` → `_`, a schema (or a
/// part of it) that is not an object, a root that is not an object schema.
pub fn import_definition(
    format: DefinitionFormat,
    def: &Value,
) -> Result<ImportedTool, ImportError> {
    // OpenAI Chat Completions: {"type": "function", "function": {...}}.
    if format == DefinitionFormat::JsonSchema
        && let Some(inner @ Value::Object(_)) = def.get("function")
    {
        return import_definition(format, inner).map_err(|e| e.within("/function"));
    }
    let Value::Object(def) = def else {
        return Err(ImportError::new(
            "",
            format!("a definition must be a JSON object, got `{def}`"),
        ));
    };
    let original_name = match def.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(other) => {
            return Err(ImportError::new(
                "/name",
                format!("a definition's `name` must be a string, got `{other}`"),
            ));
        }
        None => return Err(ImportError::new("", "a definition has no `name`")),
    };
    let fail = |pointer: &str, message: &dyn fmt::Display| {
        ImportError::new(pointer, format!("definition `{original_name}`: {message}"))
    };
    let mut notes = Vec::new();
    let name = export_name(&original_name, &mut notes).map_err(|m| fail("/name", &m))?;
    let description = match def.get("description") {
        Some(Value::String(d)) => d.clone(),
        None => {
            notes.push("/description: none given; the description is empty".to_string());
            String::new()
        }
        Some(other) => return Err(fail("/description", &format!("not a string: `{other}`"))),
    };
    let input_schema = match format {
        DefinitionFormat::JsonSchema => json_schema_root(def, &mut notes),
        DefinitionFormat::Bfcl => bfcl::root(def, &mut notes),
    }
    .map_err(|(p, m)| fail(&p, &m))?;
    let (output_schema, annotations) = match format {
        DefinitionFormat::JsonSchema => (
            output_schema(def).map_err(|(p, m)| fail(&p, &m))?,
            mcp_annotations(def).map_err(|(p, m)| fail(&p, &m))?,
        ),
        DefinitionFormat::Bfcl => (None, None),
    };
    Ok(ImportedTool {
        name,
        original_name,
        description,
        input_schema,
        output_schema,
        annotations,
        notes,
        location: String::new(),
    })
}

/// The exported form of `name`: `.` mapped to `_` (noted), then the name rule.
fn export_name(name: &str, notes: &mut Vec<String>) -> Result<String, String> {
    let mapped = name.replace('.', "_");
    validate_tool_name(&mapped).map_err(|e| e.to_string())?;
    if mapped != name {
        notes.push(format!(
            "/name: `{name}` exported as `{mapped}` (`.` is not allowed in provider tool names; \
             BFCL's own handlers map it the same way)"
        ));
    }
    Ok(mapped)
}

/// The keys of a JSON Schema definition that are imported.
const JSON_SCHEMA_KEYS: [&str; 11] = [
    "name",
    "description",
    "parameters",
    "input_schema",
    "inputSchema",
    "outputSchema",
    "output_schema",
    "annotations",
    "title",
    "type",
    "strict",
];

/// MCP's `outputSchema` (or `output_schema`): an object root, as MCP requires.
fn output_schema(def: &Map<String, Value>) -> Result<Option<Value>, (String, String)> {
    let Some((key, schema)) = ["outputSchema", "output_schema"]
        .into_iter()
        .find_map(|k| def.get(k).map(|s| (k, s)))
    else {
        return Ok(None);
    };
    match schema {
        Value::Object(m) if m.get("type").is_none_or(|t| t == "object") => {
            let mut m = m.clone();
            m.entry("type").or_insert_with(|| "object".into());
            Ok(Some(Value::Object(m)))
        }
        other => Err((
            format!("/{key}"),
            format!(
                "the output schema must be an object schema (MCP: `type: object`), got `{other}`"
            ),
        )),
    }
}

/// MCP's `annotations` (an object), with a top-level `title` as the title (MCP: a tool's `title`
/// takes precedence over `annotations.title`).
fn mcp_annotations(def: &Map<String, Value>) -> Result<Option<Value>, (String, String)> {
    let mut out = match def.get("annotations") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(other) => {
            return Err((
                "/annotations".into(),
                format!("`annotations` must be an object (MCP `ToolAnnotations`), got `{other}`"),
            ));
        }
    };
    match def.get("title") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) => {
            out.insert("title".into(), t.clone().into());
        }
        Some(other) => {
            return Err((
                "/title".into(),
                format!("`title` must be a string, got `{other}`"),
            ));
        }
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}

/// [`DefinitionFormat::JsonSchema`]: the schema under `parameters`, `input_schema` or
/// `inputSchema` (the first present), with a root `type: object` and `properties` filled in.
fn json_schema_root(
    def: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<Value, (String, String)> {
    for k in def.keys() {
        if !JSON_SCHEMA_KEYS.contains(&k.as_str()) {
            notes.push(format!("/{k}: not imported"));
        }
    }
    let given: Vec<(&str, &Value)> = ["parameters", "input_schema", "inputSchema"]
        .into_iter()
        .filter_map(|k| def.get(k).map(|s| (k, s)))
        .collect();
    if let [(first, a), (second, b), ..] = given[..]
        && a != b
    {
        return Err((
            format!("/{second}"),
            format!("two different input schemas, `{first}` and `{second}`: keep one"),
        ));
    }
    let (key, schema) = given
        .first()
        .copied()
        .unwrap_or(("parameters", &Value::Null));
    let mut root = match schema {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        other => {
            return Err((
                format!("/{key}"),
                format!("the input schema must be a JSON object, got `{other}`"),
            ));
        }
    };
    match root.get("type") {
        None => {
            root.insert("type".into(), "object".into());
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err((
                format!("/{key}/type"),
                format!("the input schema's root must have `type: object`, it has `{other}`"),
            ));
        }
    }
    match root.get("properties") {
        None => {
            root.insert("properties".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(other) => {
            return Err((
                format!("/{key}/properties"),
                format!("`properties` must be an object, got `{other}`"),
            ));
        }
    }
    Ok(Value::Object(root))
}

#[cfg(test)]
mod tests;
