//! Cut results shared by the replicas through Redis: a result cut to its source's
//! `max_result_bytes` on one replica is read in full, by its `toolgate://results/...` URI, with
//! `resources/read` on another.

use serde_json::{Value, json};

use super::{KEY, SESSION_KEY, gateway, open_session, redis_server, replicas};
use crate::harness::{self, peers, tools_yaml};

/// A JSON-RPC request in session `id` on `port`: the body's JSON-RPC message (the first
/// `data:` line of an event stream that holds one, or the body itself).
fn rpc(port: u16, id: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let (status, text) = harness::request(
        port,
        "POST",
        "/mcp",
        &[
            ("X-API-Key", KEY),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        Some(&body),
    )
    .unwrap_or_else(|e| panic!("{method}: {e}"));
    assert_eq!(status, 200, "{text}");
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find(|data| data.trim_start().starts_with('{'))
        .unwrap_or(&text);
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_result_cut_on_one_replica_is_read_in_full_on_another() {
    let redis = redis_server();
    let server = peers::http_session_server(None);
    let mcp = format!(
        "    - id: sess\n      http: {{url: \"{}\"}}\n      max_result_bytes: 1000\n",
        server.url("/mcp")
    );
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    let yaml = tools_yaml(&mcp, &format!("{}{store}", gateway(true)));
    let replicas = replicas(2, &yaml, Some(SESSION_KEY));
    let (a, b) = (&replicas[0], &replicas[1]);

    // A cuts the 5000-character echo to 1000 bytes and names the URI of the full result.
    let message = "0123456789".repeat(500);
    let (status, text) = harness::request(
        a.port(),
        "POST",
        "/tools/sess.echo/call",
        &[("X-API-Key", KEY), ("Content-Type", "application/json")],
        Some(&json!({ "message": message }).to_string()),
    )
    .expect("POST /tools/sess.echo/call");
    assert_eq!(status, 200, "{text}\n{}", a.log());
    let cut: Value = serde_json::from_str(&text).unwrap();
    let cut_text = cut["content"][0]["text"].as_str().expect(&text);
    assert!(cut_text.len() < 1200, "{cut_text}");
    let uri = cut_text
        .split("full result: ")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or_else(|| panic!("no URI in {cut_text}"));
    assert!(uri.starts_with("toolgate://results/sess/"), "{uri}");

    // B never made the call: it reads the full result from Redis. The write runs beside the
    // call, so it may land a moment after A's answer.
    let session = open_session(b.port(), KEY);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let read = loop {
        let read = rpc(b.port(), &session, "resources/read", json!({ "uri": uri }));
        if read.get("result").is_some() || std::time::Instant::now() > deadline {
            break read;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        read["result"]["contents"][0]["text"].as_str(),
        Some(message.as_str()),
        "{read}\n{}",
        b.log()
    );

    // A URI nobody cut is still not found, on either replica.
    let missing = rpc(
        b.port(),
        &session,
        "resources/read",
        json!({ "uri": "toolgate://results/sess/00000000000000000000000000000000" }),
    );
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
}
