//! `GET /metrics`: the gateway's metrics in the Prometheus text format (version 0.0.4).
//!
//! The runtime records through the `metrics` facade (see `toolgate_runtime::policy`: calls by
//! tool, source and outcome, the latency histogram, rate-limited calls, cache hits and misses,
//! spend, circuit breaker states); the gateway installs a Prometheus recorder for it when it is
//! built ([`install`]), before any call. Each scrape also sets the gauges that are read, not
//! counted (breaker states), and adds one line per source:
//!
//! ```text
//! toolgate_source_up{source="github",state="ready"} 1
//! ```
//!
//! (`1` when the source is ready, `0` when pending, degraded, failed or closed). Like `/healthz`,
//! it answers without an API key and whatever the `Host` (a scraper reaches it by the pod's
//! address); it names tools, sources and callers, never arguments or secrets.

use std::fmt::Write as _;
use std::sync::OnceLock;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use toolgate_runtime::SourceState;

use super::Gateway;

/// The content type of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The process's Prometheus recorder, installed once.
static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's `metrics` recorder (once; later calls
/// return the same handle) and describes toolgate's metrics. When another recorder was
/// installed first (a program embedding the gateway), that one keeps the metrics and
/// `/metrics` shows only the source lines.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| match builder().install_recorder() {
        Ok(handle) => {
            toolgate_runtime::policy::describe_metrics();
            handle
        }
        Err(e) => {
            tracing::warn!("/metrics shows only the source states: {e}");
            PrometheusBuilder::new().build_recorder().handle()
        }
    })
}

/// The recorder's settings: call durations as a histogram (buckets from 1 ms to 60 s) rather
/// than the exporter's default summary.
fn builder() -> PrometheusBuilder {
    const BUCKETS: &[f64] = &[
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(toolgate_runtime::policy::CALL_DURATION_SECONDS.to_string()),
            BUCKETS,
        )
        // A constant list: it is valid (non-empty), so this never fails.
        .unwrap_or_else(|_| PrometheusBuilder::new())
}

/// The `/metrics` route.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    axum::Router::new()
        .route("/metrics", get(render))
        .with_state(gateway.clone())
}

async fn render(State(gateway): State<Gateway>) -> impl IntoResponse {
    gateway.toolset().record_policy_gauges();
    let mut text = install().render();
    let statuses = gateway.toolset().statuses();
    if !statuses.is_empty() {
        text.push_str(
            "# HELP toolgate_source_up Whether the source is ready (1) or not (0: pending, degraded, failed, closed).\n\
             # TYPE toolgate_source_up gauge\n",
        );
        for s in statuses {
            let up = u8::from(s.state == SourceState::Ready);
            let state = serde_json::to_value(s.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "toolgate_source_up{{source=\"{}\",state=\"{}\"}} {up}",
                escape(&s.id),
                escape(&state)
            );
        }
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text)
}

/// A label value escaped for the text format (backslash, quote, newline).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
