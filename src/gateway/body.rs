//! Every request body is read whole, within the body timeout and the size limit, before any
//! handler sees it (after the Host/Origin and API-key checks: nobody unauthenticated makes the
//! gateway buffer anything).
//!
//! * over `gateway.max_body_bytes` (declared in `Content-Length`, or found while reading): 413,
//!   before more than the limit is read;
//! * not complete within `gateway.body_timeout_ms` of the head: 408, and the connection is
//!   closed (the rest of the body is never read), so a client trickling a body cannot hold a
//!   connection or a task longer than that;
//! * the connection failing mid-body: 400.
//!
//! Handlers then read the buffered body (axum's `Bytes`, rmcp's JSON reader) at no cost. No
//! route streams a request body, so nothing is lost by reading it first.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use toolgate_runtime::{ErrorKind, ToolError};

use super::rest::error::ErrorResponse;

/// `request` with its body read whole (see the [module docs](self)), or the answer that
/// refuses it: 413 (too large), 408 (too slow; `Connection: close`) or 400 (the connection
/// failed), each with the ToolError JSON the REST API answers errors with.
pub(super) async fn read_whole(
    request: Request,
    max_bytes: usize,
    timeout: Duration,
) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    if http_body::Body::is_end_stream(&body) {
        return Ok(Request::from_parts(parts, body));
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_bytes as u64) {
        return Err(too_large(max_bytes));
    }
    match tokio::time::timeout(timeout, Limited::new(body, max_bytes).collect()).await {
        Ok(Ok(collected)) => Ok(Request::from_parts(parts, Body::from(collected.to_bytes()))),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(max_bytes)),
        Ok(Err(e)) => Err(refused(
            StatusCode::BAD_REQUEST,
            ToolError::new(
                ErrorKind::InvalidArguments,
                format!("the request body could not be read: {e}"),
            ),
        )),
        Err(_) => {
            let mut response = refused(
                StatusCode::REQUEST_TIMEOUT,
                ToolError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the request body did not arrive within {} ms (gateway.body_timeout_ms in tools.yaml)",
                        timeout.as_millis()
                    ),
                ),
            );
            // The rest of the body is not read: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(response)
        }
    }
}

fn too_large(max_bytes: usize) -> Response {
    refused(
        StatusCode::PAYLOAD_TOO_LARGE,
        ToolError::new(
            ErrorKind::InvalidArguments,
            format!(
                "the request body is larger than the gateway's limit of {max_bytes} bytes (gateway.max_body_bytes in tools.yaml)"
            ),
        ),
    )
}

fn refused(status: StatusCode, e: ToolError) -> Response {
    let mut response = ErrorResponse(e).into_response();
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: Body, length: Option<usize>) -> Request {
        let mut request = Request::post("/x");
        if let Some(n) = length {
            request = request.header(header::CONTENT_LENGTH, n);
        }
        request.body(body).unwrap()
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn bodies_are_read_whole_within_the_limit() {
        let request = read_whole(
            post(Body::from("{\"a\":1}"), Some(7)),
            7,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let bytes = axum::body::to_bytes(request.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"{\"a\":1}");

        // Declared too large: refused before reading; found too large while reading: the same.
        for (body, length) in [
            (Body::from("x".repeat(8)), Some(8)),
            (Body::from("x".repeat(8)), None),
        ] {
            let e = read_whole(post(body, length), 7, Duration::from_secs(5))
                .await
                .unwrap_err();
            assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
            assert!(text(e).await.contains("limit of 7 bytes"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_ends_is_answered_408() {
        let (mut sender, body) = {
            let (tx, rx) =
                futures::channel::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
            (tx, Body::from_stream(rx))
        };
        use futures::SinkExt as _;
        sender.send(Ok("{\"a\":".into())).await.unwrap();
        let e = read_whole(post(body, None), 1024, Duration::from_secs(30))
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(e.headers()[header::CONNECTION], "close");
        let body = text(e).await;
        assert!(
            body.contains("\"kind\":\"timeout\"") && body.contains("body_timeout_ms"),
            "{body}"
        );
        drop(sender);
    }
}
