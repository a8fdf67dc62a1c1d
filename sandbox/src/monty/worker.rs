//! The worker's side: a process started only to run one snippet, so that whatever the snippet
//! does to memory or the native stack ends that process, never the gateway.
//!
//! It reads the run from stdin, limits its own address space to what it holds once started plus
//! the run's memory limit (`RLIMIT_AS`), runs the snippet with [`driver::run`], forwards each
//! tool call to the gateway over stdout/stdin and writes the outcome as its last line.

use std::io::{BufRead, Write};
use std::sync::Arc;

use super::driver;
use super::wire::{FromWorker, Run, ToWorker, WORKER_ENV};
use crate::{BoxFuture, ToolCallError, ToolHost};

/// Room in the address space for what the run needs besides the snippet's own data: the
/// interpreter thread's stack reservation ([`driver::STACK_BYTES`]) and the runtime's.
const OVERHEAD_BYTES: u64 = driver::STACK_BYTES as u64 + (16 << 20);
/// The most a tool call made from code may send as arguments, as JSON: what the gateway takes
/// as a whole request body by default (`gateway.max_body_bytes`).
pub(super) const ARGUMENT_BYTES: usize = 4 << 20;
/// The deepest a value crossing the process boundary may nest (JSON parsers stop at 128).
const MAX_DEPTH: usize = 100;
/// The most of an exception's message and of its traceback kept.
const EXCEPTION_BYTES: usize = 16 << 10;

/// When the environment variable [`WORKER_ENV`] is set, serves one run as a monty worker and
/// exits; otherwise returns at once. A binary that offers code mode with process isolation
/// calls it first thing in `main` (the `toolgate` binary does).
pub fn worker_main_if_requested() {
    if std::env::var_os(WORKER_ENV).is_none() {
        return;
    }
    let code = match serve() {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "monty worker: {e}");
            2
        }
    };
    std::process::exit(code);
}

fn serve() -> Result<(), String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the run: {e}"))?;
    let run: Run =
        serde_json::from_str(&line).map_err(|e| format!("a run that is not one: {e}"))?;
    limit_address_space(run.limits.memory_bytes)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let output_bytes = run.limits.output_bytes;
    let outcome = runtime.block_on(driver::run(run.into(), Some(Arc::new(PipeHost))));
    send(&FromWorker::Done(bounded(outcome, output_bytes)))
}

/// The outcome as it may cross to the gateway: a result that nests deeper than [`MAX_DEPTH`]
/// or is larger than the output limit is refused as such, an exception's message and traceback
/// are cut.
fn bounded(
    outcome: Result<crate::RunOutput, crate::SandboxError>,
    output_bytes: u64,
) -> Result<crate::RunOutput, crate::SandboxError> {
    use crate::SandboxError;
    match outcome {
        Ok(out) => {
            if let Some(result) = &out.result {
                if depth(result) > MAX_DEPTH {
                    return Err(SandboxError::Exception {
                        exception: "ValueError".into(),
                        message: format!(
                            "the result nests deeper than {MAX_DEPTH} levels: return something flatter"
                        ),
                        traceback: String::new(),
                        stdout: out.stdout,
                    });
                }
                let size = serde_json::to_string(result).map_or(0, |t| t.len());
                if u64::try_from(size).unwrap_or(u64::MAX) > output_bytes {
                    return Err(SandboxError::Output {
                        limit_bytes: output_bytes,
                    });
                }
            }
            Ok(out)
        }
        Err(SandboxError::Exception {
            exception,
            message,
            traceback,
            stdout,
        }) => Err(SandboxError::Exception {
            exception,
            message: cut(message, EXCEPTION_BYTES),
            traceback: cut(traceback, EXCEPTION_BYTES),
            stdout,
        }),
        Err(e) => Err(e),
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), with `…` when cut.
pub(super) fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// How deep `value` nests (a scalar is 0), without recursion.
fn depth(value: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            serde_json::Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Writes one message as a line on stdout.
fn send(message: &FromWorker) -> Result<(), String> {
    let mut text = serde_json::to_string(message).map_err(|e| format!("cannot encode: {e}"))?;
    text.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to the gateway: {e}"))
}

/// Tool calls go to the gateway over the pipes. The worker does nothing else meanwhile, so the
/// blocking read is fine; the gateway bounds the wait (it kills the worker at the deadline).
struct PipeHost;

impl ToolHost for PipeHost {
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: serde_json::Value,
    ) -> BoxFuture<'a, Result<serde_json::Value, ToolCallError>> {
        Box::pin(async move {
            let broken = |message: String| ToolCallError {
                kind: "internal".into(),
                message,
            };
            let refused = |message: String| ToolCallError {
                kind: "invalid_arguments".into(),
                message,
            };
            if depth(&arguments) > MAX_DEPTH {
                return Err(refused(format!(
                    "the arguments nest deeper than {MAX_DEPTH} levels"
                )));
            }
            let size = serde_json::to_string(&arguments).map_or(0, |t| t.len());
            if size > ARGUMENT_BYTES {
                return Err(refused(format!(
                    "arguments of {size} bytes: a call from code may send at most {ARGUMENT_BYTES}"
                )));
            }
            send(&FromWorker::Call {
                name: name.to_owned(),
                arguments,
            })
            .map_err(broken)?;
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| broken(format!("cannot read the answer: {e}")))?;
            match serde_json::from_str::<ToWorker>(&line) {
                Ok(ToWorker::Result(value)) => Ok(value),
                Ok(ToWorker::Error(e)) => Err(e),
                Err(e) => Err(broken(format!("an answer that is not one: {e}"))),
            }
        })
    }
}

/// `RLIMIT_AS` = what the process maps now + the run's memory limit + [`OVERHEAD_BYTES`]: an
/// allocation past it fails, and the worker aborts (the gateway reports the memory limit).
fn limit_address_space(memory_bytes: u64) -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    let mapped_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmSize in /proc/self/status")?;
    let limit = (mapped_kib * 1024)
        .saturating_add(memory_bytes)
        .saturating_add(OVERHEAD_BYTES);
    let rlimit = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: setrlimit reads only the struct passed.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &rlimit) } != 0 {
        return Err(format!(
            "cannot limit the address space: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
