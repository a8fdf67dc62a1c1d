//! `toolgate://results/…`: a result cut to a size limit, read in full as a resource.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResponse, ReadResourceResult, ResourceContents};
use toolgate_runtime::{Content, ToolContext, ToolOutput};

use crate::gateway::Gateway;
use crate::gateway::servers::VirtualServer;

/// The stored result `uri` as resource contents, through the result guardrails of the tool that
/// gave it and of the virtual server `on` it is read through (masked as the cut result was): one `text/plain` text when every part is
/// text (the parts joined by newlines), one `application/json` text for a structured-only
/// result, else one entry per part in order (text as `text/plain`, images and audio as blobs
/// of their type, embedded resources as they are, links as their URI in text).
///
/// # Errors
/// -32002 (resource not found) when nothing is stored under `uri`: it was never a result's
/// URI, a guardrail withholds it, or it was evicted (the newest 32 results, 64 MiB at most, are kept per source; with a
/// shared store, every replica's for an hour).
pub(super) async fn read(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    uri: &str,
) -> Result<ReadResourceResponse, McpError> {
    let set = on.and_then(VirtualServer::guardrails);
    let ctx = ToolContext::default();
    let read = gateway.toolset().stored_result_guarded(uri, &ctx, set);
    let out = read.await.ok_or_else(|| {
        McpError::resource_not_found(
            format!(
                "Resource {uri} not found: no stored result has this URI (only the newest results are kept)"
            ),
            None,
        )
    })?;
    Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
        contents(&out, uri),
    )))
}

fn contents(out: &ToolOutput, uri: &str) -> Vec<ResourceContents> {
    let text = |text: String, mime: &str| ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some(mime.to_string()),
        text,
        meta: None,
    };
    if out.content.is_empty() {
        let json = out
            .structured
            .as_ref()
            .map(serde_json::Value::to_string)
            .unwrap_or_default();
        return vec![text(json, "application/json")];
    }
    if out.content.iter().all(|c| c.as_text().is_some()) {
        return vec![text(out.text_joined(), "text/plain")];
    }
    out.content
        .iter()
        .map(|part| match part {
            Content::Text { text: t } => text(t.clone(), "text/plain"),
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                ResourceContents::BlobResourceContents {
                    uri: uri.to_string(),
                    mime_type: Some(mime_type.clone()),
                    blob: data.clone(),
                    meta: None,
                }
            }
            Content::ResourceLink { uri: link, .. } => text(link.clone(), "text/uri-list"),
            Content::Resource { resource } => match resource {
                toolgate_runtime::ResourceContents::Text {
                    uri,
                    mime_type,
                    text,
                } => ResourceContents::TextResourceContents {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    text: text.clone(),
                    meta: None,
                },
                toolgate_runtime::ResourceContents::Blob {
                    uri,
                    mime_type,
                    blob,
                } => ResourceContents::BlobResourceContents {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    blob: blob.clone(),
                    meta: None,
                },
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const URI: &str = "toolgate://results/s/0";

    fn texts(c: &[ResourceContents]) -> Vec<(String, Option<String>)> {
        c.iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents {
                    text, mime_type, ..
                } => (text.clone(), mime_type.clone()),
                ResourceContents::BlobResourceContents {
                    blob, mime_type, ..
                } => (format!("blob:{blob}"), mime_type.clone()),
                _ => (String::new(), None),
            })
            .collect()
    }

    #[test]
    fn text_parts_are_joined() {
        let out = ToolOutput::from_content(vec![Content::text("a"), Content::text("b")]);
        assert_eq!(
            texts(&contents(&out, URI)),
            [("a\nb".to_string(), Some("text/plain".to_string()))]
        );
    }

    #[test]
    fn structured_only_is_json() {
        let mut out = ToolOutput::structured(serde_json::json!({"k": 1}));
        out.content.clear();
        assert_eq!(
            texts(&contents(&out, URI)),
            [(
                "{\"k\":1}".to_string(),
                Some("application/json".to_string())
            )]
        );
    }

    #[test]
    fn mixed_parts_keep_their_order_and_types() {
        let out = ToolOutput::from_content(vec![
            Content::text("t"),
            Content::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            },
        ]);
        assert_eq!(
            texts(&contents(&out, URI)),
            [
                ("t".to_string(), Some("text/plain".to_string())),
                ("blob:AAAA".to_string(), Some("image/png".to_string()))
            ]
        );
    }
}
