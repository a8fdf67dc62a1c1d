//! Lookup at sizes the generated toolsets do not reach: `Toolset::describe` of every name in
//! turn (in a fixed shuffled order, so that names are not met in memory order) on toolsets of
//! one stub source of 10, 10 000 and 100 000 tools (`toolgate::testing::StubSource`: a
//! descriptor per tool and nothing else), criterion group `scale-lookup/n{N}`. The table
//! `scale-lookup` gives each size's time per lookup and its ratio to 10 tools (flat = 1.00×).

use criterion::Criterion;
use toolgate::testing::StubSource;
use toolgate::{ToolOutput, Toolset};
use toolgate_benches::harness::{self, fmt_ratio, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};

use crate::tables::thousands;

/// The sizes, smallest (the base) first.
pub const SIZES: [usize; 3] = [10, 10_000, 100_000];

const ROW: &str = "describe: names in turn";

fn group(n: usize) -> String {
    format!("scale-lookup/n{n}")
}

/// A toolset of one stub source with `n` tools, and their names shuffled.
fn toolset(n: usize) -> (Toolset, Vec<String>) {
    let mut source = StubSource::new("api");
    let mut names = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("svc{:03}_op{i:06}", i / 5);
        source = source.stub(&name, |_| Ok(ToolOutput::text("ok")));
        names.push(name);
    }
    let toolset = Toolset::builder()
        .source(source)
        .build()
        .expect("the toolset builds");
    let names = crate::shuffled(names);
    for name in &names {
        assert!(toolset.describe(name).is_some(), "{name}");
    }
    (toolset, names)
}

/// Measures every size (`sizes`: all of [`SIZES`], or fewer under `cargo test`).
pub fn bench(c: &mut Criterion, sizes: &[usize]) {
    for &n in sizes {
        let (ts, names) = toolset(n);
        let mut g = c.benchmark_group(group(n));
        g.sample_size(20);
        g.bench_function(ROW, |bn| {
            bn.iter(crate::in_turn(&names, |name| ts.describe(name).is_some()));
        });
        g.finish();
    }
}

/// The `scale-lookup` table, from criterion's estimates.
pub fn table() -> Table {
    let mut table = Table::new(
        "scale-lookup",
        &format!(
            "`Toolset::describe` of every name in turn (shuffled order) on toolsets of one stub \
             source (`toolgate::testing::StubSource`) of {} tools; criterion, groups \
             `scale-lookup/n{{N}}`.",
            SIZES.map(thousands).join(" / ")
        ),
        super::tables::COMMAND,
    )
    .columns([
        "tools",
        "time per lookup: criterion median [95% CI]",
        "÷ 10 tools (flat = 1.00×) [conservative CI]",
    ]);
    let estimates: Vec<_> = SIZES
        .iter()
        .map(|n| criterion_estimate(&format!("{}/{ROW}", group(*n))))
        .collect();
    for (n, e) in SIZES.iter().zip(&estimates) {
        let ratio = match (e, &estimates[0]) {
            _ if *n == SIZES[0] => "1.00× (base)".to_string(),
            (Some(e), Some(base)) => e.ratio_to(base).fmt(fmt_ratio),
            _ => "–".into(),
        };
        table.row([
            thousands(*n),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            ratio,
        ]);
    }
    table.note(format!(
        "Goal: at 10 000 and 100 000 tools at most 1.5× the lookup at 10. {}",
        if harness::quick_mode() {
            "Quick mode: shorter criterion times."
        } else {
            "20 criterion samples per size."
        }
    ));
    table
}
