//! The policy pipeline: every call, whatever its source, passes through the same layers.
//!
//! # Order
//!
//! Outermost first; the order is fixed (DESIGN.md, "The path of one call"):
//!
//! ```text
//! telemetry → authorize → validate → budget → rate limit → circuit breaker
//!           → concurrency limit → cache → timeout → retry → backend
//! ```
//!
//! * a refused caller costs nothing and touches no limit (authorize first);
//! * only valid arguments are charged, counted or cached (validate before budget);
//! * a budget is charged before the call, not after (`budget_exceeded` means nothing ran);
//! * a rate-limited call never reaches the breaker, an open breaker takes no concurrency slot;
//! * a cache hit takes no time budget and no retry;
//! * the timeout bounds the whole call, retries included: retries only use what is left of the
//!   deadline.
//!
//! Each stage is a tower [`Layer`](tower::Layer) over [`Call`] (one file each, testable alone with
//! any inner service). A tool's stack is built once, on its first call, with only the layers its
//! effective policy turns on ([`Pipeline::service`]), then reused.

pub(crate) mod arguments;
pub(crate) mod authorize;
mod backend;
mod breaker;
pub(crate) mod budget;
mod cache;
mod concurrency;
mod deadline;
mod fallback;
pub mod pinning;
mod rate_limit;
mod retry;
mod telemetry;
pub(crate) mod validate;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use tower::ServiceBuilder;
use tower::util::BoxCloneSyncService;

use toolgate_model::config::{PolicyConfig, ToolPolicy};

use crate::{BoxFuture, ToolContext, ToolDescriptor, ToolError, ToolOutput, ToolSource};

pub use backend::Backend;
pub use deadline::TimeoutLayer;
pub(crate) use telemetry::record_gauges;
pub use telemetry::{
    CACHE_HITS_TOTAL, CACHE_MISSES_TOTAL, CALL_DURATION_SECONDS, CALLS_TOTAL,
    CIRCUIT_BREAKER_STATE, RATE_LIMITED_TOTAL, SPEND_MICROS_TOTAL, describe_metrics,
};
pub use validate::ValidateLayer;

/// One tool call on its way through the pipeline.
pub struct Call {
    /// The tool.
    pub tool: Arc<ToolDescriptor>,
    /// The source that offers it.
    pub source: Arc<dyn ToolSource>,
    /// The arguments (validated and possibly coerced once past the validate layer).
    pub args: Value,
    /// The call's context: identity, deadline, cancellation, progress.
    pub ctx: ToolContext,
    /// What the call went through, for telemetry.
    pub report: Arc<CallReport>,
    /// What was left of the caller's deadline when the call started (timeout messages).
    pub caller_left: Option<Duration>,
    /// Whether someone else may cancel the context's token (a `select!` is needed).
    pub watch_cancel: bool,
}

impl Call {
    /// A copy for another attempt (retries): the arguments are cloned.
    pub fn retry_copy(&self) -> Self {
        Self {
            tool: Arc::clone(&self.tool),
            source: Arc::clone(&self.source),
            args: self.args.clone(),
            ctx: self.ctx.clone(),
            report: Arc::clone(&self.report),
            caller_left: self.caller_left,
            watch_cancel: self.watch_cancel,
        }
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("tool", &self.tool.name)
            .field("source", &self.tool.source)
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
    pub cost_micros: std::sync::atomic::AtomicU64,
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

/// The future every layer returns.
pub type CallFuture = BoxFuture<'static, Result<ToolOutput, ToolError>>;

/// A tool's whole stack, type-erased.
pub type CallService = BoxCloneSyncService<Call, ToolOutput, ToolError>;

/// The layers of one toolset: the policies read from tools.yaml, the state the layers share
/// (limiters, breakers, budgets, caches), and each tool's built stack.
pub(crate) struct Pipeline {
    pub validation: Option<Arc<validate::Settings>>,
    pub validators: Arc<crate::ValidatorCache>,
    pub default_timeout: Option<Duration>,
    /// The `policy:` section (defaults, per source, per tool, rules).
    pub config: PolicyConfig,
    /// What the layers share across tools and calls.
    pub shared: Shared,
    /// Built stacks by tool name, with the descriptor they were built for (a remote tool
    /// listed again with a new descriptor gets a new stack).
    stacks: RwLock<HashMap<String, (Arc<ToolDescriptor>, CallService)>>,
}

/// State shared by the layers of every tool of a toolset (one toolset's limits never touch
/// another's).
#[derive(Default)]
pub(crate) struct Shared {
    pub rate_limits: rate_limit::State,
    pub concurrency: concurrency::State,
    pub breakers: breaker::State,
    pub budgets: Arc<budget::State>,
    pub cache: cache::State,
}

/// What a layer's constructor gets: the pipeline (shared state, config), the tool, and its
/// effective policy (tool entry → source entry → defaults) and its source's policy.
pub(crate) struct LayerInputs<'a> {
    pub pipeline: &'a Pipeline,
    pub tool: &'a Arc<ToolDescriptor>,
    pub policy: &'a ToolPolicy,
    pub source_policy: &'a ToolPolicy,
}

impl LayerInputs<'_> {
    /// Whether the tool may be retried and cached: the policy's `idempotent`, else its
    /// annotations (`readOnlyHint` or `idempotentHint`).
    pub fn idempotent(&self) -> bool {
        self.policy.idempotent.unwrap_or_else(|| {
            let a = &self.tool.annotations;
            a.read_only_hint == Some(true) || a.idempotent_hint == Some(true)
        })
    }
}

impl Pipeline {
    pub fn new(
        validation: Option<validate::Settings>,
        default_timeout: Option<Duration>,
        config: PolicyConfig,
    ) -> Self {
        Self {
            validation: validation.map(Arc::new),
            validators: Arc::new(crate::ValidatorCache::new()),
            default_timeout,
            config,
            shared: Shared::default(),
            stacks: RwLock::new(HashMap::new()),
        }
    }

    /// The stack of `tool`: built on first use, then reused while the descriptor is the same.
    pub fn service(&self, tool: &Arc<ToolDescriptor>) -> CallService {
        if let Some((d, s)) = self
            .stacks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&tool.name)
            && Arc::ptr_eq(d, tool)
        {
            return s.clone();
        }
        let built = self.build(tool);
        self.stacks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tool.name.clone(), (Arc::clone(tool), built.clone()));
        built
    }

    /// The tool's timeout: its `policy.tools` entry, else its own (`#[tool(timeout_ms)]`, a
    /// remote source's `timeout_ms`), else its source's entry, else the defaults.
    pub(crate) fn timeout(&self, tool: &ToolDescriptor) -> Option<Duration> {
        let entry = |p: Option<&ToolPolicy>| p.and_then(ToolPolicy::timeout);
        entry(self.config.tools.get(&tool.name))
            .or(tool.timeout)
            .or_else(|| entry(self.config.sources.get(&tool.source)))
            .or(self.default_timeout)
    }

    /// For a tool whose source could not list it: its fallback layer over a backend that fails
    /// with `error`. `Err(error)` when its policy has no fallback, or when `identity` may not
    /// call it ([`authorize::allowed_unlisted`]: every rule naming it applies, whatever its
    /// category, tags or `dangerous` mark would have been).
    pub(crate) fn fallback_only(
        &self,
        tool: &Arc<ToolDescriptor>,
        identity: &crate::Identity,
        error: ToolError,
    ) -> Result<CallService, ToolError> {
        if let Err(why) = authorize::allowed_unlisted(&self.config, tool, identity) {
            tracing::debug!(tool = %tool.name, "no fallback for an unlisted tool: {why}");
            return Err(error);
        }
        let policy = self.config.effective(&tool.name, &tool.source);
        let source_policy = self.config.source_policy(&tool.source);
        let inputs = LayerInputs {
            pipeline: self,
            tool,
            policy: &policy,
            source_policy: &source_policy,
        };
        let Some(fallback) = fallback::layer(&inputs) else {
            return Err(error);
        };
        let fails = tower::service_fn(move |_: Call| {
            Box::pin(std::future::ready(Err(error.clone()))) as CallFuture
        });
        Ok(BoxCloneSyncService::new(tower::Layer::layer(
            &fallback, fails,
        )))
    }

    /// Builds the stack in the fixed order (see the module docs), with only the layers the
    /// tool's policy turns on.
    fn build(&self, tool: &Arc<ToolDescriptor>) -> CallService {
        let policy = self.config.effective(&tool.name, &tool.source);
        let source_policy = self.config.source_policy(&tool.source);
        let inputs = LayerInputs {
            pipeline: self,
            tool,
            policy: &policy,
            source_policy: &source_policy,
        };
        let validate = self
            .validation
            .as_ref()
            .map(|v| ValidateLayer::new(Arc::clone(v), Arc::clone(&self.validators)));
        let stack = ServiceBuilder::new()
            .option_layer(fallback::layer(&inputs))
            .option_layer(telemetry::layer(&inputs))
            .option_layer(authorize::layer(&inputs))
            .option_layer(validate)
            .option_layer(arguments::layer(&inputs))
            .option_layer(budget::layer(&inputs))
            .option_layer(rate_limit::layer(&inputs))
            .option_layer(breaker::layer(&inputs))
            .option_layer(concurrency::layer(&inputs))
            .option_layer(cache::layer(&inputs))
            .layer(TimeoutLayer::new(self.timeout(tool)))
            .option_layer(retry::layer(&inputs))
            .service(Backend);
        BoxCloneSyncService::new(stack)
    }
}
