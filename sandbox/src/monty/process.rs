//! The gateway's side of a monty worker process: one process per run, started with the
//! environment variable [`WORKER_ENV`] so that it serves the run
//! ([`worker_main_if_requested`](super::worker_main_if_requested)) and exits.
//!
//! What the process gives that a thread cannot: the memory limit holds for a snippet that grows
//! step by step (its address space is limited, `RLIMIT_AS`, and an allocation past it ends the
//! worker, not the gateway), and a native stack overflow or any abort in the interpreter ends
//! only the worker. The worker gets no environment variable of the gateway's (only
//! [`WORKER_ENV`] and `MALLOC_ARENA_MAX=1`), no core dump, no file writes (`RLIMIT_FSIZE` 0),
//! at most 64 open files, and CPU time up to the run's time limit + 2 s (`RLIMIT_CPU`); the
//! gateway kills it at the time limit + 1 s.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::Instant;

use super::driver::WATCHDOG_GRACE;
use super::wire::{FromWorker, Run, ToWorker, WORKER_ENV};
use super::worker::{ARGUMENT_BYTES, cut};
use crate::{RunOutput, RunRequest, SandboxError, ToolCallError, ToolHost};
use tokio::sync::Semaphore;

/// The most of the worker's stderr kept for an error message.
const STDERR_BYTES: u64 = 16 << 10;
/// How long an ended worker is waited for, for its exit status.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// How to start a monty worker: a program whose `main` calls
/// [`worker_main_if_requested`](super::worker_main_if_requested) first, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    program: PathBuf,
    args: Vec<OsString>,
}

impl WorkerCommand {
    /// `program` (a path), without arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// This program again: `/proc/self/exe` on Linux (the running binary even if its file was
    /// replaced since, so the gateway and its workers always speak the same protocol).
    pub fn current_exe() -> Self {
        let program = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"))
        };
        Self::new(program)
    }

    /// This test binary, running only the test `test` (its path in the crate), which must call
    /// [`worker_main_if_requested`](super::worker_main_if_requested): for unit tests, whose
    /// `main` libtest owns.
    pub fn libtest(test: &str) -> Self {
        Self::current_exe()
            .arg("--exact")
            .arg(test)
            .arg("--nocapture")
            .arg("--quiet")
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }
}

fn engine_error(message: impl Into<String>) -> SandboxError {
    SandboxError::Engine {
        engine: "monty".into(),
        message: message.into(),
    }
}

/// How many worker processes run at once: a run waits for a turn.
#[derive(Debug, Clone)]
pub(super) struct Turns {
    permits: Arc<Semaphore>,
    max: u32,
}

impl Turns {
    /// `n` (at least 1) runs at once.
    pub(super) fn new(n: usize) -> Self {
        let n = n.max(1);
        Self {
            permits: Arc::new(Semaphore::new(n)),
            max: u32::try_from(n).unwrap_or(u32::MAX),
        }
    }
}

/// Runs `request` in a fresh worker process started by `command`, once `turns` has a turn free
/// (waiting at most the run's time limit: then [`SandboxError::Busy`]).
pub(super) async fn run(
    command: &WorkerCommand,
    turns: &Turns,
    request: RunRequest,
    host: Option<Arc<dyn ToolHost>>,
) -> Result<RunOutput, SandboxError> {
    let limits = request.limits.clone();
    let Ok(Ok(_turn)) = tokio::time::timeout(limits.time, turns.permits.acquire()).await else {
        return Err(SandboxError::Busy { limit: turns.max });
    };
    let started = Instant::now();
    // Tool calls end at the time limit; the worker gets a second more to stop on its own.
    let run_deadline = started + limits.time;
    let deadline = run_deadline + WATCHDOG_GRACE;
    let timeout = || SandboxError::Timeout {
        limit_ms: u64::try_from(limits.time.as_millis()).unwrap_or(u64::MAX),
    };
    let mut child = spawn(command, limits.time)?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(engine_error("the worker's stdio was not piped"));
    };
    let stderr = tokio::spawn(async move {
        let mut text = Vec::new();
        let _ = stderr.take(STDERR_BYTES).read_to_end(&mut text).await;
        String::from_utf8_lossy(&text).into_owned()
    });
    let mut stdout = BufReader::new(stdout);
    // A tool call's arguments, or the outcome (stdout, stderr and the result, each within the
    // output limit as the worker checks): past this the worker broke its own bounds.
    let max_line = limits
        .output_bytes
        .saturating_mul(3)
        .max(ARGUMENT_BYTES as u64)
        .saturating_add(1 << 20);
    let run = serde_json::to_string(&Run::from(request))
        .map_err(|e| engine_error(format!("cannot encode the run: {e}")))?;
    if let Err(e) = write_line(&mut stdin, run).await {
        return Err(ended(child, stderr, Some(e), &limits).await);
    }
    let mut calls: u32 = 0;
    loop {
        let mut line = Vec::new();
        let mut limited = (&mut stdout).take(max_line);
        let read = limited.read_until(b'\n', &mut line);
        match tokio::time::timeout_at(deadline, read).await {
            Err(_) => return Err(timeout()),
            Ok(Err(e)) => return Err(engine_error(format!("cannot read the worker: {e}"))),
            Ok(Ok(0)) => return Err(ended(child, stderr, None, &limits).await),
            Ok(Ok(_)) if !line.ends_with(b"\n") => {
                return Err(SandboxError::Output {
                    limit_bytes: limits.output_bytes,
                });
            }
            Ok(Ok(_)) => {}
        }
        // Messages are JSON objects; anything else before them (a test harness's banner when
        // the worker is a test binary) is not the worker's.
        if !line.starts_with(b"{") {
            continue;
        }
        let message = match serde_json::from_slice::<FromWorker>(&line) {
            Ok(message) => message,
            Err(e) => {
                return Err(engine_error(format!(
                    "the worker wrote what is no message of its protocol: {e}"
                )));
            }
        };
        let (name, arguments) = match message {
            FromWorker::Done(outcome) => {
                let _ = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
                return outcome;
            }
            FromWorker::Call { name, arguments } => (name, arguments),
        };
        calls += 1;
        // The worker counts too; this holds even if it did not.
        if calls > limits.tool_calls {
            return Err(SandboxError::ToolCalls {
                limit: limits.tool_calls,
            });
        }
        let answer = match &host {
            Some(host) => {
                match tokio::time::timeout_at(run_deadline, host.call_tool(&name, arguments)).await
                {
                    Err(_) => return Err(timeout()),
                    Ok(Ok(value)) => ToWorker::Result(value),
                    Ok(Err(e)) => ToWorker::Error(e),
                }
            }
            None => ToWorker::Error(ToolCallError {
                kind: "not_found".into(),
                message: "no tools are available to this run".into(),
            }),
        };
        let answer = serde_json::to_string(&answer)
            .map_err(|e| engine_error(format!("cannot encode a tool's answer: {e}")))?;
        if let Err(e) = write_line(&mut stdin, answer).await {
            return Err(ended(child, stderr, Some(e), &limits).await);
        }
    }
}

async fn write_line(stdin: &mut ChildStdin, mut line: String) -> std::io::Result<()> {
    line.push('\n');
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await
}

fn spawn(command: &WorkerCommand, time: Duration) -> Result<Child, SandboxError> {
    let cpu_seconds = time.as_secs().saturating_add(2);
    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args)
        .env_clear()
        .env(WORKER_ENV, "1")
        // One malloc arena: no 64 MiB reservation per thread counted against RLIMIT_AS.
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe system calls (setrlimit) on values copied into it.
    unsafe {
        cmd.pre_exec(move || {
            // No gaining privileges through exec (set-user-id programs, file capabilities).
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            set_limit(libc::RLIMIT_CORE, 0)?;
            set_limit(libc::RLIMIT_FSIZE, 0)?;
            set_limit(libc::RLIMIT_NOFILE, 64)?;
            set_limit(libc::RLIMIT_CPU, cpu_seconds)
        });
    }
    cmd.spawn().map_err(|e| {
        engine_error(format!(
            "cannot start the monty worker {}: {e}",
            command.program.display()
        ))
    })
}

fn set_limit(resource: Resource, value: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: value as libc::rlim_t,
    };
    // SAFETY: setrlimit reads only the struct passed; async-signal-safe.
    if unsafe { libc::setrlimit(resource, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// Why a worker ended without an outcome: its memory limit (an allocation failed), its CPU
/// time, a native stack overflow, or another failure named by its exit and stderr.
async fn ended(
    mut child: Child,
    stderr: tokio::task::JoinHandle<String>,
    write_error: Option<std::io::Error>,
    limits: &crate::Limits,
) -> SandboxError {
    let status = match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => {
            let _ = child.start_kill();
            None
        }
    };
    let stderr = tokio::time::timeout(EXIT_WAIT, stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    // Rust's message when an allocation fails (the address space is full): the memory limit.
    if stderr.contains("memory allocation of") {
        return SandboxError::Memory {
            limit_bytes: limits.memory_bytes,
        };
    }
    let how = match status {
        Some(s) if s.signal() == Some(libc::SIGXCPU) => {
            return SandboxError::Timeout {
                limit_ms: u64::try_from(limits.time.as_millis()).unwrap_or(u64::MAX),
            };
        }
        Some(s) => s.to_string(),
        None => "did not exit".into(),
    };
    let mut message = format!("the worker process ended without an outcome ({how})");
    if stderr.contains("has overflowed its stack") {
        message.push_str(": the code nests too deeply for the interpreter's stack");
    } else if let Some(e) = write_error {
        message.push_str(&format!("; writing to it: {e}"));
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    if let Some(last) = last {
        message.push_str(&format!("; it said: {}", cut(last.to_owned(), 300)));
    }
    engine_error(message)
}
