//! Streamable HTTP sessions the server loses: it expires them (404 to the session id), or it
//! restarts while toolgate's session is idle and answers the old id with a 400 whose JSON-RPC
//! error has no id. Either way the call it refused did not run: it goes again, once, on a new
//! session, and nothing waits for an answer that cannot come.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_runtime::mcp::McpConnection;
use toolgate_runtime::{ToolContext, Toolset};

use super::{peers, ready, toolset};

fn http(url: String) -> McpConnection {
    McpConnection::Http {
        url,
        headers: BTreeMap::new(),
        oauth2: None,
    }
}

/// Starts http_session_server.py on `port` (a restart: the same port again).
fn session_server_on(port: u16) -> peers::PeerProcess {
    let script = peers::http_session_server_py();
    let port_text = port.to_string();
    peers::spawn_http_peer(
        peers::python3(),
        &[script.to_str().expect("UTF-8 path"), &port_text],
        &[],
        port,
    )
}

/// Echoes `message` through `tools` under a 30 s deadline, but gives up after 10 s: a call
/// left waiting on the lost session would take the whole deadline.
async fn echo(tools: &Toolset, message: &str) -> Result<String, String> {
    let ctx = ToolContext::builder()
        .timeout(Duration::from_secs(30))
        .build();
    let call = tools.call_with("web.echo", json!({ "message": message }), ctx);
    match tokio::time::timeout(Duration::from_secs(10), call).await {
        Ok(Ok(output)) => Ok(output.text_joined()),
        Ok(Err(e)) => Err(format!("the call failed: {e}")),
        Err(_) => Err("the call was still waiting after 10 s".into()),
    }
}

/// The server restarts while the session is idle; it knows no session id, and answers the
/// old one with a 400 carrying a JSON-RPC error tied to no request. The next call is answered
/// on a new session at once; so is every call after it, and the old session is not reused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_while_the_session_was_idle_answers_the_next_call() {
    let port = peers::free_port();
    let mut server = session_server_on(port);
    let tools = toolset("web", http(server.url("/mcp")));
    ready(&tools).await;
    assert_eq!(echo(&tools, "before").await.as_deref(), Ok("before"));
    let before = tools
        .call("web.whoami", json!({}))
        .await
        .unwrap()
        .text_joined();

    server.kill();
    let _server = session_server_on(port);
    assert_eq!(echo(&tools, "after").await.as_deref(), Ok("after"));
    assert_eq!(echo(&tools, "again").await.as_deref(), Ok("again"));
    let after = tools
        .call("web.whoami", json!({}))
        .await
        .unwrap()
        .text_joined();
    assert_ne!(before, after, "a new session");
    tools.close().await;
}

/// Several calls in flight on the forgotten session at once: each is answered (on the new
/// session) and none waits for its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_on_a_forgotten_session_all_go_again() {
    let port = peers::free_port();
    let mut server = session_server_on(port);
    let tools = toolset("web", http(server.url("/mcp")));
    ready(&tools).await;
    assert_eq!(echo(&tools, "before").await.as_deref(), Ok("before"));
    server.kill();
    let _server = session_server_on(port);
    let calls: Vec<_> = (0..4)
        .map(|i| echo(&tools, ["a", "b", "c", "d"][i]))
        .collect();
    let answers = futures::future::join_all(calls).await;
    assert_eq!(
        answers,
        [
            Ok("a".to_string()),
            Ok("b".into()),
            Ok("c".into()),
            Ok("d".into())
        ]
    );
    tools.close().await;
}

/// The session id is sent on every request. When the server forgets the session (404 to its
/// id), the call it refused goes again on exactly one new session and succeeds; DELETE on
/// close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_an_expired_session_goes_again_on_one_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let server = peers::http_session_server(Some(&log));
    let tools = toolset(
        "web",
        McpConnection::Http {
            url: server.url("/mcp"),
            headers: BTreeMap::from([
                (
                    "Authorization".to_string(),
                    "Bearer t0k3n-value".to_string(),
                ),
                ("X-Tenant".to_string(), "acme".to_string()),
            ]),
            oauth2: None,
        },
    );
    ready(&tools).await;
    let first = tools
        .call("web.whoami", json!({}))
        .await
        .unwrap()
        .text_joined();
    assert!(!first.is_empty());
    // The server forgets every session.
    let client = reqwest::Client::new();
    client
        .post(server.url("/admin/expire"))
        .send()
        .await
        .unwrap();
    let echoed = tools
        .call("web.echo", json!({"message": "x"}))
        .await
        .expect("the refused call is sent again on a new session")
        .text_joined();
    assert_eq!(echoed, "x");
    let second = tools
        .call("web.whoami", json!({}))
        .await
        .unwrap()
        .text_joined();
    assert_ne!(first, second, "a new session");
    // tools/list is idempotent: after another expiry, a listing is sent again on a new session.
    client
        .post(server.url("/admin/expire"))
        .send()
        .await
        .unwrap();
    tools.refresh("web").await.unwrap();
    assert!(tools.describe("web.echo").is_some());
    tools.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let initializes = lines
        .iter()
        .filter(|l| l["rpc_method"] == "initialize")
        .count();
    assert_eq!(
        initializes, 3,
        "one new session per expiry, not more: {lines:#?}"
    );
    for l in lines.iter().filter(|l| {
        l["method"] == "POST"
            // The `server/discover` probe and `initialize` come before there is a session.
            && !matches!(l["rpc_method"].as_str(), Some("initialize" | "server/discover"))
            && l["path"] == "/mcp"
    }) {
        assert!(
            l["session"].is_string(),
            "every request after initialize carries the session id: {l}"
        );
        assert!(
            l["protocol_version"].is_string(),
            "and the protocol version: {l}"
        );
        assert_eq!(
            l["authorization"], "Bearer t0k3n-value",
            "and the headers: {l}"
        );
        assert_eq!(l["x_tenant"], "acme", "{l}");
    }
    assert!(
        lines.iter().any(|l| l["method"] == "DELETE"),
        "DELETE on close: {lines:#?}"
    );
}
