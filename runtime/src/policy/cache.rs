//! The result cache layer (`moka`): a tool with `cache_ttl_ms` > 0 that is idempotent
//! ([`LayerInputs::idempotent`]: its policy's `idempotent`, else `readOnlyHint` /
//! `idempotentHint`) answers a repeated call from the cache for `cache_ttl_ms` milliseconds.
//! A tool with a TTL that is not idempotent is not cached (a warning, once per tool).
//!
//! # Key
//! The tool's name and version, the caller, and the arguments in canonical form (object keys
//! sorted, [`canonical_json`]; after validation, so coerced arguments share an entry). The
//! caller is part of the key: a result computed for one caller (their files, their account
//! behind the tool's credentials) is never served to another. Anonymous calls (no API keys
//! configured) share entries among themselves.
//!
//! # What is cached
//! Only successful results not flagged `is_error`; errors and `is_error` results always go to
//! the backend again. One cache per toolset, at most [`MAX_ENTRIES`] results, each living its
//! tool's TTL. A hit sets the call's `report.cache_hit` and counts in
//! `toolgate_cache_hits_total{tool}`, a miss in `toolgate_cache_misses_total{tool}`.
//!
//! # Concurrent misses
//! Identical calls (same key) made while the first is running wait for its result instead of
//! calling the backend again (moka's coalescing); each still ends at its own deadline or
//! cancellation.
//!
//! # Shared by replicas
//! With a [`SharedStore`](crate::store::SharedStore) (tools.yaml `store.redis`, the `redis`
//! feature) the cache has a second level in Redis, shared by every replica on the same store and
//! `key_prefix`: the same key (its parts hashed, `{prefix}:cache:{sha256}`), the same results,
//! the same TTL. A miss here first reads Redis: a result found there is a hit (`cache_hit`,
//! `toolgate_cache_hits_total`) and is kept here for the time it has left in Redis; otherwise the
//! backend runs and a result worth caching is written to Redis before the call answers, so that
//! the next identical call on any replica finds it. A write that fails does not fail the call
//! (logged at debug, counted in `toolgate_store_errors_total{feature="cache"}`); results whose
//! JSON is longer than 1 MiB are kept here only. A value in Redis that does not parse is a
//! miss. When Redis does not answer the read, `store.redis.fail.cache` applies: `open` (the
//! default) runs the backend (and caches here only), `closed` refuses the call (retryable
//! `network`). Hits here never wait for Redis.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use metrics::Counter;
use moka::future::Cache;
use serde_json::Value;
use tower::{Layer, Service, ServiceExt};

use super::call::{Call, CallFuture, LayerInputs};
use super::telemetry::{CACHE_HITS_TOTAL, CACHE_MISSES_TOTAL};
use crate::{ToolError, ToolFuture, ToolOutput};

#[cfg(feature = "redis")]
mod shared;

/// The most results one toolset's cache holds; the least recently used go first.
pub const MAX_ENTRIES: u64 = 10_000;

/// What this layer shares across tools and calls: the toolset's cache (made on first use) and
/// the tools already warned about.
#[derive(Default)]
pub(crate) struct State {
    cache: OnceLock<Cache<Key, Entry>>,
    warned: Mutex<HashSet<String>>,
}

impl State {
    fn cache(&self) -> &Cache<Key, Entry> {
        self.cache.get_or_init(|| {
            Cache::builder()
                .max_capacity(MAX_ENTRIES)
                .expire_after(PerEntryTtl)
                .build()
        })
    }
}

/// The layer for a tool, when its policy has a `cache_ttl_ms` > 0 and the tool is idempotent.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<CacheLayer> {
    let ms = inputs.policy.cache_ttl_ms.filter(|ms| *ms > 0)?;
    let tool = &inputs.tool.name;
    if !inputs.idempotent() {
        let state = &inputs.pipeline.shared.cache;
        if state
            .warned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tool.clone())
        {
            tracing::warn!(
                tool = %tool,
                cache_ttl_ms = ms,
                "`cache_ttl_ms` is set but the tool is not idempotent (no readOnlyHint / idempotentHint, \
                 no `idempotent: true` in its policy): its results are not cached"
            );
        }
        return None;
    }
    Some(CacheLayer {
        cache: inputs.pipeline.shared.cache.cache().clone(),
        ttl: Duration::from_millis(ms),
        timeout: inputs.pipeline.timeout(inputs.tool),
        hits: metrics::counter!(CACHE_HITS_TOTAL, "tool" => tool.clone()),
        misses: metrics::counter!(CACHE_MISSES_TOTAL, "tool" => tool.clone()),
        #[cfg(feature = "redis")]
        store: inputs.pipeline.shared.store.clone(),
    })
}

/// A cache key: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    tool: String,
    version: Option<String>,
    caller: Option<String>,
    args: String,
}

impl Key {
    fn of(call: &Call) -> Self {
        Self {
            tool: call.name().to_string(),
            version: call.tool().version.clone(),
            caller: call.ctx.caller().map(str::to_owned),
            args: canonical_json(&call.args),
        }
    }
}

/// A cached result and how long it lives.
#[derive(Clone)]
struct Entry {
    output: Arc<ToolOutput>,
    ttl: Duration,
    /// Read from the shared store (another replica computed it): a hit even for the call that
    /// put it here.
    from_shared: bool,
}

/// Runs the call on `inner`: a result worth caching as an [`Entry`] living `ttl`.
async fn run_backend<S>(inner: S, call: Call, ttl: Duration) -> Result<Entry, NotStored>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    match inner.oneshot(call).await {
        Ok(out) if out.is_error => Err(NotStored::ToolError(out)),
        Ok(out) => Ok(Entry {
            output: Arc::new(out),
            ttl,
            from_shared: false,
        }),
        Err(e) => Err(NotStored::Failed(e)),
    }
}

/// Each entry expires its tool's TTL after it was stored.
struct PerEntryTtl;

impl moka::Expiry<Key, Entry> for PerEntryTtl {
    fn expire_after_create(&self, _: &Key, value: &Entry, _: Instant) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// Why a result was not stored.
#[derive(Clone)]
enum NotStored {
    /// The call failed.
    Failed(ToolError),
    /// The result is flagged `is_error`.
    ToolError(ToolOutput),
}

/// `value` as compact JSON with every object's keys sorted (byte order), so that arguments equal
/// as JSON values give the same text whatever order their keys came in.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        // null, booleans and numbers: serde_json's own compact text.
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    // Serializing a string cannot fail; the fallback never runs.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Answers repeated calls of an idempotent tool from the cache (see the module docs).
#[derive(Clone)]
pub(crate) struct CacheLayer {
    cache: Cache<Key, Entry>,
    ttl: Duration,
    /// The tool's timeout: a call waiting for an identical one's result still ends by it.
    timeout: Option<Duration>,
    hits: Counter,
    misses: Counter,
    /// The second level, when the toolset shares a store.
    #[cfg(feature = "redis")]
    store: Option<crate::store::SharedStore>,
}

impl<S> Layer<S> for CacheLayer {
    type Service = CacheService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CacheService {
            layer: self.clone(),
            inner,
        }
    }
}

/// The service of [`CacheLayer`].
#[derive(Clone)]
pub(crate) struct CacheService<S> {
    layer: CacheLayer,
    inner: S,
}

impl<S> Service<Call> for CacheService<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>
        + Clone
        + Send
        + 'static,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let key = Key::of(&call);
        let layer = self.layer.clone();
        // The service that was made ready runs the call; a ready clone stays for the next one.
        let ready_clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, ready_clone);
        let report = call.report.clone();
        let tool = call.name().to_string();
        let cancel = call.ctx.cancellation().clone();
        let started = Instant::now();
        let deadline = match (call.ctx.deadline(), layer.timeout) {
            (Some(d), Some(t)) => Some(d.min(started + t)),
            (d, t) => d.or_else(|| t.map(|t| started + t)),
        };
        let ttl = layer.ttl;
        #[cfg(feature = "redis")]
        let level2 = layer
            .store
            .as_ref()
            .map(|store| shared::Level2::new(store, &key, &tool));
        let load = async move {
            #[cfg(feature = "redis")]
            if let Some(level2) = level2 {
                return level2.load(inner, call, ttl).await;
            }
            run_backend(inner, call, ttl).await
        };
        ToolFuture::new(async move {
            let lookup = layer.cache.entry(key).or_try_insert_with(load);
            // The caller's own bounds, for a call that waits for an identical one's result (the
            // call that runs the backend is bounded by the timeout layer below as well).
            let found = tokio::select! {
                biased;
                r = lookup => r,
                () = cancel.cancelled() => return Err(ToolError::cancelled(&tool)),
                () = sleep_until(deadline) => {
                    return Err(ToolError::timeout(&tool, deadline.map_or(Duration::ZERO, |d| d - started)));
                }
            };
            match found {
                Ok(entry) => {
                    // Put here by this call: a miss, unless read from the shared store.
                    let fresh = entry.is_fresh();
                    let entry = entry.into_value();
                    if fresh && !entry.from_shared {
                        layer.misses.increment(1);
                    } else {
                        layer.hits.increment(1);
                        if let Some(r) = &report {
                            r.cache_hit.store(true, Ordering::Relaxed);
                        }
                    }
                    Ok(Arc::unwrap_or_clone(entry.output))
                }
                Err(not_stored) => {
                    layer.misses.increment(1);
                    match Arc::unwrap_or_clone(not_stored) {
                        NotStored::Failed(e) => Err(e),
                        NotStored::ToolError(out) => Ok(out),
                    }
                }
            }
        })
    }
}

/// Sleeps until `deadline` (on tokio's clock, so that a paused test clock drives it); forever
/// without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep(d.saturating_duration_since(Instant::now())).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
