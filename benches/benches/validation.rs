//! Argument validation: what checking a typical argument object against its JSON Schema costs,
//! with the compiled-validator cache, compiling the schema on every call, and no validation at
//! all, in the same run.
//!
//! Rows, same arguments (`search` of `benches/src/lib.rs`), two levels:
//! - decode level: **no validation** (serde decode alone, what every call does anyway; the base),
//!   then serde decode after the tool's compiled validator (what `Toolset::call` takes from
//!   `ValidatorCache`), after the same through `check` (strict, the arguments moved in and out,
//!   as `Toolset::call` does), and after compiling the schema on every call (what a gateway
//!   without a validator cache pays); and the compiled validator's check alone;
//! - call level: `Toolset::call` with validation off (**no validation**, the base) and on (the
//!   default: the compiled-validator cache).
//!
//! One table, `validation` (`toolgate_benches::report`), from criterion's estimates (group
//! `validation/search`), each row's ratio to the no-validation row of its level.
//!
//! Run: `cargo bench -p toolgate-benches --bench validation` (`TOOLGATE_BENCH_QUICK=1` for
//! shorter criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion};
use serde::Deserialize;
use serde_json::json;
use toolgate::{ArgumentValidator, ValidationMode};
use toolgate_benches::harness::{self, fmt_duration, fmt_ratio, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};
use toolgate_benches::{SearchArgs, toolset};

const GROUP: &str = "validation/search";

/// The rows: (level, criterion function name, row label, index of its base row).
const ROWS: [(&str, &str, &str, usize); 7] = [
    (
        "decode",
        "no validation: serde decode from &Value",
        "**no validation**: serde decode from `&Value`",
        0,
    ),
    (
        "decode",
        "compiled validator (is_valid) + serde decode",
        "compiled validator (`is_valid`, the cache's) + serde decode",
        0,
    ),
    (
        "decode",
        "compiled validator (check, strict) + serde decode",
        "compiled validator (`check`, strict: the arguments moved in and out) + serde decode",
        0,
    ),
    (
        "decode",
        "compiled validator alone (is_valid)",
        "compiled validator alone (`is_valid`, no decode)",
        0,
    ),
    (
        "decode",
        "compiling the schema every call + serde decode",
        "compiling the schema on every call (no cache) + `is_valid` + serde decode",
        0,
    ),
    (
        "call",
        "Toolset::call, validation off",
        "**no validation**: `Toolset::call`, `validate_arguments(false)`",
        5,
    ),
    (
        "call",
        "Toolset::call, validation on (default)",
        "`Toolset::call`, validation on (the default: compiled-validator cache)",
        5,
    ),
];

fn bench(c: &mut Criterion) {
    let args = json!({
        "query": "rust async runtimes",
        "limit": 20,
        "filter": {"year": 2024, "tags": ["tokio", "io"]},
        "sort": "newest"
    });
    let on = toolset::toolset().build().expect("toolset builds");
    let off = toolset::toolset()
        .validate_arguments(false)
        .build()
        .expect("toolset builds");
    let schema = on.describe("search").expect("search").input_schema.clone();
    let validator = ArgumentValidator::compile("search", &schema).expect("compiles");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // Every row must see valid arguments, or the comparison means nothing.
    assert!(validator.is_valid(&args));
    SearchArgs::deserialize(&args).expect("decodes");
    let a = rt.block_on(on.call("search", args.clone())).expect("ok");
    let b = rt.block_on(off.call("search", args.clone())).expect("ok");
    assert_eq!(a, b);
    // And the validator must be able to say no, also through the call.
    let invalid = json!({"query": "", "sort": "newest"});
    assert!(!validator.is_valid(&invalid));
    assert!(rt.block_on(on.call("search", invalid)).is_err());

    let name = |i: usize| ROWS[i].1;
    let mut g = c.benchmark_group(GROUP);
    g.bench_function(name(0), |b| {
        b.iter(|| black_box(SearchArgs::deserialize(black_box(&args)).expect("decodes")));
    });
    g.bench_function(name(1), |b| {
        b.iter(|| {
            assert!(validator.is_valid(black_box(&args)));
            black_box(SearchArgs::deserialize(black_box(&args)).expect("decodes"))
        });
    });
    // `check` takes the arguments by value: the copy is made (and dropped) outside the
    // measurement.
    g.bench_function(name(2), |b| {
        b.iter_batched(
            || args.clone(),
            |sent| {
                let checked = validator
                    .check("search", black_box(sent), ValidationMode::Strict)
                    .expect("valid");
                let decoded = SearchArgs::deserialize(&checked.args).expect("decodes");
                // Returned, so that dropping the arguments is not measured.
                black_box((checked, decoded))
            },
            BatchSize::SmallInput,
        );
    });
    g.bench_function(name(3), |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&args))));
    });
    g.bench_function(name(4), |b| {
        b.iter(|| {
            let v = ArgumentValidator::compile("search", black_box(&schema)).expect("compiles");
            assert!(v.is_valid(black_box(&args)));
            black_box(SearchArgs::deserialize(black_box(&args)).expect("decodes"))
        });
    });
    for (i, tools) in [(5, &off), (6, &on)] {
        // As in the dispatch bench: the argument copy is inside the measurement, the same for
        // both rows.
        g.bench_function(name(i), |b| {
            b.iter(|| black_box(rt.block_on(tools.call("search", black_box(args.clone())))));
        });
    }
    g.finish();
}

fn table(warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "validation",
        "checking a typical argument object (`search` of `benches/src/lib.rs`: a string with \
         `minLength`, a bounded integer with a default, an optional nested object with an \
         array, an enum) against its JSON Schema 2020-12: the compiled-validator cache vs \
         compiling the schema on every call vs no validation, next to the serde decode every \
         call does, and through the whole `Toolset::call`; criterion, group `validation/search`.",
        "cargo bench -p toolgate-benches --bench validation",
    )
    .columns([
        "level",
        "variant",
        "time per call: criterion median [95% CI]",
        "÷ no validation, same level (lower = cheaper) [conservative CI]",
    ]);
    let estimates: Vec<_> = ROWS
        .iter()
        .map(|row| criterion_estimate(&format!("{GROUP}/{}", row.1)))
        .collect();
    for (i, ((level, _, label, base), e)) in ROWS.iter().zip(&estimates).enumerate() {
        let ratio = match (e, &estimates[*base]) {
            _ if i == *base => "1.00× (base)".to_string(),
            (Some(e), Some(b)) => e.ratio_to(b).fmt(fmt_ratio),
            _ => "–".into(),
        };
        table.row([
            level.to_string(),
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            ratio,
        ]);
    }
    table.note(
        "Arguments: `{\"query\": \"rust async runtimes\", \"limit\": 20, \"filter\": {\"year\": \
         2024, \"tags\": [\"tokio\", \"io\"]}, \"sort\": \"newest\"}`. Decode level: each row \
         works on a borrowed `&Value` except `check`, which takes the arguments by value (their \
         copy made outside the measurement). Call level: the argument copy is inside the \
         measurement, the same for both rows.",
    );
    table.note(format!(
        "{} warm-up, {} of measurement per row.",
        fmt_duration(warm_up),
        fmt_duration(measurement)
    ));
    table
}

fn main() {
    let (warm_up, measurement) = harness::by_mode(
        (Duration::from_millis(300), Duration::from_secs(1)),
        (Duration::from_millis(800), Duration::from_millis(2500)),
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
    table(warm_up, measurement)
        .write()
        .expect("write validation");
}
