//! The scale benchmark's cost tables: `scale-memory` and `scale-build`.

use toolgate_benches::harness::{Samples, fmt_bytes, fmt_ratio, fmt_seconds, fmt_spread};
use toolgate_benches::report::Table;
use toolgate_benches::scale::CODEGEN_PROFILE;

use crate::memory::Measured;
use crate::tables::{COMMAND, Context, thousands};

fn marginal(at_n: f64, at_first: f64, n: usize, first: usize) -> f64 {
    (at_n - at_first) / (n - first) as f64
}

/// The `scale-memory` table.
pub fn memory(ctx: &Context<'_>) -> Table {
    let mut table = Table::new(
        "scale-memory",
        "memory per tool of the same toolsets: heap bytes live after `toolset().build()` and \
         the peak while building (a counting global allocator, in a fresh child process per \
         size and round), the embedded conversion in the binary, and the resident set's growth; \
         next to rmcp's `ToolRouter` of the same MCP definitions (heap) and FastMCP \
         `from_openapi` + first `list_tools()` on the same document (resident set).",
        COMMAND,
    )
    .columns([
        "tools",
        "toolgate: heap live after build (per tool)",
        "toolgate: marginal heap per tool (over the 10-tool toolset)",
        "toolgate: heap blocks live per tool",
        "toolgate: peak heap while building, per tool",
        "toolgate: embedded conversion (read-only data), per tool",
        "toolgate: resident set growth, marginal per tool",
        "rmcp `ToolRouter`: heap per tool",
        "FastMCP: resident set growth, marginal per tool",
        "FastMCP ÷ toolgate, resident set marginal per tool (higher = toolgate leaner)",
    ]);
    let first = ctx.sizes[0].tools;
    let runs = |n: usize| {
        ctx.memory
            .toolgate
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    };
    let med = |v: &[Measured], f: fn(&Measured) -> f64| Samples::new(v.iter().map(f)).median();
    let base = runs(first);
    let fast = |n: usize| {
        ctx.fastmcp
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, f)| f.rss)
    };
    for size in ctx.sizes {
        let n = size.tools;
        let nf = n as f64;
        let r = runs(n);
        let heap = med(&r, |m| m.heap);
        let rmcp = ctx
            .memory
            .rmcp
            .iter()
            .find(|(m, _)| *m == n)
            .map_or(f64::NAN, |(_, m)| m.heap);
        let (marginal_heap, rss, versus) = if n == first {
            ("–".to_string(), "–".to_string(), "–".to_string())
        } else {
            let rss: Samples = Samples::new(
                r.iter()
                    .zip(&base)
                    .map(|(a, b)| marginal(a.rss, b.rss, n, first)),
            );
            let versus = match (fast(n), fast(first)) {
                (Some(a), Some(b)) => {
                    let f = marginal(a, b, n, first);
                    fmt_spread(&Samples::new(rss.values().iter().map(|t| f / t)), fmt_ratio)
                }
                _ => "–".into(),
            };
            (
                fmt_bytes(marginal(heap, med(&base, |m| m.heap), n, first)),
                fmt_spread(&rss, fmt_bytes),
                versus,
            )
        };
        let fm = match (fast(n), fast(first)) {
            (Some(a), Some(b)) if n != first => fmt_bytes(marginal(a, b, n, first)),
            (Some(a), _) => format!("– ({} in all)", fmt_bytes(a)),
            _ => "–".into(),
        };
        table.row([
            thousands(n),
            format!("{} ({})", fmt_bytes(heap), fmt_bytes(heap / nf)),
            marginal_heap,
            format!("{:.1}", med(&r, |m| m.blocks) / nf),
            fmt_bytes(med(&r, |m| m.peak) / nf),
            fmt_bytes(size.embedded_bytes as f64 / nf),
            rss,
            fmt_bytes(rmcp / nf),
            fm,
            versus,
        ]);
    }
    let docs = &ctx.memory.documents;
    let doc_tools = docs.first().map_or(f64::NAN, |m| m.tools);
    let doc_heap = med(docs, |m| m.heap) / doc_tools;
    table.row([
        format!(
            "{}: {}",
            crate::documents::LABEL,
            thousands(doc_tools as usize)
        ),
        format!(
            "{} ({})",
            fmt_bytes(med(docs, |m| m.heap)),
            fmt_bytes(doc_heap)
        ),
        "–".into(),
        format!("{:.1}", med(docs, |m| m.blocks) / doc_tools),
        fmt_bytes(med(docs, |m| m.peak) / doc_tools),
        fmt_bytes(med(docs, |m| m.embedded) / doc_tools),
        "–".into(),
        fmt_bytes(ctx.memory.documents_rmcp.heap / ctx.memory.documents_rmcp.tools),
        "–".into(),
        "–".into(),
    ]);
    let goal = 8.0 * 1024.0;
    table.note(format!(
        "Goal: heap per OpenAPI tool on {} ≤ {}: **{}**, {} per tool ({} tools, two compiled \
         sources built as generated code builds them: each conversion as the JSON the codegen \
         embeds, `__private::embedded_openapi`, `OpenApiSource::builder(..).config(..)`; the \
         documents are read and converted before the count starts).",
        crate::documents::LABEL,
        fmt_bytes(goal),
        if doc_heap <= goal { "met" } else { "not met" },
        fmt_bytes(doc_heap),
        thousands(doc_tools as usize),
    ));
    let rounds = ctx.memory.toolgate.first().map_or(0, |(_, r)| r.len());
    table.note(format!(
        "Heap: bytes requested from the allocator (its own per-block overhead not included), \
         live after the build minus before, in a child process that only builds the toolset \
         ({rounds} round(s), median; heap numbers do not vary). \"Marginal\" = (value at N − \
         value at {first}) ÷ (N − {first}): what one more tool costs, without the fixed cost (the \
         HTTP client, the parsed tools.yaml, the policy pipeline). The peak includes the \
         embedded conversion parsed into its `Conversion` before the descriptors are made from \
         it. The embedded conversion (`include_str!`) is in the binary's read-only data, paged \
         in from the file."
    ));
    table.note(
        "What toolgate holds per tool after the build: in the source, each schema once, as \
         JSON text, its `$defs` entries shared by every tool of the source that has the same \
         entry (the conversion copies each component a tool reaches into its `$defs`), and the \
         operation the HTTP call follows; and, in the catalog, each tool's descriptor, its \
         schemas parsed back into `serde_json::Value`s (a DHAT profile puts most of the heap \
         there: `compact::parse` called from `Catalog::build`). Holding the descriptors' \
         schemas as text is what a few KiB per tool needs. The peak is the embedded conversion \
         parsed whole before it is compacted. rmcp's router holds one copy of the MCP \
         definitions, as `Value`s.",
    );
    table.note(
        "Resident set: `/proc/self/statm` growth across the build (toolgate) or `from_openapi` \
         + the first listing (FastMCP), median [min–max] over the rounds for toolgate, one run \
         for FastMCP; it includes memory freed but kept by the allocator. rmcp's router: the \
         heap of its `Tool`s (built from toolgate's MCP export, which is freed before) and \
         routes, one run.",
    );
    table
}

/// The `scale-build` table.
pub fn build(ctx: &Context<'_>) -> Table {
    let mut table = Table::new(
        "scale-build",
        "what the same toolsets cost at build time: the codegen (`toolgate_codegen::Builder::\
         generate`: the document read, converted, every tool's export checked, the code and the \
         embedded conversion written), timed inside `benches/build.rs`, and rustc on each \
         generated file compiled alone as a library crate against the `toolgate` the benchmark \
         was built with, over an empty crate that only links `toolgate`.",
        COMMAND,
    );
    let rustc = ctx.rustc.as_ref().ok();
    let flag_names: Vec<&str> = rustc
        .map(|(_, t)| t.iter().map(|(f, _, _)| f.name).collect())
        .unwrap_or_default();
    let mut columns = vec![
        "tools".to_string(),
        "OpenAPI document".into(),
        "embedded conversion".into(),
        "generated Rust lines".into(),
        format!("codegen (build script, `{CODEGEN_PROFILE}` build)"),
    ];
    for f in &flag_names {
        columns.push(format!(
            "rustc, {f} flags: generated code over the empty crate"
        ));
    }
    let what = if rustc.is_some() {
        "codegen + rustc (dev)"
    } else {
        "codegen alone (rustc not measured)"
    };
    columns.push(format!("{what}, per tool"));
    columns.push(format!(
        "{what} ÷ the {}-tool toolset's (lower = better)",
        thousands(ctx.sizes[0].tools)
    ));
    table = table.columns(columns);
    let added = |k: usize, f: usize| -> Option<Samples> {
        let (_, t) = rustc?;
        let (_, empty, sizes) = t.get(f)?;
        Some(Samples::new(
            sizes[k]
                .values()
                .iter()
                .zip(empty.values())
                .map(|(a, b)| a - b),
        ))
    };
    let total = |k: usize| -> Samples {
        let codegen = ctx.sizes[k].codegen_seconds;
        added(k, 0).map_or_else(
            || Samples::new([codegen]),
            |a| Samples::new(a.values().iter().map(|x| codegen + x)),
        )
    };
    let base = total(0);
    for (k, size) in ctx.sizes.iter().enumerate() {
        let mut cells = vec![
            thousands(size.tools),
            fmt_bytes(size.document_bytes as f64),
            fmt_bytes(size.embedded_bytes as f64),
            thousands(size.generated_lines),
            fmt_seconds(size.codegen_seconds),
        ];
        for f in 0..flag_names.len() {
            cells.push(added(k, f).map_or("–".into(), |s| fmt_spread(&s, fmt_seconds)));
        }
        let t = total(k);
        let per_tool = Samples::new(t.values().iter().map(|x| x / size.tools as f64));
        cells.push(fmt_spread(&per_tool, fmt_seconds));
        cells.push(fmt_spread(&t.ratio_to(&base), fmt_ratio));
        table.row(cells);
    }
    match ctx.rustc {
        Ok((version, t)) => {
            let empties: Vec<String> = t
                .iter()
                .map(|(f, e, _)| format!("{} {}", f.name, fmt_spread(e, fmt_seconds)))
                .collect();
            table.note(format!(
                "rustc: {version}; {} rounds, the crates in rotating order, median [min–max] of \
                 the per-round difference to the empty crate (which took {}). Flags: cargo's \
                 dev (`opt-level=0`, `debuginfo=2`, 256 codegen units) and release \
                 (`opt-level=3`, 16 codegen units) defaults, no incremental state. \
                 The crates are under `target/bench-scale/`.",
                t.first().map_or(0, |(_, e, _)| e.len()),
                empties.join(", ")
            ));
        }
        Err(why) => table.note(format!("rustc on the generated code: {why}.")),
    }
    table.note(format!(
        "Codegen: one measurement per build, by the build script of the `{CODEGEN_PROFILE}` \
         build that produced this benchmark (cargo builds build scripts and their dependencies \
         unoptimized in release builds by default; this workspace's dev profile optimizes \
         `toolgate-model`, `serde_json` and `serde-saphyr`, so a debug build's codegen is \
         faster). `typed: false`: the generated Rust is the same few lines at every size; what \
         grows is the conversion embedded with `include_str!` (the typed face, one struct and \
         one `async fn` per operation, costs rustc about 17 ms per operation in a dev build: \
         see \"OpenAPI conversion\")."
    ));
    table
}
