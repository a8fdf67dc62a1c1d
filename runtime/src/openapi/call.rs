//! Sending one request: the host guard before anything leaves, the per-call timeout, the
//! caller's cancellation (dropping the request), the response size limit (streamed, stopped at
//! the limit), and network errors that name the host only (never the path or query, which may
//! hold a key).

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use super::auth::Applied;
use super::request::{Body, Part, Parts};
use crate::{ToolContext, ToolError};

pub(crate) use crate::net::network_error;

/// A `reqwest::Request` from the parts, the credentials and the base URL.
///
/// # Errors
/// `invalid_arguments` for a header name or value that is not valid HTTP; `internal` for a URL
/// that does not parse.
pub(crate) fn to_request(
    tool: &str,
    client: &reqwest::Client,
    method: &str,
    base: &reqwest::Url,
    parts: &Parts,
    auth: &Applied,
    accept: &[String],
) -> Result<reqwest::Request, ToolError> {
    let mut query = parts.query.clone();
    query.extend(auth.query.iter().cloned());
    let url = super::request::full_url(base, &parts.path, &query).map_err(ToolError::internal)?;
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| ToolError::internal(format!("`{method}` is not an HTTP method")))?;
    let mut builder = client.request(method, url);
    let bad_header = |name: &str| {
        ToolError::invalid_arguments(
            tool,
            vec![crate::ArgumentError {
                pointer: String::new(),
                message: format!("header `{name}` cannot be sent: not a valid HTTP header"),
            }],
        )
    };
    for (name, value) in parts.headers.iter().chain(&auth.headers) {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(name))?;
        let v = HeaderValue::from_str(value).map_err(|_| bad_header(name))?;
        builder = builder.header(n, v);
    }
    let bad_part = |name: &str, ct: &str| {
        ToolError::internal(format!(
            "multipart part `{name}`: `{ct}` is not a valid media type (encoding contentType)"
        ))
    };
    let cookies: Vec<&String> = parts.cookies.iter().chain(&auth.cookies).collect();
    if !cookies.is_empty() {
        let joined = cookies
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let v = HeaderValue::from_str(&joined).map_err(|_| bad_header("Cookie"))?;
        builder = builder.header(reqwest::header::COOKIE, v);
    }
    if !accept.is_empty() {
        builder = builder.header(reqwest::header::ACCEPT, accept.join(", "));
    }
    if let Some((media, body)) = &parts.body {
        builder = match body {
            Body::Json(v) => builder
                .header(reqwest::header::CONTENT_TYPE, media.as_str())
                .body(serde_json::to_vec(v).unwrap_or_default()),
            Body::Form(text) => builder
                .header(reqwest::header::CONTENT_TYPE, media.as_str())
                .body(text.clone()),
            Body::Text(text) => builder
                .header(reqwest::header::CONTENT_TYPE, media.as_str())
                .body(text.clone()),
            Body::Binary(bytes) => builder
                .header(reqwest::header::CONTENT_TYPE, media.as_str())
                .body(bytes.clone()),
            Body::Multipart(list) => {
                let mut form = reqwest::multipart::Form::new();
                for part in list {
                    form = match part {
                        Part::Text {
                            name,
                            value,
                            content_type: None,
                        } => form.text(name.clone(), value.clone()),
                        Part::Text {
                            name,
                            value,
                            content_type: Some(ct),
                        } => form.part(
                            name.clone(),
                            reqwest::multipart::Part::text(value.clone())
                                .mime_str(ct)
                                .map_err(|_| bad_part(name, ct))?,
                        ),
                        Part::File {
                            name,
                            bytes,
                            content_type,
                        } => form.part(
                            name.clone(),
                            reqwest::multipart::Part::bytes(bytes.clone())
                                .file_name(name.clone())
                                .mime_str(content_type)
                                .map_err(|_| bad_part(name, content_type))?,
                        ),
                    };
                }
                builder.multipart(form)
            }
        };
    }
    builder.build().map_err(|e| {
        ToolError::internal(format!(
            "cannot build the request: {}",
            crate::net::reqwest_chain(&e)
        ))
    })
}

/// What came back: status, the headers needed, the body (at most `limit` bytes).
pub(crate) struct Received {
    pub status: reqwest::StatusCode,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
    pub body: Vec<u8>,
}

/// Sends `request` and reads the body, stopping at `limit` bytes; bounded by `timeout` and the
/// caller's cancellation (either drops the request).
///
/// # Errors
/// `network` / `timeout` / `permission_denied` (a refused redirect) naming the host;
/// `cancelled`; `upstream` when the body exceeds `limit`.
pub(crate) async fn send(
    tool: &str,
    client: &reqwest::Client,
    mut request: reqwest::Request,
    limit: u64,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Result<Received, ToolError> {
    // The caller's trace goes on (W3C Trace Context); a value that is not a valid header is
    // not sent (the gateway only accepts valid ones).
    if let Some(traceparent) = ctx.traceparent()
        && let Ok(value) = HeaderValue::from_str(traceparent)
    {
        request.headers_mut().insert("traceparent", value);
        if let Some(value) = ctx.tracestate().and_then(|t| HeaderValue::from_str(t).ok()) {
            request.headers_mut().insert("tracestate", value);
        }
    }
    let host = request.url().host_str().unwrap_or_default().to_string();
    let work = async {
        let mut response = client
            .execute(request)
            .await
            .map_err(|e| network_error(&e, &host))?;
        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let retry_after = header(reqwest::header::RETRY_AFTER);
        let too_big = || {
            ToolError::upstream(format!(
                "the response from `{host}` is larger than the limit of {limit} bytes \
                 (max_response_bytes)"
            ))
            .with_details(serde_json::json!({"status": status.as_u16(), "limit": limit}))
        };
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(too_big());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| network_error(&e, &host))?
        {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Received {
            status,
            content_type,
            retry_after,
            body,
        })
    };
    let timed = async {
        match timeout {
            Some(t) => tokio::time::timeout(t, work)
                .await
                .unwrap_or_else(|_| Err(ToolError::timeout(tool, t))),
            None => work.await,
        }
    };
    tokio::select! {
        r = timed => r,
        () = ctx.cancellation().cancelled() => Err(ToolError::cancelled(tool)),
    }
}

/// A request described for a log line, with credentials masked: `GET http://h/search?q=x&api_key=***`
/// and `X-API-Key: ***`.
pub(crate) fn describe(request: &reqwest::Request, masked: &[String]) -> String {
    let url = request.url();
    let mut line = format!(
        "{} {}://{}",
        request.method(),
        url.scheme(),
        url.host_str().unwrap_or_default()
    );
    if let Some(port) = url.port() {
        line.push_str(&format!(":{port}"));
    }
    line.push_str(url.path());
    if let Some(q) = url.query() {
        let shown: Vec<String> = q
            .split('&')
            .map(|piece| match piece.split_once('=') {
                Some((k, _)) if masked.iter().any(|m| m == k) => format!("{k}=***"),
                _ => piece.to_string(),
            })
            .collect();
        line.push('?');
        line.push_str(&shown.join("&"));
    }
    for (name, value) in request.headers() {
        let shown = if masked.iter().any(|m| m.eq_ignore_ascii_case(name.as_str()))
            || name == reqwest::header::COOKIE
        {
            "***".to_string()
        } else {
            value.to_str().unwrap_or("<binary>").to_string()
        };
        line.push_str(&format!("; {name}: {shown}"));
    }
    line
}
