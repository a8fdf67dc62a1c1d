//! JSON-RPC 2.0 over HTTP, as A2A uses it: one POST per request, answered with JSON, or with
//! server-sent events whose `data` are JSON-RPC responses (streaming methods).
//!
//! Errors, by what went wrong:
//! * the connection (refused, reset, DNS, TLS) → `network`, retryable;
//! * HTTP 401 / 403 → `permission_denied` ("set `auth:`"); 429 → `rate_limited` with
//!   `retry_after`; other non-2xx without a JSON-RPC body → `upstream` (5xx retryable);
//! * a JSON-RPC error, by its code (A2A 1.0 §9 "Error Handling", 0.3 §8): task not found
//!   (-32001) and invalid params (-32602) → `invalid_arguments` (the caller's `taskId` or
//!   arguments are wrong); content type not supported (-32005) → `invalid_arguments`;
//!   unsupported version (-32009), method not found (-32601), invalid request (-32600) and parse
//!   error (-32700) → `protocol`; everything else (task not cancelable, internal, …) →
//!   `upstream`; the agent's message is kept;
//! * an answer that is no JSON-RPC response → `protocol`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::wire::{Version, excerpt};
use crate::net::oauth::ClientCredentials;
use crate::{ErrorKind, ToolError};
use toolgate_model::config::Secret;

/// JSON-RPC error codes A2A defines (A2A 1.0 §9.5; the first seven are 0.3's too).
pub mod codes {
    /// The task does not exist (or is no longer kept).
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// The task is in a state that cannot be cancelled.
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// The agent does not support push notifications.
    pub const PUSH_NOT_SUPPORTED: i64 = -32003;
    /// The operation is not supported.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// A part's media type is not accepted.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// The agent produced an invalid response.
    pub const INVALID_AGENT_RESPONSE: i64 = -32006;
    /// No authenticated extended card is configured.
    pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
    /// The `A2A-Version` asked for is not supported (1.0).
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

/// One agent's JSON-RPC client: the endpoint, the protocol version, the headers every request
/// carries (authentication, `A2A-Version`). Its errors never show a configured secret (every
/// `ToolError` is masked when it is made).
pub(crate) struct Rpc {
    pub source: String,
    pub client: reqwest::Client,
    pub url: reqwest::Url,
    pub version: Version,
    pub headers: HeaderMap,
    pub max_bytes: usize,
    /// `auth.oauth2`: the token sent as `Authorization: Bearer`, replaced once on HTTP 401.
    pub oauth: Option<ClientCredentials>,
    next_id: AtomicU64,
}

impl Rpc {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: String,
        client: reqwest::Client,
        mut url: reqwest::Url,
        version: Version,
        mut headers: HeaderMap,
        query: Vec<(String, String)>,
        max_bytes: usize,
        oauth: Option<ClientCredentials>,
    ) -> Self {
        if version == Version::V1 {
            headers.insert(
                HeaderName::from_static("a2a-version"),
                HeaderValue::from_static("1.0"),
            );
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(&query);
        }
        Self {
            source,
            client,
            url,
            version,
            headers,
            max_bytes,
            oauth,
            next_id: AtomicU64::new(1),
        }
    }

    fn request(
        &self,
        method: &str,
        params: &Value,
        accept: &'static str,
        token: Option<&Secret>,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept);
        if let Some(token) = token
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        {
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        // The call's trace goes on (W3C Trace Context), scoped by `call::call`.
        let mut request = request;
        if let Some((traceparent, tracestate)) = crate::trace_context::current()
            && let Ok(value) = HeaderValue::from_str(&traceparent)
        {
            request = request.header("traceparent", value);
            if let Some(value) = tracestate.and_then(|t| HeaderValue::from_str(&t).ok()) {
                request = request.header("tracestate", value);
            }
        }
        request.body(body.to_string())
    }

    /// Sends `method`: with `auth.oauth2`, with the current token, and once more with a fresh
    /// one when the agent answers HTTP 401.
    async fn send(
        &self,
        method: &str,
        params: &Value,
        accept: &'static str,
    ) -> Result<reqwest::Response, ToolError> {
        let post =
            |token: Option<Secret>| self.request(method, params, accept, token.as_ref()).send();
        let answer = match &self.oauth {
            None => post(None).await,
            Some(oauth) => {
                let refused = |a: &reqwest::Result<reqwest::Response>| {
                    a.as_ref()
                        .is_ok_and(|r| r.status() == reqwest::StatusCode::UNAUTHORIZED)
                };
                // A second 401 is the answer: `result` makes it `permission_denied`.
                oauth.send(|t| post(Some(t)), refused).await?.0
            }
        };
        answer.map_err(|e| self.network(method, e))
    }

    /// Sends `method` and returns its `result`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        let resp = self.send(method, &params, "application/json").await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = read_limited(resp, self.max_bytes)
            .await
            .map_err(|e| e.with_context(format!("agent `{}`: {method}", self.source)))?;
        self.result(method, status, &headers, &body)
    }

    /// Sends a streaming `method` and returns the `result` of each event as it arrives. An agent
    /// that answers with plain JSON instead gives a stream of that one result.
    pub async fn stream(
        &self,
        method: &str,
        params: Value,
    ) -> Result<impl Stream<Item = Result<Value, ToolError>> + Send + '_, ToolError> {
        let resp = self.send(method, &params, "text/event-stream").await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let is_sse = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() || !is_sse {
            let body = read_limited(resp, self.max_bytes).await?;
            let one = self.result(method, status, &headers, &body);
            return Ok(futures::stream::once(async move { one }).boxed());
        }
        let max = self.max_bytes;
        let mut seen = 0usize;
        let bytes = resp.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(std::io::Error::other)?;
            seen += chunk.len();
            if seen > max {
                return Err(std::io::Error::other(format!(
                    "the event stream passed the {max}-byte limit"
                )));
            }
            Ok(chunk)
        });
        // Whole events first (each at most the answer's limit), then parsed one by one: what
        // the stream yields does not depend on how its bytes arrived.
        let events = crate::net::sse::events(bytes, max);
        let method = method.to_string();
        Ok(events
            .filter_map(move |sse| {
                let out = match sse {
                    Err(e) => Some(Err(ToolError::new(
                        ErrorKind::Network,
                        format!(
                            "agent `{}`: the {method} event stream broke: {e}",
                            self.source
                        ),
                    ))),
                    Ok(sse) => match sse.data.as_deref().map(str::trim) {
                        None | Some("") => None,
                        Some(data) => Some(self.result(
                            method.as_str(),
                            reqwest::StatusCode::OK,
                            &HeaderMap::new(),
                            data.as_bytes(),
                        )),
                    },
                };
                std::future::ready(out)
            })
            .boxed())
    }

    /// The `result` of a JSON-RPC response body, or the error it (or the HTTP status) says.
    fn result(
        &self,
        method: &str,
        status: reqwest::StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Value, ToolError> {
        let source = &self.source;
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let rpc_error = parsed
            .as_ref()
            .and_then(|v| v.get("error"))
            // A JSON-RPC error is an object; `{"error": "..."}` is some gateway's or
            // middleware's body (a 401's), which the HTTP status below describes.
            .filter(|e| e.is_object());
        if let Some(error) = rpc_error {
            return Err(rpc_error_to_tool_error(source, method, error));
        }
        if !status.is_success() {
            let text =
                toolgate_model::text::cut_bytes(&String::from_utf8_lossy(body), 500).into_owned();
            let e = match status.as_u16() {
                401 | 403 => ToolError::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "agent `{source}` refused {method} with HTTP {status}: authentication is required or the credentials are wrong (set `auth:` on the a2a entry)"
                    ),
                ),
                429 => {
                    let mut e = ToolError::new(
                        ErrorKind::RateLimited,
                        format!("agent `{source}` rate-limited {method} (HTTP 429)"),
                    );
                    if let Some(after) = headers
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                    {
                        e = e.with_retry_after(Duration::from_secs(after));
                    }
                    e
                }
                _ => ToolError::new(
                    ErrorKind::Upstream,
                    format!("agent `{source}` answered {method} with HTTP {status}: {text}"),
                )
                .with_retryable(status.is_server_error()),
            };
            return Err(e);
        }
        match parsed {
            Some(Value::Object(mut o)) if o.contains_key("result") => {
                Ok(o.remove("result").unwrap_or(Value::Null))
            }
            Some(other) => Err(ToolError::new(
                ErrorKind::Protocol,
                format!(
                    "agent `{source}` answered {method} with no JSON-RPC result: {}",
                    excerpt(&other)
                ),
            )),
            None => Err(ToolError::new(
                ErrorKind::Protocol,
                format!(
                    "agent `{source}` answered {method} with something that is not JSON: {}",
                    toolgate_model::text::cut_bytes(&String::from_utf8_lossy(body), 200)
                ),
            )),
        }
    }

    fn network(&self, method: &str, e: reqwest::Error) -> ToolError {
        let what = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "failed"
        };

        ToolError::new(
            ErrorKind::Network,
            format!(
                "agent `{}`: {method} {what}: {}",
                self.source,
                root_cause(&e)
            ),
        )
        .with_source(e)
    }
}

/// The innermost error's text (reqwest's outer text is only "error sending request").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// Maps a JSON-RPC `error` object to a [`ToolError`] (see the module docs).
pub(crate) fn rpc_error_to_tool_error(source: &str, method: &str, error: &Value) -> ToolError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let (kind, what) = match code {
        codes::TASK_NOT_FOUND => (ErrorKind::InvalidArguments, "task not found"),
        -32602 => (ErrorKind::InvalidArguments, "invalid params"),
        codes::CONTENT_TYPE_NOT_SUPPORTED => {
            (ErrorKind::InvalidArguments, "content type not supported")
        }
        codes::VERSION_NOT_SUPPORTED => (ErrorKind::Protocol, "protocol version not supported"),
        -32601 => (ErrorKind::Protocol, "method not found"),
        -32600 => (ErrorKind::Protocol, "invalid request"),
        -32700 => (ErrorKind::Protocol, "parse error"),
        codes::TASK_NOT_CANCELABLE => (ErrorKind::Upstream, "task not cancelable"),
        codes::UNSUPPORTED_OPERATION => (ErrorKind::Upstream, "unsupported operation"),
        codes::PUSH_NOT_SUPPORTED => (ErrorKind::Upstream, "push notifications not supported"),
        codes::INVALID_AGENT_RESPONSE => (ErrorKind::Upstream, "invalid agent response"),
        codes::EXTENDED_CARD_NOT_CONFIGURED => {
            (ErrorKind::Upstream, "no authenticated extended card")
        }
        -32603 => (ErrorKind::Upstream, "internal error"),
        _ => (ErrorKind::Upstream, "error"),
    };
    let mut e = ToolError::new(
        kind,
        format!("agent `{source}` answered {method} with {what} ({code}): {message}"),
    )
    .with_details(json!({ "code": code, "message": message, "data": error.get("data") }));
    if code == -32603 {
        e = e.with_retryable(true);
    }
    e
}

/// Reads a response body, failing past `max` bytes (never buffering more than that).
pub(crate) async fn read_limited(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| {
        ToolError::new(
            ErrorKind::Network,
            format!("the response broke off: {}", root_cause(&e)),
        )
        .with_source(e)
    })? {
        if body.len() + chunk.len() > max {
            return Err(ToolError::new(
                ErrorKind::Upstream,
                format!("the response is larger than the {max}-byte limit"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
