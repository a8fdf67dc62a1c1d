//! MCP over streamable HTTP through `toolgate serve`, with toolgate's own MCP client (the
//! runtime's `McpBackend`) on the other side: pagination, progress and cancellation relayed both
//! ways, `notifications/tools/list_changed` when a server behind the gateway changes its tools,
//! every content part and `structuredContent` passed through, failures as `isError` results
//!, protocol-version negotiation, API keys.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::{Content, ErrorKind, ProgressReporter, ToolContext, Toolset};

use crate::harness::{self, Served, peers};

/// A fault_server.py (runtime/tests/peers) in `mode` as a tools.yaml `mcp` entry `id`.
pub(crate) fn fault_entry(id: &str, mode: &str, env: &[(&str, &str)]) -> String {
    let mut entry = format!(
        "    - id: {id}\n      stdio:\n        command: {}\n        args: [\"{}\", {mode}]\n",
        peers::python3().display(),
        peers::fault_server_py().display()
    );
    if !env.is_empty() {
        entry.push_str("        env:\n");
        for (k, v) in env {
            entry.push_str(&format!("          {k}: \"{v}\"\n"));
        }
    }
    entry
}

/// A toolset whose one source is the gateway at `served`, as MCP source `gw`.
pub(crate) async fn client(served: &Served, headers: &[(&str, &str)]) -> Toolset {
    harness::mcp_client_at(served, "/mcp", headers).await.1
}

/// A multi-threaded Tokio runtime for one test.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn built_in_and_remote_tools_are_listed_and_called_with_every_part_kept() {
    let mcp = [
        harness::everything_stdio_entry("everything", ""),
        fault_entry("faulty", "results", &[]),
    ]
    .concat();
    let served = harness::serve(&harness::tools_yaml(&mcp, "gateway: {page_size: 5}"), &[]);
    runtime().block_on(async {
        let tools = client(&served, &[]).await;
        // Pages of 5 were followed: every tool arrived.
        let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
        for want in [
            "gw.calc",
            "gw.everything__echo",
            "gw.faulty__multi",
            "gw.faulty__structured",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        assert!(names.len() > 20, "{names:?}");

        let out = tools
            .call("gw.calc", json!({"expression": "6*7"}))
            .await
            .unwrap();
        assert_eq!(out.structured.as_ref().unwrap()["value"], 42);

        // Text, image, resource, audio, in order.
        let out = tools.call("gw.faulty__multi", json!({})).await.unwrap();
        let kinds: Vec<&str> = out
            .content
            .iter()
            .map(|c| match c {
                Content::Text { .. } => "text",
                Content::Image { .. } => "image",
                Content::Audio { .. } => "audio",
                Content::Resource { .. } => "resource",
                Content::ResourceLink { .. } => "link",
            })
            .collect();
        assert_eq!(kinds, ["text", "image", "resource", "audio"], "{out:?}");

        // structuredContent passed through, mirrored as text.
        let out = tools
            .call("gw.faulty__structured", json!({}))
            .await
            .unwrap();
        assert_eq!(
            out.structured,
            Some(json!({"status": "available", "count": 3}))
        );
        assert!(!out.content.is_empty(), "{out:?}");

        // An application error behind the gateway is an isError result on the wire,
        // which toolgate's client reads as an `upstream` error with the text.
        let e = tools
            .call("gw.faulty__app_error", json!({}))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream, "{e:?}");
        assert!(e.message().contains("table not found"), "{e:?}");

        // A gateway-side failure (bad arguments) is an isError result too, with the kind in
        // `_meta["toolgate/error"]`.
        let e = tools
            .call("gw.calc", json!({"expresion": "1"}))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream, "{e:?}");
        assert!(e.message().contains("invalid_arguments"), "{e:?}");
        tools.close().await;
    });
}

#[test]
fn progress_is_relayed_and_cancellation_reaches_the_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let cancel_log = dir.path().join("cancelled.jsonl");
    let log = cancel_log.display().to_string();
    let mcp = [
        harness::everything_stdio_entry("everything", ""),
        fault_entry("faulty", "hang", &[("FAULT_LOG", &log)]),
    ]
    .concat();
    let served = harness::serve(&harness::tools_yaml(&mcp, ""), &[]);
    runtime().block_on(async {
        let tools = client(&served, &[]).await;
        // Every step's report arrives, the last one too, before the call's result: three
        // calls in a row (the server reports its last step just before it answers, so a relay
        // that raced the result lost it in most calls).
        for round in 0..3 {
            let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let seen = reports.clone();
            let ctx = ToolContext::builder()
                .timeout(Duration::from_secs(30))
                .progress(ProgressReporter::new(move |p| {
                    seen.lock().unwrap().push(p.progress)
                }))
                .build();
            tools
                .call_with(
                    "gw.everything__trigger-long-running-operation",
                    json!({"duration": 1, "steps": 4}),
                    ctx,
                )
                .await
                .unwrap();
            let got = reports.lock().unwrap().clone();
            assert_eq!(got, [1.0, 2.0, 3.0, 4.0], "call {round}: progress relayed");
        }

        // The client gives up after 1 s: the gateway cancels its call to the server behind it.
        let ctx = ToolContext::builder()
            .timeout(Duration::from_secs(1))
            .build();
        let e = tools
            .call_with("gw.faulty__hang", json!({}), ctx)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let cancelled = loop {
            let text = std::fs::read_to_string(&cancel_log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains("notifications/cancelled")) {
                break serde_json::from_str::<serde_json::Value>(line).unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "the server behind the gateway never got notifications/cancelled\n{}",
                served.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(cancelled["params"]["requestId"].is_number(), "{cancelled}");
        tools.close().await;
    });
}

#[test]
fn every_progress_notification_comes_before_the_result_on_the_requests_stream() {
    // A tool whose last progress report comes just before its result (server-everything's
    // long-running operation, 3 steps in 0.3 s): the answer to a tools/call with a
    // progressToken is one event stream, and all three notifications must be in it, in order,
    // ahead of the result. A relay racing the result lost the last one in most calls (it went
    // to the session's other stream, after the result, or nowhere).
    let served = harness::serve(
        &harness::tools_yaml(&harness::everything_stdio_entry("everything", ""), ""),
        &[],
    );
    runtime().block_on(async {
        let http = crate::mcp_errors::McpHttp::initialize(&served).await;
        for round in 0..10 {
            let token = format!("p{round}");
            let call = json!({"jsonrpc": "2.0", "id": 100 + round, "method": "tools/call",
                "params": {"name": "everything__trigger-long-running-operation",
                    "arguments": {"duration": 0.3, "steps": 3},
                    "_meta": {"progressToken": token}}});
            let (status, kind, body) = http.post(&call.to_string()).await;
            assert_eq!(status, 200, "{body}");
            assert!(kind.starts_with("text/event-stream"), "{kind}: {body}");
            let messages: Vec<serde_json::Value> = body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect();
            let order: Vec<String> = messages
                .iter()
                .map(|m| match m["method"].as_str() {
                    Some("notifications/progress") => {
                        assert_eq!(m["params"]["progressToken"], token, "{m}");
                        format!(
                            "progress {}",
                            m["params"]["progress"].as_f64().unwrap_or(-1.0)
                        )
                    }
                    Some(other) => other.to_string(),
                    None => "result".to_string(),
                })
                .collect();
            assert_eq!(
                order,
                ["progress 1", "progress 2", "progress 3", "result"],
                "call {round}: {body}"
            );
        }
    });
}

#[test]
fn a_walk_through_pages_goes_on_across_a_change_of_the_tool_list() {
    // Pages of one tool; a walk is half done when the server behind the gateway adds a tool.
    // The walk goes on from the tool its cursor names: every tool listed before the change
    // is in it exactly once (a cursor that was a position skipped or repeated tools here), and
    // listing again from the start shows the new tool. A made-up cursor is -32602.
    let served = harness::serve(
        &harness::tools_yaml(
            &fault_entry("faulty", "list_changed", &[]),
            "gateway: {page_size: 1}",
        ),
        &[],
    );
    runtime().block_on(async {
        let http = crate::mcp_errors::McpHttp::initialize(&served).await;
        let list = |id: u64, cursor: Option<&str>| {
            let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
                .to_string()
        };
        // One whole walk: the names in order.
        let walk = async |first_id: u64, from: Option<String>| -> Vec<String> {
            let mut names = Vec::new();
            let mut cursor = from;
            for id in first_id.. {
                let page = http.answer(&list(id, cursor.as_deref())).await;
                let tools = page["result"]["tools"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{page}"));
                assert_eq!(tools.len(), 1, "{page}");
                names.push(tools[0]["name"].as_str().unwrap_or_default().to_string());
                match page["result"]["nextCursor"].as_str() {
                    Some(c) => cursor = Some(c.to_string()),
                    None => break,
                }
            }
            names
        };
        let before = walk(1_000, None).await;
        let first = http.answer(&list(1, None)).await;
        let cursor = first["result"]["nextCursor"]
            .as_str()
            .unwrap_or_else(|| panic!("a second page: {first}"))
            .to_string();

        let made_up = http.answer(&list(2, Some("0.calc"))).await;
        assert_eq!(made_up["error"]["code"], -32602, "{made_up}");

        let add = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "faulty__add_tool", "arguments": {}}});
        let added = http.answer(&add.to_string()).await;
        assert!(added["result"].is_object(), "{added}");
        let deadline = Instant::now() + Duration::from_secs(15);
        let after = loop {
            let now = walk(2_000, None).await;
            if now.iter().any(|n| n == "faulty__b") {
                break now;
            }
            assert!(
                Instant::now() < deadline,
                "faulty__b never listed: {now:?}\n{}",
                served.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // The walk begun before the change, finished after it.
        let mut resumed = vec![
            first["result"]["tools"][0]["name"]
                .as_str()
                .unwrap()
                .to_string(),
        ];
        resumed.extend(walk(3_000, Some(cursor)).await);
        let mut unique = resumed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), resumed.len(), "a tool twice: {resumed:?}");
        for name in &before {
            assert!(
                resumed.contains(name),
                "{name} skipped: {resumed:?} (before: {before:?})"
            );
        }
        assert!(
            resumed.iter().all(|n| after.contains(n)),
            "{resumed:?} vs {after:?}"
        );
    });
}

#[test]
fn a_server_changing_its_tools_reaches_the_gateways_clients_as_list_changed() {
    let served = harness::serve(
        &harness::tools_yaml(&fault_entry("faulty", "list_changed", &[]), ""),
        &[],
    );
    runtime().block_on(async {
        let tools = client(&served, &[]).await;
        assert!(tools.describe("gw.faulty__b").is_none());
        tools.call("gw.faulty__add_tool", json!({})).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        while tools.describe("gw.faulty__b").is_none() {
            assert!(
                Instant::now() < deadline,
                "gw.faulty__b never appeared: {:?}\n{}",
                tools
                    .tools()
                    .iter()
                    .map(|d| d.name.clone())
                    .collect::<Vec<_>>(),
                served.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tools.close().await;
    });
}

/// Protocol versions, server side: the gateway echoes a version it supports, and answers an unknown one with
/// its newest.
#[test]
fn the_clients_protocol_version_is_echoed_when_supported() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    let init = |version: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string();
        let (status, text) = harness::request(
            served.port(),
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            Some(&body),
        )
        .unwrap();
        assert_eq!(status, 200, "{text}");
        let data = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .find(|l| l.contains("protocolVersion"))
            .unwrap_or_else(|| panic!("no initialize result: {text}"));
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["result"]["serverInfo"]["name"], "toolgate", "{v}");
        v["result"]["protocolVersion"].as_str().unwrap().to_string()
    };
    assert_eq!(init("2025-06-18"), "2025-06-18");
    assert_eq!(init("2024-11-05"), "2024-11-05");
    let newest = init("2099-01-01");
    assert!(newest.as_str() >= "2025-06-18", "{newest}");
}

#[test]
fn api_keys_guard_mcp_and_the_callers_roles_reach_the_call() {
    let extra =
        "gateway:\n  api_keys:\n    - {name: ci, key: \"${TOOLGATE_TEST_KEY}\", roles: [reader]}\n";
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    std::fs::write(&config, harness::tools_yaml("", extra)).unwrap();
    let config = config.display().to_string();
    let process = peers::spawn_http_peer_retry(
        harness::BIN,
        &["--config", &config, "serve", "--http", "127.0.0.1:{port}"],
        &[("TOOLGATE_TEST_KEY", "s3cret-key")],
    );
    let served = Served { process, dir };
    let (status, body) = harness::request(
        served.port(),
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        Some("{}"),
    )
    .unwrap();
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("s3cret-key"));
    runtime().block_on(async {
        let tools = client(&served, &[("Authorization", "Bearer s3cret-key")]).await;
        let out = tools
            .call("gw.calc", json!({"expression": "1+1"}))
            .await
            .unwrap();
        assert_eq!(out.structured.unwrap()["value"], 2);
        tools.close().await;
    });
}

/// SIGTERM: a call in flight finishes within the grace period, the process exits 0, and the
/// server behind the gateway is gone with it; a call that would outlast the grace period is
/// cancelled (and its server told so) instead of holding the exit.
#[test]
fn sigterm_lets_calls_in_flight_finish_within_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let cancel_log = dir.path().join("cancelled.jsonl");
    let log = cancel_log.display().to_string();
    let mcp = [
        harness::everything_stdio_entry("everything", ""),
        fault_entry("faulty", "hang", &[("FAULT_LOG", &log)]),
    ]
    .concat();
    let mut served = harness::serve(
        &harness::tools_yaml(&mcp, "gateway: {shutdown_grace_ms: 3000}"),
        &[],
    );
    let pid = served.process.pid();
    runtime().block_on(async {
        let tools = client(&served, &[]).await;
        let slow = tools.call(
            "gw.everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
        );
        let stuck = tools.call("gw.faulty__hang", json!({}));
        let term = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let status = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        };
        let started = Instant::now();
        let (slow, stuck, ()) = tokio::join!(slow, stuck, term);
        let slow = slow.unwrap_or_else(|e| panic!("the call in flight was cut off: {e:?}"));
        assert!(!slow.is_error, "{slow:?}");
        let e = stuck.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "the stuck call held the shutdown for {:?}: {e:?}",
            started.elapsed()
        );
        tools.close().await;
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = served.process.exit_status() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "toolgate serve did not exit within 10 s of SIGTERM\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status}\n{}", served.log());
    let text = std::fs::read_to_string(&cancel_log).unwrap_or_default();
    assert!(
        text.contains("notifications/cancelled"),
        "the server behind the gateway was not told the stuck call was cancelled\n{}",
        served.log()
    );
}

/// Two servers mounted without prefix that offer the same tool names: the gateway names the
/// conflict and exits 3 instead of serving a toolset where a name is ambiguous.
#[test]
fn two_unprefixed_servers_with_one_tool_name_stop_the_gateway() {
    let mcp = [
        harness::everything_stdio_entry("one", "prefix: false"),
        harness::everything_stdio_entry("two", "prefix: false"),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    std::fs::write(&config, harness::tools_yaml(&mcp, "")).unwrap();
    let out = std::process::Command::new("timeout")
        .args(["60", harness::BIN, "--config"])
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("tool `echo` is offered by source `one` and by source `two`"),
        "{stderr}"
    );
}

/// With API keys, an `/mcp` session belongs to the key that opened it: another key cannot use
/// its id. And a result cut to the size limit is stored under an id nobody can guess.
#[test]
fn sessions_and_stored_results_belong_to_their_caller() {
    let extra = "gateway:\n  api_keys:\n    - {name: alice, key: \"alice-key-123\"}\n    - {name: bob, key: \"bob-key-456\"}\n";
    let served = harness::serve(&harness::tools_yaml("", extra), &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let post = |key: &str, session: Option<&str>, body: &str| {
        let auth = format!("Bearer {key}");
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", auth.as_str()),
        ];
        if let Some(s) = session {
            headers.push(("Mcp-Session-Id", s));
        }
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", served.port())).unwrap();
        use std::io::{Read, Write};
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in &headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut raw = Vec::new();
        // An SSE answer stays open: read what arrives within the timeout.
        let _ = stream.read_to_end(&mut raw);
        String::from_utf8_lossy(&raw).into_owned()
    };
    let answer = post("alice-key-123", None, &init);
    let session = answer
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(|_| l["mcp-session-id: ".len()..].trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {answer}"));
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let bob = post("bob-key-456", Some(&session), &ping);
    assert!(bob.starts_with("HTTP/1.1 403"), "{bob}");
    let alice = post("alice-key-123", Some(&session), &ping);
    assert!(
        alice.starts_with("HTTP/1.1 200") || alice.starts_with("HTTP/1.1 202"),
        "{alice}"
    );
}
