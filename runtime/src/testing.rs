//! Test helpers for code that calls tools: stub a tool by name, record every call, assert on what
//! was called with which arguments.
//!
//! ```ignore
//! use toolgate::testing::StubSource;
//! let stubs = StubSource::new("stubs").stub("weather", |args| Ok(ToolOutput::text("sunny")));
//! let tools = Toolset::builder().source(stubs.clone()).build()?;
//! my_agent_step(&tools).await;
//! stubs.assert_called_with("weather", json!({"city": "Oslo"}));
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{
    SourceTool, ToolContext, ToolDescriptor, ToolError, ToolFuture, ToolOutput, ToolSource,
};

type Handler = Arc<dyn Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync>;
type Stubs = Arc<Mutex<Vec<(Arc<ToolDescriptor>, Handler)>>>;

/// One recorded call.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The tool name.
    pub tool: String,
    /// The arguments as sent.
    pub args: Value,
    /// The caller from the context, if any.
    pub caller: Option<String>,
}

/// A [`ToolSource`] of stubbed tools that records every call. Cheap to clone; clones share the
/// stubs and the record, so keep one clone for assertions.
#[derive(Clone, Default)]
pub struct StubSource {
    id: String,
    tools: Stubs,
    calls: Arc<Mutex<Vec<RecordedCall>>>,
}

impl StubSource {
    /// An empty stub source with id `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// Adds a stub tool `name` (input schema: any object) answering with `handler`.
    pub fn stub(
        self,
        name: &str,
        handler: impl Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        let descriptor = ToolDescriptor {
            name: name.to_string(),
            description: format!("stub for `{name}`"),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            source: self.id.clone(),
            ..ToolDescriptor::default()
        };
        self.stub_with(descriptor, handler)
    }

    /// Adds a stub tool with a full descriptor.
    pub fn stub_with(
        self,
        descriptor: ToolDescriptor,
        handler: impl Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        lock(&self.tools).push((Arc::new(descriptor), Arc::new(handler)));
        self
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        lock(&self.calls).clone()
    }

    /// The calls made to `tool`, in order.
    pub fn calls_to(&self, tool: &str) -> Vec<RecordedCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.tool == tool)
            .collect()
    }

    /// How many times each tool was called.
    pub fn call_counts(&self) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for c in self.calls() {
            *m.entry(c.tool).or_default() += 1;
        }
        m
    }

    /// Panics unless `tool` was called at least once with exactly `args`.
    #[track_caller]
    pub fn assert_called_with(&self, tool: &str, args: Value) {
        let calls = self.calls_to(tool);
        assert!(
            calls.iter().any(|c| c.args == args),
            "expected a call to `{tool}` with {args}; calls to it: {:?}",
            calls.iter().map(|c| c.args.to_string()).collect::<Vec<_>>()
        );
    }

    /// Panics if `tool` was ever called.
    #[track_caller]
    pub fn assert_not_called(&self, tool: &str) {
        let n = self.calls_to(tool).len();
        assert!(n == 0, "expected no call to `{tool}`, got {n}");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ToolSource for StubSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn tools(&self) -> Vec<SourceTool> {
        lock(&self.tools)
            .iter()
            .map(|(d, _)| SourceTool::named(Arc::clone(d), d.name.as_str()))
            .collect()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let name = tool.name();
        let handler = lock(&self.tools)
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(_, h)| Arc::clone(h));
        lock(&self.calls).push(RecordedCall {
            tool: name.to_string(),
            args: args.clone(),
            caller: ctx.caller().map(str::to_owned),
        });
        ToolFuture::ready(match handler {
            Some(h) => h(args),
            None => Err(ToolError::not_found(name)),
        })
    }
}

/// Calls tool `name` of `source` directly: no toolset, so no catalog, no policy and no argument
/// check (for testing a source on its own). The tool is found by a scan of
/// [`tools`](ToolSource::tools).
///
/// # Errors
/// `not_found` when the source does not list `name`; otherwise whatever the source answers.
pub async fn call_source(
    source: Arc<dyn ToolSource>,
    name: &str,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let Some(tool) = source.tools().into_iter().find(|t| t.name() == name) else {
        return Err(ToolError::not_found(name));
    };
    source.call(&tool, args, ctx).await
}

/// The environment variable that marks the child process [`run_alone`] starts: its value is the
/// path of the one test that child runs.
pub const RUN_ALONE_VAR: &str = "TOOLGATE_TEST_ALONE";

/// Runs one test of the current test binary by itself, in a child process; returns `true` in
/// that child (the caller then runs its body) and `false` in the parent once the child passed
/// (the caller then returns).
///
/// For tests that assert on what was logged. `tracing` caches, per log call site, whether any
/// subscriber wants its events, and computes it when the call site first runs. While exactly
/// one dispatcher is registered (one test's `set_default`), tracing-core takes that as "the
/// global one" and asks the *current thread's* default instead of the registered list: a test
/// thread without a subscriber that reaches a call site first caches "never" for it, for every
/// thread, and the capturing test misses every line from that call site. Calling
/// `tracing::callsite::rebuild_interest_cache` after `set_default` does not help: a call site
/// first reached after it is cached from the other thread's view again. Alone in a process, a test can install its capture as the **global** default before any call site
/// runs, so that no line can be missed, whichever thread logs it.
///
/// `module_path` is the test's `module_path!()`, `test` its function name. The parent runs
/// the binary with `<path> --exact --test-threads=1` and [`RUN_ALONE_VAR`] set, and fails
/// unless exactly that one test ran and passed.
///
/// ```ignore
/// #[test]
/// fn the_warning_is_logged() {
///     if !toolgate::testing::run_alone(module_path!(), "the_warning_is_logged") {
///         return;
///     }
///     tracing::subscriber::set_global_default(capture.clone()).unwrap();
///     // ... code that logs, then assertions on `capture` ...
/// }
/// ```
///
/// # Panics
/// In the parent, when the child cannot be started, fails, or did not run exactly that test
/// (its output is in the message).
pub fn run_alone(module_path: &str, test: &str) -> bool {
    // `module_path!()` starts with the crate's name, which libtest's test paths leave out.
    let path = match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    };
    if std::env::var_os(RUN_ALONE_VAR).is_some_and(|v| v == path.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([path.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(RUN_ALONE_VAR, &path)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" 1 passed;"),
        "test `{path}` run alone: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    false
}
