//! A call's progress relayed to its MCP client as `notifications/progress` (MCP "Progress"):
//! in the order reported, and all of it before the call's result, so that a client sees its
//! last progress notification on the request's own stream (over streamable HTTP, that stream
//! ends with the result; a later notification would go to another stream or nowhere).
//!
//! The task that sends the notifications starts on the first report: a call that reports
//! nothing (most do not, though clients send a `progressToken` with every call) spawns nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::{mpsc, watch};
use toolgate_runtime::{Progress, ProgressReporter};

/// The longest a result waits for its progress notifications to be sent (a client that reads
/// nothing must not hold a result back).
pub(super) const FLUSH_WITHIN: Duration = Duration::from_secs(1);

/// The progress of one call, for one client's `progressToken`.
pub(super) struct ProgressRelay {
    state: Arc<State>,
}

struct State {
    peer: rmcp::Peer<RoleServer>,
    token: ProgressToken,
    /// The runtime of the request: a report may come from any thread.
    runtime: tokio::runtime::Handle,
    /// The sending task's queue, made on the first report.
    queue: OnceLock<mpsc::UnboundedSender<Progress>>,
    /// Reports queued so far.
    queued: AtomicU64,
    /// Reports sent (or given up on: `u64::MAX` once the client is gone).
    sent: Arc<watch::Sender<u64>>,
}

impl ProgressRelay {
    /// A relay to `peer` for `token`; call it from the request's task (it takes the runtime).
    pub(super) fn new(peer: rmcp::Peer<RoleServer>, token: ProgressToken) -> Self {
        Self {
            state: Arc::new(State {
                peer,
                token,
                runtime: tokio::runtime::Handle::current(),
                queue: OnceLock::new(),
                queued: AtomicU64::new(0),
                sent: Arc::new(watch::channel(0).0),
            }),
        }
    }

    /// The reporter the call's tool gets.
    pub(super) fn reporter(&self) -> ProgressReporter {
        let state = Arc::clone(&self.state);
        ProgressReporter::new(move |p| state.queue(p))
    }

    /// Waits until every report queued so far was sent, for at most `within`.
    pub(super) async fn flush(&self, within: Duration) {
        let queued = self.state.queued.load(Ordering::SeqCst);
        if queued == 0 {
            return;
        }
        let mut sent = self.state.sent.subscribe();
        let _ = tokio::time::timeout(within, sent.wait_for(|s| *s >= queued)).await;
    }
}

impl State {
    fn queue(&self, p: Progress) {
        let queue = self.queue.get_or_init(|| self.start());
        self.queued.fetch_add(1, Ordering::SeqCst);
        if queue.send(p).is_err() {
            self.sent.send_replace(u64::MAX);
        }
    }

    /// Starts the sending task. It holds the peer, the token and the `sent` counter, not the
    /// state: it ends when the last reporter is dropped (its queue closes).
    fn start(&self) -> mpsc::UnboundedSender<Progress> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Progress>();
        let (peer, token, sent) = (
            self.peer.clone(),
            self.token.clone(),
            Arc::clone(&self.sent),
        );
        self.runtime.spawn(async move {
            while let Some(p) = rx.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                param.total = p.total;
                param.message = p.message;
                if peer.notify_progress(param).await.is_err() {
                    sent.send_replace(u64::MAX);
                    return;
                }
                sent.send_modify(|s| *s = s.saturating_add(1));
            }
        });
        tx
    }
}
