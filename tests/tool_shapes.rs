//! Every shape `#[tool]` supports, together in one crate: it must compile, the descriptors must
//! say the right things (the input and output schemas are compared as JSON), and every tool must
//! run through its generated `invoke` (so that no conversion silently took a fallback path).
//!
//! The generated items used here (`__tool_x`, `StaticTool`, `invoke`) are the contract between
//! the macro and the code generator, described in `docs/internals.md`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::__private::StaticTool;
use toolgate::{
    Content, ErrorKind, Provides, State, ToolContext, ToolDescriptor, ToolError, ToolOutput, tool,
};

// ---------------------------------------------------------------------------------------------
// Types the tools use.

/// How to sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// A shape, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        radius: f64,
    },
    /// A rectangle.
    Rect {
        /// Width.
        w: f64,
        /// Height.
        h: f64,
    },
}

/// A point on the map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Latitude in degrees.
    pub lat: f64,
    /// Longitude in degrees.
    pub lon: f64,
}

/// A route: nested structs in a struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Route {
    /// Where it starts.
    pub start: Point,
    /// The stops, in order.
    pub stops: Vec<Point>,
}

/// Arguments of `search`, taken whole as the lone `args` parameter.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// At most this many hits.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A search hit (serializable and described: the tool gets an output schema).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    /// The matched text.
    pub text: String,
    /// Its score.
    pub score: f64,
}

/// Serializable but without a JSON Schema: structured output, no output schema.
#[derive(Debug, Serialize)]
pub struct Untyped {
    /// A value.
    pub value: u32,
}

/// A type of "another crate" that is neither `Deserialize` nor `JsonSchema`: decoded with
/// `#[serde(deserialize_with)]` and described with `#[schemars(with)]`.
#[derive(Debug, PartialEq)]
pub struct Celsius(pub f64);

fn celsius_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Celsius, D::Error> {
    let s = String::deserialize(d)?;
    let n = s
        .trim_end_matches("°C")
        .trim()
        .parse::<f64>()
        .map_err(serde::de::Error::custom)?;
    Ok(Celsius(n))
}

/// Shared state: a counter and a log.
#[derive(Debug, Default)]
pub struct Db {
    pub log: Mutex<Vec<String>>,
}

/// A second state type.
#[derive(Debug)]
pub struct Config {
    pub greeting: String,
}

/// What a generated `ToolsetState` would be: holds every state type and provides it.
struct TestState {
    db: Arc<Db>,
    config: Arc<Config>,
}

impl Provides<Db> for TestState {
    fn provide(&self) -> &Arc<Db> {
        &self.db
    }
}

impl Provides<Config> for TestState {
    fn provide(&self) -> &Arc<Config> {
        &self.config
    }
}

fn state() -> TestState {
    TestState {
        db: Arc::new(Db::default()),
        config: Arc::new(Config {
            greeting: "hello".into(),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// The tools.

/// Add two numbers.
///
/// Returns their sum.
#[tool(read_only)]
pub fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// Greet someone, asynchronously, with state, context, an option, a default and a rename.
#[tool(
    name = "greet-person",
    title = "Greeter",
    category = "social",
    tags = ["demo", "async"],
    version = "1.2.3",
    timeout = "1500ms",
    idempotent
)]
#[allow(clippy::too_many_arguments)] // a tool's arguments are its parameters
pub async fn greet(
    ctx: &ToolContext,
    State(config): State<Config>,
    db: State<Db>,
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    #[tool(default = 1)]
    excitement: u8,
    /// A title to put first.
    title: Option<String>,
    /// The greeting's language (a Rust keyword as a JSON name).
    #[tool(rename = "type")]
    kind: Option<String>,
    /// Whether to shout.
    #[serde(default)]
    shout: bool,
) -> String {
    tokio::task::yield_now().await;
    let who = match title {
        Some(t) => format!("{t} {name}"),
        None => name,
    };
    let mut text = format!(
        "{} {who}{}",
        config.greeting,
        "!".repeat(usize::from(excitement))
    );
    if let Some(k) = kind {
        text.push_str(&format!(" ({k})"));
    }
    if shout {
        text = text.to_uppercase();
    }
    db.log
        .lock()
        .unwrap()
        .push(format!("{}: {text}", ctx.caller().unwrap_or("anonymous")));
    text
}

/// Sort numbers.
#[tool]
pub fn sort(
    /// The numbers.
    mut values: Vec<i64>,
    /// The order (ascending when absent).
    order: Option<Order>,
) -> Vec<i64> {
    values.sort_unstable();
    if order == Some(Order::Descending) {
        values.reverse();
    }
    values
}

/// Total area of shapes, by label.
#[tool]
pub fn areas(
    /// Shapes by label.
    shapes: HashMap<String, Shape>,
) -> HashMap<String, f64> {
    shapes
        .into_iter()
        .map(|(k, s)| {
            let a = match s {
                Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
                Shape::Rect { w, h } => w * h,
            };
            (k, a)
        })
        .collect()
}

/// Count the stops of a route.
#[tool]
pub fn route_len(
    /// The route.
    route: Route,
) -> usize {
    route.stops.len() + 1
}

/// Search (the arguments struct is taken whole).
#[tool(read_only)]
pub async fn search(args: SearchArgs) -> Result<Vec<Hit>, ToolError> {
    if args.query.is_empty() {
        return Err(ToolError::new(
            ErrorKind::InvalidArguments,
            "query must not be empty",
        ));
    }
    let n = args.limit.unwrap_or(2);
    Ok((0..n)
        .map(|i| Hit {
            text: format!("{} #{i}", args.query),
            score: 1.0 / f64::from(i + 1),
        })
        .collect())
}

/// Read a file (a std error becomes `upstream`, keeping its source).
#[tool(blocking, dangerous, requires_auth)]
pub fn read(
    ctx: &ToolContext,
    /// The path.
    path: String,
) -> Result<String, std::io::Error> {
    let _ = ctx.caller();
    std::fs::read_to_string(path)
}

/// A `Result<T>` alias with one type argument.
#[tool]
pub fn parse_int(
    /// Digits.
    text: String,
) -> std::io::Result<u64> {
    text.parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// A `String` error becomes `upstream`.
#[tool]
pub fn fail_with_string(
    /// Whether to fail.
    fail: bool,
) -> Result<Untyped, String> {
    if fail {
        Err("it failed as asked".to_string())
    } else {
        Ok(Untyped { value: 7 })
    }
}

/// Return a `ToolOutput` directly, taking an owned context.
#[tool]
pub fn rich(ctx: ToolContext) -> ToolOutput {
    ToolOutput::text("first")
        .with_content(Content::text(ctx.agent().unwrap_or("no agent").to_string()))
}

/// Return nothing.
#[tool]
pub fn forget(State(db): State<Db>) {
    db.log.lock().unwrap().clear();
}

/// A foreign type decoded with `deserialize_with` and described with `schemars(with)`.
#[tool]
pub fn to_fahrenheit(
    /// A temperature like "21.5 °C".
    #[serde(deserialize_with = "celsius_from_str")]
    #[schemars(with = "String")]
    temperature: Celsius,
) -> f64 {
    temperature.0 * 9.0 / 5.0 + 32.0
}

/// A raw identifier as a parameter name.
#[tool(description = "Echo a type name (the description option wins over this doc comment).")]
pub fn echo_type(
    /// A type name.
    r#type: String,
) -> String {
    r#type
}

/// Blocking, and panicking: the panic becomes `internal`.
#[tool(blocking)]
pub fn explode() -> String {
    panic!("boom")
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn call_ctx() -> ToolContext {
    ToolContext::builder()
        .caller("alice")
        .agent("tester")
        .build()
}

/// The output schema of a tool whose result is wrapped as `{"result": T}`.
fn wrapped(result: Value) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": { "result": result },
        "required": ["result"],
    })
}

// ---------------------------------------------------------------------------------------------
// Descriptors.

#[test]
fn plain_sync_tool_descriptor() {
    let d: ToolDescriptor = __tool_add::descriptor();
    assert_eq!(__tool_add::NAME, "add");
    assert_eq!(d.name, "add");
    assert_eq!(d.description, "Add two numbers.\n\nReturns their sum.");
    assert_eq!(
        d.input_schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "a": { "description": "The first addend.", "type": "integer", "format": "int64" },
                "b": { "description": "The second addend.", "type": "integer", "format": "int64" },
            },
            "required": ["a", "b"],
            "additionalProperties": false,
        })
    );
    assert_eq!(
        d.output_schema,
        Some(wrapped(json!({ "type": "integer", "format": "int64" })))
    );
    assert_eq!(d.annotations.read_only_hint, Some(true));
    assert_eq!(
        d.annotations.idempotent_hint,
        Some(true),
        "read_only implies idempotent"
    );
    assert_eq!(d.annotations.destructive_hint, None);
    assert_eq!(d.source, "local");
    assert_eq!(d.timeout, None);
    assert!(!d.blocking && !d.dangerous && !d.requires_auth);
}

#[test]
fn options_state_context_option_default_rename() {
    let d = __tool_greet::descriptor();
    assert_eq!(__tool_greet::NAME, "greet-person");
    assert_eq!(d.name, "greet-person");
    assert_eq!(
        d.description,
        "Greet someone, asynchronously, with state, context, an option, a default and a rename."
    );
    // `ctx`, `State(config)` and `db` are injected: they are not arguments.
    assert_eq!(
        d.input_schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "name": { "description": "Who to greet.", "type": "string" },
                "excitement": {
                    "description": "How many exclamation marks.",
                    "type": "integer",
                    "format": "uint8",
                    "minimum": 0,
                    "maximum": 255,
                    "default": 1,
                },
                "title": { "description": "A title to put first.", "type": ["string", "null"] },
                "type": {
                    "description": "The greeting's language (a Rust keyword as a JSON name).",
                    "type": ["string", "null"],
                },
                "shout": { "description": "Whether to shout.", "type": "boolean", "default": false },
            },
            "required": ["name"],
            "additionalProperties": false,
        })
    );
    assert_eq!(d.output_schema, None, "a String result is text");
    assert_eq!(d.annotations.title.as_deref(), Some("Greeter"));
    assert_eq!(d.annotations.idempotent_hint, Some(true));
    assert_eq!(d.annotations.read_only_hint, None);
    assert_eq!(d.category.as_deref(), Some("social"));
    assert_eq!(d.tags, ["demo", "async"]);
    assert_eq!(d.version.as_deref(), Some("1.2.3"));
    assert_eq!(d.timeout, Some(Duration::from_millis(1500)));
}

#[test]
fn enums_vec_map_nested_structs() {
    let sort = __tool_sort::descriptor();
    assert_eq!(
        sort.input_schema["properties"]["values"],
        json!({
            "description": "The numbers.",
            "type": "array",
            "items": { "type": "integer", "format": "int64" },
        })
    );
    // An optional enum: a `$ref` to its definition, or null.
    let order = &sort.input_schema["properties"]["order"];
    assert_eq!(order["description"], "The order (ascending when absent).");
    assert_eq!(
        order["anyOf"],
        json!([{ "$ref": "#/$defs/Order" }, { "type": "null" }])
    );
    assert_eq!(
        sort.input_schema["$defs"]["Order"],
        json!({
            "description": "How to sort.",
            "oneOf": [
                { "description": "Smallest first.", "type": "string", "const": "ascending" },
                { "description": "Largest first.", "type": "string", "const": "descending" },
            ],
        })
    );
    assert_eq!(sort.input_schema["required"], json!(["values"]));
    assert_eq!(
        sort.output_schema,
        Some(wrapped(
            json!({ "type": "array", "items": { "type": "integer", "format": "int64" } })
        ))
    );

    let areas = __tool_areas::descriptor();
    let shapes = &areas.input_schema["properties"]["shapes"];
    assert_eq!(shapes["type"], "object");
    assert_eq!(
        shapes["additionalProperties"],
        json!({ "$ref": "#/$defs/Shape" })
    );
    let variants = areas.input_schema["$defs"]["Shape"]["oneOf"]
        .as_array()
        .expect("a tagged enum is a oneOf");
    assert_eq!(variants.len(), 2);
    assert_eq!(variants[0]["properties"]["kind"]["const"], "circle");
    assert_eq!(
        variants[1]["required"],
        json!(["kind", "w", "h"]),
        "{}",
        variants[1]
    );
    // A map is a JSON object already: not wrapped.
    assert_eq!(
        areas.output_schema,
        Some(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": { "type": "number", "format": "double" },
        }))
    );

    let route = __tool_route_len::descriptor();
    assert_eq!(
        route.input_schema["properties"]["route"],
        json!({ "description": "The route.", "$ref": "#/$defs/Route" })
    );
    let defs = &route.input_schema["$defs"];
    assert_eq!(
        defs["Route"]["properties"]["stops"],
        json!({ "description": "The stops, in order.", "type": "array", "items": { "$ref": "#/$defs/Point" } })
    );
    assert_eq!(defs["Point"]["additionalProperties"], json!(false));
    assert_eq!(defs["Point"]["required"], json!(["lat", "lon"]));
}

/// Sort the results (a lone `args` parameter that is not an object: wrapped as `{"args": ...}`).
#[tool]
pub fn set_order(args: Order) -> String {
    format!("{args:?}")
}

#[tokio::test]
async fn lone_args_that_is_not_an_object_is_wrapped() {
    let d = __tool_set_order::descriptor();
    assert_eq!(d.input_schema["type"], "object", "{}", d.input_schema);
    assert_eq!(d.input_schema["required"], json!(["args"]));
    assert_eq!(d.input_schema["additionalProperties"], json!(false));
    assert!(d.input_schema["properties"]["args"].is_object());
    for dialect in toolgate::Dialect::ALL {
        d.export(dialect).expect("exports");
    }
    let st = state();
    let ctx = call_ctx();
    let out = __tool_set_order::invoke(&st, json!({ "args": "descending" }), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "Descending");
    let e = __tool_set_order::invoke(&st, json!("descending"), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let e = __tool_set_order::invoke(&st, json!({"args": "nope"}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/args", "{e}");
}

#[test]
fn lone_args_struct_is_the_arguments_object() {
    let d = __tool_search::descriptor();
    assert_eq!(
        d.input_schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "query": { "description": "What to look for.", "type": "string" },
                "limit": {
                    "description": "At most this many hits.",
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0,
                    "default": null,
                },
            },
            "required": ["query"],
            "additionalProperties": false,
        })
    );
    let out = d.output_schema.expect("Vec<Hit> is JsonSchema");
    assert_eq!(
        out["properties"]["result"],
        json!({ "type": "array", "items": { "$ref": "#/$defs/Hit" } })
    );
    assert_eq!(out["$defs"]["Hit"]["required"], json!(["text", "score"]));
}

#[test]
fn results_errors_and_flags() {
    let read = __tool_read::descriptor();
    assert!(read.blocking && read.dangerous && read.requires_auth);
    assert_eq!(read.annotations.destructive_hint, Some(true));
    assert_eq!(read.output_schema, None);
    assert_eq!(read.input_schema["required"], json!(["path"]));

    let parse = __tool_parse_int::descriptor();
    assert_eq!(
        parse.output_schema,
        Some(wrapped(
            json!({ "type": "integer", "format": "uint64", "minimum": 0 })
        ))
    );

    // Serialize without JsonSchema: no output schema.
    assert_eq!(__tool_fail_with_string::descriptor().output_schema, None);

    // ToolOutput and (): no output schema, no arguments.
    for d in [__tool_rich::descriptor(), __tool_forget::descriptor()] {
        assert_eq!(d.output_schema, None, "{}", d.name);
        assert_eq!(
            d.input_schema,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {},
                "additionalProperties": false,
            }),
            "{}",
            d.name
        );
    }

    let f = __tool_to_fahrenheit::descriptor();
    assert_eq!(
        f.input_schema["properties"]["temperature"],
        json!({ "description": "A temperature like \"21.5 °C\".", "type": "string" })
    );

    let e = __tool_echo_type::descriptor();
    assert_eq!(e.name, "echo_type");
    assert_eq!(
        e.description,
        "Echo a type name (the description option wins over this doc comment)."
    );
    assert_eq!(e.input_schema["required"], json!(["type"]));
    assert!(e.input_schema["properties"]["type"].is_object());

    let x = __tool_explode::descriptor();
    assert!(x.blocking);
}

#[test]
fn every_descriptor_exports_to_every_dialect() {
    let all = [
        __tool_add::descriptor(),
        __tool_greet::descriptor(),
        __tool_sort::descriptor(),
        __tool_areas::descriptor(),
        __tool_route_len::descriptor(),
        __tool_search::descriptor(),
        __tool_read::descriptor(),
        __tool_parse_int::descriptor(),
        __tool_fail_with_string::descriptor(),
        __tool_rich::descriptor(),
        __tool_forget::descriptor(),
        __tool_to_fahrenheit::descriptor(),
        __tool_echo_type::descriptor(),
        __tool_explode::descriptor(),
    ];
    for d in &all {
        for dialect in [
            toolgate::Dialect::Mcp,
            toolgate::Dialect::OpenAi,
            toolgate::Dialect::Anthropic,
        ] {
            let v = d
                .export(dialect)
                .unwrap_or_else(|e| panic!("{} in {dialect:?}: {e}", d.name));
            assert!(v.to_string().contains(&d.name), "{v}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Calls through the generated `invoke`.

#[tokio::test]
async fn calls_run_and_convert_their_results() {
    let s = state();
    let ctx = call_ctx();

    let out = __tool_add::invoke(&s, json!({"a": 2, "b": 40}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": 42})));
    assert_eq!(out.text_joined(), r#"{"result":42}"#);

    let out = __tool_greet::invoke(
        &s,
        json!({"name": "Ada", "title": "Dr.", "type": "en", "shout": true}),
        ctx.clone(),
    )
    .await
    .unwrap();
    assert_eq!(out, ToolOutput::text("HELLO DR. ADA! (EN)"));
    let out = __tool_greet::invoke(&s, json!({"name": "Bob", "excitement": 3}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "hello Bob!!!");
    assert_eq!(
        *s.db.log.lock().unwrap(),
        ["alice: HELLO DR. ADA! (EN)", "alice: hello Bob!!!"],
        "state and context reach the function"
    );

    let out = __tool_sort::invoke(
        &s,
        json!({"values": [3, 1, 2], "order": "descending"}),
        ctx.clone(),
    )
    .await
    .unwrap();
    assert_eq!(out.structured, Some(json!({"result": [3, 2, 1]})));

    let out = __tool_areas::invoke(
        &s,
        json!({"shapes": {"door": {"kind": "rect", "w": 1.0, "h": 2.0}}}),
        ctx.clone(),
    )
    .await
    .unwrap();
    assert_eq!(out.structured, Some(json!({"door": 2.0})));

    let route =
        json!({"route": {"start": {"lat": 0.0, "lon": 0.0}, "stops": [{"lat": 1.0, "lon": 1.0}]}});
    let out = __tool_route_len::invoke(&s, route, ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": 2})));

    let out = __tool_search::invoke(&s, json!({"query": "rust", "limit": 1}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"result": [{"text": "rust #0", "score": 1.0}]}))
    );

    let out = __tool_parse_int::invoke(&s, json!({"text": "12"}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": 12})));

    let out = __tool_fail_with_string::invoke(&s, json!({"fail": false}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"value": 7})));

    let out = __tool_rich::invoke(&s, Value::Null, ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "first\ntester");
    assert_eq!(out.content.len(), 2);

    let out = __tool_forget::invoke(&s, json!({}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out, ToolOutput::default());
    assert!(s.db.log.lock().unwrap().is_empty());

    let out = __tool_to_fahrenheit::invoke(&s, json!({"temperature": "100 °C"}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": 212.0})));

    let out = __tool_echo_type::invoke(&s, json!({"type": "u8"}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "u8");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("note.txt");
    std::fs::write(&file, "on the blocking pool").unwrap();
    let out = __tool_read::invoke(&s, json!({"path": file}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "on the blocking pool");
}

#[tokio::test]
async fn errors_become_tool_errors() {
    let s = state();
    let ctx = call_ctx();

    // Unknown keys, wrong types and missing arguments name the pointer.
    let e = __tool_add::invoke(&s, json!({"a": 1, "b": 2, "c": 3}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.message().contains("unknown field `c`"), "{e}");
    let e = __tool_add::invoke(&s, json!({"a": 1, "b": "2"}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/b");
    let e = __tool_add::invoke(&s, json!({"a": 1}), ctx.clone())
        .await
        .unwrap_err();
    assert!(e.message().contains("missing field `b`"), "{e}");
    let e = __tool_route_len::invoke(
        &s,
        json!({"route": {"start": {"lat": 0.0, "lon": 0.0}, "stops": [{"lat": 1.0}]}}),
        ctx.clone(),
    )
    .await
    .unwrap_err();
    assert!(e.message().contains("/route/stops/0"), "{e}");
    let e = __tool_search::invoke(&s, json!({"query": "x", "extra": 1}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.message().contains("unknown field `extra`"), "{e}");
    let e = __tool_to_fahrenheit::invoke(&s, json!({"temperature": "hot"}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/temperature");

    // ToolError as is.
    let e = __tool_search::invoke(&s, json!({"query": ""}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert_eq!(e.message(), "query must not be empty");

    // A std error: upstream, with its source kept for logs.
    let e = __tool_read::invoke(&s, json!({"path": "/definitely/not/here"}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream);
    assert!(std::error::Error::source(&e).is_some(), "{e:?}");
    let e = __tool_parse_int::invoke(&s, json!({"text": "x"}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream);
    assert!(e.message().contains("invalid digit"), "{e}");

    // A String error: upstream with that message.
    let e = __tool_fail_with_string::invoke(&s, json!({"fail": true}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream);
    assert_eq!(e.message(), "it failed as asked");

    // A panic on the blocking pool: internal.
    let e = __tool_explode::invoke(&s, json!({}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert!(e.message().contains("boom"), "{e}");
}
