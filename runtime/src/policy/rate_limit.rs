//! The rate limit layer (GCRA, [`governor`]): per tool, per source, per caller.
//!
//! Three buckets, each turned on by its own knob (`N/s`, `N/m` or `N/h`, see
//! [`parse_rate_limit`]):
//!
//! | knob | bucket |
//! | --- | --- |
//! | `rate_limit` (the tool's effective policy) | one per tool |
//! | `caller_rate_limit` (the tool's effective policy) | one per tool and caller (`ctx.caller()`; every anonymous call shares one) |
//! | `source_rate_limit` (the source's policy) | one per source, shared by all of its tools |
//!
//! A limit of `N/period` lets a burst of `N` calls through at once, then one call every
//! `period / N` (GCRA: the bucket refills steadily, it is not a fixed window).
//!
//! The buckets live in the toolset's [`State`], keyed by tool, source and caller, so that a
//! tool's stack built again (a remote tool listed with a new descriptor) keeps its budget.
//!
//! # Order of the checks
//! In memory, governor cannot look at a bucket without taking from it, so the buckets are
//! checked one by one, narrowest first: caller, then tool, then source. A call refused by one
//! bucket takes nothing from the buckets after it: a caller over its own limit never drains the
//! tool's or the source's shared budget, and a tool over its limit never drains its source's. A
//! call refused by the tool or source bucket has used one token of the buckets checked before
//! it.
//!
//! # Shared through a store
//! With a [`SharedStore`](crate::store::SharedStore) (tools.yaml `store.redis`, the `redis`
//! feature) the buckets live in Redis, shared by every replica, and the check is all or none:
//! one Lua script evaluates the same GCRA (burst `N`, a token every `period / N`) for all of the
//! call's buckets at once on Redis' clock, and takes a token of each only when none refuses. A
//! narrower bucket therefore keeps its token when a wider one refuses. The refusal names the
//! narrowest refusing bucket, as in memory. While Redis cannot answer within `timeout_ms`,
//! `store.redis.fail.rate_limits` applies: `closed` refuses the call (retryable `network`,
//! nothing runs), `open` checks this toolset's in-memory buckets instead (see
//! [`crate::store`]).
//!
//! # Errors
//! `rate_limited`, with `retry_after` the earliest time the refusing bucket lets a call through
//! (governor's [`NotUntil`], or the store script's answer), and a message naming the tool and the limit: ``tool `calc`: rate
//! limit 5/s reached; retry in 180 ms``. `details`: `{"tool", "scope": "tool" | "caller" |
//! "source", "limit", "caller"?, "source"?}`. Nothing further runs.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::ops::Add;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, Quota, RateLimiter};
use serde_json::json;
use tower::{Layer, Service};

use toolgate_model::config::{RateLimit, parse_rate_limit};

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ErrorKind, ToolError, ToolFuture, ToolOutput};

/// The caller key of anonymous calls (no caller in the context): they share one bucket.
const ANONYMOUS: &str = "";

/// A keyed limiter drops its idle keys once it holds more than this many.
const MAX_KEYS: usize = 10_000;

/// governor's clock reading tokio's: the same instants as `std::time::Instant` in a running
/// program, and tokio's paused clock in tests.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokioClock;

/// An instant of [`TokioClock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TokioInstant(tokio::time::Instant);

impl Add<Nanos> for TokioInstant {
    type Output = Self;

    fn add(self, other: Nanos) -> Self {
        Self(self.0 + Duration::from(other))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_duration_since(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        Self(self.0.checked_sub(duration.into()).unwrap_or(self.0))
    }
}

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

type Direct = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<TokioInstant>>;
type Keyed =
    RateLimiter<String, DashMapStateStore<String>, TokioClock, NoOpMiddleware<TokioInstant>>;

/// The buckets of one toolset, shared by every tool's stack.
#[derive(Default)]
pub(crate) struct State {
    /// Per tool, by tool name (`rate_limit`).
    tools: Buckets<Direct>,
    /// Per tool, keyed by caller inside (`caller_rate_limit`).
    callers: Buckets<Keyed>,
    /// Per source, by source id (`source_rate_limit`).
    sources: Buckets<Direct>,
}

/// Limiters by name and limit (a name only ever has one limit in one toolset; the limit in the
/// key keeps two configurations from sharing a bucket by accident).
struct Buckets<L>(Mutex<HashMap<(String, u32, Duration), Arc<L>>>);

impl<L> Default for Buckets<L> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<L> Buckets<L> {
    fn get(&self, name: &str, limit: RateLimit, make: impl FnOnce(Quota) -> L) -> Arc<L> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map
            .entry((name.to_string(), limit.calls, limit.per))
            .or_insert_with(|| Arc::new(make(quota(limit))));
        Arc::clone(entry)
    }
}

/// `calls` per `per`: a burst of `calls`, refilled one every `per / calls`.
fn quota(limit: RateLimit) -> Quota {
    let burst = NonZeroU32::new(limit.calls).unwrap_or(NonZeroU32::MIN);
    let period = limit.per / burst.get();
    Quota::with_period(period.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(burst))
        .allow_burst(burst)
}

/// `5/s`, `100/m`, `1000/h` (or `N/<seconds>s` for another period).
fn limit_text(limit: RateLimit) -> String {
    match limit.per.as_secs() {
        1 => format!("{}/s", limit.calls),
        60 => format!("{}/m", limit.calls),
        3600 => format!("{}/h", limit.calls),
        _ => format!("{}/{}s", limit.calls, limit.per.as_secs_f64()),
    }
}

/// One configured bucket: the limiter and what the limit reads like.
struct Bucket<L> {
    limiter: Arc<L>,
    limit: String,
}

/// What the layer checks for one tool.
struct Limits {
    tool: String,
    per_caller: Option<Bucket<Keyed>>,
    per_tool: Option<Bucket<Direct>>,
    per_source: Option<(String, Bucket<Direct>)>,
    /// The same buckets in the shared store, when the toolset has one.
    #[cfg(feature = "redis")]
    shared: Option<SharedBuckets>,
}

/// Which bucket refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Caller,
    Tool,
    Source,
}

/// A tool's buckets in the shared store: their keys (the caller's: the part before the caller)
/// and GCRA parameters.
#[cfg(feature = "redis")]
struct SharedBuckets {
    store: crate::store::SharedStore,
    per_caller: Option<(String, crate::store::Gcra)>,
    per_tool: Option<(String, crate::store::Gcra)>,
    per_source: Option<(String, crate::store::Gcra)>,
}

/// Refuses calls over the tool's, its caller's or its source's rate limit with `rate_limited`.
#[derive(Clone)]
pub(crate) struct RateLimitLayer {
    limits: Arc<Limits>,
}

/// Parses the knob `key` of `tool`'s policy; a value that does not parse (tools.yaml is
/// checked when loaded, so only a policy built in code) is logged and ignored.
fn parsed(tool: &str, key: &str, text: Option<&String>) -> Option<RateLimit> {
    let text = text?;
    match parse_rate_limit(text) {
        Ok(limit) => Some(limit),
        Err(e) => {
            tracing::error!(tool, "policy `{key}` ignored: {e}");
            None
        }
    }
}

/// The layer for a tool, when its policy sets `rate_limit` or `caller_rate_limit`, or its
/// source's policy sets `source_rate_limit`.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<RateLimitLayer> {
    let tool = &inputs.tool.name;
    let source = &inputs.tool.source;
    let state = &inputs.pipeline.shared.rate_limits;
    let tool_limit = parsed(tool, "rate_limit", inputs.policy.rate_limit.as_ref());
    let caller_limit = parsed(
        tool,
        "caller_rate_limit",
        inputs.policy.caller_rate_limit.as_ref(),
    );
    let source_limit = parsed(
        tool,
        "source_rate_limit",
        inputs.source_policy.source_rate_limit.as_ref(),
    );
    #[cfg(feature = "redis")]
    let shared = inputs.pipeline.shared.store.as_ref().map(|store| {
        let bucket = |scope: &str, name: &str, limit: Option<RateLimit>| {
            limit.map(|l| (store.rate_key(scope, l, name), crate::store::Gcra::new(l)))
        };
        SharedBuckets {
            store: store.clone(),
            per_caller: bucket("caller", tool, caller_limit),
            per_tool: bucket("tool", tool, tool_limit),
            per_source: bucket("source", source, source_limit),
        }
    });
    let per_tool = tool_limit.map(|l| Bucket {
        limiter: state.tools.get(tool, l, |q| {
            RateLimiter::new(q, InMemoryState::default(), TokioClock)
        }),
        limit: limit_text(l),
    });
    let per_caller = caller_limit.map(|l| Bucket {
        limiter: state.callers.get(tool, l, |q| {
            RateLimiter::new(q, DashMapStateStore::default(), TokioClock)
        }),
        limit: limit_text(l),
    });
    let per_source = source_limit.map(|l| {
        let bucket = Bucket {
            limiter: state.sources.get(source, l, |q| {
                RateLimiter::new(q, InMemoryState::default(), TokioClock)
            }),
            limit: limit_text(l),
        };
        (source.clone(), bucket)
    });
    if per_tool.is_none() && per_caller.is_none() && per_source.is_none() {
        return None;
    }
    Some(RateLimitLayer {
        limits: Arc::new(Limits {
            tool: tool.clone(),
            per_caller,
            per_tool,
            per_source,
            #[cfg(feature = "redis")]
            shared,
        }),
    })
}

impl Limits {
    /// Takes one token of each bucket, narrowest first (see the module docs); the first
    /// refusal is the call's error.
    fn check(&self, caller: Option<&str>) -> Result<(), ToolError> {
        let wait = |not_until: NotUntil<TokioInstant>| not_until.wait_time_from(TokioClock.now());
        if let Some(b) = &self.per_caller {
            let key = caller.unwrap_or(ANONYMOUS).to_string();
            let result = b.limiter.check_key(&key);
            if b.limiter.len() > MAX_KEYS {
                b.limiter.retain_recent();
            }
            if let Err(not_until) = result {
                return Err(self.refused(Scope::Caller, caller, wait(not_until)));
            }
        }
        if let Some(b) = &self.per_tool
            && let Err(not_until) = b.limiter.check()
        {
            return Err(self.refused(Scope::Tool, caller, wait(not_until)));
        }
        if let Some((_, b)) = &self.per_source
            && let Err(not_until) = b.limiter.check()
        {
            return Err(self.refused(Scope::Source, caller, wait(not_until)));
        }
        Ok(())
    }

    /// Takes one token of every bucket in the shared store, or of none (see the module docs);
    /// the in-memory buckets when the store fails under `fail: open`.
    #[cfg(feature = "redis")]
    async fn check_shared(&self, caller: Option<&str>) -> Result<(), ToolError> {
        use crate::store::{Feature, SharedStore};
        let Some(shared) = &self.shared else {
            return self.check(caller);
        };
        let caller_key = shared.per_caller.as_ref().map(|(base, g)| {
            (
                SharedStore::caller_key(base, caller.unwrap_or(ANONYMOUS)),
                *g,
            )
        });
        let mut buckets = Vec::with_capacity(3);
        let mut scopes = Vec::with_capacity(3);
        if let Some((key, g)) = &caller_key {
            buckets.push((key.as_str(), *g));
            scopes.push(Scope::Caller);
        }
        if let Some((key, g)) = &shared.per_tool {
            buckets.push((key.as_str(), *g));
            scopes.push(Scope::Tool);
        }
        if let Some((key, g)) = &shared.per_source {
            buckets.push((key.as_str(), *g));
            scopes.push(Scope::Source);
        }
        match shared.store.take(&buckets).await {
            Ok(None) => Ok(()),
            Ok(Some((i, wait))) => Err(self.refused(scopes[i], caller, wait)),
            Err(failure) => {
                crate::store::on_failure(&shared.store, Feature::RateLimits, &self.tool, &failure)?;
                self.check(caller)
            }
        }
    }

    fn details(&self, scope: &str, limit: &str) -> serde_json::Value {
        json!({"tool": self.tool, "scope": scope, "limit": limit})
    }

    /// `rate_limited` for this tool: the `scope` bucket was reached, retry after `wait`.
    fn refused(&self, scope: Scope, caller: Option<&str>, wait: Duration) -> ToolError {
        let limit = |b: Option<&String>| b.map(String::as_str).unwrap_or_default().to_string();
        let (what, details) = match scope {
            Scope::Caller => {
                let limit = limit(self.per_caller.as_ref().map(|b| &b.limit));
                let who = match caller {
                    Some(c) => format!("caller `{c}`"),
                    None => "anonymous callers".to_string(),
                };
                let mut details = self.details("caller", &limit);
                details["caller"] = json!(caller);
                (
                    format!("rate limit {limit} per caller ({who}) reached"),
                    details,
                )
            }
            Scope::Tool => {
                let limit = limit(self.per_tool.as_ref().map(|b| &b.limit));
                let details = self.details("tool", &limit);
                (format!("rate limit {limit} reached"), details)
            }
            Scope::Source => {
                let (source, limit) = match &self.per_source {
                    Some((source, b)) => (source.as_str(), b.limit.clone()),
                    None => ("", String::new()),
                };
                let mut details = self.details("source", &limit);
                details["source"] = json!(source);
                (
                    format!(
                        "rate limit {limit} of source `{source}` (shared by its tools) reached"
                    ),
                    details,
                )
            }
        };
        ToolError::new(
            ErrorKind::RateLimited,
            format!(
                "tool `{}`: {what}; retry in {} ms",
                self.tool,
                wait.as_micros().div_ceil(1000)
            ),
        )
        .with_retry_after(wait)
        .with_details(details)
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            limits: Arc::clone(&self.limits),
            inner,
        }
    }
}

/// The service of [`RateLimitLayer`].
#[derive(Clone)]
pub(crate) struct RateLimited<S> {
    limits: Arc<Limits>,
    inner: S,
}

impl<S> Service<Call> for RateLimited<S>
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
        #[cfg(feature = "redis")]
        if self.limits.shared.is_some() {
            // The check waits for the store: the clone that was made ready goes into the
            // future, this service keeps a fresh one (tower's usual pattern).
            let clone = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, clone);
            let limits = Arc::clone(&self.limits);
            return ToolFuture::new(async move {
                if let Err(e) = limits.check_shared(call.ctx.caller()).await {
                    tracing::debug!(tool = %limits.tool, error = %e, "call refused by a rate limit");
                    return Err(e);
                }
                tower::ServiceExt::oneshot(inner, call).await
            });
        }
        match self.limits.check(call.ctx.caller()) {
            Ok(()) => self.inner.call(call),
            Err(e) => {
                tracing::debug!(tool = %self.limits.tool, error = %e, "call refused by a rate limit");
                ToolFuture::err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests;
