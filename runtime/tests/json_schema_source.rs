//! `JsonSchemaSource` at run time: definitions imported from a document, one handler, validated
//! calls; what `build()` refuses; names as exported to a model.

use serde_json::{Value, json};
use toolgate_model::import::{DefinitionFormat, import_document};
use toolgate_runtime::testing::StubSource;
use toolgate_runtime::{
    BuildError, ErrorKind, JsonSchemaSource, JsonSourceError, JsonToolCall, ToolOutput, Toolset,
};

const DEFS: &str = r#"[
  {"name": "get_alerts", "description": "Alerts for a region.",
   "parameters": {"type": "object", "properties": {"region": {"type": "string"}},
                  "required": ["region"], "additionalProperties": false}},
  {"type": "function", "function": {"name": "subscribe", "description": "Subscribe.",
   "parameters": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                  "required": ["email"]}}}
]"#;

async fn echo(call: JsonToolCall) -> Result<ToolOutput, toolgate_runtime::ToolError> {
    Ok(ToolOutput::text(format!(
        "{} {} {}",
        call.tool, call.name, call.args
    )))
}

fn source(id: &str, defs: &str) -> Result<JsonSchemaSource, JsonSourceError> {
    JsonSchemaSource::builder(id)
        .tools(import_document(DefinitionFormat::JsonSchema, defs).unwrap())
        .handler(echo)
        .build()
}

#[tokio::test]
async fn calls_reach_the_handler_validated_under_either_name() {
    let tools = Toolset::builder()
        .source(source("alerts", DEFS).unwrap())
        .build()
        .unwrap();
    let out = tools
        .call("alerts.get_alerts", json!({"region": "NO-03"}))
        .await
        .unwrap();
    assert_eq!(
        out.text_joined(),
        r#"get_alerts alerts.get_alerts {"region":"NO-03"}"#
    );
    // The name a model sees (`alerts__get_alerts`) is accepted as it is.
    let out = tools
        .call("alerts__get_alerts", json!({"region": "NO-03"}))
        .await
        .unwrap();
    assert!(
        out.text_joined()
            .starts_with("get_alerts alerts.get_alerts")
    );
    assert_eq!(
        tools.describe("alerts__subscribe").unwrap().name,
        "alerts.subscribe"
    );
    let e = tools
        .call("alerts.subscribe", json!({"email": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(
        e.message()
            .ends_with("/email: \"nope\" is not a valid email"),
        "{e}"
    );
    let e = tools.call("alerts__nothing", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(e.message(), "no tool named `alerts__nothing`");
}

#[test]
fn build_refuses_what_could_never_be_called() {
    let bad_schema = r#"[{"name": "t", "parameters": {"type": "object",
                          "properties": {"x": {"type": "strnig"}}}}]"#;
    let e = source("s", bad_schema).unwrap_err();
    assert!(
        matches!(&e, JsonSourceError::Schema { tool, .. } if tool == "t"),
        "{e}"
    );
    assert!(
        e.to_string().contains("json_schema source `s`: tool `t`"),
        "{e}"
    );
    let long = format!(r#"[{{"name": "{}", "parameters": {{}}}}]"#, "y".repeat(62));
    let e = source("conv", &long).unwrap_err();
    assert!(e.to_string().contains("68 characters long"), "{e}");
    // Unprefixed, the same names are fine.
    JsonSchemaSource::builder("conv")
        .prefix(false)
        .tools(import_document(DefinitionFormat::JsonSchema, &long).unwrap())
        .handler(echo)
        .build()
        .unwrap();
    let e = JsonSchemaSource::builder("s")
        .tools(import_document(DefinitionFormat::JsonSchema, DEFS).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(e, JsonSourceError::NoHandler("s".into()));
    assert!(matches!(
        JsonSchemaSource::builder("a.b").handler(echo).build(),
        Err(JsonSourceError::Id(_))
    ));
}

#[test]
fn a_name_that_is_taken_as_exported_is_a_duplicate() {
    // A tool named `alerts__get_alerts` would be one name, to a model, with `alerts.get_alerts`.
    let stubs = StubSource::new("stubs").stub("alerts__get_alerts", |_: Value| {
        Ok(ToolOutput::text("stub"))
    });
    let e = Toolset::builder()
        .source(stubs)
        .source(source("alerts", DEFS).unwrap())
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, BuildError::DuplicateTool { name, first, second }
            if name == "alerts.get_alerts" && first == "stubs" && second == "alerts"),
        "{e}"
    );
}

#[test]
fn one_tool_a_dialect_cannot_express_does_not_hide_the_others() {
    // A recursive tree is unrolled for Gemini (no `$ref` there), with a note.
    let tree = r##"{"name": "draw_tree", "description": "Draw a tree.",
        "parameters": {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
                       "$defs": {"Node": {"type": "object",
                                          "properties": {"children": {"type": "array",
                                                                      "items": {"$ref": "#/$defs/Node"}}}}}}}"##;
    // Twenty definitions that each use the next one twice: small as written, but 2^20 copies
    // once inlined, which Gemini (no `$ref`) cannot be given.
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        let next = if i == 19 {
            json!({"type": "string"})
        } else {
            json!({"$ref": format!("#/$defs/S{}", i + 1)})
        };
        defs.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": next, "b": next}}),
        );
    }
    let wide = json!({"name": "wide", "description": "Too wide once inlined.",
        "parameters": {"type": "object", "properties": {"s": {"$ref": "#/$defs/S0"}},
                       "$defs": defs}});
    let listed = format!("[{tree}, {wide}]");
    let tools = Toolset::builder()
        .source(source("alerts", DEFS).unwrap())
        .source(source("trees", &listed).unwrap())
        .build()
        .unwrap();
    let e = tools.export(toolgate_runtime::Dialect::Gemini).unwrap_err();
    assert_eq!(e.tool, "trees.wide");
    let (ok, failed) = tools.export_available(toolgate_runtime::Dialect::Gemini);
    let names: Vec<&str> = ok.iter().filter_map(|d| d["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "alerts__get_alerts",
            "alerts__subscribe",
            "trees__draw_tree"
        ]
    );
    assert_eq!(failed.len(), 1);
    assert!(failed[0].message.contains("too large"), "{}", failed[0]);
    let (tree, notes) = tools
        .describe("trees.draw_tree")
        .unwrap()
        .export_with_notes(toolgate_runtime::Dialect::Gemini)
        .unwrap();
    assert!(!tree.to_string().contains("$ref"), "{tree}");
    assert!(
        notes.iter().any(|n| n.contains("`Node` is recursive")),
        "{notes:?}"
    );
}

/// An MCP `tools/list` entry keeps its output schema and annotations.
#[test]
fn mcp_definitions_keep_output_schema_and_annotations() {
    let listed = r#"{"tools": [{"name": "count_rows", "title": "Count rows", "description": "Count.",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}},
                         "required": ["result"]},
        "annotations": {"readOnlyHint": true}}]}"#;
    let tools = Toolset::builder()
        .source(source("db", listed).unwrap())
        .build()
        .unwrap();
    let d = tools.describe("db.count_rows").unwrap();
    assert_eq!(
        d.output_schema.as_ref().unwrap()["required"],
        json!(["result"])
    );
    assert_eq!(d.annotations.read_only_hint, Some(true));
    assert_eq!(d.annotations.title.as_deref(), Some("Count rows"));
    let mcp = d.export(toolgate_runtime::Dialect::Mcp).unwrap();
    assert_eq!(
        mcp["annotations"],
        json!({"title": "Count rows", "readOnlyHint": true})
    );
    assert_eq!(
        mcp["outputSchema"]["properties"]["result"]["type"],
        "integer"
    );
    let bad = r#"[{"name": "t", "parameters": {}, "outputSchema": {"type": "string"}}]"#;
    let e = import_document(DefinitionFormat::JsonSchema, bad).unwrap_err();
    assert_eq!(e.pointer, "/0/outputSchema", "{e}");
}

#[tokio::test]
async fn a_renamed_duplicate_reaches_the_handler_under_its_own_name() {
    let defs = r#"[{"name": "d", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}},
                   {"name": "d", "parameters": {"type": "object", "properties": {"b": {"type": "string"}}}}]"#;
    let tools = Toolset::builder()
        .source(source("m", defs).unwrap())
        .build()
        .unwrap();
    let out = tools.call("m.d_2", json!({"b": "x"})).await.unwrap();
    assert_eq!(out.text_joined(), r#"d_2 m.d_2 {"b":"x"}"#);
    let out = tools.call("m.d", json!({"a": "x"})).await.unwrap();
    assert_eq!(out.text_joined(), r#"d m.d {"a":"x"}"#);
}

#[test]
fn run_time_sources_get_the_build_time_checks() {
    for (defs, says) in [
        (
            r#"[{"name": "t", "parameters": {"type": "object", "properties": {"x": {"type": "string"}},
                                              "required": ["x", "y"]}}]"#,
            "required \"y\" is not a property",
        ),
        (
            r#"[{"name": "t", "parameters": {}, "outputSchema": {"type": "object",
                                              "properties": {"x": {"type": "integr"}}}}]"#,
            "/outputSchema/properties/x",
        ),
        (
            r#"[{"name": "t", "parameters": {}, "annotations": {"fooHint": 1}}]"#,
            "fooHint",
        ),
    ] {
        let e = source("s", defs).unwrap_err();
        assert!(matches!(e, JsonSourceError::Schema { .. }), "{e}");
        assert!(e.to_string().contains(says), "{says}: {e}");
    }
}

/// A recursive tree is described to Gemini only three levels deep, but the gateway validates
/// against the full recursive schema: a valid tree six levels deep is accepted, and a wrong type
/// five levels down is refused with its pointer.
#[test]
fn unrolling_for_gemini_leaves_validation_of_deep_trees_whole() {
    let tree = r##"[{"name": "draw_tree", "description": "Draw a tree.",
        "parameters": {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
                       "required": ["root"],
                       "$defs": {"Node": {"type": "object",
                                          "properties": {"label": {"type": "string"},
                                                         "children": {"type": "array",
                                                                      "items": {"$ref": "#/$defs/Node"}}}}}}}]"##;
    let tools = Toolset::builder()
        .source(source("trees", tree).unwrap())
        .build()
        .unwrap();
    let (gemini, _) = tools
        .describe("trees.draw_tree")
        .unwrap()
        .export_with_notes(toolgate_runtime::Dialect::Gemini)
        .unwrap();
    assert!(
        gemini
            .to_string()
            .contains("nesting depth limit of 3 reached")
    );
    // `levels` nested nodes, the innermost labelled with `leaf`.
    fn nested(levels: usize, leaf: Value) -> Value {
        let mut node = json!({"label": leaf});
        for _ in 1..levels {
            node = json!({"label": "inner", "children": [node]});
        }
        node
    }
    let ok = tools.check_arguments(
        "trees.draw_tree",
        json!({"root": nested(6, json!("leaf"))}),
        toolgate_runtime::ValidationMode::Strict,
    );
    assert!(ok.is_ok(), "{ok:?}");
    let e = tools
        .check_arguments(
            "trees.draw_tree",
            json!({"root": nested(5, json!(7))}),
            toolgate_runtime::ValidationMode::Strict,
        )
        .unwrap_err();
    let pointer = "/root/children/0/children/0/children/0/children/0/label";
    assert!(e.message().contains(pointer), "{}", e.message());
}
