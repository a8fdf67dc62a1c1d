//! The model's side of a search: the tools' vectors (embedded once per catalog entry, in
//! batches) and the ranking of the tools by their similarity to the query.

use std::sync::{Arc, Mutex};

use super::SemanticSearch;
use super::model::Encoder;
use crate::catalog::ToolEntry;

/// A loaded model and its settings: what a toolset built with
/// [`semantic_search`](crate::ToolsetBuilder::semantic_search) holds.
#[derive(Debug)]
pub(crate) struct Ranker {
    encoder: Encoder,
    settings: SemanticSearch,
    /// Held while tools are embedded, so that two first searches do not embed the same tools
    /// twice.
    embedding: Mutex<()>,
}

/// One tool of the model's ranking: its position in the catalog and its cosine similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Similar {
    pub position: u32,
    pub similarity: f32,
}

impl Ranker {
    /// Loads the model `settings` names (see [`super::check`] for the errors).
    pub(crate) fn load(settings: SemanticSearch) -> Result<Self, String> {
        let encoder = Encoder::load(&settings.model)?;
        Ok(Self {
            encoder,
            settings,
            embedding: Mutex::new(()),
        })
    }

    /// The settings the ranker was built with.
    pub(crate) fn settings(&self) -> &SemanticSearch {
        &self.settings
    }

    /// Embeds every entry of `entries` that has no vector yet, in batches of
    /// [`batch_size`](SemanticSearch::batch_size) texts of similar length (less padding). A
    /// batch the model fails on is embedded text by text; a text it still fails on leaves its
    /// tool without a vector (found by BM25 only), with a warning in the log.
    pub(crate) fn prepare(&self, entries: &[Arc<ToolEntry>]) {
        if entries.iter().all(|e| e.embedding().get().is_some()) {
            return;
        }
        let _guard = self
            .embedding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut missing: Vec<(&Arc<ToolEntry>, String)> = entries
            .iter()
            .filter(|e| e.embedding().get().is_none())
            .map(|e| (e, super::tool_text(e.descriptor())))
            .collect();
        missing.sort_by_key(|(_, text)| text.len());
        for batch in missing.chunks(self.settings.batch_size) {
            let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
            match self.encoder.embed(&texts) {
                Ok(vectors) if vectors.len() == batch.len() => {
                    for ((entry, _), vector) in batch.iter().zip(vectors) {
                        let _ = entry.embedding().set(Some(vector.into_boxed_slice()));
                    }
                }
                _ => {
                    for (entry, text) in batch {
                        let vector = match self.encoder.embed(&[text.as_str()]) {
                            Ok(mut v) if v.len() == 1 => Some(v.remove(0).into_boxed_slice()),
                            Ok(_) => None,
                            Err(e) => {
                                tracing::warn!(
                                    tool = entry.name(),
                                    error = %e,
                                    "semantic search: the model failed on the tool's text; BM25 alone ranks it"
                                );
                                None
                            }
                        };
                        let _ = entry.embedding().set(vector);
                    }
                }
            }
        }
    }

    /// The query's vector.
    ///
    /// # Errors
    /// The model's message, when it fails on the query.
    pub(crate) fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        let mut vectors = self.encoder.embed(&[query])?;
        if vectors.len() != 1 || vectors[0].len() != self.encoder.dimension() {
            return Err("the model gave no vector for the query".into());
        }
        Ok(vectors.remove(0))
    }

    /// The model's ranking for `query` (a vector from [`embed_query`](Self::embed_query)) over
    /// `entries` (each [`prepare`](Self::prepare)d): the tools `admits` lets through whose
    /// similarity is at least [`min_similarity`](SemanticSearch::min_similarity), most similar
    /// first (ties in catalog order), at most [`candidates`](SemanticSearch::candidates).
    pub(crate) fn rank(
        &self,
        entries: &[Arc<ToolEntry>],
        query: &[f32],
        admits: impl Fn(&ToolEntry) -> bool,
    ) -> Vec<Similar> {
        let mut similar: Vec<Similar> = entries
            .iter()
            .enumerate()
            .filter_map(|(position, entry)| {
                let vector = entry.embedding().get()?.as_deref()?;
                let similarity = dot(vector, query);
                (similarity.is_finite() && similarity >= self.settings.min_similarity).then_some(
                    Similar {
                        position: u32::try_from(position).ok()?,
                        similarity,
                    },
                )
            })
            .collect();
        similar.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then(a.position.cmp(&b.position))
        });
        similar
            .into_iter()
            .filter(|s| entries.get(s.position as usize).is_some_and(|e| admits(e)))
            .take(self.settings.candidates)
            .collect()
    }
}

/// The dot product of two vectors (their cosine similarity, both being L2-normalized).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
