//! The result cache's second level, in the shared store (the `redis` feature): what a miss of
//! the replica's own cache does when the toolset has a [`SharedStore`] (see the parent module's
//! docs, "Shared by replicas").

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tower::Service;

use super::{Entry, Key, NotStored, run_backend};
use crate::policy::call::{Call, CallFuture};
use crate::store::{Feature, SharedStore};
use crate::{ToolError, ToolOutput};

/// What the digest starts with: a new layout of the key or the value gets a new tag, so that
/// replicas of different versions never read each other's entries.
const FORMAT: &[u8] = b"toolgate-cache-v1";

/// SHA-256 (hex) of `key`'s parts, each with its length (and, for the optional ones, whether it
/// is there), so that no two keys' parts can run together into the same bytes.
fn digest(key: &Key) -> String {
    let mut hash = Sha256::new();
    hash.update(FORMAT);
    let mut part = |value: Option<&str>| match value {
        None => hash.update([0u8]),
        Some(text) => {
            hash.update([1u8]);
            hash.update((text.len() as u64).to_be_bytes());
            hash.update(text.as_bytes());
        }
    };
    part(Some(&key.tool));
    part(key.version.as_deref());
    part(key.caller.as_deref());
    part(Some(&key.args));
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// One call's look at the second level: the store and the call's key in it.
pub(super) struct Level2 {
    store: SharedStore,
    key: String,
    tool: String,
}

impl Level2 {
    /// The second level of the call keyed `key` (of tool `tool`) in `store`.
    pub(super) fn new(store: &SharedStore, key: &Key, tool: &str) -> Self {
        Self {
            store: store.clone(),
            key: store.cache_key(&digest(key)),
            tool: tool.to_string(),
        }
    }

    /// The result in the store when there is one (living the time it has left there, at most
    /// `ttl`); else the backend's, written to the store before it is returned when it is worth
    /// caching. A store that does not answer: `store.redis.fail.cache` (open: the backend,
    /// nothing written; closed: refused).
    pub(super) async fn load<S>(
        self,
        inner: S,
        call: Call,
        ttl: Duration,
    ) -> Result<Entry, NotStored>
    where
        S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
    {
        let answered = match self.store.cached(&self.key).await {
            Ok(Some((bytes, left))) => {
                if let Some(output) = self.parse(&bytes) {
                    return Ok(Entry {
                        output: Arc::new(output),
                        ttl: left.min(ttl),
                        from_shared: true,
                    });
                }
                true
            }
            Ok(None) => true,
            Err(failure) => {
                crate::store::on_failure(&self.store, Feature::Cache, &self.tool, &failure)
                    .map_err(NotStored::Failed)?;
                false
            }
        };
        let found = run_backend(inner, call, ttl).await;
        // A store that did not answer the read is not waited for a second time.
        if answered && let Ok(entry) = &found {
            self.write(&entry.output, ttl).await;
        }
        found
    }

    /// `bytes` as a result worth serving; `None` (logged at debug, a miss) for anything else.
    fn parse(&self, bytes: &[u8]) -> Option<ToolOutput> {
        match serde_json::from_slice::<ToolOutput>(bytes) {
            Ok(output) if !output.is_error => Some(output),
            Ok(_) => {
                tracing::debug!(tool = %self.tool, key = %self.key, "shared cache entry is an error result: a miss");
                None
            }
            Err(e) => {
                tracing::debug!(tool = %self.tool, key = %self.key, "shared cache entry does not parse ({e}): a miss");
                None
            }
        }
    }

    /// Writes `output` to the store for `ttl`; a failure is logged at debug (and counted by
    /// the store), the call goes on.
    async fn write(&self, output: &ToolOutput, ttl: Duration) {
        let bytes = match serde_json::to_vec(output) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::debug!(tool = %self.tool, "result not written to the shared cache: {e}");
                return;
            }
        };
        if let Err(failure) = self.store.store_result(&self.key, &bytes, ttl).await {
            tracing::debug!(
                tool = %self.tool,
                "result not written to the shared cache: shared store (Redis) {failure}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_model::config::RedisStore;

    use super::super::tests::{CACHED, Counting, descriptor, pipeline, run, stack};
    use super::*;

    fn key(tool: &str, version: Option<&str>, caller: Option<&str>, args: &str) -> Key {
        Key {
            tool: tool.into(),
            version: version.map(str::to_owned),
            caller: caller.map(str::to_owned),
            args: args.into(),
        }
    }

    #[test]
    fn the_digest_keeps_the_parts_apart() {
        let base = digest(&key("lookup", Some("1"), Some("alice"), "{}"));
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(base, digest(&key("lookup", Some("1"), Some("alice"), "{}")));
        let others = [
            key("lookup", Some("1"), Some("bob"), "{}"),
            key("lookup", Some("1"), None, "{}"),
            key("lookup", Some("1"), Some(""), "{}"),
            key("lookup", None, Some("alice"), "{}"),
            key("lookup", Some(""), Some("alice"), "{}"),
            key("lookup1", None, Some("alice"), "{}"),
            key("lookup", Some("1a"), Some("lice"), "{}"),
            key("lookup", Some("1"), Some("alice"), "{\"q\":1}"),
        ];
        let mut all: Vec<String> = others.iter().map(digest).collect();
        all.push(base);
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "every key its own digest");
    }

    /// A store on a port nothing listens on, failing `fail` for the cache.
    fn unreachable(fail: &str) -> SharedStore {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let config: RedisStore = serde_json::from_value(json!({
            "url": format!("redis://127.0.0.1:{port}"),
            "timeout_ms": 2000,
            "fail": {"cache": fail},
        }))
        .expect("a store config");
        SharedStore::connect(&config).expect("a store")
    }

    /// Two identical calls through a toolset whose store does not answer, failing `fail`.
    async fn run_with(fail: &str) -> (Counting, Vec<(Result<ToolOutput, ToolError>, bool)>) {
        let mut p = pipeline(CACHED);
        Arc::get_mut(&mut p.shared).expect("not shared yet").store = Some(unreachable(fail));
        let tool = descriptor(true);
        let backend = Counting::default();
        let svc = stack(&p, &tool, &backend).expect("on");
        let mut answers = Vec::new();
        for _ in 0..2 {
            answers.push(run(&svc, &tool, json!({"q": 1}), Some("alice")).await);
        }
        (backend, answers)
    }

    #[tokio::test]
    async fn a_store_that_does_not_answer_fails_open_to_the_backend() {
        let (backend, answers) = run_with("open").await;
        let texts: Vec<_> = answers
            .iter()
            .map(|(r, hit)| (r.as_ref().expect("answers").text_joined(), *hit))
            .collect();
        // The first from the backend, the second from this replica's own cache.
        assert_eq!(
            texts,
            [("call 1".to_string(), false), ("call 1".to_string(), true)]
        );
        assert_eq!(backend.calls(), 1);
    }

    #[tokio::test]
    async fn a_store_that_does_not_answer_refuses_under_fail_closed() {
        let (backend, answers) = run_with("closed").await;
        for (r, hit) in &answers {
            let e = r.as_ref().expect_err("refused");
            assert_eq!(e.kind(), crate::ErrorKind::Network, "{e}");
            assert!(e.is_retryable());
            assert_eq!(e.details().unwrap()["feature"], "cache");
            assert!(!hit);
        }
        assert_eq!(backend.calls(), 0, "nothing ran");
    }

    #[test]
    fn a_result_round_trips_through_its_json() {
        let mut out = ToolOutput::text("hello");
        out.structured = Some(json!({"a": [1, 2], "b": null}));
        let bytes = serde_json::to_vec(&out).unwrap();
        let back: ToolOutput = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, out);
    }
}
