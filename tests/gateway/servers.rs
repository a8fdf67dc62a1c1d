//! Virtual servers (`gateway.servers`) through `toolgate serve`: two servers over the same
//! sources (the built-in tools, server-everything and a fault server whose tool list changes),
//! each at its own MCP endpoint and REST prefix. Real clients (the official Python MCP SDK,
//! inspector-cli) see only each server's tools, under its names; calls work; a tool outside a
//! server is `not_found` there; a caller without the server's role gets 403; and a change of
//! the tool list is told only to the sessions whose server lists the changed tools.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::harness::{self, Served, peers};
use crate::inspector::inspector;
use crate::mcp_http::fault_entry;

const OPS: &str = "ops-key-servers-0123";
const READER: &str = "reader-key-servers-4567";

/// `math`: two built-ins under the prefix `m_`, for readers; `remote`: the fault server's tools
/// and server-everything's `echo`, for ops.
fn served() -> Served {
    let mcp = format!(
        "{}{}",
        fault_entry("faulty", "list_changed", &[]),
        harness::everything_stdio_entry("everything", "")
    );
    let gateway = r#"gateway:
  api_keys:
    - {name: ops, key: "${TG_OPS}", roles: [ops, reader]}
    - {name: reader, key: "${TG_READER}", roles: [reader]}
  servers:
    - id: math
      title: Math only
      instructions: Arithmetic and the clock, nothing else.
      tools: {include: [{name: calc}, {name: "current_*"}]}
      roles: [reader]
      prefix: m_
    - id: remote
      tools:
        include: [{source: faulty}, {source: everything, name: "everything.echo"}]
      roles: [ops]
"#;
    harness::serve_with_env(
        &harness::tools_yaml(&mcp, gateway),
        &[],
        &[("TG_OPS", OPS), ("TG_READER", READER)],
    )
}

/// Runs the Python SDK client (`runtime/tests/peers/py_servers_client.py`) with `plan`.
fn python_client(served: &Served, plan: &Value) -> Value {
    let script = peers::test_peers_dir().join("py_servers_client.py");
    let mut child = Command::new("timeout")
        .arg("120")
        .arg(peers::venv_python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(plan.to_string().as_bytes())
        .expect("write the plan");
    let out = child.wait_with_output().expect("the Python client ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed ({}):\n{stdout}\n{stderr}\n{}",
        out.status,
        served.log()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn sorted(names: &Value) -> Vec<String> {
    let mut names: Vec<String> = names
        .as_array()
        .unwrap_or_else(|| panic!("no names: {names}"))
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[test]
fn each_virtual_server_shows_calls_and_notifies_only_its_own_tools_to_the_python_sdk() {
    let served = served();
    let plan = json!({
        "key": OPS,
        "sessions": {
            "math": served.url("/mcp/math"),
            "remote": served.url("/mcp/remote"),
            "default": served.url("/mcp"),
        },
        "calls": [
            {"session": "math", "name": "m_calc", "arguments": {"expression": "2*(3+4)"}},
            {"session": "math", "name": "calc", "arguments": {"expression": "1+1"}},
            {"session": "math", "name": "m_read_file", "arguments": {"path": "README.md"}},
            {"session": "remote", "name": "everything__echo", "arguments": {"message": "via remote"}},
            {"session": "remote", "name": "m_calc", "arguments": {"expression": "1+1"}},
            {"session": "default", "name": "calc", "arguments": {"expression": "1+2"}},
        ],
        // The fault server adds a tool: `remote` (which selects it) and the default server
        // are told; `math` is not.
        "change": {"session": "remote", "name": "faulty__add_tool", "arguments": {}},
        "expect_notified": ["remote", "default"],
        "quiet_s": 2,
    });
    let out = python_client(&served, &plan);
    let sessions = &out["sessions"];

    assert_eq!(
        sorted(&sessions["math"]["tools"]),
        ["m_calc", "m_current_time"],
        "{out}"
    );
    assert_eq!(sessions["math"]["server"]["name"], "math", "{out}");
    assert_eq!(sessions["math"]["server"]["title"], "Math only", "{out}");
    assert_eq!(
        sessions["math"]["instructions"], "Arithmetic and the clock, nothing else.",
        "{out}"
    );
    assert_eq!(
        sorted(&sessions["remote"]["tools"]),
        ["everything__echo", "faulty__a", "faulty__add_tool"],
        "{out}"
    );
    // The default server keeps showing everything, under the usual names.
    let default = sorted(&sessions["default"]["tools"]);
    for name in [
        "calc",
        "read_file",
        "everything__echo",
        "everything__get-sum",
        "faulty__a",
    ] {
        assert!(
            default.iter().any(|n| n == name),
            "{name} not on /mcp: {default:?}"
        );
    }
    assert_eq!(sessions["default"]["server"]["name"], "toolgate", "{out}");

    let calls = out["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["is_error"], false, "{out}");
    assert!(
        calls[0]["text"].as_str().unwrap_or("").contains("14"),
        "{out}"
    );
    for (i, why) in [
        (1, "the unprefixed name on a prefixed server"),
        (2, "a built-in the server does not select"),
        (4, "another server's tool"),
    ] {
        assert_eq!(calls[i]["is_error"], true, "{why}: {out}");
        assert_eq!(calls[i]["kind"], "not_found", "{why}: {out}");
    }
    assert_eq!(calls[3]["is_error"], false, "{out}");
    assert_eq!(calls[3]["text"], "Echo: via remote", "{out}");
    assert_eq!(calls[5]["is_error"], false, "{out}");

    assert_eq!(
        out["waited_out"],
        false,
        "no list_changed on remote or default: {out}\n{}",
        served.log()
    );
    assert_eq!(sessions["remote"]["notified"], true, "{out}");
    assert_eq!(sessions["default"]["notified"], true, "{out}");
    assert_eq!(
        sessions["math"]["notified"], false,
        "math lists none of the changed tools: {out}"
    );

    // Calls through a server are counted under its label.
    let (status, metrics) = harness::request(
        served.port(),
        "GET",
        "/metrics",
        &[("X-API-Key", OPS)],
        None,
    )
    .unwrap();
    assert_eq!(status, 200, "{metrics}");
    let counted = |server: &str, tool: &str, outcome: &str| {
        metrics.lines().any(|l| {
            l.starts_with("toolgate_server_calls_total{")
                && l.contains(&format!("server=\"{server}\""))
                && l.contains(&format!("tool=\"{tool}\""))
                && l.contains(&format!("outcome=\"{outcome}\""))
        })
    };
    assert!(counted("math", "calc", "ok"), "{metrics}");
    assert!(counted("remote", "everything.echo", "ok"), "{metrics}");
    assert!(counted("math", "calc", "not_found"), "{metrics}");
}

#[test]
fn inspector_cli_lists_and_calls_a_virtual_server() {
    let served = served();
    let auth = format!("Authorization: Bearer {OPS}");
    let url = served.url("/mcp/math");
    let pre = [
        url.as_str(),
        "--transport",
        "http",
        "--header",
        auth.as_str(),
    ];
    let list = inspector(&[&pre[..], &["--method", "tools/list"]].concat());
    assert_eq!(
        sorted(&json!(
            list["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(|t| t["name"].clone())
                .collect::<Vec<_>>()
        )),
        ["m_calc", "m_current_time"],
        "{list}"
    );
    let calc = inspector(
        &[
            &pre[..],
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "m_calc",
                "--tool-arg",
                "expression=2*(3+4)",
            ],
        ]
        .concat(),
    );
    assert_eq!(calc["structuredContent"]["value"], 14, "{calc}");
    let outside = inspector(
        &[
            &pre[..],
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "everything__echo",
                "--tool-arg",
                "message=x",
            ],
        ]
        .concat(),
    );
    assert_eq!(outside["isError"], true, "{outside}");
    assert_eq!(
        outside["_meta"]["toolgate/error"]["kind"], "not_found",
        "{outside}"
    );
}

#[test]
fn a_caller_without_a_servers_role_gets_403_on_each_of_its_routes() {
    let served = served();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mcp_headers = |key: &'static str| {
        [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("X-API-Key", key),
        ]
    };
    let (status, body) = harness::request(
        served.port(),
        "POST",
        "/mcp/remote",
        &mcp_headers(READER),
        Some(&initialize),
    )
    .unwrap();
    assert_eq!(status, 403, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(error["kind"], "permission_denied", "{body}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("server `remote` needs one of the roles `ops`"),
        "{body}"
    );
    for (method, path) in [
        ("GET", "/servers/remote/tools"),
        ("GET", "/servers/remote/tools/everything__echo"),
        ("POST", "/servers/remote/tools/everything__echo/call"),
        ("GET", "/servers/remote/sse"),
    ] {
        let (status, body) =
            harness::request(served.port(), method, path, &[("X-API-Key", READER)], None).unwrap();
        assert_eq!(status, 403, "{method} {path}: {body}");
    }
    // The reader's own server, and the ops caller on `remote`, are let in.
    let (status, body) = harness::request(
        served.port(),
        "POST",
        "/mcp/math",
        &mcp_headers(READER),
        Some(&initialize),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = harness::request(
        served.port(),
        "POST",
        "/mcp/remote",
        &mcp_headers(OPS),
        Some(&initialize),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    // An unknown server is a plain 404.
    let (status, _) = harness::request(
        served.port(),
        "GET",
        "/servers/nope/tools",
        &[("X-API-Key", OPS)],
        None,
    )
    .unwrap();
    assert_eq!(status, 404);
}

#[test]
fn rest_lists_describes_and_calls_under_a_servers_names() {
    let served = served();
    let get = |path: &str| {
        let (status, body) =
            harness::request(served.port(), "GET", path, &[("X-API-Key", READER)], None).unwrap();
        let value: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        (status, value)
    };
    let (status, list) = get("/servers/math/tools");
    assert_eq!(status, 200, "{list}");
    let names: Vec<(String, String)> = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("").to_string(),
                t["exported_name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("calc".to_string(), "m_calc".to_string()),
            ("current_time".to_string(), "m_current_time".to_string())
        ],
        "{list}"
    );
    let (status, tool) = get("/servers/math/tools/m_calc");
    assert_eq!(status, 200, "{tool}");
    assert_eq!(tool["name"], "calc", "{tool}");
    let (status, missing) = get("/servers/math/tools/read_file");
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["kind"], "not_found", "{missing}");

    let call = |path: &str, body: &str| {
        let (status, text) = harness::request(
            served.port(),
            "POST",
            path,
            &[("X-API-Key", READER), ("Content-Type", "application/json")],
            Some(body),
        )
        .unwrap();
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}")),
        )
    };
    let (status, out) = call(
        "/servers/math/tools/m_calc/call",
        r#"{"expression": "6*7"}"#,
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["value"], 42, "{out}");
    let (status, out) = call("/servers/math/tools/calc/call", r#"{"expression": "6*7"}"#);
    assert_eq!(status, 404, "the unprefixed name: {out}");
    assert_eq!(out["kind"], "not_found", "{out}");
    // The default REST routes are unchanged.
    let (status, out) = call("/tools/calc/call", r#"{"expression": "6*7"}"#);
    assert_eq!(status, 200, "{out}");

    // A REST call through a server is counted under its label, as an MCP call is; one on the
    // default routes is not.
    let (status, metrics) = harness::request(
        served.port(),
        "GET",
        "/metrics",
        &[("X-API-Key", OPS)],
        None,
    )
    .unwrap();
    assert_eq!(status, 200, "{metrics}");
    let counted: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("toolgate_server_calls_total{"))
        .collect();
    assert!(
        counted.iter().any(|l| l.contains("server=\"math\"")
            && l.contains("tool=\"calc\"")
            && l.contains("outcome=\"ok\"")
            && l.ends_with(" 1")),
        "{counted:?}"
    );
    assert_eq!(counted.len(), 1, "{counted:?}");
}
