//! The cost of the guardrail layer on a 10 KB result: one `Toolset::call` of a tool answering
//! the same 10 KB text every call, without guardrails (the base) and under a `mask` guardrail
//! with every built-in detector, on a text with nothing to mask and on one with 40 findings
//! (e-mails, phone numbers, IBANs, card numbers, API keys). The tool is an in-process source
//! whose answer is a clone of the text, so a row's difference to the base is what the layer
//! costs.
//!
//! One table, `guardrails` (`toolgate_benches::report`), from criterion's estimates (group
//! `guardrails/10kb`).
//!
//! Run: `cargo bench -p toolgate-benches --bench guardrails` (`TOOLGATE_BENCH_QUICK=1` for
//! shorter criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use serde_json::{Value, json};
use toolgate::{
    SourceTool, ToolContext, ToolDescriptor, ToolFuture, ToolOutput, ToolSource, Toolset,
};
use toolgate_benches::harness::{self, fmt_duration, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};

const GROUP: &str = "guardrails/10kb";

/// The rows: criterion function name, row label, tool called, guardrail on.
const ROWS: [(&str, &str, &str, bool); 3] = [
    (
        "no guardrail",
        "**no guardrail** (10 KB, nothing to mask)",
        "docs.clean",
        false,
    ),
    (
        "mask, nothing to mask",
        "`mask` (every detector), 10 KB with nothing to mask",
        "docs.clean",
        true,
    ),
    (
        "mask, 40 findings",
        "`mask` (every detector), 10 KB with 40 findings",
        "docs.leaky",
        true,
    ),
];

/// About 10 KB of order-log text; with `findings`, every other line of the first 80 carries personal data or a
/// key (4 of each of 10 kinds over 40 lines).
fn text(findings: bool) -> String {
    let extras = [
        "contact ann.smith@example.org",
        "call +41 44 668 18 00",
        "refund to DE89 3704 0044 0532 0130 00",
        "paid with 4111 1111 1111 1111",
        "key AKIAIOSFODNN7EXAMPLE",
        "token ghp_a1B2c3D4e5a1B2c3D4e5a1B2c3D4e5a1B2c3D4e5",
        "slack xoxb-123456789012-abcdefghijkl",
        "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "auth Bearer abcdefghijklmnopqrstuvwxyz012345",
        "mail bob@example.net",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 10 * 1024 {
        out.push_str(&format!(
            "2026-12-07T10:{:02}:{:02}Z order {} status shipped to Berlin, item USB-C cable qty 2 price 9.99 EUR",
            i / 60 % 60,
            i % 60,
            48_213 + i
        ));
        if findings && i % 2 == 0 && i / 2 < 40 {
            out.push_str(", ");
            out.push_str(extras[(i / 2) % extras.len()]);
        }
        out.push('\n');
        i += 1;
    }
    out
}

/// Two tools answering a fixed text: `clean` and `leaky`.
struct Docs {
    clean: ToolOutput,
    leaky: ToolOutput,
}

impl ToolSource for Docs {
    fn id(&self) -> &str {
        "docs"
    }

    fn tools(&self) -> Vec<SourceTool> {
        ["clean", "leaky"]
            .into_iter()
            .map(|name| {
                let d = ToolDescriptor {
                    name: format!("docs.{name}"),
                    description: "A page of the order log.".into(),
                    input_schema: json!({"type": "object"}),
                    source: "docs".into(),
                    ..ToolDescriptor::default()
                };
                SourceTool::named(Arc::new(d), name)
            })
            .collect()
    }

    fn call(self: Arc<Self>, tool: &SourceTool, _: Value, _: ToolContext) -> ToolFuture<'static> {
        let out = if tool.descriptor.name.ends_with("leaky") {
            self.leaky.clone()
        } else {
            self.clean.clone()
        };
        ToolFuture::ready(Ok(out))
    }
}

fn toolset(guardrail: bool) -> Toolset {
    let yaml = if guardrail {
        "version: 1\npolicy:\n  guardrails:\n    pii: {mask: {}}\n  defaults: {guardrails: [pii]}\n"
    } else {
        "version: 1\n"
    };
    let policy = toolgate::model::config::ToolsConfig::from_yaml_str(
        yaml,
        std::path::Path::new("bench.yaml"),
    )
    .expect("the bench policy loads")
    .config
    .policy;
    let docs = Docs {
        clean: ToolOutput::text(text(false)),
        leaky: ToolOutput::text(text(true)),
    };
    Toolset::builder()
        .source(docs)
        .policy(&policy)
        .build()
        .expect("toolset builds")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (plain, guarded) = (toolset(false), toolset(true));
    // What is measured does what it says: the clean text passes unchanged, the leaky one is
    // masked (40 findings, none of them left).
    let clean = rt
        .block_on(guarded.call("docs.clean", json!({})))
        .expect("ok");
    assert_eq!(clean.text_joined(), text(false));
    let masked = rt
        .block_on(guarded.call("docs.leaky", json!({})))
        .expect("ok")
        .text_joined();
    assert_eq!(masked.matches('[').count(), 40, "{masked}");
    for secret in ["example.org", "4111 1111", "AKIA", "DE89", "+41 44"] {
        assert!(!masked.contains(secret), "{secret} left in the masked text");
    }
    let mut g = c.benchmark_group(GROUP);
    for (name, _, tool, on) in ROWS {
        let ts = if on { &guarded } else { &plain };
        g.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(ts.call(tool, black_box(json!({}))))));
        });
    }
    g.finish();
}

fn results(warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "guardrails",
        "one `Toolset::call` of an in-process tool answering the same 10 KB text (10 240 bytes of \
         order log), without guardrails and under a `mask` guardrail with every built-in \
         detector, on a text with nothing to mask and on one with 40 findings; criterion, group \
         `guardrails/10kb`.",
        "cargo bench -p toolgate-benches --bench guardrails",
    )
    .columns([
        "variant",
        "time per call: criterion median [95% CI]",
        "the guardrail's cost (row − base)",
    ]);
    let estimates: Vec<_> = ROWS
        .iter()
        .map(|(name, ..)| criterion_estimate(&format!("{GROUP}/{name}")))
        .collect();
    for (i, ((_, label, ..), e)) in ROWS.iter().zip(&estimates).enumerate() {
        let cost = match (e, &estimates[0]) {
            _ if i == 0 => "(base)".to_string(),
            (Some(e), Some(base)) => fmt_seconds(e.point - base.point),
            _ => "–".into(),
        };
        table.row([
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            cost,
        ]);
    }
    table.note(format!(
        "Each row's result is checked before timing (the clean text unchanged, the 40 findings \
         masked). {} warm-up, {} of measurement per row.",
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
        .expect("write guardrails");
}
