//! The call path: [`Toolset::call`], [`call_with`](Toolset::call_with),
//! [`call_many`](Toolset::call_many), [`call_blocking`](Toolset::call_blocking).
//!
//! One call: one lookup of the name in the catalog (a lazy or failed remote source whose prefix
//! the name carries is asked to discover its tools first), the pinning check, the context made
//! ready (toolset attached for nested calls, cancellation isolated, deadline tightened by the
//! tool's timeout), then the tool's policy stack.

use std::sync::Arc;

use serde_json::Value;

use super::Toolset;
use crate::catalog::ToolEntry;
use crate::policy::{Call, CallStack};
use crate::{SourceTool, ToolContext, ToolDescriptor, ToolError, ToolOutput};

impl Toolset {
    /// Calls tool `name` with `args` (a JSON object, or `null` for none) under a default context
    /// (no identity, no deadline beyond the tool's timeout).
    ///
    /// `args` may also be one string holding the JSON object (`"{\"a\":1}"`), as OpenAI's
    /// function calling gives a tool call's arguments: the object it holds is used, recorded as
    /// a [`CoercionKind::JsonText`](crate::CoercionKind::JsonText) change; a string of only
    /// whitespace is no arguments.
    ///
    /// The arguments are first checked against the tool's input schema (unless the builder
    /// turned [validation](super::ToolsetBuilder::validate_arguments) off). When they had to be
    /// changed (a strict-dialect `null` for an omitted argument, a lenient coercion, a stripped
    /// key), the changed copy is what the tool gets, and the result's `_meta` lists each change
    /// under [`COERCIONS_META_KEY`](crate::COERCIONS_META_KEY) (an array of
    /// [`Coercion`](crate::Coercion)s).
    ///
    /// # Errors
    /// `not_found` for an unknown name, `invalid_arguments` naming each bad argument path (or,
    /// for a string that holds no JSON object, `arguments for `name` are not valid JSON at line
    /// L column C`, see [`ToolError::arguments_not_json`]),
    /// `timeout` past the tool's (or the toolset's default) timeout, `internal` when the tool
    /// panics, and whatever the tool itself returns.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.run(name, args, ToolContext::default(), false).await
    }

    /// Calls tool `name` with `args` under the given context (identity, deadline, cancellation,
    /// progress). The earlier of the context's deadline and the tool's timeout wins.
    ///
    /// # Errors
    /// As [`call`](Self::call); `cancelled` when the context's token is cancelled first.
    pub async fn call_with(
        &self,
        name: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.run(name, args, ctx, true).await
    }

    /// [`call_with`](Self::call_with) through a way in that adds `guardrails` (a gateway's
    /// virtual server): they check the arguments the caller sent (once decoded from a JSON
    /// string, before an override fills in its fixed values) before the tool's own guardrails
    /// and its other policies, and the result after them. A guardrail the tool runs itself is
    /// not run again; a caller the tool's policy refuses is refused without them (no webhook
    /// is asked). An empty set is a plain [`call_with`](Self::call_with).
    ///
    /// # Errors
    /// As [`call_with`](Self::call_with); `policy_denied` when a guardrail of the set refuses
    /// the call or withholds its result.
    pub async fn call_guarded(
        &self,
        name: &str,
        args: Value,
        ctx: ToolContext,
        guardrails: &crate::policy::guardrails::GuardrailSet,
    ) -> Result<ToolOutput, ToolError> {
        let mut result = self
            .run_unmasked(name, args, ctx, true, Some(guardrails))
            .await;
        if let Ok(out) = &mut result {
            crate::redact::output(out);
        }
        result
    }

    /// The guardrails called `names` (in `policy.guardrails` or registered with
    /// [`ToolsetBuilder::guardrail`](super::ToolsetBuilder::guardrail)), in that order, for
    /// [`call_guarded`](Self::call_guarded).
    ///
    /// # Errors
    /// The first name no guardrail of the toolset has.
    pub fn guardrail_set<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<crate::policy::guardrails::GuardrailSet, String> {
        self.inner.pipeline.load().guardrails.set(names)
    }

    /// Whether the toolset has a guardrail called `name` (in `policy.guardrails` or
    /// registered in code).
    pub fn has_guardrail(&self, name: &str) -> bool {
        self.inner.pipeline.load().guardrails.has(name)
    }

    /// Calls several tools, `(name, args)` each, at most `concurrency` at once (0 counts as 1),
    /// each under `ctx` as [`call_with`](Self::call_with) would; the results come back in the
    /// order of `calls`.
    ///
    /// Each call gets its own child of the context's cancellation token: one call failing or
    /// timing out never cancels the others, while cancelling `ctx`'s token cancels them all
    /// (those not started yet end in `cancelled` without running). Each call passes through its
    /// tool's policies (rate limits, concurrency limits, ...) on its own.
    pub async fn call_many(
        &self,
        calls: impl IntoIterator<Item = (String, Value)>,
        ctx: ToolContext,
        concurrency: usize,
    ) -> Vec<Result<ToolOutput, ToolError>> {
        use futures::StreamExt;
        let ctx = &ctx;
        futures::stream::iter(calls)
            .map(|(name, args)| async move { self.call_with(&name, args, ctx.clone()).await })
            .buffered(concurrency.max(1))
            .collect()
            .await
    }

    /// Calls a tool from synchronous code: blocks the current thread until the call ends.
    ///
    /// Runs the call on a small runtime owned by the toolset (created on first use).
    ///
    /// # Errors
    /// As [`call`](Self::call); `internal` when called from inside an async runtime (use
    /// [`call`](Self::call) there) or when the runtime cannot be created.
    pub fn call_blocking(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ToolError::internal(format!(
                "call_blocking(`{name}`) was called inside an async runtime; use `call(...).await` there"
            )));
        }
        let runtime = self.inner.blocking_runtime.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        });
        match runtime {
            Ok(rt) => rt.block_on(self.call(name, args)),
            Err(e) => Err(ToolError::internal(format!(
                "cannot start a runtime for call_blocking: {e}"
            ))),
        }
    }

    /// One call, its result without any configured secret ([`crate::redact::output`]: a tool
    /// may echo one; errors are masked when they are made). `watch_cancel`: whether someone
    /// else may hold the context's cancellation token (not so for the fresh context of
    /// [`call`](Self::call), which saves a `select!`).
    async fn run(
        &self,
        name: &str,
        args: Value,
        ctx: ToolContext,
        watch_cancel: bool,
    ) -> Result<ToolOutput, ToolError> {
        let mut result = self.run_unmasked(name, args, ctx, watch_cancel, None).await;
        if let Ok(out) = &mut result {
            crate::redact::output(out);
        }
        result
    }

    async fn run_unmasked(
        &self,
        name: &str,
        args: Value,
        mut ctx: ToolContext,
        watch_cancel: bool,
        extra: Option<&crate::policy::guardrails::GuardrailSet>,
    ) -> Result<ToolOutput, ToolError> {
        // What is left of the caller's deadline, measured before any work (so that a 2 s
        // deadline is reported as 2000 ms, not 1999, and a remote source's discovery and the
        // argument check count against it).
        let caller_left = ctx.remaining();
        let found = match self.entry(name) {
            Some(entry) => Ok(entry),
            // A lazy source's first listing (or one still running since start-up) counts
            // against the call's deadline: the caller's, else the timeout the call would get.
            None => match caller_left.or_else(|| self.unlisted_timeout(name)) {
                Some(left) => tokio::time::timeout(left, self.resolve_remote(name))
                    .await
                    .unwrap_or_else(|_| Err(self.listing_timeout(name, left))),
                None => self.resolve_remote(name).await,
            },
        };
        let entry = match found {
            Ok(entry) => entry,
            Err(e) => return self.fallback_unlisted(name, args, ctx, e).await,
        };
        if let Some(state) = self.pin_state(&entry) {
            let withheld = crate::policy::pinning::Withheld {
                name: entry.name().to_string(),
                source: entry.source().id().to_string(),
                state,
            };
            return Err(ToolError::permission_denied(withheld.to_string()));
        }
        // A context whose token is already cancelled runs nothing (a sync tool would otherwise
        // run inline, before the cancellation below is looked at).
        if ctx.is_cancelled() {
            return Err(ToolError::cancelled(name));
        }
        ctx.attach(self);
        // The call gets a child of the caller's token: the caller cancelling still cancels the
        // call, but a timeout below cancels this call only, not the caller's (shared) token.
        if watch_cancel {
            ctx.isolate_cancellation();
        }
        // Arguments sent as one string holding JSON: the object it holds, the change listed
        // in the result's `_meta` like the validate layer's.
        let (mut args, mut decoded) = match args {
            Value::String(text) => match crate::validate::text::decode(entry.name(), text) {
                Ok((args, change)) => (args, vec![change]),
                Err(e) => return Err(e),
            },
            args => (args, Vec::new()),
        };
        // Arguments the openai-strict export carries as JSON text (`input_json`).
        decoded.extend(crate::validate::text::decode_carried(
            entry.name(),
            &entry.descriptor().input_schema,
            &mut args,
        )?);
        // The way in's own guardrails (a virtual server's), on what the caller sent; only for
        // a caller the tool's policy lets in (the authorize layer refuses the others).
        let (extra_in, extra_out) = match extra.filter(|s| !s.is_empty()) {
            Some(set) => set.for_tool(&self.inner.pipeline.load(), entry.descriptor())?,
            None => (None, None),
        };
        if let Some(guards) = &extra_in
            && entry
                .access(&self.inner.pipeline.load())
                .permits(ctx.identity())
        {
            guards.check_arguments(&ctx, &mut args).await?;
        }
        // Arguments the tool's override fixes or defaults, before they are checked.
        if let Some(fill) = entry.filled_arguments() {
            toolgate_model::config::fill_arguments(&mut args, fill).map_err(|message| {
                ToolError::invalid_arguments(
                    entry.name(),
                    vec![crate::ArgumentError {
                        pointer: String::new(),
                        message,
                    }],
                )
            })?;
        }
        let settled = entry.settled(&self.inner.pipeline.load());
        // The call's deadline is set before any layer runs, so that what waits before the
        // timeout layer (a concurrency slot) waits within it too.
        if let Some(timeout) = settled.timeout {
            ctx.tighten_deadline(timeout);
        }
        // The caller's own report (the gateway's call log reads it), else one only when a
        // layer fills it in.
        let report = ctx
            .report_slot()
            .cloned()
            .or_else(|| settled.reports.then(Arc::default));
        let stack: &dyn CallStack = &*settled.stack;
        let out_ctx = extra_out.as_ref().map(|_| ctx.clone());
        let call = Call {
            entry: Arc::clone(&entry),
            args,
            ctx,
            report,
            caller_left,
            watch_cancel,
        };
        let mut result = stack.call(call).await;
        if let (Some(guards), Some(ctx), Ok(out)) = (&extra_out, &out_ctx, &mut result)
            && let Err(e) = guards.check_result(ctx, out).await
        {
            result = Err(e);
        }
        if decoded.is_empty() {
            result
        } else {
            result.map(|out| with_changes_first(out, decoded))
        }
    }

    /// A tool of a source that could not list its tools (down since start-up) has no catalog
    /// entry, so no pipeline: its call fails with the source's `error`. When the tool's policy
    /// has a `fallback` for that error's kind, the fallback runs all the same (as the fallback
    /// layer would run it), if the caller may call the tool: every `policy.rules` entry naming
    /// it applies, whatever the tool's unknown category, tags or `dangerous` mark. `not_found`
    /// (the source listed, the tool does not exist) never falls back.
    async fn fallback_unlisted(
        &self,
        name: &str,
        args: Value,
        mut ctx: ToolContext,
        error: ToolError,
    ) -> Result<ToolOutput, ToolError> {
        if error.kind() == crate::ErrorKind::NotFound {
            return Err(error);
        }
        let Some(source) = self.prefixed_source(name) else {
            return Err(error);
        };
        let internal = toolgate_model::names::internal_name(name);
        let tool = Arc::new(ToolDescriptor {
            name: internal.to_string(),
            source: source.id().to_string(),
            ..ToolDescriptor::default()
        });
        let stack = self
            .inner
            .pipeline
            .load()
            .fallback_only(&tool, ctx.identity(), error)?;
        ctx.attach(self);
        let key: Arc<str> = internal.as_ref().into();
        let entry = Arc::new(ToolEntry::new(
            SourceTool::named(tool, key),
            Arc::clone(&source),
        ));
        let call = Call {
            entry,
            args,
            ctx,
            report: None,
            caller_left: None,
            watch_cancel: false,
        };
        stack.call(call).await
    }
}

/// `out` with `changes` first in its `_meta` list of changes made to the arguments (before
/// those of the validate layer, which ran after them).
fn with_changes_first(mut out: ToolOutput, changes: Vec<crate::Coercion>) -> ToolOutput {
    let meta = out.meta.get_or_insert_with(Default::default);
    let changes = changes
        .into_iter()
        .map(|c| serde_json::to_value(c).unwrap_or_default());
    match meta.get_mut(crate::COERCIONS_META_KEY) {
        Some(Value::Array(list)) => {
            list.splice(0..0, changes);
        }
        _ => {
            meta.insert(
                crate::COERCIONS_META_KEY.to_string(),
                Value::Array(changes.collect()),
            );
        }
    }
    out
}
