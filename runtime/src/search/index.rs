//! The search index of one catalog: BM25F over every tool's fields, and a top-k search of it.
//!
//! **BM25F** (Robertson, Zaragoza and Taylor, "Simple BM25 extension to multiple weighted
//! fields", CIKM 2004): a tool is one document whose term frequencies and length are the sums of
//! its fields' frequencies and lengths times the field's [weight](SearchField::weight), then
//! scored by BM25 once. A term in the name thus counts three times a term in the description,
//! and a long description does not dilute a short name. This ranks far better than adding up
//! one BM25 score per field (which gives a term that is rare in names, but common elsewhere, a
//! field IDF out of all proportion): on the search benchmark's BFCL corpus, recall@5 went from
//! 0.736 to 0.84 (BENCHMARKS.md "Tool search").
//!
//! The weighted document is written out with each field's terms repeated its weight's number
//! of times ([`SearchField::repeat`]), and the [`bm25::Embedder`] turns it into BM25's
//! per-term weights `tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`. Repeating a field `2w` times
//! with `k1 = 2·K1` ranks exactly as weight `w` with `K1` (both sides of the fraction scale by
//! the same factor but the constant `k1 + 1`), which is how the half weights are kept.
//!
//! **Search**: one postings list per term (the tools holding it and their term weight), a query
//! adds `idf(term) × weight` into one score per tool it touches, and the best `k` the caller
//! admits are selected without sorting the rest. The IDF is the crate's own
//! (`ln(1 + (N − n + 0.5) / (n + 0.5))`, the Lucene variant; its `Scorer` keeps it private,
//! and scores by hash lookups per tool, which was the slow part: p99 14 ms at 5,100 tools).

use std::collections::HashMap;

use bm25::{Embedder, EmbedderBuilder, TokenEmbedder, Tokenizer};

use super::tokenize;
use super::{SearchField, ToolDoc};
use crate::catalog::ToolEntry;

/// BM25's term-frequency saturation (the crate's and Lucene's default), for the weights as
/// [`SearchField::weight`] gives them. The embedder gets `K1 × REPEAT_SCALE` (module docs).
const K1: f32 = 1.2;
/// BM25's length normalization (the crate's and Lucene's default).
const B: f32 = 0.75;
/// How many times a field of weight 1 is repeated in the weighted document.
pub(crate) const REPEAT_SCALE: f32 = 2.0;

/// Splits the space-joined terms of a weighted document (they were normalized when the tool
/// was first indexed; see `tokenize.rs`).
#[derive(Debug, Default, Clone, Copy)]
struct Joined;

impl Tokenizer for Joined {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .split(' ')
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// A term's key: the crate's 64-bit hash of it (what its embeddings are indexed by).
fn key(term: &str) -> u64 {
    <u64 as TokenEmbedder>::embed(term)
}

/// The tools holding one term: their positions, ascending, and the term's BM25 weight in each.
#[derive(Default)]
struct Postings {
    positions: Vec<u32>,
    weights: Vec<f32>,
}

/// The search index of one catalog snapshot (see the module docs). Built on the first search
/// of that snapshot, from each entry's cached [`ToolDoc`].
pub(crate) struct Index {
    postings: HashMap<u64, Postings>,
    tools: usize,
}

/// One scored tool, before the caller's filters: its position in the catalog and its score.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    pub position: u32,
    pub score: f32,
}

impl Index {
    /// The index of `entries` (a catalog's, in its order).
    pub(crate) fn build(entries: &[std::sync::Arc<ToolEntry>]) -> Self {
        let docs: Vec<&ToolDoc> = entries.iter().map(|e| e.search_doc()).collect();
        let total: usize = docs.iter().map(|d| d.weighted_len()).sum();
        let avgdl = if entries.is_empty() || total == 0 {
            1.0
        } else {
            total as f32 / entries.len() as f32
        };
        let embedder: Embedder<u64, Joined> = EmbedderBuilder::with_avgdl(avgdl)
            .k1(K1 * REPEAT_SCALE)
            .b(B)
            .build();
        let mut postings: HashMap<u64, Postings> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for (position, doc) in docs.iter().enumerate() {
            seen.clear();
            // The embedding has one entry per term occurrence, each with the term's weight.
            for token in embedder.embed(&doc.weighted()).0 {
                if seen.insert(token.index) {
                    let list = postings.entry(token.index).or_default();
                    list.positions.push(position as u32);
                    list.weights.push(token.value);
                }
            }
        }
        for list in postings.values_mut() {
            list.positions.shrink_to_fit();
            list.weights.shrink_to_fit();
        }
        postings.shrink_to_fit();
        Self {
            postings,
            tools: entries.len(),
        }
    }

    /// The term's inverse document frequency (the crate's formula, module docs).
    fn idf(&self, holders: usize) -> f32 {
        let n = self.tools as f32;
        let holders = holders as f32;
        (1.0 + (n - holders + 0.5) / (holders + 0.5)).ln()
    }

    /// The best `k` tools for `terms` (normalized, distinct) among those `admits` lets
    /// through, best first, ties in catalog order; only tools with a score above zero.
    ///
    /// `admits` (the caller's listing rules and the search's filters) is asked only of the
    /// best-scored tools, in score order, until `k` pass: a long query touches most of a large
    /// catalog, and asking it of every touched tool cost more than the scoring.
    pub(crate) fn top(
        &self,
        terms: &[String],
        k: usize,
        admits: impl Fn(u32) -> bool,
    ) -> Vec<Scored> {
        let mut scores = vec![0.0f32; self.tools];
        let mut touched: Vec<u32> = Vec::new();
        for term in terms {
            let Some(list) = self.postings.get(&key(term)) else {
                continue;
            };
            let idf = self.idf(list.positions.len());
            for (&position, &weight) in list.positions.iter().zip(&list.weights) {
                let Some(score) = scores.get_mut(position as usize) else {
                    continue;
                };
                if *score == 0.0 {
                    touched.push(position);
                }
                *score += idf * weight;
            }
        }
        let mut ranked: Vec<Scored> = touched
            .into_iter()
            .map(|position| Scored {
                position,
                score: scores[position as usize],
            })
            .filter(|s| s.score > 0.0 && s.score.is_finite())
            .collect();
        let better = |a: &Scored, b: &Scored| {
            b.score
                .total_cmp(&a.score)
                .then(a.position.cmp(&b.position))
        };
        // The best few first: most searches find their `k` among the first `k × 4` tools.
        let mut head = k.saturating_mul(4).max(16);
        let mut sorted = 0;
        let mut out: Vec<Scored> = Vec::with_capacity(k.min(ranked.len()));
        while out.len() < k && sorted < ranked.len() {
            let rest = &mut ranked[sorted..];
            let take = head.min(rest.len());
            if take < rest.len() {
                rest.select_nth_unstable_by(take, better);
            }
            rest[..take].sort_unstable_by(better);
            out.extend(
                rest[..take]
                    .iter()
                    .filter(|s| admits(s.position))
                    .take(k - out.len()),
            );
            sorted += take;
            head = head.saturating_mul(4);
        }
        out
    }
}

impl ToolDoc {
    /// The weighted document: each field's terms, repeated [`SearchField::repeat`] times.
    fn weighted(&self) -> String {
        let mut out = String::with_capacity(self.weighted_len() * 8);
        for (field, text) in SearchField::ALL.iter().zip(&self.fields) {
            if text.is_empty() {
                continue;
            }
            for _ in 0..field.repeat() {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// The weighted document's length in terms.
    fn weighted_len(&self) -> usize {
        SearchField::ALL
            .iter()
            .zip(&self.lengths)
            .map(|(field, &len)| field.repeat() * len as usize)
            .sum()
    }

    /// The fields holding one of `terms` (bit `i` for `SearchField::ALL[i]`).
    pub(crate) fn matched(&self, terms: &[String]) -> u8 {
        let mut bits = 0;
        for (bit, text) in self.fields.iter().enumerate() {
            if text.split(' ').any(|t| terms.iter().any(|q| q == t)) {
                bits |= 1 << bit;
            }
        }
        bits
    }

    /// The index fields of `descriptor`'s tool, normalized (see `tokenize.rs`).
    pub(crate) fn of(descriptor: &crate::ToolDescriptor) -> Self {
        let d = descriptor;
        // The name without its `{source}.` prefix: the source is a field of its own.
        let own_name = d
            .name
            .strip_prefix(d.source.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(&d.name);
        let mut fields: [Vec<String>; SearchField::ALL.len()] = Default::default();
        for (i, field) in SearchField::ALL.iter().enumerate() {
            let out = &mut fields[i];
            let limit = super::MAX_FIELD_TERMS;
            match field {
                SearchField::Name => tokenize::terms_into(own_name, out, limit),
                SearchField::Title => {
                    if let Some(title) = &d.annotations.title {
                        tokenize::terms_into(title, out, limit);
                    }
                }
                SearchField::Description => tokenize::terms_into(&d.description, out, limit),
                SearchField::Arguments => arguments(&d.input_schema, out, limit),
                SearchField::Tags => {
                    for tag in &d.tags {
                        tokenize::terms_into(tag, out, limit);
                    }
                }
                SearchField::Category => {
                    if let Some(category) = &d.category {
                        tokenize::terms_into(category, out, limit);
                    }
                }
                SearchField::Source => tokenize::terms_into(&d.source, out, limit),
            }
        }
        Self {
            lengths: fields
                .each_ref()
                .map(|f| u32::try_from(f.len()).unwrap_or(u32::MAX)),
            fields: fields.map(|f| f.join(" ")),
        }
    }
}

/// The terms of the input schema's top-level properties: each name, title and description.
fn arguments(schema: &serde_json::Value, out: &mut Vec<String>, limit: usize) {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return;
    };
    for (name, property) in properties {
        tokenize::terms_into(name, out, limit);
        for key in ["title", "description"] {
            if let Some(text) = property.get(key).and_then(|v| v.as_str()) {
                tokenize::terms_into(text, out, limit);
            }
        }
    }
}
