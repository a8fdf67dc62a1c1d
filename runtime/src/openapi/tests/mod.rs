//! Tests of the OpenAPI binding: serialization rules (`style`), request building, and
//! wire-level cases against a real HTTP server on 127.0.0.1 (`server`).

mod hardening;
mod qa;
mod requests;
use crate::test_server as server;
mod style;
mod wire;
mod xml;

use serde_json::json;
use toolgate_model::openapi::{Conversion, Operation, Server};

/// A tools.yaml entry `{"id": "api", "spec": "api.yaml", "allow_private": true}` plus `extra`.
pub(super) fn config(extra: serde_json::Value) -> toolgate_model::config::OpenApiSource {
    let mut base = json!({"id": "api", "spec": "api.yaml", "allow_private": true});
    base.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(base).unwrap()
}

/// Calls `tool` of `source` with a default context.
pub(super) async fn call(
    source: &crate::OpenApiSource,
    tool: &str,
    args: serde_json::Value,
) -> Result<crate::ToolOutput, crate::ToolError> {
    source
        .call_named(tool, args, &crate::ToolContext::default())
        .await
}

/// A conversion with one server and these operations.
pub(super) fn conversion(base: &str, tools: Vec<Operation>) -> Conversion {
    Conversion {
        title: "t".into(),
        version: "1".into(),
        openapi: "3.1.0".into(),
        servers: vec![Server {
            url: base.into(),
            description: None,
            variables: Default::default(),
        }],
        security_schemes: Default::default(),
        operations: tools.len(),
        tools,
        excluded: 0,
        skipped: Vec::new(),
        warnings: Vec::new(),
    }
}

/// An operation with no parameters.
pub(super) fn op(name: &str, method: &str, path: &str) -> Operation {
    Operation {
        name: name.into(),
        operation_id: Some(name.into()),
        method: method.into(),
        path: path.into(),
        pointer: String::new(),
        description: String::new(),
        tags: Vec::new(),
        deprecated: false,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        output_wrapped: false,
        output_xml: None,
        parameters: Vec::new(),
        body: None,
        security: Vec::new(),
        servers: Vec::new(),
        accept: Vec::new(),
        fills: Vec::new(),
    }
}
