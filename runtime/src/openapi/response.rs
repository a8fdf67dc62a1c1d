//! From an HTTP response to a [`ToolOutput`] or a [`ToolError`].
//!
//! * 2xx with an empty body (204, or a 200 whose `Content-Type` says JSON but which has no
//!   bytes) → success, one text part `HTTP 204 No Content`;
//! * 2xx XML (`application/xml`, `text/xml`, `+xml`, or a body starting with `<` under a
//!   vague type) of an operation whose output schema came from an XML media type → read by
//!   its [`XmlMapping`] into structured content (see `openapi::xml`); XML that does not read
//!   → an `upstream` error (not retryable) with an excerpt;
//! * 2xx JSON (`application/json`, `*/*+json`) → structured content (wrapped as
//!   `{"result": ...}` when the operation's output schema says so); a body declared JSON that
//!   does not parse → an `upstream` error (not retryable) with an excerpt of at most
//!   [`EXCERPT_BYTES`]; text types → text;
//!   `image/*` → image content; `audio/*` → audio content; anything else → an embedded blob
//!   resource (base64) plus a text note with its type and size;
//! * non-2xx → a [`ToolError`] whose message is `HTTP 404 Not Found: <body excerpt>` (at most
//!   [`EXCERPT_BYTES`]) or `HTTP 404 Not Found (empty body)`, with `details: {status, body}`.
//!   The kind follows the status: 401/403 `permission_denied`; 408 `timeout`; 429
//!   `rate_limited`; both retryable with `retry_after` from `Retry-After` (RFC 9110 §10.2.3:
//!   seconds or an HTTP date); 5xx `upstream`, retryable; other 4xx (400, 404, 409, 422, ...)
//!   `upstream`, not retryable (`not_found` is reserved for unknown tool names).

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::Value;

use toolgate_model::openapi::XmlMapping;

use crate::{Content, ErrorKind, ResourceContents, ToolError, ToolOutput};

/// Most bytes of an error response's body quoted in the error (2 KiB).
pub const EXCERPT_BYTES: usize = 2048;

/// `HTTP 404 Not Found`.
pub(crate) fn status_line(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

/// The media type without parameters, lowercase.
fn essence(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn is_json(essence: &str) -> bool {
    essence == "application/json" || essence.ends_with("+json")
}

fn is_text(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/xml"
                | "application/javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-ndjson"
                | "application/jsonl"
                | "application/x-www-form-urlencoded"
        )
}

/// A body that starts (after whitespace) with `<`: an XML answer sent with a vague type
/// (`text/plain`, `text/html`, none) by an operation whose document declares XML.
fn looks_like_xml(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<')
}

/// `upstream`, not retryable: a 2xx body declared `format` that does not parse.
fn not_readable(status: StatusCode, ess: &str, format: &str, why: &str, body: &[u8]) -> ToolError {
    let text = String::from_utf8_lossy(body);
    let excerpt = toolgate_model::text::cut_bytes(text.trim(), EXCERPT_BYTES);
    let declared = if ess.is_empty() {
        "without a type"
    } else {
        ess
    };
    ToolError::new(
        ErrorKind::Upstream,
        format!(
            "{}: the response is declared `{declared}` but is not valid {format} ({why}): \
             {excerpt}",
            status_line(status)
        ),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "status": status.as_u16(),
        "content_type": ess,
        "body": excerpt,
    }))
}

/// A successful response as a tool output.
///
/// # Errors
/// `upstream`, not retryable, when the body is declared JSON but does not parse (its message
/// masked of configured secrets, as every error's).
pub(crate) fn success(
    status: StatusCode,
    content_type: Option<&str>,
    body: &[u8],
    wrapped: bool,
    xml: Option<&XmlMapping>,
    resource_uri: &str,
) -> Result<ToolOutput, ToolError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(ToolOutput::text(status_line(status)));
    }
    let ess = essence(content_type);
    if let Some(mapping) = xml
        && (super::xml::is_xml(&ess) || (looks_like_xml(body) && !is_json(&ess)))
    {
        return match super::xml::decode(mapping, body) {
            Ok(value) => {
                let wrap = wrapped || !value.is_object();
                Ok(ToolOutput::structured_wrapped(value, wrap))
            }
            Err(e) => Err(not_readable(status, &ess, "XML", &e, body)),
        };
    }
    if is_json(&ess) || ess.is_empty() {
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let wrap = wrapped || !value.is_object();
                return Ok(ToolOutput::structured_wrapped(value, wrap));
            }
            Err(e) if is_json(&ess) => {
                return Err(not_readable(status, &ess, "JSON", &e.to_string(), body));
            }
            Err(_) => {}
        }
    }
    if is_text(&ess) {
        return Ok(ToolOutput::text(String::from_utf8_lossy(body).into_owned()));
    }
    if ess.is_empty() {
        return Ok(match std::str::from_utf8(body) {
            Ok(text) => ToolOutput::text(text),
            Err(_) => blob(body, "application/octet-stream", resource_uri),
        });
    }
    let data = base64::engine::general_purpose::STANDARD.encode(body);
    if ess.starts_with("image/") {
        return Ok(ToolOutput::from_content(vec![Content::Image {
            data,
            mime_type: ess,
        }]));
    }
    if ess.starts_with("audio/") {
        return Ok(ToolOutput::from_content(vec![Content::Audio {
            data,
            mime_type: ess,
        }]));
    }
    Ok(blob(body, &ess, resource_uri))
}

fn blob(body: &[u8], mime: &str, uri: &str) -> ToolOutput {
    ToolOutput::from_content(vec![
        Content::text(format!("[{mime} content: {} bytes]", body.len())),
        Content::Resource {
            resource: ResourceContents::Blob {
                uri: uri.to_string(),
                mime_type: Some(mime.to_string()),
                blob: base64::engine::general_purpose::STANDARD.encode(body),
            },
        },
    ])
}

/// A non-2xx response as a tool error (its message masked of configured secrets, as every
/// error's).
pub(crate) fn failure(status: StatusCode, retry_after: Option<&str>, body: &[u8]) -> ToolError {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let excerpt = toolgate_model::text::cut_bytes(text, EXCERPT_BYTES);
    let message = if excerpt.is_empty() {
        format!("{} (empty body)", status_line(status))
    } else {
        format!("{}: {excerpt}", status_line(status))
    };
    let code = status.as_u16();
    let (kind, retryable) = match code {
        401 | 403 => (ErrorKind::PermissionDenied, false),
        408 => (ErrorKind::Timeout, true),
        429 => (ErrorKind::RateLimited, true),
        500..=599 => (ErrorKind::Upstream, true),
        _ => (ErrorKind::Upstream, false),
    };
    let mut err = ToolError::new(kind, message)
        .with_retryable(retryable)
        .with_details(serde_json::json!({"status": code, "body": excerpt}));
    if retryable && let Some(after) = retry_after.and_then(parse_retry_after) {
        err = err.with_retry_after(after);
    }
    err
}

/// `Retry-After`: delay-seconds or an HTTP date (RFC 9110 §10.2.3); a date in the past is 0.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}
