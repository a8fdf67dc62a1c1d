//! What the MCP servers behind the gateway send unasked, relayed to the gateway's clients.
//!
//! - **Initialize-era sessions** ([`relay`], started on `notifications/initialized`):
//!   `notifications/resources/updated` for the URIs this session subscribed to
//!   (`resources/subscribe`, forwarded by [`SessionState::subscribe`]),
//!   `notifications/resources/list_changed` and `notifications/prompts/list_changed` of every
//!   server (on a virtual server: of the sources it includes), and log messages (`notifications/message`) with `logger` set to the source id
//!   (`{id}/{logger}` when the server named one). Log messages are filtered by the level the
//!   session set with `logging/setLevel`; a session that never set one gets them all, as the
//!   reference servers do (MCP 2025-11-25 "Logging" lets a server send messages before any
//!   `setLevel`). The level is not forwarded: the servers' sessions are shared by every client.
//! - **2026-07-28 `subscriptions/listen`** ([`Listener`]): the resource and prompt list changes
//!   the stream accepted, and updates of the URIs it asked for, each subscribed upstream while
//!   the stream is open. Log messages cannot travel on such a stream (SEP-2567, SEP-2577).
//!
//! Upstream subscriptions are counted per server (`McpBackend::subscribe`): a URI that two
//! clients watch is subscribed once, and taken back when the last one goes — by
//! `resources/unsubscribe`, when the session ends, or when the listen stream closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::{RoleServer, SubscriptionSink};
use rmcp::{ErrorData as McpError, Peer};
use tokio::sync::broadcast::{self, error::RecvError};
use toolgate_runtime::mcp::{McpBackend, McpEvent, McpServerHandle};

use super::super::{McpHandler, Session};
use super::{by_uri, first_answer, servers, servers_on};
use crate::gateway::Gateway;
use crate::gateway::servers::VirtualServer;

/// The resource subscriptions of one MCP session of the gateway; taken back upstream when the
/// session ends (this is dropped with it).
#[derive(Default)]
pub(crate) struct SessionState {
    /// URI → the server it was subscribed on.
    subscribed: Mutex<HashMap<String, McpBackend>>,
    /// Held while a subscription is being changed upstream (one change at a time).
    changing: tokio::sync::Mutex<()>,
}

impl SessionState {
    fn is_subscribed(&self, uri: &str) -> bool {
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(uri)
    }

    /// Subscribes this session to `uri` on the first of `servers` (most likely owner first)
    /// that accepts; a URI already subscribed is accepted again without a word upstream.
    pub(super) async fn subscribe(
        &self,
        servers: &[McpServerHandle],
        uri: &str,
    ) -> Result<(), McpError> {
        let _changing = self.changing.lock().await;
        if self.is_subscribed(uri) {
            return Ok(());
        }
        let answer = first_answer(by_uri(servers, uri), |backend| async move {
            backend.subscribe(uri).await.map(|()| backend.clone())
        })
        .await
        .unwrap_or_else(|| {
            Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "resources/subscribe: no MCP server behind the gateway".to_string(),
                None,
            ))
        })?;
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uri.to_string(), answer);
        Ok(())
    }

    /// Takes back this session's subscription to `uri` upstream; a URI it never subscribed to
    /// is accepted without a word upstream (another session may watch it).
    pub(super) async fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        let _changing = self.changing.lock().await;
        let backend = self
            .subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri);
        match backend {
            Some(b) => b.unsubscribe(uri).await.map_err(|e| super::mcp_error(&e)),
            None => Ok(()),
        }
    }
}

impl Drop for SessionState {
    fn drop(&mut self) {
        let subscribed =
            std::mem::take(self.subscribed.get_mut().unwrap_or_else(|p| p.into_inner()));
        if subscribed.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(unsubscribe_all(subscribed.into_iter().collect()));
    }
}

/// Takes back subscriptions upstream, logging failures (nobody is left to tell).
async fn unsubscribe_all(subscribed: Vec<(String, McpBackend)>) {
    for (uri, backend) in subscribed {
        if let Err(e) = backend.unsubscribe(&uri).await {
            tracing::debug!(uri = %uri, error = %e, "cannot take back a resource subscription");
        }
    }
}

/// Relays what the servers send to the initialize-era session `session` on `peer`, until the
/// session ends or `peer` is gone (see the module docs).
pub(in crate::gateway::mcp) fn relay(
    gateway: &Gateway,
    on: Option<Arc<VirtualServer>>,
    session: &Arc<Session>,
    peer: Peer<RoleServer>,
) {
    if servers(gateway).is_empty() {
        return;
    }
    let weak = Arc::downgrade(session);
    let closed = session.closed.clone();
    let gateway = gateway.clone();
    tokio::spawn(async move {
        let mut reloads = gateway.toolset().watch_reloads();
        // On a virtual server: the events of the sources it includes only; after a reload
        // (servers added, replaced or removed), those of the servers then.
        loop {
            let servers = tokio::select! {
                () = closed.cancelled() => return,
                servers = servers_on(&gateway, on.as_deref()) => servers,
            };
            let mut events = Events::new(&servers);
            loop {
                let (id, event) = tokio::select! {
                    () = closed.cancelled() => return,
                    reloaded = reloads.changed() => {
                        if reloaded.is_err() {
                            return;
                        }
                        break;
                    }
                    next = events.next() => next,
                };
                if !relay_one(&gateway, &weak, &peer, &id, event).await {
                    return;
                }
            }
        }
    });
}

/// Sends one event to the session if it wants it; `false` when the session or its peer is
/// gone.
#[allow(deprecated)]
async fn relay_one(
    gateway: &Gateway,
    session: &Weak<Session>,
    peer: &Peer<RoleServer>,
    id: &str,
    event: McpEvent,
) -> bool {
    let Some(session) = session.upgrade() else {
        return false;
    };
    let sent = match event {
        McpEvent::ResourceUpdated { uri } => {
            if !session.passthrough.is_subscribed(&uri) {
                return true;
            }
            peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
        }
        McpEvent::ResourcesListChanged => peer.notify_resource_list_changed().await,
        McpEvent::PromptsListChanged => peer.notify_prompt_list_changed().await,
        McpEvent::Log {
            level,
            logger,
            data,
        } => {
            let handler = McpHandler {
                gateway: gateway.clone(),
                session,
                server: None,
            };
            if handler
                .log_level()
                .is_some_and(|min| rank(level) < rank(min))
            {
                return true;
            }
            let mut param = LoggingMessageNotificationParam::new(level, data);
            param.logger = Some(match logger {
                Some(l) => format!("{id}/{l}"),
                None => id.to_string(),
            });
            peer.notify_logging_message(param).await
        }
        _ => return true,
    };
    sent.is_ok()
}

/// Syslog severity order (RFC 5424, as MCP uses it): debug lowest, emergency highest.
#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Every server's events, merged.
struct Events {
    receivers: Vec<(String, broadcast::Receiver<McpEvent>)>,
}

impl Events {
    fn new(servers: &[McpServerHandle]) -> Self {
        Self {
            receivers: servers
                .iter()
                .map(|s| (s.id.clone(), s.backend.events()))
                .collect(),
        }
    }

    /// The next event of any server, with the server's source id. Cancel-safe. Never ends
    /// while the servers live.
    async fn next(&mut self) -> (String, McpEvent) {
        loop {
            if self.receivers.is_empty() {
                return std::future::pending().await;
            }
            let waits = self.receivers.iter_mut().map(|(_, r)| Box::pin(r.recv()));
            let (result, i, _) = futures::future::select_all(waits).await;
            match result {
                Ok(event) => return (self.receivers[i].0.clone(), event),
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(source = %self.receivers[i].0, missed = n, "MCP events relayed too slowly; some were missed");
                }
                Err(RecvError::Closed) => {
                    self.receivers.swap_remove(i);
                }
            }
        }
    }
}

/// Forwards resource and prompt notifications to a `subscriptions/listen` stream (2026-07-28);
/// the URIs it accepted are subscribed upstream while it lives.
pub(crate) struct Listener {
    accepted: SubscriptionFilter,
    events: Events,
    /// Subscriptions taken upstream for this stream (filled in the background).
    subscribed: Arc<tokio::sync::Mutex<Vec<(String, McpBackend)>>>,
    subscribing: Option<tokio::task::JoinHandle<()>>,
}

impl Listener {
    /// A listener for a stream that accepted `accepted`; starts subscribing its URIs upstream
    /// (a URI no server accepts is logged: the stream was already acknowledged).
    pub(in crate::gateway::mcp) async fn new(
        gateway: &Gateway,
        on: Option<&VirtualServer>,
        accepted: &SubscriptionFilter,
    ) -> Self {
        let servers = servers_on(gateway, on).await;
        let events = Events::new(&servers);
        let subscribed = Arc::new(tokio::sync::Mutex::new(Vec::new()));
        let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
        let subscribing = (!uris.is_empty() && !servers.is_empty()).then(|| {
            let subscribed = Arc::clone(&subscribed);
            tokio::spawn(async move {
                let mut taken = subscribed.lock().await;
                for uri in uris {
                    let answer = first_answer(by_uri(&servers, &uri), |backend| {
                        let uri = uri.clone();
                        async move { backend.subscribe(&uri).await.map(|()| backend.clone()) }
                    })
                    .await;
                    match answer {
                        Some(Ok(backend)) => taken.push((uri, backend)),
                        Some(Err(e)) => {
                            tracing::warn!(uri = %uri, error = %e.message, "subscriptions/listen: no MCP server accepted a subscription");
                        }
                        None => {}
                    }
                }
            })
        });
        Self {
            accepted: accepted.clone(),
            events,
            subscribed,
            subscribing,
        }
    }

    /// Sends the next event the stream accepted; `false` when the stream is gone. Cancel-safe
    /// (an event being sent when cancelled may be lost).
    pub(in crate::gateway::mcp) async fn forward(&mut self, sink: &SubscriptionSink) -> bool {
        loop {
            let (_, event) = self.events.next().await;
            let wanted = match &event {
                McpEvent::ResourceUpdated { uri } => self
                    .accepted
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|uris| uris.contains(uri)),
                McpEvent::ResourcesListChanged => {
                    self.accepted.resources_list_changed == Some(true)
                }
                McpEvent::PromptsListChanged => self.accepted.prompts_list_changed == Some(true),
                _ => false,
            };
            if !wanted {
                continue;
            }
            let sent = match event {
                McpEvent::ResourceUpdated { uri } => sink.notify_resource_updated(uri).await,
                McpEvent::ResourcesListChanged => sink.notify_resource_list_changed().await,
                _ => sink.notify_prompt_list_changed().await,
            };
            if let Err(e) = sent {
                tracing::debug!(error = %e, "subscriptions/listen: cannot send; closing the stream");
                return false;
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let subscribing = self.subscribing.take();
        let subscribed = Arc::clone(&self.subscribed);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Some(task) = subscribing {
                let _ = task.await;
            }
            let taken = std::mem::take(&mut *subscribed.lock().await);
            unsubscribe_all(taken).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn levels_are_ordered_by_severity() {
        use LoggingLevel::*;
        let levels = [
            Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
        ];
        assert!(levels.windows(2).all(|w| rank(w[0]) < rank(w[1])));
    }
}
