//! Reciprocal rank fusion (RRF; Cormack, Clarke and Büttcher, "Reciprocal rank fusion
//! outperforms Condorcet and individual rank learning methods", SIGIR 2009).
//!
//! Each ranking is a list of catalog positions, best first. A tool's fused score is the sum,
//! over the rankings that hold it, of `1 / (k + rank)` with `rank` counted from 1. Only ranks
//! count, never the scores behind them, so BM25's unbounded scores and the model's cosine
//! similarities need no common scale. `k` = 60 (the paper's) keeps a tool that both rankings
//! hold above one that only one of them puts first: `2 / (60 + 5)` > `1 / (60 + 1)`.

use std::collections::HashMap;

/// The fused ranking of `rankings` (see the module docs) with constant `k`: each tool held by
/// any ranking once, with its fused score, best first; equal scores in catalog order (the
/// lower position first), so the same rankings always fuse the same way. A position repeated
/// within one ranking counts at its first rank only.
pub(crate) fn rrf(rankings: &[&[u32]], k: u32) -> Vec<(u32, f32)> {
    let k = f64::from(k.max(1));
    let mut scores: HashMap<u32, f64> = HashMap::new();
    for ranking in rankings {
        let mut seen = std::collections::HashSet::new();
        for (i, &position) in ranking.iter().enumerate() {
            if !seen.insert(position) {
                continue;
            }
            *scores.entry(position).or_default() += 1.0 / (k + (i + 1) as f64);
        }
    }
    let mut fused: Vec<(u32, f64)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.into_iter().map(|(p, s)| (p, s as f32)).collect()
}
