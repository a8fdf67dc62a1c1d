//! The validate layer: arguments checked against the tool's input schema (a validator compiled
//! once per tool, kept in its catalog entry); in `lenient` mode coerced first, with `strip` extra keys
//! dropped. What changed is listed in the result's `_meta` under
//! [`COERCIONS_META_KEY`](crate::COERCIONS_META_KEY).
//!
//! # Errors
//! `invalid_arguments` naming every violation by JSON pointer; nothing further runs.

use std::collections::HashMap;
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::call::{Call, CallFuture};
use crate::validate::{ArgumentPolicy, Coercion, ExtraArguments};
use crate::{ToolError, ToolFuture, ToolOutput, ValidationMode};

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
    /// Writes these settings into `config`'s `validation` / `extra_arguments` at each level
    /// (defaults, per source, per tool), replacing what `config` says there: the builder's
    /// calls came last. [`Pipeline::arguments`](super::Pipeline::arguments) reads them back.
    pub fn fold_into(&self, config: &mut toolgate_model::config::PolicyConfig) {
        fn apply(p: &mut toolgate_model::config::ToolPolicy, o: Overrides) {
            if o.mode.is_some() {
                p.validation = o.mode;
            }
            if o.extra.is_some() {
                p.extra_arguments = o.extra;
            }
        }
        apply(&mut config.defaults, self.defaults);
        for (tool, o) in &self.per_tool {
            apply(config.tools.entry(tool.clone()).or_default(), *o);
        }
        for (source, o) in &self.per_source {
            apply(config.sources.entry(source.clone()).or_default(), *o);
        }
    }
}

/// Validates (and in lenient mode coerces) the arguments before the inner service runs, with the
/// validator of the tool's catalog entry (compiled on its first call).
#[derive(Debug, Clone, Copy)]
pub struct ValidateLayer {
    policy: ArgumentPolicy,
}

impl ValidateLayer {
    /// Checks arguments under `policy`.
    pub fn new(policy: ArgumentPolicy) -> Self {
        Self { policy }
    }
}

impl<S> Layer<S> for ValidateLayer {
    type Service = Validate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Validate {
            policy: self.policy,
            inner,
        }
    }
}

/// The service of [`ValidateLayer`].
#[derive(Clone)]
pub struct Validate<S> {
    policy: ArgumentPolicy,
    inner: S,
}

impl<S> Service<Call> for Validate<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: Call) -> CallFuture {
        let args = std::mem::take(&mut call.args);
        let checked = match call.entry.validator() {
            Ok(validator) => validator.check(call.entry.name(), args, self.policy),
            Err(e) => Err(e),
        };
        let checked = match checked {
            Ok(c) => c,
            Err(e) => return ToolFuture::err(e),
        };
        call.args = checked.args;
        let coercions = checked.coercions;
        if coercions.is_empty() {
            return self.inner.call(call);
        }
        log_coercions(call.name(), &coercions);
        self.inner.call(call).map(move |result| {
            result.map(|mut out| {
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
