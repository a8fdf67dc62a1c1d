//! The stdio transport: an MCP server as a child process, newline-delimited JSON-RPC on its
//! stdin/stdout (MCP 2025-06-18, "Transports").
//!
//! Ours rather than rmcp's `TokioChildProcess` because of what a gateway needs from it:
//! * stdout lines that are not JSON-RPC (a server's log line, a banner) are skipped and logged
//!   with the server's id, rate-limited, and a frame over the size cap is
//!   discarded without being buffered;
//! * stderr is read line by line into our log, never mixed with protocol frames, and its last
//!   lines are kept for error messages: whatever the bytes (invalid UTF-8 is decoded lossily)
//!   and however long a line (its last [`STDERR_LINE_MAX`] bytes are kept), the reading never
//!   stops before the pipe closes (a server whose stderr is not read blocks on a full pipe);
//!   each line is shown with every configured secret masked, then cut to
//!   [`STDERR_SHOWN`] characters (masked first, so no part of a secret survives the cut);
//! * the way the process ended (`exited with status 1`, `killed by signal 9`) is recorded the
//!   moment it ends, and the transport closes then (after a short grace period for its last
//!   output), even when a grandchild still holds stdout open: calls in flight fail with it at
//!   once;
//! * a frame over the size cap is answered, for the request id it starts with, by a JSON-RPC
//!   error, so that the call fails at once instead of waiting for its deadline;
//! * the child runs in its own process group, so that `npx`'s grandchildren are stopped with it:
//!   close stdin, wait, SIGTERM the group, wait, SIGKILL — never a zombie.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

/// The variables of toolgate's environment a stdio server inherits (the TypeScript SDK's
/// default set, plus locale and temp dir); everything else must be given in its `env:`.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
];

/// How many stderr lines are kept for error messages.
const STDERR_TAIL: usize = 8;
/// The most bytes of one stderr line kept while it is read: a longer line (a server writing
/// hundreds of megabytes without a newline) keeps its last this many bytes.
pub(crate) const STDERR_LINE_MAX: usize = 64 * 1024;
/// How many characters of a stderr line are logged and quoted in errors.
pub(crate) const STDERR_SHOWN: usize = 1000;
/// How long the end of stderr is waited for once the process ended (its last lines may still
/// be in the pipe; a grandchild may hold it open).
const STDERR_GRACE: Duration = Duration::from_millis(500);
/// How long `close` waits for the child after closing stdin, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long stdout is still read after the process ended (its last lines may be in the pipe).
const OUTPUT_GRACE: Duration = Duration::from_millis(200);
/// How much of a discarded oversized frame is kept to find its request id.
const FRAME_HEAD: usize = 256;

/// What is known of how a server process ended, and its last stderr lines.
#[derive(Debug)]
pub(crate) struct ProcessLog {
    exit: Mutex<Option<String>>,
    stderr: Mutex<VecDeque<String>>,
    /// `true` once stderr was read to its end.
    stderr_done: watch::Sender<bool>,
}

impl Default for ProcessLog {
    fn default() -> Self {
        Self {
            exit: Mutex::default(),
            stderr: Mutex::default(),
            stderr_done: watch::channel(false).0,
        }
    }
}

impl ProcessLog {
    /// `exited with status 1`, `killed by signal 9`, once known.
    pub(crate) fn exit(&self) -> Option<String> {
        self.exit.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The last lines the process wrote to stderr, oldest first.
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Keeps one stderr line (already masked and cut) for error messages.
    fn push_stderr(&self, line: String) {
        let mut tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    fn set_exit(&self, status: std::process::ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        let what = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            _ => "exited".to_string(),
        };
        *self.exit.lock().unwrap_or_else(|p| p.into_inner()) = Some(what);
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub(crate) struct StdioCommand {
    pub(crate) server: String,
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) cwd: Option<std::path::PathBuf>,
    pub(crate) max_frame_bytes: usize,
}

/// A running server process as an rmcp [`Transport`].
pub(crate) struct StdioTransport {
    server: Arc<str>,
    /// `true` once the process ended (the watcher task owns the `Child` and reaps it).
    exited: watch::Receiver<bool>,
    /// `true` once its stderr was read to the end.
    stderr_done: watch::Receiver<bool>,
    pid: Option<i32>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    /// `Some(first bytes)` while an oversized frame is being skipped.
    discarding: Option<Vec<u8>>,
    max_frame_bytes: usize,
    junk_lines: u64,
}

impl StdioTransport {
    /// Starts the process.
    ///
    /// # Errors
    /// The OS error of spawning it (program not found, not executable, bad cwd).
    pub(crate) fn spawn(cmd: &StdioCommand) -> std::io::Result<(Self, Arc<ProcessLog>)> {
        let mut command = tokio::process::Command::new(&cmd.program);
        // Like the MCP SDKs' stdio clients: the server gets a small safe part of our
        // environment plus what its config gives it, never every secret toolgate was started
        // with.
        command.env_clear();
        for var in INHERITED_ENV {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
        command
            .args(&cmd.args)
            .envs(&cmd.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &cmd.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the child's stdio was not piped"));
        };
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        if let Some(pid) = pid {
            live_groups().insert(pid);
        }
        let log = Arc::new(ProcessLog::default());
        let server: Arc<str> = Arc::from(cmd.server.as_str());
        let (exited_tx, exited) = watch::channel(false);
        {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                if let Ok(status) = child.wait().await {
                    log.set_exit(status);
                }
                if let Some(pid) = pid {
                    live_groups().remove(&pid);
                }
                let _ = exited_tx.send(true);
            });
        }
        tokio::spawn(read_stderr(Arc::clone(&server), stderr, Arc::clone(&log)));
        Ok((
            Self {
                server,
                exited,
                stderr_done: log.stderr_done.subscribe(),
                pid,
                stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
                stdout: BufReader::new(stdout),
                line: Vec::new(),
                discarding: None,
                max_frame_bytes: cmd.max_frame_bytes,
                junk_lines: 0,
            },
            log,
        ))
    }

    /// One complete line: a message, or `None` to skip it. A line that cannot be read (not
    /// JSON, nested deeper than the parser goes, or JSON of the wrong shape) is skipped; when
    /// it is an answer whose id can be read, that request gets an error at once instead of
    /// waiting for its timeout ([`unreadable_answer`]).
    fn parse_line(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let e = match read_line(&self.line)? {
            Ok(message) => return Some(message),
            Err(e) => e,
        };
        let answer = unreadable_answer(&self.line, &e);
        self.junk_lines += 1;
        let n = self.junk_lines;
        // The first few in full, then one in a hundred: a chatty server must not flood the log.
        if n <= 5 || n.is_multiple_of(100) {
            let text = String::from_utf8_lossy(&self.line);
            let shown = toolgate_model::text::cut(&text, 200);
            let what = if e.is_data() {
                "JSON that is not a JSON-RPC message"
            } else {
                "a line that is not JSON"
            };
            tracing::warn!(
                server = %self.server,
                skipped = n,
                "server wrote {what} to stdout (skipped): {shown}"
            );
        }
        answer
    }

    /// Waits (briefly) for the process to end, so that its exit status is known when stdout
    /// closed because it exited, and then for its stderr to be read to the end, so that the
    /// error naming how it ended quotes its last lines.
    async fn record_exit(&mut self) {
        if tokio::time::timeout(Duration::from_secs(1), self.exited.wait_for(|e| *e))
            .await
            .is_ok()
        {
            let mut done = self.stderr_done.clone();
            let _ = tokio::time::timeout(STDERR_GRACE, done.wait_for(|d| *d)).await;
        }
    }

    /// A JSON-RPC error answering the request a discarded oversized frame started, when its id
    /// can be read from the frame's first bytes (`{"jsonrpc":"2.0","id":7,...`).
    fn oversized_answer(&self, head: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        oversized_answer(head, self.max_frame_bytes)
    }

    fn signal_group(pid: Option<i32>, signal: i32) {
        if let Some(pid) = pid {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads
            // (spawned with process_group(0)); it touches no memory of ours.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
    }
}

/// Reads the server's stderr to its end: each line to the log (INFO) and to the process log's
/// tail, masked and cut ([`StderrLine`]). Never stops before the end of the pipe: bytes that are
/// not UTF-8 are decoded lossily, an endless line is bounded; a read error other than an
/// interruption ends it (logged).
async fn read_stderr(
    server: Arc<str>,
    stderr: impl tokio::io::AsyncRead + Unpin,
    log: Arc<ProcessLog>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = StderrLine::default();
    let emit = |line: &mut StderrLine| {
        if let Some(text) = line.finish() {
            tracing::info!(server = %server, "stderr: {text}");
            log.push_stderr(text);
        }
    };
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(server = %server, error = %e, "cannot read the server's stderr");
                break;
            }
        };
        let (take, complete) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        line.push(&chunk[..take - usize::from(complete)]);
        reader.consume(take);
        if complete {
            emit(&mut line);
        }
    }
    emit(&mut line);
    log.stderr_done.send_replace(true);
}

/// One stderr line being read: at most [`STDERR_LINE_MAX`] bytes, the last ones.
#[derive(Debug, Default)]
pub(crate) struct StderrLine {
    bytes: VecDeque<u8>,
    /// How many bytes of the line's start were dropped.
    dropped: usize,
}

impl StderrLine {
    /// Adds bytes of the line (no newline among them).
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let keep = &bytes[bytes.len().saturating_sub(STDERR_LINE_MAX)..];
        self.dropped += bytes.len() - keep.len();
        self.bytes.extend(keep);
        let over = self.bytes.len().saturating_sub(STDERR_LINE_MAX);
        if over > 0 {
            self.bytes.drain(..over);
            self.dropped += over;
        }
    }

    /// How many bytes are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The line as shown, and the buffer emptied for the next: decoded lossily, trailing
    /// whitespace (`\r`) removed, every configured secret masked, then cut to [`STDERR_SHOWN`]
    /// characters: its start, or for a line whose start was dropped `…` and its end (never the
    /// start of what was kept, where a secret cut with the dropped bytes may have left its
    /// end: [`STDERR_LINE_MAX`] bytes are far more than [`STDERR_SHOWN`] characters). `None`
    /// for a blank line.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let bytes = std::mem::take(&mut self.bytes);
        let dropped = std::mem::take(&mut self.dropped);
        let (a, b) = bytes.as_slices();
        let raw = [a, b].concat();
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end();
        if text.trim_start().is_empty() {
            return None;
        }
        if dropped == 0 {
            return Some(toolgate_model::text::cut(text, STDERR_SHOWN).into_owned());
        }
        let shown = toolgate_model::text::cut_front(text, STDERR_SHOWN);
        Some(if shown.starts_with(toolgate_model::text::ELLIPSIS) {
            shown.into_owned()
        } else {
            format!("{}{shown}", toolgate_model::text::ELLIPSIS)
        })
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        async move {
            let mut frame = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            frame.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the server's stdin is closed",
                ));
            };
            stdin.write_all(&frame).await?;
            stdin.flush().await
        }
    }

    /// Cancel-safe: a partial line stays in `self.line` (only `fill_buf`/`consume` touch the
    /// reader, and neither loses data when dropped).
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            // Once the process ended, what is left in the pipe is still read, for a short
            // while: a grandchild holding stdout open must not keep the session alive.
            let mut exited = self.exited.clone();
            let ended = async move {
                let _ = exited.wait_for(|e| *e).await;
                tokio::time::sleep(OUTPUT_GRACE).await;
            };
            let available = tokio::select! {
                biased;
                r = self.stdout.fill_buf() => match r {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        tracing::warn!(server = %self.server, error = %e, "cannot read the server's stdout");
                        self.record_exit().await;
                        return None;
                    }
                },
                () = ended => return None,
            };
            if available.is_empty() {
                self.record_exit().await;
                return None;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let body = &available[..newline.unwrap_or(available.len())];
            match &mut self.discarding {
                Some(head) => {
                    let room = FRAME_HEAD.saturating_sub(head.len());
                    head.extend_from_slice(&body[..body.len().min(room)]);
                }
                None if self.line.len() + body.len() > self.max_frame_bytes => {
                    tracing::error!(
                        server = %self.server,
                        max_bytes = self.max_frame_bytes,
                        "server sent a frame over the size cap; discarded"
                    );
                    let mut head = std::mem::take(&mut self.line);
                    head.extend_from_slice(body);
                    head.truncate(FRAME_HEAD);
                    self.discarding = Some(head);
                }
                None => self.line.extend_from_slice(body),
            }
            self.stdout.consume(take);
            if newline.is_none() {
                continue;
            }
            if let Some(head) = self.discarding.take() {
                if let Some(answer) = self.oversized_answer(&head) {
                    return Some(answer);
                }
                continue;
            }
            let message = self.parse_line();
            self.line.clear();
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let stdin = Arc::clone(&self.stdin);
        let mut exited = self.exited.clone();
        let pid = self.pid;
        async move {
            // MCP's stdio shutdown: close stdin, wait; SIGTERM, wait; SIGKILL. The watcher task
            // reaps the process.
            drop(stdin.lock().await.take());
            for signal in [None, Some(libc::SIGTERM), Some(libc::SIGKILL)] {
                if let Some(signal) = signal {
                    Self::signal_group(pid, signal);
                }
                if tokio::time::timeout(EXIT_GRACE, exited.wait_for(|e| *e))
                    .await
                    .is_ok()
                {
                    break;
                }
            }
            // Whatever the server left behind in its group goes too.
            Self::signal_group(pid, libc::SIGKILL);
            Ok(())
        }
    }
}

/// The process groups of the stdio servers started and not yet seen to exit.
fn live_groups() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<i32>> {
    static LIVE: std::sync::Mutex<std::collections::BTreeSet<i32>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    // A poisoned lock only means a panic elsewhere while it was held: the set is still valid.
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills (SIGKILL) the process group of every stdio MCP server this process started that has
/// not exited yet, and forgets them. For a process about to exit without its async runtime
/// dropping what it holds (`Runtime::shutdown_background`): a server whose session was still
/// starting (its handshake under way when SIGTERM came) is not in any toolset's sources yet,
/// so closing the toolset does not reach it. Returns how many groups were signalled.
pub fn kill_stdio_servers() -> usize {
    let groups: Vec<i32> = std::mem::take(&mut *live_groups()).into_iter().collect();
    for pid in &groups {
        StdioTransport::signal_group(Some(*pid), libc::SIGKILL);
    }
    groups.len()
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // The whole group, so that children of the server (npx → node) go too; tokio's
        // kill_on_drop reaps the direct child.
        if !*self.exited.borrow() {
            Self::signal_group(self.pid, libc::SIGKILL);
        }
    }
}

/// One line of the server's stdout (without its `\n`): `None` when blank, else the message or
/// why it is none. A `\r` before the `\n` and a UTF-8 BOM are ignored.
pub(super) fn read_line(line: &[u8]) -> Option<serde_json::Result<RxJsonRpcMessage<RoleClient>>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(serde_json::from_slice(line))
}

/// The JSON-RPC error that answers, in the server's place, the request whose answer was a
/// frame over `max` bytes, discarded: for the top-level id its first bytes `head` give (an
/// `id` inside `result` is not taken for it). `None` when they give none.
pub(super) fn oversized_answer(head: &[u8], max: usize) -> Option<RxJsonRpcMessage<RoleClient>> {
    error_answer(
        head,
        format!("the server's answer was over the {max}-byte frame limit and was discarded"),
    )
}

/// The JSON-RPC error that answers, in the server's place, the request whose answer `line`
/// could not be read (`e`: not JSON, nested deeper than serde_json's 128 levels, or JSON that
/// is no JSON-RPC message of MCP's), when the line's top-level id can be read and the line is
/// no request of the server's. `None` otherwise.
pub(super) fn unreadable_answer(
    line: &[u8],
    e: &serde_json::Error,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    error_answer(
        line,
        format!("the server's answer could not be read and was discarded: {e}"),
    )
}

/// An error answer with `message` for the request the frame starting with `head` answers.
fn error_answer(head: &[u8], message: String) -> Option<RxJsonRpcMessage<RoleClient>> {
    let id = super::frame_id::answered_id(head)?;
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}
    }))
    .ok()
}

#[cfg(test)]
mod tests;
