//! One local tool call through toolgate's static table, against the floor: decoding the same
//! JSON arguments with serde and calling the function directly.
//!
//! Run: `cargo bench -p toolgate-benches --bench dispatch`. Results and ratios: BENCHMARKS.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{ToolContext, ToolOutput, ToolSource};
use toolgate_benches::{AddArgs, GreetArgs, add, greet, toolset};

fn floor_greet(args: Value) -> ToolOutput {
    let a: GreetArgs = serde_json::from_value(args).expect("valid arguments");
    ToolOutput::text(greet(a.name, a.times))
}

fn floor_greet_borrowed(args: Value) -> ToolOutput {
    let a = GreetArgs::deserialize(&args).expect("valid arguments");
    ToolOutput::text(greet(a.name, a.times))
}

fn floor_add_borrowed(args: Value) -> ToolOutput {
    let a = AddArgs::deserialize(&args).expect("valid arguments");
    ToolOutput::structured(json!(add(a.a, a.b)))
}

fn floor_add(args: Value) -> ToolOutput {
    let a: AddArgs = serde_json::from_value(args).expect("valid arguments");
    ToolOutput::structured(json!(add(a.a, a.b)))
}

fn bench(c: &mut Criterion) {
    let tools = toolset::toolset().build().expect("toolset builds");
    let unvalidated = toolset::toolset()
        .validate_arguments(false)
        .build()
        .expect("toolset builds");
    let table = toolset::StaticTools::new(&toolgate::StateMap::new()).expect("table builds");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = ToolContext::default();

    type Floor = fn(Value) -> ToolOutput;
    let cases: [(&str, Value, Floor, Floor); 2] = [
        (
            "greet",
            json!({"name": "ada", "times": 2}),
            floor_greet,
            floor_greet_borrowed,
        ),
        (
            "add",
            json!({"a": 40, "b": 2}),
            floor_add,
            floor_add_borrowed,
        ),
    ];
    for (tool, args, floor, floor_borrowed) in cases {
        // Every variant must produce the same result, or the comparison means nothing.
        let expected = floor(args.clone());
        let via_table = table
            .call(tool, args.clone(), &ctx)
            .now_or_never()
            .expect("ready")
            .expect("ok");
        let via_toolset = rt.block_on(tools.call(tool, args.clone())).expect("ok");
        assert_eq!(expected, via_table);
        assert_eq!(expected, via_toolset);
        assert_eq!(expected, floor_borrowed(args.clone()));

        let mut g = c.benchmark_group(format!("local_call/{tool}"));
        g.bench_function("floor: serde decode + direct call", |b| {
            b.iter(|| black_box(floor(black_box(args.clone()))));
        });
        g.bench_function("floor: serde decode from &Value + direct call", |b| {
            b.iter(|| black_box(floor_borrowed(black_box(args.clone()))));
        });
        g.bench_function("toolgate: static table (ToolSource::call)", |b| {
            b.iter(|| {
                black_box(
                    table
                        .call(black_box(tool), black_box(args.clone()), &ctx)
                        .now_or_never()
                        .expect("ready"),
                )
            });
        });
        // Toolset::call is async: both it and its floor run inside the same `block_on`.
        g.bench_function("floor in block_on: serde decode + direct call", |b| {
            b.iter(|| black_box(rt.block_on(async { floor(black_box(args.clone())) })));
        });
        g.bench_function("toolgate: Toolset::call", |b| {
            b.iter(|| black_box(rt.block_on(tools.call(black_box(tool), black_box(args.clone())))));
        });
        g.bench_function("toolgate: Toolset::call, validation off", |b| {
            b.iter(|| {
                black_box(rt.block_on(unvalidated.call(black_box(tool), black_box(args.clone()))))
            });
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
