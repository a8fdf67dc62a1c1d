//! Circuit breakers in Redis: a breaker that opens on one replica is written as
//! `{prefix}:breaker:{source}` (its reason, expiring when it would half-open) and told the
//! others by a [`Notice::BreakerOpened`]; a probe call that closes it deletes the key and sends
//! [`Notice::BreakerClosed`]. A replica that starts, or whose subscription broke, reads the keys
//! of its sources' breakers ([`SharedStore::open_breaker`]).
//!
//! Calls never wait for Redis here: each replica's breaker decides on its own state (the "short
//! local cache" of the shared one), which the notices keep in step.

use std::sync::LazyLock;
use std::time::Duration;

use ::redis::Script;

use super::{Failure, Feature, Notice, SharedStore, escape};

/// `PTTL` then `GET` of one key, in one round trip: `{ms left, value or false}`.
static PTTL_GET: LazyLock<Script> = LazyLock::new(|| {
    Script::new("return {redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1])}")
});

impl SharedStore {
    /// The key of `source`'s open breaker: `{prefix}:breaker:{source}`.
    pub(crate) fn breaker_key(&self, source: &str) -> String {
        format!("{}:breaker:{}", self.key_prefix(), escape(source))
    }

    /// Records that `source`'s breaker opened here for `open_for` because of `reason`, and
    /// tells the other replicas. A failure is counted (`feature="breakers"`) and logged: the
    /// others then learn it from their own calls.
    pub(crate) async fn breaker_opened(&self, source: &str, open_for: Duration, reason: &str) {
        let open_ms = u64::try_from(open_for.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let mut set = ::redis::cmd("SET");
        set.arg(self.breaker_key(source))
            .arg(reason)
            .arg("PX")
            .arg(open_ms);
        if let Err(failure) = self.query::<()>(&set, Feature::Breakers).await {
            tracing::warn!(
                source,
                "shared store (Redis) {failure}; breaker state not shared"
            );
            return;
        }
        self.publish(&Notice::BreakerOpened {
            source: source.to_string(),
            open_ms,
            reason: reason.to_string(),
        })
        .await;
    }

    /// Records that `source`'s breaker closed here (its probe call succeeded), and tells the
    /// other replicas.
    pub(crate) async fn breaker_closed(&self, source: &str) {
        let mut del = ::redis::cmd("DEL");
        del.arg(self.breaker_key(source));
        if let Err(failure) = self.query::<i64>(&del, Feature::Breakers).await {
            tracing::warn!(
                source,
                "shared store (Redis) {failure}; breaker state not shared"
            );
            return;
        }
        self.publish(&Notice::BreakerClosed {
            source: source.to_string(),
        })
        .await;
    }

    /// Whether another replica holds `source`'s breaker open: for how long still, and why.
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="breakers"`).
    pub(crate) async fn open_breaker(
        &self,
        source: &str,
    ) -> Result<Option<(Duration, String)>, Failure> {
        let key = self.breaker_key(source);
        let (left, reason): (i64, Option<String>) = self
            .run(&PTTL_GET, &[key.as_str()], &[], Feature::Breakers)
            .await?;
        Ok(match (u64::try_from(left), reason) {
            (Ok(ms), Some(reason)) if ms > 0 => Some((Duration::from_millis(ms), reason)),
            _ => None,
        })
    }
}
