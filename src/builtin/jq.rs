//! `jq`: run a jq filter on a JSON document.
//!
//! Built on the `jaq` crates (jaq-core 3, jaq-std 3, jaq-json 2): a fast, well-tested Rust
//! implementation of the jq language. Bounds on the work, since filters come from a model:
//!
//! - filters longer than [`MAX_FILTER_CHARS`] are refused before parsing;
//! - user-defined recursive functions (`def f: ... f ...;`) are refused: deep recursion in jaq
//!   overflows the stack, which would abort the whole process (the library's own recursive
//!   definitions such as `recurse` or `walk` are allowed: they recurse over data);
//! - at most [`MAX_RESULTS`] outputs are collected (`truncated` says if more were cut) and at
//!   most about [`MAX_OUTPUT_BYTES`] of JSON;
//! - the filter runs on its own thread with a large stack and a deadline ([`TIMEOUT`]). jaq has
//!   no cancellation, so a filter that overruns keeps its thread until it ends on its own;
//!   at most [`MAX_THREADS`] such threads exist at once, further calls fail fast
//!   ([`JqError::Busy`]). A deliberately hostile filter can still use CPU and memory until
//!   it finishes; isolate the tool in a process with resource limits if that matters.
//!
//! No I/O is exposed: `env`/`$ENV` are not defined, `input`/`inputs` are not provided,
//! `stderr` only passes its input through, and `halt` is an error (never a process exit).

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use jaq_core::{
    Compiler, Ctx, Vars, data,
    load::{self, Arena, File, Loader},
};
use jaq_json::Val;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod check;
mod convert;

/// Longest accepted filter, in characters.
pub const MAX_FILTER_CHARS: usize = 4096;
/// Most outputs returned.
pub const MAX_RESULTS: usize = 1000;
/// Largest total output, in bytes of JSON (approximately).
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;
/// How long a call waits for the filter.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Most filter threads alive at once, counting those that overran [`TIMEOUT`].
pub const MAX_THREADS: usize = 4;
/// Stack of a filter thread (reserved address space; only what is used is committed).
const STACK_BYTES: usize = 512 * 1024 * 1024;

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
#[derive(Debug, thiserror::Error)]
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
    /// The filter did not finish in time.
    #[error("filter did not finish within {} ms", .timeout.as_millis())]
    Timeout {
        /// The deadline.
        timeout: Duration,
    },
    /// Too many filters are still running (some may have overrun their deadline).
    #[error("too many jq filters running, try again later")]
    Busy,
}

static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Releases a thread slot when the filter thread ends, whenever that is.
struct Slot;

impl Slot {
    fn acquire() -> Option<Self> {
        THREADS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_THREADS).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        THREADS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Run `args.filter` on `args.input`. Blocks for at most [`TIMEOUT`]: call it from a blocking
/// context (`tokio::task::spawn_blocking`) in async code.
pub fn jq(args: JqArgs) -> Result<JqResult, JqError> {
    let JqArgs { filter, input } = args;
    let chars = filter.chars().count();
    if chars > MAX_FILTER_CHARS {
        return Err(JqError::Rejected {
            reason: format!("{chars} characters, more than the limit of {MAX_FILTER_CHARS}"),
        });
    }
    let slot = Slot::acquire().ok_or(JqError::Busy)?;
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("toolgate-jq".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let result = run(&filter, input);
            drop(slot);
            // The receiver is gone after a timeout; the result is then dropped here.
            let _ = tx.send(result);
        })
        .map_err(|e| JqError::Runtime {
            message: format!("cannot start the filter thread: {e}"),
        })?;
    match rx.recv_timeout(TIMEOUT) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(JqError::Timeout { timeout: TIMEOUT }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(JqError::Runtime {
            message: "the filter thread stopped unexpectedly".into(),
        }),
    }
}

/// The checks a filter passes before it runs (length, syntax, no recursive definition, every
/// name defined), without running it: `Ok` exactly when [`jq`] would start running it.
///
/// An entry point for the fuzz targets in `fuzz/`, not an API.
#[doc(hidden)]
pub fn check_filter(filter: &str) -> Result<(), JqError> {
    let chars = filter.chars().count();
    if chars > MAX_FILTER_CHARS {
        return Err(JqError::Rejected {
            reason: format!("{chars} characters, more than the limit of {MAX_FILTER_CHARS}"),
        });
    }
    compile(filter).map(drop)
}

/// Parses, checks and compiles a filter.
fn compile(code: &str) -> Result<jaq_core::Filter<data::JustLut<Val>>, JqError> {
    // Natives that reach outside the filter are left out: `env` (secrets live in the
    // environment) and `stderr_empty` (replaced below by a definition that prints nothing).
    let funs = jaq_std::funs::<data::JustLut<Val>>()
        .filter(|(name, _, _)| !matches!(*name, "env" | "stderr_empty"));
    let funs = jaq_core::funs().chain(funs).chain(jaq_json::funs());
    let quiet = load::parse("def stderr_empty: empty;", |p| p.defs()).unwrap_or_default();
    let defs = jaq_core::defs()
        .chain(quiet)
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());

    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(&arena, File { code, path: () })
        .map_err(|errs| check::load_error(code, errs))?;
    check::no_recursion(code)?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| check::compile_error(code, errs))
}

/// Parse, check, compile and run a filter on the current thread.
fn run(code: &str, input: Value) -> Result<JqResult, JqError> {
    let filter = compile(code)?;
    let input = Val::deserialize(input).map_err(|e| JqError::Runtime {
        message: format!("invalid input: {e}"),
    })?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut out = convert::Collector::default();
    for item in filter.id.run((ctx, input)) {
        let value = item.map_err(|exn| match exn.get_err() {
            // jq shows a string error's text without quotes, anything else as JSON.
            Ok(err) => JqError::Runtime {
                message: match err.into_val() {
                    Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(&b).into_owned(),
                    other => other.to_string(),
                },
            },
            Err(exn) => match exn.get_halt() {
                Ok(code) => JqError::Runtime {
                    message: format!("halt({code}) is not supported"),
                },
                Err(_) => JqError::Runtime {
                    message: "unexpected control flow".into(),
                },
            },
        })?;
        if out.results.len() == MAX_RESULTS {
            out.truncated = true;
            break;
        }
        out.push(&value)?;
    }
    Ok(JqResult {
        results: out.results,
        truncated: out.truncated,
    })
}

#[cfg(test)]
mod tests;
