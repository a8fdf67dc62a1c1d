//! One operation per tool in `/openapi.json`: `POST /tools/{exported name}/call`, its body the
//! tool's own input schema and its answer's `structuredContent` the tool's output schema.
//!
//! A client generator then makes a typed method per tool, and an API tester (schemathesis,
//! say) sends each tool the arguments its schema allows, so the document states the contract
//! the gateway enforces. The route behind them is the one handler of `POST /tools/{name}/call`
//! (which also takes a tool's internal name); the document describes the tools, not the
//! template, because the template's body could only say "any object".
//!
//! The tools are the ones the caller may list, at the time of the request: a tool an MCP server
//! adds later is in the next document.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolgate_model::names::exported_name;
use toolgate_runtime::ToolDescriptor;

/// The path of the template operation in the generated document.
pub(super) const TEMPLATE_PATH: &str = "/tools/{name}/call";

/// The most tools described by an operation of their own. The document of a catalog of 10,000
/// OpenAPI operations would hold every schema again (tens of megabytes); past this number the
/// rest are counted in `info.x-toolgate-tools-not-described` and listed by `GET /tools`.
pub const MAX_TOOL_OPERATIONS: usize = 1000;

/// The components key of a tool's input (`arguments`) or output (`output`) schema:
/// `tool.{exported name}.{what}` (component names allow `[a-zA-Z0-9._-]`, OpenAPI 3.1 section
/// 4.8.7.1; no REST shape has a dot in its name).
fn component(exported: &str, what: &str) -> String {
    format!("tool.{exported}.{what}")
}

/// Replaces the template operation of `doc` by one operation per tool of `tools` (at most
/// [`MAX_TOOL_OPERATIONS`]), with their schemas in `components.schemas`. A tool whose exported
/// name another tool already has is described once.
pub(super) fn describe_tools(doc: &mut Value, tools: &[Arc<ToolDescriptor>]) {
    let Some(template) = doc
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .and_then(|paths| paths.shift_remove(TEMPLATE_PATH))
        .and_then(|mut item| item.get_mut("post").map(Value::take))
    else {
        return;
    };
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let mut not_described = 0usize;
    for tool in tools {
        let exported = exported_name(&tool.name);
        let path = format!("/tools/{exported}/call");
        if paths.contains_key(&path) {
            continue;
        }
        if paths.len() == MAX_TOOL_OPERATIONS {
            not_described += 1;
            continue;
        }
        let arguments = component(&exported, "arguments");
        schemas.insert(arguments.clone(), rebased(&tool.input_schema, &arguments));
        let output = tool.output_schema.as_ref().map(|schema| {
            let key = component(&exported, "output");
            schemas.insert(key.clone(), rebased(schema, &key));
            key
        });
        let op = operation(&template, tool, &exported, &arguments, output.as_deref());
        paths.insert(path, json!({"post": op}));
    }
    if let Some(all) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        all.extend(paths);
    }
    if let Some(all) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        all.extend(schemas);
    }
    if not_described > 0
        && let Some(info) = doc.get_mut("info").and_then(Value::as_object_mut)
    {
        info.insert(
            "x-toolgate-tools-not-described".into(),
            json!(not_described),
        );
    }
}

/// The template operation made `tool`'s own.
fn operation(
    template: &Value,
    tool: &ToolDescriptor,
    exported: &str,
    arguments: &str,
    output: Option<&str>,
) -> Value {
    let mut op = template.clone();
    op["operationId"] = json!(format!("call_{exported}"));
    op["summary"] = json!(format!("Calls `{}`.", tool.name));
    op["description"] = json!(tool.description);
    if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
        params.retain(|p| p["in"] != "path");
    }
    // An empty body is the call without arguments: allowed only when none is required.
    let required = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    let arguments = json!({"$ref": format!("#/components/schemas/{arguments}")});
    // A string of JSON whitespace (`""`, as models send for a tool without parameters) is no
    // arguments too; for a tool that requires some, it is refused like an empty object.
    let schema = if required {
        arguments
    } else {
        json!({"anyOf": [
            arguments,
            {"type": "string", "pattern": "^[ \\t\\n\\r]*$", "description": "No arguments, as a string of JSON whitespace (`\"\"`)."},
        ]})
    };
    op["requestBody"] = json!({
        "description": format!("The arguments of `{}`.", tool.name),
        "required": required,
        "content": {"application/json": {"schema": schema}},
    });
    if let Some(output) = output
        && let Some(schema) = op.pointer_mut("/responses/200/content/application~1json/schema")
    {
        *schema = json!({"allOf": [
            schema.take(),
            {"properties": {"structuredContent": {"$ref": format!("#/components/schemas/{output}")}}},
        ]});
    }
    if let Some(not_found) = op.pointer_mut("/responses/404/description") {
        *not_found = json!(
            "The tool is no longer in the catalog, or the caller may not call it (`not_found`)."
        );
    }
    op
}

/// `schema` as it reads at `#/components/schemas/{key}`: its own `$ref`s (`#/$defs/X`) made to
/// point there, its `$schema` and `$id` dropped (the document's dialect is 2020-12 already, and
/// an `$id` would change what the rewritten `$ref`s resolve against). A subschema with an `$id`
/// of its own is left as it is: its `$ref`s resolve against that `$id`.
fn rebased(schema: &Value, key: &str) -> Value {
    let mut schema = schema.clone();
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("$id");
    }
    let base = format!("#/components/schemas/{key}");
    rebase_refs(&mut schema, &base);
    if key.ends_with(".arguments") {
        admit_null_when_optional(&mut schema);
        bound_integer_widths(&mut schema);
    }
    schema
}

/// An integer `format` naming a 64-bit width (`int64`, `uint64`, and schemars' `int`, `uint`
/// for `isize` / `usize`) gets that width's bounds as `minimum` / `maximum` where the schema
/// gives none: the tool reads the argument into that Rust type and refuses a larger number, so
/// the document says so (OpenAPI 3.1 section 4.2 defines `int64` as signed 64 bits; JSON
/// Schema 2020-12 gives such formats no bounds of their own).
fn bound_integer_widths(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let bounds: Option<(i128, i128)> = match map.get("format").and_then(Value::as_str) {
                Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
                Some("uint64" | "uint") => Some((0, u64::MAX.into())),
                _ => None,
            };
            if let Some((lo, hi)) = bounds {
                let number = |n: i128| serde_json::Number::from_i128(n).map(Value::Number);
                if !map.contains_key("minimum")
                    && !map.contains_key("exclusiveMinimum")
                    && let Some(lo) = number(lo)
                {
                    map.insert("minimum".into(), lo);
                }
                if !map.contains_key("maximum")
                    && !map.contains_key("exclusiveMaximum")
                    && let Some(hi) = number(hi)
                {
                    map.insert("maximum".into(), hi);
                }
            }
            map.values_mut().for_each(bound_integer_widths);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integer_widths),
        _ => {}
    }
}

/// Every optional property of every object `schema` describes also takes `null`, as the
/// toolset's validation does (a `null` for an optional argument is taken as the argument left
/// out, and reported in the result's `_meta`): `{"anyOf": [<its schema>, {"type": "null"}]}`.
/// Without it the document would say less than the gateway accepts, and a model's `null`s
/// would look like contract violations.
fn admit_null_when_optional(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            admit_null_when_optional(property);
            if !required.contains(name) && property.is_object() {
                *property = json!({"anyOf": [property.take(), {"type": "null"}]});
            }
        }
    }
    for keyword in [
        "$defs",
        "definitions",
        "patternProperties",
        "dependentSchemas",
    ] {
        if let Some(Value::Object(children)) = map.get_mut(keyword) {
            children.values_mut().for_each(admit_null_when_optional);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(keyword) {
            children.iter_mut().for_each(admit_null_when_optional);
        }
    }
    for keyword in [
        "items",
        "additionalProperties",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
    ] {
        if let Some(child) = map.get_mut(keyword) {
            admit_null_when_optional(child);
        }
    }
}

fn rebase_refs(value: &mut Value, base: &str) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(rest) = r.strip_prefix('#')
            {
                *r = format!("{base}{rest}");
            }
            for (key, child) in map.iter_mut() {
                let own_resource = child.get("$id").is_some();
                if key != "$ref" && !own_resource {
                    rebase_refs(child, base);
                }
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut().filter(|i| i.get("$id").is_none()) {
                rebase_refs(item, base);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, input: Value, output: Option<Value>) -> Arc<ToolDescriptor> {
        Arc::new(ToolDescriptor {
            name: name.into(),
            description: format!("{name} does things."),
            input_schema: input,
            output_schema: output,
            source: "local".into(),
            ..ToolDescriptor::default()
        })
    }

    fn template_doc() -> Value {
        json!({
            "info": {"title": "t"},
            "paths": {
                "/tools": {"get": {}},
                TEMPLATE_PATH: {"post": {
                    "operationId": "callTool",
                    "parameters": [
                        {"name": "name", "in": "path", "required": true},
                        {"name": "timeout_ms", "in": "query"},
                    ],
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                    "responses": {
                        "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolOutput"}}}},
                        "404": {"description": "No tool of that name."},
                    },
                }},
            },
            "components": {"schemas": {"ToolOutput": {}}},
        })
    }

    #[test]
    fn each_tool_is_an_operation_with_its_own_schemas_and_refs_that_resolve() {
        let mut doc = template_doc();
        let input = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "method": {"$ref": "#/$defs/Method"},
                "inner": {"$id": "urn:x", "$defs": {"A": {}}, "$ref": "#/$defs/A"},
            },
            "required": ["method"],
            "additionalProperties": false,
            "$defs": {"Method": {"enum": ["GET", "HEAD"]}},
        });
        let tools = [
            tool("fetch", input, Some(json!({"type": "object"}))),
            tool("everything.echo", json!({"type": "object"}), None),
        ];
        describe_tools(&mut doc, &tools);

        let paths = doc["paths"].as_object().unwrap();
        assert!(
            !paths.contains_key(TEMPLATE_PATH),
            "the template is replaced"
        );
        let fetch = &doc["paths"]["/tools/fetch/call"]["post"];
        assert_eq!(fetch["operationId"], "call_fetch");
        assert_eq!(fetch["description"], "fetch does things.");
        assert_eq!(
            fetch["parameters"],
            json!([{"name": "timeout_ms", "in": "query"}])
        );
        assert_eq!(
            fetch["requestBody"]["required"], true,
            "fetch requires `method`"
        );
        assert_eq!(
            fetch["responses"]["200"]["content"]["application/json"]["schema"]["allOf"][1]["properties"]
                ["structuredContent"]["$ref"],
            "#/components/schemas/tool.fetch.output"
        );
        let echo = &doc["paths"]["/tools/everything__echo/call"]["post"];
        assert_eq!(echo["operationId"], "call_everything__echo");
        assert_eq!(echo["summary"], "Calls `everything.echo`.");
        assert_eq!(
            echo["requestBody"]["required"], false,
            "no argument is required"
        );
        assert_eq!(
            echo["requestBody"]["content"]["application/json"]["schema"]["anyOf"][1]["pattern"],
            "^[ \\t\\n\\r]*$",
            "without required arguments, `\"\"` is no arguments"
        );
        assert_eq!(
            echo["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ToolOutput",
            "without an output schema the answer is a ToolOutput"
        );

        let arguments = &doc["components"]["schemas"]["tool.fetch.arguments"];
        assert!(arguments.get("$schema").is_none());
        assert_eq!(
            arguments["properties"]["method"]["$ref"],
            "#/components/schemas/tool.fetch.arguments/$defs/Method"
        );
        // A subschema with its own `$id` resolves its `$ref`s against it: left alone.
        assert_eq!(
            arguments["properties"]["inner"]["anyOf"][0]["$ref"],
            "#/$defs/A"
        );
        let mut widths = json!({"properties": {
            "n": {"type": "integer", "format": "uint"},
            "m": {"type": "integer", "format": "int64", "minimum": -5},
        }});
        bound_integer_widths(&mut widths);
        assert_eq!(widths["properties"]["n"]["maximum"], json!(u64::MAX));
        assert_eq!(widths["properties"]["n"]["minimum"], 0);
        assert_eq!(
            widths["properties"]["m"]["minimum"], -5,
            "a bound given is kept"
        );
        assert_eq!(widths["properties"]["m"]["maximum"], json!(i64::MAX));
        // An optional argument takes `null` too (the toolset takes it as left out); a required
        // one does not.
        assert_eq!(
            arguments["properties"]["inner"]["anyOf"][1],
            json!({"type": "null"})
        );
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"#/components").skip(1) {
            let target = &r[..r.find('"').unwrap_or(0)];
            let pointer = format!("/components{target}");
            assert!(doc.pointer(&pointer).is_some(), "dangling $ref {pointer}");
        }
    }

    #[test]
    fn past_the_limit_tools_are_counted_not_described() {
        let mut doc = template_doc();
        let tools: Vec<_> = (0..MAX_TOOL_OPERATIONS + 3)
            .map(|i| tool(&format!("t{i}"), json!({"type": "object"}), None))
            .collect();
        describe_tools(&mut doc, &tools);
        let calls = doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|p| p.ends_with("/call"))
            .count();
        assert_eq!(calls, MAX_TOOL_OPERATIONS);
        assert_eq!(doc["info"]["x-toolgate-tools-not-described"], 3);
    }
}
