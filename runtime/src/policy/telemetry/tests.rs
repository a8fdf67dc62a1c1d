use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::json;
use toolgate_model::config::PolicyConfig;
use tower::ServiceExt;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use super::*;
use crate::testing::StubSource;
use crate::{ErrorKind, ToolContext, ToolDescriptor, ToolSource};

/// The fields of every closed `tool_call` span, and every event's message and fields.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
    events: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: LayerContext<'_, S>,
    ) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        ctx.span(id).expect("span").extensions_mut().insert(fields);
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: LayerContext<'_, S>,
    ) {
        let span = ctx.span(id).expect("span");
        let mut ext = span.extensions_mut();
        values.record(ext.get_mut::<Fields>().expect("fields"));
    }
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.events.lock().unwrap().push(fields.0);
    }
    fn on_close(&self, id: tracing::span::Id, ctx: LayerContext<'_, S>) {
        let span = ctx.span(&id).expect("span");
        if span.name() == "tool_call" {
            let fields = span.extensions_mut().remove::<Fields>().expect("fields");
            self.spans.lock().unwrap().push(fields.0);
        }
    }
}

/// A backend answering `{"fail": kind}` with that error, `{"retries": n}` with n retries and
/// a cost of 0.25 recorded, anything else with "ok".
#[derive(Clone)]
struct Backend;

impl Service<Call> for Backend {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> CallFuture {
        ToolFuture::new(async move {
            if call.args["hang"] == json!(true) {
                std::future::pending::<()>().await;
            }
            if call.args["fail"] == json!("rate_limited") {
                return Err(ToolError::new(ErrorKind::RateLimited, "5/s"));
            }
            if call.args["fail"] == json!("upstream") {
                return Err(ToolError::upstream("down"));
            }
            if let Some(n) = call.args["retries"].as_u64() {
                let report = call.report.as_ref().expect("a report");
                report.retries.store(n as u32, Ordering::Relaxed);
                report.cost_micros.store(250_000, Ordering::Relaxed);
            }
            Ok(ToolOutput::text("ok"))
        })
    }
}

fn service() -> Telemetry<Backend> {
    let config: PolicyConfig =
        serde_json::from_str(r#"{"budgets": {"currency": "credits"}}"#).unwrap();
    let p = Pipeline::new(false, None, config);
    let tool = Arc::new(ToolDescriptor {
        name: "lookup".into(),
        source: "crm".into(),
        input_schema: json!({"type": "object"}),
        ..ToolDescriptor::default()
    });
    let policy = p.config.effective(&tool.name, &tool.source);
    let source_policy = p.config.source_policy(&tool.source);
    let inputs = LayerInputs {
        pipeline: &p,
        tool: &tool,
        policy: &policy,
        source_policy: &source_policy,
    };
    layer(&inputs).expect("always on").layer(Backend)
}

async fn run(svc: &Telemetry<Backend>, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::builder()
        .caller("alice")
        .traceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01")
        .build();
    let call = Call::new(
        Arc::new(ToolDescriptor {
            name: "lookup".into(),
            source: "crm".into(),
            ..ToolDescriptor::default()
        }),
        Arc::new(StubSource::new("crm")) as Arc<dyn ToolSource>,
        args,
        ctx,
    );
    svc.clone().oneshot(call).await
}

/// Runs `f` on a current-thread runtime.
fn block_on<F: std::future::Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f);
}

/// Runs `f` with a Prometheus recorder as this thread's recorder; returns the rendered
/// metrics. The `metrics` facade keeps no per-call-site state: a local recorder sees
/// everything recorded on its thread, whatever other tests do at the same time.
fn metrics_of<F: std::future::Future<Output = ()>>(f: impl FnOnce() -> F) -> String {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    describe_metrics();
    metrics::with_local_recorder(&recorder, || block_on(f()));
    handle.render()
}

/// Runs `f` in the child process that runs test `test` alone, with the capture subscriber
/// as the global default; `None` in the parent (which only checks that child).
///
/// Not `with_default` in this process: tracing caches per call site whether anyone
/// listens, and with a single scoped subscriber registered it asks whichever thread reaches
/// the call site first. Another test of this binary reaching `tool_call` first, on a thread
/// without a subscriber, turned it off for every thread and the spans were never made.
/// See [`crate::testing::run_alone`].
fn logs_of<F: std::future::Future<Output = ()>>(
    test: &str,
    f: impl FnOnce() -> F,
) -> Option<Capture> {
    if !crate::testing::run_alone(module_path!(), test) {
        return None;
    }
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(capture.clone())
        .with(tracing_subscriber::filter::LevelFilter::DEBUG);
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    block_on(f());
    Some(capture)
}

#[test]
fn the_span_carries_the_outcome_and_what_the_call_went_through() {
    let test = "the_span_carries_the_outcome_and_what_the_call_went_through";
    let Some(capture) = logs_of(test, || async {
        let svc = service();
        run(&svc, json!({"retries": 2})).await.expect("ok");
        run(&svc, json!({"fail": "upstream"}))
            .await
            .expect_err("fails");
    }) else {
        return;
    };
    let spans = capture.spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let ok = &spans[0];
    assert_eq!(ok["tool"], "lookup");
    assert_eq!(ok["source"], "crm");
    assert_eq!(ok["outcome"], "ok");
    assert_eq!(ok["retries"], "2");
    assert_eq!(ok["cost"], "0.25");
    assert_eq!(ok["cache_hit"], "false");
    assert_eq!(ok["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert!(ok["duration_ms"].parse::<u64>().is_ok(), "{ok:?}");
    assert_eq!(spans[1]["outcome"], "upstream");
    let events = capture.events.lock().unwrap().clone();
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e.get("message").map(String::as_str) == Some("tool call finished"))
        .collect();
    assert_eq!(finished.len(), 2, "{events:?}");
    assert_eq!(finished[1]["outcome"], "upstream");
    assert_eq!(finished[0]["retries"], "2");
}

#[test]
fn metrics_count_calls_by_outcome_rate_limits_and_spend() {
    let text = metrics_of(|| async {
        let svc = service();
        for _ in 0..3 {
            run(&svc, json!({})).await.expect("ok");
        }
        run(&svc, json!({"retries": 0})).await.expect("ok");
        run(&svc, json!({"fail": "rate_limited"}))
            .await
            .expect_err("limited");
        run(&svc, json!({"fail": "upstream"}))
            .await
            .expect_err("fails");
    });
    for line in [
        r#"toolgate_calls_total{tool="lookup",source="crm",outcome="ok"} 4"#,
        r#"toolgate_calls_total{tool="lookup",source="crm",outcome="rate_limited"} 1"#,
        r#"toolgate_calls_total{tool="lookup",source="crm",outcome="upstream"} 1"#,
        r#"toolgate_rate_limited_total{tool="lookup"} 1"#,
        r#"toolgate_spend_micros_total{caller="alice",currency="credits"} 250000"#,
        r#"toolgate_call_duration_seconds_count{tool="lookup",source="crm"} 6"#,
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
}

#[test]
fn a_dropped_call_counts_as_cancelled() {
    let text = metrics_of(|| async {
        let svc = service();
        // Polled once inside the span, then dropped before it ends.
        let call = run(&svc, json!({"hang": true}));
        let _ = tokio::time::timeout(std::time::Duration::from_millis(1), call).await;
    });
    assert!(
        text.contains(r#"toolgate_calls_total{tool="lookup",source="crm",outcome="cancelled"} 1"#),
        "{text}"
    );
}

#[test]
fn breaker_phases_map_to_the_gauge_values() {
    assert_eq!(breaker_gauge(Phase::Closed), 0.0);
    assert_eq!(breaker_gauge(Phase::HalfOpen), 1.0);
    assert_eq!(breaker_gauge(Phase::Open), 2.0);
}
