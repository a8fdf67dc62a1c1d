//! Notices passed between replicas through the shared store ([`crate::store`]'s notices):
//! tool-list changes, circuit breakers opened and closed, approvals changed.
//!
//! An MCP server behind the gateway says `notifications/tools/list_changed` on one session:
//! the one that one replica holds. That replica lists the tools again by itself; the relay
//! started here tells the others ([`Notice::ToolsChanged`]), which list that source again too,
//! so that a client connected to any replica hears `tools/list_changed` from it
//! ([`Toolset::watch_tools`]).
//!
//! The relay runs from the first [`Toolset::discover`] (it needs a Tokio runtime) until
//! [`Toolset::close`] or the toolset is dropped. Per source, listings asked for by notices
//! coalesce: a burst of notices while one listing runs makes one more listing, not one each.
//! A source never contacted (a `lazy` source before first use) is not listed because of a
//! notice: its first listing will be fresh anyway.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Inner, Toolset};
use crate::store::{Notice, SharedStore};
use crate::{SourceState, ToolSource};

impl Toolset {
    /// Starts the relay of notices through the shared store, once, if the toolset has a store.
    /// Needs a Tokio runtime (does nothing outside one).
    pub(super) fn start_notices(&self) {
        let Some(store) = self.inner.shared.store.clone() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.inner.notices.get_or_init(|| {
            let stop = CancellationToken::new();
            relay(store, &self.inner, stop.clone());
            Relay(stop)
        });
    }
}

/// The running relay: its tasks stop when this is cancelled or dropped (with the toolset).
pub(super) struct Relay(pub(super) CancellationToken);

impl Drop for Relay {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Spawns the relay's tasks; they end when `stop` is cancelled. The tasks hold the toolset
/// weakly (the relay lives inside it).
fn relay(store: SharedStore, inner: &Arc<Inner>, stop: CancellationToken) {
    let mut listings: HashMap<String, watch::Sender<u64>> = HashMap::new();
    for source in &inner.sources.load().list {
        let Some(mut heard) = source.lifecycle().and_then(|l| l.remote_changes()) else {
            continue;
        };
        let id = source.id().to_string();
        // This replica heard the remote end: tell the others.
        heard.mark_unchanged();
        let (store_, stop_, id_) = (store.clone(), stop.clone(), id.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop_.cancelled() => return,
                    changed = heard.changed() => if changed.is_err() { return },
                }
                store_
                    .publish(&Notice::ToolsChanged {
                        source: id_.clone(),
                    })
                    .await;
            }
        });
        // Another replica heard it: list the source again.
        let (asked, wanted) = watch::channel(0u64);
        tokio::spawn(list_on_notice(Arc::clone(source), wanted, stop.clone()));
        listings.insert(id, asked);
    }
    // State read again from the store: now (what the others did before this replica
    // started), on a notice that it changed, and after the subscription broke. Requests made
    // while one read runs coalesce into one more.
    let (reread, wanted) = watch::channel(Reread::default());
    tokio::spawn(reread_on_notice(
        Arc::downgrade(inner),
        store.clone(),
        wanted,
        stop.clone(),
    ));
    let weak = Arc::downgrade(inner);
    tokio::spawn(store.listen(stop, move |notice| match notice {
        Notice::ToolsChanged { source } => match listings.get(&source) {
            Some(asked) => asked.send_modify(|n| *n += 1),
            None => tracing::debug!(source, "notice for a source this replica does not have"),
        },
        Notice::BreakerOpened { .. } | Notice::BreakerClosed { .. } => {
            if let Some(inner) = weak.upgrade() {
                inner.pipeline.load().breaker_notice(&notice);
            }
        }
        Notice::PinsChanged => reread.send_modify(|r| r.pins += 1),
        Notice::Resync => {
            for asked in listings.values() {
                asked.send_modify(|n| *n += 1);
            }
            reread.send_modify(|r| {
                r.breakers += 1;
                r.pins += 1;
            });
        }
    }));
}

/// How many times each kind of shared state was asked to be read again; [`reread_on_notice`]
/// reads again what moved since it last looked.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Reread {
    breakers: u64,
    pins: u64,
}

/// Reads shared state again from the store once at the start, then each time `wanted` moves.
async fn reread_on_notice(
    inner: Weak<Inner>,
    store: SharedStore,
    mut wanted: watch::Receiver<Reread>,
    stop: CancellationToken,
) {
    // `None`: never read (read everything).
    let mut seen: Option<Reread> = None;
    loop {
        let now = *wanted.borrow_and_update();
        let Some(toolset) = inner.upgrade() else {
            return;
        };
        let work = async {
            if seen.is_none_or(|s| s.breakers != now.breakers) {
                let set = toolset.sources.load();
                let sources = set.list.iter().map(|s| s.id());
                let pipeline = toolset.pipeline.load_full();
                pipeline.reread_breakers(&store, sources).await;
            }
            if seen.is_none_or(|s| s.pins != now.pins)
                && let Some(pins) = &toolset.pins
            {
                pins.reread(&store).await;
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = work => {}
        }
        drop(toolset);
        seen = Some(now);
        tokio::select! {
            () = stop.cancelled() => return,
            changed = wanted.changed() => if changed.is_err() { return },
        }
    }
}

/// Lists `source` again each time `wanted` moves (once for any number of moves during one
/// listing), unless it was never contacted or is closed.
async fn list_on_notice(
    source: Arc<dyn ToolSource>,
    mut wanted: watch::Receiver<u64>,
    stop: CancellationToken,
) {
    let Some(life) = source.lifecycle() else {
        return;
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = wanted.changed() => if changed.is_err() { return },
        }
        wanted.mark_unchanged();
        let state = life.status().state;
        if matches!(state, SourceState::Pending | SourceState::Closed) {
            continue;
        }
        tracing::info!(
            source = source.id(),
            "another replica heard that the tools changed; listing again"
        );
        tokio::select! {
            () = stop.cancelled() => return,
            _ = life.refresh() => {}
        }
    }
}
