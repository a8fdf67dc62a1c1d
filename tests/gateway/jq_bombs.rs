//! jq filters built to take the gateway down (nesting a million levels deep, asking for
//! 688 GB, growing to gigabytes, looping forever), sent to `toolgate serve` all at once while
//! ordinary calls go on. The gateway must stay up and answer `/healthz` throughout, end every
//! bomb with a typed error within its timeout (plus a second), keep its own memory where it
//! was, and run jq normally right after.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Served, get, request, serve, tools_yaml};

/// The jq time limit for this gateway: long, so that in an unoptimised build on a loaded
/// machine the small bombs surely go off before their time is up.
const TIMEOUT_MS: u64 = 10_000;

/// A bomb: its filter, and what its error must say (unless it is one of [`BOMBS`] and ran out
/// of time first).
struct Bomb {
    filter: &'static str,
    /// (error kind, a part of the message).
    expect: (&'static str, &'static str),
}

/// Small versions of each kind, cheap enough to go off well within the time limit even in an
/// unoptimised build: each must end in its own error.
const SMALL_BOMBS: &[Bomb] = &[
    Bomb {
        filter: "reduce range(20000) as $i (null; [.]) | tojson",
        expect: ("invalid_arguments", "nested deeper than 10000 levels"),
    },
    Bomb {
        filter: "reduce range(20000) as $i (null; [.]) | walk(.)",
        expect: ("invalid_arguments", "nested deeper than 10000 levels"),
    },
    Bomb {
        filter: "reduce range(1000) as $i (null; {a:.})",
        expect: ("invalid_arguments", "nested deeper than 100 levels"),
    },
    Bomb {
        filter: r#""\(reduce range(100000) as $i (null; [.]))""#,
        expect: ("invalid_arguments", "overflowed its stack"),
    },
    Bomb {
        // jaq refuses this repetition count before allocating anything.
        filter: r#""x" * 1e12"#,
        expect: ("invalid_arguments", "cannot calculate"),
    },
    Bomb {
        filter: r#"reduce range(40) as $i ("x"; . + .) | length"#,
        expect: ("invalid_arguments", "memory limit of 256 MiB"),
    },
];

/// The bombs of the bug report, as they were: each must end in its own error or be stopped at
/// the time limit (where an unoptimised build on a loaded machine may not get further).
const BOMBS: &[Bomb] = &[
    Bomb {
        filter: "reduce range(1000000) as $i (null; [.]) | tojson",
        expect: ("invalid_arguments", "nested deeper than 10000 levels"),
    },
    Bomb {
        filter: "reduce range(1000000) as $i (null; [.]) | tostring",
        expect: ("invalid_arguments", "nested deeper than 10000 levels"),
    },
    Bomb {
        filter: "reduce range(1000000) as $i (null; [.]) | walk(.)",
        expect: ("invalid_arguments", "nested deeper than 10000 levels"),
    },
    Bomb {
        // A million levels of objects outgrow the memory limit before the output's depth
        // check sees them.
        filter: "reduce range(1000000) as $i (null; {a:.})",
        expect: ("invalid_arguments", "memory limit of 256 MiB"),
    },
    Bomb {
        filter: r#""\(reduce range(1000000) as $i (null; [.]))""#,
        expect: ("invalid_arguments", "overflowed its stack"),
    },
    Bomb {
        filter: "[range(1e6)]|tostring|.*100000",
        expect: ("invalid_arguments", "memory limit of 256 MiB"),
    },
    Bomb {
        filter: "[range(1e8)]|length",
        expect: ("invalid_arguments", "memory limit of 256 MiB"),
    },
    Bomb {
        filter: "last(range(1e12))",
        expect: ("timeout", "did not finish within 10000 ms"),
    },
];

/// A slot for every bomb and two for the ordinary calls, so that those are never refused.
fn config() -> String {
    let jq = format!(
        "settings:\n  jq: {{timeout_ms: {TIMEOUT_MS}, memory_mb: 256, workers: {}}}\n",
        BOMBS.len() + 2
    );
    let yaml = tools_yaml("", "").replacen("\nsettings:\n", &format!("\n{jq}"), 1);
    assert!(yaml.contains("workers:"), "{yaml}");
    yaml
}

/// POST `/tools/{tool}/call` with `args`: (status, body, how long it took).
fn call(served: &Served, tool: &str, args: &Value) -> (u16, Value, Duration) {
    let started = Instant::now();
    let body = args.to_string();
    let (status, text) = request(
        served.port(),
        "POST",
        &format!("/tools/{tool}/call"),
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .unwrap_or_else(|e| panic!("{tool} {args}: {e}\n{}", served.process.log_tail()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{tool} {args}: {status}, not JSON ({e}): {text:?}"));
    (status, value, started.elapsed())
}

/// The ordinary calls: both must work, whatever else is going on.
fn ordinary(served: &Served) {
    let (status, out, _) = call(served, "calc", &json!({"expression": "6 * 7"}));
    assert_eq!(
        (status, &out["structuredContent"]["value"]),
        (200, &json!(42)),
        "calc: {out}"
    );
    let args = json!({"filter": "[.[] | select(. > 1)] | add", "input": [1, 2, 3]});
    let (status, out, _) = call(served, "jq", &args);
    assert_eq!(
        (status, &out["structuredContent"]["results"]),
        (200, &json!([5])),
        "jq: {out}"
    );
}

/// A process's resident memory, in bytes (from /proc/PID/status).
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The jq worker processes of the gateway `pid`: (pid, resident bytes).
fn workers(pid: u32) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        if field("PPid:").as_deref() == Some(&pid.to_string())
            && field("Name:").is_some_and(|n| n.starts_with("toolgate-jq"))
        {
            out.push((child, rss(child).unwrap_or(0)));
        }
    }
    out
}

/// Sends every bomb at once; their outcomes, in order.
fn explode<'b>(served: &Served, bombs: &'b [Bomb]) -> Vec<(&'b Bomb, (u16, Value, Duration))> {
    std::thread::scope(|scope| {
        let calls: Vec<_> = bombs
            .iter()
            .map(|bomb| {
                scope.spawn(move || {
                    let args = json!({"filter": bomb.filter, "input": null});
                    (bomb, call(served, "jq", &args))
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    })
}

/// Sets its flag when dropped: the sampling threads stop even when an assertion fails (a
/// scope waits for its threads, so a failure would otherwise hang the test).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn jq_bombs_do_not_take_the_gateway_down() {
    let mut served = serve(&config(), &[]);
    let pid = served.process.pid();
    // Warm up (a worker, the HTTP paths), then take the baseline.
    ordinary(&served);
    ordinary(&served);
    let baseline = rss(pid).expect("the gateway's VmRSS");

    let done = AtomicBool::new(false);
    let health_checks = AtomicUsize::new(0);
    let ordinary_rounds = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let health = scope.spawn(|| {
            while !done.load(Ordering::Acquire) {
                match get(served.port(), "/healthz", &[]) {
                    Ok((200, _)) => health_checks.fetch_add(1, Ordering::Relaxed),
                    other => panic!("/healthz: {other:?}\n{}", served.process.log_tail()),
                };
                // Sampling, not synchronisation: how often the gateway is asked.
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let calls = scope.spawn(|| {
            while !done.load(Ordering::Acquire) {
                ordinary(&served);
                ordinary_rounds.fetch_add(1, Ordering::Relaxed);
            }
        });
        let stop = StopOnDrop(&done);
        let limit = Duration::from_millis(TIMEOUT_MS) + Duration::from_secs(1);
        for (bombs, may_time_out) in [(SMALL_BOMBS, false), (BOMBS, true)] {
            for (bomb, (status, body, took)) in explode(&served, bombs) {
                let kind = body["kind"].as_str().unwrap_or_default();
                let message = body["message"].as_str().unwrap_or_default();
                // Shown with --nocapture (and when the test fails): which bombs got how far.
                eprintln!("{}: {status} {kind} in {took:?}: {message}", bomb.filter);
                let (want_kind, want_text) = bomb.expect;
                let as_expected = kind == want_kind && message.contains(want_text);
                let timed_out = kind == "timeout" && message.contains("was stopped");
                // A deep value may reach the worker's memory limit before the depth check or
                // the stack guard sees it (how far depends on the worker's baseline, which moves
                // with the binary): refused either way, as the same typed error kind.
                let out_of_memory = want_kind == "invalid_arguments"
                    && kind == "invalid_arguments"
                    && message.contains("memory limit of 256 MiB");
                assert!(
                    as_expected || out_of_memory || (may_time_out && timed_out),
                    "{}: {status} {body}",
                    bomb.filter
                );
                assert!(
                    status == 422 || status == 504,
                    "{}: {status} {body}",
                    bomb.filter
                );
                assert!(took <= limit, "{}: took {took:?}", bomb.filter);
            }
        }
        // One more round of ordinary calls after the last bomb, then stop the others.
        ordinary(&served);
        drop(stop);
        health.join().unwrap();
        calls.join().unwrap();
    });
    assert!(
        served.process.exit_status().is_none(),
        "the gateway exited\n{}",
        served.process.log_tail()
    );
    assert!(health_checks.load(Ordering::Relaxed) > 0);
    assert!(ordinary_rounds.load(Ordering::Relaxed) > 0);

    // The filters ran elsewhere: the gateway's memory is where it was.
    let after = rss(pid).expect("the gateway's VmRSS");
    assert!(
        after <= baseline + 50 * 1024 * 1024,
        "the gateway's VmRSS went from {baseline} to {after} bytes"
    );
    // What is left are warm workers that hold little; every bomb's worker that crashed or
    // timed out is gone.
    let left = workers(pid);
    assert!(left.len() <= BOMBS.len() + 2, "{left:?}");
    for (worker, bytes) in &left {
        assert!(
            *bytes < 100 * 1024 * 1024,
            "worker {worker} holds {bytes} bytes"
        );
    }
    // And jq works right after.
    let (status, out, _) = call(
        &served,
        "jq",
        &json!({"filter": ".a + 1", "input": {"a": 41}}),
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["results"], json!([42]), "{out}");
}
