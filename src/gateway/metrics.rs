//! `GET /metrics`: the gateway's metrics in the Prometheus text format (version 0.0.4).
//!
//! The runtime records through the `metrics` facade (see `toolgate_runtime::policy`: calls by
//! tool, source and outcome, the latency histogram, rate-limited calls, cache hits and misses,
//! spend, circuit breaker states, guardrail maskings and refusals); the gateway installs a Prometheus recorder for it when it is
//! built ([`install`]), before any call. Each scrape also sets the gauges that are read, not
//! counted (breaker states), and adds one line per source:
//!
//! ```text
//! toolgate_source_up{source="github",state="ready"} 1
//! ```
//!
//! (`1` when the source is ready, `0` when pending, degraded, failed or closed). It needs an
//! API key once keys are configured, and a known `Host`, like the API; it names tools, sources
//! and callers, never arguments or secrets.
//!
//! The recorder's upkeep (draining the samples each histogram collected into its buckets) runs
//! every [`UPKEEP_INTERVAL`] on a thread of its own, whether or not anyone scrapes: without it
//! every call's latency sample stayed queued in memory until the next scrape.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use toolgate_runtime::SourceState;

use super::Gateway;

/// The content type of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often the recorder's upkeep runs: 5 s, the exporter's own default (its
/// `upkeep_timeout`, which only applies to the exporters with an HTTP listener of their own).
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The process's Prometheus recorder, installed once.
static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// How many times the upkeep has run (see [`upkeep_runs`]).
static UPKEEPS: AtomicU64 = AtomicU64::new(0);

/// Installs the Prometheus recorder as the process's `metrics` recorder (once; later calls
/// return the same handle), describes toolgate's metrics and starts its upkeep (a thread
/// named `toolgate-metrics` running it every [`UPKEEP_INTERVAL`]). When another recorder was
/// installed first (a program embedding the gateway), that one keeps the metrics and
/// `/metrics` shows only the source lines.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let handle = match builder().install_recorder() {
            Ok(handle) => {
                toolgate_runtime::policy::describe_metrics();
                handle
            }
            Err(e) => {
                tracing::warn!("/metrics shows only the source states: {e}");
                PrometheusBuilder::new().build_recorder().handle()
            }
        };
        start_upkeep(handle.clone());
        handle
    })
}

/// How many times the recorder's upkeep has run since the process started (it runs every
/// [`UPKEEP_INTERVAL`] once [`install`] was called, scraped or not).
pub fn upkeep_runs() -> u64 {
    UPKEEPS.load(Ordering::Relaxed)
}

/// Runs `handle`'s upkeep every [`UPKEEP_INTERVAL`] for the life of the process. A thread
/// rather than a task: the recorder is installed once per process, whatever runtime (if any)
/// builds the first gateway, and must outlive that runtime.
fn start_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("toolgate-metrics".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                handle.run_upkeep();
                UPKEEPS.fetch_add(1, Ordering::Relaxed);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("metrics upkeep not started ({e}): samples are drained on each scrape only");
    }
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
    let _ = writeln!(
        text,
        "# HELP toolgate_config_generation How many hot reloads of the configuration were applied since start-up.\n\
         # TYPE toolgate_config_generation gauge\n\
         toolgate_config_generation {}",
        gateway.toolset().config_generation()
    );
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn upkeep_runs_without_a_scrape() {
        install();
        let before = upkeep_runs();
        // Nothing here renders (scrapes) the recorder; the upkeep runs anyway.
        let deadline = Instant::now() + UPKEEP_INTERVAL * 6;
        while upkeep_runs() < before + 1 {
            assert!(
                Instant::now() < deadline,
                "no upkeep within {:?} of installing the recorder",
                UPKEEP_INTERVAL * 6
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
