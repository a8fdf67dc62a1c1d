//! The policy pipeline's circuit breaker, retry and fallback layers, through `toolgate serve`
//! with real backends: an MCP server over streamable HTTP that is killed and restarted, and a
//! small HTTP API (runtime/tests/peers/flaky_http.py, an OpenAPI source loaded at run time)
//! that answers 503 twice before it answers 200, or always fails.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{PeerProcess, Served, peers, request, serve, tools_yaml};

/// The repository's tools.yaml with `sources` (YAML lines under `tools:`, indented by 2, e.g.
/// an `openapi:` list) and `policy` (the lines under `policy:`, indented by 2) instead of its
/// own policy.
fn yaml(sources: &str, policy: &str) -> String {
    let base = tools_yaml("", "");
    let own_policy = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(
        base.contains(own_policy),
        "tools.yaml's policy section moved"
    );
    assert!(
        base.contains("\ntools:\n"),
        "tools.yaml has a `tools:` line"
    );
    base.replacen(own_policy, &format!("policy:\n{policy}"), 1)
        .replacen("\ntools:\n", &format!("\ntools:\n{sources}"), 1)
}

/// `POST /tools/{tool}/call` with `args`: (status, JSON body).
fn call(served: &Served, tool: &str, args: &str) -> (u16, Value) {
    let path = format!("/tools/{tool}/call");
    let (status, text) = request(
        served.port(),
        "POST",
        &path,
        &[("Content-Type", "application/json")],
        Some(args),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let body = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "POST {path} answered {status}, not JSON ({e}): {text}\n{}",
            served.log()
        )
    });
    (status, body)
}

fn session_server_on(port: u16, log: &std::path::Path) -> PeerProcess {
    let script = peers::http_session_server_py();
    let port_text = port.to_string();
    peers::spawn_http_peer(
        peers::python3(),
        &[script.to_str().expect("UTF-8 path"), &port_text],
        &[("SESSION_LOG", log.to_str().expect("UTF-8 path"))],
        port,
    )
}

/// How many `tools/call` requests the session server logged.
fn tool_calls_logged(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"rpc_method\":\"tools/call\""))
        .count()
}

#[test]
fn a_killed_mcp_server_opens_its_breaker_and_a_restarted_one_closes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sessions.jsonl");
    let mut server = peers::http_session_server(Some(&log));
    let port = server.port();
    let sources = format!(
        "  mcp:\n    - id: sess\n      http: {{url: \"{}\"}}\n",
        server.url("/mcp")
    );
    let policy = "  defaults:\n    timeout_ms: 30000\n  sources:\n    sess: {circuit_breaker: {failures: 3, open_ms: 1000}}\n";
    let served = serve(&yaml(&sources, policy), &[]);
    let echo = r#"{"message":"hi"}"#;

    let (status, out) = call(&served, "sess.echo", echo);
    assert_eq!(status, 200, "{out}\n{}", served.log());
    assert_eq!(tool_calls_logged(&log), 1);

    server.kill();
    for i in 1..=3 {
        let (status, body) = call(&served, "sess.echo", echo);
        assert_eq!(
            (status, body["kind"].as_str()),
            (502, Some("network")),
            "failure {i}: {body}"
        );
    }
    // The server's port now answers, but an open breaker sends nothing there.
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the dead server's port");
    listener.set_nonblocking(true).expect("nonblocking");
    let (status, body) = call(&served, "sess.echo", echo);
    assert_eq!(
        (status, body["kind"].as_str()),
        (503, Some("circuit_open")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("source `sess`: circuit open after 3 consecutive failures (last: network")
            && message.contains("; retry in "),
        "{message}"
    );
    let retry_after = body["retry_after_ms"].as_u64().expect("retry_after_ms");
    assert!((1..=1000).contains(&retry_after), "{body}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the open breaker let a call reach the source's port"
    );
    drop(listener);

    // Restarted on the same port: after open_ms one probe goes through and closes the breaker.
    let _server = session_server_on(port, &log);
    let deadline = Instant::now() + Duration::from_secs(20);
    let (status, out) = loop {
        let (status, body) = call(&served, "sess.echo", echo);
        if body["kind"] != "circuit_open" || Instant::now() > deadline {
            break (status, body);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status, 200, "the probe failed: {out}\n{}", served.log());
    assert!(
        out["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("hi")),
        "{out}"
    );
    assert_eq!(
        tool_calls_logged(&log),
        2,
        "one call before the kill, one probe"
    );
    for _ in 0..3 {
        let (status, body) = call(&served, "sess.echo", echo);
        assert_eq!(status, 200, "the breaker closed: {body}");
    }
}

/// flaky_http.py on a free port, answering 503 `failures` times per operation first.
fn flaky_api() -> PeerProcess {
    let script = peers::test_peers_dir().join("flaky_http.py");
    peers::spawn_http_peer_retry(
        peers::python3(),
        &[script.to_str().expect("UTF-8 path"), "{port}", "2"],
        &[],
    )
}

fn flaky_sources(api: &PeerProcess) -> String {
    format!(
        "  openapi:\n    - id: flaky\n      spec: {}\n      load: runtime\n      allow_private: true\n",
        api.url("/openapi.json")
    )
}

/// The API's request counts, by `METHOD /path`.
fn stats(api: &PeerProcess) -> Value {
    let (status, text) = request(api.port(), "GET", "/stats", &[], None).expect("GET /stats");
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn a_read_only_tool_is_retried_and_a_post_never_is() {
    let api = flaky_api();
    let policy = "  defaults:\n    timeout_ms: 30000\n    retries: 2\n    retry_backoff_ms: 10\n";
    let served = serve(&yaml(&flaky_sources(&api), policy), &[]);

    // GET: read-only (readOnlyHint), so retried: 503, 503, then 200.
    let (status, out) = call(&served, "flaky.getFlaky", "{}");
    assert_eq!(status, 200, "{out}\n{}", served.log());
    assert_eq!(out["structuredContent"]["attempt"], 3, "{out}");
    assert_eq!(out["_meta"]["toolgate/retries"], 2, "{out}");
    assert_eq!(stats(&api)["GET /flaky"], 3);

    // POST: not idempotent, so never retried: one request, its error returned.
    let (status, body) = call(&served, "flaky.postFlaky", "{}");
    assert_eq!(
        (status, body["kind"].as_str()),
        (502, Some("upstream")),
        "{body}"
    );
    assert_eq!(body["retryable"], true, "{body}");
    assert_eq!(stats(&api)["POST /flaky"], 1);
}

#[test]
fn a_failing_tool_falls_back_to_calc() {
    let api = flaky_api();
    let policy = "  defaults:\n    timeout_ms: 30000\n  tools:\n    flaky.getBroken:\n      fallback: {tool: calc, on: [upstream], arguments: {expression: /expr}}\n";
    let served = serve(&yaml(&flaky_sources(&api), policy), &[]);

    let (status, out) = call(&served, "flaky.getBroken", r#"{"expr":"6*7"}"#);
    assert_eq!(status, 200, "{out}\n{}", served.log());
    assert_eq!(
        out["structuredContent"]["value"], 42,
        "calc answered: {out}"
    );
    assert_eq!(
        out["_meta"]["toolgate/fallback"]["from"], "flaky.getBroken",
        "{out}"
    );
    assert_eq!(
        out["_meta"]["toolgate/fallback"]["error"], "upstream",
        "{out}"
    );
    assert_eq!(
        stats(&api)["GET /broken"],
        1,
        "the tool itself was called first"
    );

    // The fallback failing too: its error, naming the original one.
    let (status, body) = call(&served, "flaky.getBroken", r#"{"expr":"2+"}"#);
    assert_ne!(status, 200, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "fallback tool `calc` failed after tool `flaky.getBroken` failed with upstream"
        ),
        "{body}"
    );
}
