//! `jq`: run a jq filter on a JSON document.
//!
//! Built on the `jaq` crates (jaq-core 3, jaq-std 3, jaq-json 2): a fast, well-tested Rust
//! implementation of the jq language. Filters come from a model, so they are treated as
//! hostile: a filter can nest values a million levels deep (every recursive operation on such
//! a value overflows a stack), ask for terabytes, or loop forever, and jaq has no limits or
//! cancellation of its own. So filters do not run in the caller's process.
//!
//! # Worker processes
//!
//! A [`JqPool`] runs each filter in a **worker process**: the current program started again
//! with the environment variable `TOOLGATE_JQ_WORKER` set (or another program, see
//! [`set_worker_command`]). The program's `main` must call [`worker_main_if_requested`] before
//! anything else: in a worker it serves filters on its stdin (one end of a Unix socket pair)
//! and exits, never returning; otherwise it returns at once. The `toolgate` binary does this.
//! A program that embeds the built-in tools (feature `builtin`) does the same:
//!
//! ```no_run
//! toolgate::builtin::jq::worker_main_if_requested();
//! // ... the program, which may call the `jq` tool.
//! ```
//!
//! A program that did not call it is never started as a worker: `jq` then fails at once with
//! [`JqError::Unavailable`] saying so. Unit tests (libtest owns their `main`) name a test that
//! calls the hook with [`WorkerCommand::libtest`]; integration tests can name the `toolgate`
//! binary (`WorkerCommand::new(env!("CARGO_BIN_EXE_toolgate"))`).
//!
//! The worker's environment is cleared (the parent's secrets stay with the parent), its
//! current directory is `/`, and it gets these limits (`setrlimit` in the child before exec):
//!
//! | limit | default | setting | when exceeded |
//! | --- | --- | --- | --- |
//! | address space (`RLIMIT_AS`) | 512 MiB | `jq.memory_mb` | allocation fails, the worker aborts: [`JqError::MemoryLimit`] |
//! | wall clock, per call | 2000 ms ([`TIMEOUT`]) | `jq.timeout_ms` | the parent kills the worker (SIGKILL) and reaps it: [`JqError::Timeout`] |
//! | CPU (`RLIMIT_CPU`) | the timeout rounded up + 1 s, per call | — | SIGXCPU: a backstop for when the parent cannot kill (it died itself) |
//! | core dumps, files written (`RLIMIT_CORE`, `RLIMIT_FSIZE`) | 0 | — | no core file of a crashed worker, no file output |
//! | filter thread stack | 64 MiB (part of the address space) | — | the worker aborts: [`JqError::StackOverflow`] |
//!
//! The call's deadline covers everything, a worker's start included; at the deadline the
//! worker is killed and reaped and the call's slot is free again, so a runaway filter holds
//! nothing afterwards. A worker also exits by itself when the parent closes its socket, even
//! in the middle of a filter (it watches the socket while the filter runs), so workers never
//! outlive the gateway. A crashed worker (stack overflow, allocation failure, any signal) is
//! a typed error, never a crash of the caller; such a worker, one that timed out, one whose
//! engine panicked and one that holds more than 64 MiB after a run are replaced, never
//! reused. The rest stay warm for the next call: starting a worker costs a few milliseconds
//! (measured: see the README), a warm call costs a socket round trip.
//!
//! At most [`JqSettings::workers`] filters (default [`MAX_WORKERS`]) run at once, each in its
//! own worker; further calls fail at once with [`JqError::Busy`] (`rate_limited`). So the most
//! memory all filters can use together is `workers × memory_mb` (2 GiB by default).
//!
//! # Limits on filters and values
//!
//! - filters longer than [`MAX_FILTER_CHARS`] are refused before anything runs;
//! - user-defined recursive functions (`def f: ... f ...;`) are refused: recursion without a
//!   bound is what stacks overflow on (the library's own recursive definitions such as
//!   `recurse` or `walk` are allowed: they recurse over data);
//! - an input nested deeper than [`MAX_DEPTH`] levels is refused (checked without recursion
//!   before it leaves the caller);
//! - at most [`MAX_RESULTS`] outputs are collected (`truncated` says if more were cut), at most
//!   about [`MAX_OUTPUT_BYTES`] of JSON, none nested deeper than [`MAX_DEPTH`] levels
//!   ([`JqError::OutputTooLarge`]);
//! - `tojson`, `tostring` and what is built on it (`@text`, `@json`, `@html`, `@base64`,
//!   `join`, ...) and `walk` refuse values nested deeper than [`MAX_VALUE_DEPTH`] levels with
//!   a jq error (`try` can catch it) instead of recursing into them; values a filter leaves
//!   behind are taken apart without recursion. Other operations that recurse over a value
//!   nested that deep (string interpolation, `==`, `sort`, error messages that show it, ...)
//!   can still overflow the worker's stack: [`JqError::StackOverflow`], the worker replaced.
//!
//! No I/O is exposed: `env`/`$ENV` are not defined, `input`/`inputs` are not provided,
//! `stderr` only passes its input through, and `halt` is an error (never a process exit).
//! [`check_filter`] runs the static checks (length, syntax, names, recursion) without running
//! anything, for callers that want to vet filters cheaply or fuzz the checks.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod check;
mod convert;
mod engine;
mod pool;
mod process;
mod wire;
mod worker;

pub use engine::MAX_VALUE_DEPTH;
pub use pool::JqPool;
pub use process::{WorkerCommand, set_worker_command};

/// Longest accepted filter, in characters.
pub const MAX_FILTER_CHARS: usize = 4096;
/// Most outputs returned.
pub const MAX_RESULTS: usize = 1000;
/// Largest total output, in bytes of JSON (approximately).
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting of the input and of each output, in levels of arrays and objects (`1` and
/// `[]` are 0 and 1 levels deep, `{"a": [1]}` is 2).
pub const MAX_DEPTH: usize = 100;
/// Default of [`JqSettings::timeout_ms`]: how long a call may take.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Default of [`JqSettings::workers`]: most filters running at once.
pub const MAX_WORKERS: usize = 4;
/// Default of [`JqSettings::memory_mb`]: each worker's address-space limit, in MiB.
pub const MEMORY_MB: u64 = 512;
/// Smallest accepted [`JqSettings::memory_mb`]: the worker's program (the whole toolgate
/// binary, mapped), its 64 MiB filter stack and a little heap must fit. 128 MiB no longer did
/// once the binary grew (the filter thread could not start); a worker that cannot start its
/// thread under a larger limit says so and names this setting.
pub const MIN_MEMORY_MB: u64 = 256;

/// Arguments of `jq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JqArgs {
    /// A jq filter (jq 1.7 language, as implemented by jaq), e.g. ".items[] | select(.price <
    /// 10) | .name", "[.[] | .id] | length", "to_entries | map(\"\\(.key)=\\(.value)\")".
    /// At most 4096 characters. Recursive user-defined functions are not allowed; there is
    /// no I/O (no env, input or halt).
    pub filter: String,
    /// The JSON document the filter reads as its input `.`.
    pub input: Value,
}

/// The outputs of a filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JqResult {
    /// Every value the filter produced, in order (jq prints each on its own line). Numbers
    /// that are not finite become null; strings are UTF-8.
    pub results: Vec<Value>,
    /// True if the filter produced more than 1000 values and only the first 1000 are given.
    pub truncated: bool,
}

/// Why `jq` failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum JqError {
    /// The filter was refused before running (too long, recursive definition, ...).
    #[error("filter rejected: {reason}")]
    Rejected {
        /// Why.
        reason: String,
    },
    /// The filter has a syntax error or names something undefined.
    #[error("{message} at line {line}, column {column} (offset {offset})")]
    Parse {
        /// What is wrong, e.g. "expected term, found \"]\"" or "undefined filter foo/1".
        message: String,
        /// Byte offset in the filter.
        offset: usize,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
    },
    /// The filter raised an error while running (jq's `error`, a type error, ...).
    #[error("jq error: {message}")]
    Runtime {
        /// jq's message, e.g. "cannot index number with \"a\"".
        message: String,
    },
    /// The output is too large (more than about 4 MiB of JSON, or nested too deeply).
    #[error("output too large: {reason}")]
    OutputTooLarge {
        /// Which limit was hit.
        reason: String,
    },
    /// The filter did not finish in time; its worker was killed.
    #[error("filter did not finish within {} ms and was stopped", .timeout.as_millis())]
    Timeout {
        /// The time limit.
        timeout: Duration,
    },
    /// The filter needed more memory than its worker may have; the worker was replaced.
    #[error("filter exceeded its memory limit of {limit_mb} MiB and was stopped")]
    MemoryLimit {
        /// The limit, in MiB.
        limit_mb: u64,
    },
    /// The filter nested values or calls too deeply for its worker's stack; the worker was
    /// replaced.
    #[error("filter was stopped: it nested values or calls too deeply and overflowed its stack")]
    StackOverflow,
    /// The worker ended without an answer for another reason (a signal from outside, an
    /// engine panic); it was replaced.
    #[error("the jq worker stopped unexpectedly: {detail}")]
    Crashed {
        /// How it ended, e.g. "killed by signal 11".
        detail: String,
    },
    /// No worker process can be started (see the module documentation).
    #[error("jq is unavailable: {reason}")]
    Unavailable {
        /// Why, and what to do about it.
        reason: String,
    },
    /// The caller cancelled the call; its worker was killed.
    #[error("cancelled")]
    Cancelled,
    /// All workers are running filters.
    #[error("too many jq filters running, try again later")]
    Busy,
}

/// Operator settings of `jq`: the `settings.jq` section of tools.yaml.
///
/// ```yaml
/// settings:
///   jq: {memory_mb: 512, timeout_ms: 2000, workers: 4}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JqSettings {
    /// Address-space limit of each worker process (`RLIMIT_AS`), in MiB; at least 128. The
    /// program's own mappings and the filter's 64 MiB stack count too. Default 512.
    pub memory_mb: u64,
    /// How long one call may take, in milliseconds, starting a worker included; the worker is
    /// killed then. At least 1. Default 2000.
    pub timeout_ms: u64,
    /// Most filters running at once, one worker process each (and most warm workers kept);
    /// further calls are refused as `rate_limited`. At least 1. Default 4.
    pub workers: usize,
}

impl Default for JqSettings {
    fn default() -> Self {
        Self {
            memory_mb: MEMORY_MB,
            timeout_ms: TIMEOUT.as_millis() as u64,
            workers: MAX_WORKERS,
        }
    }
}

impl JqSettings {
    /// The first value out of range, as (field name, message).
    ///
    /// # Errors
    /// `memory_mb` below [`MIN_MEMORY_MB`], `timeout_ms` or `workers` 0.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.memory_mb < MIN_MEMORY_MB {
            return Err((
                "memory_mb",
                format!(
                    "{} MiB is too little for a jq worker; at least {MIN_MEMORY_MB}",
                    self.memory_mb
                ),
            ));
        }
        if self.timeout_ms == 0 {
            return Err(("timeout_ms", "must be at least 1".into()));
        }
        if self.workers == 0 {
            return Err(("workers", "must be at least 1".into()));
        }
        Ok(())
    }

    /// These settings with values out of range moved into it.
    fn clamped(&self) -> Self {
        Self {
            memory_mb: self.memory_mb.max(MIN_MEMORY_MB),
            timeout_ms: self.timeout_ms.max(1),
            workers: self.workers.max(1),
        }
    }
}

/// Runs `args.filter` on `args.input` in a worker of the process-wide [`JqPool::global`]
/// (default settings). Blocks for at most [`TIMEOUT`] (plus the moment it takes to kill a
/// worker): call it from a blocking context (`tokio::task::spawn_blocking`) in async code.
///
/// # Errors
/// See [`JqError`].
pub fn jq(args: JqArgs) -> Result<JqResult, JqError> {
    JqPool::global().run(args)
}

/// Serves filters and exits if this process was started as a jq worker; returns at once
/// otherwise. Call it first thing in `main` of every program that runs `jq` (see the module
/// documentation); it also tells the pools that this program can be started as a worker.
pub fn worker_main_if_requested() {
    worker::main_if_requested();
}

/// The static checks of a filter, without running it: its length ([`MAX_FILTER_CHARS`]), its
/// syntax, the names it uses (no `env`, `input`, modules) and no recursive definitions.
/// Parsing recurses as deep as the filter nests, so this runs on a thread of its own with a
/// 64 MiB stack; safe to call from any thread, and cheap enough for a fuzzer.
///
/// # Errors
/// [`JqError::Rejected`] or [`JqError::Parse`].
pub fn check_filter(filter: &str) -> Result<(), JqError> {
    let chars = filter.chars().count();
    if chars > MAX_FILTER_CHARS {
        return Err(JqError::Rejected {
            reason: format!("{chars} characters, more than the limit of {MAX_FILTER_CHARS}"),
        });
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("toolgate-jq-check".into())
            .stack_size(engine::STACK_BYTES)
            .spawn_scoped(scope, || engine::check(filter))
            .map_err(|e| JqError::Crashed {
                detail: format!("cannot start the check thread: {e}"),
            })?
            .join()
            .unwrap_or_else(|_| {
                Err(JqError::Crashed {
                    detail: "the jq parser panicked".into(),
                })
            })
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_limits;
