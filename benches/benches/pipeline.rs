//! The cost of the policy pipeline (issue #8, acceptance 4): one call of a local tool with every
//! layer turned on but none triggering, against the bare static dispatch, in the same run.
//!
//! Rows (tool `greet` of `benches/src/lib.rs`, the same arguments every time):
//! * the static table (`ToolSource::call`) inside `block_on`: the bare static dispatch;
//! * `Toolset::call` with the defaults (telemetry, validate, timeout);
//! * `Toolset::call_with` a caller with roles, under a policy that turns on every layer —
//!   access rule, argument rule, budget, tool / source / caller rate limits, circuit breaker,
//!   tool and source concurrency limits, retries, a fallback — with limits far above what the
//!   bench reaches, so nothing triggers; the cache is off here (a repeated call would hit it);
//! * the same with the cache on: every call after the first is a hit.
//!
//! Run: `cargo bench -p toolgate-benches --bench pipeline`. Results and ratios: BENCHMARKS.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate::{ToolContext, ToolSource};
use toolgate_benches::toolset;

/// Every layer on, none triggering (limits far above what a bench run reaches).
const EVERY_LAYER: &str = r#"
version: 1
policy:
  defaults: {timeout_ms: 30000}
  tools:
    greet:
      rate_limit: 1000000000/s
      caller_rate_limit: 1000000000/s
      concurrency: 1000
      cost_per_call: 0.000001
      retries: 2
      idempotent: true
      fallback: {tool: add, on: [internal]}
  sources:
    local:
      source_rate_limit: 1000000000/s
      source_concurrency: 1000
      circuit_breaker: {failures: 5}
  rules:
    - {tools: [greet], roles: [user]}
  arguments:
    - {tools: [greet], argument: name, deny_values: ["forbidden*"]}
  budgets: {per_caller: 1000000000000}
"#;

fn policy(extra: &str) -> toolgate::spec::config::PolicyConfig {
    let yaml = EVERY_LAYER.replace(
        "      idempotent: true\n",
        &format!("      idempotent: true\n{extra}"),
    );
    toolgate::spec::config::ToolsConfig::from_yaml_str(&yaml, std::path::Path::new("bench.yaml"))
        .expect("the bench policy loads")
        .config
        .policy
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let table = toolset::StaticTools::new(&toolgate::StateMap::new()).expect("table builds");
    let defaults = toolset::toolset().build().expect("toolset builds");
    let every = toolset::toolset()
        .policy(&policy(""))
        .build()
        .expect("toolset builds");
    let cached = toolset::toolset()
        .policy(&policy("      cache_ttl_ms: 600000\n"))
        .build()
        .expect("toolset builds");
    let caller = || {
        ToolContext::builder()
            .caller("bench")
            .roles(["user"])
            .build()
    };
    let args = json!({"name": "ada", "times": 2});

    // Every variant must give the same result, or the comparison means nothing.
    let bare = rt
        .block_on(table.call("greet", args.clone(), &ToolContext::default()))
        .expect("ok");
    for (what, out) in [
        (
            "defaults",
            rt.block_on(defaults.call("greet", args.clone())),
        ),
        (
            "every layer",
            rt.block_on(every.call_with("greet", args.clone(), caller())),
        ),
        (
            "cached",
            rt.block_on(cached.call_with("greet", args.clone(), caller())),
        ),
        (
            "cache hit",
            rt.block_on(cached.call_with("greet", args.clone(), caller())),
        ),
    ] {
        let mut out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
        out.meta = None;
        assert_eq!(bare, out, "{what}");
    }
    // The anonymous caller has no role: the access rule is on, really.
    assert!(rt.block_on(every.call("greet", args.clone())).is_err());

    let mut g = c.benchmark_group("pipeline/greet");
    g.bench_function("bare static dispatch (ToolSource::call in block_on)", |b| {
        let ctx = ToolContext::default();
        b.iter(|| black_box(rt.block_on(table.call("greet", black_box(args.clone()), &ctx))));
    });
    g.bench_function("Toolset::call, default layers", |b| {
        b.iter(|| black_box(rt.block_on(defaults.call("greet", black_box(args.clone())))));
    });
    g.bench_function("Toolset::call_with, every layer on, none triggering", |b| {
        b.iter(|| {
            black_box(rt.block_on(every.call_with("greet", black_box(args.clone()), caller())))
        });
    });
    g.bench_function("Toolset::call_with, every layer on, cache hit", |b| {
        b.iter(|| {
            black_box(rt.block_on(cached.call_with("greet", black_box(args.clone()), caller())))
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
