//! Several `toolgate serve` replicas behind a real load balancer (haproxy, round robin, no
//! stickiness) acting as one gateway.
//!
//! MCP clients do not know there are replicas: the Python SDK's client keeps one connection
//! pool and sends every request of its session to the balancer, which hands each to the next
//! replica. A session opened on one replica must therefore be served by the others
//! (`gateway.session_key`: the session id carries the session, sealed), and a session id that
//! is not one of ours, altered, or opened by another caller must be refused as the MCP
//! transport says (404 / 403).

use std::process::Command;

use serde_json::Value;

use crate::harness::{self, PeerProcess, Served, peers, serve_with_env, tools_yaml};

const KEY: &str = "replica-test-key-0123";
const OTHER_KEY: &str = "replica-other-key-4567";
/// Two session keys (32 bytes as 64 hex digits): the replicas' and a stranger's.
const SESSION_KEY: &str = "5f1c0d6b9e2a47c38d1e6f0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e";
const STRANGER_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// The gateway section every replica shares (the key names `${TG_KEY}`).
fn gateway(session_key: bool) -> String {
    let mut g = String::from(
        "gateway:\n  api_keys:\n    - {name: ci, key: \"${TG_KEY}\"}\n    - {name: other, key: \"${TG_OTHER}\"}\n",
    );
    if session_key {
        g.push_str("  session_key: \"${TOOLGATE_SESSION_KEY}\"\n");
    }
    g
}

/// `count` replicas of one tools.yaml, with `session_key` as their session key (or none).
fn replicas(count: usize, yaml: &str, session_key: Option<&str>) -> Vec<Served> {
    (0..count)
        .map(|_| {
            let mut env = vec![("TG_KEY", KEY), ("TG_OTHER", OTHER_KEY)];
            if let Some(k) = session_key {
                env.push(("TOOLGATE_SESSION_KEY", k));
            }
            serve_with_env(yaml, &[], &env)
        })
        .collect()
}

/// haproxy in front of `backends`: round robin, no stickiness, HTTP mode (each request of a
/// kept-alive client connection may go to another replica).
pub(crate) struct Balancer {
    process: PeerProcess,
    _dir: tempfile::TempDir,
}

impl Balancer {
    pub(crate) fn start(backends: &[&Served]) -> Self {
        let haproxy = peers::which("haproxy").unwrap_or_else(|| {
            panic!(
                "haproxy is not installed: run scripts/install-peers.sh (Debian package haproxy)"
            )
        });
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cfg = String::from(
            "global\n  maxconn 512\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n  timeout tunnel 60s\n\
             frontend front\n  bind \"127.0.0.1:${TG_LB_PORT}\"\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option http-server-close\n\
             \x20 option redispatch\n  retries 3\n",
        );
        // TCP checks every 100 ms: a replica that stopped accepting is taken out of the round
        // after one failed check; a request that cannot connect to it is sent to another.
        for (i, b) in backends.iter().enumerate() {
            cfg.push_str(&format!(
                "  server r{i} 127.0.0.1:{} check inter 100ms fall 1 rise 2\n",
                b.port()
            ));
        }
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, cfg).expect("write haproxy.cfg");
        let path = path.display().to_string();
        let process = peers::spawn_http_peer_retry(
            haproxy,
            &["-db", "-f", &path],
            &[("TG_LB_PORT", "{port}")],
        );
        Self { process, _dir: dir }
    }

    pub(crate) fn port(&self) -> u16 {
        self.process.port()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        self.process.url(path)
    }
}

/// Runs the Python SDK client: `calls` calls of `calc` in one `mode` (`initialize` or
/// `discover`) connection as the caller holding `key`; its JSON report.
fn python_client(url: &str, key: &str, mode: &str, calls: usize) -> Value {
    report(
        start_python_client(url, key, mode, calls)
            .wait_with_output()
            .expect("run the Python client"),
    )
}

/// The Python SDK client of [`python_client`], started.
fn start_python_client(url: &str, key: &str, mode: &str, calls: usize) -> std::process::Child {
    let script = peers::test_peers_dir().join("py_replica_client.py");
    Command::new("timeout")
        .arg("300")
        .arg(peers::venv_python())
        .arg(&script)
        .args([url, key, mode, &calls.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the Python client")
}

/// The JSON report of a Python client that ended.
fn report(out: std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "the Python client printed nothing ({})\n{stderr}",
            out.status
        )
    });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{stderr}"))
}

/// The `calc` calls that ended well on `replica`, read from its `/metrics`.
fn calc_calls(replica: &Served) -> u64 {
    let (status, text) =
        harness::get(replica.port(), "/metrics", &[("X-API-Key", KEY)]).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|l| {
            l.starts_with("toolgate_calls_total{")
                && l.contains("tool=\"calc\"")
                && l.contains("outcome=\"ok\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

#[test]
fn a_session_and_stateless_requests_are_served_by_every_replica_without_a_failure() {
    let yaml = tools_yaml("", &gateway(true));
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let url = lb.url("/mcp");

    let session = python_client(&url, KEY, "initialize", 100);
    assert_eq!(session["failures"], 0, "{session}");
    assert_eq!(session["ok"], 100, "{session}");
    assert!(
        session["version"]
            .as_str()
            .is_some_and(|v| v < "2026-07-28"),
        "an initialize-era session: {session}"
    );
    let stateless = python_client(&url, KEY, "discover", 100);
    assert_eq!(stateless["failures"], 0, "{stateless}");
    assert_eq!(stateless["ok"], 100, "{stateless}");

    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("calc calls per replica (200 in all, round robin): {spread:?}");
    assert_eq!(spread.iter().sum::<u64>(), 200, "{spread:?}");
    for (i, n) in spread.iter().enumerate() {
        // Round robin over three: each replica serves about a third of the requests.
        assert!(*n >= 20, "replica {i} served {n} of 200 calls: {spread:?}");
    }
}

#[test]
fn without_a_session_key_a_session_ends_when_a_request_reaches_another_replica() {
    // The failure the session key removes: the test above could not pass without it.
    let yaml = tools_yaml("", &gateway(false));
    let replicas = replicas(3, &yaml, None);
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let session = python_client(&lb.url("/mcp"), KEY, "initialize", 10);
    assert!(
        session["ok"].as_u64().unwrap_or(0) < 10,
        "every call of a session made it through replicas that do not share it: {session}"
    );
}

/// Opens a session on `port` with an `initialize` POST as the caller holding `key`; its id.
fn open_session(port: u16, key: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let (status, head, text) = harness::request_full(
        port,
        "POST",
        "/mcp",
        &[
            ("X-API-Key", key),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(body),
    )
    .expect("initialize");
    assert_eq!(status, 200, "{head}\n{text}");
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id in {head}"))
}

/// A `tools/list` in session `id` on `port` as the caller holding `key`: (status, body).
fn list_in(port: u16, key: &str, id: &str) -> (u16, String) {
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    harness::request(
        port,
        "POST",
        "/mcp",
        &[
            ("X-API-Key", key),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        Some(body),
    )
    .expect("tools/list")
}

#[test]
fn a_session_id_is_refused_when_altered_foreign_or_used_by_another_caller() {
    let yaml = tools_yaml("", &gateway(true));
    let ours = replicas(2, &yaml, Some(SESSION_KEY));
    let stranger = replicas(1, &yaml, Some(STRANGER_KEY));
    let id = open_session(ours[0].port(), KEY);
    assert!(id.starts_with("tg1."), "a sealed id: {id}");

    // The other replica resumes it (it never saw the initialize).
    let (status, body) = list_in(ours[1].port(), KEY, &id);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"calc\""), "{body}");

    // Another caller with a valid credential may not use it, on either replica.
    for replica in &ours {
        let (status, body) = list_in(replica.port(), OTHER_KEY, &id);
        assert_eq!(status, 403, "{body}");
    }
    // A gateway with another key does not know it: a session that ended (404).
    let (status, body) = list_in(stranger[0].port(), KEY, &id);
    assert_eq!(status, 404, "{body}");
    // One character changed anywhere: 404 on a replica that does not hold the session.
    let mut altered = id.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ASCII");
    let fresh = replicas(1, &yaml, Some(SESSION_KEY));
    let (status, body) = list_in(fresh[0].port(), KEY, &altered);
    assert_eq!(status, 404, "{body}");
    // ...while the id as given still works there.
    let (status, body) = list_in(fresh[0].port(), KEY, &id);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_replica_killed_under_load_fails_only_its_call_in_flight_and_the_session_goes_on() {
    let yaml = tools_yaml("", &gateway(true));
    let mut replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    const CALLS: usize = 300;
    let client = start_python_client(&lb.url("/mcp"), KEY, "initialize", CALLS);
    // Kill a replica once the session is well under way (a third of the calls done).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while replicas.iter().map(calc_calls).sum::<u64>() < (CALLS / 3) as u64 {
        assert!(
            std::time::Instant::now() < deadline,
            "the client made too few calls in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut killed = replicas.remove(1);
    let served_before = calc_calls(&killed);
    killed.process.kill(); // SIGKILL of its process group: no grace, no goodbye
    let session = report(client.wait_with_output().expect("the Python client ends"));
    eprintln!(
        "after a SIGKILL of one of three replicas at call ~{}: {session}",
        CALLS / 3
    );
    let ok = session["ok"].as_u64().unwrap_or(0);
    let failures = session["failures"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(
        ok + failures,
        CALLS as u64,
        "every call got an answer: {session}"
    );
    // Sequential calls: at most the one in flight when the replica went away fails.
    assert!(failures <= 1, "{session}");
    let after: u64 = replicas.iter().map(calc_calls).sum();
    // The killed replica may finish a call or two between the read of its count and the
    // SIGKILL (the client does not wait for the test): those are the slack.
    assert!(
        after + served_before + 2 >= ok,
        "the rest of the session ran on the other replicas: {after} + {served_before} vs {session}"
    );
    assert!(after > (CALLS / 3) as u64, "{after}");
}

#[test]
fn inspector_cli_sessions_are_served_across_replicas() {
    // Each inspector-cli run is a whole session (initialize, initialized, tools/call, DELETE),
    // its requests handed to the replicas in turn: no two of them reach the same one in a
    // row, so every call runs on a replica that did not see the session's initialize.
    let yaml = tools_yaml("", &gateway(true));
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let url = lb.url("/mcp");
    let header = format!("X-API-Key: {KEY}");
    for i in 0..6 {
        let expression = format!("expression={i}*7");
        let out = crate::inspector::inspector(&[
            &url,
            "--header",
            &header,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "calc",
            "--tool-arg",
            &expression,
        ]);
        assert_eq!(out["structuredContent"]["value"], i * 7, "run {i}: {out}");
    }
    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("inspector-cli calls per replica: {spread:?}");
    assert_eq!(spread.iter().sum::<u64>(), 6, "{spread:?}");
}

/// redis-server on a free loopback port, in memory only (no RDB, no AOF).
fn redis_server() -> PeerProcess {
    let redis = peers::which("redis-server").unwrap_or_else(|| {
        panic!("redis-server is not installed: run scripts/install-peers.sh (Debian package redis-server)")
    });
    peers::spawn_http_peer_retry(
        redis,
        &[
            "--port",
            "{port}",
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        &[],
    )
}

/// `calls` REST calls of `tool` (`calc` or `current_time`) through `port` as the caller holding
/// `key`: the statuses, in order.
fn rest_calls(port: u16, tool: &str, key: &str, calls: usize) -> Vec<u16> {
    (0..calls)
        .map(|i| {
            let body = match tool {
                "calc" => format!("{{\"expression\": \"{i}+1\"}}"),
                _ => "{}".to_string(),
            };
            harness::request(
                port,
                "POST",
                &format!("/tools/{tool}/call"),
                &[("X-API-Key", key), ("Content-Type", "application/json")],
                Some(&body),
            )
            .expect("POST /tools/{tool}/call")
            .0
        })
        .collect()
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[test]
fn a_caller_limit_and_a_budget_hold_across_replicas_sharing_redis() {
    let redis = redis_server();
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    // calc: 60 per minute per caller. current_time: 0.01 a call against 0.25 per caller.
    let yaml = tools_yaml("", &format!("{}{store}", gateway(true))).replacen(
        "\npolicy:\n",
        "\npolicy:\n  tools:\n    calc: {caller_rate_limit: 60/m}\n    current_time: {cost_per_call: 0.01}\n  budgets: {per_caller: 0.25}\n",
        1,
    );
    assert!(yaml.contains("caller_rate_limit: 60/m"), "{yaml}");
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());

    // One replica alone would admit 60 of its own ~33: the three admit 60 in all.
    let statuses = rest_calls(lb.port(), "calc", KEY, 100);
    assert_eq!(
        (count(&statuses, 200), count(&statuses, 429)),
        (60, 40),
        "{statuses:?}"
    );
    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("calc calls admitted per replica: {spread:?}");
    assert!(spread.iter().all(|n| *n > 0), "{spread:?}");
    // Another caller has a bucket of its own.
    let statuses = rest_calls(lb.port(), "calc", OTHER_KEY, 5);
    assert_eq!(count(&statuses, 200), 5, "{statuses:?}");

    // The budget: 25 calls (0.25 / 0.01) in all, then 402, whichever replica answers.
    let statuses = rest_calls(lb.port(), "current_time", KEY, 40);
    assert_eq!(
        (count(&statuses, 200), count(&statuses, 402)),
        (25, 15),
        "{statuses:?}"
    );
}
