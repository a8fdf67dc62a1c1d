//! A result as a model provider takes it back: every part accounted for, in
//! order; what a provider cannot take is named in a placeholder line, never silently dropped.
//!
//! * Anthropic's `tool_result` content takes text and image blocks (Anthropic Messages API,
//!   "Tool use: tool_result content"): a text part stays text, an image stays an image, an
//!   embedded text resource becomes its text prefixed with its URI, and audio, binary resources
//!   and links become a placeholder line such as `[audio/wav, 4 bytes, not forwarded]`.
//! * Text-only tool results (OpenAI's `role: tool` message content, Gemini's function response):
//!   the same, with images as placeholders too.
//!
//! An empty result reads `(tool returned no content)`; structured content with no text part
//! is given as its JSON.

use serde_json::{Value, json};

use super::{Content, ResourceContents, ToolOutput};

/// The text of a result that has no content at all.
pub const NO_CONTENT: &str = "(tool returned no content)";

impl ToolOutput {
    /// The `content` array of an Anthropic `tool_result` block: text and image blocks, one per
    /// part, in order (see the module docs for what becomes a placeholder). Set the block's
    /// `is_error` from [`is_error`](Self::is_error).
    pub fn to_anthropic_content(&self) -> Vec<Value> {
        let mut blocks: Vec<Value> = self
            .content
            .iter()
            .map(|part| match part {
                Content::Image { data, mime_type } => json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": mime_type, "data": data}
                }),
                other => json!({"type": "text", "text": part_text(other)}),
            })
            .collect();
        if blocks.is_empty() {
            blocks.push(json!({"type": "text", "text": self.fallback_text()}));
        }
        blocks
    }

    /// The result as one text, for providers whose tool results are text only: parts joined by
    /// newlines, in order; images, audio, binary resources and links as placeholder lines.
    pub fn to_text(&self) -> String {
        if self.content.is_empty() {
            return self.fallback_text();
        }
        self.content
            .iter()
            .map(part_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn fallback_text(&self) -> String {
        match &self.structured {
            Some(s) => s.to_string(),
            None => NO_CONTENT.to_string(),
        }
    }
}

/// One part as text: itself, or a placeholder naming what it is.
fn part_text(part: &Content) -> String {
    match part {
        Content::Text { text } => text.clone(),
        Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
            format!("[{mime_type}, {} bytes, not forwarded]", decoded_len(data))
        }
        Content::ResourceLink {
            uri,
            name,
            mime_type,
            ..
        } => format!(
            "[resource link: {name} <{uri}>{}]",
            mime_type
                .as_deref()
                .map(|m| format!(", {m}"))
                .unwrap_or_default()
        ),
        Content::Resource {
            resource: ResourceContents::Text { uri, text, .. },
        } => format!("{uri}\n{text}"),
        Content::Resource {
            resource:
                ResourceContents::Blob {
                    uri,
                    mime_type,
                    blob,
                },
        } => format!(
            "[resource {uri} ({}), {} bytes, not forwarded]",
            mime_type.as_deref().unwrap_or("binary"),
            decoded_len(blob)
        ),
    }
}

/// The size of base64 data once decoded, in bytes (without decoding it).
fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end_matches('=');
    let chars = trimmed.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    chars * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// text + image + resource + audio, all kept, in order.
    fn c23() -> ToolOutput {
        serde_json::from_value(json!({"content": [
            {"type": "text", "text": "Page title: Dashboard"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///r/report.csv", "mimeType": "text/csv", "text": "a,b\n1,2"}},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
        ]}))
        .unwrap()
    }

    #[test]
    fn anthropic_gets_text_image_resource_text_and_an_audio_note() {
        assert_eq!(
            c23().to_anthropic_content(),
            [
                json!({"type": "text", "text": "Page title: Dashboard"}),
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}),
                json!({"type": "text", "text": "file:///r/report.csv\na,b\n1,2"}),
                // "UklGRg==" is the 4 bytes "RIFF".
                json!({"type": "text", "text": "[audio/wav, 4 bytes, not forwarded]"}),
            ]
        );
    }

    #[test]
    fn text_only_providers_get_a_placeholder_per_image_and_audio() {
        assert_eq!(
            c23().to_text(),
            "Page title: Dashboard\n[image/png, 8 bytes, not forwarded]\nfile:///r/report.csv\na,b\n1,2\n[audio/wav, 4 bytes, not forwarded]"
        );
    }

    #[test]
    fn empty_and_structured_only_results_still_say_something() {
        assert_eq!(ToolOutput::default().to_text(), NO_CONTENT);
        assert_eq!(
            ToolOutput::default().to_anthropic_content(),
            [json!({"type": "text", "text": NO_CONTENT})]
        );
        let out = ToolOutput {
            structured: Some(json!({"status": "available", "count": 3})),
            ..ToolOutput::default()
        };
        assert_eq!(out.to_text(), r#"{"status":"available","count":3}"#);
    }

    #[test]
    fn links_and_blobs_are_named() {
        let out = ToolOutput::from_content(vec![
            Content::ResourceLink {
                uri: "file:///a.txt".into(),
                name: "a".into(),
                description: None,
                mime_type: Some("text/plain".into()),
            },
            Content::Resource {
                resource: ResourceContents::Blob {
                    uri: "file:///b.bin".into(),
                    mime_type: None,
                    blob: "AAAA".into(),
                },
            },
        ]);
        assert_eq!(
            out.to_text(),
            "[resource link: a <file:///a.txt>, text/plain]\n[resource file:///b.bin (binary), 3 bytes, not forwarded]"
        );
    }
}
