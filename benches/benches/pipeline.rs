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
//!
//! One table, `pipeline` (`toolgate_benches::report`), from criterion's estimates (group
//! `pipeline/greet`), each row's ratio to the bare static dispatch.
//!
//! Run: `cargo bench -p toolgate-benches --bench pipeline` (`TOOLGATE_BENCH_QUICK=1` for shorter
//! criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use serde_json::json;
use toolgate::{ToolContext, ToolSource};
use toolgate_benches::harness::{self, fmt_duration, fmt_ratio, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};
use toolgate_benches::toolset;

const GROUP: &str = "pipeline/greet";

/// The rows: criterion function name and row label; the first is the base.
const ROWS: [(&str, &str); 4] = [
    (
        "bare static dispatch (ToolSource::call in block_on)",
        "**bare static dispatch** (`ToolSource::call` in `block_on`)",
    ),
    (
        "Toolset::call, default layers",
        "`Toolset::call`, default layers (telemetry, validate, timeout)",
    ),
    (
        "Toolset::call_with, every layer on, none triggering",
        "`Toolset::call_with`, every layer on, none triggering (cache off)",
    ),
    (
        "Toolset::call_with, every layer on, cache hit",
        "`Toolset::call_with`, every layer on, cache hit",
    ),
];

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

fn policy(extra: &str) -> toolgate::model::config::PolicyConfig {
    let yaml = EVERY_LAYER.replace(
        "      idempotent: true\n",
        &format!("      idempotent: true\n{extra}"),
    );
    toolgate::model::config::ToolsConfig::from_yaml_str(&yaml, std::path::Path::new("bench.yaml"))
        .expect("the bench policy loads")
        .config
        .policy
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let table = std::sync::Arc::new(
        toolset::StaticTools::new(&toolgate::StateMap::new()).expect("table builds"),
    );
    let greet = table
        .tools()
        .into_iter()
        .find(|t| t.name() == "greet")
        .expect("greet is listed");
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
        .block_on(std::sync::Arc::clone(&table).call(&greet, args.clone(), ToolContext::default()))
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

    let mut g = c.benchmark_group(GROUP);
    g.bench_function(ROWS[0].0, |b| {
        let ctx = ToolContext::default();
        b.iter(|| {
            black_box(rt.block_on(std::sync::Arc::clone(&table).call(
                &greet,
                black_box(args.clone()),
                ctx.clone(),
            )))
        });
    });
    g.bench_function(ROWS[1].0, |b| {
        b.iter(|| black_box(rt.block_on(defaults.call("greet", black_box(args.clone())))));
    });
    g.bench_function(ROWS[2].0, |b| {
        b.iter(|| {
            black_box(rt.block_on(every.call_with("greet", black_box(args.clone()), caller())))
        });
    });
    g.bench_function(ROWS[3].0, |b| {
        b.iter(|| {
            black_box(rt.block_on(cached.call_with("greet", black_box(args.clone()), caller())))
        });
    });
    g.finish();
}

fn results(warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "pipeline",
        "one call of the local tool `greet` (same arguments every call, inside the same \
         current-thread `block_on`) through the bare static dispatch, `Toolset::call` with the \
         default layers, and `Toolset::call_with` under a policy that turns on every layer with \
         none triggering, cache off and cache hit; criterion, group `pipeline/greet`.",
        "cargo bench -p toolgate-benches --bench pipeline",
    )
    .columns([
        "variant",
        "time per call: criterion median [95% CI]",
        "÷ bare static dispatch (lower = cheaper) [conservative CI]",
    ]);
    let estimates: Vec<_> = ROWS
        .iter()
        .map(|(name, _)| criterion_estimate(&format!("{GROUP}/{name}")))
        .collect();
    for (i, ((_, label), e)) in ROWS.iter().zip(&estimates).enumerate() {
        let ratio = match (e, &estimates[0]) {
            _ if i == 0 => "1.00× (base)".to_string(),
            (Some(e), Some(base)) => e.ratio_to(base).fmt(fmt_ratio),
            _ => "–".into(),
        };
        table.row([
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            ratio,
        ]);
    }
    if let (Some(bare), Some(every)) = (estimates[0], estimates[2]) {
        table.note(format!(
            "The whole pipeline, every layer on and none triggering, adds {} per call to the \
             bare dispatch ({} its time): issue #8 asks for this figure, with no target.",
            fmt_seconds(every.point - bare.point),
            fmt_ratio(every.point / bare.point),
        ));
    }
    table.note(format!(
        "Every row's result is checked equal to the bare call's before timing. {} warm-up, {} \
         of measurement per row.",
        fmt_duration(warm_up),
        fmt_duration(measurement)
    ));
    table
}

fn main() {
    let (warm_up, measurement) = harness::by_mode(
        (Duration::from_millis(500), Duration::from_secs(2)),
        (Duration::from_secs(1), Duration::from_secs(5)),
    );
    // No plots: the tables are the report, and plotting takes seconds per row here.
    let mut c = Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .nresamples(harness::by_mode(20_000, 100_000))
        .without_plots()
        .configure_from_args();
    bench(&mut c);
    c.final_summary();
    results(warm_up, measurement)
        .write()
        .expect("write pipeline");
}
