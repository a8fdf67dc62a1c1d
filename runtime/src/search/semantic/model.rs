//! The sentence-embedding model: a sentence-transformers folder of the BERT architecture, run on
//! the CPU by candle-transformers' `BertModel`, its `tokenizer.json` read by `tokenizers`.
//!
//! A folder holds `config.json` (the BERT configuration), `tokenizer.json`, `model.safetensors`
//! (f32 or f16 weights, with or without a `bert.` prefix), `1_Pooling/config.json` (which pooling:
//! mean or CLS) and optionally `sentence_bert_config.json` (`max_seq_length`, the tokens a text is
//! cut at; else the model's `max_position_embeddings`). Every vector is L2-normalized, so the dot
//! product of two is their cosine similarity.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

/// How token vectors become one text vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    /// The mean of the token vectors, padding left out.
    Mean,
    /// The vector of the first token (`[CLS]`).
    Cls,
}

/// `1_Pooling/config.json`, as sentence-transformers writes it.
#[derive(Deserialize)]
struct PoolingConfig {
    word_embedding_dimension: usize,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// `sentence_bert_config.json`: only the cut.
#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// A loaded model (see the module docs).
pub(super) struct Encoder {
    bert: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    pad_id: u32,
    dimension: usize,
    device: Device,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("pooling", &self.pooling)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

/// Reads and parses the JSON file `name` of `dir`.
fn json<T: for<'de> Deserialize<'de>>(dir: &Path, name: &str) -> Result<T, String> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid: {e}", path.display()))
}

impl Encoder {
    /// Loads the model in `dir`.
    ///
    /// # Errors
    /// A message naming the file at fault: missing or unreadable, JSON that does not parse or
    /// describes no BERT model, a pooling other than mean or CLS, a dimension that is not the
    /// model's, a `model.safetensors` that is not safetensors or lacks a tensor.
    pub(super) fn load(dir: &Path) -> Result<Self, String> {
        if !dir.is_dir() {
            return Err(format!(
                "model folder {} does not exist (scripts/install-peers.sh unpacks all-MiniLM-L6-v2 \
                 into .peers/models/all-minilm-l6-v2)",
                dir.display()
            ));
        }
        let config: Config = json(dir, "config.json")?;
        let pooling_config: PoolingConfig = json(dir, "1_Pooling/config.json")?;
        let pooling = match (
            pooling_config.pooling_mode_mean_tokens,
            pooling_config.pooling_mode_cls_token,
            pooling_config.pooling_mode_max_tokens
                || pooling_config.pooling_mode_mean_sqrt_len_tokens,
        ) {
            (true, false, false) => Pooling::Mean,
            (false, true, false) => Pooling::Cls,
            _ => {
                return Err(format!(
                    "{}: only mean pooling or CLS pooling (exactly one) is supported",
                    dir.join("1_Pooling/config.json").display()
                ));
            }
        };
        if pooling_config.word_embedding_dimension != config.hidden_size {
            return Err(format!(
                "{}: word_embedding_dimension {} is not the model's hidden_size {}",
                dir.join("1_Pooling/config.json").display(),
                pooling_config.word_embedding_dimension,
                config.hidden_size
            ));
        }
        let max_tokens = if dir.join("sentence_bert_config.json").is_file() {
            json::<SentenceBertConfig>(dir, "sentence_bert_config.json")?
                .max_seq_length
                .unwrap_or(config.max_position_embeddings)
        } else {
            config.max_position_embeddings
        }
        .min(config.max_position_embeddings)
        .max(2);

        let tokenizer_path = dir.join("tokenizer.json");
        if !tokenizer_path.is_file() {
            return Err(format!("{} does not exist", tokenizer_path.display()));
        }
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| format!("{} is not valid: {e}", tokenizer_path.display()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| format!("{}: {e}", tokenizer_path.display()))?;
        tokenizer.with_padding(None);

        let weights = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights)
            .map_err(|e| format!("cannot read {}: {e}", weights.display()))?;
        let device = Device::Cpu;
        let bert = load_bert(bytes, &config, &device)
            .map_err(|e| format!("{} does not hold the model: {e}", weights.display()))?;
        let pad_id = u32::try_from(config.pad_token_id).unwrap_or(0);
        let encoder = Self {
            bert,
            tokenizer,
            pooling,
            pad_id,
            dimension: config.hidden_size,
            device,
        };
        // One forward pass: a model whose tensors load but do not fit together fails here, at
        // start-up, rather than on the first search.
        let probe = encoder
            .embed(&["probe"])
            .map_err(|e| format!("model in {} does not run: {e}", dir.display()))?;
        if probe.first().map(Vec::len) != Some(encoder.dimension) {
            return Err(format!(
                "model in {} gives vectors of the wrong size",
                dir.display()
            ));
        }
        Ok(encoder)
    }

    /// The vector length.
    pub(super) fn dimension(&self) -> usize {
        self.dimension
    }

    /// The vectors of `texts`, in order, in one forward pass (each L2-normalized, of
    /// [`dimension`](Self::dimension) values).
    ///
    /// # Errors
    /// A message when the tokenizer or the model fails (a token id outside the model's
    /// vocabulary, for one).
    pub(super) fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| format!("tokenizer: {e}"))?;
        let len = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let rows = encodings.len();
        let mut ids = Vec::with_capacity(rows * len);
        let mut types = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for e in &encodings {
            let n = e.get_ids().len();
            ids.extend_from_slice(e.get_ids());
            types.extend_from_slice(e.get_type_ids());
            mask.extend(std::iter::repeat_n(1u32, n));
            ids.extend(std::iter::repeat_n(self.pad_id, len - n));
            types.extend(std::iter::repeat_n(0u32, len - n));
            mask.extend(std::iter::repeat_n(0u32, len - n));
        }
        self.forward(ids, types, mask, rows, len)
            .map_err(|e| format!("model: {e}"))
    }

    fn forward(
        &self,
        ids: Vec<u32>,
        types: Vec<u32>,
        mask: Vec<u32>,
        rows: usize,
        len: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let ids = Tensor::from_vec(ids, (rows, len), &self.device)?;
        let types = Tensor::from_vec(types, (rows, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, len), &self.device)?;
        let hidden = self.bert.forward(&ids, &types, Some(&mask))?; // (rows, len, dim)
        let pooled = match self.pooling {
            Pooling::Mean => {
                let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, len, 1)
                let summed = hidden.broadcast_mul(&weights)?.sum(1)?; // (rows, dim)
                let counts = weights.sum(1)?.clamp(1f32, f32::MAX)?; // (rows, 1)
                summed.broadcast_div(&counts)?
            }
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
        };
        let norms = pooled
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        pooled.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

/// The BERT model held by the safetensors bytes `bytes`, as f32.
fn load_bert(bytes: Vec<u8>, config: &Config, device: &Device) -> candle_core::Result<BertModel> {
    let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)?;
    BertModel::load(vb, config)
}
