//! Circuit breakers across replicas: a breaker that opens on one replica (its own calls
//! failed) refuses calls on the others within a second, without their calls reaching the
//! source; a replica started while it is open reads it open when it starts; once the source is back,
//! every replica answers again.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{KEY, SESSION_KEY, gateway, redis_server, replicas};
use crate::harness::{self, Served, peers, serve_with_env, tools_yaml};

/// `POST /tools/sess.echo/call` on `replica`: the status and the JSON body.
fn echo(replica: &Served) -> (u16, Value) {
    let (status, text) = harness::request(
        replica.port(),
        "POST",
        "/tools/sess.echo/call",
        &[("X-API-Key", KEY), ("Content-Type", "application/json")],
        Some(r#"{"message":"hi"}"#),
    )
    .unwrap_or_else(|e| panic!("POST /tools/sess.echo/call: {e}\n{}", replica.log()));
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("answered {status}, not JSON ({e}): {text}"));
    (status, body)
}

/// `toolgate_circuit_breaker_state{source="sess"}` on `replica` (2 is open), read from its
/// `/metrics`; `None` before the breaker exists there.
fn breaker_state(replica: &Served) -> Option<f64> {
    let (status, text) =
        harness::get(replica.port(), "/metrics", &[("X-API-Key", KEY)]).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find(|l| l.starts_with("toolgate_circuit_breaker_state{") && l.contains("source=\"sess\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn a_breaker_opened_on_one_replica_refuses_on_the_others_within_a_second() {
    let redis = redis_server();
    let mut server = peers::http_session_server(None);
    let port = server.port();
    let mcp = format!(
        "    - id: sess\n      http: {{url: \"{}\"}}\n",
        server.url("/mcp")
    );
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    let yaml = tools_yaml(&mcp, &format!("{}{store}", gateway(true))).replacen(
        "\npolicy:\n",
        "\npolicy:\n  sources:\n    sess: {circuit_breaker: {failures: 3, open_ms: 4000}}\n",
        1,
    );
    assert!(yaml.contains("circuit_breaker"), "{yaml}");
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    for r in &replicas {
        let (status, body) = echo(r);
        assert_eq!(status, 200, "{body}\n{}", r.log());
    }

    // The source dies; replica A alone meets the failures and opens its breaker.
    server.kill();
    for i in 1..=3 {
        let (status, body) = echo(&replicas[0]);
        assert_eq!(
            (status, body["kind"].as_str()),
            (502, Some("network")),
            "failure {i}: {body}"
        );
    }
    let opened = Instant::now();
    // B and C hear of it: their breaker gauges read open, without a call of theirs failing.
    for (name, r) in [("B", &replicas[1]), ("C", &replicas[2])] {
        while breaker_state(r) != Some(2.0) {
            assert!(
                opened.elapsed() < Duration::from_secs(1),
                "replica {name}'s breaker is not open 1 s after replica A's opened: {:?}\n{}",
                breaker_state(r),
                r.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // The port answers again, but no open breaker may send anything there.
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the dead server's port");
    listener.set_nonblocking(true).expect("nonblocking");
    for r in &replicas[1..] {
        let (status, body) = echo(r);
        assert_eq!(
            (status, body["kind"].as_str()),
            (503, Some("circuit_open")),
            "{body}\n{}",
            r.log()
        );
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(
                "source `sess`: circuit open after 3 consecutive failures (last: network"
            ) && message.contains("on another replica; retry in "),
            "{message}"
        );
        let retry_after = body["retry_after_ms"].as_u64().expect("retry_after_ms");
        assert!((1..=4000).contains(&retry_after), "{body}");
    }

    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "an open breaker let a call reach the source's port"
    );
    drop(listener);

    // A replica started now reads the open breaker from Redis when it starts (its listing of
    // the dead source fails, which is no call, so it cannot have opened its own breaker).
    let late = serve_with_env(
        &yaml,
        &[],
        &[
            ("TG_KEY", KEY),
            ("TG_OTHER", super::OTHER_KEY),
            ("TOOLGATE_SESSION_KEY", SESSION_KEY),
        ],
    );
    let started = Instant::now();
    while breaker_state(&late) != Some(2.0) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a replica started while the breaker is open does not have it open: {:?}\n{}",
            breaker_state(&late),
            late.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // The source is back on its port: after open_ms every replica answers again.
    let _server = peers::spawn_http_peer(
        peers::python3(),
        &[
            peers::http_session_server_py()
                .to_str()
                .expect("UTF-8 path"),
            &port.to_string(),
        ],
        &[],
        port,
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    for (i, r) in replicas.iter().chain([&late]).enumerate() {
        loop {
            let (status, body) = echo(r);
            if status == 200 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {i} never recovered: {status} {body}\n{}",
                r.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
