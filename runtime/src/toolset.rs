//! [`Toolset`]: one agent's whole action space, and its builder.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use toolgate_spec::dialect::{Dialect, ExportError};

use crate::{
    BuildError, StateMap, ToolContext, ToolDescriptor, ToolError, ToolOutput, ToolSource,
    Validated, ValidationMode, ValidatorCache,
};

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
    /// `Some` when arguments are validated against the input schema before a call.
    validation: Option<Validation>,
    /// The compiled argument validators, one per tool, compiled on first use.
    validators: ValidatorCache,
}

/// When argument validation is on: the mode of each tool.
struct Validation {
    mode: ValidationMode,
    per_tool: HashMap<String, ValidationMode>,
}

impl Toolset {
    /// A builder for an empty toolset.
    pub fn builder() -> ToolsetBuilder {
        ToolsetBuilder::default()
    }

    /// Every tool of every source, in source order then each source's order (a tool shadowed by
    /// an [overlay](ToolsetBuilder::overlay) is listed once, as the overlay's).
    pub fn tools(&self) -> Vec<Arc<ToolDescriptor>> {
        let mut seen = std::collections::HashSet::new();
        self.inner
            .sources
            .iter()
            .flat_map(|s| s.tools())
            .filter(|d| seen.insert(d.name.clone()))
            .collect()
    }

    /// The tool called `name`, if any source offers it.
    pub fn describe(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.resolve(name).map(|(_, d)| d)
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

    fn resolve(&self, name: &str) -> Option<(&Arc<dyn ToolSource>, Arc<ToolDescriptor>)> {
        self.inner
            .sources
            .iter()
            .find_map(|s| s.descriptor(name).map(|d| (s, d)))
    }

    /// Checks `args` against tool `name`'s input schema in `mode`, without calling it (whether or
    /// not the builder turned validation on for calls): the arguments as they would be forwarded
    /// and, in lenient mode, every coercion applied (for logs and result metadata). Uses the same
    /// compiled validators as calls.
    ///
    /// # Errors
    /// `not_found` for an unknown name; `invalid_arguments` listing every violation with its JSON
    /// pointer; `internal` when the tool's schema cannot be compiled.
    pub fn check_arguments(
        &self,
        name: &str,
        args: Value,
        mode: ValidationMode,
    ) -> Result<Validated, ToolError> {
        let descriptor = self
            .describe(name)
            .ok_or_else(|| ToolError::not_found(name))?;
        self.inner.validators.check(&descriptor, args, mode)
    }

    /// Calls tool `name` with `args` (a JSON object, or `null` for none) under a default context
    /// (no identity, no deadline beyond the tool's timeout).
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

    /// One call. `watch_cancel`: whether someone else may hold the context's cancellation token
    /// (not so for the fresh context of [`call`](Self::call), which saves a `select!`).
    async fn run(
        &self,
        name: &str,
        args: Value,
        mut ctx: ToolContext,
        watch_cancel: bool,
    ) -> Result<ToolOutput, ToolError> {
        let Some((source, descriptor)) = self.resolve(name) else {
            return Err(ToolError::not_found(name));
        };
        // A context whose token is already cancelled runs nothing (a sync tool would otherwise
        // finish on its first poll, before the cancellation below is looked at).
        if ctx.is_cancelled() {
            return Err(ToolError::cancelled(name));
        }
        // Opt-in: the arguments are checked against the tool's input schema (a validator
        // compiled once per tool) and, in lenient mode, the coerced copy is what is forwarded.
        let args = match &self.inner.validation {
            Some(v) => {
                let mode = v.per_tool.get(&descriptor.name).copied().unwrap_or(v.mode);
                self.inner.validators.check(&descriptor, args, mode)?.args
            }
            None => args,
        };
        ctx.attach(self);
        // The call gets a child of the caller's token: the caller cancelling still cancels the
        // call, but a timeout below cancels this call only, not the caller's (shared) token.
        if watch_cancel {
            ctx.isolate_cancellation();
        }
        // What the call is allowed: the tool's timeout, or what is left of the caller's
        // deadline when that is earlier (measured before tightening, so that a 2 s timeout is
        // reported as 2000 ms, not 1999).
        let caller_left = ctx.remaining();
        let timeout = descriptor.timeout.or(self.inner.default_timeout);
        if let Some(timeout) = timeout {
            ctx.tighten_deadline(timeout);
        }
        let allowed = match (timeout, caller_left) {
            (Some(t), Some(left)) => Some(t.min(left)),
            (t, left) => t.or(left),
        };
        // A source may panic while building the future (decoding arguments happens there) or
        // while it runs: both become `internal` errors, never a crashed caller.
        let call =
            match std::panic::catch_unwind(AssertUnwindSafe(|| source.call(name, args, &ctx))) {
                Ok(future) => AssertUnwindSafe(future).catch_unwind(),
                Err(panic) => return Err(panic_error(name, panic.as_ref())),
            };
        let cancel = ctx.cancellation();
        let outcome = match ctx.deadline() {
            Some(deadline) => {
                tokio::select! {
                    biased;
                    r = call => r,
                    () = cancel.cancelled() => return Err(ToolError::cancelled(name)),
                    // A relative sleep on tokio's clock (not `sleep_until` of the std
                    // deadline), so that tokio's paused test clock drives timeouts too.
                    () = tokio::time::sleep(deadline.saturating_duration_since(std::time::Instant::now())) => {
                        cancel.cancel();
                        return Err(ToolError::timeout(name, allowed.unwrap_or_default()));
                    }
                }
            }
            None if watch_cancel => {
                tokio::select! {
                    biased;
                    r = call => r,
                    () = cancel.cancelled() => return Err(ToolError::cancelled(name)),
                }
            }
            None => call.await,
        };
        outcome.unwrap_or_else(|panic| Err(panic_error(name, panic.as_ref())))
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

/// Builds a [`Toolset`]: the compiled static table (from generated code), extra sources,
/// application state and defaults. [`build`](Self::build) checks, once, that every `State<T>` a
/// compiled tool takes was given, and that no two sources offer the same tool name.
#[derive(Default)]
pub struct ToolsetBuilder {
    static_source: Option<StaticFactory>,
    overlays: Vec<Arc<dyn ToolSource>>,
    sources: Vec<Arc<dyn ToolSource>>,
    states: StateMap,
    default_timeout: Option<Duration>,
    validate_arguments: bool,
    validation_mode: ValidationMode,
    validation_modes: HashMap<String, ValidationMode>,
}

impl ToolsetBuilder {
    /// Sets the compiled static table's factory (generated code calls this).
    pub fn static_source(
        mut self,
        factory: impl FnOnce(&StateMap) -> Result<Arc<dyn ToolSource>, BuildError> + Send + 'static,
    ) -> Self {
        self.static_source = Some(Box::new(factory));
        self
    }

    /// Adds a source after the static table (and after sources added earlier).
    pub fn source(mut self, source: impl ToolSource) -> Self {
        self.sources.push(Arc::new(source));
        self
    }

    /// Adds a source *in front of* every other: its tools shadow same-named tools of the static
    /// table and of other sources (no duplicate-name error). For tests — stub the real `fetch`
    /// with a [`StubSource`](crate::testing::StubSource) — and for wrappers that replace a tool.
    pub fn overlay(mut self, source: impl ToolSource) -> Self {
        self.overlays.push(Arc::new(source));
        self
    }

    /// Adds a shared source.
    pub fn source_arc(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Gives tools taking `State<T>` this value.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(Arc::new(value));
        self
    }

    /// Gives tools taking `State<T>` this shared value.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.states.insert(value);
        self
    }

    /// The timeout for tools that declare none (`None`: no timeout for local tools).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Whether every call's arguments are validated against the tool's input schema (JSON
    /// Schema 2020-12, a validator compiled once per tool) before the tool runs; a mismatch is
    /// `invalid_arguments` listing every violation. Off by default (for now).
    pub fn validate_arguments(mut self, validate: bool) -> Self {
        self.validate_arguments = validate;
        self
    }

    /// How [`validate_arguments`](Self::validate_arguments) checks: [`ValidationMode::Strict`]
    /// (the default) or [`ValidationMode::Lenient`], which first coerces unambiguous mistakes
    /// (numbers and booleans sent as strings, ...) on a copy and forwards the copy. Has no
    /// effect unless validation is on.
    pub fn validation_mode(mut self, mode: ValidationMode) -> Self {
        self.validation_mode = mode;
        self
    }

    /// The [validation mode](Self::validation_mode) of tool `tool` only, overriding the
    /// toolset's. Has no effect unless validation is on.
    pub fn validation_mode_for(mut self, tool: impl Into<String>, mode: ValidationMode) -> Self {
        self.validation_modes.insert(tool.into(), mode);
        self
    }

    /// Builds the toolset.
    ///
    /// # Errors
    /// [`BuildError::MissingState`] when a compiled tool takes a `State<T>` that was not given;
    /// [`BuildError::DuplicateSource`] / [`BuildError::DuplicateTool`] when sources clash.
    pub fn build(self) -> Result<Toolset, BuildError> {
        let mut sources = self.overlays;
        let overlays = sources.len();
        if let Some(factory) = self.static_source {
            sources.push(factory(&self.states)?);
        }
        sources.extend(self.sources);
        let mut ids = HashMap::new();
        let mut names: HashMap<String, String> = HashMap::new();
        for (i, s) in sources.iter().enumerate() {
            if ids.insert(s.id().to_string(), ()).is_some() {
                return Err(BuildError::DuplicateSource(s.id().to_string()));
            }
            if i < overlays {
                continue;
            }
            for d in s.tools() {
                if let Some(first) = names.insert(d.name.clone(), s.id().to_string()) {
                    return Err(BuildError::DuplicateTool {
                        name: d.name.clone(),
                        first,
                        second: s.id().to_string(),
                    });
                }
            }
        }
        Ok(Toolset {
            inner: Arc::new(Inner {
                sources,
                states: self.states,
                default_timeout: self.default_timeout,
                blocking_runtime: OnceLock::new(),
                validation: self.validate_arguments.then_some(Validation {
                    mode: self.validation_mode,
                    per_tool: self.validation_modes,
                }),
                validators: ValidatorCache::new(),
            }),
        })
    }
}
