//! Redis gone or hung under three replicas: every call still gets its answer within a bound,
//! the limits follow `store.redis.fail`, and once Redis is back (same address, empty) the
//! replicas share their limits again without a restart.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{
    Balancer, KEY, OTHER_KEY, SESSION_KEY, count, gateway, redis_server, redis_server_on, replicas,
    rest_calls,
};
use crate::harness::{self, PeerProcess, Served, tools_yaml};

/// Far above what one call may take while Redis is away (`timeout_ms` is 250 ms, a connection
/// attempt 1 s): a call slower than this did not keep its deadline.
const BOUND: Duration = Duration::from_secs(5);

/// Three replicas sharing `redis`, calc limited to 60 per hour (no token comes back during a test) per caller, with `fail` as the
/// fail modes (YAML flow mapping, or empty for the defaults).
fn setup(redis: &PeerProcess, fail: &str) -> (Vec<Served>, Balancer) {
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"{fail}}}\n",
        redis.port()
    );
    let yaml = tools_yaml("", &format!("{}{store}", gateway(true))).replacen(
        "\npolicy:\n",
        "\npolicy:\n  tools:\n    calc: {caller_rate_limit: 60/h}\n",
        1,
    );
    assert!(yaml.contains("caller_rate_limit: 60/h"), "{yaml}");
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    (replicas, lb)
}

/// One calc call through `port` as `key`: status, body, and how long it took.
fn timed_call(port: u16, key: &str) -> (u16, Value, Duration) {
    let started = Instant::now();
    let (status, body) = harness::request(
        port,
        "POST",
        "/tools/calc/call",
        &[("X-API-Key", key), ("Content-Type", "application/json")],
        Some(r#"{"expression": "1+1"}"#),
    )
    .expect("POST /tools/calc/call");
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, body, started.elapsed())
}

/// Waits (bounded) until every replica answers a call as `key` with 200 again.
fn until_every_replica_answers(replicas: &[Served], key: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for (i, served) in replicas.iter().enumerate() {
        loop {
            let (status, body, _) = timed_call(served.port(), key);
            if status == 200 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {i} never used Redis again after its restart: {status} {body}\n{}",
                served.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Sends SIGCONT to a stopped process when dropped, so that a failed assertion does not leave
/// redis-server stopped (and its `PeerProcess` unable to end it).
struct Continue(u32);

impl Drop for Continue {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([name, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {name} {pid}");
}

/// The refusals while Redis is away: each a 502 `network` error, retryable, naming the store
/// and the fail mode, within [`BOUND`].
fn assert_refused_in_time(port: u16, calls: usize) {
    let mut slowest = Duration::ZERO;
    for _ in 0..calls {
        let (status, body, took) = timed_call(port, KEY);
        slowest = slowest.max(took);
        assert!(
            took < BOUND,
            "a call took {took:?} while Redis was away: {body}"
        );
        assert_eq!(status, 502, "{body}");
        assert_eq!(body["kind"], "network", "{body}");
        assert_eq!(body["retryable"], true, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("shared store (Redis)")
                && message.contains("store.redis.fail.rate_limits: closed"),
            "{body}"
        );
    }
    eprintln!("{calls} calls refused while Redis was away, the slowest in {slowest:?}");
}

#[test]
fn with_redis_down_limits_fail_closed_and_are_shared_again_once_it_is_back() {
    let mut redis = redis_server();
    let port = redis.port();
    let (replicas, lb) = setup(&redis, "");
    let statuses = rest_calls(lb.port(), "calc", KEY, 6);
    assert_eq!(count(&statuses, 200), 6, "{statuses:?}");

    redis.kill();
    // Nothing runs unchecked, nothing hangs: every call is refused at once.
    assert_refused_in_time(lb.port(), 12);

    let _redis = redis_server_on(port);
    until_every_replica_answers(&replicas, KEY);
    // Shared again: a caller the new (empty) Redis has never seen gets 60 calls in all, not 60
    // on each replica.
    let statuses = rest_calls(lb.port(), "calc", OTHER_KEY, 100);
    assert_eq!(
        (count(&statuses, 200), count(&statuses, 429)),
        (60, 40),
        "{statuses:?}"
    );
}

#[test]
fn with_redis_down_and_fail_open_each_replica_decides_alone() {
    let mut redis = redis_server();
    let (replicas, lb) = setup(&redis, ", fail: {rate_limits: open, budgets: open}");
    redis.kill();
    for _ in 0..12 {
        let (status, body, took) = timed_call(lb.port(), KEY);
        assert!(
            took < BOUND,
            "a call took {took:?} while Redis was away: {body}"
        );
        assert_eq!(status, 200, "{body}");
    }
    // Each replica said once that it decides alone.
    for served in &replicas {
        let log = served.log();
        assert!(
            log.contains("decided by this replica alone"),
            "no warning in the log:\n{log}"
        );
    }
}

#[test]
fn a_hung_redis_costs_each_call_at_most_the_store_timeout() {
    let redis = redis_server();
    let (replicas, lb) = setup(&redis, "");
    let statuses = rest_calls(lb.port(), "calc", KEY, 3);
    assert_eq!(count(&statuses, 200), 3, "{statuses:?}");

    // SIGSTOP: the connection stays open and nothing answers (a server stuck, or a network
    // that drops packets), unlike a refused connection.
    signal(redis.pid(), "-STOP");
    let resume = Continue(redis.pid());
    assert_refused_in_time(lb.port(), 6);

    drop(resume);
    until_every_replica_answers(&replicas, KEY);
}
