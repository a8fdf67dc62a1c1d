//! The worker process: reads requests from its stdin socket, runs each filter on a thread with
//! a large stack, answers, and exits when the parent goes away (even in the middle of a run).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;

use super::engine::{self, OutputLimits, STACK_BYTES};
use super::wire::{self, Hello, MAX_REQUEST_BYTES, PROTOCOL, Request, Response, WORKER_ENV};
use super::{JqError, JqResult};

/// Exit codes of a worker that stops on its own.
mod exit {
    /// The parent closed the socket: the normal end.
    pub(super) const DONE: i32 = 0;
    /// Started as a worker by mistake (wrong protocol version, stdin not a socket).
    pub(super) const MISUSE: i32 = 2;
    /// The parent sent something that is not a request.
    pub(super) const PROTOCOL: i32 = 3;
}

/// Runs the worker if this process was started as one (see
/// [`worker_main_if_requested`](super::worker_main_if_requested)), and never returns then.
pub(super) fn main_if_requested() {
    super::process::mark_hooked();
    if let Some(value) = std::env::var_os(WORKER_ENV) {
        std::process::exit(serve(value));
    }
}

fn serve(value: OsString) -> i32 {
    if value != PROTOCOL {
        eprintln!(
            "{WORKER_ENV}={value:?}: this program speaks jq worker protocol {PROTOCOL}; \
             unset {WORKER_ENV} to run it normally"
        );
        return exit::MISUSE;
    }
    let Some(mut sock) = stdin_socket() else {
        eprintln!(
            "{WORKER_ENV} is set but stdin is not a socket: a jq worker is started by \
             toolgate, not by hand; unset {WORKER_ENV} to run this program normally"
        );
        return exit::MISUSE;
    };
    if wire::write_frame(&mut sock, &Hello::ours()).is_err() {
        return exit::DONE;
    }
    loop {
        let frame = match wire::read_frame(&mut sock, MAX_REQUEST_BYTES) {
            Ok(Some(frame)) => frame,
            Ok(None) => return exit::DONE,
            Err(_) => return exit::PROTOCOL,
        };
        let Ok(request) = serde_json::from_slice::<Request>(&frame) else {
            return exit::PROTOCOL;
        };
        drop(frame);
        let response = handle(request, sock.as_fd());
        if wire::write_frame(&mut sock, &response).is_err() {
            return exit::DONE;
        }
    }
}

/// Our stdin as a socket, if it is one.
fn stdin_socket() -> Option<UnixStream> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = std::fs::File::from(fd);
    if !file.metadata().ok()?.file_type().is_socket() {
        return None;
    }
    Some(UnixStream::from(std::os::fd::OwnedFd::from(file)))
}

/// Runs one request on its own thread; exits the process if the parent hangs up meanwhile.
fn handle(request: Request, parent: BorrowedFd<'_>) -> Response {
    limit_cpu(request.cpu_seconds);
    let memory_mb = request.memory_mb;
    let (result, retire) = match run_on_thread(request, parent) {
        Ok(Ok(result)) => (result, false),
        Ok(Err(panic)) => (Err(panicked(&panic, memory_mb)), true),
        Err(e) => (
            Err(JqError::Crashed {
                detail: format!(
                    "cannot start the filter thread under the worker's memory limit of \
                     {memory_mb} MiB (settings.jq.memory_mb; raise it): {e}"
                ),
            }),
            true,
        ),
    };
    release_memory();
    Response {
        result,
        rss_bytes: resident_bytes(),
        retire,
    }
}

type Outcome = std::thread::Result<Result<JqResult, JqError>>;

fn run_on_thread(request: Request, parent: BorrowedFd<'_>) -> std::io::Result<Outcome> {
    let (done_tx, done_rx) = UnixStream::pair()?;
    let (tx, rx) = mpsc::sync_channel(1);
    let limits = OutputLimits {
        max_results: request.max_results,
        max_bytes: request.max_output_bytes,
    };
    let thread = std::thread::Builder::new()
        .name("toolgate-jq".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let Request { filter, input, .. } = request;
            let outcome = catch_unwind(AssertUnwindSafe(|| engine::run(&filter, input, limits)));
            let _ = tx.send(outcome);
            let _ = (&done_tx).write_all(&[1]);
        })?;
    wait_until_done(parent, &done_rx);
    let outcome = rx.recv().unwrap_or_else(|_| Err(Box::new("no result")));
    let _ = thread.join();
    Ok(outcome)
}

/// Blocks until `done` is readable; exits the process if `parent` becomes readable first
/// (the parent sends nothing while a filter runs: readable means it closed the socket).
fn wait_until_done(parent: BorrowedFd<'_>, mut done: &UnixStream) {
    let mut fds = [
        libc::pollfd {
            fd: parent.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: done.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            std::process::exit(exit::DONE);
        }
        if fds[0].revents != 0 {
            // The parent is gone (or broke the protocol): nobody wants this result.
            std::process::exit(exit::DONE);
        }
        if fds[1].revents != 0 {
            let _ = done.read(&mut [0]);
            return;
        }
    }
}

/// The error for a panic in the engine: "capacity overflow" is an allocation too large to
/// even ask for; anything else is a bug in the engine.
fn panicked(panic: &(dyn std::any::Any + Send), memory_mb: u64) -> JqError {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    if message.contains("capacity overflow") {
        JqError::MemoryLimit {
            limit_mb: memory_mb,
        }
    } else {
        JqError::Crashed {
            detail: format!("the jq engine panicked: {message}"),
        }
    }
}

/// Lets this run use `seconds` more CPU seconds than used so far (`RLIMIT_CPU`, soft limit:
/// SIGXCPU ends the process). A backstop: the parent kills the worker at the wall-clock
/// deadline, this stops it too if the parent could not (it was killed itself, say).
fn limit_cpu(seconds: u64) {
    // SAFETY: plain system calls on local, initialised structs.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return;
        }
        let used = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1).max(0) as u64;
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_CPU, &mut limit) != 0 {
            return;
        }
        limit.rlim_cur = (used.saturating_add(seconds) as libc::rlim_t).min(limit.rlim_max);
        libc::setrlimit(libc::RLIMIT_CPU, &limit);
    }
}

/// Gives freed heap pages back to the system (glibc keeps them otherwise).
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// This process's resident set, in bytes (0 where /proc is not available).
fn resident_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page
}
