//! MCP wire types (rmcp's) to toolgate's: tools to descriptors, results to [`ToolOutput`] or
//! [`ToolError`], rmcp errors to [`ToolError`] kinds.
//!
//! The MCP content model and [`Content`] share the wire format: a result's parts are moved
//! field by field into [`Content`] (what reading rmcp's JSON as [`Content`] would give:
//! `annotations` and `_meta` of a part are not kept), and a part of a kind rmcp adds later
//! goes through its JSON, so that it is still seen (kept as a text note, never dropped).

use rmcp::model::{ContentBlock, ResourceContents as RmcpResource};
use serde_json::{Value, json};

use crate::{
    Content, ErrorKind, ResourceContents, ToolAnnotations, ToolDescriptor, ToolError, ToolOutput,
};

use super::stdio::ProcessLog;

/// A tool as the server lists it; `name` is the server's name for it.
pub(crate) fn descriptor(tool: &rmcp::model::Tool) -> ToolDescriptor {
    let v = serde_json::to_value(tool).unwrap_or_default();
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut annotations: ToolAnnotations = v
        .get("annotations")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    if annotations.title.is_none() {
        annotations.title = text("title");
    }
    let input_schema = match v.get("inputSchema") {
        Some(s @ Value::Object(_)) => s.clone(),
        _ => json!({"type": "object"}),
    };
    let version = version(&v);
    ToolDescriptor {
        name: tool.name.to_string(),
        version,
        description: text("description")
            .or_else(|| annotations.title.clone())
            .unwrap_or_default(),
        input_schema,
        output_schema: v.get("outputSchema").filter(|s| s.is_object()).cloned(),
        // Only an explicit hint makes a tool dangerous (MCP's default for an absent
        // destructiveHint is "may be destructive", which would mark nearly every tool).
        dangerous: annotations.destructive_hint == Some(true)
            && annotations.read_only_hint != Some(true),
        annotations,
        ..ToolDescriptor::default()
    }
}

/// The keys a listed tool's version is read from, in order: `_meta["toolgate/version"]` (the
/// key toolgate itself exports), `_meta.version`, then `annotations.version`. Only a semantic
/// version is kept; anything else leaves the tool unversioned.
const VERSION_KEYS: [(&str, &str); 3] = [
    ("_meta", "toolgate/version"),
    ("_meta", "version"),
    ("annotations", "version"),
];

fn version(tool: &Value) -> Option<String> {
    VERSION_KEYS.iter().find_map(|(outer, key)| {
        let text = tool.get(outer)?.get(key)?.as_str()?;
        let kept = toolgate_model::config::semantic(text);
        if kept.is_none() {
            tracing::debug!(version = %text, "a tool's version is not a semantic version: left unversioned");
        }
        kept
    })
}

/// The text shown for a result with no content at all.
pub(crate) use crate::output::NO_CONTENT;

/// A `tools/call` result as toolgate's result.
///
/// * Every content part is kept, in order; a part of a type toolgate does not model becomes a
///   text note quoting it.
/// * `isError: true` is the tool's own failure: `upstream`, not retryable, with the content in
///   the error's details (its text in the message). Its `structuredContent` is not checked
///   against the output schema.
/// * Otherwise `structuredContent` must match the tool's output schema (`protocol` error
///   naming each violation) and, when `content` is empty, is mirrored as a JSON text part so
///   that a model reading only text sees it; an empty result reads
///   `(tool returned no content)`.
pub(crate) fn output(
    server: &str,
    tool: &ToolDescriptor,
    result: rmcp::model::CallToolResult,
    check_output: impl FnOnce(&Value) -> Result<(), String>,
) -> Result<ToolOutput, ToolError> {
    let content: Vec<Content> = result
        .content
        .into_iter()
        .map(|p| part(server, p))
        .collect();
    let structured = result.structured_content;
    let meta = result.meta.map(|m| m.0);
    if result.is_error == Some(true) {
        let mut text = content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        if text.is_empty() {
            text = "(no message)".to_string();
        }
        let mut details = json!({ "server": server, "content": content });
        if let Some(s) = structured {
            details["structuredContent"] = s;
        }
        return Err(ToolError::new(
            ErrorKind::Upstream,
            format!("tool `{}` reported an error: {text}", tool.name),
        )
        .with_retryable(false)
        .with_details(details));
    }
    if let Some(s) = &structured
        && tool.output_schema.is_some()
        && let Err(violations) = check_output(s)
    {
        return Err(ToolError::new(
            ErrorKind::Protocol,
            format!(
                "server `{server}` returned structuredContent for tool `{}` that does not match its output schema: {violations}",
                tool.name
            ),
        )
        .with_retryable(false));
    }
    let mut out = ToolOutput {
        content,
        structured,
        is_error: false,
        meta,
    };
    if out.content.is_empty() {
        let text = match &out.structured {
            Some(s) => s.to_string(),
            None => NO_CONTENT.to_string(),
        };
        out.content.push(Content::text(text));
    }
    Ok(out)
}

/// One content part, moved into toolgate's model; a kind rmcp has and toolgate does not goes
/// through [`part_json`].
fn part(server: &str, p: ContentBlock) -> Content {
    match p {
        ContentBlock::Text(t) => Content::Text { text: t.text },
        ContentBlock::Image(i) => Content::Image {
            data: i.data,
            mime_type: i.mime_type,
        },
        ContentBlock::Audio(a) => Content::Audio {
            data: a.data,
            mime_type: a.mime_type,
        },
        ContentBlock::ResourceLink(r) => Content::ResourceLink {
            uri: r.uri,
            name: r.name,
            description: r.description,
            mime_type: r.mime_type,
        },
        ContentBlock::Resource(e) => match e.resource {
            RmcpResource::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                resource: ResourceContents::Text {
                    uri,
                    mime_type,
                    text,
                },
            },
            RmcpResource::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Resource {
                resource: ResourceContents::Blob {
                    uri,
                    mime_type,
                    blob,
                },
            },
            other => part_json(
                server,
                &json!({"type": "resource", "resource": serde_json::to_value(other).unwrap_or_default()}),
            ),
        },
        other => part_json(server, &serde_json::to_value(other).unwrap_or_default()),
    }
}

/// One content part as JSON; an unknown type is kept as a note quoting it.
fn part_json(server: &str, p: &Value) -> Content {
    serde_json::from_value(p.clone()).unwrap_or_else(|e| {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("?");
        tracing::warn!(server, kind, error = %e, "content part of a type toolgate does not model; kept as text");
        let json = p.to_string();
        let quoted = toolgate_model::text::cut(&json, 2000);
        Content::text(format!("[content part of type `{kind}`: {quoted}]"))
    })
}

/// What a failed request becomes. `what` names the request (`tools/call get-sum`); `process` is
/// the server process's log, for a stdio server.
pub(crate) fn service_error(
    server: &str,
    what: &str,
    error: &rmcp::ServiceError,
    process: Option<&ProcessLog>,
) -> ToolError {
    use rmcp::ServiceError as E;
    match error {
        E::McpError(e) => {
            tracing::warn!(server, request = what, code = e.code.0, message = %e.message, "JSON-RPC error");
            let mut details = json!({"server": server, "code": e.code.0, "message": e.message});
            if let Some(data) = &e.data {
                details["data"] = data.clone();
            }
            ToolError::new(
                ErrorKind::Protocol,
                format!(
                    "server `{server}` answered {what} with JSON-RPC error {}: {}",
                    e.code.0, e.message
                ),
            )
            .with_retryable(false)
            .with_details(details)
        }
        E::TransportSend(e) if let Some(token) = crate::mcp::token_error_in(e) => token.clone(),
        E::TransportClosed | E::TransportSend(_) => {
            let how = process
                .and_then(ProcessLog::exit)
                .unwrap_or_else(|| "closed the connection".to_string());
            let mut message = format!("server `{server}` {how} during {what}");
            if let Some(tail) = process
                .map(ProcessLog::stderr_tail)
                .filter(|t| !t.is_empty())
            {
                message.push_str("; its last stderr lines: ");
                message.push_str(&tail.join(" | "));
            }
            if let E::TransportSend(e) = error {
                message.push_str(&format!(" ({e})"));
            }
            ToolError::new(ErrorKind::Network, message).with_retryable(true)
        }
        E::Timeout { timeout } => ToolError::new(
            ErrorKind::Timeout,
            format!(
                "server `{server}` did not answer {what} within {} ms",
                timeout.as_millis()
            ),
        ),
        E::Cancelled { reason } => ToolError::new(
            ErrorKind::Cancelled,
            format!(
                "{what} on server `{server}` was cancelled{}",
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        ),
        other => ToolError::new(
            ErrorKind::Protocol,
            format!("server `{server}` gave an unexpected answer to {what}: {other}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> rmcp::model::CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    fn tool(output_schema: Option<Value>) -> ToolDescriptor {
        ToolDescriptor {
            name: "s.t".into(),
            output_schema,
            ..ToolDescriptor::default()
        }
    }

    #[test]
    fn every_part_is_kept_in_order() {
        let r = result(json!({"content": [
            {"type": "text", "text": "Page title: Dashboard"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///r/report.csv", "mimeType": "text/csv", "text": "a,b\n1,2"}},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
        ]}));
        let out = output("s", &tool(None), r, |_| Ok(())).unwrap();
        let kinds: Vec<_> = out
            .content
            .iter()
            .map(|c| serde_json::to_value(c).unwrap()["type"].clone())
            .collect();
        assert_eq!(
            kinds,
            [
                json!("text"),
                json!("image"),
                json!("resource"),
                json!("audio")
            ]
        );
    }

    #[test]
    fn is_error_is_an_upstream_error_carrying_the_content() {
        let r = result(
            json!({"isError": true, "content": [{"type": "text", "text": "table not found: orders"}]}),
        );
        let e = output("db", &tool(None), r, |_| Ok(())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream);
        assert!(!e.is_retryable());
        assert!(
            e.message().contains("table not found: orders"),
            "{}",
            e.message()
        );
        assert_eq!(
            e.details().unwrap()["content"][0]["text"],
            "table not found: orders"
        );
    }

    #[test]
    fn structured_only_results_are_mirrored_as_text_and_errors_skip_the_schema() {
        let schema = json!({"type": "object", "required": ["status"]});
        let r = result(
            json!({"content": [], "structuredContent": {"status": "available", "count": 3}}),
        );
        let out = output("s", &tool(Some(schema.clone())), r, |_| Ok(())).unwrap();
        assert_eq!(
            out.content,
            [Content::text(r#"{"status":"available","count":3}"#)]
        );
        let r = result(
            json!({"isError": true, "content": [{"type":"text","text":"quota exceeded"}], "structuredContent": {"error": "quota"}}),
        );
        let e = output("s", &tool(Some(schema)), r, |_| panic!("not checked")).unwrap_err();
        assert!(e.message().contains("quota exceeded"));
    }

    /// Each kind of part, with the fields toolgate does not model (`annotations`, `_meta`,
    /// `title`, `size`, `icons`): moved field by field, it is what reading its JSON as
    /// [`Content`] gives.
    #[test]
    fn parts_convert_as_their_json_reads() {
        let mut parts = vec![
            json!({"type": "text", "text": "é\n"}),
            json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "UklG", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/csv", "text": "a,b", "_meta": {"x": 1}}}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "a"}}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "mimeType": "image/png", "blob": "AAAA"}}),
            json!({"type": "resource_link", "uri": "file:///c", "name": "c", "title": "C", "description": "d",
                   "mimeType": "text/plain", "size": 3, "icons": [{"src": "https://x/i.png"}]}),
            json!({"type": "resource_link", "uri": "file:///c", "name": "c"}),
        ];
        let with_extras: Vec<Value> = parts
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p["_meta"] = json!({"k": 1});
                p["annotations"] = json!({"audience": ["user"], "priority": 0.5});
                p
            })
            .collect();
        parts.extend(with_extras);
        for p in parts {
            let block: ContentBlock = serde_json::from_value(p.clone()).unwrap();
            let wire = serde_json::to_value(&block).unwrap();
            let direct = part("s", block);
            assert_eq!(direct, part_json("s", &wire), "{p}");
            assert!(
                !matches!(&direct, Content::Text { text } if text.starts_with("[content part")),
                "{p}"
            );
        }
    }

    #[test]
    fn result_fields_are_kept() {
        let r = result(json!({"content": [{"type": "text", "text": "x"}],
            "structuredContent": null, "_meta": {"trace": "t"}, "isError": false}));
        let out = output("s", &tool(None), r, |_| Ok(())).unwrap();
        assert_eq!(out.structured, Some(Value::Null));
        assert_eq!(out.meta.unwrap()["trace"], "t");
        assert_eq!(out.content, [Content::text("x")]);
        let r = result(json!({"content": [{"type": "text", "text": "x"}]}));
        let out = output("s", &tool(None), r, |_| Ok(())).unwrap();
        assert_eq!((out.structured, out.meta), (None, None));
    }

    #[test]
    fn empty_content_reads_as_such() {
        let out = output("s", &tool(None), result(json!({"content": []})), |_| Ok(())).unwrap();
        assert_eq!(out.content, [Content::text(NO_CONTENT)]);
    }
}
