//! The last line of defence for what the gateway sends: every HTTP response body and every
//! stdio frame, with each configured secret masked in every form it may take
//! (`toolgate_model::secrets`: as is, JSON- and Debug-escaped, percent-encoded).
//!
//! Results and errors are masked where they are made (`toolgate_runtime::redact`): this
//! catches whatever else a remote end may put in an answer (a tool's description, a resource,
//! a relayed notification). While no secret is configured, responses pass untouched. A body of
//! known size (a JSON answer) is masked whole; a streamed one (SSE) chunk by chunk (one event
//! each); bytes that are not UTF-8 are left as they are.

use std::borrow::Cow;

use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;

/// The largest body masked whole; a larger one (none the gateway makes) is masked chunk by
/// chunk.
const WHOLE_MAX: u64 = 64 * 1024 * 1024;

/// Axum middleware: the response's body with every configured secret masked.
pub(super) async fn responses(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if !toolgate_model::secrets::any() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let body = match body.size_hint().exact() {
        Some(n) if n <= WHOLE_MAX => match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => {
                let masked = bytes_masked(bytes);
                parts.headers.remove(header::CONTENT_LENGTH);
                Body::from(masked)
            }
            Err(e) => {
                tracing::warn!(error = %e, "a response body could not be read; sent empty");
                Body::empty()
            }
        },
        _ => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from_stream(body.into_data_stream().map(|chunk| chunk.map(bytes_masked)))
        }
    };
    Response::from_parts(parts, body)
}

/// `bytes` with every configured secret masked in its UTF-8 text (up to the first byte that is
/// not UTF-8; the rest is left as it is).
pub(super) fn bytes_masked(bytes: Bytes) -> Bytes {
    let valid = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    };
    match toolgate_model::secrets::redact(valid) {
        Cow::Borrowed(_) => bytes,
        Cow::Owned(clean) => {
            let mut out = clean.into_bytes();
            out.extend_from_slice(&bytes[valid.len()..]);
            Bytes::from(out)
        }
    }
}

/// One stdio frame (a JSON-RPC message) with every configured secret masked.
pub(super) fn line_masked(line: String) -> String {
    match toolgate_model::secrets::redact(&line) {
        Cow::Borrowed(_) => line,
        Cow::Owned(clean) => clean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_and_lines_are_masked_even_around_bytes_that_are_not_utf8() {
        toolgate_model::secrets::remember("gw-body-secret-2f8e");
        let body = Bytes::from_static(b"{\"x\":\"gw-body-secret-2f8e\"}\xff tail");
        assert_eq!(&bytes_masked(body)[..], b"{\"x\":\"[redacted]\"}\xff tail");
        let clean = Bytes::from_static(b"nothing");
        assert_eq!(&bytes_masked(clean)[..], b"nothing");
        assert_eq!(
            line_masked("{\"id\":1,\"k\":\"gw-body-secret-2f8e\"}".into()),
            "{\"id\":1,\"k\":\"[redacted]\"}"
        );
    }
}
