//! Servers that keep a call waiting: in the handshake, behind a legacy-SSE stream that never
//! names its endpoint, or in a long call with or without progress. Each wait ends at the bound
//! that applies (the call's deadline, `connect_timeout_ms`, `idle_timeout_ms`) with an error
//! saying what was waited for; and answers to requests never sent do not end a session.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_runtime::mcp::{McpBackend, McpOptions};
use toolgate_runtime::remote::RemoteBackend;
use toolgate_runtime::{ErrorKind, ToolContext, ToolDescriptor, Toolset};

use super::{fault, peers, ready, toolset};

/// A toolset of the tools.yaml `mcp:` entries in `entries` (YAML lines under `mcp:`).
fn from_yaml(entries: &str) -> Toolset {
    let yaml = format!("version: 1\ntools:\n  mcp:\n{entries}");
    Toolset::builder()
        .mcp_servers_from_yaml(&yaml, ".")
        .build()
        .unwrap()
}

/// A stdio entry running the fault server in `mode`, with `more` keys (YAML, indented).
fn fault_entry(id: &str, mode: &str, more: &str) -> String {
    format!(
        "    - id: {id}\n      stdio: {{command: {}, args: [\"{}\", {mode}]}}\n{more}",
        peers::python3().display(),
        peers::fault_server_py().display()
    )
}

/// The `notifications/cancelled` the fault server logged (`FAULT_LOG`), once one arrived (at
/// most 5 s).
async fn cancellations(log: &std::path::Path) -> Vec<Value> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let sent: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect();
        if !sent.is_empty() {
            return sent;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server got no notifications/cancelled");
}

/// A server that never answers the handshake holds a call only until the call's deadline, and
/// the error says it was the handshake, whose bound it was, and what the process last wrote
/// to stderr. A deadline-cut handshake puts no backoff on the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_that_never_ends_is_bounded_by_the_calls_deadline() {
    let backend = McpBackend::new("stuck", fault("hang_init", &[]), McpOptions::default());
    let tool = ToolDescriptor {
        name: "stuck.echo".into(),
        ..ToolDescriptor::default()
    };
    for _ in 0..2 {
        let ctx = ToolContext::builder()
            .timeout(Duration::from_millis(1500))
            .build();
        let started = Instant::now();
        let e = backend
            .call(&tool, "echo", json!({}), &ctx)
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
        assert!(took < Duration::from_secs(10), "held {took:?}, not 30 s");
        let m = e.message();
        assert!(
            m.contains("MCP server `stuck` did not answer the handshake")
                && m.contains("within 1500 ms")
                && m.contains("the call's deadline"),
            "{m}"
        );
        assert!(m.contains("waiting for a licence server"), "{m}");
    }
    backend.close().await;
}

/// `connect_timeout_ms` bounds starting a session (the listing that needs it fails with the
/// handshake's own error), and a source's `timeout_ms` bounds a call that waits for that
/// listing, whatever the connect timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_ms_and_timeout_ms_bound_a_server_stuck_in_its_handshake() {
    let tools = from_yaml(&fault_entry(
        "stuck",
        "hang_init",
        "      connect_timeout_ms: 800\n      lazy: true\n",
    ));
    let started = Instant::now();
    let e = tools.call("stuck.echo", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let m = e.message();
    assert!(
        m.contains("did not answer the handshake")
            && m.contains("within 800 ms")
            && m.contains("connect_timeout_ms"),
        "{m}"
    );
    tools.close().await;

    let tools = from_yaml(&fault_entry(
        "stuck",
        "hang_init",
        "      timeout_ms: 1000\n",
    ));
    let started = Instant::now();
    let e = tools.call("stuck.echo", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not the 30 s connect timeout"
    );
    let m = e.message();
    assert!(
        m.contains("within 1000 ms") && m.contains("source `stuck` has not listed its tools yet"),
        "{m}"
    );
    tools.close().await;
}

/// A legacy-SSE server whose stream never names the message endpoint fails at
/// `connect_timeout_ms` with the transport's own reason, not a generic handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_stream_without_an_endpoint_event_says_so() {
    let script = peers::test_peers_dir().join("silent_sse.py");
    let script = script.to_str().unwrap();
    let server = peers::spawn_http_peer_retry(peers::python3(), &[script, "{port}"], &[]);
    let url = server.url("/sse");
    let tools = from_yaml(&format!(
        "    - id: quiet\n      sse: {{url: \"{url}\"}}\n      connect_timeout_ms: 800\n"
    ));
    let statuses = tools.discover(1).await;
    let error = statuses[0].error.clone().unwrap_or_default();
    assert!(
        error.contains(&format!("GET {url}: no `endpoint` event within 800 ms")),
        "{error}"
    );
    tools.close().await;
}

/// Answers to requests never sent (one before the `initialize` result, one before a call's
/// result) are skipped; the session and the call go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_to_requests_never_sent_do_not_end_the_session() {
    let tools = toolset("odd", fault("stray_id", &[]));
    ready(&tools).await;
    let out = tools
        .call("odd.echo", json!({"message": "still fine"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "still fine");
    tools.close().await;
}

/// `idle_timeout_ms`: a call that keeps reporting progress runs past it (up to its timeout);
/// one that goes quiet ends after it, and the server is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_call_alive_past_its_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled.jsonl");
    let entry = fault_entry(
        "long",
        "progress",
        "      idle_timeout_ms: 600\n      timeout_ms: 30000\n",
    )
    .replace(
        "progress]}",
        &format!("progress], env: {{FAULT_LOG: \"{}\"}}}}", log.display()),
    );
    let tools = from_yaml(&entry);
    ready(&tools).await;
    // Ten reports 200 ms apart: 2 s in all, more than three idle timeouts.
    let out = tools
        .call("long.tick", json!({"count": 10, "every_ms": 200}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "ticked 10");

    let started = Instant::now();
    let e = tools.call("long.hang", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not the 30 s timeout"
    );
    assert!(
        e.message()
            .contains("tools/call hang sent no progress for 600 ms"),
        "{e}"
    );
    let sent = cancellations(&log).await;
    assert_eq!(
        sent[0]["params"]["reason"], "no progress for 600 ms",
        "{sent:?}"
    );
    tools.close().await;
}

/// A server whose `tools/list` answer cannot be read (a schema nested 300 deep, past the
/// parser's recursion limit) fails the listing at once with an error saying the answer could
/// not be read, instead of leaving it to wait for its timeout (30 s and more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_deep_to_read_fails_its_request_at_once() {
    let tools = from_yaml(&fault_entry(
        "deep",
        "deep",
        "      timeout_ms: 120000\n      connect_timeout_ms: 120000\n",
    ));
    let started = Instant::now();
    let status = tools.discover(1).await.remove(0);
    let took = started.elapsed();
    let error = status.error.expect("the listing fails");
    assert!(
        error.contains("could not be read") && error.contains("recursion limit"),
        "{error}"
    );
    assert!(took < Duration::from_secs(20), "held {took:?}");
    tools.close().await;
}
