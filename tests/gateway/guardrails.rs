//! Guardrails through `toolgate serve`, in front of runtime/tests/peers/guard_server.py (an MCP
//! server on the Python SDK whose results hold personal data and secrets, and which records
//! every call it gets): results reach the caller masked (text and structured content, cached
//! results too), an argument matching a deny rule is refused before the server is called, and
//! a webhook guardrail (runtime/tests/peers/guard_webhook.py) allows, refuses, changes
//! arguments and results, and on a timeout follows its fail mode.

use std::path::Path;

use serde_json::Value;

use crate::harness::{PeerProcess, Served, get, peers, request, serve, tools_yaml};

/// guard_server.py as MCP source `id`, recording its calls in `calls`.
fn guard_entry(id: &str, calls: &Path) -> String {
    let script = peers::test_peers_dir().join("guard_server.py");
    format!(
        "    - id: {id}\n      stdio:\n        command: {}\n        args: [\"{}\", \"{}\"]\n",
        peers::venv_python().display(),
        script.display(),
        calls.display()
    )
}

/// The repository's tools.yaml with `mcp` entries and `policy` (lines under `policy:`) instead
/// of its own policy.
fn yaml(mcp: &str, policy: &str) -> String {
    let base = tools_yaml(mcp, "");
    let own = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(own), "tools.yaml's policy section moved");
    base.replacen(
        own,
        &format!("policy:\n  defaults:\n    timeout_ms: 30000\n{policy}"),
        1,
    )
}

/// `POST /tools/{tool}/call` with `args`: (status, JSON body).
fn call(served: &Served, tool: &str, args: &str) -> (u16, Value) {
    let path = format!("/tools/{tool}/call");
    let (status, text) = request(
        served.port(),
        "POST",
        &path,
        &[("Content-Type", "application/json")],
        Some(args),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, body)
}

fn text_of(body: &Value) -> &str {
    body["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text part: {body}"))
}

/// The JSON lines of `file` (none when it does not exist yet).
fn lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value of the metric line whose name and labels contain every one of `parts`.
fn metric(served: &Served, name: &str, parts: &[&str]) -> Option<f64> {
    let (status, text) = get(served.port(), "/metrics", &[]).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|l| l.split(['{', ' ']).next() == Some(name))
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn personal_data_and_keys_in_results_reach_the_caller_masked_even_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let policy = "  guardrails:\n    pii:\n      mask: {}\n  sources:\n    guard: {guardrails: [pii]}\n  tools:\n    guard.leak: {cache_ttl_ms: 60000, idempotent: true}\n";
    let served = serve(&yaml(&guard_entry("guard", &calls), policy), &[]);

    let expected =
        "customer [email] paid with [card] (order 4111111111111121), deploy key [aws_access_key]";
    let masked = |tool: &str, kind: &str| {
        metric(
            &served,
            "toolgate_guardrail_masked_total",
            &[
                &format!("tool=\"{tool}\""),
                &format!("kind=\"{kind}\""),
                "guardrail=\"pii\"",
                "direction=\"result\"",
            ],
        )
    };
    let mut cards = Vec::new();
    for _ in 0..2 {
        let (status, body) = call(&served, "guard.leak", "{}");
        assert_eq!(status, 200, "{body}");
        // The Luhn-invalid order number is no card: left as it is.
        assert_eq!(text_of(&body), expected, "{body}");
        // The SDK mirrors a text result as `{"result": text}`: masked there too.
        assert_eq!(body["structuredContent"]["result"], expected, "{body}");
        cards.push(masked("guard.leak", "card"));
    }
    // The second answer came from the cache, which holds the masked result: the server was
    // called once, and nothing was masked again.
    let leaks = lines(&calls).iter().filter(|c| c["tool"] == "leak").count();
    assert_eq!(leaks, 1, "{:?}", lines(&calls));
    assert_eq!(cards, [Some(2.0), Some(2.0)]);
    assert_eq!(masked("guard.leak", "aws_access_key"), Some(2.0));

    let (status, body) = call(&served, "guard.profile", "{}");
    assert_eq!(status, 200, "{body}");
    let shown = body.to_string();
    assert!(
        !shown.contains("bob@example.net") && !shown.contains("5555"),
        "{body}"
    );
    assert_eq!(
        body["structuredContent"],
        serde_json::json!({"contact": {"emails": ["[email]"]}, "card": "[card]"}),
        "{body}"
    );

    assert!(masked("guard.profile", "email").is_some_and(|n| n >= 1.0));
    for secret in [
        "ann.smith@example.org",
        "AKIAIOSFODNN7EXAMPLE",
        "4111 1111 1111 1111",
    ] {
        assert!(!served.log().contains(secret), "the log shows {secret}");
    }
}

#[test]
fn an_argument_matching_a_deny_rule_is_refused_before_the_server_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let policy = r#"  guardrails:
    sql:
      deny:
        - {name: drop_table, pattern: "(?i)\\bdrop\\s+table\\b", argument: query}
  tools:
    guard.run_sql: {guardrails: [sql]}
"#;
    let served = serve(&yaml(&guard_entry("guard", &calls), policy), &[]);

    let (status, body) = call(&served, "guard.run_sql", r#"{"query": "select 1"}"#);
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &served,
        "guard.run_sql",
        r#"{"query": "Drop  Table secret_users"}"#,
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["kind"], "policy_denied", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("guardrail `sql`")
            && message.contains("argument `/query` matches deny rule `drop_table`"),
        "{message}"
    );
    assert!(
        !body.to_string().contains("secret_users"),
        "the refusal echoes the value: {body}"
    );
    let (status, body) = call(&served, "guard.run_sql", r#"{"query": "select 2"}"#);
    assert_eq!(status, 200, "{body}");

    // The server saw the calls before and after the refused one, and not that one.
    let queries: Vec<Value> = lines(&calls)
        .iter()
        .map(|c| c["arguments"]["query"].clone())
        .collect();
    assert_eq!(queries, vec!["select 1", "select 2"]);
    let denied = metric(
        &served,
        "toolgate_guardrail_denied_total",
        &[
            "tool=\"guard.run_sql\"",
            "guardrail=\"sql\"",
            "kind=\"drop_table\"",
            "direction=\"arguments\"",
        ],
    );
    assert_eq!(denied, Some(1.0));
    assert!(
        !served.log().contains("secret_users"),
        "the log shows the refused value"
    );
}

/// guard_webhook.py on a free port, recording the requests it gets in `requests`.
fn webhook(requests: &Path) -> PeerProcess {
    let script = peers::test_peers_dir().join("guard_webhook.py");
    let script = script.display().to_string();
    let requests = requests.display().to_string();
    peers::spawn_http_peer_retry(peers::python3(), &[&script, "{port}", &requests], &[])
}

#[test]
fn a_webhook_guardrail_allows_refuses_changes_and_follows_its_fail_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (calls, open_calls, requests) = (
        dir.path().join("calls.jsonl"),
        dir.path().join("open-calls.jsonl"),
        dir.path().join("requests.jsonl"),
    );
    let hook = webhook(&requests);
    // The path stands for what an operator may keep in it (a token): the log must not show it.
    // (A plain word such as "/check" could also be part of the checkout's own path.)
    let url = hook.url("/verdicts/hook-token-5e1f0c");
    let policy = format!(
        "  guardrails:\n    closed:\n      webhook: {{url: \"{url}\", timeout_ms: 2000, fail: closed}}\n    open:\n      webhook: {{url: \"{url}\", timeout_ms: 2000, fail: open}}\n  sources:\n    guard: {{guardrails: [closed]}}\n    relaxed: {{guardrails: [open]}}\n"
    );
    let mcp = guard_entry("guard", &calls) + &guard_entry("relaxed", &open_calls);
    let served = serve(&yaml(&mcp, &policy), &[]);

    // Allowed both ways: the service saw the arguments, then the result.
    let (status, body) = call(&served, "guard.echo", r#"{"text": "hello"}"#);
    assert_eq!((status, text_of(&body)), (200, "hello"), "{body}");
    let seen = lines(&requests);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0]["direction"], "arguments");
    assert_eq!(seen[0]["tool"], "guard.echo");
    assert_eq!(seen[0]["arguments"], serde_json::json!({"text": "hello"}));
    assert!(seen[0].get("caller").is_some(), "{}", seen[0]);
    assert_eq!(seen[1]["direction"], "result");
    assert_eq!(seen[1]["result"]["content"][0]["text"], "hello");

    // Refused with the service's reason; the server never saw it.
    let (status, body) = call(&served, "guard.echo", r#"{"text": "please-deny this"}"#);
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("policy_denied")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("guardrail `closed`") && message.contains("no deny words"),
        "{message}"
    );

    // Arguments changed by the service: the server got the changed ones.
    let (status, body) = call(&served, "guard.echo", r#"{"text": "please-modify"}"#);
    assert_eq!(
        (status, text_of(&body)),
        (200, "modified by the hook"),
        "{body}"
    );
    // A result changed by the service.
    let (status, body) = call(&served, "guard.echo", r#"{"text": "please-rewrite"}"#);
    assert_eq!(
        (status, text_of(&body)),
        (200, "rewritten by the hook"),
        "{body}"
    );

    // No answer in time, `fail: closed`: refused, the server not called.
    let (status, body) = call(&served, "guard.echo", r#"{"text": "please-stall"}"#);
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("policy_denied")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("timeout") && message.contains("fail: closed"),
        "{message}"
    );
    let texts: Vec<Value> = lines(&calls)
        .iter()
        .map(|c| c["arguments"]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        vec!["hello", "modified by the hook", "please-rewrite"]
    );

    // No answer in time, `fail: open`: the call goes on unchecked.
    let (status, body) = call(&served, "relaxed.echo", r#"{"text": "please-stall"}"#);
    assert_eq!((status, text_of(&body)), (200, "please-stall"), "{body}");
    let failures = |guardrail: &str| {
        metric(
            &served,
            "toolgate_guardrail_webhook_failures_total",
            &[
                &format!("guardrail=\"{guardrail}\""),
                "kind=\"timeout\"",
                "direction=\"arguments\"",
            ],
        )
    };
    assert_eq!(failures("closed"), Some(1.0));
    assert_eq!(failures("open"), Some(1.0));
    // The log names the service by its origin only.
    let log = served.log();
    assert!(log.contains(&hook.url("")), "{log}");
    assert!(!log.contains("hook-token-5e1f0c"), "{log}");
}
