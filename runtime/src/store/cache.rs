//! The result cache's second level in Redis (L2): one string key per cached result,
//! `{prefix}:cache:{digest}` (the digest: SHA-256, hex, of the in-process cache key's parts, see
//! [`crate::policy`]'s cache layer), holding the result as JSON and expiring by itself when the
//! tool's `cache_ttl_ms` ends. A read is one round trip (`PTTL` and `GET` in one script); a
//! write is one `SET ... PX`. Results whose JSON is longer than [`MAX_SHARED_BYTES`] stay in the
//! replica's own cache.

use std::sync::LazyLock;
use std::time::Duration;

use ::redis::Script;

use super::{Failure, Feature, SharedStore};

/// The longest result (its JSON, in bytes) written to Redis: 1 MiB. A longer one is cached by
/// the replica that computed it only (logged at debug), so that one large answer neither
/// takes a large share of Redis' memory nor holds its connection, shared by every call of the
/// replica, for long.
pub(crate) const MAX_SHARED_BYTES: usize = 1024 * 1024;

/// `PTTL` then `GET` of one key, in one round trip: `{ms left, value or false}`.
static PTTL_GET: LazyLock<Script> = LazyLock::new(|| {
    Script::new("return {redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1])}")
});

impl SharedStore {
    /// The key of a cached result: `{prefix}:cache:{digest_hex}`.
    pub(crate) fn cache_key(&self, digest_hex: &str) -> String {
        format!("{}:cache:{digest_hex}", self.key_prefix())
    }

    /// The result stored under `key`, as stored (JSON bytes), and how long it lives still
    /// ([`Duration::MAX`] for a key without an expiry, which toolgate never writes); `None`
    /// when there is none.
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="cache"`).
    pub(crate) async fn cached(&self, key: &str) -> Result<Option<(Vec<u8>, Duration)>, Failure> {
        let (left, value): (i64, Option<Vec<u8>>) =
            self.run(&PTTL_GET, &[key], &[], Feature::Cache).await?;
        Ok(value.and_then(|bytes| match left {
            -1 => Some((bytes, Duration::MAX)),
            ms => u64::try_from(ms)
                .ok()
                .filter(|ms| *ms > 0)
                .map(|ms| (bytes, Duration::from_millis(ms))),
        }))
    }

    /// Stores `bytes` (a result's JSON) under `key` for `ttl` (at least 1 ms). Bytes longer than
    /// [`MAX_SHARED_BYTES`] are not sent (logged at debug): `Ok` without a command.
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="cache"`).
    pub(crate) async fn store_result(
        &self,
        key: &str,
        bytes: &[u8],
        ttl: Duration,
    ) -> Result<(), Failure> {
        if bytes.len() > MAX_SHARED_BYTES {
            tracing::debug!(
                key,
                bytes = bytes.len(),
                max = MAX_SHARED_BYTES,
                "result not written to the shared cache: too large (kept by this replica only)"
            );
            return Ok(());
        }
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut set = ::redis::cmd("SET");
        set.arg(key).arg(bytes).arg("PX").arg(ttl_ms);
        self.query::<()>(&set, Feature::Cache).await
    }
}

#[cfg(test)]
mod tests {
    use toolgate_model::config::RedisStore;

    use super::*;

    /// A store on a port nothing listens on (a command fails at once: connection refused).
    fn unreachable() -> SharedStore {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let config: RedisStore = serde_json::from_value(serde_json::json!({
            "url": format!("redis://127.0.0.1:{port}"),
            "key_prefix": "tg",
            "timeout_ms": 2000,
        }))
        .expect("a store config");
        SharedStore::connect(&config).expect("a store")
    }

    #[test]
    fn a_cache_key_is_under_the_prefix() {
        assert_eq!(unreachable().cache_key("ab12"), "tg:cache:ab12");
    }

    #[tokio::test]
    async fn a_result_over_the_cap_is_not_sent() {
        let store = unreachable();
        let small = store
            .store_result("tg:cache:x", b"{}", Duration::from_secs(1))
            .await;
        assert!(small.is_err(), "a small result is sent (and fails here)");
        let large = vec![b' '; MAX_SHARED_BYTES + 1];
        let r = store
            .store_result("tg:cache:x", &large, Duration::from_secs(1))
            .await;
        assert!(r.is_ok(), "nothing sent: {r:?}");
        let at_cap = vec![b' '; MAX_SHARED_BYTES];
        let r = store
            .store_result("tg:cache:x", &at_cap, Duration::from_secs(1))
            .await;
        assert!(r.is_err(), "the cap itself is sent");
    }
}
