//! Breakers shared by replicas (the `redis` feature): what one replica's breaker does is
//! written to the shared store and told the others ([`crate::store`]'s breakers and notices),
//! whose breakers of the same source follow.
//!
//! * A breaker that opens here (its own failures) records it in Redis and sends
//!   [`Notice::BreakerOpened`]; a replica that hears it opens its breaker of that source for the
//!   time left, its refusals saying that it opened on another replica.
//! * A probe call that succeeds here closes the breaker, deletes the record and sends
//!   [`Notice::BreakerClosed`]; the others close theirs (unless their own probe is out).
//! * A replica that starts, or whose subscription broke, reads the records of its sources.
//!
//! Each replica still probes by itself when its open time ends. All of this runs beside the
//! calls: a call never waits for Redis, and a Redis that is down only means that each replica's
//! breaker learns from its own calls, as without a store.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Breaker, Current};
use crate::policy::Pipeline;
use crate::store::{Notice, SharedStore};

impl Breaker {
    /// Tells the other replicas that this breaker opened for `open_for` (a task of its own:
    /// the call that opened it does not wait).
    pub(super) fn share_opened(&self, open_for: Duration, reason: &str) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (source, reason) = (self.source.clone(), reason.to_string());
        runtime.spawn(async move { store.breaker_opened(&source, open_for, &reason).await });
    }

    /// Tells the other replicas that this breaker closed.
    pub(super) fn share_closed(&self) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let source = self.source.clone();
        runtime.spawn(async move { store.breaker_closed(&source).await });
    }

    /// Opens this breaker for `open_for` from now because another replica's opened (`reason`
    /// is why). A breaker already open for longer, or whose probe call is out, is left as it is.
    pub(super) fn trip_remote(&self, open_for: Duration, reason: &str) {
        let until = Instant::now() + open_for;
        let mut inner = self.lock();
        match inner.phase {
            Current::Open { until: mine } if mine >= until => return,
            Current::HalfOpen { probing: true } => return,
            Current::Open { .. } => {}
            Current::Closed | Current::HalfOpen { probing: false } => inner.opened += 1,
        }
        tracing::warn!(
            source = %self.source,
            open_ms = open_for.as_millis() as u64,
            "circuit breaker open: it opened on another replica after {reason}"
        );
        inner.phase = Current::Open { until };
        inner.reason = format!("{reason} on another replica");
        inner.consecutive = 0;
        inner.window.clear();
    }

    /// Closes this breaker because another replica's probe call succeeded (unless a probe of
    /// this replica's is out: its answer decides here).
    pub(super) fn close_remote(&self) {
        let mut inner = self.lock();
        if matches!(
            inner.phase,
            Current::Open { .. } | Current::HalfOpen { probing: false }
        ) {
            inner.phase = Current::Closed;
            inner.consecutive = 0;
            inner.window.clear();
            tracing::info!(source = %self.source, "circuit breaker closed: a probe call succeeded on another replica");
        }
    }
}

impl Pipeline {
    /// The breaker of `source`, made if no call made it yet; `None` when its policy has no
    /// `circuit_breaker`.
    fn source_breaker(&self, source: &str) -> Option<Arc<Breaker>> {
        let config = self.config.source_policy(source).circuit_breaker?;
        Some(
            self.shared
                .breakers
                .breaker(source, &config, self.shared.store.clone()),
        )
    }

    /// Follows another replica's breaker: [`Notice::BreakerOpened`] opens this replica's
    /// breaker of the source, [`Notice::BreakerClosed`] closes it; other notices do nothing.
    pub(crate) fn breaker_notice(&self, notice: &Notice) {
        match notice {
            Notice::BreakerOpened {
                source,
                open_ms,
                reason,
            } => {
                if let Some(breaker) = self.source_breaker(source) {
                    breaker.trip_remote(Duration::from_millis(*open_ms), reason);
                }
            }
            Notice::BreakerClosed { source } => {
                if let Some(breaker) = self.source_breaker(source) {
                    breaker.close_remote();
                }
            }
            _ => {}
        }
    }

    /// Reads the open breakers of `sources` recorded in `store` (another replica opened them
    /// while this one did not listen) and opens this replica's for the time left.
    pub(crate) async fn reread_breakers<'a>(
        &self,
        store: &SharedStore,
        sources: impl Iterator<Item = &'a str>,
    ) {
        for source in sources {
            let Some(breaker) = self.source_breaker(source) else {
                continue;
            };
            match store.open_breaker(source).await {
                Ok(Some((left, reason))) => breaker.trip_remote(left, &reason),
                Ok(None) => {}
                Err(failure) => {
                    tracing::debug!("breakers: cannot read the shared state: {failure}");
                    return;
                }
            }
        }
    }
}
