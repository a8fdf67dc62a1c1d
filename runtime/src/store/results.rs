//! Cut results shared by the replicas: the full result of a call cut to its source's
//! `max_result_bytes` is written to `{prefix}:result:{SHA-256 of its URI}` for
//! [`RESULT_TTL`], so that `resources/read` of its `toolgate://results/...` URI finds it on
//! any replica, not only the one that made the call. The key holds a digest, not the URI: the
//! URI is what lets a caller read the result, and Redis' key space is listed more widely than
//! its values are read.
//!
//! A write runs beside the call (the caller never waits for Redis); a read is one `GET`. Both
//! are always open: a result that could not be written, or read, is found only on the replica
//! that cut it, as without a store.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{Failure, Feature, SharedStore};
use crate::{ResultSink, ToolOutput};

/// How long a shared cut result is kept: 1 hour. A replica keeps its own (its newest 32 per
/// source) for as long as it runs.
pub const RESULT_TTL: Duration = Duration::from_secs(3600);

/// The longest result (its JSON, in bytes) written to Redis: 16 MiB. A longer one is kept by
/// the replica that cut it only (logged), so that one huge answer does not take a large share
/// of Redis' memory (Redis' own limit for a value is 512 MB) nor hold its connection long.
pub const MAX_SHARED_RESULT_BYTES: usize = 16 << 20;

impl SharedStore {
    /// The key of the cut result `uri`: `{prefix}:result:{sha256(uri), hex}`.
    pub(crate) fn result_key(&self, uri: &str) -> String {
        let digest: String = Sha256::digest(uri.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{}:result:{digest}", self.key_prefix())
    }

    /// What the toolset gives its sources ([`crate::SourceLifecycle::keep_results_in`]): each
    /// cut result is written to the store by a task of its own; without a tokio runtime (never
    /// the case in a call) it is not written.
    pub(crate) fn result_sink(&self) -> ResultSink {
        let store = self.clone();
        Arc::new(move |uri: &str, out: &ToolOutput| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let json = match serde_json::to_vec(out) {
                Ok(json) => json,
                Err(e) => {
                    tracing::warn!(%uri, "cut result not shared: {e}");
                    return;
                }
            };
            let (store, uri) = (store.clone(), uri.to_string());
            runtime.spawn(async move {
                if let Err(failure) = store.share_result(&uri, &json).await {
                    tracing::warn!(%uri, "shared store (Redis) {failure}; the cut result is kept by this replica only");
                }
            });
        })
    }

    /// Writes `json` (a full result) under `uri`'s key for [`RESULT_TTL`]; a result longer
    /// than [`MAX_SHARED_RESULT_BYTES`] is not sent (`Ok`, logged).
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="results"`).
    pub(crate) async fn share_result(&self, uri: &str, json: &[u8]) -> Result<(), Failure> {
        if json.len() > MAX_SHARED_RESULT_BYTES {
            tracing::info!(
                %uri,
                bytes = json.len(),
                max = MAX_SHARED_RESULT_BYTES,
                "cut result not shared: too large (kept by this replica only)"
            );
            return Ok(());
        }
        let mut set = ::redis::cmd("SET");
        set.arg(self.result_key(uri))
            .arg(json)
            .arg("PX")
            .arg(RESULT_TTL.as_millis() as u64);
        self.query::<()>(&set, Feature::Results).await
    }

    /// The full result cut under `uri` on any replica, if the store still holds it; a value
    /// that is not a result (written by something else) is `None`, logged.
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="results"`).
    pub(crate) async fn shared_result(&self, uri: &str) -> Result<Option<ToolOutput>, Failure> {
        let mut get = ::redis::cmd("GET");
        get.arg(self.result_key(uri));
        let json: Option<Vec<u8>> = self.query(&get, Feature::Results).await?;
        Ok(json.and_then(|json| match serde_json::from_slice(&json) {
            Ok(out) => Some(out),
            Err(e) => {
                tracing::warn!(%uri, "the shared store holds something else under the result's key: {e}");
                None
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use toolgate_model::config::RedisStore;

    use super::*;

    fn store() -> SharedStore {
        let config: RedisStore = serde_json::from_value(serde_json::json!({
            "url": "redis://127.0.0.1:1",
            "key_prefix": "tg",
        }))
        .expect("a store config");
        SharedStore::connect(&config).expect("a store")
    }

    #[test]
    fn a_result_key_is_a_digest_of_the_uri_under_the_prefix() {
        let key = store().result_key("toolgate://results/s/abc");
        let digest = key.strip_prefix("tg:result:").expect(&key);
        assert_eq!(digest.len(), 64);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!key.contains("abc"));
        assert_ne!(key, store().result_key("toolgate://results/s/abd"));
    }

    #[tokio::test]
    async fn a_result_over_the_cap_is_not_sent() {
        let big = vec![b' '; MAX_SHARED_RESULT_BYTES + 1];
        assert!(
            store()
                .share_result("toolgate://results/s/x", &big)
                .await
                .is_ok()
        );
    }
}
