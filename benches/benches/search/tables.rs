//! The search benchmark's tables: `search-quality`, `search-categories`, `search-scale`,
//! `search-context`.

use toolgate_benches::harness::{Samples, fmt_bytes, fmt_count, fmt_seconds, fmt_spread};
use toolgate_benches::report::Table;

use crate::context::Listing;
use crate::corpus::{Bfcl, CATEGORIES};
use crate::metrics::{Ranked, Scores, fmt_points, fmt_share, score};
use crate::peer::FastMcp;
use crate::scale::Build;

/// The command that reproduces every table.
pub const COMMAND: &str = "cargo bench -p toolgate-benches --bench search --features semantic";

/// What the tables are made of.
pub struct Context<'a> {
    /// The corpus and queries.
    pub bfcl: &'a Bfcl,
    /// Tools in the corpus toolset.
    pub tools: usize,
    /// toolgate's configurations, then FastMCP's (when it ran).
    pub rows: &'a [Ranked],
    /// FastMCP's run.
    pub fastmcp: Option<&'a FastMcp>,
    /// The corpus' build measurements.
    pub small: &'a Build,
    /// The 100,000 tools' build measurements.
    pub large: &'a Build,
    /// toolgate's rankings at 100,000 tools.
    pub large_ranked: &'a Ranked,
    /// `tools/list` with search off.
    pub full: Listing,
    /// `tools/list` in `meta` mode.
    pub meta: Listing,
    /// Latency rounds over every query.
    pub rounds: usize,
}

fn ms(s: &Samples, p: f64) -> String {
    fmt_seconds(s.percentile(p))
}

fn corpus_note(c: &Context<'_>) -> String {
    let per: Vec<String> = c
        .bfcl
        .per_category
        .iter()
        .map(|(cat, (all, kept))| format!("`{cat}` {kept} of {all}"))
        .collect();
    format!(
        "Corpus: {} tools = {} distinct BFCL definitions ({} BFCL definitions read, {} distinct \
         function names; a name with several definitions keeps each, the later ones as \
         `{{name}}_2`, ...) + {} GitHub and Stripe operations. Queries: {} ({}), {} cut at 1,000 \
         characters. A query's relevant tools are every definition of its ground-truth \
         function; \"own\" counts only the definition of its own entry.",
        fmt_count(c.tools as u64),
        fmt_count(c.bfcl.tools.len() as u64),
        fmt_count(c.bfcl.definitions as u64),
        fmt_count(c.bfcl.names as u64),
        fmt_count((c.tools - c.bfcl.tools.len()) as u64),
        fmt_count(c.bfcl.queries.len() as u64),
        per.join(", "),
        c.bfcl.truncated,
    )
}

/// `search-quality`: one row per configuration, and the difference toolgate − FastMCP.
pub fn quality(c: &Context<'_>) -> Table {
    let mut t = Table::new(
        "search-quality",
        "Tool retrieval on BFCL: every single-function BFCL question searched among every \
         distinct BFCL function plus GitHub's and Stripe's OpenAPI operations, by toolgate's \
         `Toolset::search` (in process) and, on the same corpus and queries (one JSON file both \
         read), by FastMCP's `BM25SearchTransform` (its `search_tools` tool through an in-memory \
         `fastmcp.Client`). Latency: CPU time per search over every query, all rounds.",
        COMMAND,
    )
    .columns([
        "configuration",
        "recall@1",
        "recall@5",
        "MRR@10",
        "recall@5 (own definition)",
        "search p50",
        "search p99",
    ]);
    let scores: Vec<Scores> = c
        .rows
        .iter()
        .map(|r| score(&c.bfcl.queries, &r.ranked, |_| true))
        .collect();
    for (r, s) in c.rows.iter().zip(&scores) {
        t.row([
            r.label.clone(),
            fmt_share(s.recall1),
            fmt_share(s.recall5),
            fmt_share(s.mrr),
            fmt_share(s.own5),
            ms(&r.latencies, 50.0),
            ms(&r.latencies, 99.0),
        ]);
        if let Some((label, inner)) = &r.inner_latencies {
            t.row([
                format!("↳ {label}"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                ms(inner, 50.0),
                ms(inner, 99.0),
            ]);
        }
    }
    let peer = c.fastmcp.map(|_| scores[scores.len() - 1]);
    if let Some(p) = peer {
        let o = scores[0];
        t.row([
            "toolgate BM25 − FastMCP BM25, points".to_string(),
            fmt_points(o.recall1 - p.recall1),
            fmt_points(o.recall5 - p.recall5),
            fmt_points(o.mrr - p.mrr),
            fmt_points(o.own5 - p.own5),
            String::new(),
            String::new(),
        ]);
    }
    t.note(corpus_note(c));
    let best = scores[..c.rows.len() - usize::from(peer.is_some())]
        .iter()
        .map(|s| s.recall5)
        .fold(0.0, f64::max);
    t.note(format!(
        "Goal recall@5 ≥ 0.90 with the best configuration: {} ({}).",
        if best >= 0.90 { "met" } else { "missed" },
        fmt_share(best)
    ));
    match peer {
        Some(p) => t.note(format!(
            "Goal toolgate BM25 ≥ FastMCP BM25 + 10 points (recall@5): {} ({} points).",
            if scores[0].recall5 - p.recall5 >= 0.10 {
                "met"
            } else {
                "missed"
            },
            fmt_points(scores[0].recall5 - p.recall5)
        )),
        None => t.note("FastMCP did not run (no `.peers/venv-fastmcp`, or it failed)."),
    }
    t.note(format!(
        "Both sides are asked for 10 hits per query; {} latency round(s) over every query.",
        c.rounds
    ));
    t
}

/// `search-categories`: recall@5 per BFCL category, toolgate's first configuration vs FastMCP.
pub fn categories(c: &Context<'_>) -> Table {
    let mut t = Table::new(
        "search-categories",
        "recall@5 of the `search-quality` run per BFCL category.",
        COMMAND,
    )
    .columns([
        "category",
        "queries",
        "toolgate BM25",
        "FastMCP BM25",
        "difference, points",
    ]);
    let peer = c.fastmcp.map(|_| &c.rows[c.rows.len() - 1]);
    for cat in CATEGORIES {
        let keep = |q: &crate::corpus::Query| q.category == cat;
        let o = score(&c.bfcl.queries, &c.rows[0].ranked, keep);
        let p = peer.map(|p| score(&c.bfcl.queries, &p.ranked, keep));
        t.row([
            format!("`{cat}`"),
            o.queries.to_string(),
            fmt_share(o.recall5),
            p.map_or("–".into(), |p| fmt_share(p.recall5)),
            p.map_or("–".into(), |p| fmt_points(o.recall5 - p.recall5)),
        ]);
    }
    t
}

/// `search-scale`: latency, build time and index memory at the corpus' size and at 100,000.
pub fn scale(c: &Context<'_>) -> Table {
    let mut t = Table::new(
        "search-scale",
        "toolgate's search at the corpus' size (BFCL + GitHub + Stripe) and at 100,000 tools (the \
         corpus plus synthetic tools recombined from its names, descriptions and schemas, \
         deterministically): CPU time per search over every BFCL query; index build = the first \
         search of a fresh toolset (every tool's fields normalized, the BM25F index built); \
         index memory = heap bytes that first search leaves live (a counting global allocator \
         in the benchmark binary, requested sizes).",
        COMMAND,
    )
    .columns([
        "tools",
        "search p50",
        "search p99",
        "p99 goal",
        "index build (first search)",
        "index heap",
        "per tool",
        "peak during build",
        "recall@5",
    ]);
    let large_scores = score(&c.bfcl.queries, &c.large_ranked.ranked, |_| true);
    let small_scores = score(&c.bfcl.queries, &c.rows[0].ranked, |_| true);
    let rows = [
        (c.small, &c.rows[0].latencies, 1e-3, small_scores),
        (c.large, &c.large_ranked.latencies, 5e-3, large_scores),
    ];
    for (b, lat, goal, s) in rows {
        let p99 = lat.percentile(99.0);
        t.row([
            fmt_count(b.tools as u64),
            ms(lat, 50.0),
            fmt_seconds(p99),
            format!(
                "≤ {} ({})",
                fmt_seconds(goal),
                if p99 <= goal { "met" } else { "missed" }
            ),
            fmt_spread(&b.first_search, fmt_seconds),
            fmt_bytes(b.heap.median()),
            fmt_bytes(b.heap.median() / b.tools as f64),
            fmt_bytes(b.peak.median()),
            fmt_share(s.recall5),
        ]);
    }
    if let Some(f) = c.fastmcp {
        t.note(format!(
            "FastMCP's first `search_tools` call (where it builds its index) on the corpus: {}.",
            fmt_seconds(f.build)
        ));
    }
    t
}

/// `search-context`: `tools/list` in `meta` mode vs in full.
pub fn context(c: &Context<'_>) -> Table {
    let mut t = Table::new(
        "search-context",
        "MCP `tools/list` of the gateway over GitHub + Stripe (compiled OpenAPI sources), every \
         page, read with rmcp's client over loopback HTTP: search off vs \
         `gateway.tool_search: {mode: meta}`. Bytes: each page's `ListToolsResult` as compact \
         JSON; tokens: OpenAI's `o200k_base` encoding (tiktoken-rs).",
        COMMAND,
    )
    .columns(["tools/list", "tools", "pages", "bytes", "o200k tokens"]);
    for (label, l) in [("full (search off)", c.full), ("`meta` mode", c.meta)] {
        t.row([
            label.to_string(),
            fmt_count(l.tools as u64),
            l.pages.to_string(),
            fmt_count(l.bytes as u64),
            fmt_count(l.tokens as u64),
        ]);
    }
    let saved = |a: usize, b: usize| 100.0 * (1.0 - b as f64 / a.max(1) as f64);
    t.row([
        "saved".to_string(),
        String::new(),
        String::new(),
        format!("{:.2}%", saved(c.full.bytes, c.meta.bytes)),
        format!("{:.2}%", saved(c.full.tokens, c.meta.tokens)),
    ]);
    t.note(
        "o200k_base is the encoding of OpenAI's current models (GPT-4o, GPT-4.1, o-series, \
         GPT-5), the most widely used public tokenizer; other models' tokenizers give other \
         counts, the ratio stays close.",
    );
    t
}
