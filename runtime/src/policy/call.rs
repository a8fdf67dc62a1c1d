//! What every layer of the pipeline shares: the [`Call`] on its way through, the
//! [`CallReport`] the layers fill in, the [`CallFuture`] they return, and [`LayerInputs`], what a
//! layer's constructor reads. Nothing here depends on a layer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use toolgate_model::config::ToolPolicy;
use tower::{Service, ServiceExt};

use crate::catalog::ToolEntry;
use crate::{
    SourceTool, ToolContext, ToolDescriptor, ToolError, ToolFuture, ToolOutput, ToolSource,
};

/// One tool call on its way through the pipeline.
pub struct Call {
    /// The tool's catalog entry: its descriptor, source, key and settled policy.
    pub entry: Arc<ToolEntry>,
    /// The arguments (validated and possibly coerced once past the validate layer).
    pub args: Value,
    /// The call's context: identity, deadline, cancellation, progress.
    pub ctx: ToolContext,
    /// What the call went through, for telemetry: present when a layer of the tool's stack
    /// fills it in (retries, cache, budget), `None` otherwise (nothing allocated).
    pub report: Option<Arc<CallReport>>,
    /// What was left of the caller's deadline when the call started (timeout messages).
    pub caller_left: Option<Duration>,
    /// Whether someone else may cancel the context's token (a `select!` is needed).
    pub watch_cancel: bool,
}

impl Call {
    /// A call of `tool`, offered by `source`, with `args` under `ctx`, and a report: what a
    /// layer gets (for running a layer alone, in tests of your own layers). The source gets the
    /// tool's name as its key.
    pub fn new(
        tool: Arc<ToolDescriptor>,
        source: Arc<dyn ToolSource>,
        args: Value,
        ctx: ToolContext,
    ) -> Self {
        let key: Arc<str> = tool.name.as_str().into();
        Self {
            entry: Arc::new(ToolEntry::new(SourceTool::named(tool, key), source)),
            args,
            ctx,
            report: Some(Arc::default()),
            caller_left: None,
            watch_cancel: false,
        }
    }

    /// The tool's descriptor.
    pub fn tool(&self) -> &Arc<ToolDescriptor> {
        self.entry.descriptor()
    }

    /// The tool's name inside the toolset.
    pub fn name(&self) -> &str {
        self.entry.name()
    }

    /// The source that runs the tool.
    pub fn source(&self) -> &Arc<dyn ToolSource> {
        self.entry.source()
    }

    /// A copy for another attempt (retries): the arguments are cloned.
    pub fn retry_copy(&self) -> Self {
        Self {
            entry: Arc::clone(&self.entry),
            args: self.args.clone(),
            ctx: self.ctx.clone(),
            report: self.report.clone(),
            caller_left: self.caller_left,
            watch_cancel: self.watch_cancel,
        }
    }

    /// Records one more retry in the report, if there is one.
    pub(crate) fn note_retry(&self) {
        if let Some(r) = &self.report {
            r.retries.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("tool", &self.name())
            .field("source", &self.source().id())
            .finish_non_exhaustive()
    }
}

/// What one call went through, filled in by the layers and read by telemetry.
#[derive(Debug, Default)]
pub struct CallReport {
    /// How many times the call was tried again.
    pub retries: AtomicU32,
    /// The result came from the cache.
    pub cache_hit: AtomicBool,
    /// What the call cost, in millionths of the budget's unit.
    pub cost_micros: AtomicU64,
}

impl CallReport {
    /// Retries so far.
    pub fn retries(&self) -> u32 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Whether the result came from the cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit.load(Ordering::Relaxed)
    }
}

/// The future every layer returns: ready at once (a refusal, a synchronous tool) or boxed.
pub type CallFuture = ToolFuture<'static>;

/// A tool's whole stack of layers, type-erased and shared: what its catalog entry keeps.
///
/// Implemented for every cloneable tower service over [`Call`]: a call clones the stack (its
/// layers hold `Arc`s: no allocation), asks it to be ready and calls it.
pub trait CallStack: Send + Sync {
    /// Runs `call` through the stack.
    fn call(&self, call: Call) -> CallFuture;
}

impl<S> CallStack for S
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>
        + Clone
        + Send
        + Sync
        + 'static,
{
    fn call(&self, call: Call) -> CallFuture {
        let mut service = self.clone();
        // Spelled out: `service.call(..)` would pick this very method (`&self` comes before
        // tower's `&mut self` in method resolution).
        match Service::poll_ready(
            &mut service,
            &mut Context::from_waker(std::task::Waker::noop()),
        ) {
            Poll::Ready(Ok(())) => Service::call(&mut service, call),
            Poll::Ready(Err(e)) => ToolFuture::err(e),
            Poll::Pending => ToolFuture::new(service.oneshot(call)),
        }
    }
}

/// What a layer's constructor gets: the pipeline (shared state, config), the tool, and its
/// effective policy (tool entry → source entry → defaults) and its source's policy.
pub(crate) struct LayerInputs<'a> {
    pub pipeline: &'a super::Pipeline,
    pub tool: &'a Arc<ToolDescriptor>,
    pub policy: &'a ToolPolicy,
    pub source_policy: &'a ToolPolicy,
}

impl LayerInputs<'_> {
    /// The inputs of `tool` under `pipeline`'s policies.
    pub fn new<'a>(
        pipeline: &'a super::Pipeline,
        tool: &'a Arc<ToolDescriptor>,
        policy: &'a ToolPolicy,
        source_policy: &'a ToolPolicy,
    ) -> LayerInputs<'a> {
        LayerInputs {
            pipeline,
            tool,
            policy,
            source_policy,
        }
    }

    /// Whether the tool may be retried and cached: the policy's `idempotent`, else its
    /// annotations (`readOnlyHint` or `idempotentHint`).
    pub fn idempotent(&self) -> bool {
        self.policy.idempotent.unwrap_or_else(|| {
            let a = &self.tool.annotations;
            a.read_only_hint == Some(true) || a.idempotent_hint == Some(true)
        })
    }
}

/// A layer that may be off: [`Layer`](tower::Layer) of `Maybe` services whose future is a
/// [`CallFuture`] either way (tower's own `option_layer` wraps futures in an `Either`, which the
/// next layer out would have to box).
pub(crate) struct Optional<L>(pub Option<L>);

impl<L, S> tower::Layer<S> for Optional<L>
where
    L: tower::Layer<S>,
{
    type Service = Maybe<L::Service, S>;

    fn layer(&self, inner: S) -> Self::Service {
        match &self.0 {
            Some(layer) => Maybe::On(layer.layer(inner)),
            None => Maybe::Off(inner),
        }
    }
}

/// The service of [`Optional`]: the layer's, or the inner one when the layer is off.
#[derive(Clone)]
pub(crate) enum Maybe<A, B> {
    On(A),
    Off(B),
}

impl<A, B> Service<Call> for Maybe<A, B>
where
    A: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
    B: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        match self {
            Self::On(a) => a.poll_ready(cx),
            Self::Off(b) => b.poll_ready(cx),
        }
    }

    fn call(&mut self, call: Call) -> CallFuture {
        match self {
            Self::On(a) => a.call(call),
            Self::Off(b) => b.call(call),
        }
    }
}
