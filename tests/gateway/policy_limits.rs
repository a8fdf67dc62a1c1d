//! Rate limits and concurrency limits through `toolgate serve`, and `POST /calls` (a batch of
//! calls run concurrently, answered in request order): a tool limited to 5/s called 20 times in
//! a burst (one batch, and 20 concurrent REST requests) answers 5 results and 15
//! `rate_limited` errors with `retry_after_ms`; a source's limit is shared by its tools; each
//! API key has its own per-caller budget; a tool limited to one call at a time runs three
//! parallel calls one after the other (the backend, runtime/tests/peers/slow_server.py, records
//! when each call started and ended), and a call whose deadline passes while it waits for a
//! slot ends in `timeout` without running.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Served, peers, request, serve_with_env, tools_yaml};

const ALICE: &str = "alice-key-0123";
const BOB: &str = "bob-key-4567";
const KEYS: &[(&str, &str)] = &[("TG_ALICE", ALICE), ("TG_BOB", BOB)];

/// The repository's tools.yaml with `policy` added to its `policy:` section, `extra` at the top
/// level and `mcp` entries.
fn yaml(mcp: &str, policy: &str, extra: &str) -> String {
    let base = tools_yaml(mcp, extra);
    let old = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(old), "tools.yaml's policy section moved");
    base.replace(
        old,
        &format!("policy:\n  defaults:\n    timeout_ms: 30000\n{policy}"),
    )
}

/// A request answered with JSON, with `key` as the API key when given: (status, body).
fn call_json(
    served: &Served,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> (u16, Value) {
    let bearer = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    let (status, text) = request(served.port(), method, path, &headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {path}: {status} {text:?} is not JSON: {e}"));
    (status, value)
}

/// `POST /calls` with `calls` (`(name, arguments)`) at `concurrency`; the `results` array.
fn batch(served: &Served, key: Option<&str>, calls: &[(&str, Value)], extra: Value) -> Vec<Value> {
    let mut body = json!({
        "calls": calls.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let (status, answer) = call_json(served, "POST", "/calls", key, Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}\n{}", served.log());
    let results = answer["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {answer}"))
        .clone();
    assert_eq!(results.len(), calls.len(), "{answer}");
    for r in &results {
        assert!(
            r.get("output").is_some() != r.get("error").is_some(),
            "a result is either an output or an error: {r}"
        );
    }
    results
}

/// `n` requests sent at the same moment: every connection is opened first, then all send
/// together. (status, body) each, in order.
fn burst(served: &Served, path: &str, body: &str, n: usize) -> Vec<(u16, String, Value)> {
    let barrier = Arc::new(Barrier::new(n));
    let port = served.port();
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let path = path.to_string();
            let body = body.to_string();
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                stream
                    .set_read_timeout(Some(Duration::from_secs(60)))
                    .unwrap();
                let head = format!(
                    "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                barrier.wait();
                stream.write_all(head.as_bytes()).expect("send");
                let mut raw = String::new();
                stream.read_to_string(&mut raw).expect("read");
                raw
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| {
            let raw = t.join().expect("request thread");
            let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let value = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("{status} {body:?} is not JSON: {e}"));
            (status, head.to_ascii_lowercase(), value)
        })
        .collect()
}

/// Checks a `rate_limited` error naming `tool` and `limit`, with `retry_after_ms` in (0, max].
fn assert_rate_limited(error: &Value, tool: &str, limit: &str, max_ms: u64) {
    assert_eq!(error["kind"], "rate_limited", "{error}");
    assert_eq!(error["retryable"], true, "{error}");
    let after = error["retry_after_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no retry_after_ms in {error}"));
    assert!(
        after > 0 && after <= max_ms,
        "retry_after_ms {after}: {error}"
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("tool `{tool}`: rate limit {limit}"))
            && message.contains(" reached; retry in "),
        "{message}"
    );
}

#[test]
fn a_burst_of_20_calls_at_5_per_second_gives_5_results_and_15_rate_limited() {
    let served = serve_with_env(
        &yaml("", "  tools:\n    calc: {rate_limit: 5/s}\n", ""),
        &[],
        &[],
    );

    // One batch of 20, all at once.
    let calls: Vec<(&str, Value)> = (0..20)
        .map(|i| ("calc", json!({"expression": format!("{i} + 1")})))
        .collect();
    let results = batch(&served, None, &calls, json!({"concurrency": 20}));
    let ok: Vec<&Value> = results.iter().filter_map(|r| r.get("output")).collect();
    let refused: Vec<&Value> = results.iter().filter_map(|r| r.get("error")).collect();
    assert_eq!((ok.len(), refused.len()), (5, 15), "{results:#?}");
    for e in &refused {
        assert_rate_limited(e, "calc", "5/s", 1000);
    }
    // The results that went through are the calls' own, in request order.
    for (i, r) in results.iter().enumerate() {
        if let Some(out) = r.get("output") {
            assert_eq!(
                out["structuredContent"]["value"],
                json!(i + 1),
                "result {i}: {r}"
            );
        }
    }

    // The bucket refills (5/s: full again after a second); then 20 concurrent REST calls.
    std::thread::sleep(Duration::from_millis(1100));
    let answers = burst(
        &served,
        "/tools/calc/call",
        r#"{"expression": "2 + 3"}"#,
        20,
    );
    let ok = answers.iter().filter(|(s, _, _)| *s == 200).count();
    let limited: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert_eq!((ok, limited.len()), (5, 15), "{answers:#?}");
    for (_, head, body) in limited {
        assert_rate_limited(body, "calc", "5/s", 1000);
        assert!(head.contains("\r\nretry-after: 1"), "{head}");
    }
}

#[test]
fn a_source_limit_is_shared_by_all_its_tools() {
    let served = serve_with_env(
        &yaml("", "  sources:\n    local: {source_rate_limit: 4/m}\n", ""),
        &[],
        &[],
    );
    // One at a time, so the order of the calls is the order of the buckets' tokens.
    let calc = ("calc", json!({"expression": "1 + 1"}));
    let time = ("current_time", json!({}));
    let results = batch(
        &served,
        None,
        &[
            calc.clone(),
            time.clone(),
            calc.clone(),
            time.clone(),
            calc,
            time,
        ],
        json!({"concurrency": 1}),
    );
    for r in &results[..4] {
        assert!(r.get("output").is_some(), "{results:#?}");
    }
    for (r, tool) in results[4..].iter().zip(["calc", "current_time"]) {
        let e = &r["error"];
        assert_eq!(e["kind"], "rate_limited", "{results:#?}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("tool `{tool}`: rate limit 4/m of source `local`")),
            "{message}"
        );
        assert_eq!(e["details"]["scope"], "source", "{e}");
        let after = e["retry_after_ms"].as_u64().unwrap();
        assert!(after > 0 && after <= 15_000, "{e}");
    }
}

#[test]
fn each_api_key_has_its_own_per_caller_budget() {
    let keys = "gateway:\n  api_keys:\n    - {name: alice, key: \"${TG_ALICE}\"}\n    - {name: bob, key: \"${TG_BOB}\"}\n";
    let served = serve_with_env(
        &yaml("", "  tools:\n    calc: {caller_rate_limit: 2/m}\n", keys),
        &[],
        KEYS,
    );
    let calc = ("calc", json!({"expression": "6 * 7"}));
    // Alice spends her two calls in one batch; the third is refused, naming her.
    let results = batch(
        &served,
        Some(ALICE),
        &[calc.clone(), calc.clone(), calc.clone()],
        json!({"concurrency": 1}),
    );
    assert!(results[0].get("output").is_some() && results[1].get("output").is_some());
    let e = &results[2]["error"];
    assert_rate_limited(e, "calc", "2/m per caller", 30_000);
    assert!(
        e["message"].as_str().unwrap().contains("caller `alice`"),
        "{e}"
    );
    assert_eq!(e["details"]["caller"], "alice", "{e}");

    // Bob still has his own two, over REST.
    let body = calc.1.to_string();
    for _ in 0..2 {
        let (status, out) = call_json(&served, "POST", "/tools/calc/call", Some(BOB), Some(&body));
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["structuredContent"]["value"], 42, "{out}");
    }
    let (status, e) = call_json(&served, "POST", "/tools/calc/call", Some(BOB), Some(&body));
    assert_eq!(status, 429, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("caller `bob`"),
        "{e}"
    );
    // And Alice is still refused.
    let (status, e) = call_json(
        &served,
        "POST",
        "/tools/calc/call",
        Some(ALICE),
        Some(&body),
    );
    assert_eq!(status, 429, "{e}");
}

/// One call's `(start, end)` in the slow server's log, by tag (monotonic nanoseconds).
fn intervals(log: &Path, tags: &[&str]) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    tags.iter()
        .map(|tag| {
            let at = |event: &str| {
                text.lines()
                    .find_map(|l| {
                        let mut w = l.split_whitespace();
                        (w.next() == Some(event) && w.next() == Some(tag))
                            .then(|| w.next().and_then(|t| t.parse::<u64>().ok()))
                            .flatten()
                    })
                    .unwrap_or_else(|| panic!("no `{event} {tag}` in the log:\n{text}"))
            };
            (at("start"), at("end"))
        })
        .collect()
}

/// Whether any two of the intervals overlap.
fn overlapping(mut spans: Vec<(u64, u64)>) -> bool {
    spans.sort_unstable();
    spans.windows(2).any(|w| w[1].0 < w[0].1)
}

fn slow_entry(id: &str, log: &Path) -> String {
    let script = peers::test_peers_dir().join("slow_server.py");
    format!(
        "    - id: {id}\n      stdio:\n        command: {}\n        args: [\"{}\", \"{}\"]\n",
        peers::venv_python().display(),
        script.display(),
        log.display()
    )
}

#[test]
fn a_tool_limited_to_one_call_at_a_time_runs_parallel_calls_one_after_the_other() {
    let logs = tempfile::tempdir().expect("temp dir");
    let (lim_log, free_log) = (logs.path().join("lim.log"), logs.path().join("free.log"));
    let mcp = format!(
        "{}{}",
        slow_entry("lim", &lim_log),
        slow_entry("free", &free_log)
    );
    let served = serve_with_env(
        &yaml(&mcp, "  tools:\n    lim.slow: {concurrency: 1}\n", ""),
        &[],
        &[],
    );
    let slow = |tool: &'static str, tag: &str| (tool, json!({"tag": tag, "ms": 300}));

    // The same server without a limit runs three parallel calls at once (the control: the
    // backend does overlap calls when nothing stops it).
    let results = batch(
        &served,
        None,
        &[
            slow("free.slow", "f1"),
            slow("free.slow", "f2"),
            slow("free.slow", "f3"),
        ],
        json!({"concurrency": 3}),
    );
    assert!(
        results.iter().all(|r| r.get("output").is_some()),
        "{results:#?}"
    );
    let free = intervals(&free_log, &["f1", "f2", "f3"]);
    assert!(overlapping(free.clone()), "{free:?}");

    // Limited to one at a time: a batch of three, with two failing calls between them, in
    // request order; the failures change nothing for the others.
    let results = batch(
        &served,
        None,
        &[
            slow("lim.slow", "a"),
            ("nope", json!({})),
            slow("lim.slow", "b"),
            ("calc", json!({"expression": "1 +"})),
            slow("lim.slow", "c"),
        ],
        json!({"concurrency": 5}),
    );
    for (i, tag) in [(0, "a"), (2, "b"), (4, "c")] {
        let text = results[i]["output"]["content"][0]["text"].as_str();
        assert_eq!(text, Some(format!("done {tag}").as_str()), "{results:#?}");
    }
    assert_eq!(results[1]["error"]["kind"], "not_found", "{results:#?}");
    assert!(results[3]["error"]["kind"].is_string(), "{results:#?}");
    let spans = intervals(&lim_log, &["a", "b", "c"]);
    assert!(!overlapping(spans.clone()), "{spans:?}");
    // One after the other: from the first start to the last end, at least 3 × 300 ms.
    let first = spans.iter().map(|s| s.0).min().unwrap();
    let last = spans.iter().map(|s| s.1).max().unwrap();
    assert!(last - first >= 900_000_000, "{spans:?}");

    // Three parallel REST calls: the same.
    let answers: Vec<_> = ["r1", "r2", "r3"]
        .into_iter()
        .map(|tag| {
            let port = served.port();
            let body = json!({"tag": tag, "ms": 300}).to_string();
            std::thread::spawn(move || {
                request(
                    port,
                    "POST",
                    "/tools/lim.slow/call",
                    &[("Content-Type", "application/json")],
                    Some(&body),
                )
                .expect("POST")
            })
        })
        .collect();
    for a in answers {
        let (status, body) = a.join().unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let spans = intervals(&lim_log, &["r1", "r2", "r3"]);
    assert!(!overlapping(spans.clone()), "{spans:?}");

    // A call whose deadline passes while it waits for the slot ends in `timeout`, naming the
    // wait, and never runs.
    let busy = {
        let port = served.port();
        std::thread::spawn(move || {
            request(
                port,
                "POST",
                "/tools/lim.slow/call",
                &[("Content-Type", "application/json")],
                Some(&json!({"tag": "busy", "ms": 3000}).to_string()),
            )
            .expect("POST")
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&lim_log)
        .unwrap_or_default()
        .contains("start busy ")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the busy call never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let results = batch(
        &served,
        None,
        &[slow("lim.slow", "late")],
        json!({"timeout_ms": 300}),
    );
    let e = &results[0]["error"];
    assert_eq!(e["kind"], "timeout", "{results:#?}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.starts_with("tool `lim.slow` waited ")
            && message.contains("for one of its 1 concurrency slots (policy `concurrency: 1`)"),
        "{message}"
    );
    let (status, body) = busy.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let text = std::fs::read_to_string(&lim_log).unwrap();
    assert!(!text.contains(" late "), "{text}");
}
