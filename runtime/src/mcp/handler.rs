//! The client side of one MCP session: what toolgate does with what a server sends unasked
//! (progress, tool list changes, log messages, resource updates, resource and prompt list
//! changes). Besides being logged, log messages and resource/prompt notifications are
//! broadcast as [`McpEvent`]s ([`McpBackend::events`](super::McpBackend::events)).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientNotification, Implementation, JsonRpcMessage,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, RequestId, ResourceUpdatedNotificationParam, ServerNotification,
};
use rmcp::service::{NotificationContext, RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{broadcast, watch};

use super::McpEvent;
use crate::ProgressReporter;

/// How many events a slow [`McpEvent`] receiver may fall behind before it misses some.
const EVENT_CAPACITY: usize = 256;

/// Shared by every session of one server (a reconnect makes a new session, not a new handler).
pub(crate) struct Shared {
    /// The source id, for log lines.
    pub(crate) server: String,
    /// Progress tokens of calls in flight that listen for progress (their caller, or their
    /// idle timer).
    progress: Mutex<HashMap<ProgressToken, Listener>>,
    /// Bumped on `notifications/tools/list_changed`.
    changes: watch::Sender<u64>,
    /// Resource updates, resource and prompt list changes, log messages.
    events: broadcast::Sender<McpEvent>,
}

impl Shared {
    pub(crate) fn new(server: String) -> Arc<Self> {
        Arc::new(Self {
            server,
            progress: Mutex::new(HashMap::new()),
            changes: watch::channel(0).0,
            events: broadcast::channel(EVENT_CAPACITY).0,
        })
    }

    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Every event from now on.
    pub(crate) fn events(&self) -> broadcast::Receiver<McpEvent> {
        self.events.subscribe()
    }

    /// Broadcasts `event` (dropped when nobody listens).
    pub(crate) fn emit(&self, event: McpEvent) {
        let _ = self.events.send(event);
    }

    /// Records that the server's tool list changed (a `notifications/tools/list_changed`,
    /// however it arrived).
    pub(crate) fn tools_changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Routes progress reports for `token` to `listener` until the guard is dropped.
    pub(crate) fn track_progress(
        self: &Arc<Self>,
        token: ProgressToken,
        listener: Listener,
    ) -> ProgressGuard {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), listener);
        ProgressGuard {
            shared: Arc::clone(self),
            token,
        }
    }
}

impl Shared {
    /// Hands one progress notification to the call it belongs to: its caller's reporter, and
    /// its idle timer.
    fn report_progress(&self, params: &ProgressNotificationParam) {
        let listener = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&params.progress_token)
            .cloned();
        match listener {
            Some(l) => {
                if let Some(alive) = &l.alive {
                    alive.notify_one();
                }
                if let Some(r) = &l.reporter {
                    r.report(params.progress, params.total, params.message.as_deref());
                }
            }
            None => {
                tracing::debug!(server = %self.server, token = ?params.progress_token, "progress for no call in flight")
            }
        }
    }
}

/// A transport that reports progress notifications as they are received, in order, and drops
/// answers to requests never sent.
///
/// rmcp's service loop reads one message at a time from [`Transport::receive`], so a progress
/// notification is reported here before the result that follows it is handed to the caller:
/// a caller sees every report a server sent before its result, and none after.
///
/// A response (or error) whose id toolgate never sent is logged and skipped: rmcp would end
/// the whole session on one that arrives before the `initialize` result (JSON-RPC 2.0 §5: a
/// response answers a request of the same id; anything else is the server's bug, not the
/// session's end).
///
/// A session the server no longer knows ends here, and is marked [`Forgotten`]: an error tied
/// to no request (JSON-RPC 2.0 §5.1, `id: null`: what a streamable HTTP server answers a
/// session id it does not know with, as an HTTP 400, after a restart) would otherwise leave
/// every call on it waiting for an answer until its deadline; an HTTP 404 to a request that
/// carried the session id (MCP, basic/transports, Session Management) marks it too.
pub(crate) struct ProgressInOrder<T> {
    inner: T,
    shared: Arc<Shared>,
    /// Ids of the requests sent and not answered yet.
    pending: HashSet<RequestId>,
    /// Ids of requests toolgate cancelled, newest last: a late answer to one is expected.
    cancelled: VecDeque<RequestId>,
    forgotten: Forgotten,
}

/// Set when the server said it no longer knows the session (see [`ProgressInOrder`]). What
/// was sent on such a session did not run, so a call may be sent once more on a new one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Forgotten(Arc<AtomicBool>);

impl Forgotten {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Whether a send failed because the server answered 404 to the session id (rmcp's
/// streamable HTTP client, whichever HTTP client it runs on, reports reqwest's errors).
fn session_expired(error: &(dyn std::any::Any + 'static)) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
        .is_some_and(|e| matches!(e, StreamableHttpError::SessionExpired))
}

/// How many cancelled requests are remembered (their late answers pass quietly).
const CANCELLED_REMEMBERED: usize = 256;

impl<T> ProgressInOrder<T> {
    pub(crate) fn new(inner: T, shared: Arc<Shared>, forgotten: Forgotten) -> Self {
        Self {
            inner,
            shared,
            pending: HashSet::new(),
            cancelled: VecDeque::new(),
            forgotten,
        }
    }

    /// Whether an answer with `id` belongs to a request sent (it is then no longer pending).
    fn expected(&mut self, id: &RequestId) -> bool {
        if self.pending.remove(id) {
            return true;
        }
        if let Some(i) = self.cancelled.iter().position(|c| c == id) {
            self.cancelled.remove(i);
            return true;
        }
        false
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressInOrder<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r) => {
                self.pending.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                    && self.pending.remove(id)
                {
                    if self.cancelled.len() == CANCELLED_REMEMBERED {
                        self.cancelled.pop_front();
                    }
                    self.cancelled.push_back(id.clone());
                }
            }
            _ => {}
        }
        let sent = self.inner.send(item);
        let forgotten = self.forgotten.clone();
        async move {
            let result = sent.await;
            if let Err(e) = &result
                && session_expired(e)
            {
                forgotten.set();
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            let answered = match &message {
                JsonRpcMessage::Error(e) if e.id.is_none() => {
                    tracing::warn!(server = %self.shared.server, error = %crate::redact::text(&e.error.message), "the server answered with an error tied to no request (it no longer knows the session, or could not read a message); the session ends and calls on it go again on a new one");
                    self.forgotten.set();
                    return None;
                }
                JsonRpcMessage::Response(r) => Some(&r.id),
                JsonRpcMessage::Error(e) => e.id.as_ref(),
                JsonRpcMessage::Notification(n) => {
                    if let ServerNotification::ProgressNotification(p) = &n.notification {
                        self.shared.report_progress(&p.params);
                    }
                    None
                }
                JsonRpcMessage::Request(_) => None,
            };
            if let Some(id) = answered.cloned()
                && !self.expected(&id)
            {
                tracing::warn!(server = %self.shared.server, %id, "the server answered a request toolgate never sent (id {id}); the answer is ignored");
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Stops routing a call's progress when the call ends (however it ends).
pub(crate) struct ProgressGuard {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.shared
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

/// Who hears of a call's progress: its caller (`reporter`), and its idle timer (`alive`,
/// notified on each report).
#[derive(Clone, Default)]
pub(crate) struct Listener {
    pub(crate) reporter: Option<ProgressReporter>,
    pub(crate) alive: Option<Arc<tokio::sync::Notify>>,
}

/// rmcp's client handler for toolgate's sessions.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
    pub(crate) protocol_version: ProtocolVersion,
    /// Set by the session's transport ([`ProgressInOrder`]) when the server forgot it.
    pub(crate) forgotten: Forgotten,
}

// Logging notifications are deprecated by SEP-2577 but servers still send them.
#[allow(deprecated)]
impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = self.protocol_version.clone();
        info
    }

    // Progress is reported by [`ProgressInOrder`], in the transport's receive loop, not here:
    // rmcp runs this callback in a spawned task, which may run after the call's result
    // reached the caller, and the last report would be lost.
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.shared.server, "notifications/tools/list_changed");
        self.shared.changes.send_modify(|n| *n += 1);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let server = &self.shared.server;
        let mut params = params;
        // What a server logs may quote its credentials: masked before it is logged or relayed.
        crate::redact::value(&mut params.data);
        let logger = params.logger.as_deref().unwrap_or("");
        let data = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match params.level {
            LoggingLevel::Debug => tracing::debug!(server = %server, logger, "{data}"),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(server = %server, logger, "{data}");
            }
            LoggingLevel::Warning => tracing::warn!(server = %server, logger, "{data}"),
            _ => tracing::error!(server = %server, logger, "{data}"),
        }
        self.shared.emit(McpEvent::Log {
            level: params.level,
            logger: params.logger,
            data: params.data,
        });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.shared.server, uri = %params.uri, "notifications/resources/updated");
        self.shared
            .emit(McpEvent::ResourceUpdated { uri: params.uri });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.shared.server, "notifications/resources/list_changed");
        self.shared.emit(McpEvent::ResourcesListChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.shared.server, "notifications/prompts/list_changed");
        self.shared.emit(McpEvent::PromptsListChanged);
    }
}
