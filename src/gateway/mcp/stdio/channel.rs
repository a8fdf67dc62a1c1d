//! An rmcp server session fed through channels: what the stdio and the legacy HTTP+SSE
//! transports share.
//!
//! A transport's reader (stdin lines for stdio, POST bodies for SSE) turns each frame into a
//! message with [`frame::parse`](super::frame::parse) and hands it to the session's [`Inbox`]; the session's
//! answers and notifications come out of its outgoing channel as serialized JSON-RPC messages (one
//! `String` each, no newline), which the transport's writer drains (stdout lines, SSE `message`
//! events). Framing problems are the transport's to answer; the session only ever sees
//! valid messages.
//!
//! What the session adds to rmcp's service loop:
//! * **Requests awaiting an answer** are tracked ([`Pending`]): shutdown waits for them (bounded
//!   by the gateway's grace period) before the session closes, and SSE caps them per session.
//! * **A failed handshake does not end the connection**: when the first message is not
//!   `initialize` (a stray notification, an answer), rmcp gives up on the session; a new one is
//!   started on the same channels, so the client can still initialize.
//! * **Closing is explicit** ([`ChannelSession::closing`]): the end of the input alone does not
//!   end the session, so answers to requests already read can still be written.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RoleServer, ServerInitializeError, serve_server_with_ct};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::sync::{Mutex, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::gateway::mcp::cancel::{self, CancelReasons};
use crate::gateway::mcp::{McpHandler, Reasons};

/// How long calls get, after the grace period ended and they were cancelled, to write their
/// (cancelled) answers before the session closes anyway.
const CANCELLED_ANSWER_GRACE: Duration = Duration::from_secs(2);

/// The requests of one session that were handed to rmcp and not answered yet. Cheap to clone;
/// clones share the set.
#[derive(Clone)]
pub(crate) struct Pending(Arc<watch::Sender<HashSet<RequestId>>>);

impl Pending {
    fn new() -> Self {
        Self(Arc::new(watch::Sender::new(HashSet::new())))
    }

    /// How many requests await an answer.
    pub(crate) fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Waits until no request awaits an answer, at most `bound`; `true` when none does.
    pub(crate) async fn wait_empty(&self, bound: Duration) -> bool {
        let mut set = self.0.subscribe();
        tokio::time::timeout(bound, set.wait_for(HashSet::is_empty))
            .await
            .is_ok()
    }

    /// A message on its way to rmcp: a request starts waiting; `notifications/cancelled` ends
    /// the wait of the request it names (rmcp drops the answers of cancelled requests).
    fn received(&self, message: &ClientJsonRpcMessage) {
        match message {
            JsonRpcMessage::Request(request) => {
                let id = request.id.clone();
                self.0.send_modify(|set| {
                    set.insert(id);
                });
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.0.send_if_modified(|set| set.remove(id));
                }
            }
            _ => {}
        }
    }

    /// A message that did not reach rmcp after all: its request is not waited for.
    fn not_received(&self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = message {
            self.0.send_if_modified(|set| set.remove(&request.id));
        }
    }

    /// A message rmcp sent: an answer ends its request's wait.
    fn answered(&self, message: &ServerJsonRpcMessage) {
        let id = match message {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            self.0.send_if_modified(|set| set.remove(id));
        }
    }
}

/// Where a transport's reader puts the messages of a [`ChannelSession`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Inbox {
    messages: mpsc::Sender<ClientJsonRpcMessage>,
    pending: Pending,
    reasons: CancelReasons<RequestId>,
}

/// The session is gone: it takes no more messages.
#[derive(Debug)]
pub(crate) struct SessionGone;

impl Inbox {
    /// Hands `message` to the session, waiting for room.
    ///
    /// # Errors
    /// [`SessionGone`] when the session ended.
    pub(crate) async fn send(&self, message: ClientJsonRpcMessage) -> Result<(), SessionGone> {
        self.note_reason(&message);
        // Counted before it is queued: a request in the queue is one awaiting an answer.
        self.pending.received(&message);
        self.messages.send(message).await.map_err(|e| {
            self.pending.not_received(&e.0);
            SessionGone
        })
    }

    /// The reason of a `notifications/cancelled` for a request awaiting its answer, noted
    /// before rmcp reads the notification and cancels the call ([`cancel`]).
    fn note_reason(&self, message: &ClientJsonRpcMessage) {
        if let Some((id, reason)) = cancel::cancelled(message)
            && self.pending.0.borrow().contains(id)
        {
            self.reasons.note(id.clone(), reason);
        }
    }

    /// [`send`](Self::send), waiting at most `bound` for room: `Ok(false)` when there was none.
    ///
    /// # Errors
    /// [`SessionGone`] when the session ended.
    pub(crate) async fn send_within(
        &self,
        message: ClientJsonRpcMessage,
        bound: Duration,
    ) -> Result<bool, SessionGone> {
        self.pending.received(&message);
        match self.messages.send_timeout(message, bound).await {
            Ok(()) => Ok(true),
            Err(mpsc::error::SendTimeoutError::Timeout(message)) => {
                self.pending.not_received(&message);
                Ok(false)
            }
            Err(mpsc::error::SendTimeoutError::Closed(message)) => {
                self.pending.not_received(&message);
                Err(SessionGone)
            }
        }
    }

    /// The session's requests awaiting an answer (queued ones included).
    pub(crate) fn pending(&self) -> &Pending {
        &self.pending
    }
}

/// One client connection's MCP session, fed through channels (see the module docs).
pub(crate) struct ChannelSession {
    /// `stdio`, `SSE session <id>`: for log lines.
    label: Arc<str>,
    incoming: Arc<Mutex<mpsc::Receiver<ClientJsonRpcMessage>>>,
    outgoing: mpsc::Sender<String>,
    /// A send that waits longer than this for room in `outgoing` ends the session (the client
    /// does not read); `None`: senders wait (the writer applies backpressure).
    send_bound: Option<Duration>,
    pending: Pending,
    reasons: CancelReasons<RequestId>,
    closing: CancellationToken,
}

impl ChannelSession {
    /// A session writing to `outgoing`, and the inbox it reads from (holding up to `capacity`
    /// messages; senders wait beyond).
    pub(crate) fn new(
        label: impl Into<Arc<str>>,
        capacity: usize,
        outgoing: mpsc::Sender<String>,
        send_bound: Option<Duration>,
    ) -> (Self, Inbox) {
        let (messages, incoming) = mpsc::channel(capacity);
        let pending = Pending::new();
        let reasons = CancelReasons::default();
        let session = Self {
            label: label.into(),
            incoming: Arc::new(Mutex::new(incoming)),
            outgoing,
            send_bound,
            pending: pending.clone(),
            reasons: reasons.clone(),
            closing: CancellationToken::new(),
        };
        let inbox = Inbox {
            messages,
            pending,
            reasons,
        };
        (session, inbox)
    }

    /// The session's requests awaiting an answer.
    pub(crate) fn pending(&self) -> Pending {
        self.pending.clone()
    }

    /// Cancel it to end the session: rmcp stops reading, writes the answers it still gets
    /// within its own drain bound (5 s), cancels the rest and ends. The end of the incoming
    /// channel alone does not end the session.
    pub(crate) fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// Runs the session until it is [closed](Self::closing) (or its output is gone). A
    /// handshake that fails (the first message is not `initialize`, the handler refuses it)
    /// is logged and a new session starts on the same channels, each with a fresh handler
    /// from `handler`, given where the inbox notes cancel reasons.
    pub(crate) async fn run(self, handler: impl Fn(Reasons) -> McpHandler) {
        loop {
            let transport = ChannelTransport {
                label: Arc::clone(&self.label),
                incoming: Arc::clone(&self.incoming),
                outgoing: self.outgoing.clone(),
                send_bound: self.send_bound,
                pending: self.pending.clone(),
                closing: self.closing.clone(),
            };
            let ct = self.closing.child_token();
            let reasons = Reasons::Session(self.reasons.clone());
            match serve_server_with_ct(handler(reasons), transport, ct).await {
                Ok(running) => {
                    let reason = running.waiting().await;
                    tracing::debug!(session = %self.label, ?reason, "MCP session ended");
                    return;
                }
                Err(
                    ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled,
                ) => {
                    return;
                }
                Err(e @ ServerInitializeError::TransportError { .. }) => {
                    tracing::debug!(session = %self.label, "MCP session ended: {e}");
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        session = %self.label,
                        "MCP handshake failed ({}); waiting for `initialize`",
                        handshake_failure(&e)
                    );
                }
            }
        }
    }
}

/// A short account of a failed handshake (rmcp's `Debug` of the message can be long).
fn handshake_failure(e: &ServerInitializeError) -> String {
    match e {
        ServerInitializeError::ExpectedInitializeRequest(Some(message)) => {
            let what = match message {
                JsonRpcMessage::Notification(n) => {
                    format!("notification `{}`", notification_method(&n.notification))
                }
                JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => "an answer".to_string(),
                JsonRpcMessage::Request(_) => "a request".to_string(),
            };
            format!("the first message must be `initialize`, got {what}")
        }
        other => other.to_string(),
    }
}

fn notification_method(n: &ClientNotification) -> String {
    serde_json::to_value(n)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

/// Waits for `pending` to be answered, at most the gateway's grace period. When time runs out
/// and the gateway is shutting down, the calls in flight are cancelled (as
/// [`Gateway::drain`] does at the end of the grace period) and get a little more time to write
/// their answers. `true` when every request was answered.
pub(crate) async fn wind_down(gateway: &Gateway, pending: &Pending, label: &str) -> bool {
    let grace = gateway.settings().shutdown_grace;
    if pending.wait_empty(grace).await {
        return true;
    }
    tracing::warn!(
        session = %label,
        requests = pending.len(),
        grace_ms = grace.as_millis() as u64,
        "requests still unanswered at the end of the grace period"
    );
    if gateway.shutdown_token().is_cancelled() {
        gateway.cancel_calls();
        return pending.wait_empty(CANCELLED_ANSWER_GRACE).await;
    }
    false
}

/// rmcp's view of a [`ChannelSession`].
struct ChannelTransport {
    label: Arc<str>,
    incoming: Arc<Mutex<mpsc::Receiver<ClientJsonRpcMessage>>>,
    outgoing: mpsc::Sender<String>,
    send_bound: Option<Duration>,
    /// Answers are taken off it (the inbox puts requests on it).
    pending: Pending,
    closing: CancellationToken,
}

/// Why a message could not be written.
#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error("{0}: the client's stream is gone")]
    Gone(Arc<str>),
    #[error("{0}: the client did not read its stream for {1} ms; session closed")]
    Stalled(Arc<str>, u128),
    #[error("{0}: cannot serialize a message: {1}")]
    Serialize(Arc<str>, serde_json::Error),
}

impl Transport<RoleServer> for ChannelTransport {
    type Error = SendError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SendError>> + Send + 'static {
        let label = Arc::clone(&self.label);
        let outgoing = self.outgoing.clone();
        let (bound, pending, closing) =
            (self.send_bound, self.pending.clone(), self.closing.clone());
        async move {
            let frame =
                serde_json::to_string(&item).map_err(|e| SendError::Serialize(label.clone(), e))?;
            let sent = match bound {
                None => outgoing
                    .send(frame)
                    .await
                    .map_err(|_| SendError::Gone(label)),
                Some(bound) => match outgoing.send_timeout(frame, bound).await {
                    Ok(()) => Ok(()),
                    Err(mpsc::error::SendTimeoutError::Closed(_)) => Err(SendError::Gone(label)),
                    Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                        tracing::warn!(
                            session = %label,
                            bound_ms = bound.as_millis() as u64,
                            "the client does not read its stream: session closed"
                        );
                        closing.cancel();
                        Err(SendError::Stalled(label, bound.as_millis()))
                    }
                },
            };
            if sent.is_ok() {
                pending.answered(&item);
            }
            sent
        }
    }

    /// Cancel-safe: the lock and `recv` lose nothing when dropped.
    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let mut incoming = tokio::select! {
            guard = self.incoming.lock() => guard,
            () = self.closing.cancelled() => return None,
        };
        let message = tokio::select! {
            biased;
            () = self.closing.cancelled() => None,
            message = incoming.recv() => match message {
                Some(message) => Some(message),
                // The input ended: answers may still be written until the session closes.
                None => {
                    self.closing.cancelled().await;
                    None
                }
            },
        }?;
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), SendError>> + Send {
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;

    fn gateway() -> Gateway {
        Gateway::builder(toolgate_runtime::Toolset::builder().build().unwrap()).build()
    }

    fn message(value: Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn initialize() -> ClientJsonRpcMessage {
        message(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
    }

    fn ping(id: u64) -> ClientJsonRpcMessage {
        message(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
    }

    async fn next(out: &mut mpsc::Receiver<String>) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), out.recv())
            .await
            .expect("an answer within 5 s")
            .expect("the session is open");
        serde_json::from_str(&line).unwrap()
    }

    #[tokio::test]
    async fn a_failed_handshake_starts_a_new_session_and_answers_are_awaited() {
        let gateway = gateway();
        let (tx, mut out) = mpsc::channel(16);
        let (session, inbox) = ChannelSession::new("test", 4, tx, None);
        let (pending, closing) = (session.pending(), session.closing());
        let run = tokio::spawn({
            let gateway = gateway.clone();
            session.run(move |r| McpHandler::with_reasons(gateway.clone(), Default::default(), r))
        });
        // Not `initialize` first: rmcp gives that session up; the next one initializes.
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        inbox.send(message(note.clone())).await.unwrap();
        inbox.send(initialize()).await.unwrap();
        assert_eq!(next(&mut out).await["id"], 1);
        inbox.send(message(note)).await.unwrap();
        for id in 2..5 {
            inbox.send(ping(id)).await.unwrap();
        }
        assert!(pending.wait_empty(Duration::from_secs(5)).await);
        for _ in 2..5 {
            assert_eq!(next(&mut out).await["result"], json!({}));
        }
        // The end of the input alone does not end the session; closing does.
        drop(inbox);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!run.is_finished());
        closing.cancel();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the session ends once closed")
            .unwrap();
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_gets_its_session_closed() {
        let gateway = gateway();
        let (tx, _unread) = mpsc::channel(1);
        let bound = Duration::from_millis(200);
        let (session, inbox) = ChannelSession::new("test", 4, tx, Some(bound));
        let closing = session.closing();
        let run = tokio::spawn(
            session.run(move |r| McpHandler::with_reasons(gateway.clone(), Default::default(), r)),
        );
        let start = Instant::now();
        inbox.send(initialize()).await.unwrap();
        for id in 2..5 {
            if inbox.send(ping(id)).await.is_err() {
                break;
            }
        }
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the stalled session ends")
            .unwrap();
        assert!(closing.is_cancelled());
        assert!(start.elapsed() >= bound, "{:?}", start.elapsed());
    }
}
