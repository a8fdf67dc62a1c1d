//! The legacy HTTP+SSE transport of `toolgate serve` (`GET /sse`, `POST /message?sessionId=…`,
//! MCP 2024-11-05): toolgate's own legacy-SSE client (the runtime's `McpBackend`) lists and calls
//! built-in and remote tools through it; raw HTTP checks the wire (the `endpoint` event, 202,
//! 400, 404, 403), the end of a session when its client goes, and the end of every stream when
//! the gateway shuts down.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{ErrorKind, SourceState, Toolset};

use crate::harness::{self, Served};

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A toolset whose one source is the gateway's `/sse`, as MCP source `gw`.
async fn client(served: &Served, headers: &[(&str, &str)]) -> Toolset {
    let connection = McpConnection::Sse {
        url: served.url("/sse"),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        oauth2: None,
    };
    let tools = Toolset::builder()
        .validate_arguments(false)
        .source(
            RemoteSource::builder(
                "gw",
                McpBackend::new("gw", connection, McpOptions::default()),
            )
            .build(),
        )
        .build()
        .unwrap();
    let statuses = tools.discover(1).await;
    assert_eq!(
        statuses[0].state,
        SourceState::Ready,
        "{statuses:?}\n{}",
        served.log()
    );
    tools
}

#[test]
fn toolgates_own_sse_client_lists_and_calls_built_in_and_remote_tools() {
    let mcp = harness::everything_stdio_entry("everything", "");
    let served = harness::serve(&harness::tools_yaml(&mcp, ""), &[]);
    runtime().block_on(async {
        let tools = client(&served, &[]).await;
        let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
        for want in ["gw.calc", "gw.read_file", "gw.everything__echo"] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        let out = tools
            .call("gw.calc", json!({"expression": "6*7"}))
            .await
            .unwrap();
        assert_eq!(out.structured.as_ref().unwrap()["value"], 42, "{out:?}");
        let out = tools
            .call("gw.everything__echo", json!({"message": "over SSE"}))
            .await
            .unwrap();
        assert_eq!(out.text_joined(), "Echo: over SSE", "{out:?}");
        // A failed call is an isError result on the wire, which the client reads as an error.
        let e = tools
            .call("gw.calc", json!({"expression": "1/"}))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream, "{e:?}");
        tools.close().await;
    });
}

/// An open `GET /sse`: its events, read as they come.
pub(crate) struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    pub(crate) async fn open(served: &Served, headers: &[(&str, &str)]) -> Self {
        let mut request = reqwest::Client::new().get(served.url("/sse"));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event's (name, data), skipping comments; `None` when the stream ended.
    async fn next(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut data) = (String::from("message"), Vec::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                    }
                }
                if !data.is_empty() {
                    return Some((event, data.join("\n")));
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("an event within 30 s");
            match chunk {
                Ok(Some(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// The first event, `endpoint`: the message URL's path and query.
    pub(crate) async fn endpoint(&mut self) -> String {
        let (event, data) = self.next().await.expect("an endpoint event");
        assert_eq!(event, "endpoint", "{data}");
        data
    }

    /// The next `message` event, as JSON.
    async fn message(&mut self) -> Value {
        let (event, data) = self.next().await.expect("a message event");
        assert_eq!(event, "message", "{data}");
        serde_json::from_str(&data).unwrap()
    }

    /// The next message that is not a notification.
    pub(crate) async fn answer(&mut self) -> Value {
        loop {
            let message = self.message().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }
}

/// POSTs `body` to `path` (as `application/json` unless `headers` say otherwise); (status,
/// body).
pub(crate) async fn post(
    served: &Served,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(served.url(path))
        .body(body.to_string());
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

pub(crate) fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "sse-test", "version": "1"}}})
    .to_string()
}

fn error_of(body: &str) -> (Value, i64) {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["jsonrpc"], "2.0", "{body}");
    (v["id"].clone(), v["error"]["code"].as_i64().unwrap())
}

#[test]
fn the_wire_is_the_typescript_sdks() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    runtime().block_on(async {
        let mut stream = Stream::open(&served, &[]).await;
        let endpoint = stream.endpoint().await;
        let id = endpoint
            .strip_prefix("/message?sessionId=")
            .unwrap_or_else(|| panic!("endpoint: {endpoint}"));
        assert!(
            id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
            "a UUID: {id}"
        );

        let (status, body) = post(&served, &endpoint, &initialize(1), &[]).await;
        assert_eq!(status, 202, "{body}");
        let answer = stream.answer().await;
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(
            answer["result"]["protocolVersion"], "2024-11-05",
            "{answer}"
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(post(&served, &endpoint, &note, &[]).await.0, 202);

        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "calc", "arguments": {"expression": "2+3"}}});
        assert_eq!(
            post(&served, &endpoint, &call.to_string(), &[]).await.0,
            202
        );
        let answer = stream.answer().await;
        assert_eq!(
            answer["result"]["structuredContent"]["value"], 5,
            "{answer}"
        );

        // Bodies that are not one JSON-RPC message: 400 with a JSON-RPC error.
        for (body, id, code) in [
            ("not json", Value::Null, -32700),
            (r#"{"jsonrpc":"2.0","id":5}"#, json!(5), -32600),
            (
                r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#,
                Value::Null,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#,
                json!(7),
                -32602,
            ),
        ] {
            let (status, answer) = post(&served, &endpoint, body, &[]).await;
            assert_eq!(status, 400, "{body} -> {answer}");
            assert_eq!(error_of(&answer), (id, code), "{body} -> {answer}");
        }
        // Unknown session, no session, a body declared as something else.
        let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
        let unknown = "/message?sessionId=00000000-0000-4000-8000-000000000000";
        let (status, answer) = post(&served, unknown, ping, &[]).await;
        assert_eq!(status, 404, "{answer}");
        assert_eq!(error_of(&answer).1, -32001, "{answer}");
        let (status, answer) = post(&served, "/message", ping, &[]).await;
        assert_eq!(status, 400, "{answer}");
        let (status, answer) =
            post(&served, &endpoint, ping, &[("content-type", "text/plain")]).await;
        assert_eq!(status, 415, "{answer}");

        // The session is still alive.
        assert_eq!(post(&served, &endpoint, ping, &[]).await.0, 202);
        assert_eq!(
            stream.answer().await,
            json!({"jsonrpc": "2.0", "id": 8, "result": {}})
        );
    });
}

#[test]
fn a_session_ends_when_its_client_drops_the_stream() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    runtime().block_on(async {
        let mut stream = Stream::open(&served, &[]).await;
        let endpoint = stream.endpoint().await;
        assert_eq!(post(&served, &endpoint, &initialize(1), &[]).await.0, 202);
        stream.answer().await;
        drop(stream);
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, body) = post(&served, &endpoint, ping, &[]).await;
            if status == 404 {
                break;
            }
            assert_eq!(status, 202, "{body}");
            assert!(
                Instant::now() < deadline,
                "the session outlived its stream by 10 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

/// With API keys, a session belongs to the key that opened its stream.
#[test]
fn a_session_takes_messages_only_from_the_key_that_opened_it() {
    let extra = "gateway:\n  api_keys:\n    - {name: a, key: key-of-a-123}\n    - {name: b, key: key-of-b-456}\n";
    let served = harness::serve(&harness::tools_yaml("", extra), &[]);
    runtime().block_on(async {
        let a = [("Authorization", "Bearer key-of-a-123")];
        let b = [("Authorization", "Bearer key-of-b-456")];
        let mut stream = Stream::open(&served, &a).await;
        let endpoint = stream.endpoint().await;
        assert_eq!(post(&served, &endpoint, &initialize(1), &[]).await.0, 401);
        let (status, body) = post(&served, &endpoint, &initialize(1), &b).await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(post(&served, &endpoint, &initialize(1), &a).await.0, 202);
        assert_eq!(stream.answer().await["id"], 1);
    });
}

/// SIGTERM: a call in flight still gets its answer on its stream, then every stream ends, within
/// the grace period, and the process exits.
#[test]
fn streams_end_when_the_gateway_shuts_down() {
    let mcp = harness::everything_stdio_entry("everything", "");
    let extra = "gateway: {shutdown_grace_ms: 5000}";
    let mut served = harness::serve(&harness::tools_yaml(&mcp, extra), &[]);
    runtime().block_on(async {
        let mut busy = Stream::open(&served, &[]).await;
        let mut idle = Stream::open(&served, &[]).await;
        let (busy_url, idle_url) = (busy.endpoint().await, idle.endpoint().await);
        for (stream, url) in [(&mut busy, &busy_url), (&mut idle, &idle_url)] {
            assert_eq!(post(&served, url, &initialize(1), &[]).await.0, 202);
            stream.answer().await;
        }
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "everything__trigger-long-running-operation",
            "arguments": {"duration": 2, "steps": 2}}});
        assert_eq!(
            post(&served, &busy_url, &call.to_string(), &[]).await.0,
            202
        );
        tokio::time::sleep(Duration::from_millis(300)).await;

        let start = Instant::now();
        let kill = std::process::Command::new("kill")
            .args(["-TERM", &served.process.pid().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());

        // The idle stream ends at once; the busy one after its answer.
        assert_eq!(idle.next().await, None);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let answer = busy.answer().await;
        assert_eq!(answer["id"], 2, "{answer}");
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        while let Some((event, _)) = busy.next().await {
            assert_eq!(event, "message");
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while served.process.is_running() {
        assert!(Instant::now() < deadline, "still running\n{}", served.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}
