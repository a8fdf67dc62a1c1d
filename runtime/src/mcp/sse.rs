//! Client side of the legacy HTTP+SSE transport (MCP 2024-11-05), on rmcp's [`Transport`].
//!
//! The server streams its JSON-RPC messages as `message` events of one long GET
//! (`text/event-stream`); the stream's first `endpoint` event names the URL to which the
//! client POSTs its own messages. A background task reads the stream into a channel, so
//! [`Transport::receive`] is cancel-safe; closing or dropping the transport stops that task.

use std::{future::Future, time::Duration};

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{StatusCode, Url};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleClient, transport::Transport};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, timeout_at};

use crate::net::oauth::ClientCredentials;
pub(super) use crate::net::sse::Framer;
use toolgate_model::config::Secret;

/// Characters of a body or of event data kept in errors and log lines.
const EXCERPT_CHARS: usize = 200;
/// Messages buffered between the reader task and `receive()`.
const CHANNEL_CAPACITY: usize = 64;

/// Settings of a legacy HTTP+SSE connection. No `Debug`: the headers may hold a token.
#[derive(Clone)]
pub(crate) struct SseConfig {
    /// The SSE URL, opened with GET.
    pub url: String,
    /// Headers sent with the GET and with every POST; never logged.
    pub headers: HeaderMap,
    /// Bound on getting the GET's answer and its first `endpoint` event.
    pub connect_timeout: Duration,
    /// When that bound ends, if the caller fixed it already (the handshake's deadline, so
    /// that this step's own error, not the handshake's, is the one reported); otherwise
    /// `connect_timeout` from the start of the connect.
    pub connect_until: Option<Instant>,
    /// Bound on one POST, its answer included.
    pub post_timeout: Duration,
    /// Largest event accepted, counted over its non-comment lines with their newlines (so it
    /// bounds the event's data); a larger one is logged and skipped, never buffered past this.
    pub max_frame_bytes: usize,
    /// The source id, for log lines and errors.
    pub server: String,
    /// OAuth2 client credentials: the token goes on the GET and on every POST (`Authorization:
    /// Bearer`); a POST answered with HTTP 401 is sent once more with a fresh token.
    pub oauth: Option<ClientCredentials>,
}

/// What went wrong on a legacy HTTP+SSE connection; never carries header values.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The request could not be made or answered: refused connection, DNS, TLS, a bad URL, an
    /// answer that is no event stream, an unserializable message.
    #[error("{0}: {1}")]
    Failed(SseTarget, String),
    /// The server answered with this non-2xx status and body (an excerpt).
    #[error("{0}: HTTP {1}: {2}")]
    Status(SseTarget, StatusCode, String),
    /// Time ran out: "no answer" or "no `endpoint` event" within so many milliseconds.
    #[error("{0}: {1} within {2} ms")]
    Timeout(SseTarget, &'static str, u128),
    /// The stream ended before its first `endpoint` event, or that event was unusable.
    #[error("{0}: no usable `endpoint` event: {1}")]
    Endpoint(SseTarget, String),
    /// A message was sent after `close()`.
    #[error("{0}: the transport is closed")]
    Closed(SseTarget),
    /// The OAuth2 token could not be had (the token endpoint's error, naming the server).
    #[error("{0}")]
    Token(#[source] crate::ToolError),
}

/// The server and request an [`SseError`] is about, shown as "MCP server `id`: GET url".
#[derive(Debug, Clone)]
pub(crate) struct SseTarget {
    /// The source id.
    pub server: String,
    /// `GET` (the event stream) or `POST` (a message).
    pub method: &'static str,
    /// The request's URL.
    pub url: String,
}

impl std::fmt::Display for SseTarget {
    /// "MCP server `id`: GET url".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MCP server `{}`: {} {}",
            self.server, self.method, self.url
        )
    }
}

impl SseTarget {
    /// [`SseError::Timeout`] after `limit`.
    fn timeout(&self, what: &'static str, limit: Duration) -> SseError {
        SseError::Timeout(self.clone(), what, limit.as_millis())
    }

    /// [`SseError::Failed`] for `reason`.
    fn failed(&self, reason: impl Into<String>) -> SseError {
        SseError::Failed(self.clone(), reason.into())
    }

    /// Passes a 2xx answer through; turns another into [`SseError::Status`] with a body excerpt.
    async fn success(
        &self,
        answer: reqwest::Result<reqwest::Response>,
    ) -> Result<reqwest::Response, SseError> {
        let mut answer = answer.map_err(|e| self.failed(causes(e)))?;
        let status = answer.status();
        if status.is_success() {
            return Ok(answer);
        }
        let mut body = Vec::new();
        while body.len() < 4 * EXCERPT_CHARS
            && let Ok(Some(chunk)) = answer.chunk().await
        {
            body.extend_from_slice(&chunk);
        }
        let body = excerpt(&String::from_utf8_lossy(&body));
        Err(SseError::Status(self.clone(), status, body))
    }
}

/// A reqwest failure with its causes, without its URL (the error messages have it already).
fn causes(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        reason = format!("{reason}: {cause}");
        source = cause.source();
    }
    reason
}

/// The first [`EXCERPT_CHARS`] characters of `text` on one line, with `…` if cut.
fn excerpt(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    toolgate_model::text::cut(&line, EXCERPT_CHARS).into_owned()
}

/// Latest `endpoint` outcome: its resolved URL, or why there is none.
type Endpoint = Option<Result<Url, String>>;

/// Aborts the reader task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    /// Stops the task.
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A connected legacy HTTP+SSE client transport.
pub(crate) struct SseClientTransport {
    /// Client used for the POSTs.
    client: reqwest::Client,
    /// The settings (POST headers and timeout, server id).
    config: SseConfig,
    /// Where POSTs go: the latest usable `endpoint`.
    message_url: Url,
    /// `endpoint` updates from the reader task.
    endpoint: watch::Receiver<Endpoint>,
    /// Messages from the reader task; `None` once closed.
    inbox: Option<mpsc::Receiver<RxJsonRpcMessage<RoleClient>>>,
    /// The reader task.
    reader: AbortOnDrop,
}

impl std::fmt::Debug for SseClientTransport {
    /// The message URL, never the headers.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SseClientTransport({})", self.message_url)
    }
}

impl SseClientTransport {
    /// Opens GET url (Accept: text/event-stream, the configured headers), waits
    /// (≤ connect_timeout) for the first `endpoint` event, resolves its data (a relative or
    /// absolute URL, e.g. `/message?sessionId=…`) against the SSE URL, and returns the
    /// transport. An endpoint of another origin is refused: the headers would go there.
    pub(crate) async fn connect(
        client: reqwest::Client,
        config: SseConfig,
    ) -> Result<Self, SseError> {
        let (target, limit) = (target(&config, "GET", &config.url), config.connect_timeout);
        let sse_url = Url::parse(&config.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let sse_url = sse_url.ok_or_else(|| target.failed("not an absolute http(s) URL"))?;
        let deadline = config
            .connect_until
            .unwrap_or_else(|| Instant::now() + limit);
        let request = client.get(sse_url.clone()).headers(config.headers.clone());
        let request = request.header(ACCEPT, "text/event-stream");
        let answer = async {
            let request = match &config.oauth {
                Some(oauth) => {
                    let token = oauth.token().await.map_err(SseError::Token)?;
                    request.bearer_auth(token.expose())
                }
                None => request,
            };
            target.success(request.send().await).await
        };
        let answer = timeout_at(deadline, answer).await;
        let answer = answer.map_err(|_| target.timeout("no answer", limit))??;
        let kind = answer.headers().get(CONTENT_TYPE).map(|v| v.as_bytes());
        if let Some(kind) = kind.filter(|t| !t.starts_with(b"text/event-stream")) {
            let kind = excerpt(&String::from_utf8_lossy(kind));
            return Err(target.failed(format!("answered `{kind}`, not an event stream")));
        }
        let (tx, inbox) = mpsc::channel(CHANNEL_CAPACITY);
        let (endpoint_tx, mut endpoint) = watch::channel(None);
        let server = config.server.clone();
        let max = config.max_frame_bytes;
        let framer = Framer::default();
        let reader = Reader {
            server,
            sse_url,
            max,
            tx,
            endpoint: endpoint_tx,
            framer,
        };
        let reader = AbortOnDrop(tokio::spawn(reader.run(answer)));
        let first = timeout_at(deadline, endpoint.wait_for(Option::is_some)).await;
        drop(first.map_err(|_| target.timeout("no `endpoint` event", limit))?);
        let first = endpoint.borrow_and_update().clone();
        match first.unwrap_or_else(|| Err("the stream ended".into())) {
            Ok(message_url) => {
                let inbox = Some(inbox);
                Ok(Self {
                    client,
                    config,
                    message_url,
                    endpoint,
                    inbox,
                    reader,
                })
            }
            Err(reason) => Err(SseError::Endpoint(target, reason)),
        }
    }

    /// The resolved message URL.
    pub(crate) fn message_url(&self) -> &Url {
        &self.message_url
    }

    /// Takes in the latest usable `endpoint`, if one came since the last look.
    fn refresh_message_url(&mut self) {
        if self.endpoint.has_changed().unwrap_or(false)
            && let Some(Ok(url)) = &*self.endpoint.borrow_and_update()
        {
            self.message_url = url.clone();
        }
    }
}

/// An [`SseTarget`] for a request of `config`'s server.
fn target(config: &SseConfig, method: &'static str, url: &str) -> SseTarget {
    let (server, url) = (config.server.clone(), url.to_string());
    SseTarget {
        server,
        method,
        url,
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    /// POSTs the message as JSON to the message URL; a 2xx answer (usually 202) is success.
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        self.refresh_message_url();
        let target = target(&self.config, "POST", self.message_url.as_str());
        let limit = self.config.post_timeout;
        let (client, url) = (self.client.clone(), self.message_url.clone());
        let (headers, oauth) = (self.config.headers.clone(), self.config.oauth.clone());
        let (closed, body) = (self.inbox.is_none(), serde_json::to_vec(&item));
        async move {
            if closed {
                return Err(SseError::Closed(target));
            }
            let body = body.map_err(|e| target.failed(format!("cannot serialize: {e}")))?;
            let post = |token: Option<Secret>| {
                let request = client.post(url.clone()).headers(headers.clone());
                let request = match token {
                    Some(token) => request.bearer_auth(token.expose()),
                    None => request,
                };
                request
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone())
                    .send()
            };
            let exchange = async {
                let Some(oauth) = &oauth else {
                    return target.success(post(None).await).await;
                };
                let unauthorized = |a: &reqwest::Result<reqwest::Response>| {
                    a.as_ref()
                        .is_ok_and(|a| a.status() == StatusCode::UNAUTHORIZED)
                };
                let (answer, again) = oauth
                    .send(|t| post(Some(t)), unauthorized)
                    .await
                    .map_err(SseError::Token)?;
                if again {
                    return Err(SseError::Token(oauth.refused_again()));
                }
                target.success(answer).await
            };
            let answer = timeout_at(Instant::now() + limit, exchange).await;
            answer.map_err(|_| target.timeout("no answer", limit))??;
            Ok(())
        }
    }

    /// The next server message; `None` once the stream ended or the transport was closed.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.refresh_message_url();
        self.inbox.as_mut()?.recv().await
    }

    /// Stops the reader; later `receive()` calls return `None` and later sends fail.
    fn close(&mut self) -> impl Future<Output = Result<(), SseError>> + Send {
        self.reader.0.abort();
        self.inbox = None;
        std::future::ready(Ok(()))
    }
}

/// The background task reading the event stream: it cuts the stream into whole events of at
/// most `max` bytes, skipping a larger event as it streams by, and has [`SseStream`] parse them.
struct Reader {
    /// Source id.
    server: String,
    /// The SSE URL, against which `endpoint` data is resolved.
    sse_url: Url,
    /// Largest event kept.
    max: usize,
    /// Where messages go.
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    /// Where `endpoint` outcomes go.
    endpoint: watch::Sender<Endpoint>,
    /// Where the stream is in an event.
    framer: Framer,
}

/// What one parsed event of the stream is.
pub(super) enum Item {
    /// `endpoint`: the URL (relative or absolute) to POST messages to.
    Endpoint(String),
    /// `message` (or no event name): a JSON-RPC message.
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// A `message` whose data is no JSON-RPC message: the data and why.
    NotJsonRpc(String, serde_json::Error),
    /// Another event name, ignored.
    Other(String),
}

impl Item {
    pub(super) fn of(sse: sse_stream::Sse) -> Self {
        let data = sse.data.unwrap_or_default();
        match sse.event.as_deref() {
            Some("endpoint") => Self::Endpoint(data.trim().to_string()),
            None | Some("message") => match serde_json::from_str(&data) {
                Ok(message) => Self::Message(Box::new(message)),
                Err(e) => Self::NotJsonRpc(data, e),
            },
            Some(other) => Self::Other(other.to_string()),
        }
    }
}

impl Reader {
    /// Reads events until the stream ends or fails or the transport goes.
    async fn run(mut self, mut answer: reqwest::Response) {
        let reason = loop {
            let chunk = match answer.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break "the server closed it".to_string(),
                Err(e) => break causes(e),
            };
            for event in self.frame(&chunk) {
                if !self.dispatch(event).await {
                    return;
                }
            }
        };
        let (server, url) = (&self.server, self.sse_url.as_str());
        tracing::warn!(%server, %url, "MCP SSE stream ended: {reason}");
        let reason = format!("the stream ended: {reason}");
        self.endpoint
            .send_if_modified(|e| e.is_none() && e.replace(Err(reason)).is_none());
    }

    /// Feeds a chunk; returns the events it completed, each ending in a blank line.
    fn frame(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        let (events, skipped) = self.framer.feed(chunk, self.max);
        if skipped > 0 {
            let (server, max) = (&self.server, self.max);
            tracing::warn!(%server, max, skipped, "MCP SSE event over max_frame_bytes skipped");
        }
        events
    }

    /// Handles one whole event; false once nobody receives messages.
    async fn dispatch(&mut self, event: Bytes) -> bool {
        let server = self.server.clone();
        if let Some(sse) = crate::net::sse::parse_event(event) {
            let sse = match sse {
                Ok(sse) => sse,
                Err(e) => {
                    tracing::warn!(%server, "malformed MCP SSE event skipped: {e}");
                    return true;
                }
            };
            match Item::of(sse) {
                Item::Endpoint(url) => self.on_endpoint(&url),
                Item::Message(message) => {
                    if self.tx.send(*message).await.is_err() {
                        return false;
                    }
                }
                Item::NotJsonRpc(data, e) => {
                    let data = excerpt(&data);
                    tracing::warn!(%server, %data, "MCP SSE message is no JSON-RPC, skipped: {e}");
                }
                Item::Other(event) => {
                    tracing::debug!(%server, %event, "MCP SSE event ignored");
                }
            }
        }
        true
    }

    /// Resolves an `endpoint` event and publishes it; a bad one after a good one is ignored.
    fn on_endpoint(&self, data: &str) {
        let server = &self.server;
        let reason = match self.sse_url.join(data) {
            Ok(url) if url.origin() == self.sse_url.origin() => {
                tracing::debug!(%server, %url, "MCP SSE message endpoint");
                self.endpoint.send_replace(Some(Ok(url)));
                return;
            }
            Ok(url) => format!("another origin ({})", url.origin().ascii_serialization()),
            Err(e) => e.to_string(),
        };
        let reason = format!("`{}`: {reason}", excerpt(data));
        if matches!(*self.endpoint.borrow(), Some(Ok(_))) {
            tracing::warn!(%server, "MCP SSE `endpoint` event ignored: {reason}");
        } else {
            self.endpoint.send_replace(Some(Err(reason)));
        }
    }
}

/// Fake-server unit tests (the reference server over SSE is in runtime/tests/mcp_everything.rs).
#[cfg(test)]
mod tests;
