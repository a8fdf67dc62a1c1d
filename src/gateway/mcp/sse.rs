//! The legacy HTTP+SSE transport (MCP 2024-11-05, "Transports": HTTP with SSE) for old
//! clients; rmcp has no server side for it.
//!
//! As the TypeScript SDK's `SSEServerTransport` (which server-everything's `sse` mode runs) does
//! it:
//! * `GET /sse` answers `200 text/event-stream`; the first event is `event: endpoint` with
//!   `data: /message?sessionId=<uuid>` (a path on this server; under a prefix when the router is
//!   nested), then every message of the session is an `event: message` whose data is one
//!   JSON-RPC message;
//! * `POST /message?sessionId=<uuid>` with one JSON-RPC message as its JSON body answers
//!   `202 Accepted`; the answer arrives on the stream.
//!
//! Where the SDK leaves it open, ours answers (with a JSON-RPC error object as the body): 400 for
//! a missing `sessionId` and for a body that is not one JSON-RPC message (-32700 / -32600 /
//! -32602, as on stdio), 404 (-32001 "Session not found") for a session that ended or never
//! existed, 403 when the POST's API key is not the stream's, 415 for a body that is declared as
//! something else than JSON, 503 (with `Retry-After`) when the session is too busy.
//!
//! Each stream is one MCP session ([`McpHandler`]) for the caller the security layer found on the
//! `GET` (its API key); it ends (and is forgotten) when the client drops the stream, when the
//! client stops reading it for [`STALL_BOUND`], or when the gateway shuts down — then requests
//! in flight get the grace period to answer before the stream ends. Comments keep the stream
//! alive every [`KEEP_ALIVE`]. At most [`MAX_SESSIONS`] streams are open at once (503 beyond),
//! at most [`SESSION_QUEUE`] messages wait for one client, and at most
//! [`MAX_PENDING_REQUESTS`] of its requests are in flight.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::{Stream, StreamExt};
use rmcp::model::JsonRpcMessage;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::McpHandler;
use super::stdio::channel::{self, ChannelSession, Inbox};
use super::stdio::frame::{self, INVALID_REQUEST, Parsed};
use crate::gateway::{Caller, Gateway};

/// The most SSE streams open at once; a `GET /sse` beyond is answered 503.
pub const MAX_SESSIONS: usize = 1000;
/// The most messages (answers, notifications) waiting for one client to read its stream.
pub const SESSION_QUEUE: usize = 64;
/// How long a message may wait for room in a full [`SESSION_QUEUE`] before the session is
/// closed: the client does not read its stream.
pub const STALL_BOUND: Duration = Duration::from_secs(30);
/// How often a comment is sent on an idle stream, so that proxies and clients keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The most requests of one session in flight (queued or running); a POST of another request
/// is answered 503 until some are answered.
pub const MAX_PENDING_REQUESTS: usize = 256;

/// Messages taken from POSTs and not yet read by the session.
const INBOX_CAPACITY: usize = 32;
/// How long a POST waits for room in a full inbox before it is answered 503.
const POST_WAIT: Duration = Duration::from_secs(5);
/// How long a session may take to end once it was closed (rmcp's own drain included).
const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// JSON-RPC error code of a transport-level refusal (the TypeScript SDK's choice).
const SERVER_ERROR: i64 = -32000;
/// JSON-RPC error code of "Session not found" (the TypeScript SDK's choice).
const SESSION_NOT_FOUND: i64 = -32001;

/// The open sessions, by id.
#[derive(Clone)]
struct Sessions {
    gateway: Gateway,
    /// The virtual server the sessions are on (`None`: the default server).
    server: Option<Arc<crate::gateway::servers::VirtualServer>>,
    open: Arc<Mutex<HashMap<String, Entry>>>,
}

/// What a POST needs of a session.
#[derive(Clone)]
struct Entry {
    inbox: Inbox,
    /// Who opened the stream: only they may post to it.
    caller: Caller,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The `/sse` and `/message` routes.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    router_for(gateway, None)
}

/// The `/sse` and `/message` routes of virtual server `server` (to be nested under its prefix;
/// `None`: the default server).
pub(crate) fn router_for(
    gateway: &Gateway,
    server: Option<Arc<crate::gateway::servers::VirtualServer>>,
) -> axum::Router {
    let sessions = Sessions {
        gateway: gateway.clone(),
        server,
        open: Arc::default(),
    };
    axum::Router::new()
        .route("/sse", get(open_stream))
        .route("/message", post(post_message))
        .with_state(sessions)
}

/// `GET /sse`: a new session and its event stream.
async fn open_stream(
    State(sessions): State<Sessions>,
    caller: Option<Extension<Caller>>,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    let id = rmcp::transport::common::server_side_http::session_id().to_string();
    let label = format!("SSE session {id}");
    let (outgoing, messages) = mpsc::channel(SESSION_QUEUE);
    let (session, inbox) =
        ChannelSession::new(label.as_str(), INBOX_CAPACITY, outgoing, Some(STALL_BOUND));
    {
        let mut open = sessions.lock();
        if open.len() >= MAX_SESSIONS {
            tracing::warn!(
                max = MAX_SESSIONS,
                "SSE: too many sessions; a new stream was refused"
            );
            let mut response = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_ERROR,
                &format!("Service Unavailable: {MAX_SESSIONS} SSE sessions are open; retry later"),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return response;
        }
        open.insert(
            id.clone(),
            Entry {
                inbox,
                caller: caller.clone(),
            },
        );
    }
    tracing::debug!(session = %label, "SSE: stream opened");
    let gone = CancellationToken::new();
    let ended = CancellationToken::new();
    tokio::spawn(run_session(
        sessions,
        id.clone(),
        session,
        caller,
        gone.clone(),
        ended.clone(),
    ));
    let endpoint = format!(
        "{}/message?sessionId={id}",
        uri.path().strip_suffix("/sse").unwrap_or("")
    );
    let stream = event_stream(endpoint, messages, ended, gone.drop_guard());
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // nginx would otherwise buffer the stream.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Runs one session until the client goes (`gone`), the session ends by itself (the client
/// stopped reading) or the gateway shuts down (after the grace period for requests in flight);
/// then forgets it and ends its stream (`ended`).
async fn run_session(
    sessions: Sessions,
    id: String,
    session: ChannelSession,
    caller: Caller,
    gone: CancellationToken,
    ended: CancellationToken,
) {
    let (pending, closing) = (session.pending(), session.closing());
    let gateway = sessions.gateway.clone();
    let server = sessions.server.clone();
    let mut run = tokio::spawn({
        let gateway = gateway.clone();
        session.run(move |r| {
            McpHandler::with_reasons(gateway.clone(), caller.clone(), r).on_server(server.clone())
        })
    });
    let shutdown = gateway.shutdown_token();
    let label = format!("SSE session {id}");
    let ended_by_itself = tokio::select! {
        _ = &mut run => true,
        () = gone.cancelled() => {
            tracing::debug!(session = %label, "SSE: the client closed the stream");
            false
        }
        () = shutdown.cancelled() => {
            // Requests in flight get the grace period, unless the client goes meanwhile.
            tokio::select! {
                _ = channel::wind_down(&gateway, &pending, &label) => {}
                () = gone.cancelled() => {}
            }
            false
        }
    };
    closing.cancel();
    sessions.lock().remove(&id);
    if !ended_by_itself && tokio::time::timeout(CLOSE_BOUND, &mut run).await.is_err() {
        tracing::warn!(session = %label, "SSE: the session did not end within {CLOSE_BOUND:?}");
        run.abort();
    }
    ended.cancel();
}

/// The `endpoint` event, then each message as a `message` event, until the session ended (what
/// it queued before is still sent). Dropping the stream (the client went) drops `_gone`.
fn event_stream(
    endpoint: String,
    messages: mpsc::Receiver<String>,
    ended: CancellationToken,
    gone: DropGuard,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let first = Event::default().event("endpoint").data(endpoint);
    let rest = futures::stream::unfold(
        (messages, ended, gone),
        |(mut messages, ended, gone)| async move {
            let message = tokio::select! {
                biased;
                message = messages.recv() => message,
                () = ended.cancelled() => messages.try_recv().ok(),
            }?;
            let event = Event::default().event("message").data(message);
            Some((Ok(event), (messages, ended, gone)))
        },
    );
    futures::stream::once(std::future::ready(Ok(first))).chain(rest)
}

/// `POST /message?sessionId=…`: one JSON-RPC message for the session.
async fn post_message(
    State(sessions): State<Sessions>,
    caller: Option<Extension<Caller>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    let Some(id) = query.get("sessionId") else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            SERVER_ERROR,
            "Bad Request: the sessionId query parameter is required (POST to the URL of the stream's `endpoint` event)",
        );
    };
    let entry = sessions.lock().get(id).cloned();
    let Some(entry) = entry else {
        return session_not_found();
    };
    if entry.caller.principal() != caller.principal() {
        return rpc_error(
            StatusCode::FORBIDDEN,
            SERVER_ERROR,
            "Forbidden: this session was opened by another caller (another API key or token)",
        );
    }
    if let Some(kind) = headers.get(header::CONTENT_TYPE)
        && !is_json(kind)
    {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            SERVER_ERROR,
            "Unsupported Media Type: the body must be application/json",
        );
    }
    let message = match frame::parse(&body) {
        Parsed::Message(message) => *message,
        Parsed::Invalid(answer) => return json_response(StatusCode::BAD_REQUEST, answer),
        Parsed::Dropped(why) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                &format!("Invalid Request: {why}"),
            );
        }
    };
    if matches!(message, JsonRpcMessage::Request(_))
        && entry.inbox.pending().len() >= MAX_PENDING_REQUESTS
    {
        return busy(&format!(
            "{MAX_PENDING_REQUESTS} requests of this session are in flight"
        ));
    }
    match entry.inbox.send_within(message, POST_WAIT).await {
        Ok(true) => (StatusCode::ACCEPTED, "Accepted").into_response(),
        Ok(false) => busy("the session is not taking messages fast enough"),
        Err(channel::SessionGone) => session_not_found(),
    }
}

/// `application/json`, with any parameters (`; charset=utf-8`).
fn is_json(kind: &HeaderValue) -> bool {
    kind.to_str()
        .ok()
        .and_then(|k| k.split(';').next())
        .is_some_and(|k| k.trim().eq_ignore_ascii_case("application/json"))
}

fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        SESSION_NOT_FOUND,
        "Session not found: it ended or never existed; open a new one with GET /sse",
    )
}

fn busy(why: &str) -> Response {
    let mut response = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        SERVER_ERROR,
        &format!("Service Unavailable: {why}; retry later"),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `status` with a JSON-RPC error response (id `null`) as the body.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    json_response(status, frame::error_response(None, code, message))
}

fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_recognised() {
        for kind in ["application/json", "Application/JSON; charset=utf-8"] {
            assert!(is_json(&HeaderValue::from_static(kind)), "{kind}");
        }
        for kind in ["text/plain", "application/jsonl", ""] {
            assert!(!is_json(&HeaderValue::from_static(kind)), "{kind}");
        }
    }
}
