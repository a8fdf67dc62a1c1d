//! Retrieval quality of one configuration on the queries: recall@1, recall@5, MRR@10 (the
//! reciprocal rank of the first relevant tool in the top 10, 0 when none is), and recall@5 of
//! the query's own definition alone; and its search latency.
//!
//! A configuration is anything that ranks tool names for a query text ([`Ranked`]): toolgate's
//! `Toolset::search` with some options, FastMCP's BM25 search transform, or later a fused
//! semantic + BM25 ranking. Each is one row of the `search-quality` table.

use toolgate::model::names::exported_name;
use toolgate_benches::harness::Samples;

use crate::corpus::Query;

/// The depth every ranking is asked for (MRR@10).
pub const DEPTH: usize = 10;

/// What one configuration answered: the names it ranked per query (exported names, best
/// first, at most [`DEPTH`]), and its latency samples (CPU seconds per search).
#[derive(Debug, Clone, Default)]
pub struct Ranked {
    /// The row label.
    pub label: String,
    /// Per query (in the queries' order), the names ranked.
    pub ranked: Vec<Vec<String>>,
    /// Every search's CPU time, in seconds (all rounds).
    pub latencies: Samples,
    /// Another latency of the same configuration, when it has one worth showing (FastMCP: its
    /// BM25 index's query alone), with its label.
    pub inner_latencies: Option<(String, Samples)>,
}

/// The quality scores of one [`Ranked`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// Share of queries with a relevant tool first.
    pub recall1: f64,
    /// Share of queries with a relevant tool in the top 5.
    pub recall5: f64,
    /// Mean reciprocal rank of the first relevant tool (top [`DEPTH`]).
    pub mrr: f64,
    /// Share of queries whose own definition is in the top 5.
    pub own5: f64,
    /// Queries scored.
    pub queries: usize,
}

/// The rank (1-based) of the first name of `ranked` that is in `relevant`.
fn first_rank(ranked: &[String], relevant: &[String]) -> Option<usize> {
    ranked
        .iter()
        .take(DEPTH)
        .position(|n| relevant.iter().any(|r| r == n))
        .map(|p| p + 1)
}

/// Scores `ranked` on `queries` (the same order); only the queries `keep` admits (e.g. one
/// category).
pub fn score(queries: &[Query], ranked: &[Vec<String>], keep: impl Fn(&Query) -> bool) -> Scores {
    assert_eq!(queries.len(), ranked.len(), "one ranking per query");
    let (mut r1, mut r5, mut rr, mut own5, mut n) = (0usize, 0usize, 0.0, 0usize, 0usize);
    for (q, names) in queries.iter().zip(ranked) {
        if !keep(q) {
            continue;
        }
        n += 1;
        let relevant: Vec<String> = q
            .relevant
            .iter()
            .map(|r| exported_name(r).into_owned())
            .collect();
        if let Some(rank) = first_rank(names, &relevant) {
            r1 += usize::from(rank == 1);
            r5 += usize::from(rank <= 5);
            rr += 1.0 / rank as f64;
        }
        let own = [exported_name(&q.own).into_owned()];
        own5 += usize::from(first_rank(names, &own).is_some_and(|r| r <= 5));
    }
    let share = |k: usize| k as f64 / n.max(1) as f64;
    Scores {
        recall1: share(r1),
        recall5: share(r5),
        mrr: rr / n.max(1) as f64,
        own5: share(own5),
        queries: n,
    }
}

/// A share as a table cell: `0.912`.
pub fn fmt_share(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "–".into()
    }
}

/// A difference of shares in points: `+12.3`, `-4.0`.
pub fn fmt_points(d: f64) -> String {
    if d.is_finite() {
        format!("{:+.1}", d * 100.0)
    } else {
        "–".into()
    }
}
