//! The OTLP receiver of the tests: rotel (PyPI), an OpenTelemetry collector, run on 127.0.0.1
//! with its debug output on (every span it receives printed to its stdout), and the parser of
//! that output.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{self, peers};

/// One span as the collector printed it.
#[derive(Debug, Default, Clone)]
pub(super) struct SpanSeen {
    pub(super) trace_id: String,
    pub(super) parent_id: String,
    pub(super) span_id: String,
    pub(super) name: String,
    pub(super) status: String,
    pub(super) attributes: BTreeMap<String, String>,
    pub(super) resource: BTreeMap<String, String>,
}

/// The spans in rotel's `--debug-log traces --debug-log-verbosity detailed` output (the
/// collector's debug exporter format: `Span #N`, `Trace ID : …`, `     -> key: Str(value)`).
pub(super) fn parse_spans(log: &str) -> Vec<SpanSeen> {
    let mut spans: Vec<SpanSeen> = Vec::new();
    let mut resource = BTreeMap::new();
    // Where `-> key: value` lines go: the resource's attributes, or the current span's.
    let mut in_resource = false;
    let mut in_span_attributes = false;
    for line in log.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("ResourceSpans #") {
            resource = BTreeMap::new();
            in_resource = false;
            in_span_attributes = false;
        } else if trimmed == "Resource attributes:" {
            in_resource = true;
        } else if trimmed.starts_with("ScopeSpans #") {
            in_resource = false;
        } else if trimmed.starts_with("Span #") {
            in_span_attributes = false;
            spans.push(SpanSeen {
                resource: resource.clone(),
                ..SpanSeen::default()
            });
        } else if trimmed == "Attributes:" {
            in_span_attributes = !spans.is_empty();
        } else if let Some(kv) = trimmed.strip_prefix("-> ") {
            let Some((key, value)) = kv.split_once(": ") else {
                continue;
            };
            // `Str(x)`, `Int(3)`, `Bool(true)`, `Double(0.5)`: the text inside.
            let value = value
                .split_once('(')
                .and_then(|(_, v)| v.strip_suffix(')'))
                .unwrap_or(value)
                .to_string();
            if in_resource {
                resource.insert(key.to_string(), value);
            } else if in_span_attributes && let Some(span) = spans.last_mut() {
                span.attributes.insert(key.to_string(), value);
            }
        } else if let Some((field, value)) = trimmed.split_once(':')
            && let Some(span) = spans.last_mut()
            && !in_span_attributes
        {
            let value = value.trim().to_string();
            match field.trim() {
                "Trace ID" => span.trace_id = value,
                "Parent ID" => span.parent_id = value,
                "ID" => span.span_id = value,
                "Name" => span.name = value,
                "Status code" => span.status = value,
                _ => {}
            }
        }
    }
    spans
}

/// rotel on a free port of 127.0.0.1 (OTLP/HTTP; its gRPC receiver on another free port),
/// exporting nowhere, printing every span it receives.
pub(super) fn collector(dir: &std::path::Path) -> harness::PeerProcess {
    let grpc = format!("127.0.0.1:{}", peers::free_port());
    let pid_file = dir.join("rotel.pid");
    let log_file = dir.join("rotel.log");
    peers::spawn_http_peer_retry(
        peers::rotel_agent(),
        &[
            "start",
            "--otlp-http-endpoint",
            "127.0.0.1:{port}",
            "--otlp-grpc-endpoint",
            &grpc,
            "--exporter",
            "blackhole",
            "--debug-log",
            "traces",
            "--debug-log-verbosity",
            "detailed",
            "--pid-file",
            pid_file.to_str().expect("UTF-8 path"),
            "--log-file",
            log_file.to_str().expect("UTF-8 path"),
        ],
        &[],
    )
}

/// Sends SIGTERM to `process` and waits (at most `within`) for it to exit; whether it did.
pub(super) fn terminate(
    process: &mut harness::PeerProcess,
    within: Duration,
) -> Option<std::process::ExitStatus> {
    let _ = Command::new("kill")
        .args(["-TERM", &process.pid().to_string()])
        .status();
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = process.exit_status() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
