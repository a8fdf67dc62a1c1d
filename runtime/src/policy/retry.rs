//! The retry layer: retryable errors of idempotent or read-only tools, backoff with jitter,
//! bounded by the deadline.
//!
//! On only for a tool whose effective `retries` is at least 1 **and** that may be called twice
//! ([`LayerInputs::idempotent`]: its policy's `idempotent`, else `readOnlyHint` /
//! `idempotentHint`): a tool that may have had an effect is never tried again.
//!
//! A failed attempt is tried again when its error [is retryable](ToolError::is_retryable), at
//! most `retries` times. The waits grow exponentially from `retry_backoff_ms` (default 100 ms,
//! doubling, with up to 100 % jitter, at most 10 s: backon's [`ExponentialBuilder`]); a
//! `retry_after` the error carries is waited at least (an error asking for more than 10 s is not
//! retried). A wait that would pass the call's deadline is not started: the last error is
//! returned at once. Each retry is counted in [`CallReport::retries`](super::CallReport) and
//! logged at info; a result that needed retries says how many in its `_meta` under
//! [`RETRIES_META_KEY`].

use std::task::{Context, Poll};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use tower::{Layer, Service, ServiceExt};

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ToolError, ToolFuture, ToolOutput};

/// The `_meta` key of a result that needed retries: how many (a number).
pub(crate) const RETRIES_META_KEY: &str = "toolgate/retries";

/// The first wait when `retry_backoff_ms` is not set.
const DEFAULT_BACKOFF: Duration = Duration::from_millis(100);

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The layer for a tool, when its policy asks for retries and the tool is idempotent.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<RetryLayer> {
    let retries = inputs.policy.retries.filter(|&r| r > 0)?;
    if !inputs.idempotent() {
        tracing::debug!(
            tool = %inputs.tool.name,
            retries,
            "`retries` ignored: the tool is not idempotent (set `idempotent: true` in its policy if calling it twice is harmless)"
        );
        return None;
    }
    let backoff = inputs
        .policy
        .retry_backoff_ms
        .map_or(DEFAULT_BACKOFF, Duration::from_millis);
    Some(RetryLayer::new(retries, backoff))
}

/// Tries a failed call again (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryLayer {
    retries: u32,
    backoff: Duration,
}

impl RetryLayer {
    /// At most `retries` more attempts, the first wait `backoff` (at least 1 ms).
    pub(crate) fn new(retries: u32, backoff: Duration) -> Self {
        Self {
            retries,
            backoff: backoff.clamp(Duration::from_millis(1), MAX_BACKOFF),
        }
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry {
            layer: *self,
            inner,
        }
    }
}

/// The service of [`RetryLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Retry<S> {
    layer: RetryLayer,
    inner: S,
}

impl<S> Service<Call> for Retry<S>
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
        // The service that was polled ready runs the first attempt; a clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer;
        ToolFuture::new(async move {
            let mut delays = ExponentialBuilder::new()
                .with_min_delay(layer.backoff)
                .with_max_delay(MAX_BACKOFF)
                .with_max_times(layer.retries as usize)
                .with_jitter()
                .build();
            let mut retries = 0u32;
            loop {
                let error = match inner.call(call.retry_copy()).await {
                    Ok(mut out) => {
                        if retries > 0 {
                            out.meta
                                .get_or_insert_with(Default::default)
                                .insert(RETRIES_META_KEY.to_string(), retries.into());
                        }
                        return Ok(out);
                    }
                    Err(e) => e,
                };
                let Some(wait) = next_wait(&error, &mut delays, &call) else {
                    return Err(error);
                };
                retries += 1;
                call.note_retry();
                tracing::info!(
                    tool = %call.name(),
                    attempt = retries + 1,
                    of = layer.retries + 1,
                    kind = %error.kind(),
                    wait_ms = wait.as_millis() as u64,
                    "retrying after a retryable error"
                );
                tokio::time::sleep(wait).await;
                inner.ready().await?;
            }
        })
    }
}

/// How long to wait before trying `call` again after `error`, or `None` to stop: the error is
/// not retryable, no retry is left, it asks for more than [`MAX_BACKOFF`], or the wait would
/// pass the call's deadline.
fn next_wait(
    error: &ToolError,
    delays: &mut impl Iterator<Item = Duration>,
    call: &Call,
) -> Option<Duration> {
    if !error.is_retryable() || call.ctx.is_cancelled() {
        return None;
    }
    let backoff = delays.next()?.min(MAX_BACKOFF);
    let wait = match error.retry_after() {
        Some(after) if after > MAX_BACKOFF => {
            tracing::debug!(tool = %call.name(), retry_after_ms = after.as_millis() as u64, "not retried: the error asks to wait longer than the longest backoff");
            return None;
        }
        Some(after) => backoff.max(after),
        None => backoff,
    };
    if let Some(deadline) = call.ctx.deadline()
        && std::time::Instant::now() + wait >= deadline
    {
        tracing::debug!(tool = %call.name(), wait_ms = wait.as_millis() as u64, "not retried: the next wait would pass the call's deadline");
        return None;
    }
    Some(wait)
}

/// Helpers for the policy layers' unit tests: a call of a stub tool, and an inner service
/// scripted to answer from a list.
#[cfg(test)]
pub(super) mod test_support {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use serde_json::Value;
    use tower::Service;

    use crate::policy::{Call, CallFuture};
    use crate::testing::StubSource;
    use crate::{ToolContext, ToolDescriptor, ToolError, ToolOutput, ToolSource};

    /// A call of tool `tool` (a stub of source `src`) with `args` and a default context.
    pub(crate) fn call_of(tool: &str, args: Value) -> Call {
        call_with(tool, args, ToolContext::default(), None)
    }

    /// [`call_of`] with a context and the tool's annotations set read-only (or not).
    pub(crate) fn call_with(
        tool: &str,
        args: Value,
        ctx: ToolContext,
        read_only: Option<bool>,
    ) -> Call {
        let source = StubSource::new("src").stub(tool, |_| Ok(ToolOutput::text("stub")));
        let mut descriptor = ToolDescriptor::clone(&source.tools()[0].descriptor);
        descriptor.annotations.read_only_hint = read_only;
        Call {
            report: Some(Arc::default()),
            caller_left: None,
            watch_cancel: false,
            ..Call::new(Arc::new(descriptor), Arc::new(source), args, ctx)
        }
    }

    /// An inner service answering each call with the next scripted result (`Ok(())`: a text
    /// result `ok`; past the end: `ok`), counting the calls.
    #[derive(Clone)]
    pub(crate) struct Scripted {
        script: Arc<Mutex<VecDeque<Result<(), ToolError>>>>,
        seen: Arc<AtomicU32>,
    }

    /// A [`Scripted`] service and its call counter.
    pub(crate) fn scripted(script: Vec<Result<(), ToolError>>) -> (Scripted, Arc<AtomicU32>) {
        let seen = Arc::new(AtomicU32::new(0));
        (
            Scripted {
                script: Arc::new(Mutex::new(script.into())),
                seen: Arc::clone(&seen),
            },
            seen,
        )
    }

    impl Service<Call> for Scripted {
        type Response = ToolOutput;
        type Error = ToolError;
        type Future = CallFuture;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Call) -> CallFuture {
            self.seen.fetch_add(1, Ordering::SeqCst);
            let next = self.script.lock().unwrap().pop_front().unwrap_or(Ok(()));
            crate::ToolFuture::ready(next.map(|()| ToolOutput::text("ok")))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use serde_json::json;
    use tower::ServiceExt;

    use super::test_support::{call_of, call_with, scripted};
    use super::*;
    use crate::policy::Pipeline;
    use crate::{ErrorKind, ToolContext};
    use toolgate_model::config::{PolicyConfig, ToolPolicy};

    fn unavailable() -> ToolError {
        ToolError::upstream("HTTP 503").with_retryable(true)
    }

    #[tokio::test(start_paused = true)]
    async fn retries_until_success_and_reports_them() {
        let (inner, seen) = scripted(vec![Err(unavailable()), Err(unavailable())]);
        let call = call_of("t", json!({}));
        let report = call.report.clone().expect("a report");
        let started = tokio::time::Instant::now();
        let out = RetryLayer::new(2, Duration::from_millis(100))
            .layer(inner)
            .oneshot(call)
            .await
            .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 3);
        assert_eq!(report.retries(), 2);
        assert_eq!(out.meta.unwrap()[RETRIES_META_KEY], json!(2));
        // 100 ms then 200 ms, each with up to 100 % jitter.
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_millis(600),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn stops_after_the_configured_retries() {
        let (inner, seen) = scripted(vec![Err(unavailable()); 5]);
        let e = RetryLayer::new(2, Duration::from_millis(10))
            .layer(inner)
            .oneshot(call_of("t", json!({})))
            .await
            .unwrap_err();
        assert_eq!(e.message(), "HTTP 503");
        assert_eq!(seen.load(Ordering::SeqCst), 3, "one call and two retries");
    }

    #[tokio::test(start_paused = true)]
    async fn errors_that_are_not_retryable_are_returned_at_once() {
        let (inner, seen) = scripted(vec![
            Err(ToolError::upstream("HTTP 404")),
            Err(unavailable()),
        ]);
        let e = RetryLayer::new(3, Duration::from_millis(10))
            .layer(inner)
            .oneshot(call_of("t", json!({})))
            .await
            .unwrap_err();
        assert_eq!(e.message(), "HTTP 404");
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured() {
        let (inner, seen) = scripted(vec![Err(ToolError::new(
            ErrorKind::RateLimited,
            "slow down",
        )
        .with_retry_after(Duration::from_secs(3)))]);
        let started = tokio::time::Instant::now();
        RetryLayer::new(1, Duration::from_millis(10))
            .layer(inner)
            .oneshot(call_of("t", json!({})))
            .await
            .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        assert!(
            started.elapsed() >= Duration::from_secs(3),
            "never sooner than retry_after"
        );

        let (inner, seen) = scripted(vec![Err(ToolError::new(
            ErrorKind::RateLimited,
            "slow down",
        )
        .with_retry_after(Duration::from_secs(60)))]);
        RetryLayer::new(1, Duration::from_millis(10))
            .layer(inner)
            .oneshot(call_of("t", json!({})))
            .await
            .unwrap_err();
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "a wait over 10 s is not made"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_deadline_returns_the_last_error_at_once() {
        let (inner, seen) = scripted(vec![Err(unavailable()), Err(unavailable())]);
        let ctx = ToolContext::builder()
            .timeout(Duration::from_millis(50))
            .build();
        let started = tokio::time::Instant::now();
        let e = RetryLayer::new(2, Duration::from_millis(100))
            .layer(inner)
            .oneshot(call_with("t", json!({}), ctx, None))
            .await
            .unwrap_err();
        assert_eq!(e.message(), "HTTP 503");
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert_eq!(started.elapsed(), Duration::ZERO, "no wait was started");
    }

    fn pipeline(policy: ToolPolicy) -> Pipeline {
        Pipeline::new(
            false,
            None,
            PolicyConfig {
                tools: [("t".to_string(), policy)].into(),
                ..Default::default()
            },
        )
    }

    fn layer_for(pipeline: &Pipeline, read_only: Option<bool>) -> Option<RetryLayer> {
        let call = call_with("t", json!({}), ToolContext::default(), read_only);
        let policy = pipeline.config.effective("t", "src");
        let source_policy = pipeline.config.source_policy("src");
        layer(&LayerInputs {
            pipeline,
            tool: call.tool(),
            policy: &policy,
            source_policy: &source_policy,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_that_is_not_idempotent_is_never_retried() {
        let p = pipeline(ToolPolicy {
            retries: Some(3),
            ..Default::default()
        });
        assert!(
            layer_for(&p, None).is_none(),
            "no annotations: not idempotent"
        );
        assert!(layer_for(&p, Some(false)).is_none());
        assert!(layer_for(&p, Some(true)).is_some(), "read-only: retried");
        let p = pipeline(ToolPolicy {
            retries: Some(3),
            idempotent: Some(false),
            ..Default::default()
        });
        assert!(
            layer_for(&p, Some(true)).is_none(),
            "the policy's `idempotent: false` wins"
        );
        let p = pipeline(ToolPolicy {
            retries: Some(3),
            idempotent: Some(true),
            ..Default::default()
        });
        assert!(layer_for(&p, None).is_some());
        let p = pipeline(ToolPolicy {
            retries: Some(0),
            idempotent: Some(true),
            ..Default::default()
        });
        assert!(layer_for(&p, None).is_none(), "`retries: 0`: no layer");

        // Through a whole stack: a POST-like tool failing with a retryable error is called once.
        let source = crate::testing::StubSource::new("src").stub("t", |_| Err(unavailable()));
        let tools = crate::Toolset::builder()
            .source(source.clone())
            .policy(&PolicyConfig {
                tools: [(
                    "t".to_string(),
                    ToolPolicy {
                        retries: Some(3),
                        ..Default::default()
                    },
                )]
                .into(),
                ..Default::default()
            })
            .build()
            .unwrap();
        let e = tools.call("t", json!({})).await.unwrap_err();
        assert_eq!(e.message(), "HTTP 503");
        assert_eq!(source.calls_to("t").len(), 1);
    }
}
