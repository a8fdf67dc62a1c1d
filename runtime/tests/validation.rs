//! Argument validation wired into `Toolset::run`: on by default, strict unless configured, every
//! change to the arguments reported in the result's `_meta`.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_runtime::ToolSource as _;
use toolgate_runtime::testing::StubSource;
use toolgate_runtime::{
    COERCIONS_META_KEY, ErrorKind, ExtraArguments, ToolDescriptor, ToolOutput, Toolset,
    ValidationMode,
};

/// A stub source `stubs` with tool `name` of this input schema, echoing its arguments as text.
fn echo_stub(name: &str, input_schema: Value) -> StubSource {
    let descriptor = ToolDescriptor {
        name: name.into(),
        description: name.into(),
        input_schema,
        source: "stubs".into(),
        ..ToolDescriptor::default()
    };
    StubSource::new("stubs").stub_with(descriptor, |args: Value| {
        Ok(ToolOutput::text(args.to_string()))
    })
}

fn stubs() -> StubSource {
    echo_stub(
        "search",
        json!({"type": "object",
               "properties": {"limit": {"type": "integer", "minimum": 1},
                              "exact": {"type": "boolean"}},
               "required": ["limit"], "additionalProperties": false}),
    )
}

#[tokio::test]
async fn on_by_default_and_can_be_turned_off() {
    let stubs = stubs();
    let tools = Toolset::builder().source(stubs.clone()).build().unwrap();
    let err = tools
        .call("search", json!({"limit": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    stubs.assert_not_called("search");
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(false)
        .build()
        .unwrap();
    let out = tools.call("search", json!({"limit": "x"})).await.unwrap();
    assert_eq!(out.text_joined(), r#"{"limit":"x"}"#);
    assert!(tools.argument_policy("search").is_none());
}

#[tokio::test]
async fn strict_rejects_before_the_tool_runs() {
    let stubs = stubs();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .build()
        .unwrap();
    let err = tools
        .call("search", json!({"limit": 0, "id": 3}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let pointers: Vec<String> = err
        .argument_errors()
        .into_iter()
        .map(|e| e.pointer)
        .collect();
    assert_eq!(pointers, vec!["".to_string(), "/limit".to_string()]);
    stubs.assert_not_called("search");
    tools.call("search", json!({"limit": 2})).await.unwrap();
    assert_eq!(stubs.calls().len(), 1);
}

#[tokio::test]
async fn lenient_forwards_the_coerced_copy() {
    let stubs = stubs();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .validation_mode(ValidationMode::Lenient)
        .build()
        .unwrap();
    let out = tools
        .call("search", json!({"limit": "5", "exact": "true"}))
        .await
        .unwrap();
    stubs.assert_called_with("search", json!({"limit": 5, "exact": true}));
    // Each coercion is reported in the result's `_meta`, and so in its MCP form.
    let meta = out.meta.as_ref().expect("_meta");
    assert_eq!(
        meta[COERCIONS_META_KEY],
        json!([
            {"pointer": "/limit", "kind": "parsed", "from": "5", "to": 5},
            {"pointer": "/exact", "kind": "parsed", "from": "true", "to": true}
        ])
    );
    let wire = serde_json::to_value(&out).unwrap();
    assert_eq!(wire["_meta"][COERCIONS_META_KEY][0]["to"], 5);
    // Arguments valid as sent: no `_meta` at all.
    let out = tools.call("search", json!({"limit": 5})).await.unwrap();
    assert!(out.meta.is_none());
    assert!(serde_json::to_value(&out).unwrap().get("_meta").is_none());
    let err = tools
        .call("search", json!({"limit": "0"}))
        .await
        .unwrap_err();
    assert!(
        err.message().ends_with("/limit: 0 is less than minimum 1"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn lenient_for_one_tool_only() {
    let stubs = stubs().stub("other", |args: Value| {
        Ok(ToolOutput::text(args.to_string()))
    });
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .validation_mode_for("search", ValidationMode::Lenient)
        .build()
        .unwrap();
    tools.call("search", json!({"limit": "5"})).await.unwrap();
    stubs.assert_called_with("search", json!({"limit": 5}));
    // The stub's schema takes any object: nothing to coerce, nothing rejected.
    tools.call("other", json!({"x": "1"})).await.unwrap();
    stubs.assert_called_with("other", json!({"x": "1"}));
}

#[tokio::test]
async fn strict_by_default_when_on() {
    let tools = Toolset::builder()
        .source(stubs())
        .validate_arguments(true)
        .build()
        .unwrap();
    let err = tools
        .call("search", json!({"limit": "5"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "invalid arguments for tool `search`: /limit: expected integer, got string \"5\""
    );
}

#[test]
fn check_arguments_reports_coercions_without_calling() {
    let stubs = stubs();
    let tools = Toolset::builder().source(stubs.clone()).build().unwrap();
    let checked = tools
        .check_arguments("search", json!({"limit": "5"}), ValidationMode::Lenient)
        .unwrap();
    assert_eq!(checked.args, json!({"limit": 5}));
    assert_eq!(checked.coercions.len(), 1);
    assert_eq!(checked.coercions[0].pointer, "/limit");
    let err = tools
        .check_arguments("search", json!({"limit": "5"}), ValidationMode::Strict)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let err = tools
        .check_arguments("nope", json!({}), ValidationMode::Strict)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    stubs.assert_not_called("search");
}

#[tokio::test]
async fn strict_dialect_nulls_are_omissions_and_reported() {
    let stubs = stubs();
    let tools = Toolset::builder().source(stubs.clone()).build().unwrap();
    // What an OpenAI strict-mode model sends for "no `exact`".
    let out = tools
        .call("search", json!({"limit": 2, "exact": null}))
        .await
        .unwrap();
    stubs.assert_called_with("search", json!({"limit": 2}));
    assert_eq!(
        out.meta.unwrap()[COERCIONS_META_KEY],
        json!([{"pointer": "/exact", "kind": "null_omitted", "from": null}])
    );
}

#[tokio::test]
async fn strip_per_tool_removes_extras_and_reports_them() {
    let stubs = stubs();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .extra_arguments_for("search", ExtraArguments::Strip)
        .build()
        .unwrap();
    let out = tools
        .call("search", json!({"limit": 2, "id": "n1", "force": true}))
        .await
        .unwrap();
    stubs.assert_called_with("search", json!({"limit": 2}));
    assert_eq!(
        out.meta.unwrap()[COERCIONS_META_KEY],
        json!([{"pointer": "/id", "kind": "stripped", "from": "n1"},
               {"pointer": "/force", "kind": "stripped", "from": true}])
    );
}

#[tokio::test]
async fn a_tools_own_strip_declaration_is_honoured_and_overridable() {
    let mut descriptor = stubs().tools()[0].descriptor.as_ref().clone();
    descriptor.extra_arguments = ExtraArguments::Strip;
    let echo = |args: Value| Ok(ToolOutput::text(args.to_string()));
    let declared = || StubSource::new("stubs").stub_with(descriptor.clone(), echo);
    let tools = Toolset::builder().source(declared()).build().unwrap();
    let out = tools
        .call("search", json!({"limit": 2, "id": 1}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), r#"{"limit":2}"#);
    let tools = Toolset::builder()
        .source(declared())
        .extra_arguments_for("search", ExtraArguments::Reject)
        .build()
        .unwrap();
    let err = tools
        .call("search", json!({"limit": 2, "id": 1}))
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("unknown argument(s) 'id' for tool search; allowed: limit, exact"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn tools_yaml_policy_sets_modes_by_tool_and_source() {
    let config = toolgate_model::ToolsConfig::from_yaml_str(
        "version: 1\n\
         policy:\n\
         \x20 defaults: {timeout_ms: 1500}\n\
         \x20 sources: {stubs: {validation: lenient}}\n\
         \x20 tools: {other: {validation: strict, extra_arguments: strip}}\n",
        std::path::Path::new("tools.yaml"),
    )
    .unwrap();
    let stubs = stubs().stub_with(
        ToolDescriptor {
            name: "other".into(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}},
                                 "additionalProperties": false}),
            source: "stubs".into(),
            ..ToolDescriptor::default()
        },
        |args: Value| Ok(ToolOutput::text(args.to_string())),
    );
    let tools = Toolset::builder()
        .source(stubs.clone())
        .policy(&config.config.policy)
        .build()
        .unwrap();
    assert_eq!(
        tools.default_timeout(),
        Some(std::time::Duration::from_millis(1500))
    );
    // `search` gets its source's lenient mode.
    tools.call("search", json!({"limit": "3"})).await.unwrap();
    stubs.assert_called_with("search", json!({"limit": 3}));
    // `other` is strict (its own entry wins) and strips extras.
    let err = tools.call("other", json!({"n": "3"})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    tools.call("other", json!({"n": 3, "x": 1})).await.unwrap();
    stubs.assert_called_with("other", json!({"n": 3}));
}

// ---- what is logged ----------------------------------------------------------------------------

/// Records every tracing event as `LEVEL field=value ...`.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<String>>>);

impl Logs {
    /// In the child process that runs test `test` alone (`None` in the parent, which only
    /// checks that child), a capture installed as the global default before anything logs.
    ///
    /// Not `set_default` in this process: tracing caches per call site whether anyone listens,
    /// and with one scoped subscriber registered it asks the thread that reaches the call site
    /// first; another test thread, without a subscriber, then turns the call site off for
    /// every thread and the lines this test waits for are never made (this is how the
    /// strip warnings once went missing). See `toolgate_runtime::testing::run_alone`.
    fn capture(module_path: &str, test: &str) -> Option<Self> {
        if !toolgate_runtime::testing::run_alone(module_path, test) {
            return None;
        }
        let logs = Self::default();
        tracing::subscriber::set_global_default(logs.clone()).expect("the only subscriber");
        Some(logs)
    }
}

impl tracing::Subscriber for Logs {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={v:?}", f.name()));
            }
            fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
                self.0.push_str(&format!(" {}={v}", f.name()));
            }
        }
        let mut fields = Fields(event.metadata().level().to_string());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn page_stub() -> StubSource {
    echo_stub(
        "page",
        json!({"type": "object",
               "properties": {"limit": {"type": "integer", "minimum": 1},
                              "exact": {"type": "boolean"}, "ratio": {"type": "number"}},
               "required": ["limit"], "additionalProperties": false}),
    )
}

/// Lenient mode logs each value it changed, as sent and as forwarded, at INFO.
#[tokio::test]
async fn coerced_arguments_are_logged_as_sent_and_as_forwarded() {
    let Some(logs) = Logs::capture(
        module_path!(),
        "coerced_arguments_are_logged_as_sent_and_as_forwarded",
    ) else {
        return;
    };
    let stubs = page_stub();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validation_mode(ValidationMode::Lenient)
        .build()
        .unwrap();
    tools
        .call(
            "page",
            json!({"limit": "5", "exact": "true", "ratio": "0.5"}),
        )
        .await
        .unwrap();
    stubs.assert_called_with("page", json!({"limit": 5, "exact": true, "ratio": 0.5}));
    let logs = logs.0.lock().unwrap().clone();
    for (pointer, from, to) in [
        ("/limit", "\"5\"", "5"),
        ("/exact", "\"true\"", "true"),
        ("/ratio", "\"0.5\"", "0.5"),
    ] {
        assert!(
            logs.iter().any(|l| l.starts_with("INFO")
                && l.contains("tool=page")
                && l.contains(&format!("pointer={pointer}"))
                && l.contains(&format!("from={from}"))
                && l.contains(&format!("to={to}"))),
            "{pointer}: {logs:#?}"
        );
    }
}

/// `extra_arguments: strip` drops the unknown keys and logs one warning per key dropped.
#[tokio::test]
async fn stripped_keys_are_logged_as_warnings() {
    let Some(logs) = Logs::capture(module_path!(), "stripped_keys_are_logged_as_warnings") else {
        return;
    };
    let stubs = page_stub();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .extra_arguments_for("page", ExtraArguments::Strip)
        .build()
        .unwrap();
    tools
        .call("page", json!({"limit": 2, "id": "n1", "force": true}))
        .await
        .unwrap();
    stubs.assert_called_with("page", json!({"limit": 2}));
    let logs = logs.0.lock().unwrap().clone();
    let warnings: Vec<&String> = logs.iter().filter(|l| l.starts_with("WARN")).collect();
    assert_eq!(warnings.len(), 2, "{logs:#?}");
    assert!(
        warnings[0].contains("tool=page") && warnings[0].contains("pointer=/id"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("pointer=/force") && warnings[1].contains("value=true"),
        "{warnings:?}"
    );
}
