//! Several `toolgate serve` replicas behind a real load balancer (haproxy, round robin, no
//! stickiness) acting as one gateway.
//!
//! MCP clients do not know there are replicas: the Python SDK's client keeps one connection
//! pool and sends every request of its session to the balancer, which hands each to the next
//! replica. A session opened on one replica must therefore be served by the others
//! (`gateway.session_key`: the session id carries the session, sealed), and a session id that
//! is not one of ours, altered, or opened by another caller must be refused as the MCP
//! transport says (404 / 403).
//!
//! This module holds what the tests share: the replicas, the balancer, the clients and the
//! counters; the tests are in its files by theme.

use std::process::Command;

use serde_json::Value;

use crate::harness::{self, PeerProcess, Served, peers, serve_with_env};

mod a2a;
mod breakers;
mod cache;
mod failover;
mod notices;
mod pins;
mod redis_outage;
mod results;
mod sessions;
mod shared_limits;

pub(crate) const KEY: &str = "replica-test-key-0123";
pub(crate) const OTHER_KEY: &str = "replica-other-key-4567";
/// Two session keys (32 bytes as 64 hex digits): the replicas' and a stranger's.
pub(crate) const SESSION_KEY: &str =
    "5f1c0d6b9e2a47c38d1e6f0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e";
pub(crate) const STRANGER_KEY: &str =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// The gateway section every replica shares (the key names `${TG_KEY}`).
pub(crate) fn gateway(session_key: bool) -> String {
    let mut g = String::from(
        "gateway:\n  api_keys:\n    - {name: ci, key: \"${TG_KEY}\"}\n    - {name: other, key: \"${TG_OTHER}\"}\n",
    );
    if session_key {
        g.push_str("  session_key: \"${TOOLGATE_SESSION_KEY}\"\n");
    }
    g
}

/// `count` replicas of one tools.yaml, with `session_key` as their session key (or none).
pub(crate) fn replicas(count: usize, yaml: &str, session_key: Option<&str>) -> Vec<Served> {
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
pub(crate) fn python_client(url: &str, key: &str, mode: &str, calls: usize) -> Value {
    report(
        start_python_client(url, key, mode, calls)
            .wait_with_output()
            .expect("run the Python client"),
    )
}

/// The Python SDK client of [`python_client`], started.
pub(crate) fn start_python_client(
    url: &str,
    key: &str,
    mode: &str,
    calls: usize,
) -> std::process::Child {
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
pub(crate) fn report(out: std::process::Output) -> Value {
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
pub(crate) fn calc_calls(replica: &Served) -> u64 {
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

/// Opens a session on `port` with an `initialize` POST as the caller holding `key`; its id.
pub(crate) fn open_session(port: u16, key: &str) -> String {
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
pub(crate) fn list_in(port: u16, key: &str, id: &str) -> (u16, String) {
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

/// What every redis-server of these tests runs with: loopback only, in memory only (no RDB,
/// no AOF).
const REDIS_ARGS: [&str; 6] = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];

fn redis_binary() -> std::path::PathBuf {
    peers::which("redis-server").unwrap_or_else(|| {
        panic!("redis-server is not installed: run scripts/install-peers.sh (Debian package redis-server)")
    })
}

/// redis-server on a free loopback port, in memory only.
pub(crate) fn redis_server() -> PeerProcess {
    peers::spawn_http_peer_retry(
        redis_binary(),
        &[&["--port", "{port}"], &REDIS_ARGS[..]].concat(),
        &[],
    )
}

/// redis-server on `port` (say, the address replicas already know, after a restart), empty.
pub(crate) fn redis_server_on(port: u16) -> PeerProcess {
    let port_arg = port.to_string();
    peers::spawn_http_peer(
        redis_binary(),
        &[&["--port", port_arg.as_str()], &REDIS_ARGS[..]].concat(),
        &[],
        port,
    )
}

/// `calls` REST calls of `tool` (`calc` or `current_time`) through `port` as the caller holding
/// `key`: the statuses, in order.
pub(crate) fn rest_calls(port: u16, tool: &str, key: &str, calls: usize) -> Vec<u16> {
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

pub(crate) fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}
