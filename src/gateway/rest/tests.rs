//! The REST API over a real listener, in front of a toolset of test tools (errors of every
//! kind, a slow tool, a schema no dialect can express), and the OpenAPI document's assembly. The binary's
//! own routes, in front of real tools and real MCP servers, are tested in `tests/gateway/rest.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use toolgate_runtime::{
    BoxFuture, ErrorKind, SourceLifecycle, SourceState, SourceStatus, SourceTool, ToolContext,
    ToolDescriptor, ToolError, ToolFuture, ToolOutput, ToolSource, Toolset,
};

use super::api_doc::{assemble, document_for};
use crate::gateway::Gateway;

/// Sets its flag when dropped: tells whether a tool's future was dropped (the call stopped).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Source `test`: `test.slow` (10 s unless dropped), `test.soft_error` (an `isError` result),
/// `test.upstream`, `test.limited` (errors), `test.broken` (a schema with a dangling `$ref`, which no dialect can express).
/// Its start-up discovery waits for `listed` when given.
struct TestSource {
    slow_dropped: Arc<AtomicBool>,
    listed: Option<Arc<Notify>>,
    discovered: AtomicBool,
}

fn tool(name: &str, input_schema: Value) -> Arc<ToolDescriptor> {
    Arc::new(ToolDescriptor {
        name: format!("test.{name}"),
        description: format!("test tool {name}"),
        input_schema,
        source: "test".into(),
        ..ToolDescriptor::default()
    })
}

impl ToolSource for TestSource {
    fn id(&self) -> &str {
        "test"
    }

    fn kind(&self) -> &str {
        "test"
    }

    fn tools(&self) -> Vec<SourceTool> {
        let object = json!({"type": "object"});
        let broken = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Missing"}},
        });
        [
            tool("slow", object.clone()),
            tool("soft_error", object.clone()),
            tool("upstream", object.clone()),
            tool("limited", object),
            tool("broken", broken),
        ]
        .into_iter()
        .map(|d| SourceTool::named(Arc::clone(&d), d.name.as_str()))
        .collect()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        _args: Value,
        _ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let guard = SetOnDrop(Arc::clone(&self.slow_dropped));
        let name = tool.name().to_string();
        ToolFuture::new(async move {
            match name.as_str() {
                "test.slow" => {
                    let _guard = guard;
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    Ok(ToolOutput::text("late"))
                }
                "test.soft_error" => Ok(ToolOutput::error_text("it failed, softly")),
                "test.upstream" => Err(ToolError::upstream("the backend said no")),
                "test.limited" => Err(ToolError::new(ErrorKind::RateLimited, "slow down")
                    .with_retry_after(Duration::from_millis(1500))),
                _ => Ok(ToolOutput::text("ok")),
            }
        })
    }

    fn lifecycle(&self) -> Option<&dyn SourceLifecycle> {
        Some(self)
    }
}

impl SourceLifecycle for TestSource {
    fn status(&self) -> SourceStatus {
        let mut status = SourceStatus::ready("test", "test", self.tools().len());
        if !self.discovered.load(Ordering::SeqCst) {
            status.state = SourceState::Pending;
        }
        status
    }

    fn discover(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            if let Some(listed) = &self.listed {
                listed.notified().await;
            }
            self.discovered.store(true, Ordering::SeqCst);
            Ok(())
        })
    }
}

/// A gateway over [`TestSource`] on 127.0.0.1: its port, and the flag `test.slow` sets.
async fn start(listed: Option<Arc<Notify>>) -> (Gateway, u16, Arc<AtomicBool>) {
    let slow_dropped = Arc::new(AtomicBool::new(false));
    let source = TestSource {
        slow_dropped: Arc::clone(&slow_dropped),
        discovered: AtomicBool::new(listed.is_none()),
        listed,
    };
    let toolset = Toolset::builder().source(source).build().expect("toolset");
    let gateway = Gateway::builder(toolset).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (gateway, port, slow_dropped)
}

/// One HTTP/1.1 request (connection closed after it): status, head (lower case), JSON body.
async fn send(port: u16, method: &str, path: &str, body: &str) -> (u16, String, Value) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {body:?}"));
    (status, head.to_ascii_lowercase(), value)
}

#[tokio::test]
async fn tool_errors_map_to_their_status_and_results_pass_through() {
    let (_gateway, port, _) = start(None).await;
    let (status, _, out) = send(port, "POST", "/tools/test.soft_error/call", "{}").await;
    assert_eq!(status, 200, "an isError result is a result: {out}");
    assert_eq!(out["isError"], true);
    assert_eq!(out["content"][0]["text"], "it failed, softly");

    let (status, _, body) = send(port, "POST", "/tools/test__upstream/call", "{}").await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["kind"], "upstream");
    assert_eq!(body["message"], "the backend said no");

    let (status, head, body) = send(port, "POST", "/tools/test.limited/call", "").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["retry_after_ms"], 1500, "{body}");
    assert!(head.contains("retry-after: 2"), "{head}");
}

#[tokio::test]
async fn a_tool_no_dialect_can_express_is_a_500_internal_not_the_callers_fault() {
    let (_gateway, port, _) = start(None).await;
    for dialect in ["gemini", "openai"] {
        let path = format!("/tools/test.broken/schema?dialect={dialect}");
        let (status, _, body) = send(port, "GET", &path, "").await;
        assert_eq!(status, 500, "{body}");
        assert_eq!(body["kind"], "internal", "{body}");
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains(dialect) && m.contains("dangling")),
            "{body}"
        );
        assert_eq!(
            body["details"],
            json!({"tool": "test.broken", "dialect": dialect})
        );
    }
    let (status, _, list) = send(port, "GET", "/tools?dialect=gemini", "").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(5), "{list}");
    assert_eq!(
        list["definitions"].as_array().map(Vec::len),
        Some(4),
        "{list}"
    );
    assert_eq!(list["not_exported"][0]["tool"], "test.broken", "{list}");
}

#[tokio::test]
async fn timeout_ms_stops_the_call() {
    let (_gateway, port, dropped) = start(None).await;
    let started = Instant::now();
    let (status, _, body) = send(port, "POST", "/tools/test.slow/call?timeout_ms=100", "{}").await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["kind"], "timeout");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("100 ms")),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the call went on after its timeout"
    );
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_its_call() {
    let (_gateway, port, dropped) = start(None).await;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let request =
        "POST /tools/test.slow/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}";
    stream.write_all(request.as_bytes()).await.expect("write");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the call ended before the client left"
    );
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the call went on after the client left"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn readyz_names_the_sources_still_pending() {
    let listed = Arc::new(Notify::new());
    let (gateway, port, _) = start(Some(Arc::clone(&listed))).await;
    let discovery = gateway.start_discovery();
    let (status, _, body) = send(port, "GET", "/readyz", "").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body, json!({"status": "discovering", "pending": ["test"]}));
    listed.notify_one();
    discovery
        .await
        .expect("discovery")
        .expect("no name conflicts");
    let (status, _, body) = send(port, "GET", "/readyz", "").await;
    assert_eq!(
        (status, body),
        (200, json!({"status": "ready", "pending": []}))
    );
}

#[test]
fn the_document_has_the_runtime_schemas_and_no_dangling_ref() {
    for api_keys in [false, true] {
        let (doc, checked) = assemble(api_keys);
        if let Err(e) = checked {
            panic!("{e}");
        }
        let text = doc.to_string();
        assert!(
            !text.contains("toolgate: replaced by"),
            "a placeholder is left"
        );
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        for name in [
            "ToolOutput",
            "Content",
            "ToolDescriptor",
            "SourceStatus",
            "ErrorKind",
        ] {
            assert!(schemas.contains_key(name), "{name} missing");
        }
        for r in text.split("\"$ref\":\"").skip(1) {
            let target = &r[..r.find('"').unwrap_or(0)];
            assert!(
                doc.pointer(target.trim_start_matches('#')).is_some(),
                "dangling $ref {target}"
            );
        }
        assert_eq!(doc.get("security").is_some(), api_keys);
    }
}

#[test]
fn the_tool_error_schema_describes_every_field_and_kind() {
    let doc = document_for(false);
    let schema = &doc["components"]["schemas"]["ToolError"];
    let e = ToolError::new(ErrorKind::RateLimited, "slow down")
        .with_retry_after(Duration::from_secs(1))
        .with_details(json!({"x": 1}));
    let serialized = serde_json::to_value(&e).expect("serialize");
    for key in serialized.as_object().expect("object").keys() {
        assert!(
            schema["properties"].get(key).is_some(),
            "`{key}` is not described"
        );
    }
    for key in schema["required"].as_array().expect("required") {
        let plain = serde_json::to_value(ToolError::internal("x")).expect("serialize");
        assert!(
            plain.get(key.as_str().unwrap_or_default()).is_some(),
            "{key}"
        );
    }
    let kinds: Vec<&str> = doc["components"]["schemas"]["ErrorKind"]["oneOf"]
        .as_array()
        .expect("oneOf")
        .iter()
        .filter_map(|k| k["const"].as_str())
        .collect();
    let all: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, all);
}
