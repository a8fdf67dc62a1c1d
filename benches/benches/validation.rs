//! Argument validation: what checking a typical argument object against its JSON Schema costs,
//! next to decoding the same object with serde (which every call does anyway).
//!
//! Rows, same arguments, same run:
//! - serde decode alone (the reference);
//! - validation with the tool's compiled validator (what `Toolset::call` does, from
//!   `ValidatorCache`), and validation + decode;
//! - validation compiling the schema on every call (what a gateway without a validator cache
//!   pays);
//! - `Toolset::call` with validation on (the default) and off.
//!
//! Run: `cargo bench -p toolgate-benches --bench validation`. Results and ratios: BENCHMARKS.md.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::json;
use toolgate::{ArgumentValidator, ValidationMode};
use toolgate_benches::{SearchArgs, toolset};

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
    // And the validator must be able to say no.
    assert!(!validator.is_valid(&json!({"query": "", "sort": "newest"})));

    let mut g = c.benchmark_group("validation/search");
    g.bench_function("serde decode from &Value (reference)", |b| {
        b.iter(|| black_box(SearchArgs::deserialize(black_box(&args)).expect("decodes")));
    });
    g.bench_function("validate, compiled validator", |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&args))));
    });
    // `check` takes the arguments by value: the copy is made (and dropped) outside the
    // measurement.
    g.bench_function("validate (check, strict) + serde decode", |b| {
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
    g.bench_function("validate, compiling the schema every call", |b| {
        b.iter(|| {
            let v = ArgumentValidator::compile("search", black_box(&schema)).expect("compiles");
            black_box(v.is_valid(black_box(&args)))
        });
    });
    for (name, tools) in [
        ("Toolset::call, validation off", &off),
        ("Toolset::call, validation on (default)", &on),
    ] {
        // As in the dispatch bench: the argument copy is inside the measurement, the same for
        // both rows.
        g.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(tools.call("search", black_box(args.clone())))));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
