//! [`Pipeline`]: one toolset's policies and the state its layers share, and how a tool's stack
//! is built from them ([`Pipeline::settle`]), once, into the tool's catalog entry.

use std::sync::Arc;
use std::time::Duration;

use tower::ServiceBuilder;

use toolgate_model::config::{PolicyConfig, ToolPolicy};

use super::call::{Call, CallFuture, CallStack, LayerInputs, Optional};
use super::{
    arguments, authorize, breaker, budget, cache, concurrency, fallback, guardrails, rate_limit,
    retry, telemetry, validate,
};
use crate::catalog::{Settled, ToolEntry};
use crate::validate::ArgumentPolicy;
use crate::{Identity, ToolDescriptor, ToolError, ToolFuture};

/// The layers of one toolset: the policies read from tools.yaml (with the builder's validation
/// settings folded in), and the state the layers share (limiters, breakers, budgets, caches).
pub(crate) struct Pipeline {
    /// Whether arguments are checked against input schemas.
    pub validate: bool,
    /// The timeout of tools whose policy and descriptor give none.
    pub default_timeout: Option<Duration>,
    /// The `policy:` section (defaults, per source, per tool, rules).
    pub config: PolicyConfig,
    /// The `rego` / `cel` entries of `config.rules`, compiled.
    pub code: super::code::CodeRules,
    /// What the layers share across tools and calls; kept by a reloaded policy
    /// ([`Toolset::reload_policy`](crate::Toolset::reload_policy)), so limits, budgets,
    /// breakers and cached results go on counting.
    pub shared: Arc<Shared>,
    /// The guardrails (`policy.guardrails` and those registered in code), compiled.
    pub guardrails: guardrails::Registry,
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
    /// Where the rate limits and budgets live when several replicas share them
    /// ([`ToolsetBuilder::shared_store`](crate::ToolsetBuilder::shared_store)); `None`: here.
    #[cfg(feature = "redis")]
    pub store: Option<crate::store::SharedStore>,
}

impl Pipeline {
    pub fn new(validate: bool, default_timeout: Option<Duration>, config: PolicyConfig) -> Self {
        Self {
            validate,
            default_timeout,
            config,
            code: super::code::CodeRules::default(),
            shared: Arc::new(Shared::default()),
            guardrails: guardrails::Registry::default(),
        }
    }

    /// What calls of `entry`'s tool run under: its timeout and its layer stack (arguments
    /// checked under [`arguments`](Self::arguments) when the toolset checks them).
    pub(crate) fn settle(&self, entry: &Arc<ToolEntry>) -> Settled {
        let tool = entry.descriptor();
        let policy = self.config.effective(&tool.name, &tool.source);
        let source_policy = self.config.source_policy(&tool.source);
        let inputs = LayerInputs::new(self, tool, &policy, &source_policy);
        let timeout = self.timeout(tool);
        let arguments = self.validate.then(|| self.arguments(tool));
        let (stack, reports) = self.build(&inputs, arguments, timeout);
        Settled {
            timeout,
            stack,
            reports,
        }
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

    /// The timeout of a call to `name` that has to wait for its source's listing first (its
    /// descriptor is not known yet): as [`timeout`](Self::timeout), with the source's own
    /// `call_timeout` in the descriptor's place.
    pub(crate) fn unlisted_timeout(
        &self,
        name: &str,
        source: &str,
        source_timeout: Option<Duration>,
    ) -> Option<Duration> {
        let entry = |p: Option<&ToolPolicy>| p.and_then(ToolPolicy::timeout);
        entry(self.config.tools.get(name))
            .or(source_timeout)
            .or_else(|| entry(self.config.sources.get(source)))
            .or(self.default_timeout)
    }

    /// How the tool's arguments are checked: its `policy.tools` entry, else (for extra keys)
    /// the descriptor's own declaration (`#[tool(extra = "strip")]`), else its source's entry,
    /// else the defaults.
    pub(crate) fn arguments(&self, tool: &ToolDescriptor) -> ArgumentPolicy {
        let none = ToolPolicy::default();
        let t = self.config.tools.get(&tool.name).unwrap_or(&none);
        let s = self.config.sources.get(&tool.source).unwrap_or(&none);
        let d = &self.config.defaults;
        let declared = (!tool.extra_arguments.is_reject()).then_some(tool.extra_arguments);
        ArgumentPolicy {
            mode: t
                .validation
                .or(s.validation)
                .or(d.validation)
                .unwrap_or_default(),
            extra: t
                .extra_arguments
                .or(declared)
                .or(s.extra_arguments)
                .or(d.extra_arguments)
                .unwrap_or_default(),
        }
    }

    /// For a tool whose source could not list it: its fallback layer over a backend that fails
    /// with `error`. `Err(error)` when its policy has no fallback, or when `identity` may not
    /// call it ([`authorize::allowed_unlisted`]: every rule naming it applies, whatever its
    /// category, tags or `dangerous` mark would have been).
    pub(crate) fn fallback_only(
        &self,
        tool: &Arc<ToolDescriptor>,
        identity: &Identity,
        error: ToolError,
    ) -> Result<Box<dyn CallStack>, ToolError> {
        if let Err(why) = authorize::allowed_unlisted(self, tool, identity) {
            tracing::debug!(tool = %tool.name, "no fallback for an unlisted tool: {why}");
            return Err(error);
        }
        let policy = self.config.effective(&tool.name, &tool.source);
        let source_policy = self.config.source_policy(&tool.source);
        let inputs = LayerInputs::new(self, tool, &policy, &source_policy);
        let Some(fallback) = fallback::layer(&inputs) else {
            return Err(error);
        };
        let fails =
            tower::service_fn(move |_: Call| -> CallFuture { ToolFuture::err(error.clone()) });
        Ok(Box::new(tower::Layer::layer(&fallback, fails)))
    }

    /// Builds the stack in the fixed order (see the module docs), with only the layers the
    /// tool's policy turns on; also says whether a layer fills in the call's report.
    fn build(
        &self,
        inputs: &LayerInputs<'_>,
        arguments: Option<ArgumentPolicy>,
        timeout: Option<Duration>,
    ) -> (Box<dyn CallStack>, bool) {
        let budget = budget::layer(inputs);
        let cache = cache::layer(inputs);
        let retry = retry::layer(inputs);
        let (guard_in, guard_out) = guardrails::layers(inputs);
        let reports = budget.is_some() || cache.is_some() || retry.is_some();
        let stack = ServiceBuilder::new()
            .layer(Optional(fallback::layer(inputs)))
            .layer(Optional(telemetry::layer(inputs)))
            .layer(Optional(authorize::layer(inputs)))
            .layer(Optional(guard_in))
            .layer(Optional(arguments.map(validate::ValidateLayer::new)))
            .layer(Optional(arguments::layer(inputs)))
            .layer(Optional(budget))
            .layer(Optional(rate_limit::layer(inputs)))
            .layer(Optional(breaker::layer(inputs)))
            .layer(Optional(concurrency::layer(inputs)))
            .layer(Optional(cache))
            .layer(Optional(guard_out))
            .layer(super::TimeoutLayer::new(timeout))
            .layer(Optional(retry))
            .service(super::Backend);
        (Box::new(stack), reports)
    }
}
