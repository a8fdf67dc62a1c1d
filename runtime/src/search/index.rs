//! The search index of one catalog: one BM25 index per field, combined by field weight.
//!
//! Each field of every tool is a document of that field's index: a [`bm25::Embedder`] fit to
//! the field's average length in terms, and a [`bm25::Scorer`] holding every tool's embedding
//! (the crate's sparse vector of BM25 term weights) and the inverted index it scores queries
//! against. A tool's score is the sum over fields of the field's weight times its BM25 score
//! there; the fields with a score above zero are the ones that matched.

use bm25::{Embedder, EmbedderBuilder, Embedding, Scorer, Tokenizer};

use super::tokenize;
use super::{SearchField, ToolDoc};
use crate::catalog::ToolEntry;

/// BM25's term-frequency saturation (the crate's and Lucene's default).
const K1: f32 = 1.2;
/// BM25's length normalization (the crate's and Lucene's default).
const B: f32 = 0.75;

/// Splits the space-joined terms a [`ToolDoc`] holds (they were normalized when the tool was
/// first indexed; see `tokenize.rs`).
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

/// One field's index over every tool of the catalog (document id: the entry's position).
struct FieldIndex {
    field: SearchField,
    embedder: Embedder<u64, Joined>,
    scorer: Scorer<u32, u64>,
}

/// The search index of one catalog snapshot (see the module docs). Built on the first search
/// of that snapshot, from each entry's cached [`ToolDoc`].
pub(crate) struct Index {
    fields: Vec<FieldIndex>,
    tools: usize,
}

/// One scored tool, before the caller's filters: its position in the catalog, its weighted
/// score, and which fields matched (bit `i` for `SearchField::ALL[i]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    pub position: u32,
    pub score: f32,
    pub fields: u8,
}

impl Index {
    /// The index of `entries` (a catalog's, in its order).
    pub(crate) fn build(entries: &[std::sync::Arc<ToolEntry>]) -> Self {
        let docs: Vec<&ToolDoc> = entries.iter().map(|e| e.search_doc()).collect();
        let fields = SearchField::ALL
            .iter()
            .enumerate()
            .map(|(i, &field)| {
                let texts: Vec<&str> = docs.iter().map(|d| d.fields[i].as_str()).collect();
                let total: usize = docs.iter().map(|d| d.lengths[i] as usize).sum();
                let avgdl = if docs.is_empty() || total == 0 {
                    1.0
                } else {
                    total as f32 / docs.len() as f32
                };
                let embedder = EmbedderBuilder::<u64, Joined>::with_avgdl(avgdl)
                    .k1(K1)
                    .b(B)
                    .build();
                let mut scorer = Scorer::<u32, u64>::new();
                for (position, text) in texts.iter().enumerate() {
                    scorer.upsert(&(position as u32), embedder.embed(text));
                }
                FieldIndex {
                    field,
                    embedder,
                    scorer,
                }
            })
            .collect();
        Self {
            fields,
            tools: entries.len(),
        }
    }

    /// Every tool with a score above zero for `terms` (normalized, distinct), best first; ties
    /// in catalog order.
    pub(crate) fn rank(&self, terms: &[String]) -> Vec<Scored> {
        let query = terms.join(" ");
        let mut scores: Vec<Option<Scored>> = vec![None; self.tools];
        for (bit, index) in self.fields.iter().enumerate() {
            let embedding: Embedding<u64> = index.embedder.embed(&query);
            let weight = index.field.weight();
            for hit in index.scorer.matches(&embedding) {
                if hit.score <= 0.0 || !hit.score.is_finite() {
                    continue;
                }
                let Some(slot) = scores.get_mut(hit.id as usize) else {
                    continue;
                };
                let scored = slot.get_or_insert(Scored {
                    position: hit.id,
                    score: 0.0,
                    fields: 0,
                });
                scored.score += weight * hit.score;
                scored.fields |= 1 << bit;
            }
        }
        let mut ranked: Vec<Scored> = scores.into_iter().flatten().collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.position.cmp(&b.position))
        });
        ranked
    }
}

impl ToolDoc {
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
