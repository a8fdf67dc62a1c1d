//! The `tool_call` span as an OpenTelemetry span (the `otel` feature), when an OpenTelemetry
//! layer (tracing-opentelemetry) is installed: its parent is the caller's W3C trace context, it
//! carries the semantic conventions' attributes, and its own context is what the backend
//! receives. Without the layer every step here is a no-op.
//!
//! Attributes, besides the span's `tracing` fields (`tool`, `source`, `trace_id`, `outcome`,
//! `duration_ms`, `cost`, `retries`, `cache_hit`):
//! - `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name` = the tool's name (GenAI
//!   semantic conventions, "execute tool" span); the span is named `execute_tool {tool}`;
//! - `caller` = the caller's name (an API key's name or a token's `issuer#subject`; absent for
//!   an anonymous call);
//! - `error.type` = the error's kind when the call failed, with the span status `Error`
//!   (a result flagged `is_error` is `tool_error`).
//!
//! No argument or result value is ever an attribute.

use opentelemetry::trace::{
    SpanContext, SpanId, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::ToolContext;

/// The OpenTelemetry parent of a call that continues its caller's trace: the remote span
/// context of its `traceparent` (and `tracestate`, when it parses).
fn remote_parent(ctx: &ToolContext) -> Option<opentelemetry::Context> {
    if !ctx.continues_trace() {
        return None;
    }
    let traceparent = ctx.traceparent()?;
    if !crate::trace_context::is_valid(traceparent) {
        return None;
    }
    let trace_id = TraceId::from_hex(&traceparent[3..35]).ok()?;
    let span_id = SpanId::from_hex(&traceparent[36..52]).ok()?;
    let flags = u8::from_str_radix(&traceparent[53..55], 16).ok()?;
    let state = ctx
        .tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let parent = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
    Some(opentelemetry::Context::new().with_remote_span_context(parent))
}

/// Makes `span` (a new `tool_call` span, not yet entered) the child of the caller's trace, sets
/// its attributes, and puts its own context in `ctx` for the backend.
pub(super) fn start(span: &tracing::Span, ctx: &mut ToolContext, tool: &str) {
    if let Some(parent) = remote_parent(ctx) {
        // No OpenTelemetry layer, or the span is not for it: nothing to do.
        if span.set_parent(parent).is_err() {
            return;
        }
    }
    span.set_attribute("gen_ai.operation.name", "execute_tool");
    span.set_attribute("gen_ai.tool.name", tool.to_string());
    if let Some(caller) = &ctx.identity().caller {
        span.set_attribute("caller", caller.clone());
    }
    // Starts the OpenTelemetry span (the sampler decides here).
    let otel = span.context();
    let otel = otel.span();
    let own = otel.span_context();
    if !own.is_valid() {
        return;
    }
    otel.update_name(format!("execute_tool {tool}"));
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        own.trace_id(),
        own.span_id(),
        own.trace_flags().to_u8()
    );
    let tracestate = Some(own.trace_state().header()).filter(|s| !s.is_empty());
    ctx.set_trace_context(traceparent, tracestate);
}

/// Records how the call ended on the OpenTelemetry span: `error.type` and the status `Error`
/// for anything but `ok`.
pub(super) fn finish(span: &tracing::Span, outcome: &'static str) {
    if outcome != "ok" {
        span.set_attribute("error.type", outcome);
        span.set_status(Status::error(outcome));
    }
}
