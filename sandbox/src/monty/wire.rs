//! The messages between the gateway and a monty worker process: one JSON object per line, the
//! run on the worker's stdin first, then tool calls (worker → gateway, on its stdout) and their
//! answers (gateway → worker), then the outcome.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Limits, Mount, RunOutput, RunRequest, SandboxError, ToolCallError};

/// The environment variable that makes a process a monty worker
/// ([`worker_main_if_requested`](super::worker_main_if_requested)).
pub const WORKER_ENV: &str = "TOOLGATE_SANDBOX_WORKER";

/// The run, the first line the worker reads.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Run {
    pub(super) code: String,
    pub(super) limits: Limits,
    pub(super) mounts: Vec<Mount>,
    pub(super) tools: Vec<String>,
}

impl From<RunRequest> for Run {
    fn from(r: RunRequest) -> Self {
        Self {
            code: r.code,
            limits: r.limits,
            mounts: r.mounts,
            tools: r.tools,
        }
    }
}

impl From<Run> for RunRequest {
    fn from(r: Run) -> Self {
        Self {
            code: r.code,
            limits: r.limits,
            mounts: r.mounts,
            tools: r.tools,
        }
    }
}

/// What the worker writes: a tool call to make, or the run's outcome (its last line).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum FromWorker {
    /// Call `name` with `arguments` and answer with a [`ToWorker`].
    Call { name: String, arguments: Value },
    /// The run ended.
    Done(Result<RunOutput, SandboxError>),
}

/// The answer to a [`FromWorker::Call`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ToWorker {
    /// The tool's result.
    Result(Value),
    /// Why the call failed.
    Error(ToolCallError),
}
