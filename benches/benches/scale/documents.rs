//! The real documents of the memory table: GitHub's and Stripe's descriptions (the repository's
//! `tests/specs/`) as one toolset of two compiled OpenAPI sources, built the way generated code
//! builds them: each conversion as the JSON the codegen embeds, read back by
//! `__private::embedded_openapi` and given to `OpenApiSource::builder(..).config(..)`.

use std::path::Path;
use std::sync::Arc;

use toolgate::model::config::OpenApiSource as Entry;
use toolgate::model::openapi::{ConvertOptions, Document, convert};
use toolgate::{OpenApiSource, ToolSource, ToolsetBuilder};

/// Each document: its source id and its path from the repository root.
pub const DOCUMENTS: [(&str, &str); 2] = [
    (
        "github",
        "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json",
    ),
    ("stripe", "tests/specs/stripe/stripe-spec3-2023-09-12.yaml"),
];

/// The row label of the table.
pub const LABEL: &str = "GitHub + Stripe";

/// Each document converted as a compiled source is (`ConvertOptions::for_source`): its
/// tools.yaml entry and the conversion's JSON, as embedded in the binary (leaked: a
/// `&'static str` like `include_str!`'s, outside what the build allocates).
pub struct Prepared {
    sources: Vec<(Entry, &'static str)>,
}

impl Prepared {
    /// Reads and converts both documents (seconds: run before the measurement starts).
    pub fn new() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("benches/ is inside the repository");
        let sources = DOCUMENTS
            .iter()
            .map(|(id, path)| {
                let entry: Entry = serde_json::from_value(serde_json::json!({
                    "id": id,
                    "spec": path,
                }))
                .expect("an OpenAPI entry");
                let doc = Document::from_file(root.join(path)).expect("the document reads");
                let conversion =
                    convert(&doc, &ConvertOptions::for_source(&entry)).expect("it converts");
                let json = serde_json::to_string(&conversion).expect("it serializes");
                (entry, &*Box::leak(json.into_boxed_str()))
            })
            .collect();
        Self { sources }
    }

    /// The bytes of the embedded conversions.
    pub fn embedded_bytes(&self) -> usize {
        self.sources.iter().map(|(_, j)| j.len()).sum()
    }

    /// The toolset builder generated code would give.
    pub fn builder(&self) -> ToolsetBuilder {
        let mut builder = toolgate::Toolset::builder();
        for (entry, json) in &self.sources {
            let (entry, json) = (entry.clone(), *json);
            builder = builder.source_with(move |_| {
                let conversion = toolgate::__private::embedded_openapi(&entry.id, json)?;
                let source = OpenApiSource::builder(&entry.id, conversion)
                    .config(&entry)
                    .build()?;
                Ok(Arc::new(source) as Arc<dyn ToolSource>)
            });
        }
        builder
    }
}
