//! Policy as code through `toolgate serve` with API keys: a Rego rule and a CEL rule each keep a
//! tool for admins (hidden from a reader's REST and MCP listings, refused over both with the
//! policy's reason), a CEL rule on an argument refuses `fetch` to `*.internal` hosts, a policy
//! with a syntax error stops `toolgate check` and `toolgate serve` naming tools.yaml's line, and
//! a runaway Rego policy is stopped by its time limit while the gateway goes on serving.

use std::process::Command;

use serde_json::{Value, json};
use toolgate::ErrorKind;
use toolgate::Toolset;

use crate::harness::{BIN, Served, request, serve_with_env, tools_yaml};

pub(crate) const READER: &str = "reader-key-0123";
pub(crate) const ADMIN: &str = "admin-key-4567";
pub(crate) const KEYS: &[(&str, &str)] = &[("TG_READER", READER), ("TG_ADMIN", ADMIN)];

/// The repository's tools.yaml with `rules` as `policy.rules` and two API keys (`reader` with
/// role reader, `admin` with role admin).
pub(crate) fn yaml(rules: &str) -> String {
    let keys = "gateway:\n  api_keys:\n    - {name: reader, key: \"${TG_READER}\", roles: [reader]}\n    - {name: admin, key: \"${TG_ADMIN}\", roles: [admin]}\n";
    let base = tools_yaml("", keys);
    let old = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(old), "tools.yaml's policy section moved");
    base.replace(old, &format!("{old}  rules:\n{rules}"))
}

const RULES: &str = r#"    - tools: [calc]
      reason: calc is for admins
      rego: |
        package toolgate.calc
        import rego.v1
        default allow := false
        allow if "admin" in input.caller.roles
    - {tools: [jq], cel: "'admin' in caller.roles", reason: jq is for admins}
    - tools: [fetch]
      cel: "!url_host(arguments.url).endsWith('.internal')"
      reason: internal hosts are off limits
"#;

pub(crate) fn call(
    served: &Served,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let bearer = format!("Bearer {key}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = body.map(|b| b.to_string());
    let (status, text) = request(served.port(), method, path, &headers, body.as_deref())
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {path}: {status} {text:?} is not JSON: {e}"));
    (status, value)
}

pub(crate) fn listed(served: &Served, key: &str) -> Vec<String> {
    let (status, body) = call(served, "GET", "/tools", key, None);
    assert_eq!(status, 200, "{body}");
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) async fn mcp_client(served: &Served, key: &str) -> Toolset {
    let bearer = format!("Bearer {key}");
    crate::harness::mcp_client_at(served, "/mcp", &[("Authorization", bearer.as_str())])
        .await
        .1
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn rego_and_cel_rules_hide_and_refuse_tools_over_rest_and_mcp() {
    let served = serve_with_env(&yaml(RULES), &[], KEYS);
    let reader = listed(&served, READER);
    for hidden in ["calc", "jq"] {
        assert!(
            !reader.contains(&hidden.to_string()),
            "{hidden} listed: {reader:?}"
        );
    }
    // The argument rule cannot be decided without the arguments: fetch stays listed.
    assert!(reader.contains(&"fetch".to_string()), "{reader:?}");
    let admin = listed(&served, ADMIN);
    assert!(
        admin.contains(&"calc".to_string()) && admin.contains(&"jq".to_string()),
        "{admin:?}"
    );

    let (status, body) = call(
        &served,
        "POST",
        "/tools/calc/call",
        READER,
        Some(json!({"expression": "1+2"})),
    );
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("permission_denied")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("tool `calc`: calc is for admins (rule 1 of policy.rules (Rego))"),
        "{message}"
    );
    let (status, body) = call(
        &served,
        "POST",
        "/tools/jq/call",
        READER,
        Some(json!({"filter": ".", "input": "{}"})),
    );
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("permission_denied")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("jq is for admins (rule 2 of policy.rules (CEL))"),
        "{body}"
    );
    let (status, body) = call(
        &served,
        "POST",
        "/tools/calc/call",
        ADMIN,
        Some(json!({"expression": "1+2"})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &served,
        "POST",
        "/tools/fetch/call",
        ADMIN,
        Some(json!({"url": "http://db.corp.internal/x"})),
    );
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("policy_denied")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("internal hosts are off limits (rule 3 of policy.rules (CEL))"),
        "{body}"
    );

    runtime().block_on(async {
        let tools = mcp_client(&served, READER).await;
        let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
        assert!(names.iter().any(|n| n == "gw.fetch"), "{names:?}");
        assert!(
            !names.iter().any(|n| n == "gw.calc" || n == "gw.jq"),
            "{names:?}"
        );
        let e = tools
            .call("gw.fetch", json!({"url": "https://a.internal/"}))
            .await
            .unwrap_err();
        assert!(
            e.message().contains("internal hosts are off limits"),
            "{e:?}"
        );
        tools.close().await;
        let tools = mcp_client(&served, ADMIN).await;
        tools
            .call("gw.calc", json!({"expression": "2*3"}))
            .await
            .expect("an admin calls calc");
        let e = tools
            .call("gw.fetch", json!({"url": "https://a.internal/"}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::PolicyDenied | ErrorKind::Upstream | ErrorKind::Internal
            ) && e.message().contains("internal hosts are off limits"),
            "{e:?}"
        );
        tools.close().await;
    });
}

#[test]
fn a_policy_with_a_syntax_error_stops_check_and_serve_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    let broken = "    - tools: [calc]\n      rego: |\n        package toolgate\n        allow if {\n          input.caller.roles[_] ==\n        }\n";
    let text = yaml(broken);
    // The error is on the policy's 4th line (`}`): tools.yaml's 4th line after `rego: |`.
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("rego: |"))
        .unwrap()
        + 1
        + 4;
    std::fs::write(&config, &text).unwrap();
    let config = config.display().to_string();
    for args in [
        vec!["check", config.as_str()],
        vec![
            "--config",
            config.as_str(),
            "serve",
            "--http",
            "127.0.0.1:0",
        ],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .env("TG_READER", READER)
            .env("TG_ADMIN", ADMIN)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains(&format!("tools.yaml:{line}:9: ")),
            "{args:?}: not at {line}:9: {stderr}"
        );
        assert!(
            stderr.contains(
                "the Rego policy does not compile: line 4, column 1: expecting expression"
            ),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_runaway_rego_policy_is_stopped_by_its_time_limit_and_the_gateway_goes_on() {
    let runaway = "    - tools: [calc]\n      timeout_ms: 50\n      rego: |\n        package toolgate\n        import rego.v1\n        r := numbers.range(1, 100000)\n        allow if count([x | some x in r; some y in r; x < y]) > 0\n";
    let served = serve_with_env(&yaml(runaway), &[], KEYS);
    let (status, body) = call(
        &served,
        "POST",
        "/tools/calc/call",
        ADMIN,
        Some(json!({"expression": "1+2"})),
    );
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("permission_denied")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("rule 1 of policy.rules (Rego) could not decide")
            && message.contains("execution exceeded time limit"),
        "{message}"
    );
    // The gateway is unaffected: other tools answer, and so does the health check.
    let (status, body) = call(
        &served,
        "POST",
        "/tools/current_time/call",
        READER,
        Some(json!({})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = crate::harness::get(served.port(), "/healthz", &[]).unwrap();
    assert_eq!(status, 200);
}
