//! Change notifications in the 2026-07-28 protocol era: sessions are gone, so a server sends
//! `notifications/tools/list_changed` only on a `subscriptions/listen` stream the client opens
//! (SEP-2567). For a server that negotiated that era and says `tools.listChanged`, one such
//! stream is kept open per session; what arrives on it is handled as the initialize-era
//! notifications are.

use std::sync::Arc;

use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio_util::sync::CancellationToken;

use crate::mcp::handler::Shared;

/// Opens the `subscriptions/listen` stream of a new session when the era and the server's
/// capabilities call for it; the task ends with the session (its transport closes), or when
/// `closed` is cancelled.
pub(super) fn start(
    shared: &Arc<Shared>,
    peer: &Peer<RoleClient>,
    version: &ProtocolVersion,
    closed: CancellationToken,
) {
    if version.has_initialize() {
        return;
    }
    let tools = peer
        .peer_info()
        .and_then(|i| i.capabilities.tools.as_ref().and_then(|t| t.list_changed))
        == Some(true);
    if !tools {
        return;
    }
    let shared = Arc::clone(shared);
    let peer = peer.clone();
    tokio::spawn(async move {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let listen = async {
            let mut subscription = match peer.listen(filter).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(server = %shared.server, error = %e, "subscriptions/listen refused; tool list changes will not be seen");
                    return;
                }
            };
            loop {
                match subscription.next().await {
                    Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                        tracing::debug!(server = %shared.server, "notifications/tools/list_changed (subscriptions/listen)");
                        shared.tools_changed();
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        tracing::debug!(server = %shared.server, end = ?subscription.end(), "subscriptions/listen stream ended");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(server = %shared.server, error = %e, "subscriptions/listen stream failed");
                        return;
                    }
                }
            }
        };
        tokio::select! {
            () = listen => {}
            () = closed.cancelled() => {}
        }
    });
}
