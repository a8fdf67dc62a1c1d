//! `describe_code_api`'s answer: typed Python stubs of the tools, from their input schemas.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;
use toolgate_sandbox::python_name;

use crate::ToolDescriptor;

/// Python's keywords: not usable as a keyword argument's name.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

const HEADER: &str = r#"# The functions code run by run_python may call. Each call goes through the gateway as
# the caller who ran the code; it returns the tool's result (a dict for a tool with
# structured output) or raises: PermissionError("permission_denied: ..." or
# "policy_denied: ..."), ValueError("invalid_arguments: ..."), LookupError("not_found: ..."),
# TimeoutError("timeout: ..."), RuntimeError("<kind>: ...") for the other kinds.
from typing import Any, Literal


def call_tool(name: str, args: dict[str, Any]) -> Any:
    """Calls the tool `name` (its name as listed, e.g. "github.get_repo") with `args`."""
"#;

/// Python stubs of `tools`: `call_tool`, then a `class tools` whose functions (and one nested
/// class per source) take each tool's arguments as typed keyword-only parameters, with the
/// tool's description and its arguments' descriptions as docstrings. An argument whose name
/// is no Python name is left out of the signature and named in the docstring (pass it with
/// `call_tool`).
pub fn python_stubs(tools: &[Arc<ToolDescriptor>]) -> String {
    let mut out = String::from(HEADER);
    let mut local = Vec::new();
    let mut sources: Vec<(&str, Vec<(&str, &ToolDescriptor)>)> = Vec::new();
    for tool in tools {
        match tool.name.split_once('.') {
            Some((source, name)) => match sources.iter_mut().find(|(s, _)| *s == source) {
                Some((_, list)) => list.push((name, tool)),
                None => sources.push((source, vec![(name, tool)])),
            },
            None => local.push((tool.name.as_str(), &**tool)),
        }
    }
    out.push_str("\n\nclass tools:\n");
    if tools.is_empty() {
        out.push_str("    \"\"\"No tool this caller may call.\"\"\"\n");
    }
    for (name, tool) in local {
        function(&mut out, "    ", name, tool);
    }
    for (source, list) in sources {
        let _ = write!(out, "\n    class {}:\n", python_name(source));
        let _ = writeln!(out, "        \"\"\"The tools of source `{source}`.\"\"\"");
        for (name, tool) in list {
            function(&mut out, "        ", name, tool);
        }
    }
    out
}

/// One tool as a stub function at `indent`.
fn function(out: &mut String, indent: &str, name: &str, tool: &ToolDescriptor) {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = serde_json::Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let mut params = Vec::new();
    let mut optional = Vec::new();
    let mut unnamed = Vec::new();
    for (arg, prop) in properties {
        if !is_identifier(arg) {
            unnamed.push(arg.as_str());
            continue;
        }
        if required.contains(&arg.as_str()) {
            params.push(format!("{arg}: {}", py_type(prop)));
        } else {
            optional.push(format!("{arg}: {} | None = None", py_type(prop)));
        }
    }
    params.extend(optional);
    let signature = if params.is_empty() {
        String::new()
    } else {
        format!("*, {}", params.join(", "))
    };
    let returns = match tool.output_schema.as_ref().map(|s| &s["type"]) {
        Some(Value::String(t)) if t == "object" => "dict[str, Any]",
        _ => "Any",
    };
    let _ = write!(
        out,
        "\n{indent}@staticmethod\n{indent}def {}({signature}) -> {returns}:\n",
        python_name(name)
    );
    let inner = format!("{indent}    ");
    let mut doc = tool.description.trim().to_owned();
    let described: Vec<(&String, &str)> = properties
        .iter()
        .filter(|(k, _)| is_identifier(k))
        .filter_map(|(k, p)| p["description"].as_str().map(|d| (k, d)))
        .collect();
    if !described.is_empty() {
        doc.push_str("\n\nArgs:");
        for (arg, text) in described {
            let _ = write!(doc, "\n    {arg}: {}", text.trim().replace('\n', " "));
        }
    }
    if !unnamed.is_empty() {
        let _ = write!(
            doc,
            "\n\nAlso takes {} (not Python names): pass them with call_tool(\"{}\", {{...}}).",
            unnamed
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", "),
            tool.name
        );
    }
    let doc = doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let _ = write!(out, "{inner}\"\"\"");
    for (i, line) in doc.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&inner);
            }
        }
        out.push_str(line);
    }
    if doc.contains('\n') {
        let _ = write!(out, "\n{inner}");
    }
    out.push_str("\"\"\"\n");
}

/// Whether `name` can be a keyword argument's name.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

/// The Python type of a JSON Schema (`Any` for what has no simple one).
fn py_type(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let literals: Vec<String> = values.iter().filter_map(literal).collect();
        if literals.len() == values.len() && !literals.is_empty() {
            return format!("Literal[{}]", literals.join(", "));
        }
    }
    if let Some(value) = schema.get("const").and_then(literal) {
        return format!("Literal[{value}]");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            let mut types: Vec<String> = Vec::new();
            for t in options.iter().map(py_type) {
                if !types.contains(&t) {
                    types.push(t);
                }
            }
            return if types.iter().any(|t| t == "Any") || types.is_empty() {
                "Any".into()
            } else {
                types.join(" | ")
            };
        }
    }
    match &schema["type"] {
        Value::String(t) => simple_type(t, schema),
        Value::Array(types) => {
            let names: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| simple_type(t, schema))
                .collect();
            if names.is_empty() {
                "Any".into()
            } else {
                names.join(" | ")
            }
        }
        _ => "Any".into(),
    }
}

fn simple_type(t: &str, schema: &Value) -> String {
    match t {
        "string" => "str".into(),
        "integer" => "int".into(),
        "number" => "float".into(),
        "boolean" => "bool".into(),
        "null" => "None".into(),
        "array" => match schema.get("items") {
            Some(items) if items.is_object() => format!("list[{}]", py_type(items)),
            _ => "list[Any]".into(),
        },
        "object" => "dict[str, Any]".into(),
        _ => "Any".into(),
    }
}

/// A JSON scalar as a Python literal.
fn literal(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => serde_json::to_string(s).ok(),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Null => Some("None".into()),
        _ => None,
    }
}
