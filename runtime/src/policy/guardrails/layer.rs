//! The two guardrail layers of a tool's stack: arguments on the way in, the result on the way
//! out (see the module docs of [`super`] for where they sit and what they do).

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_model::config::GuardDirection;
use tower::{Layer, Service, ServiceExt};

use super::detect::{Hits, Masker};
use super::{
    Compiled, GUARDRAIL_DENIED_TOTAL, GUARDRAIL_MASKED_TOTAL, GUARDRAIL_MODIFIED_TOTAL,
    GuardrailCall, Verdict, refused,
};
use crate::policy::call::{Call, CallFuture, LayerInputs};
use crate::{Content, ErrorKind, ResourceContents, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The guardrails of one tool, for one direction.
pub(crate) struct Guards {
    tool: Arc<str>,
    source: Arc<str>,
    direction: GuardDirection,
    list: Vec<Arc<Compiled>>,
    /// Some guardrail has to wait (webhook, custom): the check runs in a future.
    waits: bool,
}

/// The layers of a tool: (arguments, result), each `None` when no guardrail acts that way.
pub(crate) fn layers(inputs: &LayerInputs<'_>) -> (Option<GuardLayer>, Option<GuardLayer>) {
    let tool = inputs.tool;
    let all = inputs.pipeline.guardrails.of(
        &tool.name,
        &tool.source,
        inputs.policy.guardrails.as_deref(),
    );
    let make = |direction| {
        Guards::new(&tool.name, &tool.source, direction, &all).map(|guards| GuardLayer {
            guards: Arc::new(guards),
        })
    };
    (
        make(GuardDirection::Arguments),
        make(GuardDirection::Result),
    )
}

/// A guardrail layer (one direction).
#[derive(Clone)]
pub(crate) struct GuardLayer {
    guards: Arc<Guards>,
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Guarded {
            guards: Arc::clone(&self.guards),
            inner,
        }
    }
}

/// The service of [`GuardLayer`].
#[derive(Clone)]
pub(crate) struct Guarded<S> {
    guards: Arc<Guards>,
    inner: S,
}

impl<S> Service<Call> for Guarded<S>
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

    fn call(&mut self, mut call: Call) -> CallFuture {
        let guards = Arc::clone(&self.guards);
        match (guards.direction, guards.waits) {
            (GuardDirection::Arguments, false) => {
                for g in &guards.list {
                    if let Err(e) = guards.arguments_now(g, &mut call.args) {
                        return ToolFuture::err(e);
                    }
                }
                self.inner.call(call)
            }
            (GuardDirection::Arguments, true) => {
                let clone = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, clone);
                ToolFuture::new(async move {
                    guards.check_arguments(&call.ctx, &mut call.args).await?;
                    inner.oneshot(call).await
                })
            }
            (GuardDirection::Result, false) => self.inner.call(call).map(move |result| {
                let mut out = result?;
                for g in &guards.list {
                    guards.result_now(g, &mut out);
                }
                Ok(out)
            }),
            (GuardDirection::Result, true) => {
                let ctx = call.ctx.clone();
                let running = self.inner.call(call);
                ToolFuture::new(async move {
                    let mut out = running.await?;
                    guards.check_result(&ctx, &mut out).await?;
                    Ok(out)
                })
            }
        }
    }
}

/// Every string of a result masked (see the module docs for which).
pub(crate) fn mask_output(m: &Masker, out: &mut ToolOutput, hits: &mut Hits) {
    for part in &mut out.content {
        match part {
            Content::Text { text }
            | Content::Resource {
                resource: ResourceContents::Text { text, .. },
            } => {
                m.mask_string(text, hits);
            }
            _ => {}
        }
    }
    if let Some(s) = &mut out.structured {
        m.mask_value(s, hits);
    }
    if let Some(meta) = &mut out.meta {
        meta.values_mut().for_each(|v| m.mask_value(v, hits));
    }
}

impl Guards {
    /// The guards of tool `tool` of source `source` for `direction`: those of `all` that act
    /// that way, in order; `None` when none does.
    pub(crate) fn new(
        tool: &str,
        source: &str,
        direction: GuardDirection,
        all: &[Arc<Compiled>],
    ) -> Option<Self> {
        let list: Vec<Arc<Compiled>> = all.iter().filter(|g| g.acts(direction)).cloned().collect();
        (!list.is_empty()).then(|| Self {
            tool: tool.into(),
            source: source.into(),
            direction,
            waits: list.iter().any(|g| g.waits(direction)),
            list,
        })
    }

    /// Every guard on `args`, in order (a `direction: arguments` set): deny rules, masks,
    /// webhooks and custom checks.
    ///
    /// # Errors
    /// The refusal of the first guard that refuses (`policy_denied`), or `timeout` when a
    /// webhook or custom check outlasts the call's deadline.
    pub(crate) async fn check_arguments(
        &self,
        ctx: &ToolContext,
        args: &mut Value,
    ) -> Result<(), ToolError> {
        for g in &self.list {
            self.arguments_now(g, args)?;
            if self.waits {
                self.arguments_later(g, ctx, args).await?;
            }
        }
        Ok(())
    }

    /// Every guard on `out`, in order (a `direction: result` set).
    ///
    /// # Errors
    /// As [`check_arguments`](Self::check_arguments): the result is withheld.
    pub(crate) async fn check_result(
        &self,
        ctx: &ToolContext,
        out: &mut ToolOutput,
    ) -> Result<(), ToolError> {
        for g in &self.list {
            self.result_now(g, out);
            if self.waits {
                self.result_later(g, ctx, out).await?;
            }
        }
        Ok(())
    }

    fn count(&self, metric: &'static str, g: &Compiled, kind: &str, n: u64) {
        metrics::counter!(
            metric,
            "tool" => self.tool.to_string(),
            "guardrail" => g.name.to_string(),
            "kind" => kind.to_string(),
            "direction" => self.direction.as_str(),
        )
        .increment(n);
    }

    fn counted_masks(&self, g: &Compiled, m: &Masker, hits: &Hits) {
        for (kind, n) in m.counts(hits) {
            self.count(GUARDRAIL_MASKED_TOTAL, g, kind, n);
            tracing::info!(tool = %self.tool, guardrail = %g.name, kind, direction = self.direction.as_str(), count = n, "guardrail masked values");
        }
    }

    fn denied(&self, g: &Compiled, kind: &str, why: &str, details: Value) -> ToolError {
        self.count(GUARDRAIL_DENIED_TOTAL, g, kind, 1);
        tracing::info!(tool = %self.tool, guardrail = %g.name, kind, direction = self.direction.as_str(), "guardrail refused: {why}");
        refused(&self.tool, &g.name, self.direction, why, details)
    }

    fn modified(&self, g: &Compiled, kind: &str) {
        self.count(GUARDRAIL_MODIFIED_TOTAL, g, kind, 1);
        tracing::info!(tool = %self.tool, guardrail = %g.name, kind, direction = self.direction.as_str(), "guardrail replaced the {}", self.direction.as_str());
    }

    /// Deny rules and argument masking of `g`.
    fn arguments_now(&self, g: &Compiled, args: &mut Value) -> Result<(), ToolError> {
        for rule in &g.deny {
            if let Some(at) = rule.find(args) {
                let shown = if at.is_empty() { "/" } else { at.as_str() };
                return Err(self.denied(
                    g,
                    &rule.name,
                    &format!("argument `{shown}` matches deny rule `{}`", rule.name),
                    json!({"guardrail": &*g.name, "rule": rule.name, "argument": shown}),
                ));
            }
        }
        if g.mask_arguments
            && let Some(m) = &g.mask
        {
            let mut hits = Hits::default();
            m.mask_value(args, &mut hits);
            self.counted_masks(g, m, &hits);
        }
        Ok(())
    }

    /// Result masking of `g`.
    fn result_now(&self, g: &Compiled, out: &mut ToolOutput) {
        if g.mask_results
            && let Some(m) = &g.mask
        {
            let mut hits = Hits::default();
            mask_output(m, out, &mut hits);
            if !hits.is_empty() {
                self.counted_masks(g, m, &hits);
            }
        }
    }

    fn call_of<'a>(&'a self, ctx: &'a ToolContext) -> GuardrailCall<'a> {
        GuardrailCall {
            tool: &self.tool,
            source: &self.source,
            context: ctx,
        }
    }

    /// `future`, bounded by what is left of the call's deadline.
    async fn bounded<T>(
        &self,
        g: &Compiled,
        ctx: &ToolContext,
        future: impl Future<Output = T>,
    ) -> Result<T, ToolError> {
        match ctx.remaining() {
            None => Ok(future.await),
            Some(left) => tokio::time::timeout(left.max(Duration::from_millis(1)), future)
                .await
                .map_err(|_| {
                    ToolError::new(
                        ErrorKind::Timeout,
                        format!(
                            "tool `{}`: guardrail `{}` did not answer before the call's deadline",
                            self.tool, g.name
                        ),
                    )
                }),
        }
    }

    /// The webhook and the custom check of `g` on the arguments.
    async fn arguments_later(
        &self,
        g: &Compiled,
        ctx: &ToolContext,
        args: &mut Value,
    ) -> Result<(), ToolError> {
        #[cfg(feature = "net")]
        if let Some(w) = &g.webhook
            && w.asks(GuardDirection::Arguments)
        {
            let verdict = self.ask(g, w, ctx, args).await?;
            if let Some(Verdict::Replace(new)) = verdict {
                *args = new;
                self.modified(g, "webhook");
            }
        }
        if let Some(custom) = &g.custom {
            let verdict = self
                .bounded(g, ctx, custom.check_arguments(self.call_of(ctx), args))
                .await?;
            match verdict {
                Verdict::Allow => {}
                Verdict::Deny(why) => {
                    return Err(self.denied(g, "custom", &why, json!({"guardrail": &*g.name})));
                }
                Verdict::Replace(new) => {
                    *args = new;
                    self.modified(g, "custom");
                }
            }
        }
        Ok(())
    }

    /// The webhook and the custom check of `g` on the result.
    async fn result_later(
        &self,
        g: &Compiled,
        ctx: &ToolContext,
        out: &mut ToolOutput,
    ) -> Result<(), ToolError> {
        #[cfg(feature = "net")]
        if let Some(w) = &g.webhook
            && w.asks(GuardDirection::Result)
        {
            let payload = serde_json::to_value(&*out)
                .map_err(|e| ToolError::internal(format!("a result does not serialize: {e}")))?;
            if let Some(Verdict::Replace(v)) = self.ask(g, w, ctx, &payload).await? {
                match serde_json::from_value::<ToolOutput>(v) {
                    Ok(replaced) => {
                        *out = replaced;
                        self.modified(g, "webhook");
                    }
                    Err(e) => {
                        let failure = super::webhook::Failure::Error(format!(
                            "{}: the modified result is not a tool result: {e}",
                            w.shown
                        ));
                        self.failed(g, w, &failure)?;
                    }
                }
            }
        }
        if let Some(custom) = &g.custom {
            let verdict = self
                .bounded(g, ctx, custom.check_result(self.call_of(ctx), out))
                .await?;
            match verdict {
                Verdict::Allow => {}
                Verdict::Deny(why) => {
                    return Err(self.denied(g, "custom", &why, json!({"guardrail": &*g.name})));
                }
                Verdict::Replace(replaced) => {
                    *out = replaced;
                    self.modified(g, "custom");
                }
            }
        }
        Ok(())
    }

    /// Asks `w` about `payload`: `Ok(None)` when the call goes on unchanged (allowed, or the
    /// service failed and `fail: open`), `Ok(Some(Replace))` with a modified payload.
    #[cfg(feature = "net")]
    async fn ask(
        &self,
        g: &Compiled,
        w: &super::webhook::Webhook,
        ctx: &ToolContext,
        payload: &Value,
    ) -> Result<Option<Verdict<Value>>, ToolError> {
        match w
            .ask(
                self.direction,
                &self.tool,
                ctx.caller(),
                payload,
                ctx.remaining(),
            )
            .await
        {
            Ok(Verdict::Allow) => Ok(None),
            Ok(Verdict::Deny(why)) => {
                Err(self.denied(g, "webhook", &why, json!({"guardrail": &*g.name})))
            }
            Ok(replace) => Ok(Some(replace)),
            Err(failure) => self.failed(g, w, &failure).map(|()| None),
        }
    }

    /// A webhook failure, under its fail mode: `Ok` when open, the refusal when closed.
    #[cfg(feature = "net")]
    fn failed(
        &self,
        g: &Compiled,
        w: &super::webhook::Webhook,
        failure: &super::webhook::Failure,
    ) -> Result<(), ToolError> {
        use toolgate_model::config::WebhookFailMode;
        self.count(
            super::GUARDRAIL_WEBHOOK_FAILURES_TOTAL,
            g,
            failure.kind(),
            1,
        );
        let open = w.fail == WebhookFailMode::Open;
        tracing::warn!(tool = %self.tool, guardrail = %g.name, kind = failure.kind(), direction = self.direction.as_str(), fail = if open { "open" } else { "closed" }, "guardrail webhook {}: {failure}", w.shown);
        if open {
            return Ok(());
        }
        let why = format!(
            "its webhook gave no usable answer ({}; fail: closed)",
            failure.kind()
        );
        Err(self.denied(
            g,
            "webhook_unavailable",
            &why,
            json!({"guardrail": &*g.name, "failure": failure.kind()}),
        ))
    }
}
