//! Tool search (issue 22): retrieval quality on BFCL, latency and memory at scale, and the
//! context `gateway.tool_search: meta` saves.
//!
//! - **Quality** (`search/corpus.rs`, `search/metrics.rs`): every distinct BFCL function
//!   (about 3,400) plus GitHub's and Stripe's OpenAPI operations as distractors (about 1,700)
//!   in one toolset; every single-function BFCL question a query. recall@1, recall@5, MRR@10
//!   and search latency for each configuration of toolgate's `Toolset::search`, and side by
//!   side, on the same corpus and queries (one JSON file both read), for FastMCP's
//!   `BM25SearchTransform` (`search/peer.rs`, `benches/peers/search_fastmcp.py`).
//! - **Scale** (`search/scale.rs`): search latency, index build time (the first search) and
//!   index memory (a counting global allocator) at the corpus' size and at 100,000 tools.
//! - **Context** (`search/context.rs`): `tools/list` bytes and `o200k_base` tokens in `meta`
//!   mode and in full, for GitHub + Stripe, through the gateway.
//!
//! Tables `search-quality`, `search-categories`, `search-scale` and `search-context`
//! (`search/tables.rs`). Run: `cargo bench -p toolgate-benches --bench search --features
//! semantic` (about 25 minutes on 2 cores; without the feature, no semantic row;
//! `TOOLGATE_BENCH_QUICK=1`: one latency round, 2 build rounds). Under `cargo test` (debug): 5
//! queries per category, the BFCL tools only, 1,000 synthetic tools more, the context of 200
//! tools; no FastMCP, no semantic row, no tables.
//!
//! For trying a ranking change without the whole run:
//! - `TOOLGATE_SEARCH_CORPUS=PATH`: write the corpus (tools; queries with their category and
//!   relevant tools) as JSON to PATH and stop;
//! - `TOOLGATE_SEARCH_QUALITY_ONLY=1`: print each configuration's scores and stop before
//!   FastMCP, the scale and the context runs;
//! - `TOOLGATE_SEARCH_DUMP_BM25=PATH`, `TOOLGATE_SEARCH_DUMP=PATH` (semantic): write every
//!   query's 300 best BM25 hits with their scores, or the model's 300 most similar tools with
//!   their cosine, as JSON to PATH (fusions can then be tried on the two files).

#[path = "search/context.rs"]
mod context;
#[path = "search/corpus.rs"]
mod corpus;
#[path = "scale/documents.rs"]
#[allow(dead_code)] // shared with the scale benchmark, which uses all of it
mod documents;
#[path = "search/metrics.rs"]
mod metrics;
#[path = "search/peer.rs"]
mod peer;
#[path = "search/scale.rs"]
mod scale;
#[path = "search/tables.rs"]
mod tables;

use std::time::Duration;

use toolgate::model::config::ToolSearchMode;
use toolgate::model::names::exported_name;
use toolgate::{Identity, SearchOptions, Toolset, ToolsetBuilder};
use toolgate_benches::harness::{self, by_mode};

use crate::metrics::{DEPTH, Ranked};

#[global_allocator]
static ALLOCATOR: scale::Counting = scale::Counting;

/// The catalog size the 100,000-tool row reaches (the corpus plus synthetic tools).
pub const LARGE: usize = 100_000;

/// How long FastMCP may take on the corpus.
const PEER_DEADLINE: Duration = Duration::from_secs(900);

/// One toolgate configuration: a label and the options its searches use. A further
/// configuration (semantic + BM25 fused) is one more entry of [`configurations`].
pub struct Configuration {
    /// The row label.
    pub label: &'static str,
    /// The search's options.
    pub options: SearchOptions,
}

/// toolgate's configurations, one table row each.
pub fn configurations() -> Vec<Configuration> {
    vec![Configuration {
        label: "toolgate BM25 (`Toolset::search`)",
        options: SearchOptions::new().k(DEPTH),
    }]
}

/// Every query searched with `options` on `toolset`: the first round's rankings, and every
/// round's CPU time per search.
pub fn rank(
    toolset: &Toolset,
    queries: &[corpus::Query],
    label: &str,
    options: &SearchOptions,
    rounds: usize,
) -> Ranked {
    let identity = Identity::default();
    let mut ranked = Ranked {
        label: label.to_string(),
        ..Ranked::default()
    };
    for round in 0..rounds.max(1) {
        for q in queries {
            let t = harness::process_cpu();
            let hits = toolset.search(&identity, &q.text, options);
            let secs = (harness::process_cpu() - t).as_secs_f64();
            ranked.latencies.push(secs);
            if round == 0 {
                let names = match hits {
                    Ok(hits) => hits.into_iter().map(|h| h.exported_name).collect(),
                    Err(_) => Vec::new(), // a query of stop words only: nothing found
                };
                ranked.ranked.push(names);
            }
        }
    }
    ranked
}

/// The row of BM25 fused with all-MiniLM-L6-v2 (`.peers/models/all-minilm-l6-v2`), when the
/// model is there. One round: a search embeds the query, tens of ms.
#[cfg(feature = "semantic")]
fn semantic_row(base: ToolsetBuilder, queries: &[corpus::Query]) -> Option<Ranked> {
    let model = corpus::peers().join("models/all-minilm-l6-v2");
    if !model.is_dir() {
        eprintln!(
            "search: no {} (scripts/install-peers.sh): semantic row skipped",
            model.display()
        );
        return None;
    }
    let mut settings = toolgate::SemanticSearch::new(&model);
    if std::env::var_os("TOOLGATE_SEARCH_DUMP").is_some() {
        settings = settings.candidates(DUMP_DEPTH).min_similarity(-1.0);
    }
    let toolset = base
        .semantic_search(settings)
        .build()
        .expect("the semantic toolset builds");
    // The first search embeds every tool: not a search's latency.
    let started = std::time::Instant::now();
    let _ = toolset.search(&Identity::default(), "warm up", &SearchOptions::new());
    eprintln!(
        "search: the model embedded the corpus in {:?}",
        started.elapsed()
    );
    if let Some(path) = std::env::var_os("TOOLGATE_SEARCH_DUMP") {
        // The model's candidates (every fused hit with a similarity), with their cosine.
        dump(&path, &toolset, queries, 2 * DUMP_DEPTH, |h| {
            h.similarity
                .map(|s| serde_json::json!([h.exported_name, s]))
        });
    }
    let label = "toolgate BM25 + semantic (all-MiniLM-L6-v2, RRF)";
    Some(rank(
        &toolset,
        queries,
        label,
        &SearchOptions::new().k(DEPTH),
        1,
    ))
}

/// Writes, for every query, `row` of each of its best `k` hits (those `row` keeps),
/// as one JSON array of arrays to `path`: the rankings the `TOOLGATE_SEARCH_DUMP*` switches
/// write for trying fusions offline.
fn dump(
    path: &std::ffi::OsStr,
    toolset: &Toolset,
    queries: &[corpus::Query],
    k: usize,
    row: impl Fn(&toolgate::SearchHit) -> Option<serde_json::Value>,
) {
    let identity = Identity::default();
    let options = SearchOptions::new().k(k);
    let rankings: Vec<Vec<serde_json::Value>> = queries
        .iter()
        .map(|q| {
            let hits = toolset
                .search(&identity, &q.text, &options)
                .unwrap_or_default();
            hits.iter().filter_map(&row).collect()
        })
        .collect();
    std::fs::write(path, serde_json::to_vec(&rankings).expect("serializes")).expect("write");
}

/// How many hits per query the BM25 dump holds, and how many candidates the semantic run asks
/// the model for (its dump reads them from the fused top `2 × DUMP_DEPTH`, so nearly all are
/// there: a candidate the fusion ranks lower is one neither ranking put near the top).
const DUMP_DEPTH: usize = 300;

/// Writes the shared corpus JSON to a file of its own in the temporary directory.
fn write_shared(toolset: &Toolset, queries: &[corpus::Query]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "toolgate-search-corpus-{}.json",
        std::process::id()
    ));
    let json = corpus::shared_json(&toolset.tools(), queries);
    std::fs::write(&path, serde_json::to_vec(&json).expect("serializes")).expect("write");
    path
}

fn main() {
    let test = harness::test_mode();
    let started = std::time::Instant::now();
    let data = corpus::data_dir();
    eprintln!("search: reading BFCL from {}…", data.display());
    let bfcl = corpus::read(&data, test.then_some(5));
    // The distractors (GitHub + Stripe), read and converted once; not under `cargo test`.
    let documents = (!test).then(documents::Prepared::new);
    let builder = || -> ToolsetBuilder {
        let base = documents
            .as_ref()
            .map_or_else(Toolset::builder, documents::Prepared::builder);
        scale::with_stubs(base, corpus::SOURCE, &bfcl.tools)
    };
    let toolset = builder().build().expect("the corpus toolset builds");
    let tools = toolset.tools();
    eprintln!(
        "search: {} tools ({} BFCL), {} queries",
        tools.len(),
        bfcl.tools.len(),
        bfcl.queries.len()
    );

    // `TOOLGATE_SEARCH_CORPUS=PATH`: write the shared corpus (tools, queries and their relevant
    // tools) to PATH and stop, for trying a ranking change outside this benchmark.
    if let Some(path) = std::env::var_os("TOOLGATE_SEARCH_CORPUS") {
        let json = corpus::shared_json(&tools, &bfcl.queries);
        std::fs::write(&path, serde_json::to_vec(&json).expect("serializes")).expect("write");
        eprintln!(
            "search: corpus written to {}",
            std::path::Path::new(&path).display()
        );
        return;
    }

    // Quality and latency: toolgate's configurations, then FastMCP on the same file.
    let rounds = if test { 1 } else { by_mode(1, 3) };
    let mut rows: Vec<Ranked> = configurations()
        .iter()
        .map(|c| rank(&toolset, &bfcl.queries, c.label, &c.options, rounds))
        .collect();
    let ours = metrics::score(&bfcl.queries, &rows[0].ranked, |_| true);
    eprintln!("search: toolgate {ours:?}");
    assert!(ours.recall5 > 0.0, "toolgate finds nothing: {ours:?}");
    #[cfg(feature = "semantic")]
    if !test {
        rows.extend(semantic_row(builder(), &bfcl.queries));
    }
    if let Some(path) = std::env::var_os("TOOLGATE_SEARCH_DUMP_BM25") {
        dump(&path, &toolset, &bfcl.queries, DUMP_DEPTH, |h| {
            Some(serde_json::json!([h.exported_name, h.score]))
        });
    }
    if std::env::var_os("TOOLGATE_SEARCH_QUALITY_ONLY").is_some() {
        for r in &rows {
            let s = metrics::score(&bfcl.queries, &r.ranked, |_| true);
            eprintln!("search: {}: {s:?}", r.label);
        }
        return;
    }
    let mut fastmcp = None;
    if !test {
        match peer::python() {
            Some(python) => {
                let shared = write_shared(&toolset, &bfcl.queries);
                eprintln!("search: FastMCP on {}…", shared.display());
                // One latency round: FastMCP takes tens of ms per search, one round is thousands of samples.
                match peer::run(&python, &shared, 1, PEER_DEADLINE) {
                    Ok(f) => {
                        assert_eq!(f.tools, tools.len(), "FastMCP registered every tool");
                        assert_eq!(f.ranked.ranked.len(), bfcl.queries.len());
                        rows.push(f.ranked.clone());
                        fastmcp = Some(f);
                    }
                    Err(e) => eprintln!("search: FastMCP failed: {e}"),
                }
                let _ = std::fs::remove_file(&shared);
            }
            None => eprintln!(
                "search: no .peers/venv-fastmcp (scripts/install-peers.sh): FastMCP skipped"
            ),
        }
    }

    // Scale: the corpus, and the corpus plus synthetic tools up to LARGE (1,000 more under test).
    let build_rounds = if test { 1 } else { by_mode(2, 3) };
    let probe = &bfcl.queries[0].text;
    let small = scale::measure_build(|| builder().build().expect("builds"), probe, build_rounds);
    let large_n = if test { tools.len() + 1_000 } else { LARGE };
    let synthetic = scale::synthetic(&tools, large_n.saturating_sub(tools.len()));
    let large_builder = || scale::with_stubs(builder(), scale::SYNTHETIC, &synthetic);
    let large = scale::measure_build(
        || large_builder().build().expect("builds"),
        probe,
        build_rounds.min(2),
    );
    let large_toolset = large_builder().build().expect("builds");
    let large_ranked = rank(
        &large_toolset,
        &bfcl.queries,
        "toolgate BM25",
        &SearchOptions::new().k(DEPTH),
        1,
    );
    drop(large_toolset);

    // Context: GitHub + Stripe through the gateway (200 BFCL tools under test).
    let context_toolset = match &documents {
        Some(d) => d.builder().build().expect("builds"),
        None => scale::with_stubs(Toolset::builder(), corpus::SOURCE, &bfcl.tools[..200])
            .build()
            .expect("builds"),
    };
    let full = context::list(&context_toolset, ToolSearchMode::Off);
    let meta = context::list(&context_toolset, ToolSearchMode::Meta);
    assert_eq!(
        full.tools,
        context_toolset.tools().len(),
        "every tool listed"
    );
    assert_eq!(meta.tools, 3, "search_tools, describe_tools, call_tool");
    // Every exported name the quality rows compare is one of the toolset's.
    debug_assert!(bfcl.queries.iter().all(|q| q.relevant.iter().all(|r| {
        tools
            .iter()
            .any(|d| exported_name(&d.name) == exported_name(r))
    })));
    if test {
        eprintln!("search: test mode done in {:?}", started.elapsed());
        return;
    }
    let ctx = tables::Context {
        bfcl: &bfcl,
        tools: tools.len(),
        rows: &rows,
        fastmcp: fastmcp.as_ref(),
        small: &small,
        large: &large,
        large_ranked: &large_ranked,
        full,
        meta,
        rounds,
    };
    for t in [
        tables::quality(&ctx),
        tables::categories(&ctx),
        tables::scale(&ctx),
        tables::context(&ctx),
    ] {
        t.write().expect("write the table");
    }
    eprintln!(
        "search: done in {}",
        harness::fmt_duration(started.elapsed())
    );
}
