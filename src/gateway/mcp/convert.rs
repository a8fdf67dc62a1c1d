//! toolgate's types as rmcp's: a descriptor as an MCP `Tool`, a [`ToolOutput`] as a
//! `CallToolResult`.

use rmcp::model::{CallToolResult, Tool};
use serde::Deserialize;
use toolgate_runtime::catalog::ToolEntry;
use toolgate_runtime::{Content, Dialect, ErrorKind, ToolDescriptor, ToolError, ToolOutput};

/// The `_meta` key of a listed tool's version (also read from the tools of MCP sources).
pub(crate) const VERSION_META_KEY: &str = "toolgate/version";

/// The tool as `tools/list` shows it: the entry's MCP dialect export (the name a model sees,
/// the input schema with an object root, the output schema, annotations) as rmcp's `Tool`,
/// with the tool's version, if it has one, as `_meta["toolgate/version"]`.
/// `None`, with a warning, for a tool the dialect cannot express (it cannot be offered over
/// MCP).
pub(super) fn tool(entry: &ToolEntry) -> Option<Tool> {
    let exported = match entry.export(Dialect::Mcp) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(tool = %entry.name(), "tool left out of tools/list: {e}");
            return None;
        }
    };
    let versioned;
    let exported = match &entry.descriptor().version {
        Some(v) => {
            let mut t = serde_json::Value::clone(&exported);
            if let Some(o) = t.as_object_mut() {
                o.insert("_meta".into(), serde_json::json!({ VERSION_META_KEY: v }));
            }
            versioned = t;
            &versioned
        }
        None => &*exported,
    };
    match Tool::deserialize(exported) {
        Ok(tool) => Some(tool),
        Err(e) => {
            tracing::warn!(tool = %entry.name(), "tool left out of tools/list: its MCP definition does not parse: {e}");
            None
        }
    }
}

/// A result as `tools/call` answers it. Every part is kept in order. `structuredContent` is
/// mirrored as a JSON text part when there is no content (so that clients that
/// read only `content` see it); an error result keeps no `structuredContent` when the tool
/// declares an output schema (it would not match it). `resultType` is `complete` (required by
/// MCP 2026-07-28, "Result"; rmcp drops it again for a peer of an older version).
pub(super) fn result(mut out: ToolOutput, tool: Option<&ToolDescriptor>) -> CallToolResult {
    if out.is_error && tool.is_some_and(|t| t.output_schema.is_some()) {
        out.structured = None;
    }
    if out.content.is_empty()
        && let Some(s) = &out.structured
    {
        out.content.push(Content::text(s.to_string()));
    }
    let value = serde_json::to_value(&out).unwrap_or_default();
    let mut result = serde_json::from_value::<CallToolResult>(value).unwrap_or_else(|e| {
        tracing::warn!("result not expressible as an MCP CallToolResult: {e}");
        let mut r = CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "internal: the tool's result could not be encoded as MCP: {e}"
        ))]);
        r.is_error = Some(true);
        r
    });
    result
        .result_type
        .get_or_insert(rmcp::model::ResultType::COMPLETE);
    result
}

/// A failed call as the result a client gets (`isError: true`, MCP "tool execution error"): a remote tool's own error result keeps every content part it had (they are in
/// the error's `details.content`); any other error is one text part `<kind>: <message>`. Either
/// way `_meta["toolgate/error"]` carries the error as JSON, so a program can read its kind.
pub(super) fn error_output(e: ToolError) -> ToolOutput {
    let parts = (e.kind() == ErrorKind::Upstream)
        .then(|| e.details()?.get("content").cloned())
        .flatten()
        .and_then(|c| serde_json::from_value::<Vec<Content>>(c).ok())
        .filter(|c| !c.is_empty());
    let mut out = e.into_output();
    if let Some(parts) = parts {
        out.content = parts;
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_runtime::ToolOutput;

    #[test]
    fn a_call_result_says_it_is_complete() {
        // MCP 2026-07-28 requires `resultType` on every result; the Python SDK refuses a
        // tools/call result without it.
        let out = ToolOutput::structured(json!({"value": 2}));
        let value = serde_json::to_value(super::result(out, None)).unwrap();
        assert_eq!(value["resultType"], "complete", "{value}");
        assert_eq!(value["structuredContent"], json!({"value": 2}));
    }
}
