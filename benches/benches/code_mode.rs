//! Code mode's cost (docs/code-mode.md): a `run_python` run's cold start (a fresh monty
//! interpreter, `1` as the code) through the toolset, and one call of the local tool `greet`
//! made from code (`tools.greet(name='ada', times=2)`) against the same call made directly;
//! the call's cost from code is that run minus the empty run.
//!
//! One table, `code_mode` (`toolgate_benches::report`), from criterion's estimates (group
//! `code_mode/greet`).
//!
//! Run: `cargo bench -p toolgate-benches --features code-mode --bench code_mode`
//! (`TOOLGATE_BENCH_QUICK=1` for shorter criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use serde_json::{Value, json};
use toolgate::Toolset;
use toolgate::code_mode::{CodeModeExt, CodeModeSettings};
use toolgate_benches::harness::{self, fmt_duration, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};

const GROUP: &str = "code_mode/greet";

/// The rows: criterion function name, row label, tool and arguments.
fn rows() -> [(&'static str, &'static str, &'static str, Value); 3] {
    [
        (
            "direct",
            "`greet` called directly (`Toolset::call`)",
            "greet",
            json!({"name": "ada", "times": 2}),
        ),
        (
            "run_python empty",
            "`run_python` with `1`: a run's cold start",
            "run_python",
            json!({"code": "1"}),
        ),
        (
            "run_python greet",
            "`run_python` with `tools.greet(name='ada', times=2)`",
            "run_python",
            json!({"code": "tools.greet(name='ada', times=2)"}),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tools: Toolset = toolgate_benches::toolset::toolset()
        .code_mode(CodeModeSettings::default())
        .build()
        .expect("toolset builds");
    let direct = rt
        .block_on(tools.call("greet", rows()[0].3.clone()))
        .expect("greet");
    let from_code = rt
        .block_on(tools.call("run_python", rows()[2].3.clone()))
        .expect("run_python");
    // The code's result is the tool's: the same call either way.
    let result = from_code.structured.expect("structured")["result"].clone();
    assert_eq!(Some(result), direct.structured, "greet from code");
    let mut g = c.benchmark_group(GROUP);
    for (name, _, tool, args) in rows() {
        g.bench_function(name, |b| {
            b.iter(|| {
                black_box(rt.block_on(tools.call(tool, black_box(args.clone())))).expect("the call")
            });
        });
    }
    g.finish();
}

fn results(warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "code_mode",
        "a `run_python` run through the toolset with the monty engine, and one call of the \
         local tool `greet` made from code against the same call made directly; criterion, \
         group `code_mode/greet`.",
        "cargo bench -p toolgate-benches --features code-mode --bench code_mode",
    )
    .columns([
        "what",
        "time: criterion median [95% CI]",
        "runs or calls per second",
    ]);
    let estimates: Vec<_> = rows()
        .iter()
        .map(|(name, ..)| criterion_estimate(&format!("{GROUP}/{name}")))
        .collect();
    for ((_, label, ..), e) in rows().iter().zip(&estimates) {
        table.row([
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            e.map_or("–".into(), |e| format!("{:.0}", 1.0 / e.point)),
        ]);
    }
    if let (Some(empty), Some(call), Some(direct)) = (&estimates[1], &estimates[2], &estimates[0]) {
        table.row([
            "a tool call from code (greet run − empty run)".into(),
            fmt_seconds(call.point - empty.point),
            format!(
                "{:.1}× the direct call",
                (call.point - empty.point) / direct.point
            ),
        ]);
    }
    table.note(format!(
        "{} warm-up, {} of measurement per row.",
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
        .expect("write code_mode");
}
