//! [`Toolset`]: one agent's whole action space, and its builder.

mod builder;

pub use builder::ToolsetBuilder;

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use toolgate_model::dialect::{Dialect, ExportError};

use tower::ServiceExt;

use crate::validate::ArgumentPolicy;
use crate::{
    BuildError, StateMap, ToolContext, ToolDescriptor, ToolError, ToolOutput, ToolSource, Validated,
};

/// The `_meta` key of a result under which the changes made to the arguments are listed.
pub const COERCIONS_META_KEY: &str = "toolgate/coercions";

type StaticFactory = Box<dyn FnOnce(&StateMap) -> Result<Arc<dyn ToolSource>, BuildError> + Send>;

/// One agent's toolset: the compiled static table plus any other [`ToolSource`]s, the
/// application state, and the defaults every call runs under.
///
/// Cheap to clone (an `Arc`); clones share everything. Each *built* toolset has its own state, so
/// two agents built from the same generated code are isolated.
///
/// ```ignore
/// mod toolset { toolgate::include_toolset!(); }
/// let tools = toolset::toolset().state(MyDb::connect()?).build()?;
/// let out = tools.call("search", serde_json::json!({"query": "rust"})).await?;
/// ```
#[derive(Clone)]
pub struct Toolset {
    inner: Arc<Inner>,
}

struct Inner {
    sources: Vec<Arc<dyn ToolSource>>,
    states: StateMap,
    default_timeout: Option<Duration>,
    blocking_runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    /// The policy layers every call goes through, and each tool's built stack.
    pipeline: crate::policy::Pipeline,
    /// Tool pinning of remote tools (`policy.pinning`), when configured.
    pins: Option<crate::policy::pinning::Pins>,
}

/// A tool name offered by two sources: see [`Toolset::name_conflicts`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NameConflict {
    /// The name (as the toolset names it).
    pub name: String,
    /// The source that keeps the name (listed first).
    pub kept_by: String,
    /// The source whose tool of that name cannot be reached.
    pub shadowed: String,
}

impl fmt::Display for NameConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool `{}` is offered by source `{}` and by source `{}` (mounted without prefix); set `prefix: true` on one of them or deny the tool there",
            self.name, self.kept_by, self.shadowed
        )
    }
}

/// Changes to a toolset's tools, from [`Toolset::watch_tools`].
pub struct ToolsWatch {
    receivers: Vec<tokio::sync::watch::Receiver<u64>>,
}

impl ToolsWatch {
    /// How many sources are watched (those whose tools can change).
    pub fn len(&self) -> usize {
        self.receivers.len()
    }

    /// Whether no source's tools can change.
    pub fn is_empty(&self) -> bool {
        self.receivers.is_empty()
    }

    /// Waits until some source's tools change. Returns `false` when no source can change any
    /// more (all closed or dropped; never, for a toolset of static tools only, which waits
    /// forever).
    pub async fn changed(&mut self) -> bool {
        loop {
            if self.receivers.is_empty() {
                std::future::pending::<()>().await;
            }
            let waits = self.receivers.iter_mut().map(|r| Box::pin(r.changed()));
            let (result, index, _) = futures::future::select_all(waits).await;
            match result {
                Ok(()) => return true,
                Err(_) => {
                    self.receivers.swap_remove(index);
                    if self.receivers.is_empty() {
                        return false;
                    }
                }
            }
        }
    }
}

impl Toolset {
    /// A builder for an empty toolset.
    pub fn builder() -> ToolsetBuilder {
        ToolsetBuilder::default()
    }

    /// Every tool of every source, in source order then each source's order (a tool shadowed by
    /// an [overlay](ToolsetBuilder::overlay) is listed once, as the overlay's).
    ///
    /// A remote tool withheld by [pinning](crate::policy::pinning) is left out (see
    /// [`withheld`](Self::withheld)).
    pub fn tools(&self) -> Vec<Arc<ToolDescriptor>> {
        let mut seen = std::collections::HashSet::new();
        self.inner
            .sources
            .iter()
            .flat_map(|s| s.tools().into_iter().map(move |d| (s, d)))
            .filter(|(_, d)| seen.insert(d.name.clone()))
            .filter(|(s, d)| self.pin_state(s, d).is_none())
            .map(|(_, d)| d)
            .collect()
    }

    /// The tools `identity` may call ([`tools`](Self::tools) less those its roles, the
    /// `policy.rules` or `requires_auth` refuse it): what a caller is shown.
    pub fn tools_for(&self, identity: &crate::Identity) -> Vec<Arc<ToolDescriptor>> {
        let mut tools = self.tools();
        tools.retain(|d| self.may_call(d, identity));
        tools
    }

    /// Whether `identity` may call `tool` (its roles, the `policy.rules`, `requires_auth`).
    pub fn may_call(&self, tool: &ToolDescriptor, identity: &crate::Identity) -> bool {
        crate::policy::authorize::allowed(&self.inner.pipeline.config, tool, identity).is_ok()
    }

    /// The tool called `name`, if any source offers it (and pinning does not withhold it).
    pub fn describe(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.resolve(name)
            .filter(|(s, d)| self.pin_state(s, d).is_none())
            .map(|(_, d)| d)
    }

    /// Why pinning withholds `d` of source `s`, if it does.
    fn pin_state(
        &self,
        s: &Arc<dyn ToolSource>,
        d: &Arc<ToolDescriptor>,
    ) -> Option<crate::policy::pinning::PinState> {
        let pins = self.inner.pins.as_ref()?;
        crate::policy::pinning::is_remote(s.kind())
            .then(|| pins.verdict(d))
            .flatten()
    }

    /// The remote tools pinning withholds now (new and not approved, or changed since approved),
    /// in source order; empty without `policy.pinning`.
    pub fn withheld(&self) -> Vec<crate::policy::pinning::Withheld> {
        self.inner
            .sources
            .iter()
            .flat_map(|s| s.tools().into_iter().map(move |d| (s, d)))
            .filter_map(|(s, d)| {
                self.pin_state(s, &d)
                    .map(|state| crate::policy::pinning::Withheld {
                        name: d.name.clone(),
                        source: s.id().to_string(),
                        state,
                    })
            })
            .collect()
    }

    /// Approves remote tools as they are now (`toolgate approve`): records the current hash of
    /// each tool named (either name form), or of every [withheld](Self::withheld) tool when
    /// `names` is empty, in the approvals file. Returns the names approved.
    ///
    /// # Errors
    /// `invalid_arguments` without `policy.pinning`, or for a tool that is not remote (only MCP
    /// and A2A tools are pinned); `not_found` for an unknown name; `internal` when the file
    /// cannot be written.
    pub fn approve(&self, names: &[String]) -> Result<Vec<String>, ToolError> {
        let Some(pins) = &self.inner.pins else {
            return Err(ToolError::new(
                crate::ErrorKind::InvalidArguments,
                "tool pinning is off: set policy.pinning in tools.yaml",
            ));
        };
        let mut tools = Vec::new();
        if names.is_empty() {
            let withheld: std::collections::HashSet<String> =
                self.withheld().into_iter().map(|w| w.name).collect();
            for s in &self.inner.sources {
                tools.extend(s.tools().into_iter().filter(|d| withheld.contains(&d.name)));
            }
        }
        for name in names {
            let (s, d) = self
                .resolve(name)
                .ok_or_else(|| ToolError::not_found(name))?;
            if !crate::policy::pinning::is_remote(s.kind()) {
                return Err(ToolError::new(
                    crate::ErrorKind::InvalidArguments,
                    format!(
                        "tool `{}` is not a remote tool (source `{}` is {}); only MCP and A2A tools are pinned",
                        d.name,
                        s.id(),
                        s.kind()
                    ),
                ));
            }
            tools.push(d);
        }
        pins.approve(&tools).map_err(ToolError::internal)?;
        Ok(tools.iter().map(|d| d.name.clone()).collect())
    }

    /// Sets the policy gauges that are read, not counted (each source's circuit breaker state,
    /// `toolgate_circuit_breaker_state`), on the installed `metrics` recorder: call it before
    /// rendering the metrics (the gateway's `/metrics` does).
    pub fn record_policy_gauges(&self) {
        crate::policy::record_gauges(&self.inner.pipeline);
    }

    /// The sources, in resolution order.
    pub fn sources(&self) -> &[Arc<dyn ToolSource>] {
        &self.inner.sources
    }

    /// The state of type `T` given to the builder, if any.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.inner.states.get::<T>()
    }

    /// The timeout applied to tools that declare none.
    pub fn default_timeout(&self) -> Option<Duration> {
        self.inner.default_timeout
    }

    /// The source and descriptor of tool `name`: its name inside toolgate, or the name a model
    /// sees (`{source}__{tool}` for `{source}.{tool}`, see `toolgate_model::names`), so that a
    /// model's tool call can be passed on as it is.
    fn resolve(&self, name: &str) -> Option<(&Arc<dyn ToolSource>, Arc<ToolDescriptor>)> {
        let find = |name: &str| {
            self.inner
                .sources
                .iter()
                .find_map(|s| s.descriptor(name).map(|d| (s, d)))
        };
        find(name).or_else(|| {
            let internal = toolgate_model::names::internal_name(name);
            match internal {
                std::borrow::Cow::Owned(internal) => find(&internal),
                std::borrow::Cow::Borrowed(_) => None,
            }
        })
    }

    /// For a name not found: when its prefix is a source's id (`everything.echo`, or the exported
    /// `everything__echo`), that source is asked to [discover](ToolSource::discover) its tools
    /// (a lazy source's first use; a failed source after its retry interval), then the name is
    /// looked up again. A source that cannot list its tools gives its error, not `not_found`.
    async fn resolve_remote(
        &self,
        name: &str,
    ) -> Result<(&Arc<dyn ToolSource>, Arc<ToolDescriptor>), ToolError> {
        let internal = toolgate_model::names::internal_name(name);
        let prefixed = internal.split_once('.').and_then(|(prefix, _)| {
            self.inner
                .sources
                .iter()
                .find(|s| s.id() == prefix && s.prefixed())
        });
        if let Some(source) = prefixed {
            source.discover().await?;
            return self.resolve(name).ok_or_else(|| ToolError::not_found(name));
        }
        // Sources mounted without prefix may offer any name: each is asked in turn (cheap
        // once listed), and the first that has it answers.
        for source in self.inner.sources.iter().filter(|s| !s.prefixed()) {
            if source.discover().await.is_ok()
                && let Some(found) = self.resolve(name)
            {
                return Ok(found);
            }
        }
        Err(ToolError::not_found(name))
    }

    /// Names offered by more than one source (as a model sees them: `a.b` and `a__b` are one
    /// name), in source order. The source listed first keeps such a name; the others' tools of
    /// that name cannot be called. Only sources mounted without prefix (or local tools named
    /// like a prefixed remote tool) can conflict. `toolgate serve` refuses to start with any.
    pub fn name_conflicts(&self) -> Vec<NameConflict> {
        let mut owner: HashMap<String, &str> = HashMap::new();
        let mut conflicts = Vec::new();
        for source in &self.inner.sources {
            for d in source.tools() {
                let exported = toolgate_model::names::exported_name(&d.name).into_owned();
                match owner.get(&exported) {
                    Some(first) if *first != source.id() => conflicts.push(NameConflict {
                        name: d.name.clone(),
                        kept_by: (*first).to_string(),
                        shadowed: source.id().to_string(),
                    }),
                    Some(_) => {}
                    None => {
                        owner.insert(exported, source.id());
                    }
                }
            }
        }
        conflicts
    }

    /// A watch on the toolset's tools: [`ToolsWatch::changed`] resolves whenever any source's
    /// tools change (a remote end listed again with different tools, a lazy source's first
    /// listing). The gateway sends MCP `notifications/tools/list_changed` on it.
    pub fn watch_tools(&self) -> ToolsWatch {
        ToolsWatch {
            receivers: self
                .inner
                .sources
                .iter()
                .filter_map(|s| s.tool_changes())
                .collect(),
        }
    }

    /// Lists the tools of every source that is contacted at start-up (remote sources not marked
    /// `lazy`), all at once with at most `concurrency` at a time (each bounded by its own
    /// discovery timeout), and returns every source's status afterwards, in source order. A
    /// failing source is reported in its status; it never keeps the others from being listed.
    pub async fn discover(&self, concurrency: usize) -> Vec<crate::SourceStatus> {
        self.discover_with(concurrency, |_| {}).await
    }

    /// [`discover`](Self::discover), calling `done` with each source's status as soon as its
    /// listing ends (for a progress bar).
    pub async fn discover_with(
        &self,
        concurrency: usize,
        done: impl FnMut(&crate::SourceStatus),
    ) -> Vec<crate::SourceStatus> {
        self.discover_sources(concurrency, false, done).await
    }

    /// [`discover_with`](Self::discover_with) for every source, the `lazy` ones included
    /// (`toolgate discover`).
    pub async fn discover_all(
        &self,
        concurrency: usize,
        done: impl FnMut(&crate::SourceStatus),
    ) -> Vec<crate::SourceStatus> {
        self.discover_sources(concurrency, true, done).await
    }

    async fn discover_sources(
        &self,
        concurrency: usize,
        lazy_too: bool,
        mut done: impl FnMut(&crate::SourceStatus),
    ) -> Vec<crate::SourceStatus> {
        use futures::StreamExt;
        // Owned sources and boxed futures: the future stays `Send` for any lifetime, so it can
        // be spawned (a borrowing closure here trips rustc's higher-ranked `Send` inference).
        let listings: Vec<crate::BoxFuture<'static, crate::SourceStatus>> = self
            .inner
            .sources
            .iter()
            .filter(|s| lazy_too || s.discover_at_startup())
            .map(|s| {
                let s = Arc::clone(s);
                Box::pin(async move {
                    let _ = s.discover().await;
                    s.status()
                }) as crate::BoxFuture<'static, crate::SourceStatus>
            })
            .collect();
        let mut pending = futures::stream::iter(listings).buffer_unordered(concurrency.max(1));
        while let Some(status) = pending.next().await {
            done(&status);
        }
        self.statuses()
    }

    /// The tool called `name` (as [`describe`](Self::describe)), first asking the source its
    /// prefix names to discover its tools when it has not yet (a lazy remote source).
    ///
    /// # Errors
    /// `not_found` for an unknown name; the source's error when it cannot list its tools.
    pub async fn lookup(&self, name: &str) -> Result<Arc<ToolDescriptor>, ToolError> {
        let (s, d) = match self.resolve(name) {
            Some(found) => found,
            None => self.resolve_remote(name).await?,
        };
        // A tool withheld by pinning is not shown.
        match self.pin_state(s, &d) {
            None => Ok(d),
            Some(_) => Err(ToolError::not_found(name)),
        }
    }

    /// Every source's status, in source order.
    pub fn statuses(&self) -> Vec<crate::SourceStatus> {
        self.inner.sources.iter().map(|s| s.status()).collect()
    }

    /// Lists source `id`'s tools again now.
    ///
    /// # Errors
    /// `not_found` when no source has that id; otherwise the source's listing error.
    pub async fn refresh(&self, id: &str) -> Result<(), ToolError> {
        let source = self
            .inner
            .sources
            .iter()
            .find(|s| s.id() == id)
            .ok_or_else(|| {
                ToolError::new(
                    crate::ErrorKind::NotFound,
                    format!("no source named `{id}`"),
                )
            })?;
        source.refresh().await
    }

    /// A result kept in full after it was cut to a size limit, by the `toolgate://results/...`
    /// URI named in the cut result; without any configured secret, as the call's result.
    pub fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        let mut out = self
            .inner
            .sources
            .iter()
            .find_map(|s| s.stored_result(uri))?;
        crate::redact::output(&mut out);
        Some(out)
    }

    /// Closes every source: remote sessions end, child processes are asked to exit (stdin
    /// closed, then SIGTERM, then killed), background tasks stop. Later calls to remote tools
    /// fail with `network`.
    pub async fn close(&self) {
        futures::future::join_all(self.inner.sources.iter().map(|s| s.close())).await;
    }

    /// Checks `args` against tool `name`'s input schema under `policy` (a [`ValidationMode`](crate::ValidationMode)
    /// converts into one), without calling it and whether or not the builder turned validation
    /// on for calls: the arguments as they would be forwarded and every change made to them.
    /// Uses the same compiled validators as calls.
    ///
    /// # Errors
    /// `not_found` for an unknown name; `invalid_arguments` listing every violation with its JSON
    /// pointer; `internal` when the tool's schema cannot be compiled.
    pub fn check_arguments(
        &self,
        name: &str,
        args: Value,
        policy: impl Into<ArgumentPolicy>,
    ) -> Result<Validated, ToolError> {
        let descriptor = self
            .describe(name)
            .ok_or_else(|| ToolError::not_found(name))?;
        self.inner
            .pipeline
            .validators
            .check(&descriptor, args, policy)
    }

    /// How tool `name`'s arguments are checked in calls (`None` for an unknown tool or when
    /// validation is off).
    pub fn argument_policy(&self, name: &str) -> Option<ArgumentPolicy> {
        let descriptor = self.describe(name)?;
        Some(self.inner.pipeline.validation.as_ref()?.policy(&descriptor))
    }

    /// Calls tool `name` with `args` (a JSON object, or `null` for none) under a default context
    /// (no identity, no deadline beyond the tool's timeout).
    ///
    /// The arguments are first checked against the tool's input schema (unless the builder
    /// turned [validation](ToolsetBuilder::validate_arguments) off). When they had to be changed
    /// (a strict-dialect `null` for an omitted argument, a lenient coercion, a stripped key),
    /// the changed copy is what the tool gets, and the result's `_meta` lists each change under
    /// [`COERCIONS_META_KEY`] (an array of [`Coercion`](crate::Coercion)s).
    ///
    /// # Errors
    /// `not_found` for an unknown name, `invalid_arguments` naming each bad argument path,
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
        let mut result = self.run_unmasked(name, args, ctx, watch_cancel).await;
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
    ) -> Result<ToolOutput, ToolError> {
        // What is left of the caller's deadline, measured before any work (so that a 2 s
        // deadline is reported as 2000 ms, not 1999, and a remote source's discovery and the
        // argument check count against it).
        let caller_left = ctx.remaining();
        let found = match (self.resolve(name), caller_left) {
            (Some(found), _) => Ok(found),
            // A lazy source's first listing counts against the caller's deadline too.
            (None, Some(left)) => tokio::time::timeout(left, self.resolve_remote(name))
                .await
                .unwrap_or_else(|_| Err(ToolError::timeout(name, left))),
            (None, None) => self.resolve_remote(name).await,
        };
        let (source, descriptor) = match found {
            Ok(found) => found,
            Err(e) => return self.fallback_unlisted(name, args, ctx, e).await,
        };
        if let Some(state) = self.pin_state(source, &descriptor) {
            let withheld = crate::policy::pinning::Withheld {
                name: descriptor.name.clone(),
                source: source.id().to_string(),
                state,
            };
            return Err(ToolError::permission_denied(withheld.to_string()));
        }
        // A context whose token is already cancelled runs nothing (a sync tool would otherwise
        // finish on its first poll, before the cancellation below is looked at).
        if ctx.is_cancelled() {
            return Err(ToolError::cancelled(name));
        }
        ctx.attach(self);
        // The call gets a child of the caller's token: the caller cancelling still cancels the
        // call, but a timeout below cancels this call only, not the caller's (shared) token.
        if watch_cancel {
            ctx.isolate_cancellation();
        }
        // The call's deadline is set before any layer runs, so that what waits before the
        // timeout layer (a concurrency slot) waits within it too.
        if let Some(timeout) = self.inner.pipeline.timeout(&descriptor) {
            ctx.tighten_deadline(timeout);
        }
        let service = self.inner.pipeline.service(&descriptor);
        let call = crate::policy::Call {
            tool: descriptor,
            source: Arc::clone(source),
            args,
            ctx,
            report: Arc::default(),
            caller_left,
            watch_cancel,
        };
        service.oneshot(call).await
    }

    /// A tool of a source that could not list its tools (down since start-up) has no descriptor,
    /// so no pipeline: its call fails with the source's `error`. When the tool's policy has a
    /// `fallback` for that error's kind, the fallback runs all the same (as the fallback layer
    /// would run it), if the caller may call the tool: every `policy.rules` entry naming it
    /// applies, whatever the tool's unknown category, tags or `dangerous` mark. `not_found` (the
    /// source listed, the tool does not exist) never falls back.
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
        let internal = toolgate_model::names::internal_name(name);
        let Some(source) = internal.split_once('.').and_then(|(prefix, _)| {
            self.inner
                .sources
                .iter()
                .find(|s| s.id() == prefix && s.prefixed())
        }) else {
            return Err(error);
        };
        let tool = Arc::new(ToolDescriptor {
            name: internal.to_string(),
            source: source.id().to_string(),
            ..ToolDescriptor::default()
        });
        let service = self
            .inner
            .pipeline
            .fallback_only(&tool, ctx.identity(), error)?;
        ctx.attach(self);
        let call = crate::policy::Call {
            tool,
            source: Arc::clone(source),
            args,
            ctx,
            report: Arc::default(),
            caller_left: None,
            watch_cancel: false,
        };
        service.oneshot(call).await
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

    /// Every tool's definition in `dialect`.
    ///
    /// # Errors
    /// The first tool whose schema the dialect cannot express (the error names it).
    pub fn export(&self, dialect: Dialect) -> Result<Vec<Value>, ExportError> {
        self.tools().iter().map(|d| d.export(dialect)).collect()
    }

    /// Every tool's definition in `dialect` that the dialect can express, and the errors of
    /// the tools it cannot (a recursive type for Gemini): one such tool does not keep the
    /// others from a model.
    pub fn export_available(&self, dialect: Dialect) -> (Vec<Value>, Vec<ExportError>) {
        let mut ok = Vec::new();
        let mut failed = Vec::new();
        for d in self.tools() {
            match d.export(dialect) {
                Ok(v) => ok.push(v),
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    }
}

/// `internal: tool `x` panicked: <the panic message>`.
pub(crate) fn panic_error(tool: &str, panic: &(dyn Any + Send)) -> ToolError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_string());
    ToolError::internal(format!("tool `{tool}` panicked: {what}"))
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field(
                "sources",
                &self
                    .inner
                    .sources
                    .iter()
                    .map(|s| s.id())
                    .collect::<Vec<_>>(),
            )
            .field("states", &self.inner.states)
            .field("default_timeout", &self.inner.default_timeout)
            .finish()
    }
}
