//! The policy pipeline's telemetry through `toolgate serve` (RUST_LOG=debug): `GET /metrics`
//! counts calls by tool and outcome (a cached tool, a failing one, a rate-limited one), with the
//! latency histogram and the cache hits; a run configured with secrets (an MCP server's `env`,
//! an MCP server's bearer token, an A2A agent's bearer token, all from the environment, and a
//! call with a `password` argument) leaves none of them in any line of the gateway's log; the
//! `traceparent` a caller sends reaches the A2A agent.

use serde_json::Value;

use crate::harness::{Served, get, peers, request, serve_with_env, tools_yaml};

/// The repository's tools.yaml with `sources` (lines under `tools:`, indented by 2) and
/// `policy` (the lines under `policy:`) instead of its own policy.
fn yaml(sources: &str, policy: &str) -> String {
    let base = tools_yaml("", "");
    let own_policy = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(
        base.contains(own_policy),
        "tools.yaml's policy section moved"
    );
    base.replacen(own_policy, &format!("policy:\n{policy}"), 1)
        .replacen("\ntools:\n", &format!("\ntools:\n{sources}"), 1)
}

/// `POST /tools/{tool}/call` with `args` and `headers`: (status, JSON body).
fn call_with(served: &Served, tool: &str, args: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let path = format!("/tools/{tool}/call");
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let (status, text) = request(served.port(), "POST", &path, &all, Some(args))
        .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, body)
}

fn call(served: &Served, tool: &str, args: &str) -> (u16, Value) {
    call_with(served, tool, args, &[])
}

/// The value of the metric line whose name and labels contain every one of `parts`.
fn metric(text: &str, name: &str, parts: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.split(['{', ' ']).next().is_some_and(|n| n == name))
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn metrics_text(served: &Served) -> String {
    let (status, text) = get(served.port(), "/metrics", &[]).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    text
}

#[test]
fn metrics_count_calls_by_tool_and_outcome_with_latency_and_cache_hits() {
    let policy = "  defaults:\n    timeout_ms: 30000\n  tools:\n    calc: {cache_ttl_ms: 60000}\n    current_time: {rate_limit: 2/s}\n";
    let served = serve_with_env(&yaml("", policy), &[], &[("RUST_LOG", "debug")]);

    // calc: cached (read-only): one miss, then two hits.
    for _ in 0..3 {
        let (status, body) = call(&served, "calc", r#"{"expression": "6 * 7"}"#);
        assert_eq!(status, 200, "{body}");
    }
    // calc failing: a division by zero.
    let (status, failed) = call(&served, "calc", r#"{"expression": "1 / 0"}"#);
    assert_ne!(status, 200, "{failed}");
    let failed_kind = failed["kind"]
        .as_str()
        .or_else(|| failed["error"]["kind"].as_str())
        .unwrap_or_else(|| panic!("no kind in {failed}"))
        .to_string();
    // current_time at 2/s, called 6 times in a burst: some are refused.
    let mut limited = 0;
    for _ in 0..6 {
        let (status, body) = call(&served, "current_time", "{}");
        match status {
            200 => {}
            429 => limited += 1,
            other => panic!("current_time answered {other}: {body}"),
        }
    }
    assert!(
        limited >= 3,
        "only {limited} of 6 calls at 2/s were refused"
    );

    let text = metrics_text(&served);
    let calls = |tool: &str, outcome: &str| {
        metric(
            &text,
            "toolgate_calls_total",
            &[
                &format!("tool=\"{tool}\""),
                &format!("outcome=\"{outcome}\""),
            ],
        )
    };
    assert_eq!(calls("calc", "ok"), Some(3.0), "{text}");
    assert_eq!(calls("calc", &failed_kind), Some(1.0), "{text}");
    assert_eq!(
        calls("current_time", "ok"),
        Some(f64::from(6 - limited)),
        "{text}"
    );
    assert_eq!(
        calls("current_time", "rate_limited"),
        Some(f64::from(limited)),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "toolgate_rate_limited_total",
            &["tool=\"current_time\""]
        ),
        Some(f64::from(limited)),
        "{text}"
    );
    assert_eq!(
        metric(&text, "toolgate_cache_hits_total", &["tool=\"calc\""]),
        Some(2.0),
        "{text}"
    );
    // Only the successful call was stored: the failing one missed too.
    assert_eq!(
        metric(&text, "toolgate_cache_misses_total", &["tool=\"calc\""]),
        Some(2.0),
        "{text}"
    );
    // The latency histogram: every calc call, in buckets.
    assert_eq!(
        metric(
            &text,
            "toolgate_call_duration_seconds_count",
            &["tool=\"calc\""]
        ),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "toolgate_call_duration_seconds_bucket",
            &["tool=\"calc\"", "le=\"+Inf\""]
        ),
        Some(4.0),
        "{text}"
    );
    assert!(
        text.contains("# TYPE toolgate_call_duration_seconds histogram"),
        "{text}"
    );
    // Source states.
    assert!(text.contains("toolgate_source_up{"), "{text}");

    // The span's event, in the log (RUST_LOG=debug).
    let log = served.log();
    let finished: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("tool call finished") && l.contains("tool=calc"))
        .collect();
    assert_eq!(finished.len(), 4, "{log}");
    assert!(
        finished
            .iter()
            .filter(|l| l.contains("cache_hit=true"))
            .count()
            == 2,
        "{finished:#?}"
    );
}

#[test]
fn no_log_line_shows_a_secret_and_the_traceparent_reaches_the_a2a_agent() {
    const SECRET_X: &str = "sx-env-4f1c9a77d2e8";
    const SECRET_Y: &str = "sy-bearer-9b3e0c51aa47";
    const SECRET_Z: &str = "sz-agent-71d0e6f2c3b9";
    const PASSWORD: &str = "pw-hunter2-5e8a1d";
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    let agent = peers::a2a_echo("v1", &["--token", SECRET_Z]);
    let http_port = peers::free_port();
    let _http_server = peers::spawn_http_peer(
        peers::python3(),
        &[
            peers::http_session_server_py()
                .to_str()
                .expect("UTF-8 path"),
            &http_port.to_string(),
        ],
        &[],
        http_port,
    );
    let sources = format!(
        "  mcp:\n\
         \x20   - id: py\n\
         \x20     stdio:\n\
         \x20       command: {python}\n\
         \x20       args: [\"{script}\"]\n\
         \x20       env: {{API_KEY: \"${{SECRET_X}}\"}}\n\
         \x20   - id: sess\n\
         \x20     http: {{url: \"http://127.0.0.1:{http_port}/mcp\", bearer_token: \"${{SECRET_Y}}\"}}\n\
         \x20 a2a:\n\
         \x20   - id: agent\n\
         \x20     url: {agent_url}\n\
         \x20     streaming: false\n\
         \x20     auth: {{bearer: \"${{SECRET_Z}}\"}}\n",
        python = peers::venv_python().display(),
        script = peers::test_peers_dir().join("py_server.py").display(),
        agent_url = agent.url(""),
    );
    let policy =
        "  defaults:\n    timeout_ms: 30000\n  tools:\n    calc: {extra_arguments: strip}\n";
    let served = serve_with_env(
        &yaml(&sources, policy),
        &[],
        &[
            ("RUST_LOG", "debug"),
            ("SECRET_X", SECRET_X),
            ("SECRET_Y", SECRET_Y),
            ("SECRET_Z", SECRET_Z),
        ],
    );

    // A call with a password among its arguments (stripped, and the strip is logged).
    let args = format!(r#"{{"expression": "1 + 1", "password": "{PASSWORD}"}}"#);
    let (status, body) = call(&served, "calc", &args);
    assert_eq!(status, 200, "{body}");
    // The MCP servers (stdio with the env secret, HTTP with the bearer token).
    let (status, body) = call(&served, "py.add", r#"{"a": 1, "b": 2}"#);
    assert_eq!(status, 200, "{body}\n{}", served.log());
    // The A2A agent, with the caller's traceparent.
    let (status, list) = get(served.port(), "/tools", &[]).expect("GET /tools");
    assert_eq!(status, 200, "{list}");
    let list: Value = serde_json::from_str(&list).expect("JSON");
    let agent_tool = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.starts_with("agent."))
        .unwrap_or_else(|| panic!("no agent tool in {list}\n{}", served.log()))
        .to_string();
    let (status, body) = call_with(
        &served,
        &agent_tool,
        r#"{"text": "hello"}"#,
        &[("traceparent", TRACEPARENT)],
    );
    assert_eq!(status, 200, "{body}\n{}", served.log());
    // A call without one gets a new trace (a valid traceparent, not the one above).
    let (status, body) = call(&served, &agent_tool, r#"{"text": "again"}"#);
    assert_eq!(status, 200, "{body}");

    // Every line the gateway logged: no secret, no password.
    let log = served.log();
    assert!(
        log.lines().count() > 20,
        "RUST_LOG=debug should log the run:\n{log}"
    );
    for (i, line) in log.lines().enumerate() {
        for secret in [SECRET_X, SECRET_Y, SECRET_Z, PASSWORD] {
            assert!(
                !line.contains(secret),
                "log line {i} shows a secret ({secret}): {line}"
            );
        }
    }
    // The strip was logged, its value masked.
    assert!(
        log.lines()
            .any(|l| l.contains("unknown argument stripped") && l.contains("/password")),
        "{log}"
    );

    // The agent saw the caller's traceparent on the message it got, and a fresh one after.
    let agent_log = agent.log();
    let sent: Vec<&str> = agent_log
        .lines()
        .filter(|l| l.starts_with("A2A-REQ POST") && l.contains("rpc=SendMessage"))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("traceparent="))
        })
        .collect();
    assert_eq!(sent.len(), 2, "{agent_log}");
    assert_eq!(sent[0], TRACEPARENT, "{agent_log}");
    assert_ne!(sent[1], TRACEPARENT);
    assert!(
        toolgate_runtime::trace_context::is_valid(sent[1]),
        "a generated traceparent: {}",
        sent[1]
    );
}
