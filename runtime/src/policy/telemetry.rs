//! The telemetry layer: a `tool_call` span around every call and its metrics. Always on, the
//! outermost layer (only a fallback sits outside it), so it sees every outcome: a refused caller,
//! a rate-limited call, a cache hit, a retried backend.
//!
//! # The span
//! `tool_call` (level INFO), entered around the inner future, with the fields `tool`, `source`,
//! `trace_id` (of the call's W3C `traceparent`, when it has one) and, recorded when the call
//! ends: `outcome` (`ok`, `tool_error` for a result flagged `is_error`, or the error's kind:
//! `rate_limited`, `timeout`, ...), `duration_ms`, `cost` (in the budget's unit), `retries` and
//! `cache_hit`. A DEBUG event "tool call finished" inside it carries the same fields. Arguments are
//! never logged here.
//!
//! # Metrics
//! Through the [`metrics`] facade, once [`describe_metrics`] has been called: install a recorder,
//! then call it, before the first call (the gateway does both when it is built; each tool's
//! handles are registered when its stack is built, on its first call). Without a subscriber
//! and without metrics, a call only pays for the span check and one more boxed future.
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `toolgate_calls_total` | counter | `tool`, `source`, `outcome` | calls, by how they ended |
//! | `toolgate_call_duration_seconds` | histogram | `tool`, `source` | how long calls took |
//! | `toolgate_rate_limited_total` | counter | `tool` | calls refused by a rate limit |
//! | `toolgate_cache_hits_total` / `toolgate_cache_misses_total` | counter | `tool` | result cache (the cache layer) |
//! | `toolgate_spend_micros_total` | counter | `caller`, `currency` | cost charged, in millionths of the currency |
//! | `toolgate_circuit_breaker_state` | gauge | `source` | 0 closed, 1 half-open, 2 open |
//!
//! A call dropped before it ends (the caller went away) counts with outcome `cancelled`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use metrics::{Counter, Histogram};
use tower::{Layer, Service};
use tracing::Instrument;
use tracing::field::Empty;

use super::Pipeline;
use super::breaker::Phase;
use super::call::{Call, CallFuture, CallReport, LayerInputs};
use crate::{ToolError, ToolFuture, ToolOutput};

/// `toolgate_calls_total{tool,source,outcome}`: calls, by how they ended.
pub const CALLS_TOTAL: &str = "toolgate_calls_total";
/// `toolgate_call_duration_seconds{tool,source}`: how long calls took, in seconds.
pub const CALL_DURATION_SECONDS: &str = "toolgate_call_duration_seconds";
/// `toolgate_rate_limited_total{tool}`: calls refused by a rate limit.
pub const RATE_LIMITED_TOTAL: &str = "toolgate_rate_limited_total";
/// `toolgate_cache_hits_total{tool}`: calls answered from the result cache.
pub const CACHE_HITS_TOTAL: &str = "toolgate_cache_hits_total";
/// `toolgate_cache_misses_total{tool}`: cacheable calls that ran the backend.
pub const CACHE_MISSES_TOTAL: &str = "toolgate_cache_misses_total";
/// `toolgate_spend_micros_total{caller,currency}`: cost charged, in millionths of the currency.
pub const SPEND_MICROS_TOTAL: &str = "toolgate_spend_micros_total";
/// `toolgate_circuit_breaker_state{source}`: 0 closed, 1 half-open, 2 open.
pub const CIRCUIT_BREAKER_STATE: &str = "toolgate_circuit_breaker_state";

/// Whether [`describe_metrics`] has been called: until then the layer records no metrics (a
/// call costs no clock reads or handle calls when nobody collects them).
static METRICS_ON: AtomicBool = AtomicBool::new(false);

/// Turns the pipeline's metrics on and describes every metric above (help text and unit) to the
/// installed recorder. Call it once, after installing the recorder and before the first call
/// (the gateway does); without it, calls record no metrics.
pub fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    METRICS_ON.store(true, Ordering::Relaxed);
    describe_counter!(
        CALLS_TOTAL,
        "Tool calls, by tool, source and outcome (ok, tool_error or the error kind)."
    );
    describe_histogram!(
        CALL_DURATION_SECONDS,
        Unit::Seconds,
        "How long tool calls took, policies included."
    );
    describe_counter!(RATE_LIMITED_TOTAL, "Tool calls refused by a rate limit.");
    describe_counter!(
        CACHE_HITS_TOTAL,
        "Tool calls answered from the result cache."
    );
    describe_counter!(
        CACHE_MISSES_TOTAL,
        "Cacheable tool calls that ran the backend."
    );
    describe_counter!(
        SPEND_MICROS_TOTAL,
        "Cost charged to callers' budgets, in millionths of the currency."
    );
    describe_gauge!(
        CIRCUIT_BREAKER_STATE,
        "Circuit breaker state per source: 0 closed, 1 half-open, 2 open."
    );
}

/// The value of `toolgate_circuit_breaker_state` for a breaker phase: 0 closed, 1 half-open,
/// 2 open (the worse the state, the higher).
pub(crate) fn breaker_gauge(phase: Phase) -> f64 {
    match phase {
        Phase::Closed => 0.0,
        Phase::HalfOpen => 1.0,
        Phase::Open => 2.0,
    }
}

/// Sets the gauges read from the pipeline's state rather than counted per call
/// (`toolgate_circuit_breaker_state{source}` of every breaker made so far). Cheap (one lock,
/// one entry per breaker): the gateway calls it before each `/metrics` rendering.
pub(crate) fn record_gauges(pipeline: &Pipeline) {
    for (source, state) in pipeline.shared.breakers.states() {
        metrics::gauge!(CIRCUIT_BREAKER_STATE, "source" => source).set(breaker_gauge(state.phase));
    }
}

/// The layer for a tool: always on.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<TelemetryLayer> {
    let currency = inputs
        .pipeline
        .config
        .budgets
        .as_ref()
        .and_then(|b| b.currency.clone())
        .unwrap_or_else(|| "USD".to_string());
    Some(TelemetryLayer::new(
        &inputs.tool.name,
        &inputs.tool.source,
        &currency,
    ))
}

/// Wraps each call in a `tool_call` span and records its metrics (see the module docs).
#[derive(Clone)]
pub(crate) struct TelemetryLayer {
    meta: Arc<Meta>,
}

/// A tool's names and its handles registered once (the hot path only increments them).
struct Meta {
    /// Metrics are on ([`describe_metrics`] was called before the stack was built).
    metrics: bool,
    tool: String,
    source: String,
    currency: String,
    ok: Counter,
    tool_error: Counter,
    duration: Histogram,
}

impl TelemetryLayer {
    /// The layer of tool `tool` of source `source`; costs are counted in `currency`.
    pub(crate) fn new(tool: &str, source: &str, currency: &str) -> Self {
        let calls = |outcome: &'static str| metrics::counter!(CALLS_TOTAL, "tool" => tool.to_string(), "source" => source.to_string(), "outcome" => outcome);
        Self {
            meta: Arc::new(Meta {
                metrics: METRICS_ON.load(Ordering::Relaxed),
                tool: tool.to_string(),
                source: source.to_string(),
                currency: currency.to_string(),
                ok: calls("ok"),
                tool_error: calls("tool_error"),
                duration: metrics::histogram!(CALL_DURATION_SECONDS, "tool" => tool.to_string(), "source" => source.to_string()),
            }),
        }
    }
}

impl<S> Layer<S> for TelemetryLayer {
    type Service = Telemetry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Telemetry {
            meta: Arc::clone(&self.meta),
            inner,
        }
    }
}

/// The service of [`TelemetryLayer`].
#[derive(Clone)]
pub(crate) struct Telemetry<S> {
    meta: Arc<Meta>,
    inner: S,
}

impl<S> Service<Call> for Telemetry<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let meta = &self.meta;
        let span = tracing::info_span!(
            "tool_call",
            tool = %meta.tool,
            source = %meta.source,
            trace_id = Empty,
            outcome = Empty,
            duration_ms = Empty,
            cost = Empty,
            retries = Empty,
            cache_hit = Empty,
        );
        // Nobody collects anything: the call passes through.
        if span.is_disabled() && !meta.metrics && !tracing::enabled!(tracing::Level::DEBUG) {
            return self.inner.call(call);
        }
        if !span.is_disabled()
            && let Some(id) = call
                .ctx
                .traceparent()
                .and_then(crate::trace_context::trace_id)
        {
            span.record("trace_id", id);
        }
        let mut finish = Finish {
            meta: Arc::clone(meta),
            report: call.report.clone(),
            identity: call.ctx.identity_arc(),
            span: span.clone(),
            started: Instant::now(),
            outcome: None,
        };
        // A synchronous tool runs inside the inner `call`: in the span.
        let inner = {
            let _entered = (!span.is_disabled()).then(|| span.enter());
            self.inner.call(call)
        };
        match inner.into_ready() {
            Ok(result) => {
                finish.outcome = Some(Outcome::of(&result));
                drop(finish);
                ToolFuture::ready(result)
            }
            Err(running) => ToolFuture::new(
                async move {
                    let result = running.await;
                    finish.outcome = Some(Outcome::of(&result));
                    drop(finish);
                    result
                }
                .instrument(span),
            ),
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Ok,
    ToolError,
    Error(&'static str),
}

impl Outcome {
    fn of(result: &Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(out) if out.is_error => Self::ToolError,
            Ok(_) => Self::Ok,
            Err(e) => Self::Error(e.kind().as_str()),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Error(kind) => kind,
        }
    }
}

/// Records the call when dropped: at its end, or when the caller dropped it (`cancelled`).
struct Finish {
    meta: Arc<Meta>,
    report: Option<Arc<CallReport>>,
    identity: Arc<crate::Identity>,
    span: tracing::Span,
    started: Instant,
    outcome: Option<Outcome>,
}

impl Finish {
    /// The call's metrics (see the module docs).
    fn record_metrics(&self, outcome: Outcome, elapsed: std::time::Duration, cost_micros: u64) {
        let meta = &*self.meta;
        match outcome {
            Outcome::Ok => meta.ok.increment(1),
            Outcome::ToolError => meta.tool_error.increment(1),
            Outcome::Error(kind) => {
                metrics::counter!(CALLS_TOTAL, "tool" => meta.tool.clone(), "source" => meta.source.clone(), "outcome" => kind).increment(1);
                if kind == crate::ErrorKind::RateLimited.as_str() {
                    metrics::counter!(RATE_LIMITED_TOTAL, "tool" => meta.tool.clone()).increment(1);
                }
            }
        }
        meta.duration.record(elapsed.as_secs_f64());
        if cost_micros > 0 {
            let caller = self
                .identity
                .caller
                .clone()
                .unwrap_or_else(|| "anonymous".to_string());
            metrics::counter!(SPEND_MICROS_TOTAL, "caller" => caller, "currency" => meta.currency.clone())
                .increment(cost_micros);
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        let outcome = self.outcome.unwrap_or(Outcome::Error("cancelled"));
        let report = self.report.as_deref();
        let cost_micros = report.map_or(0, |r| r.cost_micros.load(Ordering::Relaxed));
        let meta = &*self.meta;
        if meta.metrics {
            self.record_metrics(outcome, elapsed, cost_micros);
        }
        if self.span.is_disabled() && !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let cost = cost_micros as f64 / 1_000_000.0;
        let retries = report.map_or(0, CallReport::retries);
        let cache_hit = report.is_some_and(CallReport::cache_hit);
        let outcome = outcome.as_str();
        self.span.record("outcome", outcome);
        self.span.record("duration_ms", duration_ms);
        self.span.record("cost", cost);
        self.span.record("retries", retries);
        self.span.record("cache_hit", cache_hit);
        self.span.in_scope(|| {
            tracing::debug!(
                tool = %meta.tool,
                source = %meta.source,
                outcome,
                duration_ms,
                cost,
                retries,
                cache_hit,
                "tool call finished"
            );
        });
    }
}

#[cfg(test)]
mod tests {
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

    async fn run(
        svc: &Telemetry<Backend>,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
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
            text.contains(
                r#"toolgate_calls_total{tool="lookup",source="crm",outcome="cancelled"} 1"#
            ),
            "{text}"
        );
    }

    #[test]
    fn breaker_phases_map_to_the_gauge_values() {
        assert_eq!(breaker_gauge(Phase::Closed), 0.0);
        assert_eq!(breaker_gauge(Phase::HalfOpen), 1.0);
        assert_eq!(breaker_gauge(Phase::Open), 2.0);
    }
}
