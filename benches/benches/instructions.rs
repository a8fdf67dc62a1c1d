//! Instruction and allocation counts of the per-call path, under valgrind (callgrind and DHAT,
//! through gungraun): the same four calls of `greet` the `pipeline` benchmark times
//! ([`Fixture`]), counted rather than timed, so that a ratio between them does not move with the
//! machine's load.
//!
//! Each benchmark makes [`CALLS`] (100) calls on a fixture built (and called once per variant)
//! outside the measurement: a count ÷ [`CALLS`] is the instructions of one warm call, the
//! argument clone of each call included (the same in every row).
//!
//! Run: `cargo bench -p toolgate-benches --features callgrind --bench instructions` (needs
//! valgrind and `gungraun-runner` 0.20.0 on the `PATH`: `cargo install gungraun-runner
//! --version 0.20.0 --locked`; `scripts/bench.sh` installs it). Behind the `callgrind` feature so
//! that `cargo test --all-targets` (which has no runner) leaves it out. `scripts/bench.sh` runs
//! it with `--output-format=json` and `bench-report` makes the `instructions` table of
//! BENCHMARKS.md.

use std::hint::black_box;

use gungraun::{Dhat, LibraryBenchmarkConfig, library_benchmark, library_benchmark_group, main};
use toolgate_benches::pipeline::{CALLS_PER_MEASUREMENT as CALLS, Fixture};

fn fixture() -> Fixture {
    Fixture::new()
}

#[library_benchmark]
#[bench::calls_100(fixture())]
fn bare_static_dispatch(f: Fixture) -> Fixture {
    for _ in 0..CALLS {
        let _ = black_box(f.bare(black_box(f.args.clone())));
    }
    f
}

#[library_benchmark]
#[bench::calls_100(fixture())]
fn default_layers(f: Fixture) -> Fixture {
    for _ in 0..CALLS {
        let _ = black_box(f.defaults(black_box(f.args.clone())));
    }
    f
}

#[library_benchmark]
#[bench::calls_100(fixture())]
fn every_layer(f: Fixture) -> Fixture {
    for _ in 0..CALLS {
        let _ = black_box(f.every_layer(black_box(f.args.clone())));
    }
    f
}

#[library_benchmark]
#[bench::calls_100(fixture())]
fn every_layer_cache_hit(f: Fixture) -> Fixture {
    for _ in 0..CALLS {
        let _ = black_box(f.cache_hit(black_box(f.args.clone())));
    }
    f
}

library_benchmark_group!(
    name = call_path,
    benchmarks = [
        bare_static_dispatch,
        default_layers,
        every_layer,
        every_layer_cache_hit
    ]
);

// Callgrind (instructions) and DHAT (heap blocks allocated: allocations per call), each
// counting only inside the benchmark function.
main!(
    config = LibraryBenchmarkConfig::default().tool(Dhat::default());
    library_benchmark_groups = call_path
);
