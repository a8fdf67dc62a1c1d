//! Resource subscriptions, counted and kept across sessions.
//!
//! Each URI is subscribed upstream once, whoever asks how often: the first
//! [`subscribe`](Client::subscribe) sends it, the matching last
//! [`unsubscribe`](Client::unsubscribe) takes it back. How depends on the era the session
//! negotiated:
//!
//! * initialize era (up to 2025-11-25): `resources/subscribe` / `resources/unsubscribe`
//!   (MCP 2025-11-25 "Resources", subscriptions); a new session (after a drop) subscribes
//!   every URI again.
//! * 2026-07-28: one `subscriptions/listen` stream per session (SEP-2567) whose filter carries
//!   the subscribed URIs and the tool, resource and prompt list changes the server offers (the
//!   only way such a server tells of a changed tool list); it is
//!   opened again with the new filter whenever the URIs change, and a subscription succeeds
//!   when the server acknowledges the URI.
//!
//! Whatever arrives is broadcast as an [`McpEvent`](crate::mcp::McpEvent), as the
//! notifications of the initialize era are by the client handler.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    ClientRequest, ProtocolVersion, ServerNotification, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Client;
use super::requests::Feature;
use crate::mcp::McpEvent;
use crate::mcp::handler::Shared;
use crate::{ErrorKind, ToolError};

/// How long a `subscriptions/listen` stream that failed or ended waits before it is opened
/// again (unless the subscribed URIs change first).
const LISTEN_RETRY: Duration = Duration::from_secs(5);

/// The subscriptions of one server's client.
pub(crate) struct Subscriptions {
    /// URI → subscribers. Held across the upstream request, so that a URI's first subscribe
    /// and last unsubscribe are each sent once, in order.
    counts: tokio::sync::Mutex<BTreeMap<String, Count>>,
    /// 2026-07-28: the URIs the listen stream should carry.
    wanted: watch::Sender<Wanted>,
    /// 2026-07-28: what the server acknowledged for a version of `wanted`.
    acked: watch::Sender<Acked>,
    /// The generation of the session whose listen stream may report to `acked`.
    generation: AtomicU64,
}

/// The subscribers of one URI.
#[derive(Debug, Clone, Copy)]
struct Count {
    subscribers: usize,
    /// The session generation it was last subscribed on upstream (initialize era).
    generation: u64,
}

#[derive(Debug, Clone, Default)]
struct Wanted {
    version: u64,
    uris: BTreeSet<String>,
}

#[derive(Debug, Clone)]
struct Acked {
    version: u64,
    /// The URIs accepted, or why the stream could not be opened.
    outcome: Result<BTreeSet<String>, String>,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self {
            counts: tokio::sync::Mutex::new(BTreeMap::new()),
            wanted: watch::channel(Wanted::default()).0,
            acked: watch::channel(Acked {
                version: 0,
                outcome: Ok(BTreeSet::new()),
            })
            .0,
            generation: AtomicU64::new(0),
        }
    }
}

impl Subscriptions {
    /// Sets the wanted URIs; the new version.
    fn want(&self, uris: BTreeSet<String>) -> u64 {
        let mut version = 0;
        self.wanted.send_modify(|w| {
            w.version += 1;
            w.uris = uris;
            version = w.version;
        });
        version
    }
}

impl Client {
    /// Subscribes to updates of `uri` (sent upstream when no one was subscribed yet).
    ///
    /// # Errors
    /// `protocol` when the server has no `resources.subscribe` capability or refuses the URI;
    /// `network` / `timeout` when it cannot be reached or does not answer in time.
    pub(crate) async fn subscribe(&self, uri: &str) -> Result<(), ToolError> {
        let subs = Arc::clone(&self.passthrough.subscriptions);
        let mut counts = subs.counts.lock().await;
        let mut count = counts.get(uri).copied().unwrap_or(Count {
            subscribers: 0,
            generation: 0,
        });
        if count.subscribers == 0 {
            let what = format!("resources/subscribe {uri}");
            let session = self.session(None).await?;
            count.generation = session.generation;
            self.check(&session, Feature::Subscribe, &what)?;
            if session_has_initialize(&session.peer) {
                self.request(&what, Feature::Subscribe, || subscribe_request(uri))
                    .await?;
                let mut uris: BTreeSet<String> = counts.keys().cloned().collect();
                uris.insert(uri.to_string());
                subs.want(uris);
            } else {
                let mut uris: BTreeSet<String> = counts.keys().cloned().collect();
                uris.insert(uri.to_string());
                if let Err(e) = self.listen_for(&subs, uris, uri).await {
                    subs.want(counts.keys().cloned().collect());
                    return Err(e);
                }
            }
        }
        count.subscribers += 1;
        counts.insert(uri.to_string(), count);
        Ok(())
    }

    /// Drops one subscription to `uri`; the last one is taken back upstream (on the live
    /// session only: a new session would not subscribe it again anyway). A URI not
    /// subscribed is no error, and nothing is sent.
    ///
    /// # Errors
    /// As [`subscribe`](Self::subscribe), for the upstream `resources/unsubscribe`.
    pub(crate) async fn unsubscribe(&self, uri: &str) -> Result<(), ToolError> {
        let subs = Arc::clone(&self.passthrough.subscriptions);
        let mut counts = subs.counts.lock().await;
        match counts.get_mut(uri) {
            None => return Ok(()),
            Some(c) if c.subscribers > 1 => {
                c.subscribers -= 1;
                return Ok(());
            }
            Some(_) => {
                counts.remove(uri);
            }
        }
        // What a 2026-07-28 listen stream carries, now or on a later session.
        subs.want(counts.keys().cloned().collect());
        let Some(session) = self.live() else {
            return Ok(());
        };
        if !session_has_initialize(&session.peer) {
            return Ok(());
        }
        let what = format!("resources/unsubscribe {uri}");
        self.send(&session, &what, unsubscribe_request(uri))
            .await
            .map(drop)
            .map_err(|(e, _)| e)
    }

    /// 2026-07-28: asks the session's listen stream to carry `uris` and waits until the server
    /// acknowledged a filter with `uri` in it.
    async fn listen_for(
        &self,
        subs: &Subscriptions,
        uris: BTreeSet<String>,
        uri: &str,
    ) -> Result<(), ToolError> {
        let mut acked = subs.acked.subscribe();
        let version = subs.want(uris);
        let bound = self.options.request_timeout;
        let outcome =
            match tokio::time::timeout(bound, acked.wait_for(|a| a.version >= version)).await {
                Ok(Ok(a)) => a.outcome.clone(),
                Ok(Err(_)) => Err("the subscription stream is gone".to_string()),
                Err(_) => Err(format!(
                    "no acknowledgment of subscriptions/listen within {} ms",
                    bound.as_millis()
                )),
            };
        let kind = if outcome.is_err() {
            ErrorKind::Network
        } else {
            ErrorKind::Protocol
        };
        match outcome {
            Ok(accepted) if accepted.contains(uri) => Ok(()),
            Ok(_) => Err(format!(
                "the server did not accept a subscription to `{uri}`"
            )),
            Err(e) => Err(e),
        }
        .map_err(|why| {
            ToolError::new(
                kind,
                format!(
                    "MCP server `{}`: cannot subscribe to `{uri}`: {why}",
                    self.id
                ),
            )
        })
    }
}

/// `resources/subscribe` (legacy-only in rmcp: the initialize era's way).
#[allow(deprecated)]
fn subscribe_request(uri: &str) -> ClientRequest {
    ClientRequest::SubscribeRequest(rmcp::model::SubscribeRequest::new(
        SubscribeRequestParams::new(uri),
    ))
}

/// `resources/unsubscribe` (legacy-only in rmcp).
#[allow(deprecated)]
fn unsubscribe_request(uri: &str) -> ClientRequest {
    ClientRequest::UnsubscribeRequest(rmcp::model::UnsubscribeRequest::new(
        UnsubscribeRequestParams::new(uri),
    ))
}

fn session_has_initialize(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_none_or(|i| i.protocol_version.has_initialize())
}

/// Starts what a new session needs for the subscriptions: `resources/subscribe` again for
/// every URI (initialize era), or the `subscriptions/listen` stream (2026-07-28).
pub(super) fn start(
    client: &Client,
    peer: &Peer<RoleClient>,
    version: &ProtocolVersion,
    generation: u64,
) {
    let subs = Arc::clone(&client.passthrough.subscriptions);
    let timeout = client.options.request_timeout;
    let server = client.id.clone();
    let peer = peer.clone();
    if version.has_initialize() {
        tokio::spawn(async move {
            // Those subscribed on an earlier session (not those a subscribe just sent here).
            let uris: Vec<String> = subs
                .counts
                .lock()
                .await
                .iter_mut()
                .filter(|(_, c)| c.generation < generation)
                .map(|(uri, c)| {
                    c.generation = generation;
                    uri.clone()
                })
                .collect();
            for uri in uris {
                let options = PeerRequestOptions::with_timeout(timeout);
                let request = subscribe_request(&uri);
                let sent = match peer.send_request_with_option(request, options).await {
                    Ok(handle) => handle.await_response().await.map(drop),
                    Err(e) => Err(e),
                };
                match sent {
                    Ok(()) => {
                        tracing::debug!(server = %server, uri = %uri, "subscribed again on the new session");
                    }
                    Err(e) => {
                        tracing::warn!(server = %server, uri = %uri, error = %e, "cannot subscribe again on the new session");
                    }
                }
            }
        });
        return;
    }
    subs.generation.store(generation, Ordering::Relaxed);
    let listen = Listen {
        server,
        peer,
        shared: Arc::clone(&client.shared),
        subs,
        generation,
        timeout,
        closed: client.closed.clone(),
    };
    tokio::spawn(listen.run());
}

/// The `subscriptions/listen` stream of one 2026-07-28 session.
struct Listen {
    server: String,
    peer: Peer<RoleClient>,
    shared: Arc<Shared>,
    subs: Arc<Subscriptions>,
    generation: u64,
    timeout: Duration,
    closed: CancellationToken,
}

impl Listen {
    /// Whether this session is still the one to report to the subscribers.
    fn current(&self) -> bool {
        self.subs.generation.load(Ordering::Relaxed) == self.generation
            && !self.peer.is_transport_closed()
    }

    fn ack(&self, version: u64, outcome: Result<BTreeSet<String>, String>) {
        if self.current() {
            self.subs.acked.send_replace(Acked { version, outcome });
        }
    }

    async fn run(self) {
        let caps = self
            .peer
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default();
        let mut base = SubscriptionFilter::new();
        if caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true) {
            base.tools_list_changed = Some(true);
        }
        if caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true) {
            base.prompts_list_changed = Some(true);
        }
        if caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true) {
            base.resources_list_changed = Some(true);
        }
        let subscribe = Feature::Subscribe.offered(&caps);
        let mut wanted = self.subs.wanted.subscribe();
        loop {
            if !self.current() {
                return;
            }
            let w = wanted.borrow_and_update().clone();
            let mut filter = base.clone();
            if subscribe && !w.uris.is_empty() {
                filter.resource_subscriptions = Some(w.uris.iter().cloned().collect());
            }
            let pause = if filter == SubscriptionFilter::default() {
                self.ack(w.version, Ok(BTreeSet::new()));
                None
            } else {
                match self.listen(filter, w.version, &mut wanted).await {
                    Next::Reopen => continue,
                    Next::Stop => return,
                    Next::Pause => Some(LISTEN_RETRY),
                }
            };
            let wait = async {
                match pause {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.closed.cancelled() => return,
                changed = wanted.changed() => if changed.is_err() { return },
                () = wait => {}
            }
        }
    }

    /// Opens one stream with `filter` and relays what arrives until it ends or the wanted
    /// URIs change.
    async fn listen(
        &self,
        filter: SubscriptionFilter,
        version: u64,
        wanted: &mut watch::Receiver<Wanted>,
    ) -> Next {
        let opened = tokio::select! {
            r = tokio::time::timeout(self.timeout, self.peer.listen(filter)) => r,
            () = self.closed.cancelled() => return Next::Stop,
        };
        let mut subscription = match opened {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(server = %self.server, error = %e, "subscriptions/listen refused");
                self.ack(version, Err(format!("subscriptions/listen failed: {e}")));
                return if self.peer.is_transport_closed() {
                    Next::Stop
                } else {
                    Next::Pause
                };
            }
            Err(_) => {
                self.ack(
                    version,
                    Err(format!(
                        "subscriptions/listen got no acknowledgment within {} ms",
                        self.timeout.as_millis()
                    )),
                );
                return Next::Pause;
            }
        };
        let accepted = subscription
            .acknowledged()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        self.ack(version, Ok(accepted.into_iter().collect()));
        loop {
            tokio::select! {
                next = subscription.next() => match next {
                    Ok(Some(n)) => self.relay(n),
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(server = %self.server, error = %e, "subscriptions/listen stream failed");
                        break;
                    }
                },
                changed = wanted.changed() => {
                    let _ = subscription.cancel().await;
                    return if changed.is_ok() { Next::Reopen } else { Next::Stop };
                }
                () = self.closed.cancelled() => {
                    let _ = subscription.cancel().await;
                    return Next::Stop;
                }
            }
        }
        if self.peer.is_transport_closed() {
            Next::Stop
        } else {
            tracing::debug!(server = %self.server, "subscriptions/listen stream ended; opening it again shortly");
            Next::Pause
        }
    }

    fn relay(&self, notification: ServerNotification) {
        let event = match notification {
            ServerNotification::ResourceUpdatedNotification(n) => {
                McpEvent::ResourceUpdated { uri: n.params.uri }
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                McpEvent::ResourcesListChanged
            }
            ServerNotification::PromptListChangedNotification(_) => McpEvent::PromptsListChanged,
            ServerNotification::ToolListChangedNotification(_) => {
                self.shared.tools_changed();
                return;
            }
            _ => return,
        };
        tracing::debug!(server = %self.server, event = ?event, "subscriptions/listen notification");
        self.shared.emit(event);
    }
}

/// What a stream's end calls for.
enum Next {
    /// The wanted URIs changed: open the stream again now.
    Reopen,
    /// The session or the client is gone.
    Stop,
    /// It failed or ended: open it again after a pause.
    Pause,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wanted_versions_increase() {
        let subs = Subscriptions::default();
        let a = subs.want(BTreeSet::from(["a".to_string()]));
        let b = subs.want(BTreeSet::new());
        assert!(b > a);
        assert!(subs.wanted.borrow().uris.is_empty());
    }
}
