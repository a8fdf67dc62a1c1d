//! One mistake, one JSON-RPC answer, whatever the transport: a frame that is not JSON, a batch,
//! JSON that is no message, a `tools/call` whose `arguments` are neither an object nor a string
//! holding one (those are the toolset's to decode: `text_arguments.rs`), or that names no tool
//! get the same error (code, message, id) over stdio, legacy SSE and streamable HTTP. And
//! `DELETE /mcp` ends a session the way MCP clients expect (the Python SDK's own client closes
//! without a warning).

use serde_json::{Value, json};

use crate::harness::{self, Served, peers};
use crate::sse::{self, Stream};
use crate::stdio::StdioServer;

/// (what, frame, the id the answer carries, its code, text its message contains).
fn mistakes() -> Vec<(&'static str, String, Value, i64, &'static str)> {
    let call = |id: u64, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    vec![
        (
            "not JSON",
            "{\"jsonrpc\": 2.0, oops".into(),
            Value::Null,
            -32700,
            "Parse error",
        ),
        (
            "a batch",
            r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#.into(),
            Value::Null,
            -32600,
            "batch",
        ),
        (
            "no method",
            r#"{"jsonrpc":"2.0","id":5}"#.into(),
            json!(5),
            -32600,
            "neither a request",
        ),
        (
            "number arguments",
            call(12, json!({"name": "calc", "arguments": 7})),
            json!(12),
            -32602,
            "the arguments of tool `calc` must be a JSON object, not a number",
        ),
        (
            "array arguments",
            call(13, json!({"name": "calc", "arguments": [1]})),
            json!(13),
            -32602,
            "the arguments of tool `calc` must be a JSON object, not an array",
        ),
        (
            "no tool name",
            call(14, json!({"arguments": {}})),
            json!(14),
            -32602,
            "missing field `name`",
        ),
    ]
}

/// The part of an answer that must agree: id, code, message.
fn essence(answer: &Value) -> (Value, Value, Value) {
    (
        answer["id"].clone(),
        answer["error"]["code"].clone(),
        answer["error"]["message"].clone(),
    )
}

/// The JSON-RPC message answering request `id` in a streamable-HTTP response body: the body
/// itself (`application/json`), or the `data` of an SSE event.
fn rpc_answer(content_type: &str, body: &str) -> Value {
    if !content_type.starts_with("text/event-stream") {
        return serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in the event stream: {body}"))
}

/// A raw MCP streamable-HTTP client: one session, bodies as the gateway sends them.
pub(crate) struct McpHttp<'a> {
    served: &'a Served,
    client: reqwest::Client,
    session: Option<String>,
}

impl McpHttp<'_> {
    /// POSTs `body` to `/mcp` in the session (if any): (status, content type, answer body).
    pub(crate) async fn post(&self, body: &str) -> (u16, String, String) {
        let mut request = self
            .client
            .post(self.served.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string());
        if let Some(s) = &self.session {
            request = request.header("mcp-session-id", s);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (status, kind, response.text().await.unwrap())
    }

    /// POSTs `body` in the session and returns the JSON-RPC message answering it.
    pub(crate) async fn answer(&self, body: &str) -> Value {
        let (_, kind, text) = self.post(body).await;
        rpc_answer(&kind, &text)
    }

    /// Opens a session (`initialize`, then `notifications/initialized`).
    pub(crate) async fn initialize(served: &Served) -> McpHttp<'_> {
        let client = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "errors-test", "version": "1"}}});
        let response = client
            .post(served.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let _ = response.text().await;
        let http = McpHttp {
            served,
            client,
            session: Some(session),
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(http.post(&note).await.0, 202);
        http
    }
}

#[test]
fn every_transport_gives_the_same_answer_to_the_same_mistake() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    let mut stdio = StdioServer::start("");
    stdio.initialize("2025-06-18");
    sse::runtime().block_on(async {
        let http = McpHttp::initialize(&served).await;
        let mut stream = Stream::open(&served, &[]).await;
        let endpoint = stream.endpoint().await;
        assert_eq!(
            sse::post(&served, &endpoint, &sse::initialize(1), &[])
                .await
                .0,
            202
        );
        stream.answer().await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(sse::post(&served, &endpoint, &note, &[]).await.0, 202);

        for (what, frame, id, code, says) in mistakes() {
            stdio.write(format!("{frame}\n").as_bytes());
            let over_stdio = stdio.answer();

            let (status, answer) = sse::post(&served, &endpoint, &frame, &[]).await;
            assert_eq!(status, 400, "{what} over SSE: {answer}");
            let over_sse: Value = serde_json::from_str(&answer).unwrap();

            let (status, kind, body) = http.post(&frame).await;
            let over_http = rpc_answer(&kind, &body);
            // A request the session took (its params are checked by the handler) is answered
            // like any request; a frame that is no message at all is a 400.
            let expected_status = if code == -32602 { 200 } else { 400 };
            assert_eq!(status, expected_status, "{what} over /mcp: {kind} {body}");

            assert_eq!(over_stdio["id"], id, "{what} over stdio: {over_stdio}");
            assert_eq!(
                over_stdio["error"]["code"], code,
                "{what} over stdio: {over_stdio}"
            );
            let message = over_stdio["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{what} over stdio: {over_stdio}");
            assert_eq!(
                essence(&over_sse),
                essence(&over_stdio),
                "{what}: SSE {over_sse} vs stdio {over_stdio}"
            );
            assert_eq!(
                essence(&over_http),
                essence(&over_stdio),
                "{what}: /mcp {over_http} vs stdio {over_stdio}"
            );
        }

        // Every session is still usable after its mistakes.
        let ping = r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#;
        let (status, kind, body) = http.post(ping).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(rpc_answer(&kind, &body)["result"], json!({}));
        assert_eq!(sse::post(&served, &endpoint, ping, &[]).await.0, 202);
        assert_eq!(stream.answer().await["id"], 99);
        stdio.write(format!("{ping}\n").as_bytes());
        assert_eq!(stdio.answer()["id"], 99);
    });
}

/// `DELETE /mcp` answers 200 (what the TypeScript SDK answers and the Python SDK expects) and
/// ends the session: its id is unknown afterwards.
#[test]
fn delete_ends_the_session_with_200() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    sse::runtime().block_on(async {
        let http = McpHttp::initialize(&served).await;
        let session = http.session.clone().unwrap();
        let response = http
            .client
            .delete(served.url("/mcp"))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        assert_eq!(http.post(ping).await.0, 404, "the session is gone");
    });
}

/// The Python SDK's client (PyPI `mcp` 2.x) calls a tool through `/mcp` and closes its session
/// without a word on stderr (it warns `Session termination failed: <status>` unless the
/// DELETE is answered 200 or 204).
#[test]
fn the_python_sdk_client_calls_and_closes_quietly() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    let script = peers::test_peers_dir().join("py_client.py");
    let out = std::process::Command::new("timeout")
        .arg("90")
        .arg(peers::venv_python())
        .arg(&script)
        .arg(served.url("/mcp"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}\n{}", served.log());
    let result: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["value"], 5, "{stdout}");
    assert!(
        !stderr.contains("Session termination failed"),
        "the SDK complained about the DELETE: {stderr}"
    );
    assert!(stderr.trim().is_empty(), "the SDK warned: {stderr}");
}

/// In an HTTP session, a client that cancels a call with a reason: the MCP server behind the
/// gateway is cancelled with the client's words (the gateway notes the reason before rmcp
/// reads the notification; a stateless 2026-07-28 request cancelled by closing its stream
/// has none to pass on).
#[test]
fn a_clients_reason_for_cancelling_reaches_the_server_behind_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("behind.jsonl");
    let entry = crate::mcp_http::fault_entry(
        "faulty",
        "hang",
        &[("FAULT_LOG", &log.display().to_string())],
    );
    let served = harness::serve(&harness::tools_yaml(&entry, ""), &[]);
    sse::runtime().block_on(async {
        let http = McpHttp::initialize(&served).await;
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "faulty__hang", "arguments": {}}})
        .to_string();
        // The call's answer never comes: its stream stays open until the cancellation.
        let pending = {
            let request = http
                .client
                .post(served.url("/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .header("mcp-session-id", http.session.clone().unwrap())
                .body(call);
            tokio::spawn(async move { request.send().await.map(|r| r.status().as_u16()) })
        };
        let behind = log.clone();
        tokio::task::spawn_blocking(move || logged(&behind, "hanging"))
            .await
            .unwrap();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "the user pressed stop"}});
        assert_eq!(http.post(&cancel.to_string()).await.0, 202);
        pending.abort();
    });
    let cancelled = logged(&log, "notifications/cancelled");
    assert_eq!(
        cancelled["params"]["reason"],
        "the user pressed stop",
        "{cancelled}\n{}",
        served.log()
    );
}

/// The first line of the fault server's `FAULT_LOG` containing `want`, waited for (30 s).
pub(crate) fn logged(log: &std::path::Path, want: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(want)) {
            return serde_json::from_str::<Value>(line).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server behind never logged {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
