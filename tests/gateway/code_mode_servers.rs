//! Code mode on virtual servers (`gateway.servers`, docs/code-mode.md) through `toolgate
//! serve`: code run by `run_python` through a server is held to what a direct call through the
//! server is. A tool the server does not select raises inside Python with the server's
//! `not_found` (over REST and MCP), one it selects is called, `describe_code_api` describes only
//! the server's tools, and the server's `pii` guardrail masks what the code's calls return.
//! Outside any server the same code reaches every tool, unmasked.

use serde_json::{Value, json};

use crate::harness::{self, Served, serve, tools_yaml};
use crate::mcp_http::runtime;

/// The repository's tools.yaml with guardrail `pii` (masking) and two servers: `math` (calc
/// and the code-mode tools) and `masked` (jq and the code-mode tools, behind `pii`).
fn yaml() -> String {
    let gateway = "gateway:\n  code_mode:\n    enabled: true\n    limits: {time_ms: 5000, tool_calls: 20}\n  servers:\n    - id: math\n      tools: {include: [{name: calc}, {source: code_mode}]}\n    - id: masked\n      tools: {include: [{name: jq}, {source: code_mode}]}\n      guardrails: [pii]\n";
    let base = tools_yaml("", gateway);
    let own = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(own), "tools.yaml's policy section moved");
    base.replacen(
        own,
        &format!("{own}  guardrails:\n    pii:\n      mask: {{}}\n"),
        1,
    )
}

/// `POST {path}` with `body`: (status, JSON body).
fn post(served: &Served, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = harness::request(
        served.port(),
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(&body.to_string()),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, value)
}

/// `run_python` with `code` at `{prefix}/tools/run_python/call` (`""` outside any server).
fn run(served: &Served, prefix: &str, code: &str) -> (u16, Value) {
    post(
        served,
        &format!("{prefix}/tools/run_python/call"),
        &json!({ "code": code }),
    )
}

/// The tools `describe_code_api` describes at `prefix`.
fn described(served: &Served, prefix: &str) -> Vec<String> {
    let (status, out) = post(
        served,
        &format!("{prefix}/tools/describe_code_api/call"),
        &json!({}),
    );
    assert_eq!(status, 200, "{out}");
    serde_json::from_value(out["structuredContent"]["tools"].clone())
        .unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Reads a file of the repository from code.
const READ: &str = "tools.read_file(path='Cargo.toml')['text'][:9]";

#[test]
fn code_on_a_server_calls_only_the_tools_the_server_selects() {
    let served = serve(&yaml(), &[]);
    // A direct call of a tool the server does not select is refused ...
    let (status, out) = post(
        &served,
        "/servers/math/tools/read_file/call",
        &json!({"path": "Cargo.toml"}),
    );
    assert_eq!(status, 404, "{out}");
    // ... and so is the same call from code run through the server, by either spelling.
    for code in [READ, "call_tool('read_file', {'path': 'Cargo.toml'})"] {
        let (status, out) = run(&served, "/servers/math", code);
        assert_eq!(status, 422, "{code}: {out}");
        let sandbox = &out["details"]["sandbox"];
        assert_eq!(sandbox["exception"], "LookupError", "{code}: {out}");
        assert!(
            sandbox["message"]
                .as_str()
                .unwrap_or_default()
                .contains("no tool `read_file` on server `math`"),
            "{code}: {out}"
        );
    }
    // A tool the server selects is called from code.
    let (status, out) = run(&served, "/servers/math", "tools.calc(expression='6 * 7')");
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["result"]["value"], 42, "{out}");
    // The code is told only of the server's tools.
    assert_eq!(described(&served, "/servers/math"), ["calc"]);

    // Outside any server the same code reads the file, and every tool is described.
    let (status, out) = run(&served, "", READ);
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["result"], "[workspac", "{out}");
    let everywhere = described(&served, "");
    assert!(
        ["calc", "jq", "read_file"]
            .iter()
            .all(|t| everywhere.iter().any(|d| d == t)),
        "{everywhere:?}"
    );

    // Over the server's MCP endpoint too.
    runtime().block_on(async {
        let math = harness::mcp_client_at(&served, "/mcp/math", &[]).await.1;
        let refused = math.call("gw.run_python", json!({"code": READ})).await;
        let text = match refused {
            Ok(out) => {
                assert!(out.is_error, "{out:?}");
                out.text_joined()
            }
            Err(e) => e.to_string(),
        };
        assert!(
            text.contains("no tool `read_file` on server `math`"),
            "{text}"
        );
    });
}

/// Code whose one call returns an email address (built in Python: the code itself holds
/// none, as the server's `pii` masks the `run_python` arguments too), the answer written so
/// that no mask of the run's own result can recognize it.
const LEAK: &str =
    "str(tools.jq(filter='.', input='ann.smith' + chr(64) + 'example.org')).replace('@', ' at ')";

#[test]
fn code_on_a_server_gets_results_through_the_servers_guardrails() {
    let served = serve(&yaml(), &[]);
    // The guardrail masks a direct call through the server.
    let (status, out) = post(
        &served,
        "/servers/masked/tools/jq/call",
        &json!({"filter": ".", "input": "the address is ann.smith@example.org"}),
    );
    assert_eq!(status, 200, "{out}");
    assert!(!out.to_string().contains("ann.smith"), "{out}");

    // And the calls made by code run through the server.
    let (status, out) = run(&served, "/servers/masked", LEAK);
    assert_eq!(status, 200, "{out}");
    let result = out["structuredContent"]["result"]
        .as_str()
        .unwrap_or_default();
    assert!(
        result.contains("[email]") && !result.contains("ann.smith"),
        "{out}"
    );

    // Outside any server the code gets the address as it is.
    let (status, out) = run(&served, "", LEAK);
    assert_eq!(status, 200, "{out}");
    let result = out["structuredContent"]["result"]
        .as_str()
        .unwrap_or_default();
    assert!(result.contains("ann.smith at example.org"), "{out}");

    // Over the server's MCP endpoint too.
    runtime().block_on(async {
        let masked = harness::mcp_client_at(&served, "/mcp/masked", &[]).await.1;
        let out = masked
            .call("gw.run_python", json!({"code": LEAK}))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
        let text = out.structured.map(|s| s.to_string()).unwrap_or_default();
        assert!(
            text.contains("[email]") && !text.contains("ann.smith"),
            "{text}"
        );
    });
}
