//! The `monty` engine: pydantic's sandboxed Python interpreter (crates.io `monty`), in process.
//!
//! monty parses the snippet with Ruff's parser and runs it on its own bytecode VM: no CPython,
//! no host access of its own. Everything that would reach the host stops the interpreter and
//! asks this engine instead:
//!
//! - a tool call (`call_tool(name, args)`, `tools.<source>.<tool>(**arguments)`) suspends it;
//!   the engine awaits the [`ToolHost`] on the async side and resumes the interpreter with the
//!   result, or with the tool's error raised as a Python exception;
//! - a file, environment or clock operation (`open`, `pathlib.Path.read_text`, `os.getenv`,
//!   `os.environ`, `datetime.now`) suspends it as an OS call the engine refuses: files raise
//!   `PermissionError`, the rest `RuntimeError` ("... is not supported in this environment");
//!   a file under one of the request's read-only [`Mount`](crate::Mount)s is read for it;
//! - there is no `socket`, `subprocess` or `sys.modules` to import: `import socket` raises
//!   `ModuleNotFoundError`.
//!
//! The interpreter's steps run on tokio's blocking pool (a step is CPU work between two tool
//! calls); no tokio worker ever runs Python.
//!
//! Limits: time through monty's execution-time limit (reset before each resume to what is
//! left of [`Limits::time`](crate::Limits::time), so the limit is wall-clock, tool calls
//! included) and a watchdog one second past it; memory through monty's up-front size checks
//! (a repeat, a `list * n`, a big power, a string join is refused before it allocates more than
//! [`Limits::memory_bytes`](crate::Limits::memory_bytes)); output through a capped writer. A
//! program that grows memory step by step (appending in a loop) is not measured by this engine:
//! monty measures that only with its own global allocator, which would count the whole gateway
//! process; the time limit bounds it. See docs/code-mode.md.

mod convert;
mod driver;
mod files;
mod process;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_isolated;
mod wire;
mod worker;

pub use process::WorkerCommand;
pub use wire::WORKER_ENV;
pub use worker::worker_main_if_requested;

use std::sync::Arc;

use process::Turns;

use crate::{BoxFuture, Engine, RunOutput, RunRequest, SandboxError, ToolHost};

/// The `monty` engine. Stateless: every run starts a fresh interpreter, so nothing survives
/// between two runs.
///
/// [`MontyEngine::new`] runs the interpreter on a thread of this process: a snippet that grows
/// memory step by step (appending in a loop) is bounded only by the time limit there, and a
/// failure of the interpreter's own is one of this process. [`MontyEngine::isolated`] runs each
/// snippet in a worker process of its own instead (see [`WorkerCommand`]): the memory limit then
/// holds for every allocation, and whatever the snippet does ends only that process. The
/// gateway uses the isolated form.
#[derive(Debug, Clone, Default)]
pub struct MontyEngine {
    worker: Option<(WorkerCommand, Turns)>,
}

impl MontyEngine {
    /// The engine, running the interpreter in this process.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The engine, running each snippet in a fresh worker process started by `worker` (a
    /// program whose `main` calls [`worker_main_if_requested`] first, such as the `toolgate`
    /// binary: [`WorkerCommand::current_exe`]).
    #[must_use]
    ///
    /// At most twice as many workers as the machine has cores run at once (at least 2): a run
    /// waits for a turn at most its time limit, then fails with
    /// [`SandboxError::Busy`](crate::SandboxError::Busy). [`max_runs`](Self::max_runs) sets
    /// another number.
    pub fn isolated(worker: WorkerCommand) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self {
            worker: Some((worker, Turns::new((2 * cores).max(2)))),
        }
    }

    /// At most `n` (at least 1) worker processes at once; no effect on the in-process engine.
    #[must_use]
    pub fn max_runs(mut self, n: usize) -> Self {
        if let Some((_, turns)) = &mut self.worker {
            *turns = Turns::new(n);
        }
        self
    }
}

impl Engine for MontyEngine {
    fn name(&self) -> &'static str {
        "monty"
    }

    fn run(
        &self,
        request: RunRequest,
        host: Option<Arc<dyn ToolHost>>,
    ) -> BoxFuture<'_, Result<RunOutput, SandboxError>> {
        match &self.worker {
            Some((worker, turns)) => Box::pin(process::run(worker, turns, request, host)),
            None => Box::pin(driver::run(request, host)),
        }
    }
}
