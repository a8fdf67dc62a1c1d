//! The circuit breaker layer: one breaker per source, configured by the source's
//! `circuit_breaker` (see [`CircuitBreakerConfig`]).
//!
//! * **closed**: calls pass; failures are counted. After `failures` consecutive failures, or
//!   (with `error_rate`) when at least `min_calls` calls in the last `window_ms` failed at that
//!   rate or more, the breaker opens.
//! * **open**: calls fail at once with `circuit_open` (nothing is sent), `retry_after` saying
//!   when the probe may go, the message naming the source and why it opened. After `open_ms`:
//! * **half-open**: one call at a time goes through as a probe; success closes the breaker,
//!   failure opens it again for `open_ms`. Other calls meanwhile fail with `circuit_open`.
//!
//! Failures are `network`, `timeout`, `protocol` and retryable `upstream` errors. Other errors
//! (a caller's mistake, a refusal, a cancellation) count neither way; a probe ending in one lets
//! the next call probe instead.
//!
//! With a shared store (the `redis` feature), a breaker that opens or closes here tells the
//! other replicas, whose breakers of the same source follow within the time a pub/sub message
//! takes (see `shared`); calls still decide on this replica's state alone, never waiting for
//! Redis.
//!
//! Why not a crate: `failsafe` (the well-kept one) lets every call through while half-open
//! (not one probe at a time), does not tell how long it stays open (our `retry_after`) nor why it
//! opened, and runs on its own clock rather than tokio's (which paused-clock tests need). The
//! state machine below is small.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::{Layer, Service};

use toolgate_model::config::CircuitBreakerConfig;

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ErrorKind, ToolError, ToolFuture, ToolOutput};

/// The breakers of a toolset, one per source id (created with the first tool of the source
/// whose policy has a `circuit_breaker`).
#[derive(Default)]
pub(crate) struct State {
    breakers: Mutex<HashMap<String, Arc<Breaker>>>,
}

impl State {
    /// The breaker of `source`, created with `config` on first use (sharing its openings
    /// through `store`, when there is one).
    fn breaker(&self, source: &str, config: &CircuitBreakerConfig, store: Store) -> Arc<Breaker> {
        let mut all = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(all.entry(source.to_string()).or_insert_with(|| {
            let mut breaker = Breaker::new(source, config.clone());
            breaker.store = store;
            Arc::new(breaker)
        }))
    }

    /// Every breaker's state, by source id (sorted), for telemetry and status reports.
    pub(crate) fn states(&self) -> Vec<(String, BreakerState)> {
        let all = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let mut states: Vec<_> = all.iter().map(|(k, b)| (k.clone(), b.state())).collect();
        states.sort_by(|a, b| a.0.cmp(&b.0));
        states
    }
}

/// Where a breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Calls pass.
    Closed,
    /// Calls fail with `circuit_open`.
    Open,
    /// One probe call at a time passes.
    HalfOpen,
}

/// A snapshot of one breaker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BreakerState {
    /// Closed, open or half-open. An open breaker whose `open_ms` has passed reads as
    /// half-open (the next call probes).
    pub phase: Phase,
    /// Failures in a row (closed).
    pub consecutive_failures: u32,
    /// Calls and failures in the error-rate window (both 0 without `error_rate`).
    pub window_calls: u32,
    pub window_failures: u32,
    /// How many times the breaker has opened.
    pub opened: u64,
    /// How long until a probe may go (open only).
    pub retry_in: Option<Duration>,
}

/// Where a breaker tells other replicas that it opened or closed (the `redis` feature).
#[cfg(feature = "redis")]
pub(crate) type Store = Option<crate::store::SharedStore>;
/// Without the `redis` feature, nothing.
#[cfg(not(feature = "redis"))]
pub(crate) type Store = ();

/// One source's breaker.
struct Breaker {
    source: String,
    config: CircuitBreakerConfig,
    inner: Mutex<Inner>,
    /// The shared store its openings and closings go to (see `shared`).
    store: Store,
}

struct Inner {
    phase: Current,
    consecutive: u32,
    /// Counts per bucket of `window_ms / BUCKETS` (only with `error_rate`).
    window: VecDeque<Bucket>,
    /// Why it opened last: "3 consecutive failures (last: network: ...)".
    reason: String,
    opened: u64,
}

#[derive(Clone, Copy)]
enum Current {
    Closed,
    Open { until: Instant },
    HalfOpen { probing: bool },
}

#[derive(Clone, Copy)]
struct Bucket {
    start: Instant,
    calls: u32,
    failures: u32,
}

/// The error-rate window is kept as this many buckets (bounded memory whatever the rate).
const BUCKETS: u32 = 10;

/// How a call ended, for the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success,
    Failure,
    /// Counts neither way (a caller's mistake, a refusal, a cancellation).
    Neutral,
}

fn outcome(result: &Result<ToolOutput, ToolError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(e) => match e.kind() {
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::Protocol => Outcome::Failure,
            ErrorKind::Upstream if e.is_retryable() => Outcome::Failure,
            _ => Outcome::Neutral,
        },
    }
}

/// `12.3 s`, `0.4 s`.
fn seconds(d: Duration) -> String {
    format!("{:.1} s", (d.as_millis().div_ceil(100) as f64) / 10.0)
}

impl Breaker {
    fn new(source: &str, config: CircuitBreakerConfig) -> Self {
        Self {
            source: source.to_string(),
            config,
            inner: Mutex::new(Inner {
                phase: Current::Closed,
                consecutive: 0,
                window: VecDeque::new(),
                reason: String::new(),
                opened: 0,
            }),
            store: Store::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open_for(&self) -> Duration {
        Duration::from_millis(self.config.open_ms.max(1))
    }

    fn bucket_len(&self) -> Duration {
        (Duration::from_millis(self.config.window_ms.max(1)) / BUCKETS)
            .max(Duration::from_millis(1))
    }

    /// Lets a call through (`Ok(is_probe)`) or refuses it with `circuit_open`.
    fn admit(&self) -> Result<bool, ToolError> {
        let now = Instant::now();
        let mut inner = self.lock();
        match inner.phase {
            Current::Closed => Ok(false),
            Current::Open { until } if now >= until => {
                inner.phase = Current::HalfOpen { probing: true };
                tracing::info!(source = %self.source, "circuit breaker half-open: letting one probe call through");
                Ok(true)
            }
            Current::HalfOpen { probing: false } => {
                inner.phase = Current::HalfOpen { probing: true };
                Ok(true)
            }
            Current::Open { until } => {
                let left = until - now;
                Err(self.refusal(&inner.reason, left, "retry in"))
            }
            Current::HalfOpen { probing: true } => {
                // A probe is out; its answer decides. Try again shortly.
                let left = self.open_for().min(Duration::from_secs(1));
                Err(self.refusal(&inner.reason, left, "a probe call is in flight; retry in"))
            }
        }
    }

    fn refusal(&self, reason: &str, left: Duration, when: &str) -> ToolError {
        ToolError::new(
            ErrorKind::CircuitOpen,
            format!(
                "source `{}`: circuit open after {reason}; {when} {}",
                self.source,
                seconds(left)
            ),
        )
        .with_retry_after(left)
    }

    /// Records how an admitted call ended.
    fn record(&self, probe: bool, outcome: Outcome, error: Option<&ToolError>) {
        let now = Instant::now();
        let mut inner = self.lock();
        let last = || error.map(ToolError::to_string).unwrap_or_default();
        if probe {
            match outcome {
                Outcome::Success => {
                    inner.phase = Current::Closed;
                    inner.consecutive = 0;
                    inner.window.clear();
                    tracing::info!(source = %self.source, "circuit breaker closed: the probe call succeeded");
                    #[cfg(feature = "redis")]
                    self.share_closed();
                }
                Outcome::Failure => {
                    let reason = format!("the probe call failed (last: {})", last());
                    self.open(&mut inner, now, reason);
                }
                Outcome::Neutral => inner.phase = Current::HalfOpen { probing: false },
            }
            return;
        }
        if !matches!(inner.phase, Current::Closed) || outcome == Outcome::Neutral {
            // A call admitted before the breaker opened ends after: it changes nothing.
            return;
        }
        let failed = outcome == Outcome::Failure;
        inner.consecutive = if failed { inner.consecutive + 1 } else { 0 };
        if let Some(rate) = self.config.error_rate {
            self.count(&mut inner, now, failed);
            let (calls, failures) = totals(&inner.window);
            if failed
                && calls >= self.config.min_calls.max(1)
                && f64::from(failures) >= rate * f64::from(calls)
            {
                let reason = format!(
                    "{failures} failures in the last {calls} calls within {} (error rate {:.0}% ≥ {:.0}%; last: {})",
                    seconds(Duration::from_millis(self.config.window_ms)),
                    100.0 * f64::from(failures) / f64::from(calls),
                    100.0 * rate,
                    last()
                );
                self.open(&mut inner, now, reason);
                return;
            }
        }
        if failed && inner.consecutive >= self.config.failures.max(1) {
            let reason = format!(
                "{} consecutive failures (last: {})",
                inner.consecutive,
                last()
            );
            self.open(&mut inner, now, reason);
        }
    }

    fn open(&self, inner: &mut Inner, now: Instant, reason: String) {
        tracing::warn!(source = %self.source, open_ms = self.config.open_ms, "circuit breaker open: {reason}");
        inner.phase = Current::Open {
            until: now + self.open_for(),
        };
        #[cfg(feature = "redis")]
        self.share_opened(self.open_for(), &reason);
        inner.reason = reason;
        inner.consecutive = 0;
        inner.window.clear();
        inner.opened += 1;
    }

    /// Adds one call to the error-rate window, dropping buckets older than the window.
    fn count(&self, inner: &mut Inner, now: Instant, failed: bool) {
        let len = self.bucket_len();
        let window = len * BUCKETS;
        while inner
            .window
            .front()
            .is_some_and(|b| now.duration_since(b.start) >= window)
        {
            inner.window.pop_front();
        }
        let fresh = inner
            .window
            .back()
            .is_none_or(|b| now.duration_since(b.start) >= len);
        if fresh {
            inner.window.push_back(Bucket {
                start: now,
                calls: 0,
                failures: 0,
            });
        }
        if let Some(b) = inner.window.back_mut() {
            b.calls += 1;
            b.failures += u32::from(failed);
        }
    }

    fn state(&self) -> BreakerState {
        let now = Instant::now();
        let inner = self.lock();
        let (calls, failures) = totals(&inner.window);
        let (phase, retry_in) = match inner.phase {
            Current::Closed => (Phase::Closed, None),
            Current::Open { until } if now >= until => (Phase::HalfOpen, None),
            Current::Open { until } => (Phase::Open, Some(until - now)),
            Current::HalfOpen { .. } => (Phase::HalfOpen, None),
        };
        BreakerState {
            phase,
            consecutive_failures: inner.consecutive,
            window_calls: calls,
            window_failures: failures,
            opened: inner.opened,
            retry_in,
        }
    }
}

fn totals(window: &VecDeque<Bucket>) -> (u32, u32) {
    window
        .iter()
        .fold((0, 0), |(c, f), b| (c + b.calls, f + b.failures))
}

/// A call let through: reported when it ends; a probe dropped unfinished (its caller gone)
/// frees the probe slot.
struct Permit {
    breaker: Arc<Breaker>,
    probe: bool,
    done: bool,
}

impl Permit {
    fn finish(mut self, result: &Result<ToolOutput, ToolError>) {
        self.done = true;
        self.breaker
            .record(self.probe, outcome(result), result.as_ref().err());
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            self.breaker.record(self.probe, Outcome::Neutral, None);
        }
    }
}

/// The layer for a tool, when its source's policy has a `circuit_breaker`.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<BreakerLayer> {
    let config = inputs.source_policy.circuit_breaker.as_ref()?;
    #[cfg(feature = "redis")]
    let store: Store = inputs.pipeline.shared.store.clone();
    #[cfg(not(feature = "redis"))]
    let store: Store = ();
    let breaker = inputs
        .pipeline
        .shared
        .breakers
        .breaker(&inputs.tool.source, config, store);
    Some(BreakerLayer { breaker })
}

/// Guards calls by their source's breaker.
#[derive(Clone)]
pub(crate) struct BreakerLayer {
    breaker: Arc<Breaker>,
}

impl<S> Layer<S> for BreakerLayer {
    type Service = BreakerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BreakerService {
            breaker: Arc::clone(&self.breaker),
            inner,
        }
    }
}

/// The service of [`BreakerLayer`].
#[derive(Clone)]
pub(crate) struct BreakerService<S> {
    breaker: Arc<Breaker>,
    inner: S,
}

impl<S> Service<Call> for BreakerService<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let probe = match self.breaker.admit() {
            Ok(probe) => probe,
            Err(e) => return ToolFuture::err(e),
        };
        let permit = Permit {
            breaker: Arc::clone(&self.breaker),
            probe,
            done: false,
        };
        let inner = self.inner.call(call);
        ToolFuture::new(async move {
            let result = inner.await;
            permit.finish(&result);
            result
        })
    }
}

#[cfg(feature = "redis")]
mod shared;
#[cfg(test)]
mod tests;
