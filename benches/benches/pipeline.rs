//! The cost of the policy pipeline: one call of a local tool with every layer turned on but none
//! triggering, against the bare static dispatch, in the same run (time; the same calls counted
//! in instructions: `benches/benches/instructions.rs`).
//!
//! Rows: the four calls of [`Fixture`] (tool `greet` of `benches/src/lib.rs`, the same
//! arguments every time) — the bare static dispatch, `Toolset::call` with the default layers,
//! `Toolset::call_with` under every layer none triggering (cache off), and cache hit.
//!
//! One table, `pipeline` (`toolgate_benches::report`), from criterion's estimates (group
//! `pipeline/greet`), each row's ratio to the bare static dispatch.
//!
//! Run: `cargo bench -p toolgate-benches --bench pipeline` (`TOOLGATE_BENCH_QUICK=1` for shorter
//! criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use toolgate_benches::harness::{self, fmt_duration, fmt_ratio, fmt_seconds};
use toolgate_benches::pipeline::Fixture;
use toolgate_benches::report::{Table, criterion_estimate};

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

fn bench(c: &mut Criterion) {
    let f = Fixture::new();
    let args = f.args.clone();
    let mut g = c.benchmark_group(GROUP);
    g.bench_function(ROWS[0].0, |b| {
        b.iter(|| black_box(f.bare(black_box(args.clone()))));
    });
    g.bench_function(ROWS[1].0, |b| {
        b.iter(|| black_box(f.defaults(black_box(args.clone()))));
    });
    g.bench_function(ROWS[2].0, |b| {
        b.iter(|| black_box(f.every_layer(black_box(args.clone()))));
    });
    g.bench_function(ROWS[3].0, |b| {
        b.iter(|| black_box(f.cache_hit(black_box(args.clone()))));
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
    let (mut c, warm_up, measurement) = harness::criterion();
    bench(&mut c);
    c.final_summary();
    results(warm_up, measurement)
        .write()
        .expect("write pipeline");
}
