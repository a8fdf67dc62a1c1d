//! An OpenAPI document's `info.version` becomes its tools' version when it is a semantic
//! version; tools.yaml's `version` replaces it, and `require` refuses a source whose version
//! does not meet it. Documents are read from text and converted as a source loaded at run time.

use serde_json::json;
use toolgate_model::config::OpenApiSource as Entry;
use toolgate_model::openapi::{ConvertOptions, Document, convert};
use toolgate_runtime::{OpenApiSource, ToolSource};

/// A one-operation document whose `info.version` is `version`.
fn document(version: &str) -> toolgate_model::openapi::Conversion {
    let text = format!(
        r#"
openapi: 3.1.0
info: {{title: Items, version: "{version}"}}
servers: [{{url: "http://127.0.0.1:9"}}]
paths:
  /items:
    get:
      operationId: list_items
      responses: {{"200": {{description: ok}}}}
"#
    );
    let doc = Document::from_text(&text, "items.yaml").expect("the document reads");
    convert(&doc, &ConvertOptions::default()).expect("it converts")
}

fn entry(extra: serde_json::Value) -> Entry {
    let mut e = json!({"id": "items", "spec": "items.yaml", "load": "runtime"});
    e.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(e).expect("an OpenAPI entry")
}

/// The version of the source's one tool.
fn version(conversion_version: &str, extra: serde_json::Value) -> Option<String> {
    let source = OpenApiSource::builder("items", document(conversion_version))
        .config(&entry(extra))
        .build()
        .expect("the source builds");
    let tools = source.tools();
    assert_eq!(tools.len(), 1);
    tools[0].descriptor.version.clone()
}

#[test]
fn a_semantic_info_version_is_each_tool_s_version() {
    assert_eq!(version("2.3.1", json!({})).as_deref(), Some("2.3.1"));
}

#[test]
fn a_date_or_a_two_part_info_version_leaves_the_tools_unversioned() {
    assert_eq!(version("2024-05-01", json!({})), None);
    assert_eq!(version("1.0", json!({})), None);
}

#[test]
fn tools_yaml_version_replaces_the_document_s() {
    assert_eq!(
        version("2024-05-01", json!({"version": "4.1.0"})).as_deref(),
        Some("4.1.0")
    );
}

#[test]
fn require_refuses_a_source_of_another_major_version_with_the_reason() {
    assert_eq!(
        version("2.3.1", json!({"require": "^2"})).as_deref(),
        Some("2.3.1")
    );
    let err = OpenApiSource::builder("items", document("3.0.0"))
        .config(&entry(json!({"require": "^2"})))
        .build()
        .expect_err("refused")
        .to_string();
    assert_eq!(
        err,
        "OpenAPI source `items`: its tools are refused: its version 3.0.0 does not match require \"^2\""
    );
    let err = OpenApiSource::builder("items", document("2024-05-01"))
        .config(&entry(json!({"require": "^2"})))
        .build()
        .expect_err("refused")
        .to_string();
    assert!(err.contains("declares no version"), "{err}");
}
