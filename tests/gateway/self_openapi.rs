//! The gateway's own REST API, described by its `/openapi.json`, consumed by a second toolgate
//! as an OpenAPI source loaded at run time (issue #7's "toolgate can consume that document as
//! an OpenAPI source"): every operation becomes a tool, and `gw.call_calc` (the first
//! gateway's operation for its tool `calc`) calls it through the second one.

use serde_json::{Value, json};

use crate::harness::{request, serve, tools_yaml};

/// The repository's tools.yaml with an `openapi` entry for the gateway on `port`.
fn consumer_yaml(port: u16) -> String {
    let base = tools_yaml("", "");
    let entry = format!(
        "tools:\n  openapi:\n    - id: gw\n      spec: http://127.0.0.1:{port}/openapi.json\n      load: runtime\n      allow_private: true\n"
    );
    assert!(
        base.contains("\ntools:\n"),
        "tools.yaml has a `tools:` line"
    );
    base.replacen("\ntools:\n", &format!("\n{entry}"), 1)
}

fn post(port: u16, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = request(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(&body.to_string()),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, value)
}

#[test]
fn a_toolgate_calls_the_gateways_tools_through_its_openapi_document() {
    let first = serve(&tools_yaml("", ""), &[]);
    let second = serve(&consumer_yaml(first.port()), &[]);

    // Every operation of /openapi.json became a tool of the `gw` source.
    let (status, text) = request(second.port(), "GET", "/tools?source=gw", &[], None)
        .unwrap_or_else(|e| panic!("GET /tools: {e}\n{}", second.log()));
    assert_eq!(status, 200, "{text}\n{}", second.log());
    let listed: Value = serde_json::from_str(&text).expect("JSON");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .or_else(|| listed.as_array())
        .unwrap_or_else(|| panic!("a tool list: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for op in [
        "listTools",
        "getTool",
        "call_calc",
        "call_jq",
        "listSources",
        "getHealth",
    ] {
        assert!(
            names.contains(&format!("gw.{op}").as_str()),
            "gw.{op} missing from {names:?}\n{}",
            second.log()
        );
    }

    // The first gateway's calc, called through the second one's OpenAPI tool.
    let (status, out) = post(
        second.port(),
        "/tools/gw.call_calc/call",
        &json!({"expression": "2+3"}),
    );
    assert_eq!(status, 200, "{out}\n{}", second.log());
    assert_eq!(out["isError"], json!(null), "{out}");
    // The second gateway's structured result is the first one's ToolOutput JSON.
    assert_eq!(
        out["structuredContent"]["structuredContent"],
        json!({"expression": "2+3", "value": 5}),
        "the first gateway's ToolOutput for 2+3: {out}"
    );

    // A failure of the first gateway comes back as a ToolError of the second, with the status.
    let (status, err) = post(
        second.port(),
        "/tools/gw.getTool/call",
        &json!({"name": "no_such_tool"}),
    );
    assert_ne!(status, 200, "{err}");
    assert!(
        err["message"].as_str().unwrap_or_default().contains("404"),
        "the first gateway's 404 named: {err}"
    );
}
