//! Semantic ranking (the `semantic` cargo feature): a local sentence-embedding model ranks the
//! tools too, and its ranking is fused with BM25's by reciprocal rank fusion.
//!
//! - **The model** (`model.rs`): any sentence-transformers folder of the BERT architecture
//!   (all-MiniLM-L6-v2 by default in the docs and tests), run on the CPU with candle
//!   (candle-transformers' `models::bert`), its `tokenizer.json` read by the `tokenizers` crate.
//!   Pooling as its `1_Pooling/config.json` says (mean or CLS), then L2 normalization, so the
//!   similarity of two texts is the dot product of their vectors (cosine similarity).
//! - **What is embedded per tool** ([`tool_text`]): the words of its name (without the
//!   `{source}.` prefix), its title, its description and the words of its argument names, in
//!   that order, cut at the model's `max_seq_length` tokens. Embedded in batches when the
//!   first search of a catalog snapshot finds tools without a vector; the vector is kept in the
//!   tool's `ToolEntry`, so a rebuilt catalog embeds only new or changed tools.
//! - **The query** is embedded as typed (one forward pass per search).
//! - **The fusion** (`fusion.rs`): reciprocal rank fusion of BM25's ranking (every tool with a
//!   BM25 score) and the model's (the [`candidates`](SemanticSearch::candidates) most similar
//!   tools with a similarity of at least [`min_similarity`](SemanticSearch::min_similarity)),
//!   both over the tools the caller may see and the filters admit.
//!
//! Without the feature, [`SemanticSearch`] still exists (configuration and builders compile the
//! same) but a toolset asking for it fails to build, saying so.

#[cfg(feature = "semantic")]
pub(crate) mod fusion;
#[cfg(feature = "semantic")]
mod model;
#[cfg(feature = "semantic")]
mod ranker;
#[cfg(all(test, feature = "semantic"))]
mod tests;

use std::path::{Path, PathBuf};

#[cfg(feature = "semantic")]
pub(crate) use ranker::Ranker;

/// Stands for the model when the `semantic` feature is off: no value of it exists.
#[cfg(not(feature = "semantic"))]
pub(crate) enum Ranker {}

/// The usual constant of reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009):
/// a tool at rank `r` (1-based) of a ranking adds `1 / (60 + r)` to its fused score.
pub const DEFAULT_RRF_K: u32 = 60;

/// The default for [`SemanticSearch::min_similarity`].
pub const DEFAULT_MIN_SIMILARITY: f32 = 0.2;

/// The default for [`SemanticSearch::candidates`].
pub const DEFAULT_CANDIDATES: usize = 50;

/// The default for [`SemanticSearch::batch_size`].
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Settings of semantic ranking, given to
/// [`ToolsetBuilder::semantic_search`](crate::ToolsetBuilder::semantic_search):
///
/// ```ignore
/// let tools = Toolset::builder()
///     .source(my_tools)
///     .semantic_search(SemanticSearch::new(".peers/models/all-minilm-l6-v2"))
///     .build()?; // loads the model: an error if it cannot, or without the `semantic` feature
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "semantic"), allow(dead_code))]
pub struct SemanticSearch {
    pub(crate) model: PathBuf,
    pub(crate) rrf_k: u32,
    pub(crate) min_similarity: f32,
    pub(crate) candidates: usize,
    pub(crate) batch_size: usize,
}

impl SemanticSearch {
    /// Semantic ranking with the sentence-transformers model in folder `model` (`config.json`,
    /// `tokenizer.json`, `model.safetensors`, `1_Pooling/config.json`), the other settings at
    /// their defaults.
    pub fn new(model: impl Into<PathBuf>) -> Self {
        Self {
            model: model.into(),
            rrf_k: DEFAULT_RRF_K,
            min_similarity: DEFAULT_MIN_SIMILARITY,
            candidates: DEFAULT_CANDIDATES,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// The constant `k` of reciprocal rank fusion (default [`DEFAULT_RRF_K`], 60): a larger one
    /// flattens the difference between the first ranks. Clamped to at least 1.
    pub fn rrf_k(mut self, k: u32) -> Self {
        self.rrf_k = k.max(1);
        self
    }

    /// The least cosine similarity (from -1 to 1) a tool needs with the query for the model's
    /// ranking to hold it (default [`DEFAULT_MIN_SIMILARITY`], 0.2): below it a tool is found
    /// only if BM25 finds it, so a query about nothing the toolset does stays an empty success.
    pub fn min_similarity(mut self, similarity: f32) -> Self {
        self.min_similarity = similarity;
        self
    }

    /// How many of the most similar tools the model's ranking holds (default
    /// [`DEFAULT_CANDIDATES`], 50; at least 1).
    pub fn candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates.max(1);
        self
    }

    /// How many tool texts go through the model in one forward pass when the index is built
    /// (default [`DEFAULT_BATCH_SIZE`], 32; at least 1).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The model's folder.
    pub fn model(&self) -> &Path {
        &self.model
    }
}

/// Loads the model `settings` name, as a toolset's build does, and drops it: what `toolgate
/// check` runs to report a model that would not load.
///
/// # Errors
/// A message saying what is wrong: the build has no `semantic` feature, the folder or one of
/// its files is missing or unreadable, a JSON file does not parse, the model is not of the BERT
/// architecture, its pooling is neither mean nor CLS, or `model.safetensors` is not a
/// safetensors file holding the tensors `config.json` describes.
pub fn check(settings: &SemanticSearch) -> Result<(), String> {
    load(settings).map(drop)
}

/// The model of `settings`, loaded (see [`check`] for the errors).
pub(crate) fn load(settings: &SemanticSearch) -> Result<Ranker, String> {
    #[cfg(feature = "semantic")]
    {
        Ranker::load(settings.clone())
    }
    #[cfg(not(feature = "semantic"))]
    {
        Err(format!(
            "semantic tool search (model `{}`) needs toolgate built with the `semantic` cargo \
             feature (`cargo build --features semantic`); this build has none",
            settings.model.display()
        ))
    }
}

/// The text the model embeds for `d`'s tool: the words of its name (without the `{source}.`
/// prefix; `issues_create` → `issues create`), then its title, its description, and the words
/// of its argument names (the input schema's top-level `properties`), each part ended by a
/// period: `issues create. Create an issue. Opens a new issue. Arguments: owner, repo, title.`
pub fn tool_text(d: &crate::ToolDescriptor) -> String {
    let own_name = d
        .name
        .strip_prefix(d.source.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(&d.name);
    let mut parts = vec![words(own_name).join(" ")];
    if let Some(title) = d.annotations.title.as_deref().map(str::trim)
        && !title.is_empty()
    {
        parts.push(title.to_string());
    }
    let description = d.description.trim();
    if !description.is_empty() {
        parts.push(description.to_string());
    }
    if let Some(properties) = d.input_schema.get("properties").and_then(|p| p.as_object()) {
        let names: Vec<String> = properties.keys().map(|k| words(k).join(" ")).collect();
        if !names.is_empty() {
            parts.push(format!("Arguments: {}", names.join(", ")));
        }
    }
    let mut text = String::new();
    for part in parts {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&part);
        if !part.ends_with(['.', '!', '?', '。']) {
            text.push('.');
        }
    }
    text
}

/// The words of an identifier, lower-cased: split at every character that is neither a letter
/// nor a digit, and at case changes (`issuesCreate`, `issues-create` → `issues`, `create`;
/// `HTTPServer` → `http`, `server`).
fn words(identifier: &str) -> Vec<String> {
    let chars: Vec<char> = identifier.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if boundary && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod text_tests {
    use super::words;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("issues_create"), ["issues", "create"]);
        assert_eq!(words("issuesCreate"), ["issues", "create"]);
        assert_eq!(words("HTTPServer"), ["http", "server"]);
        assert_eq!(words("get-s3-object"), ["get", "s3", "object"]);
        assert_eq!(words("..."), Vec::<String>::new());
    }
}

#[cfg(all(test, not(feature = "semantic")))]
mod without_feature {
    use super::SemanticSearch;
    use crate::{BuildError, Toolset};

    #[test]
    fn asking_for_semantic_search_fails_the_build_saying_why() {
        let Err(error) = Toolset::builder()
            .semantic_search(SemanticSearch::new("models/all-minilm-l6-v2"))
            .build()
        else {
            panic!("a build without the feature must refuse semantic search");
        };
        assert!(matches!(error, BuildError::Semantic(_)), "{error}");
        let message = error.to_string();
        assert!(
            message.contains("`semantic` cargo feature")
                && message.contains("models/all-minilm-l6-v2"),
            "{message}"
        );
        assert!(super::check(&SemanticSearch::new("m")).is_err());
    }
}
