//! Reciprocal rank fusion, on rankings made up in the test (no model needed).

use super::fusion::rrf;

fn order(fused: &[(u32, f32)]) -> Vec<u32> {
    fused.iter().map(|(p, _)| *p).collect()
}

#[test]
fn scores_are_the_sum_of_reciprocal_ranks() {
    let fused = rrf(&[&[7, 3], &[3]], 60);
    assert_eq!(order(&fused), [3, 7]);
    let score = |p: u32| fused.iter().find(|(q, _)| *q == p).map(|(_, s)| *s);
    assert!((score(3).unwrap() - (1.0 / 62.0 + 1.0 / 61.0) as f32).abs() < 1e-7);
    assert!((score(7).unwrap() - (1.0 / 61.0) as f32).abs() < 1e-7);
}

#[test]
fn a_tool_both_rankings_hold_beats_one_that_only_one_ranks_first() {
    // 4 is fifth in both rankings; 1 is first in BM25's only, 9 first in the model's only.
    let bm25 = [1, 2, 3, 5, 4];
    let model = [9, 8, 7, 6, 4];
    let fused = rrf(&[&bm25, &model], 60);
    assert_eq!(fused[0].0, 4);
    // k matters: with k = 1, a first rank (1/2) outweighs two fifth ranks (2/6).
    assert_ne!(rrf(&[&bm25, &model], 1)[0].0, 4);
}

#[test]
fn equal_scores_keep_catalog_order() {
    // 5 and 2 are both first of one ranking: equal scores, the lower position first.
    let fused = rrf(&[&[5], &[2]], 60);
    assert_eq!(order(&fused), [2, 5]);
    assert_eq!(fused[0].1, fused[1].1);
    for _ in 0..10 {
        assert_eq!(
            rrf(&[&[5, 1, 9], &[2, 9, 1]], 60),
            rrf(&[&[5, 1, 9], &[2, 9, 1]], 60)
        );
    }
}

#[test]
fn empty_rankings_and_repeats() {
    assert!(rrf(&[], 60).is_empty());
    assert!(rrf(&[&[], &[]], 60).is_empty());
    assert_eq!(order(&rrf(&[&[4, 2], &[]], 60)), [4, 2]);
    // A repeated position counts at its first rank only.
    let repeated = rrf(&[&[4, 4, 2]], 60);
    assert_eq!(order(&repeated), [4, 2]);
    assert_eq!(repeated[0].1, (1.0f64 / 61.0) as f32);
    // k = 0 is read as 1 (no division by zero).
    assert!(rrf(&[&[1]], 0)[0].1.is_finite());
}
