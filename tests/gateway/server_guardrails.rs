//! Guardrails of virtual servers (`gateway.servers[].guardrails`) through `toolgate serve`, in
//! front of runtime/tests/peers/guard_server.py (an MCP server on the Python SDK whose results
//! hold personal data and secrets, and which records every call it gets). The same tools are
//! called through two servers, one naming a masking and a deny guardrail and one naming none:
//! over MCP and REST, the first returns masked results and refuses what its deny rule matches,
//! the second returns the raw value, and a tool's own guardrail holds on both. A server naming
//! a guardrail that does not exist stops `toolgate check` and `toolgate serve` at its line; a
//! policy reload (SIGHUP) changes a server's guardrail, and one that drops it is refused.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::Toolset;

use crate::harness::{self, Served, peers};
use crate::mcp_http::runtime;

const RAW: &str = "customer ann.smith@example.org paid with 4111 1111 1111 1111 \
                   (order 4111111111111121), deploy key AKIAIOSFODNN7EXAMPLE";
const MASKED: &str =
    "customer [email] paid with [card] (order 4111111111111121), deploy key [aws_access_key]";

/// The repository's tools.yaml with guard_server.py as source `guard` (recording its calls in
/// `calls`), `policy` lines added under `policy:`, and `gateway` as the gateway section.
fn yaml(calls: &Path, policy: &str, gateway: &str) -> String {
    let script = peers::test_peers_dir().join("guard_server.py");
    let mcp = format!(
        "    - id: guard\n      stdio:\n        command: {}\n        args: [\"{}\", \"{}\"]\n",
        peers::venv_python().display(),
        script.display(),
        calls.display()
    );
    let base = harness::tools_yaml(&mcp, gateway);
    let own = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(own), "tools.yaml's policy section moved");
    base.replacen(own, &format!("{own}{policy}"), 1)
}

/// `pii` masks results, `nodrop` refuses `drop table` anywhere in the arguments, `sql` is
/// guard.run_sql's own; `partners` names `pii` and `nodrop`, `internal` names none.
fn served(calls: &Path) -> Served {
    harness::serve(&served_yaml(calls, PII), &[])
}

/// `pii` with every detector.
const PII: &str = "    pii:\n      mask: {}\n";

/// The tools.yaml of [`served`], with `pii` (lines under `policy.guardrails`) in place of
/// [`PII`].
fn served_yaml(calls: &Path, pii: &str) -> String {
    let policy = r#"  guardrails:
PII    nodrop:
      deny: [{name: drop_table, pattern: "(?i)drop\\s+table"}]
    sql:
      deny: [{name: delete, pattern: "(?i)\\bdelete\\b", argument: query}]
  tools:
    guard.run_sql: {guardrails: [sql]}
"#;
    let gateway = r#"gateway:
  servers:
    - id: partners
      tools: {include: [{source: guard}]}
      guardrails: [pii, nodrop]
    - id: internal
      tools: {include: [{source: guard}]}
"#;
    yaml(calls, &policy.replacen("PII", pii, 1), gateway)
}

/// `POST {path}` with `body`: (status, JSON body).
fn post(served: &Served, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = harness::request(
        served.port(),
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, value)
}

fn text_of(body: &Value) -> &str {
    body["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text part: {body}"))
}

/// The tools the guard server was called for, in order.
fn called(calls: &Path) -> Vec<String> {
    std::fs::read_to_string(calls)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool"].to_string())
        .collect()
}

/// toolgate's own MCP client on the gateway's endpoint `path`, as source `gw`.
async fn client(served: &Served, path: &str) -> Toolset {
    harness::mcp_client_at(served, path, &[]).await.1
}

#[test]
fn one_tool_through_two_servers_is_masked_only_on_the_one_naming_the_guardrail() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let served = served(&calls);

    // REST.
    let (status, body) = post(&served, "/servers/partners/tools/guard__leak/call", "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body), MASKED, "{body}");
    assert_eq!(body["structuredContent"]["result"], MASKED, "{body}");
    let (status, body) = post(&served, "/servers/internal/tools/guard__leak/call", "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body), RAW, "{body}");
    // The default server runs the tools' own guardrails only (guard.leak has none).
    let (status, body) = post(&served, "/tools/guard.leak/call", "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body), RAW, "{body}");

    // MCP, with toolgate's own client on each server's endpoint.
    runtime().block_on(async {
        let partners = client(&served, "/mcp/partners").await;
        let internal = client(&served, "/mcp/internal").await;
        let out = partners
            .call("gw.guard__profile", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
        assert_eq!(
            out.structured,
            Some(json!({"contact": {"emails": ["[email]"]}, "card": "[card]"})),
            "{out:?}"
        );
        let out = internal
            .call("gw.guard__profile", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
        assert_eq!(
            out.structured,
            Some(
                json!({"contact": {"emails": ["bob@example.net"]}, "card": "5555-5555-5555-4444"})
            ),
            "{out:?}"
        );
        let out = partners
            .call("gw.guard__leak", json!({}))
            .await
            .expect("leak on partners");
        assert!(out.to_text().contains(MASKED), "{out:?}");
        partners.close().await;
        internal.close().await;
    });
    assert!(
        !served.log().contains("ann.smith@example.org"),
        "the log shows a value"
    );
}

#[test]
fn a_servers_deny_rule_refuses_before_the_upstream_and_a_tools_own_guardrail_holds_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let served = served(&calls);

    // `nodrop` is the partners server's: refused there before guard.echo is called, whether
    // the arguments come as an object or as a string holding one.
    for body in [
        r#"{"text": "please DROP  TABLE users"}"#,
        r#""{\"text\": \"drop table users\"}""#,
    ] {
        let (status, out) = post(&served, "/servers/partners/tools/guard__echo/call", body);
        assert_eq!(status, 403, "{body}: {out}");
        assert_eq!(out["kind"], "policy_denied", "{out}");
        let message = out["message"].as_str().unwrap_or("");
        assert!(
            message.contains("guardrail `nodrop`") && message.contains("drop_table"),
            "{out}"
        );
        assert!(
            !message.to_lowercase().contains("users"),
            "the value: {out}"
        );
    }
    assert!(
        !called(&calls).iter().any(|t| t.contains("echo")),
        "{:?}",
        called(&calls)
    );
    // The internal server has no such guardrail: the call goes through.
    let (status, out) = post(
        &served,
        "/servers/internal/tools/guard__echo/call",
        r#"{"text": "drop table users"}"#,
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(text_of(&out), "drop table users", "{out}");

    // guard.run_sql's own `sql` holds on both servers (a server adds guardrails, never takes
    // the tool's away), and on the default one.
    for path in [
        "/servers/partners/tools/guard__run_sql/call",
        "/servers/internal/tools/guard__run_sql/call",
        "/tools/guard.run_sql/call",
    ] {
        let (status, out) = post(&served, path, r#"{"query": "delete from users"}"#);
        assert_eq!(status, 403, "{path}: {out}");
        assert!(
            out["message"]
                .as_str()
                .unwrap_or("")
                .contains("guardrail `sql`"),
            "{path}: {out}"
        );
    }
    assert!(
        !called(&calls).iter().any(|t| t.contains("run_sql")),
        "{:?}",
        called(&calls)
    );
    // Over MCP too: the partners server refuses, as an error result.
    runtime().block_on(async {
        let partners = client(&served, "/mcp/partners").await;
        let e = partners
            .call("gw.guard__echo", json!({"text": "drop table t"}))
            .await
            .expect_err("refused by nodrop");
        assert!(e.message().contains("guardrail `nodrop`"), "{e:?}");
        partners.close().await;
    });
}

#[test]
fn a_server_naming_an_unknown_guardrail_stops_check_and_serve_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    let gateway = "gateway:\n  servers:\n    - id: partners\n      guardrails:\n        - pii\n        - pij\n";
    let own = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    let text = harness::tools_yaml("", gateway).replacen(
        own,
        &format!("{own}  guardrails:\n    pii:\n      mask: {{}}\n"),
        1,
    );
    std::fs::write(&config, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.trim() == "- pij")
        .expect("the line")
        + 1;
    let at = format!("tools.yaml:{line}:");

    let out = Command::new(harness::BIN)
        .args(["check", &config.display().to_string()])
        .env("RUST_LOG", "warn,rmcp=off")
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains(&at) && said.contains("`pij`"), "{at}: {said}");

    // serve refuses to start (bounded: a gateway that started anyway is killed and fails).
    let mut child = Command::new(harness::BIN)
        .args([
            "--config",
            &config.display().to_string(),
            "serve",
            "--http",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "warn,rmcp=off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolgate serve started with an unknown guardrail");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&at) && stderr.contains("`pij`"),
        "{at}: {stderr}"
    );
}

#[test]
fn a_reload_changes_a_servers_guardrail_and_one_that_drops_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let served = served(&calls);
    let reload = |pii: &str, outcome: &str| {
        let before = served.log().matches(outcome).count();
        std::fs::write(
            served.dir.path().join("tools.yaml"),
            served_yaml(&calls, pii),
        )
        .unwrap();
        let sent = Command::new("kill")
            .args(["-HUP", &served.process.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while served.log().matches(outcome).count() == before {
            assert!(
                Instant::now() < deadline,
                "no `{outcome}` within 30 s after SIGHUP\n{}",
                served.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let leak = || {
        let (status, body) = post(&served, "/servers/partners/tools/guard__leak/call", "{}");
        assert_eq!(status, 200, "{body}");
        text_of(&body).to_string()
    };
    assert_eq!(leak(), MASKED);

    // `pii` now masks e-mail addresses only: the server's calls use the new definition.
    reload(
        "    pii:\n      mask: {detectors: [email]}\n",
        "toolgate serve: reloaded",
    );
    assert_eq!(
        leak(),
        "customer [email] paid with 4111 1111 1111 1111 (order 4111111111111121), deploy key AKIAIOSFODNN7EXAMPLE"
    );

    // A policy without `pii`: refused, the running one stays.
    reload("", "refused");
    assert!(
        served
            .log()
            .contains("virtual server `partners` names guardrail `pii`"),
        "{}",
        served.log()
    );
    assert!(leak().starts_with("customer [email] paid"), "{}", leak());
}
