//! [`ToolOutput`]: the result of a tool call, in the MCP content model.

mod render;

#[cfg(feature = "mcp")]
pub use render::NO_CONTENT;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One part of a tool result, as in MCP's `CallToolResult.content`
/// (MCP 2025-06-18, "Tool Result"). Serialized with a `type` tag and camelCase fields, exactly as
/// MCP puts it on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text (UTF-8).
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the image bytes.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 of the audio bytes.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// A short name.
        name: String,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its media type, if known.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's contents.
        resource: ResourceContents,
    },
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The resource URI.
        uri: String,
        /// Its media type.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents.
    Blob {
        /// The resource URI.
        uri: String,
        /// Its media type.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 of the bytes.
        blob: String,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The result of a tool call: content parts, optional structured JSON, and an error flag.
///
/// Serializes as MCP's `CallToolResult`: `{"content": [...], "structuredContent"?: {...},
/// "isError"?: true}`. No part is ever dropped. When a tool returns structured data, the same
/// data is mirrored as one JSON text part so clients that read only `content` see it too
/// (MCP 2025-06-18, "Structured Content").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolOutput {
    /// The content parts, in order.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured result (a JSON object), described by the tool's output schema when it has one
    /// (for a `#[tool]` function, the schema of its return type).
    #[serde(
        default,
        rename = "structuredContent",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured: Option<Value>,
    /// `true` when the tool ran but reports a failure in its content.
    #[serde(
        default,
        rename = "isError",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub is_error: bool,
    /// Metadata about the call (MCP `_meta`), not meant for the model: e.g. the changes made to
    /// the arguments before the call, under [`COERCIONS_META_KEY`](crate::COERCIONS_META_KEY).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ToolOutput {
    /// A result with one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A result from content parts.
    pub fn from_content(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A structured result: `value` as `structuredContent`, mirrored as compact JSON text.
    ///
    /// MCP requires `structuredContent` to be an object: a value that is not an object is wrapped
    /// as `{"result": value}` (and the tool's output schema is wrapped the same way).
    pub fn structured(value: Value) -> Self {
        let value = match value {
            Value::Object(_) => value,
            other => serde_json::json!({ "result": other }),
        };
        Self::structured_object(value)
    }

    /// Like [`structured`](Self::structured) but wraps as `{"result": value}` when `wrap` says so,
    /// even if the value is an object (used when the output schema was wrapped).
    pub fn structured_wrapped(value: Value, wrap: bool) -> Self {
        if wrap {
            Self::structured_object(serde_json::json!({ "result": value }))
        } else {
            Self::structured(value)
        }
    }

    fn structured_object(value: Value) -> Self {
        let text = value.to_string();
        Self {
            content: vec![Content::Text { text }],
            structured: Some(value),
            is_error: false,
            meta: None,
        }
    }

    /// A failed result whose only part is `text`.
    pub fn error_text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured: None,
            is_error: true,
            meta: None,
        }
    }

    /// Appends a part.
    pub fn with_content(mut self, part: Content) -> Self {
        self.content.push(part);
        self
    }

    /// All text parts joined by newlines (images and other parts are skipped).
    pub fn text_joined(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serializes_as_mcp_call_tool_result() {
        let out = ToolOutput::from_content(vec![
            Content::text("t"),
            Content::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            },
            Content::Resource {
                resource: ResourceContents::Text {
                    uri: "file:///r.csv".into(),
                    mime_type: Some("text/csv".into()),
                    text: "a,b".into(),
                },
            },
            Content::ResourceLink {
                uri: "file:///x".into(),
                name: "x".into(),
                description: None,
                mime_type: None,
            },
        ]);
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(
            v,
            json!({"content":[
                {"type":"text","text":"t"},
                {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
                {"type":"resource","resource":{"uri":"file:///r.csv","mimeType":"text/csv","text":"a,b"}},
                {"type":"resource_link","uri":"file:///x","name":"x"}
            ]})
        );
        let back: ToolOutput = serde_json::from_value(v).unwrap();
        assert_eq!(back, out);
    }

    #[test]
    fn structured_scalars_are_wrapped_and_mirrored() {
        let out = ToolOutput::structured(json!(42));
        assert_eq!(out.structured, Some(json!({"result": 42})));
        assert_eq!(out.text_joined(), r#"{"result":42}"#);
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(
            v,
            json!({"content":[{"type":"text","text":"{\"result\":42}"}],"structuredContent":{"result":42}})
        );
    }
}
