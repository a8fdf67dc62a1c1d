//! The runtime, end to end, through the example's real generated toolset (`build.rs` compiled
//! tools.yaml into `weather_agent::toolset`): calls, argument errors, state checked at build,
//! timeouts, cancellation, progress, nested calls under the caller's identity, the blocking API,
//! panics, stubs, export and name clashes.
//!
//! Timeouts and cancellation run on tokio's paused clock, so they take no real time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::testing::StubSource;
use toolgate::{
    BuildError, Dialect, ErrorKind, Progress, ProgressReporter, SourceTool, ToolContext, ToolError,
    ToolFuture, ToolOutput, ToolSource, Toolset,
};
use weather_agent::{build_toolset, tools, toolset};

const TOOLS: [&str; 8] = [
    "forecast",
    "convert_temperature",
    "plan_trip",
    "save_note",
    "list_notes",
    "slow_report",
    "alerts.get_alerts",
    "alerts.subscribe_alerts",
];

fn tools_() -> Toolset {
    build_toolset().expect("the example's toolset builds")
}

fn ctx_of(caller: &str) -> ToolContext {
    ToolContext::builder()
        .caller(caller)
        .agent("weather-agent")
        .build()
}

// ---------------------------------------------------------------------------------------------
// Each tool.

#[tokio::test]
async fn forecast_returns_structured_days() {
    let out = tools_()
        .call("forecast", json!({"city": "Oslo", "days": 2}))
        .await
        .unwrap();
    assert!(!out.is_error);
    let s = out.structured.as_ref().expect("structured content");
    assert_eq!(s["city"], "Oslo");
    assert_eq!(s["unit"], "celsius");
    assert_eq!(
        s["days"],
        json!([
            {"offset": 0, "temperature": 5.0, "sky": "sunny"},
            {"offset": 1, "temperature": 6.0, "sky": "cloudy"},
        ])
    );
    // The structured result is mirrored as JSON text for clients that only read `content`.
    let text: Value = serde_json::from_str(&out.text_joined()).unwrap();
    assert_eq!(&text, s);
}

#[tokio::test]
async fn forecast_defaults_and_options() {
    let t = tools_();
    // `days` defaults to 3 (#[tool(default = 3)]), `unit` is optional.
    let out = t.call("forecast", json!({"city": "lisbon"})).await.unwrap();
    assert_eq!(out.structured.unwrap()["days"].as_array().unwrap().len(), 3);
    let out = t
        .call(
            "forecast",
            json!({"city": "Lisbon", "days": 1, "unit": "fahrenheit"}),
        )
        .await
        .unwrap();
    let s = out.structured.unwrap();
    assert_eq!(s["unit"], "fahrenheit");
    assert_eq!(s["days"][0]["temperature"], 61.7);
    // The function's own error type becomes a `not_found` ToolError through `From`.
    let e = t
        .call("forecast", json!({"city": "Atlantis"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.message().contains("no weather station for `Atlantis`"),
        "{e}"
    );
}

#[tokio::test]
async fn convert_temperature_returns_a_wrapped_number() {
    let out = tools_()
        .call(
            "convert_temperature",
            json!({"value": 100.0, "from": "celsius", "to": "fahrenheit"}),
        )
        .await
        .unwrap();
    // A non-object result is wrapped as {"result": ...} (MCP wants an object).
    assert_eq!(out.structured, Some(json!({"result": 212.0})));
}

#[tokio::test]
async fn plan_trip_calls_forecast_for_both_cities() {
    let out = tools_()
        .call("plan_trip", json!({"from": "Cairo", "to": "Reykjavik"}))
        .await
        .unwrap();
    assert_eq!(
        out.text_joined(),
        "Cairo 21.0°C -> Reykjavik 3.5°C: pack warm clothes"
    );
    assert_eq!(out.structured, None, "a String result is plain text");
    // The nested call's error reaches the caller as is.
    let e = tools_()
        .call("plan_trip", json!({"from": "Cairo", "to": "Atlantis"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn notes_are_saved_under_the_callers_identity() {
    let t = tools_();
    let out = t
        .call_with(
            "save_note",
            json!({"title": "packing", "body": "warm clothes"}),
            ctx_of("ada"),
        )
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "saved note `packing` (1 notes in total)");
    t.call("save_note", json!({"title": "anon", "body": "no caller"}))
        .await
        .unwrap();
    let out = t.call("list_notes", Value::Null).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"result": [
            {"title": "packing", "body": "warm clothes", "saved_by": "ada"},
            {"title": "anon", "body": "no caller", "saved_by": null},
        ]}))
    );
    // State is per built toolset: a second toolset has its own notebook.
    let other = tools_().call("list_notes", json!({})).await.unwrap();
    assert_eq!(other.structured, Some(json!({"result": []})));
}

#[tokio::test(start_paused = true)]
async fn slow_report_finishes_within_its_timeout_and_reports_progress() {
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let ctx = ToolContext::builder()
        .progress(ProgressReporter::new(move |p| sink.lock().unwrap().push(p)))
        .build();
    let out = tools_()
        .call_with("slow_report", json!({"seconds": 1}), ctx)
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "report done after 1 s");
    assert_eq!(
        *seen.lock().unwrap(),
        [Progress {
            progress: 0.0,
            total: Some(1.0),
            message: Some("writing".into()),
        }]
    );
}

// ---------------------------------------------------------------------------------------------
// Errors a model can act on.

#[tokio::test]
async fn invalid_arguments_name_the_pointer() {
    let t = tools_();
    let e = t
        .call("forecast", json!({"city": "Oslo", "days": "two"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(!e.is_retryable());
    let errors = e.argument_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].pointer, "/days");
    assert_eq!(
        e.message(),
        "invalid arguments for tool `forecast`: /days: expected integer, got string \"two\""
    );

    // Out of range for u8 (the schema says so: `maximum: 255`).
    let e = t
        .call("forecast", json!({"city": "Oslo", "days": 300}))
        .await
        .unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/days");
    assert_eq!(
        e.argument_errors()[0].message,
        "300 is greater than maximum 255"
    );

    // A bad enum value deeper in: the pointer names it.
    let e = t
        .call("forecast", json!({"city": "Oslo", "unit": "kelvin"}))
        .await
        .unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/unit");
    assert!(
        e.message()
            .ends_with(r#"/unit: "kelvin" is not one of "celsius", "fahrenheit""#),
        "{e}"
    );

    // A missing argument.
    let e = t.call("forecast", json!({"days": 2})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.message().ends_with("/city: required but missing"), "{e}");

    // Not an object at all.
    let e = t.call("forecast", json!(["Oslo"])).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.message().contains("must be a JSON object"), "{e}");
}

#[tokio::test]
async fn unknown_argument_keys_are_rejected() {
    let t = tools_();
    let e = t
        .call("forecast", json!({"city": "Oslo", "dayz": 2}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(
        e.message()
            .ends_with("unknown argument(s) 'dayz' for tool forecast; allowed: city, days, unit"),
        "{e}"
    );
    // The same for a tool that takes its arguments as one struct (`args: TripArgs`).
    let e = t
        .call(
            "plan_trip",
            json!({"from": "Oslo", "to": "Cairo", "via": "Rome"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(
        e.message()
            .ends_with("unknown argument(s) 'via' for tool plan_trip; allowed: from, to"),
        "{e}"
    );
    // And for a tool without arguments.
    let e = t
        .call("list_notes", json!({"all": true}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn unknown_tool_is_not_found() {
    let e = tools_()
        .call("book_flight", json!({"to": "Reykjavik"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(e.message(), "no tool named `book_flight`");
    assert!(tools_().describe("book_flight").is_none());
}

// ---------------------------------------------------------------------------------------------
// State, checked once at build.

#[test]
fn missing_state_fails_the_build_naming_type_and_tools() {
    let err = toolset::toolset().build().unwrap_err();
    assert_eq!(
        err,
        BuildError::MissingState {
            type_name: "weather_agent::tools::Stations".into(),
            tools: vec!["forecast".into()],
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("weather_agent::tools::Stations"), "{msg}");
    assert!(msg.contains("`forecast`"), "{msg}");

    // With one of the two given, the other is named, with both tools that take it.
    let err = toolset::toolset()
        .state(tools::Stations::demo())
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::MissingState {
            type_name: "weather_agent::tools::Notebook".into(),
            tools: vec!["save_note".into(), "list_notes".into()],
        }
    );

    // With both, it builds; shared state can be given as an Arc too.
    let t = toolset::toolset()
        .state_arc(Arc::new(tools::Stations::demo()))
        .state(tools::Notebook::default())
        .build()
        .unwrap();
    assert!(t.state::<tools::Notebook>().is_some());
}

// ---------------------------------------------------------------------------------------------
// Timeouts and cancellation (paused clock).

#[tokio::test(start_paused = true)]
async fn slow_report_hits_its_two_second_timeout() {
    let started = tokio::time::Instant::now();
    let e = tools_()
        .call("slow_report", json!({"seconds": 5}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(e.is_retryable());
    assert_eq!(
        e.message(),
        "tool `slow_report` did not finish within 2000 ms"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_callers_deadline_wins_when_it_is_earlier() {
    let ctx = ToolContext::builder()
        .timeout(Duration::from_millis(500))
        .build();
    let e = tools_()
        .call_with("slow_report", json!({"seconds": 5}), ctx)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    // What was left of the caller's 500 ms when the call started (real time passes between
    // building the context and the call, more on a loaded machine), not the tool's 2 s.
    let ms: u64 = e
        .message()
        .split("within ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {e}"));
    assert!((300..=500).contains(&ms), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_does_not_cancel_the_callers_token() {
    // One token for a whole agent session, shared by its calls.
    let ctx = ctx_of("ada");
    let session = ctx.cancellation().clone();
    let t = tools_();
    let e = t
        .call_with("slow_report", json!({"seconds": 5}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(
        !session.is_cancelled(),
        "the timeout of one call cancelled the caller's session token"
    );
    let out = t
        .call_with("slow_report", json!({"seconds": 1}), ctx)
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "report done after 1 s");
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_context_cancels_the_call() {
    let ctx = ctx_of("ada");
    let token = ctx.cancellation().clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        token.cancel();
    });
    let started = tokio::time::Instant::now();
    let e = tools_()
        .call_with("slow_report", json!({"seconds": 5}), ctx)
        .await
        .unwrap_err();
    canceller.await.unwrap();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert!(e.message().contains("slow_report"), "{e}");
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn an_already_cancelled_context_runs_nothing() {
    let ctx = ctx_of("ada");
    ctx.cancellation().cancel();
    let t = tools_();
    let e = t
        .call_with("save_note", json!({"title": "t", "body": "b"}), ctx)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    let notes = t.call("list_notes", json!({})).await.unwrap();
    assert_eq!(notes.structured, Some(json!({"result": []})));
}

// ---------------------------------------------------------------------------------------------
// Nested calls go through the toolset, under the caller's identity.

/// One recorded call: tool name, caller, agent.
type Call = (String, Option<String>, Option<String>);

/// A `ToolSource` that forwards to another one and records every call with its identity.
struct Recording<S> {
    inner: Arc<S>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl<S: ToolSource> ToolSource for Recording<S> {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn tools(&self) -> Vec<SourceTool> {
        self.inner.tools()
    }
    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        self.calls.lock().unwrap().push((
            tool.name().to_string(),
            ctx.caller().map(str::to_owned),
            ctx.agent().map(str::to_owned),
        ));
        Arc::clone(&self.inner).call(tool, args, ctx)
    }
}

#[tokio::test]
async fn nested_calls_pass_through_the_toolset_with_the_callers_identity() {
    let mut states = toolgate::StateMap::new();
    states.insert(Arc::new(tools::Stations::demo()));
    states.insert(Arc::new(tools::Notebook::default()));
    let calls = Arc::default();
    let recording = Recording {
        inner: Arc::new(toolset::StaticTools::new(&states).unwrap()),
        calls: Arc::clone(&calls),
    };
    let t = Toolset::builder().source(recording).build().unwrap();
    let out = t
        .call_with(
            "plan_trip",
            json!({"from": "Oslo", "to": "Lisbon"}),
            ctx_of("ada"),
        )
        .await
        .unwrap();
    assert_eq!(
        out.text_joined(),
        "Oslo 5.0°C -> Lisbon 16.5°C: pack light clothes"
    );
    let who = (Some("ada".to_string()), Some("weather-agent".to_string()));
    let recorded = calls.lock().unwrap().clone();
    assert_eq!(
        recorded,
        [
            ("plan_trip".to_string(), who.0.clone(), who.1.clone()),
            ("forecast".to_string(), who.0.clone(), who.1.clone()),
            ("forecast".to_string(), who.0, who.1),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The blocking API.

#[test]
fn call_blocking_works_from_sync_code() {
    let t = tools_();
    let out = t
        .call_blocking(
            "convert_temperature",
            json!({"value": 32.0, "from": "fahrenheit", "to": "celsius"}),
        )
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": 0.0})));
    // Nested calls work there too, and the runtime is reused.
    let out = t
        .call_blocking("plan_trip", json!({"from": "Oslo", "to": "Oslo"}))
        .unwrap();
    assert!(out.text_joined().ends_with("pack as at home"), "{out:?}");
    let e = t.call_blocking("forecast", json!({"city": 7})).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn call_blocking_inside_a_runtime_is_an_error_not_a_panic() {
    let e = tools_().call_blocking("list_notes", json!({})).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert!(e.message().contains("inside an async runtime"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Other sources: stubs, panics, clashes.

#[tokio::test]
async fn a_panicking_tool_is_internal_and_the_toolset_keeps_working() {
    let stubs = StubSource::new("stubs").stub("explode", |_| panic!("kaboom"));
    let t = toolset::toolset()
        .state(tools::Stations::demo())
        .state(tools::Notebook::default())
        .source(stubs.clone())
        .build()
        .unwrap();
    let e = t.call("explode", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert_eq!(e.message(), "tool `explode` panicked: kaboom");
    stubs.assert_called_with("explode", json!({}));
    // Everything still works, including the panicking tool's source.
    let e = t.call("explode", json!({"again": true})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Internal);
    let out = t
        .call("forecast", json!({"city": "Cairo", "days": 1}))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(stubs.calls_to("explode").len(), 2);
}

#[tokio::test]
async fn stub_source_stubs_and_records_calls() {
    let stubs = StubSource::new("travel")
        .stub("book_flight", |args| {
            Ok(ToolOutput::text(format!(
                "booked to {}",
                args["to"].as_str().unwrap_or("?")
            )))
        })
        .stub("cancel_flight", |_| {
            Err(ToolError::permission_denied("only agents may cancel"))
        });
    let t = toolset::toolset()
        .state(tools::Stations::demo())
        .state(tools::Notebook::default())
        .source(stubs.clone())
        .build()
        .unwrap();
    assert_eq!(t.tools().len(), TOOLS.len() + 2);
    assert_eq!(t.describe("book_flight").unwrap().source, "travel");

    let out = t
        .call_with("book_flight", json!({"to": "Reykjavik"}), ctx_of("ada"))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "booked to Reykjavik");
    let e = t.call("cancel_flight", json!({"id": 1})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    // The compiled tools are not recorded by the stubs.
    t.call("list_notes", json!({})).await.unwrap();

    stubs.assert_called_with("book_flight", json!({"to": "Reykjavik"}));
    stubs.assert_called_with("cancel_flight", json!({"id": 1}));
    stubs.assert_not_called("list_notes");
    assert_eq!(
        stubs.calls_to("book_flight")[0].caller.as_deref(),
        Some("ada")
    );
    assert_eq!(stubs.call_counts()["book_flight"], 1);
    let wrong = std::panic::catch_unwind(|| {
        stubs.assert_called_with("book_flight", json!({"to": "Oslo"}));
    });
    assert!(
        wrong.is_err(),
        "assert_called_with must fail on other arguments"
    );
}

#[test]
fn a_second_source_offering_an_existing_name_is_a_duplicate() {
    let err = toolset::toolset()
        .state(tools::Stations::demo())
        .state(tools::Notebook::default())
        .source(StubSource::new("stubs").stub("forecast", |_| Ok(ToolOutput::text("sunny"))))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::DuplicateTool {
            name: "forecast".into(),
            first: "local".into(),
            second: "stubs".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "tool name `forecast` is offered by both source `local` and source `stubs`"
    );
    // Two sources with one id clash too.
    let err = Toolset::builder()
        .source(StubSource::new("x").stub("a", |_| Ok(ToolOutput::default())))
        .source(StubSource::new("x").stub("b", |_| Ok(ToolOutput::default())))
        .build()
        .unwrap_err();
    assert_eq!(err, BuildError::DuplicateSource("x".into()));
}

// ---------------------------------------------------------------------------------------------
// Export.

#[test]
fn export_lists_every_tool_in_every_dialect() {
    let t = tools_();
    let names: Vec<String> = t.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, TOOLS);
    for dialect in Dialect::ALL {
        let defs = t.export(dialect).unwrap();
        assert_eq!(defs.len(), TOOLS.len(), "{dialect:?}");
        for (def, name) in defs.iter().zip(TOOLS) {
            let exported = toolgate::model::names::exported_name(name);
            assert_eq!(def["name"], exported.as_ref(), "{dialect:?}: {def}");
            let schema = match dialect {
                Dialect::Mcp => &def["inputSchema"],
                Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Gemini => &def["parameters"],
                Dialect::Anthropic => &def["input_schema"],
            };
            // Gemini declarations of tools without arguments have no `parameters` at all
            // (Gemini refuses an empty `properties`).
            if !(dialect == Dialect::Gemini && def.get("parameters").is_none()) {
                assert_eq!(schema["type"], "object", "{dialect:?}: {def}");
            }
            assert!(
                def["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{dialect:?}: {def}"
            );
        }
    }
    let openai = t.export(Dialect::OpenAi).unwrap();
    assert!(openai.iter().all(|d| d["type"] == "function"), "{openai:?}");
}

// Tools defined by JSON Schema (tools/alerts.json), compiled in by tools.yaml's `json_schema:`.

#[tokio::test]
async fn json_schema_tools_are_called_through_their_handler() {
    let t = tools_();
    let d = t.describe("alerts.get_alerts").expect("listed");
    assert_eq!(d.source, "alerts");
    assert_eq!(d.category.as_deref(), Some("weather"));
    let out = t
        .call("alerts.get_alerts", json!({"region": "NO-03"}))
        .await
        .unwrap();
    assert_eq!(
        out.structured.unwrap()["alerts"][0]["headline"],
        "Icy roads in the morning"
    );
    // Validated against the file's schema before the handler runs: the enum, the format, the
    // unknown key.
    let e = t
        .call(
            "alerts.get_alerts",
            json!({"region": "NO-03", "min_severity": "apocalyptic", "when": "now"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        e.message(),
        "invalid arguments for tool `alerts.get_alerts`: unknown argument(s) 'when' for tool \
         alerts.get_alerts; allowed: region, min_severity; /min_severity: \"apocalyptic\" is not \
         one of \"minor\", \"moderate\", \"severe\""
    );
    let e = t
        .call(
            "alerts.subscribe_alerts",
            json!({"region": "NO-03", "email": "not an address"}),
        )
        .await
        .unwrap_err();
    assert!(
        e.message()
            .ends_with("/email: \"not an address\" is not a valid email"),
        "{e}"
    );
    // Exported with the provider-safe separator.
    let def = d.export(toolgate::Dialect::OpenAiStrict).unwrap();
    assert_eq!(def["name"], "alerts__get_alerts");
    assert_eq!(def["strict"], true);
}
