//! Tool search: find the tools that fit a query among a toolset's thousands, ranked by BM25
//! ([`Toolset::search`](crate::Toolset::search)).
//!
//! What is indexed, per tool ([`SearchField`]): its name split into words (snake_case,
//! camelCase, kebab-case, dotted; without the `{source}.` prefix), its title (the MCP
//! annotation), description, argument names and their titles and descriptions (the input
//! schema's top-level `properties`), tags, category and source id. Text is normalized the same
//! way for tools and queries (`tokenize.rs`: words split, accents folded, English stop words
//! dropped, English stemming, Chinese and Japanese cut into character bigrams).
//!
//! Ranking is BM25F (k1 = 1.2, b = 0.75): each tool one document whose fields count by their
//! [weight](SearchField::weight), its term weights worked out by the `bm25` crate, searched
//! through postings lists for the best `k` (`index.rs`).
//!
//! The index belongs to one catalog snapshot: it is built on the first search of that snapshot
//! (each tool's normalized fields are worked out once per catalog entry and kept with it, so a
//! catalog rebuilt after a source's tools changed reuses those of the tools it keeps) and
//! dropped with it. Calls never touch it.
//!
//! With the `semantic` cargo feature and a model given
//! ([`ToolsetBuilder::semantic_search`](crate::ToolsetBuilder::semantic_search)), a local
//! sentence-embedding model ranks the tools too and the two rankings are fused by reciprocal
//! rank fusion ([`semantic`]).
//!
//! Files: this one holds the public types and the search itself; `tokenize.rs` the
//! normalization; `index.rs` the BM25 index; `semantic/` the model and the fusion.

mod index;
pub mod semantic;
mod tokenize;

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::{Catalog, ToolEntry};
use crate::{ErrorKind, ToolDescriptor, ToolError};

pub(crate) use index::Index;

/// The most terms a field of one tool contributes to the index (a long OpenAPI description is
/// indexed by its first 512 terms).
const MAX_FIELD_TERMS: usize = 512;

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;

/// The number of hits a search returns by default.
pub const DEFAULT_K: usize = 10;

/// A field of a tool that the index holds, each with its weight in the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchField {
    /// The tool's name (without its `{source}.` prefix), split into words.
    Name,
    /// Its title (the MCP `title` annotation).
    Title,
    /// Its description.
    Description,
    /// The names, titles and descriptions of its arguments (top-level input properties).
    Arguments,
    /// Its tags.
    Tags,
    /// Its category.
    Category,
    /// The id of its source.
    Source,
}

impl SearchField {
    /// Every field, in the order hits list their matched fields.
    pub const ALL: [SearchField; 7] = [
        SearchField::Name,
        SearchField::Title,
        SearchField::Description,
        SearchField::Arguments,
        SearchField::Tags,
        SearchField::Category,
        SearchField::Source,
    ];

    /// The field's weight in BM25F: a term found in it counts this many times, and its
    /// length counts this many times in the tool's length. Name 3, title 2, tags and category
    /// 1.5, description 1, arguments 0.5, source 0.5.
    pub fn weight(self) -> f32 {
        self.repeat() as f32 / index::REPEAT_SCALE
    }

    /// How many times the field's terms are written in the weighted document the index scores:
    /// twice its [weight](Self::weight) (`index.rs` says why that ranks as the weight does).
    pub(crate) fn repeat(self) -> usize {
        match self {
            SearchField::Name => 6,
            SearchField::Title => 4,
            SearchField::Tags | SearchField::Category => 3,
            SearchField::Description => 2,
            SearchField::Arguments | SearchField::Source => 1,
        }
    }

    /// The field's name as hits report it (`name`, `description`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchField::Name => "name",
            SearchField::Title => "title",
            SearchField::Description => "description",
            SearchField::Arguments => "arguments",
            SearchField::Tags => "tags",
            SearchField::Category => "category",
            SearchField::Source => "source",
        }
    }
}

impl std::fmt::Display for SearchField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a [search](crate::Toolset::search) is run: how many hits, and filters every hit must
/// pass (they combine with AND). `SearchOptions::default()` gives [`DEFAULT_K`] hits, unfiltered.
///
/// ```ignore
/// let options = SearchOptions::new().k(5).source("github").read_only(true);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOptions {
    /// The most hits to return (at least 1).
    pub k: usize,
    /// Only tools of this source id (exact).
    pub source: Option<String>,
    /// Only tools of this category (exact).
    pub category: Option<String>,
    /// Only tools that carry every one of these tags (exact).
    pub tags: Vec<String>,
    /// Only tools whose `readOnlyHint` annotation is this (a tool without the hint counts as
    /// not read-only).
    pub read_only: Option<bool>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            k: DEFAULT_K,
            source: None,
            category: None,
            tags: Vec::new(),
            read_only: None,
        }
    }
}

impl SearchOptions {
    /// The default options: [`DEFAULT_K`] hits, no filter.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `k` hits.
    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// Only tools of source `source`.
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Only tools of category `category`.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Only tools tagged `tag` (with every tag given, when called more than once).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Only tools whose `readOnlyHint` is `read_only`.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Whether `d` passes every filter.
    fn admits(&self, d: &ToolDescriptor) -> bool {
        self.source.as_ref().is_none_or(|s| &d.source == s)
            && self
                .category
                .as_ref()
                .is_none_or(|c| d.category.as_ref() == Some(c))
            && self.tags.iter().all(|t| d.tags.contains(t))
            && self
                .read_only
                .is_none_or(|r| d.annotations.read_only_hint.unwrap_or(false) == r)
    }
}

/// One tool a search found.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// The tool's name inside the toolset (`calc`, `github.issues_create`).
    pub name: String,
    /// The name a model sees and calls (`github__issues_create`).
    pub exported_name: String,
    /// The tool's score: the sum over the matched fields of the field's BM25 score times its
    /// [weight](SearchField::weight). With semantic ranking, the tool's reciprocal rank fusion
    /// score instead (the sum over BM25's ranking and the model's of `1 / (60 + rank)`, at most
    /// 2/61 ≈ 0.033). Above zero; comparable only within one search.
    pub score: f32,
    /// The fields that matched a query term, in [`SearchField::ALL`] order (empty for a tool
    /// that only semantic ranking found).
    pub matched: Vec<SearchField>,
    /// With semantic ranking: the cosine similarity of the tool's text and the query (from -1
    /// to 1), when the model's ranking holds the tool. `None` without semantic ranking, and for
    /// a tool only BM25 found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// The tool's catalog entry (descriptor, source, exports).
    #[serde(skip)]
    pub entry: Arc<ToolEntry>,
}

/// A tool's index fields, normalized: each field's terms joined by spaces, and its length in
/// terms. Worked out once per catalog entry ([`ToolEntry`] keeps it).
pub(crate) struct ToolDoc {
    fields: [String; SearchField::ALL.len()],
    lengths: [u32; SearchField::ALL.len()],
}

/// The distinct terms of `query`, in order.
///
/// # Errors
/// `invalid_arguments` for a query longer than [`MAX_QUERY_CHARS`], or one with nothing to
/// search for (empty, only stop words or punctuation).
pub fn query_terms(query: &str) -> Result<Vec<String>, ToolError> {
    let length = query.chars().count();
    if length > MAX_QUERY_CHARS {
        return Err(ToolError::new(
            ErrorKind::InvalidArguments,
            format!(
                "search query is {length} characters long; at most {MAX_QUERY_CHARS} are accepted"
            ),
        ));
    }
    let mut seen = HashSet::new();
    let terms: Vec<String> = tokenize::terms(query, MAX_QUERY_CHARS)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect();
    if terms.is_empty() {
        let why = if query.trim().is_empty() {
            "search query is empty"
        } else {
            "search query has no words to search for (only stop words such as `the` or `a`, or punctuation)"
        };
        return Err(ToolError::new(
            ErrorKind::InvalidArguments,
            format!("{why}: give words the tool's name or description would contain"),
        ));
    }
    Ok(terms)
}

/// The search itself over `catalog` (see [`Toolset::search`](crate::Toolset::search)): the
/// hits `shows` lets through and `options` admits, best first, at most `options.k`; ranked by
/// BM25, fused with the model's ranking when `semantic` is given.
pub(crate) fn search(
    catalog: &Catalog,
    query: &str,
    options: &SearchOptions,
    shows: impl Fn(&ToolEntry) -> bool,
    semantic: Option<&semantic::Ranker>,
) -> Result<Vec<SearchHit>, ToolError> {
    if options.k == 0 {
        return Err(ToolError::new(
            ErrorKind::InvalidArguments,
            "search `k` (the number of hits) must be at least 1",
        ));
    }
    let terms = query_terms(query)?;
    let entries = catalog.entries();
    let admits = |entry: &ToolEntry| options.admits(entry.descriptor()) && shows(entry);
    let admitted = |position: u32| entries.get(position as usize).is_some_and(|e| admits(e));
    let hit = |scored: &index::Scored, score: f32, similarity: Option<f32>| {
        let entry = entries.get(scored.position as usize)?;
        let fields = if scored.score > 0.0 {
            entry.search_doc().matched(&terms)
        } else {
            0
        };
        Some(SearchHit {
            name: entry.name().to_string(),
            exported_name: entry.exported_name().to_string(),
            score,
            matched: SearchField::ALL
                .iter()
                .enumerate()
                .filter(|(bit, _)| fields & (1 << bit) != 0)
                .map(|(_, f)| *f)
                .collect(),
            similarity,
            entry: Arc::clone(entry),
        })
    };
    let index = catalog.search_index();
    let Some(ranker) = semantic else {
        return Ok(index
            .top(&terms, options.k, admitted)
            .iter()
            .filter_map(|s| hit(s, s.score, None))
            .collect());
    };
    #[cfg(not(feature = "semantic"))]
    match *ranker {};
    #[cfg(feature = "semantic")]
    {
        // Every BM25 hit: reciprocal rank fusion gives each rank a share.
        let bm25: Vec<index::Scored> = index.top(&terms, usize::MAX, admitted);
        ranker.prepare(entries);
        let similar = match ranker.embed_query(query) {
            Ok(vector) => ranker.rank(entries, &vector, admits),
            Err(e) => {
                tracing::warn!(error = %e, "semantic search: the model failed on the query; BM25 alone ranks it");
                Vec::new()
            }
        };
        let bm25_order: Vec<u32> = bm25.iter().map(|s| s.position).collect();
        let model_order: Vec<u32> = similar.iter().map(|s| s.position).collect();
        let fused = semantic::fusion::rrf(&[&bm25_order, &model_order], ranker.settings().rrf_k);
        Ok(fused
            .into_iter()
            .filter_map(|(position, score)| {
                let scored = bm25
                    .iter()
                    .find(|s| s.position == position)
                    .copied()
                    .unwrap_or(index::Scored {
                        position,
                        score: 0.0,
                    });
                let similarity = similar
                    .iter()
                    .find(|s| s.position == position)
                    .map(|s| s.similarity);
                hit(&scored, score, similarity)
            })
            .take(options.k)
            .collect())
    }
}

#[cfg(test)]
mod tests;
