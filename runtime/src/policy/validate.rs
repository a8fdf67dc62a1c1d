//! The validate layer: arguments checked against the tool's input schema (a validator compiled
//! once per tool, [`ValidatorCache`]); in `lenient` mode coerced first, with `strip` extra keys
//! dropped. What changed is listed in the result's `_meta` under
//! [`COERCIONS_META_KEY`](crate::COERCIONS_META_KEY).
//!
//! # Errors
//! `invalid_arguments` naming every violation by JSON pointer; nothing further runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::{Call, CallFuture};
use crate::validate::{ArgumentPolicy, Coercion, ExtraArguments};
use crate::{ToolDescriptor, ToolError, ToolOutput, ValidationMode, ValidatorCache};

/// How each tool's arguments are checked: per tool, per source, defaults.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    pub defaults: Overrides,
    pub per_tool: HashMap<String, Overrides>,
    pub per_source: HashMap<String, Overrides>,
}

/// The argument settings of one level (tool, source, defaults); `None` falls through.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Overrides {
    pub mode: Option<ValidationMode>,
    pub extra: Option<ExtraArguments>,
}

impl Settings {
    /// Tool's entry, else the descriptor's own declaration (`#[tool(extra = "strip")]`, extra
    /// keys only), else its source's entry, else the defaults.
    pub fn policy(&self, descriptor: &ToolDescriptor) -> ArgumentPolicy {
        let tool = self
            .per_tool
            .get(&descriptor.name)
            .copied()
            .unwrap_or_default();
        let source = self
            .per_source
            .get(&descriptor.source)
            .copied()
            .unwrap_or_default();
        let declared =
            (!descriptor.extra_arguments.is_reject()).then_some(descriptor.extra_arguments);
        ArgumentPolicy {
            mode: tool
                .mode
                .or(source.mode)
                .or(self.defaults.mode)
                .unwrap_or_default(),
            extra: tool
                .extra
                .or(declared)
                .or(source.extra)
                .or(self.defaults.extra)
                .unwrap_or_default(),
        }
    }
}

/// Validates (and in lenient mode coerces) the arguments before the inner service runs.
#[derive(Clone)]
pub struct ValidateLayer {
    settings: Arc<Settings>,
    validators: Arc<ValidatorCache>,
}

impl ValidateLayer {
    pub(crate) fn new(settings: Arc<Settings>, validators: Arc<ValidatorCache>) -> Self {
        Self {
            settings,
            validators,
        }
    }
}

impl<S> Layer<S> for ValidateLayer {
    type Service = Validate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Validate {
            layer: self.clone(),
            inner,
        }
    }
}

/// The service of [`ValidateLayer`].
#[derive(Clone)]
pub struct Validate<S> {
    layer: ValidateLayer,
    inner: S,
}

impl<S> Service<Call> for Validate<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError>,
    S::Future: Send + 'static,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: Call) -> CallFuture {
        let policy = self.layer.settings.policy(&call.tool);
        let args = std::mem::take(&mut call.args);
        let checked = match self.layer.validators.check(&call.tool, args, policy) {
            Ok(c) => c,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        call.args = checked.args;
        let coercions = checked.coercions;
        if coercions.is_empty() {
            return Box::pin(self.inner.call(call));
        }
        log_coercions(&call.tool.name, &coercions);
        let inner = self.inner.call(call);
        Box::pin(async move {
            inner.await.map(|mut out| {
                let list = serde_json::to_value(&coercions).unwrap_or_default();
                out.meta
                    .get_or_insert_with(Default::default)
                    .insert(crate::COERCIONS_META_KEY.to_string(), list);
                out
            })
        })
    }
}

/// One log line per changed argument: a warning for a stripped key, info for a coercion.
fn log_coercions(tool: &str, coercions: &[Coercion]) {
    for c in coercions {
        // A credential's value (`/password`, `/auth/api_key`) is never logged.
        let secret = c.pointer.split('/').any(crate::redact::is_credential_key);
        let shown = |v: &serde_json::Value| {
            if secret {
                crate::redact::MASK.to_string()
            } else {
                crate::validate::short(&crate::redact::redact_value(v))
            }
        };
        let from = shown(&c.from);
        let to = c.to.as_ref().map(shown);
        match c.kind {
            crate::CoercionKind::Stripped => tracing::warn!(
                tool,
                pointer = %c.pointer,
                value = %from,
                "unknown argument stripped before the call"
            ),
            kind => tracing::info!(
                tool,
                pointer = %c.pointer,
                ?kind,
                from = %from,
                to = %to.as_deref().unwrap_or("(removed)"),
                "argument changed before the call"
            ),
        }
    }
}
