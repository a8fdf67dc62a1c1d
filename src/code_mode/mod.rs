//! Code mode: model-written Python, run in a sandbox, with the toolset's tools as functions
//! (docs/code-mode.md).
//!
//! Two tools (source `code_mode`, names not prefixed), offered over MCP, REST and
//! `toolgate call` when tools.yaml sets `gateway.code_mode.enabled`:
//!
//! | tool | in | out |
//! | --- | --- | --- |
//! | [`RUN_PYTHON`] | `{code}` | `{stdout, stderr, result, duration_ms, tool_calls}` |
//! | [`DESCRIBE_CODE_API`] | `{query?, limit?}` | `{stubs, tools}`: typed Python stubs |
//!
//! Inside the code, `call_tool(name, args)` and `tools.<source>.<tool>(**arguments)` call the
//! toolset's tools **as the caller who ran the code**: each call goes through
//! [`ToolContext::call_tool`](crate::ToolContext::call_tool), so it gets the caller's
//! authorization, argument validation, budgets, rate limits and telemetry, exactly as a direct
//! call. A refused call raises inside Python (`PermissionError("policy_denied: ...")`, see
//! [`toolgate_sandbox`]). Code cannot run code: `run_python` called from code is refused.
//!
//! The engine ([`toolgate_sandbox::Engine`]) comes from [`engine_from_config`]: `monty` (the
//! default) or `wasi` (not built in yet: a configuration error).

mod host;
mod source;
mod stubs;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use toolgate_model::config::{CodeEngine, CodeModeConfig};
pub use toolgate_sandbox::{Engine, Limits, Mount, SandboxError};

pub use source::CodeModeSource;
pub use stubs::python_stubs;
pub use toolgate_sandbox::monty::{WorkerCommand, worker_main_if_requested};

/// The tool that runs Python.
pub const RUN_PYTHON: &str = "run_python";
/// The tool that describes the functions code may call, as Python stubs.
pub const DESCRIBE_CODE_API: &str = "describe_code_api";

/// What code mode runs with: the engine, each run's limits and read-only mounts.
#[derive(Clone)]
pub struct CodeModeSettings {
    /// The engine that runs the code.
    pub engine: Arc<dyn Engine>,
    /// What one run may use.
    pub limits: Limits,
    /// Host folders the code may read, each at its guest path.
    pub mounts: Vec<Mount>,
}

impl std::fmt::Debug for CodeModeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeModeSettings")
            .field("engine", &self.engine.name())
            .field("limits", &self.limits)
            .field("mounts", &self.mounts)
            .finish()
    }
}

impl Default for CodeModeSettings {
    /// The `monty` engine with the default [`Limits`] and no mount.
    fn default() -> Self {
        Self {
            engine: Arc::new(toolgate_sandbox::monty::MontyEngine::new()),
            limits: Limits::default(),
            mounts: Vec::new(),
        }
    }
}

/// A setting of `gateway.code_mode` this build cannot honour: where it is in tools.yaml (a
/// JSON pointer) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodeModeConfigError {
    /// The setting, as a JSON pointer into tools.yaml (`/gateway/code_mode/engine`).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// The engine `config` names, with its limits (defaults for those left out) and mounts (host
/// folders relative to `base`, the tools.yaml's folder).
///
/// The seam for the second engine: `engine: wasi` will construct
/// `toolgate_sandbox::wasi::WasiEngine` here once the sandbox crate has it (cargo feature
/// `wasi`); until then it is a configuration error.
///
/// `worker` runs each monty snippet in a process of its own
/// ([`MontyEngine::isolated`](toolgate_sandbox::monty::MontyEngine::isolated)): the memory limit
/// then holds for memory grown step by step, and a crash of the interpreter ends only that
/// process. The `toolgate` binary passes itself; `None` runs snippets on a thread of this
/// process.
///
/// # Errors
/// [`CodeModeConfigError`]: `engine: wasi` (this build has no WASI engine), or a mount whose
/// host folder is not a folder.
pub fn engine_from_config(
    config: &CodeModeConfig,
    base: &Path,
    worker: Option<toolgate_sandbox::monty::WorkerCommand>,
) -> Result<CodeModeSettings, CodeModeConfigError> {
    let engine: Arc<dyn Engine> = match config.engine {
        CodeEngine::Monty => Arc::new(match worker {
            Some(worker) => toolgate_sandbox::monty::MontyEngine::isolated(worker),
            None => toolgate_sandbox::monty::MontyEngine::new(),
        }),
        CodeEngine::Wasi => {
            return Err(CodeModeConfigError {
                pointer: "/gateway/code_mode/engine".into(),
                message: "`engine: wasi`: this toolgate was built without the wasi feature".into(),
            });
        }
    };
    let defaults = Limits::default();
    let given = &config.limits;
    let limits = Limits {
        time: given.time_ms.map_or(defaults.time, Duration::from_millis),
        memory_bytes: given.memory_bytes.unwrap_or(defaults.memory_bytes),
        output_bytes: given.output_bytes.unwrap_or(defaults.output_bytes),
        tool_calls: given.tool_calls.unwrap_or(defaults.tool_calls),
    };
    let mut mounts = Vec::with_capacity(config.mounts.len());
    for (i, mount) in config.mounts.iter().enumerate() {
        let host = base.join(&mount.host);
        if !host.is_dir() {
            return Err(CodeModeConfigError {
                pointer: format!("/gateway/code_mode/mounts/{i}/host"),
                message: format!(
                    "`host: {}` is not a folder (relative paths start at the tools.yaml's folder)",
                    mount.host
                ),
            });
        }
        mounts.push(Mount {
            host,
            guest: mount.guest.trim_end_matches('/').to_owned(),
        });
    }
    Ok(CodeModeSettings {
        engine,
        limits,
        mounts,
    })
}

/// Adds code mode to a [`ToolsetBuilder`](crate::ToolsetBuilder).
pub trait CodeModeExt {
    /// Offers `run_python` and `describe_code_api` (source `code_mode`) running code with
    /// `settings`. Use it once per builder.
    #[must_use]
    fn code_mode(self, settings: CodeModeSettings) -> Self;
}

impl CodeModeExt for crate::ToolsetBuilder {
    fn code_mode(self, settings: CodeModeSettings) -> Self {
        self.source(CodeModeSource::new(settings))
    }
}
