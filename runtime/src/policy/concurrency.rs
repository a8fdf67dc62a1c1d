//! The concurrency limit layer: per tool (`concurrency`) and per source
//! (`source_concurrency`, read from the source's policy, one limit shared by all its tools).
//!
//! A call over the limit is not refused: it waits for a slot (a [`tokio::sync::Semaphore`]
//! permit, first come first served), and holds its slots until the calls below it (cache,
//! timeout, retries, backend) have finished. The tool's slot is taken first, then the
//! source's: a call waiting for its own tool never holds one of its source's slots meanwhile.
//!
//! The semaphores live in the toolset's [`State`], by tool name and by source id, so that a
//! tool's stack built again keeps counting the calls still running on the old one.
//!
//! # Errors
//! While waiting: `timeout` when the call's deadline (`ctx.deadline()`, the caller's) passes,
//! naming the wait and the limit; `cancelled` when the caller cancels. Nothing further runs
//! then. A tool's own timeout starts only once it has its slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service, ServiceExt};

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ErrorKind, ToolError, ToolFuture, ToolOutput};

/// The semaphores of one toolset, shared by every tool's stack.
#[derive(Default)]
pub(crate) struct State {
    /// By tool name and limit.
    tools: Slots,
    /// By source id and limit.
    sources: Slots,
}

/// Semaphores by name and size.
#[derive(Default)]
struct Slots(Mutex<HashMap<(String, u32), Arc<Semaphore>>>);

impl Slots {
    fn get(&self, name: &str, size: u32) -> Arc<Semaphore> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map
            .entry((name.to_string(), size))
            .or_insert_with(|| Arc::new(Semaphore::new(size as usize)));
        Arc::clone(entry)
    }
}

/// One limit: its semaphore, its size, and what it is called in messages.
struct Limit {
    slots: Arc<Semaphore>,
    size: u32,
    /// `its 2 concurrency slots (policy `concurrency: 2`)`.
    what: String,
}

/// Lets at most `concurrency` calls of the tool and `source_concurrency` calls of its source
/// run at once; the others wait (see the module docs).
#[derive(Clone)]
pub(crate) struct ConcurrencyLayer {
    limits: Arc<Limits>,
}

struct Limits {
    tool: String,
    /// Taken in this order: the tool's, then the source's.
    limits: Vec<Limit>,
}

/// The layer for a tool, when its policy sets `concurrency` or its source's policy sets
/// `source_concurrency` (0 is refused when tools.yaml is loaded; here it counts as 1).
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<ConcurrencyLayer> {
    let state = &inputs.pipeline.shared.concurrency;
    let tool = &inputs.tool.name;
    let source = &inputs.tool.source;
    let mut limits = Vec::new();
    if let Some(n) = inputs.policy.concurrency {
        let size = n.max(1);
        limits.push(Limit {
            slots: state.tools.get(tool, size),
            size,
            what: format!("one of its {size} concurrency slots (policy `concurrency: {n}`)"),
        });
    }
    if let Some(n) = inputs.source_policy.source_concurrency {
        let size = n.max(1);
        limits.push(Limit {
            slots: state.sources.get(source, size),
            size,
            what: format!(
                "one of the {size} concurrency slots of source `{source}` (policy `source_concurrency: {n}`)"
            ),
        });
    }
    (!limits.is_empty()).then(|| ConcurrencyLayer {
        limits: Arc::new(Limits {
            tool: tool.clone(),
            limits,
        }),
    })
}

impl Limits {
    /// Every slot of the call, or why it stopped waiting.
    async fn acquire(&self, call: &Call) -> Result<Vec<OwnedSemaphorePermit>, ToolError> {
        let started = Instant::now();
        let deadline = call.ctx.deadline();
        let cancel = call.ctx.cancellation();
        let mut permits = Vec::with_capacity(self.limits.len());
        for limit in &self.limits {
            if let Ok(p) = Arc::clone(&limit.slots).try_acquire_owned() {
                permits.push(p);
                continue;
            }
            // A relative sleep on tokio's clock (as the timeout layer), so that tokio's paused
            // test clock drives it too.
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let wait = async {
                match left {
                    Some(left) => tokio::time::sleep(left).await,
                    None => std::future::pending().await,
                }
            };
            let permit = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ToolError::cancelled(&self.tool)),
                p = Arc::clone(&limit.slots).acquire_owned() => p,
                () = wait => {
                    let waited = started.elapsed();
                    return Err(ToolError::new(
                        ErrorKind::Timeout,
                        format!(
                            "tool `{}` waited {} ms for {} and its deadline passed before one was free (all {} in use)",
                            self.tool,
                            waited.as_micros().div_ceil(1000),
                            limit.what,
                            limit.size,
                        ),
                    ));
                }
            };
            // Never closed: the semaphores are never closed.
            permits.push(permit.map_err(|e| ToolError::internal(e.to_string()))?);
        }
        Ok(permits)
    }
}

impl<S> Layer<S> for ConcurrencyLayer {
    type Service = ConcurrencyLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ConcurrencyLimited {
            limits: Arc::clone(&self.limits),
            inner,
        }
    }
}

/// The service of [`ConcurrencyLayer`].
#[derive(Clone)]
pub(crate) struct ConcurrencyLimited<S> {
    limits: Arc<Limits>,
    inner: S,
}

impl<S> Service<Call> for ConcurrencyLimited<S>
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
        // The inner service is called only once the slots are held (its `call` may start
        // work: the timeout layer starts the tool's clock there). The clone that was made ready
        // goes into the future; this service keeps a fresh clone (tower's usual pattern).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let limits = Arc::clone(&self.limits);
        ToolFuture::new(async move {
            let permits = limits.acquire(&call).await?;
            let result = inner.oneshot(call).await;
            drop(permits);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::Value;
    use tokio_util::sync::CancellationToken;
    use toolgate_model::config::PolicyConfig;

    use super::*;
    use crate::policy::{CallReport, Pipeline};
    use crate::testing::StubSource;
    use crate::{ToolContext, ToolDescriptor, ToolSource};

    /// A backend that takes `delay` (tokio's clock) and records how many calls run at once.
    #[derive(Clone)]
    struct Slow {
        delay: Duration,
        running: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        calls: Arc<AtomicUsize>,
    }

    impl Slow {
        fn new(delay: Duration) -> Self {
            Self {
                delay,
                running: Arc::default(),
                most: Arc::default(),
                calls: Arc::default(),
            }
        }

        fn most(&self) -> usize {
            self.most.load(Ordering::SeqCst)
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl Service<Call> for Slow {
        type Response = ToolOutput;
        type Error = ToolError;
        type Future = CallFuture;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Call) -> CallFuture {
            let this = self.clone();
            ToolFuture::new(async move {
                this.calls.fetch_add(1, Ordering::SeqCst);
                let now = this.running.fetch_add(1, Ordering::SeqCst) + 1;
                this.most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(this.delay).await;
                this.running.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::text("done"))
            })
        }
    }

    fn descriptor(name: &str, source: &str) -> Arc<ToolDescriptor> {
        Arc::new(ToolDescriptor {
            name: name.into(),
            source: source.into(),
            input_schema: serde_json::json!({"type": "object"}),
            ..ToolDescriptor::default()
        })
    }

    fn pipeline(json: &str) -> Pipeline {
        let config: PolicyConfig = serde_json::from_str(json).expect("policy JSON");
        Pipeline::new(false, None, config)
    }

    fn stack(p: &Pipeline, tool: &Arc<ToolDescriptor>, slow: &Slow) -> ConcurrencyLimited<Slow> {
        let policy = p.config.effective(&tool.name, &tool.source);
        let source_policy = p.config.source_policy(&tool.source);
        let inputs = LayerInputs {
            pipeline: p,
            tool,
            policy: &policy,
            source_policy: &source_policy,
        };
        layer(&inputs).expect("layer on").layer(slow.clone())
    }

    fn call(tool: &Arc<ToolDescriptor>, ctx: ToolContext) -> Call {
        Call {
            report: Some(Arc::new(CallReport::default())),
            caller_left: None,
            watch_cancel: true,
            ..Call::new(
                Arc::clone(tool),
                Arc::new(StubSource::new(&tool.source)) as Arc<dyn ToolSource>,
                Value::Null,
                ctx,
            )
        }
    }

    fn spawn(
        svc: &ConcurrencyLimited<Slow>,
        tool: &Arc<ToolDescriptor>,
        ctx: ToolContext,
    ) -> tokio::task::JoinHandle<Result<ToolOutput, ToolError>> {
        let fut = svc.clone().oneshot(call(tool, ctx));
        tokio::spawn(fut)
    }

    #[test]
    fn off_without_a_limit() {
        let p = pipeline(r#"{"defaults": {"rate_limit": "1/s"}}"#);
        let t = descriptor("a", "local");
        let policy = p.config.effective("a", "local");
        let sp = p.config.source_policy("local");
        let inputs = LayerInputs {
            pipeline: &p,
            tool: &t,
            policy: &policy,
            source_policy: &sp,
        };
        assert!(layer(&inputs).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn calls_over_the_limit_wait_their_turn() {
        let p = pipeline(r#"{"tools": {"a": {"concurrency": 2}}}"#);
        let t = descriptor("a", "local");
        let slow = Slow::new(Duration::from_millis(100));
        let svc = stack(&p, &t, &slow);
        let start = tokio::time::Instant::now();
        let handles: Vec<_> = (0..5)
            .map(|_| spawn(&svc, &t, ToolContext::default()))
            .collect();
        for h in handles {
            assert!(h.await.unwrap().is_ok());
        }
        assert_eq!((slow.calls(), slow.most()), (5, 2));
        // 5 calls, 2 at a time, 100 ms each: three rounds (tokio's paused clock: exact).
        assert_eq!(start.elapsed(), Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_limit_is_shared_by_its_tools() {
        let p = pipeline(r#"{"sources": {"gh": {"source_concurrency": 1}}}"#);
        let (a, b) = (descriptor("gh.a", "gh"), descriptor("gh.b", "gh"));
        let slow = Slow::new(Duration::from_millis(50));
        let (sa, sb) = (stack(&p, &a, &slow), stack(&p, &b, &slow));
        let h = [
            spawn(&sa, &a, ToolContext::default()),
            spawn(&sb, &b, ToolContext::default()),
            spawn(&sa, &a, ToolContext::default()),
        ];
        for h in h {
            assert!(h.await.unwrap().is_ok());
        }
        assert_eq!((slow.calls(), slow.most()), (3, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_deadline_is_a_timeout_naming_the_wait() {
        let p = pipeline(r#"{"tools": {"a": {"concurrency": 1}}}"#);
        let t = descriptor("a", "local");
        let slow = Slow::new(Duration::from_secs(10));
        let svc = stack(&p, &t, &slow);
        let busy = spawn(&svc, &t, ToolContext::default());
        tokio::task::yield_now().await;
        let ctx = ToolContext::builder()
            .timeout(Duration::from_millis(250))
            .build();
        let e = spawn(&svc, &t, ctx).await.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert!(
            e.message().starts_with("tool `a` waited ")
                && e.message().contains(
                    "for one of its 1 concurrency slots (policy `concurrency: 1`) and its deadline passed"
                ),
            "{}",
            e.message()
        );
        // The waiting call never ran.
        assert_eq!(slow.calls(), 1);
        assert!(busy.await.unwrap().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_a_waiting_call_ends_it_and_frees_nothing_it_did_not_hold() {
        let p = pipeline(r#"{"tools": {"a": {"concurrency": 1}}}"#);
        let t = descriptor("a", "local");
        let slow = Slow::new(Duration::from_millis(100));
        let svc = stack(&p, &t, &slow);
        let busy = spawn(&svc, &t, ToolContext::default());
        tokio::task::yield_now().await;
        let token = CancellationToken::new();
        let waiting = spawn(
            &svc,
            &t,
            ToolContext::builder().cancellation(token.clone()).build(),
        );
        let third = spawn(&svc, &t, ToolContext::default());
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
        let e = waiting.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled);
        assert!(busy.await.unwrap().is_ok());
        assert!(third.await.unwrap().is_ok());
        assert_eq!((slow.calls(), slow.most()), (2, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_is_held_until_the_inner_call_ends_even_when_the_caller_goes_away() {
        let p = pipeline(r#"{"tools": {"a": {"concurrency": 1}}}"#);
        let t = descriptor("a", "local");
        let slow = Slow::new(Duration::from_millis(100));
        let svc = stack(&p, &t, &slow);
        let first = spawn(&svc, &t, ToolContext::default());
        tokio::task::yield_now().await;
        let state = &p.shared.concurrency;
        assert_eq!(state.tools.get("a", 1).available_permits(), 0);
        // A caller that drops its future gives its slot back.
        first.abort();
        let _ = first.await;
        assert_eq!(state.tools.get("a", 1).available_permits(), 1);
        assert!(
            spawn(&svc, &t, ToolContext::default())
                .await
                .unwrap()
                .is_ok()
        );
        assert_eq!(state.tools.get("a", 1).available_permits(), 1);
    }

    /// `Toolset::call_many`: results in request order, one failure (an unknown tool, a tool
    /// error, a rate limit) never affecting the others; cancelling the context cancels all.
    #[tokio::test]
    async fn call_many_keeps_order_and_isolates_failures() {
        let stubs = StubSource::new("stubs")
            .stub("echo", |args| Ok(ToolOutput::text(args["x"].to_string())))
            .stub("boom", |_| Err(ToolError::upstream("boom failed")));
        let config: PolicyConfig =
            serde_json::from_str(r#"{"tools": {"echo": {"rate_limit": "3/m"}}}"#).unwrap();
        let tools = crate::Toolset::builder()
            .source(stubs.clone())
            .policy(&config)
            .build()
            .unwrap();
        let calls = vec![
            ("echo".to_string(), serde_json::json!({"x": 1})),
            ("boom".to_string(), serde_json::json!({})),
            ("echo".to_string(), serde_json::json!({"x": 2})),
            ("nope".to_string(), serde_json::json!({})),
            ("echo".to_string(), serde_json::json!({"x": 3})),
            ("echo".to_string(), serde_json::json!({"x": 4})),
        ];
        let results = tools.call_many(calls, ToolContext::default(), 4).await;
        let summary: Vec<String> = results
            .iter()
            .map(|r| match r {
                Ok(out) => out.text_joined(),
                Err(e) => e.kind().to_string(),
            })
            .collect();
        assert_eq!(
            summary,
            ["1", "upstream", "2", "not_found", "3", "rate_limited"]
        );

        // A cancelled context: nothing runs.
        let before = stubs.calls().len();
        let token = CancellationToken::new();
        token.cancel();
        let ctx = ToolContext::builder().cancellation(token).build();
        let results = tools
            .call_many(
                [
                    ("boom".to_string(), Value::Null),
                    ("boom".to_string(), Value::Null),
                ],
                ctx,
                1,
            )
            .await;
        assert!(
            results
                .iter()
                .all(|r| r.as_ref().unwrap_err().kind() == ErrorKind::Cancelled)
        );
        assert_eq!(stubs.calls().len(), before);
    }
}
