//! OpenAPI 3.0 / 3.1 (and 3.2 where it is a superset) documents converted into tools: one tool
//! per operation, with a JSON Schema 2020-12 input schema, an output schema, and the binding
//! (parameters, body, security, servers) the runtime's HTTP call follows.
//!
//! Modules: `parse` (text → JSON, version check), `refs` (JSON pointers, bundling relative
//! files), `schema` (JSON Schema 2020-12 normalisation; `schema::merge`: the `allOf` merge;
//! `schema::defs`: `$defs` names and attaching), `names` (tool and argument names, filters),
//! `operation` (parameters and argument names; `operation::body`: request bodies, media-type
//! choice, flattening; `operation::responses`: output schemas, `Accept`), `xml` (the XML
//! layout of XML bodies and responses), `security`, `servers`, `adapters`, `convert` (the
//! driver). Nothing panics on any input; schema nesting is bounded.
//!
//! The rules, and the table of warning and skip codes ([`Warning::code`], each with a JSON
//! pointer such as `#/paths/~1pets/get/requestBody`), are in `docs/openapi.md`; keep it in
//! sync with the code.
//!
//! The same conversion runs in `build.rs` (through `toolgate-codegen`) and at start-up for
//! sources marked `load: runtime`, so both give the same [`Conversion`].
//!
//! ```
//! use toolgate_model::openapi::{ConvertOptions, Document, convert};
//!
//! let doc = Document::from_text(r#"
//! openapi: 3.0.3
//! info: {title: Items, version: "1"}
//! paths:
//!   /items/{id}:
//!     delete:
//!       operationId: delete_item
//!       parameters: [{name: id, in: path, required: true, schema: {type: string}}]
//!       responses: {'204': {description: deleted}}
//! "#, "items.yaml").unwrap();
//! let conversion = convert(&doc, &ConvertOptions::default()).unwrap();
//! assert_eq!(conversion.tools[0].name, "delete_item");
//! ```

mod adapters;
mod convert;
mod model;
mod names;
mod operation;
mod parse;
mod refs;
mod schema;
mod security;
mod servers;
#[cfg(test)]
mod tests;
mod xml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use model::*;
pub use servers::ServerVariableError;
pub use xml::{MAX_XML_DEPTH, XmlKind, XmlMapping, XmlNode, XmlProperty};

use crate::config::{Adapter, ArgumentAdapter, OperationFilter};

/// An OpenAPI document, parsed, with its relative-file `$ref`s bundled in.
#[derive(Debug, Clone)]
pub struct Document {
    /// The document as JSON.
    pub root: Value,
    /// Where it came from (a path or URL), for messages.
    pub origin: String,
    /// Files read to bundle relative `$ref`s (for `rerun-if-changed`).
    pub files: Vec<PathBuf>,
}

/// Why a document cannot be read or converted at all (a single operation's problem is a
/// [`Warning`] or a [`Skipped`] entry instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenApiError {
    /// The file cannot be read.
    #[error("cannot read `{path}`: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// Not JSON or YAML, or not an OpenAPI document.
    #[error("{origin}: {message}")]
    Parse {
        /// The document.
        origin: String,
        /// What is wrong, with line and column when known.
        message: String,
    },
    /// A version toolgate does not read (Swagger 2.0, OpenAPI 4): says what to do instead.
    #[error("{origin}: {message}")]
    Version {
        /// The document.
        origin: String,
        /// Which version and what to do.
        message: String,
    },
    /// A `$ref` that cannot be resolved where the whole document depends on it.
    #[error("{origin}: {pointer}: {message}")]
    Ref {
        /// The document.
        origin: String,
        /// Where the `$ref` is.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// Two operations get the same tool name.
    #[error("{origin}: {message}")]
    Names {
        /// The document.
        origin: String,
        /// Both operations and the name.
        message: String,
    },
}

impl Document {
    /// Reads a JSON or YAML file and bundles the relative-file `$ref`s it (transitively) uses.
    ///
    /// # Errors
    /// [`OpenApiError::Io`], [`OpenApiError::Parse`], [`OpenApiError::Version`],
    /// [`OpenApiError::Ref`] for a referenced file that cannot be read.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, OpenApiError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| OpenApiError::Io {
            path: origin.clone(),
            message: e.to_string(),
        })?;
        let mut root = parse::parse_text(&text, &origin)?;
        parse::check_version(&root, &origin)?;
        let files = refs::bundle(&mut root, path, &origin)?;
        Ok(Self {
            root,
            origin,
            files,
        })
    }

    /// Parses JSON or YAML text; `origin` names it in messages. Relative-file `$ref`s are left
    /// unresolved (the operations using them get a warning).
    ///
    /// # Errors
    /// [`OpenApiError::Parse`], [`OpenApiError::Version`].
    pub fn from_text(text: &str, origin: &str) -> Result<Self, OpenApiError> {
        let root = parse::parse_text(text, origin)?;
        parse::check_version(&root, origin)?;
        Ok(Self {
            root,
            origin: origin.to_string(),
            files: Vec::new(),
        })
    }
}

/// What [`convert`] is told besides the document.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// The longest tool name (without prefix) allowed: 64 minus the room the source prefix
    /// takes (`{id}__`). Default 64.
    pub max_name_len: usize,
    /// Names chosen by hand: key `operationId` or `METHOD /path`.
    pub names: BTreeMap<String, String>,
    /// Only these operations (empty: all).
    pub include: OperationFilter,
    /// Not these.
    pub exclude: OperationFilter,
    /// Argument adapters, in order.
    pub adapters: Vec<Adapter>,
    /// The most bytes (serialized) an output schema may take; `$ref`s beyond it are loosened to
    /// `{}` (any value), with one warning per document. Default 32768.
    pub max_output_schema_bytes: usize,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        Self {
            max_name_len: 64,
            names: BTreeMap::new(),
            include: OperationFilter::default(),
            exclude: OperationFilter::default(),
            adapters: Vec::new(),
            max_output_schema_bytes: 32 * 1024,
        }
    }
}

impl ConvertOptions {
    /// The options tools.yaml gives for `source` (names, filters, adapters, the name length
    /// left by its prefix).
    pub fn for_source(source: &crate::config::OpenApiSource) -> Self {
        Self {
            max_name_len: if source.prefix {
                64usize.saturating_sub(source.id.len() + 2)
            } else {
                64
            },
            names: source.names.clone(),
            include: source.include.clone(),
            exclude: source.exclude.clone(),
            adapters: source.adapters.clone(),
            ..Self::default()
        }
    }
}

/// Converts every operation of `doc` into a tool.
///
/// # Errors
/// [`OpenApiError::Names`] when two operations get the same name; [`OpenApiError::Ref`] when a
/// `$ref` the document-level parts need cannot be resolved. Problems of one operation skip it
/// (see [`Conversion::skipped`]).
pub fn convert(doc: &Document, options: &ConvertOptions) -> Result<Conversion, OpenApiError> {
    convert::run(doc, options)
}
