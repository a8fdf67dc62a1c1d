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
//! With the `otel` feature and an OpenTelemetry layer installed, the span is also an
//! OpenTelemetry span: the child of the caller's `traceparent`, with the GenAI semantic
//! conventions' attributes, and its own context goes on to the backend (see `otel.rs`).
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
//! | `toolgate_guardrail_*_total` | counter | `tool`, `guardrail`, `kind`, `direction` | guardrails (see [`guardrails`](super::guardrails)) |
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
    describe_counter!(
        super::guardrails::GUARDRAIL_MASKED_TOTAL,
        "Values masked by a guardrail, by tool, guardrail, kind (detector or pattern) and direction."
    );
    describe_counter!(
        super::guardrails::GUARDRAIL_DENIED_TOTAL,
        "Calls refused and results withheld by a guardrail, by tool, guardrail, kind and direction."
    );
    describe_counter!(
        super::guardrails::GUARDRAIL_MODIFIED_TOTAL,
        "Arguments or results replaced by a guardrail (webhook or custom)."
    );
    describe_counter!(
        super::guardrails::GUARDRAIL_WEBHOOK_FAILURES_TOTAL,
        "Guardrail webhook checks without a usable answer (timeout or error)."
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
        // With OpenTelemetry on, the span joins the caller's trace (or starts one) first: the
        // trace id recorded is then the span's own.
        #[cfg(feature = "otel")]
        let mut call = call;
        #[cfg(feature = "otel")]
        if !span.is_disabled() {
            otel::start(&span, &mut call.ctx, &meta.tool);
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
        #[cfg(feature = "otel")]
        otel::finish(&self.span, outcome);
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

#[cfg(feature = "otel")]
mod otel;
#[cfg(test)]
mod tests;
