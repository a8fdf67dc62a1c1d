//! toolgate's sandbox for model-written code.
//!
//! An [`Engine`] runs a Python snippet isolated from the host: no network, no host files except
//! the read-only [`Mount`]s of the request, no environment variables, and the [`Limits`] of the
//! request (memory, time, output). Nothing survives between two runs. Inside the snippet the
//! tools a [`ToolHost`] offers are functions (`call_tool(name, args)` and
//! `tools.<source>.<tool>(**arguments)`); each call leaves the sandbox, goes through the host
//! (in the gateway: the whole policy pipeline, as the caller who ran the code) and its result or
//! error comes back into Python.
//!
//! Engines (each behind its cargo feature):
//!
//! | engine | feature | what runs the code |
//! | --- | --- | --- |
//! | `monty` | `monty` | pydantic's `monty`, a sandboxed Python interpreter in Rust, in process |
//! | `wasi` | `wasi` | MicroPython built for WASI, run by wasmtime (store limits, epoch interruption) |

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(feature = "monty")]
pub mod monty;

/// A boxed, sendable future: what the engine and host traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a run may use. Every limit is enforced by the engine; going over one ends the run with
/// the matching [`SandboxError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock time of the whole run, tool calls included. Default 5 s.
    #[serde(with = "millis", rename = "time_ms")]
    pub time: Duration,
    /// Memory the interpreter may hold, in bytes. Default 64 MiB.
    pub memory_bytes: u64,
    /// Bytes of stdout and of stderr kept, each; more ends the run. Default 1 MiB.
    pub output_bytes: u64,
    /// Tool calls one run may make. Default 100.
    pub tool_calls: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(5),
            memory_bytes: 64 << 20,
            output_bytes: 1 << 20,
            tool_calls: 100,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// A host directory the code may read (never write), seen inside the sandbox at `guest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the code sees it, an absolute path such as `/data`.
    pub guest: String,
}

/// One run: the code, its limits and mounts, and the tools it may call.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The Python source.
    pub code: String,
    /// What the run may use.
    pub limits: Limits,
    /// Read-only host directories; none by default.
    pub mounts: Vec<Mount>,
    /// The names of the tools the code may call (`{source}.{tool}` or a local tool's name), for
    /// the `tools.<source>.<tool>` namespace; `call_tool` asks the host for any name.
    pub tools: Vec<String>,
}

/// What a finished run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// What the code printed to stdout (at most [`Limits::output_bytes`]).
    pub stdout: String,
    /// What the code printed to stderr (at most [`Limits::output_bytes`]).
    pub stderr: String,
    /// The value of the snippet's last expression, as JSON (`None` when it has none or it is
    /// `None`).
    pub result: Option<serde_json::Value>,
    /// Wall-clock time of the run, in milliseconds.
    pub duration_ms: u64,
    /// Tool calls the code made.
    pub tool_calls: u32,
}

/// Why a run failed. Every variant is something a model can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SandboxError {
    /// The code does not parse.
    #[error("syntax error at line {line}: {message}")]
    Syntax {
        /// The 1-based line.
        line: u32,
        /// The parser's message.
        message: String,
    },
    /// The code raised an exception it did not catch (a tool's error raised in Python included).
    #[error("{exception}: {message}\n{traceback}")]
    Exception {
        /// The exception's type, e.g. `ZeroDivisionError`.
        exception: String,
        /// Its message.
        message: String,
        /// The traceback, innermost call last.
        traceback: String,
        /// What the code printed before it.
        stdout: String,
    },
    /// The run went over [`Limits::time`].
    #[error("the code ran longer than its limit of {limit_ms} ms")]
    Timeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The run went over [`Limits::memory_bytes`].
    #[error("the code used more memory than its limit of {limit_bytes} bytes")]
    Memory {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// The code printed more than [`Limits::output_bytes`].
    #[error("the code printed more than its limit of {limit_bytes} bytes")]
    Output {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// The code made more than [`Limits::tool_calls`] tool calls.
    #[error("the code made more than its limit of {limit} tool calls")]
    ToolCalls {
        /// The limit.
        limit: u32,
    },
    /// The engine runs as many snippets at once as it may; this one waited its whole time
    /// limit for a turn. Worth retrying later.
    #[error("the engine is busy: {limit} runs at once, and none ended within the time limit")]
    Busy {
        /// How many runs the engine takes at once.
        limit: u32,
    },
    /// The engine itself failed (not the code): a missing module file, a broken build.
    #[error("the {engine} engine failed: {message}")]
    Engine {
        /// The engine's name.
        engine: String,
        /// What failed.
        message: String,
    },
}

/// Why a tool call made from code failed: raised inside Python as an exception carrying both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallError {
    /// The error's kind, as the gateway's errors name it (`permission_denied`, `not_found`,
    /// `invalid_arguments`, `budget_exceeded`, ...).
    pub kind: String,
    /// The message.
    pub message: String,
}

/// What the code's tool calls go through. The gateway implements it with the caller who ran
/// the code, so every call gets the same authorization, validation, budgets, rate limits and
/// telemetry as a direct one.
pub trait ToolHost: Send + Sync {
    /// Calls the tool `name` with `arguments` (a JSON object) and returns its result as JSON.
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: serde_json::Value,
    ) -> BoxFuture<'a, Result<serde_json::Value, ToolCallError>>;
}

/// The Python name of a tool or source name in the `tools` namespace: every character that is
/// not an ASCII letter, digit or `_` becomes `_`, and a name that would start with a digit (or
/// be empty) gets a leading `_` (`my-api` → `my_api`, `2fa` → `_2fa`). Engines and the stubs
/// `describe_code_api` writes use this one rule.
pub fn python_name(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

/// An engine that runs Python isolated.
pub trait Engine: Send + Sync {
    /// The engine's name as configured: `monty` or `wasi`.
    fn name(&self) -> &'static str;

    /// Runs `request`; tool calls go to `host` (without one, `call_tool` raises).
    ///
    /// # Errors
    /// [`SandboxError`]: the code's own failure, a limit reached, or the engine's failure.
    fn run(
        &self,
        request: RunRequest,
        host: Option<Arc<dyn ToolHost>>,
    ) -> BoxFuture<'_, Result<RunOutput, SandboxError>>;
}
