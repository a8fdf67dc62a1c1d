//! The monty engine's cost per run, measured in process (docs/code-mode.md, BENCHMARKS.md):
//! the cold start of a run (a fresh interpreter and its thread, `1` as the code), runs per
//! second one at a time, and one tool call made from code against the same call made directly
//! on the host (an in-process host that adds two numbers).
//!
//! Run: `cargo run --release -p toolgate-sandbox --features monty --example monty_cold_start`
//! (`ROUNDS=N` runs per row, default 2000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_sandbox::monty::MontyEngine;
use toolgate_sandbox::{BoxFuture, Engine, RunRequest, ToolCallError, ToolHost};

/// Adds `a` and `b`.
struct Adder;

impl ToolHost for Adder {
    fn call_tool<'a>(
        &'a self,
        _name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<Value, ToolCallError>> {
        Box::pin(async move {
            Ok(json!(
                args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
            ))
        })
    }
}

/// The median of `rounds` timings of `f`.
async fn median<F, Fut>(rounds: usize, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        f().await;
        times.push(started.elapsed());
    }
    times.sort();
    times[rounds / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2000);
    let engine = MontyEngine::new();
    let host: Arc<dyn ToolHost> = Arc::new(Adder);
    let request = |code: &str| RunRequest {
        code: code.into(),
        tools: vec!["add".into()],
        ..RunRequest::default()
    };
    let run = |code: &'static str| {
        let (engine, host) = (engine.clone(), Arc::clone(&host));
        move || {
            let (engine, host) = (engine.clone(), Arc::clone(&host));
            let req = request(code);
            async move {
                engine.run(req, Some(host)).await.expect("the run");
            }
        }
    };
    let empty = median(rounds, run("1")).await;
    let one_call = median(rounds, run("tools.add(a=1, b=2)")).await;
    let ten_calls = median(
        rounds,
        run("t = 0\nfor i in range(10):\n    t = tools.add(a=t, b=i)\nt"),
    )
    .await;
    let typical = median(
        rounds,
        run("import json\nrows = [{'n': i, 'sq': i * i} for i in range(50)]\nbig = [r for r in rows if r['sq'] % 3 == 0]\njson.dumps({'count': len(big), 'first': big[0]})"),
    )
    .await;
    let direct = median(rounds * 10, || {
        let host = Arc::clone(&host);
        async move {
            host.call_tool("add", json!({"a": 1, "b": 2}))
                .await
                .expect("the call");
        }
    })
    .await;
    let started = Instant::now();
    let n = rounds;
    for _ in 0..n {
        engine.run(request("1"), None).await.expect("the run");
    }
    let per_second = n as f64 / started.elapsed().as_secs_f64();
    println!("rounds per row: {rounds}");
    println!("cold start (code `1`), median: {empty:?}");
    println!("runs/s one at a time (code `1`): {per_second:.0}");
    println!("typical snippet (list comprehension, dicts, json), median: {typical:?}");
    println!(
        "one tool call from code, median run: {one_call:?} (call ≈ {:?} over the empty run)",
        one_call.saturating_sub(empty)
    );
    println!(
        "ten tool calls from code, median run: {ten_calls:?} (≈ {:?} a call)",
        ten_calls.saturating_sub(empty) / 10
    );
    println!("the same call made directly on the host, median: {direct:?}");
}
