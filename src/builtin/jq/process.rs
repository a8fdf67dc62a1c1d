//! Starting, talking to and stopping one worker process (the parent's side).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::JqError;
use super::wire::{self, Hello, PROTOCOL, Response, WORKER_ENV};

/// How to start a jq worker process: a program and its arguments. The process gets the
/// environment variable `TOOLGATE_JQ_WORKER` and must call
/// [`worker_main_if_requested`](super::worker_main_if_requested) before anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    program: PathBuf,
    args: Vec<OsString>,
}

impl WorkerCommand {
    /// `program` (a path), without arguments. Any program whose `main` starts with
    /// [`worker_main_if_requested`](super::worker_main_if_requested) will do, such as the
    /// `toolgate` binary.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// This program again: `/proc/self/exe` on Linux (the running binary even if its file was
    /// replaced since, so parent and worker always speak the same protocol).
    pub fn current_exe() -> Self {
        let program = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"))
        };
        Self::new(program)
    }

    /// This test binary, running only the test `test` (its path inside the crate, e.g.
    /// `tools::tests::jq_worker`), which must call
    /// [`worker_main_if_requested`](super::worker_main_if_requested). For unit tests of a
    /// crate that embeds the built-in tools: libtest owns their `main`.
    pub fn libtest(test: &str) -> Self {
        Self::current_exe()
            .arg("--exact")
            .arg(test)
            .arg("--nocapture")
            .arg("--quiet")
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }
}

static COMMAND: RwLock<Option<WorkerCommand>> = RwLock::new(None);
static HOOKED: AtomicBool = AtomicBool::new(false);

/// Starts jq workers with `command` from now on (in every pool of this process). Without it,
/// workers are this program again, if its `main` called
/// [`worker_main_if_requested`](super::worker_main_if_requested).
pub fn set_worker_command(command: WorkerCommand) {
    *COMMAND.write().unwrap_or_else(|e| e.into_inner()) = Some(command);
}

pub(super) fn mark_hooked() {
    HOOKED.store(true, Ordering::Release);
}

/// The command workers are started with, or why there is none.
pub(super) fn worker_command() -> Result<WorkerCommand, JqError> {
    let configured = COMMAND.read().unwrap_or_else(|e| e.into_inner()).clone();
    resolve(configured, HOOKED.load(Ordering::Acquire))
}

/// The command set with [`set_worker_command`], else this program if its `main` calls the
/// hook (`hooked`), else an error: a program without the hook would run as itself.
pub(super) fn resolve(
    configured: Option<WorkerCommand>,
    hooked: bool,
) -> Result<WorkerCommand, JqError> {
    if let Some(command) = configured {
        return Ok(command);
    }
    if hooked {
        return Ok(WorkerCommand::current_exe());
    }
    Err(JqError::Unavailable {
        reason: "jq runs filters in a worker process started from this program, but this \
                 program did not call toolgate::builtin::jq::worker_main_if_requested() at the \
                 start of main (or name a worker program with \
                 toolgate::builtin::jq::set_worker_command)"
            .into(),
    })
}

/// Limits a worker is started with.
#[derive(Debug, Clone, Copy)]
pub(super) struct StartLimits {
    /// `RLIMIT_AS`, bytes.
    pub(super) memory_bytes: u64,
    /// `RLIMIT_CPU` until the first request raises it, seconds.
    pub(super) cpu_seconds: u64,
}

/// One running worker, idle between requests.
pub(super) struct Worker {
    child: Child,
    sock: UnixStream,
    stderr: Option<ChildStderr>,
}

/// Why an exchange with a worker did not give a response.
#[derive(Debug)]
pub(super) enum Failure {
    /// The deadline passed.
    Timeout,
    /// The caller gave up.
    Cancelled,
    /// The worker closed its end: it ended (see [`Worker::end`]). `sent` says whether the
    /// whole request had been written.
    Ended { sent: bool },
    /// The worker answered with something that is not a response.
    Protocol(String),
}

/// How often a wait checks whether its caller cancelled.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// Largest response read from a worker (results are cut at about 4 MiB of JSON; escaping can
/// make the frame several times that).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

impl Worker {
    /// Starts `command` with `limits` and waits for its hello until `deadline`.
    ///
    /// # Errors
    /// [`JqError::Unavailable`] when the program cannot be started, or does not greet in time
    /// (it is not a jq worker).
    pub(super) fn start(
        command: &WorkerCommand,
        limits: StartLimits,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Self, JqError> {
        let unavailable = |reason: String| JqError::Unavailable { reason };
        let (sock, theirs) = UnixStream::pair()
            .map_err(|e| unavailable(format!("cannot create the worker's socket: {e}")))?;
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .arg0("toolgate-jq-worker")
            // Nothing of the parent's environment (its secrets) reaches a filter's process.
            .env_clear()
            .env(WORKER_ENV, PROTOCOL)
            // One malloc arena: a second one reserves 64 MiB of the address-space limit.
            .env("MALLOC_ARENA_MAX", "1")
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(path) = std::env::var_os("LD_LIBRARY_PATH") {
            cmd.env("LD_LIBRARY_PATH", path);
        }
        // SAFETY: the closure runs in the child between fork and exec and only makes
        // async-signal-safe system calls (getrlimit/setrlimit) on values copied into it.
        unsafe {
            cmd.pre_exec(move || set_limits(limits));
        }
        let mut child = cmd.spawn().map_err(|e| {
            unavailable(format!(
                "cannot start the jq worker {}: {e}",
                command.program.display()
            ))
        })?;
        // Our copy of the child's end must go, or its exit would not close the socket.
        drop(cmd);
        let stderr = child.stderr.take();
        let mut worker = Self {
            child,
            sock,
            stderr,
        };
        let hello = worker.read_frame(deadline, cancelled, 4096);
        let greeted = hello
            .as_ref()
            .ok()
            .and_then(|frame| serde_json::from_slice::<Hello>(frame).ok())
            .is_some_and(|h| h.worker == Hello::ours().worker && h.protocol == PROTOCOL);
        if greeted {
            return Ok(worker);
        }
        let why = match hello {
            Err(Failure::Cancelled) => return Err(JqError::Cancelled),
            Err(Failure::Timeout) => "did not greet in time".to_string(),
            Err(Failure::Ended { .. }) => {
                let (status, _) = worker.end();
                format!("exited at start ({})", describe(status))
            }
            Ok(_) | Err(Failure::Protocol(_)) => "answered with something else".to_string(),
        };
        Err(unavailable(format!(
            "the jq worker {} {why}; is it a program that calls \
             toolgate::builtin::jq::worker_main_if_requested() first thing in main?",
            command.program.display()
        )))
    }

    /// Whether the process has ended (an idle worker killed from outside, say).
    pub(super) fn has_ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request frame and reads the response, until `deadline`.
    pub(super) fn exchange(
        &mut self,
        request: &[u8],
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Response, Failure> {
        self.write_all(request, deadline, cancelled)?;
        let frame = self
            .read_frame(deadline, cancelled, MAX_RESPONSE_BYTES)
            .map_err(|f| match f {
                Failure::Ended { .. } => Failure::Ended { sent: true },
                other => other,
            })?;
        serde_json::from_slice(&frame).map_err(|e| Failure::Protocol(e.to_string()))
    }

    fn write_all(
        &mut self,
        mut buf: &[u8],
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), Failure> {
        while !buf.is_empty() {
            let slice = wait_slice(deadline, cancelled)?;
            let _ = self.sock.set_write_timeout(Some(slice));
            match self.sock.write(buf) {
                Ok(0) => return Err(Failure::Ended { sent: false }),
                Ok(n) => buf = &buf[n..],
                Err(e) if retry(&e) => {}
                Err(_) => return Err(Failure::Ended { sent: false }),
            }
        }
        Ok(())
    }

    fn read_exact(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), Failure> {
        let mut filled = 0;
        while filled < buf.len() {
            let slice = wait_slice(deadline, cancelled)?;
            let _ = self.sock.set_read_timeout(Some(slice));
            match self.sock.read(&mut buf[filled..]) {
                Ok(0) => return Err(Failure::Ended { sent: false }),
                Ok(n) => filled += n,
                Err(e) if retry(&e) => {}
                Err(_) => return Err(Failure::Ended { sent: false }),
            }
        }
        Ok(())
    }

    fn read_frame(
        &mut self,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
        max: usize,
    ) -> Result<Vec<u8>, Failure> {
        let mut len = [0; 4];
        self.read_exact(&mut len, deadline, cancelled)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > max {
            return Err(Failure::Protocol(wire::too_big(len, max).to_string()));
        }
        let mut buf = vec![0; len];
        self.read_exact(&mut buf, deadline, cancelled)?;
        Ok(buf)
    }

    /// Kills the process (SIGKILL; nothing if it has ended already), reaps it, and returns
    /// how it ended and the start of what it wrote on stderr.
    pub(super) fn end(&mut self) -> (Option<std::process::ExitStatus>, String) {
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        let mut text = Vec::new();
        if let Some(stderr) = self.stderr.take() {
            // The process is gone, so this ends at once (at most 64 KiB wait in the pipe).
            let _ = stderr.take(16 * 1024).read_to_end(&mut text);
        }
        (status, String::from_utf8_lossy(&text).into_owned())
    }

    /// Ends the process (if it has not ended) and says why a request got no answer: the
    /// worker's own last words (Rust's stack overflow and allocation failure messages) or
    /// the signal that ended it.
    pub(super) fn crash_error(mut self, memory_mb: u64, timeout: Duration) -> JqError {
        let (status, stderr) = self.end();
        let signal = status.and_then(|s| s.signal());
        if stderr.contains("has overflowed its stack") {
            JqError::StackOverflow
        } else if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
            JqError::MemoryLimit {
                limit_mb: memory_mb,
            }
        } else if signal == Some(libc::SIGXCPU) {
            JqError::Timeout { timeout }
        } else {
            JqError::Crashed {
                detail: describe(status),
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.end();
    }
}

/// "killed by signal 9 (SIGKILL)", "exit status 3".
fn describe(status: Option<std::process::ExitStatus>) -> String {
    match status {
        None => "status unknown".into(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(libc::SIGKILL)) => {
                "killed by SIGKILL, perhaps by the system's out-of-memory killer".into()
            }
            (None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None) => "status unknown".into(),
        },
    }
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// How long the next blocking step may wait: until the deadline, but at most
/// [`CANCEL_CHECK`].
fn wait_slice(deadline: Instant, cancelled: &dyn Fn() -> bool) -> Result<Duration, Failure> {
    if cancelled() {
        return Err(Failure::Cancelled);
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Failure::Timeout);
    }
    Ok(left.clamp(Duration::from_millis(1), CANCEL_CHECK))
}

/// In the child, before exec: the address-space limit, no core dumps (an aborting worker would
/// write its whole heap), no files, and a first CPU limit (each request sets its own).
fn set_limits(limits: StartLimits) -> io::Result<()> {
    fn set(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit write/read only the struct passed; async-signal-safe.
        unsafe {
            if libc::getrlimit(resource, &mut current) != 0 {
                return Err(io::Error::last_os_error());
            }
            let hard = (hard as libc::rlim_t).min(current.rlim_max);
            let limit = libc::rlimit {
                rlim_cur: (soft as libc::rlim_t).min(hard),
                rlim_max: hard,
            };
            if libc::setrlimit(resource, &limit) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
    set(libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes)?;
    set(libc::RLIMIT_CORE, 0, 0)?;
    set(libc::RLIMIT_FSIZE, 0, 0)?;
    set(libc::RLIMIT_CPU, limits.cpu_seconds, u64::MAX)?;
    Ok(())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;
