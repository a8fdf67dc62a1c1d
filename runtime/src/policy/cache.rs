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
mod tests {
    use std::sync::atomic::AtomicUsize;

    use serde_json::json;
    use toolgate_model::config::PolicyConfig;

    use super::*;
    use crate::policy::{CallReport, Pipeline};
    use crate::testing::StubSource;
    use crate::{ToolAnnotations, ToolContext, ToolDescriptor, ToolSource};

    /// A backend that counts its calls: `{"fail": true}` fails, `{"flag": true}` answers with an
    /// `is_error` result, anything else answers `call <n>`.
    #[derive(Clone, Default)]
    pub(super) struct Counting {
        calls: Arc<AtomicUsize>,
        delay: Duration,
    }

    impl Counting {
        pub(super) fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl Service<Call> for Counting {
        type Response = ToolOutput;
        type Error = ToolError;
        type Future = CallFuture;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, call: Call) -> CallFuture {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            let delay = self.delay;
            ToolFuture::new(async move {
                tokio::time::sleep(delay).await;
                if call.args["fail"] == json!(true) {
                    return Err(ToolError::upstream("backend failed"));
                }
                let mut out = ToolOutput::text(format!("call {n}"));
                out.is_error = call.args["flag"] == json!(true);
                Ok(out)
            })
        }
    }

    pub(super) fn descriptor(read_only: bool) -> Arc<ToolDescriptor> {
        Arc::new(ToolDescriptor {
            name: "lookup".into(),
            source: "local".into(),
            input_schema: json!({"type": "object"}),
            annotations: ToolAnnotations {
                read_only_hint: Some(read_only),
                ..ToolAnnotations::default()
            },
            ..ToolDescriptor::default()
        })
    }

    pub(super) fn pipeline(json: &str) -> Pipeline {
        let config: PolicyConfig = serde_json::from_str(json).expect("policy JSON");
        Pipeline::new(false, None, config)
    }

    pub(super) fn stack(
        p: &Pipeline,
        tool: &Arc<ToolDescriptor>,
        backend: &Counting,
    ) -> Option<CacheService<Counting>> {
        let policy = p.config.effective(&tool.name, &tool.source);
        let source_policy = p.config.source_policy(&tool.source);
        let inputs = LayerInputs {
            pipeline: p,
            tool,
            policy: &policy,
            source_policy: &source_policy,
        };
        layer(&inputs).map(|l| l.layer(backend.clone()))
    }

    fn call(
        tool: &Arc<ToolDescriptor>,
        args: Value,
        caller: Option<&str>,
    ) -> (Call, Arc<CallReport>) {
        let mut ctx = ToolContext::builder();
        if let Some(c) = caller {
            ctx = ctx.caller(c);
        }
        let report = Arc::new(CallReport::default());
        let call = Call {
            report: Some(Arc::clone(&report)),
            caller_left: None,
            watch_cancel: false,
            ..Call::new(
                Arc::clone(tool),
                Arc::new(StubSource::new(&tool.source)) as Arc<dyn ToolSource>,
                args,
                ctx.build(),
            )
        };
        (call, report)
    }

    pub(super) async fn run(
        svc: &CacheService<Counting>,
        tool: &Arc<ToolDescriptor>,
        args: Value,
        caller: Option<&str>,
    ) -> (Result<ToolOutput, ToolError>, bool) {
        let (c, report) = call(tool, args, caller);
        let r = svc.clone().oneshot(c).await;
        (r, report.cache_hit())
    }

    fn text(r: &Result<ToolOutput, ToolError>) -> String {
        r.as_ref().expect("ok").text_joined()
    }

    pub(super) const CACHED: &str = r#"{"tools": {"lookup": {"cache_ttl_ms": 60000}}}"#;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = json!({"b": 1, "a": {"y": [true, null, {"d": "x", "c": 1.5}], "x": "é\"q"}});
        let b = json!({"a": {"x": "é\"q", "y": [true, null, {"c": 1.5, "d": "x"}]}, "b": 1});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é\"q","y":[true,null,{"c":1.5,"d":"x"}]},"b":1}"#
        );
        // Array order matters; so do values.
        assert_ne!(
            canonical_json(&json!([1, 2])),
            canonical_json(&json!([2, 1]))
        );
        assert_ne!(
            canonical_json(&json!({"a": "1"})),
            canonical_json(&json!({"a": 1}))
        );
    }

    #[test]
    fn off_without_a_ttl_or_for_a_tool_that_is_not_idempotent() {
        let backend = Counting::default();
        assert!(stack(&pipeline("{}"), &descriptor(true), &backend).is_none());
        let zero = pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 0}}}"#);
        assert!(stack(&zero, &descriptor(true), &backend).is_none());
        let p = pipeline(CACHED);
        assert!(stack(&p, &descriptor(false), &backend).is_none());
        // Warned once per tool, however often its stack is built.
        assert!(stack(&p, &descriptor(false), &backend).is_none());
        assert_eq!(p.shared.cache.warned.lock().unwrap().len(), 1);
        // `idempotent: true` in the policy turns it on for a tool without annotations.
        let declared =
            pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 1000, "idempotent": true}}}"#);
        assert!(stack(&declared, &descriptor(false), &backend).is_some());
    }

    #[tokio::test]
    async fn a_repeated_call_is_a_hit_whatever_the_key_order() {
        let p = pipeline(CACHED);
        let tool = descriptor(true);
        let backend = Counting::default();
        let svc = stack(&p, &tool, &backend).expect("on");
        let (first, hit) = run(&svc, &tool, json!({"q": "x", "n": 1}), Some("alice")).await;
        assert_eq!((text(&first), hit), ("call 1".to_string(), false));
        let (second, hit) = run(&svc, &tool, json!({"n": 1, "q": "x"}), Some("alice")).await;
        assert_eq!((text(&second), hit), ("call 1".to_string(), true));
        assert_eq!(backend.calls(), 1);
        // Other arguments: a miss.
        let (other, hit) = run(&svc, &tool, json!({"n": 2, "q": "x"}), Some("alice")).await;
        assert_eq!((text(&other), hit), ("call 2".to_string(), false));
    }

    #[tokio::test]
    async fn callers_do_not_share_entries() {
        let p = pipeline(CACHED);
        let tool = descriptor(true);
        let backend = Counting::default();
        let svc = stack(&p, &tool, &backend).expect("on");
        let args = json!({"q": "x"});
        let _ = run(&svc, &tool, args.clone(), Some("alice")).await;
        let (r, hit) = run(&svc, &tool, args.clone(), Some("bob")).await;
        assert_eq!((text(&r), hit), ("call 2".to_string(), false));
        let (r, hit) = run(&svc, &tool, args, None).await;
        assert_eq!((text(&r), hit), ("call 3".to_string(), false));
    }

    #[tokio::test]
    async fn errors_and_is_error_results_are_not_cached() {
        let p = pipeline(CACHED);
        let tool = descriptor(true);
        let backend = Counting::default();
        let svc = stack(&p, &tool, &backend).expect("on");
        for _ in 0..2 {
            let (r, hit) = run(&svc, &tool, json!({"fail": true}), None).await;
            assert_eq!(r.expect_err("fails").kind(), crate::ErrorKind::Upstream);
            assert!(!hit);
        }
        for _ in 0..2 {
            let (r, hit) = run(&svc, &tool, json!({"flag": true}), None).await;
            assert!(r.expect("answers").is_error && !hit);
        }
        assert_eq!(backend.calls(), 4);
    }

    #[tokio::test]
    async fn an_entry_expires_after_its_ttl() {
        let p = pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 50}}}"#);
        let tool = descriptor(true);
        let backend = Counting::default();
        let svc = stack(&p, &tool, &backend).expect("on");
        let _ = run(&svc, &tool, json!({}), None).await;
        let (_, hit) = run(&svc, &tool, json!({}), None).await;
        assert!(hit);
        // moka reads the real clock: wait for real.
        std::thread::sleep(Duration::from_millis(120));
        let (r, hit) = run(&svc, &tool, json!({}), None).await;
        assert_eq!((text(&r), hit), ("call 2".to_string(), false));
    }

    #[tokio::test]
    async fn identical_concurrent_misses_run_the_backend_once() {
        let p = pipeline(CACHED);
        let tool = descriptor(true);
        let backend = Counting {
            delay: Duration::from_millis(50),
            ..Counting::default()
        };
        let svc = stack(&p, &tool, &backend).expect("on");
        let (a, b) = tokio::join!(
            run(&svc, &tool, json!({"q": 1}), None),
            run(&svc, &tool, json!({"q": 1}), None)
        );
        assert_eq!(text(&a.0), "call 1");
        assert_eq!(text(&b.0), "call 1");
        assert_eq!(backend.calls(), 1);
        assert!(a.1 != b.1, "one ran the backend, the other waited for it");
    }

    #[test]
    fn hits_and_misses_are_counted() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let p = pipeline(CACHED);
                let tool = descriptor(true);
                let backend = Counting::default();
                let svc = stack(&p, &tool, &backend).expect("on");
                for _ in 0..3 {
                    let _ = run(&svc, &tool, json!({}), None).await;
                }
            });
        });
        let text = handle.render();
        assert!(
            text.contains(r#"toolgate_cache_hits_total{tool="lookup"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolgate_cache_misses_total{tool="lookup"} 1"#),
            "{text}"
        );
    }
}
