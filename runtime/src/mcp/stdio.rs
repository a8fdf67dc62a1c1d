//! The stdio transport: an MCP server as a child process, newline-delimited JSON-RPC on its
//! stdin/stdout (MCP 2025-06-18, "Transports").
//!
//! Ours rather than rmcp's `TokioChildProcess` because of what a gateway needs from it:
//! * stdout lines that are not JSON-RPC (a server's log line, a banner) are skipped and logged
//!   with the server's id, rate-limited (cases.md C20), and a frame over the size cap is
//!   discarded without being buffered (C30);
//! * stderr is read line by line into our log, never mixed with protocol frames, and its last
//!   lines are kept for error messages;
//! * the way the process ended (`exited with status 1`, `killed by signal 9`) is recorded the
//!   moment it ends, and the transport closes then (after a short grace period for its last
//!   output), even when a grandchild still holds stdout open: calls in flight fail with it at
//!   once (C21);
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
/// How long `close` waits for the child after closing stdin, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long stdout is still read after the process ended (its last lines may be in the pipe).
const OUTPUT_GRACE: Duration = Duration::from_millis(200);
/// How much of a discarded oversized frame is kept to find its request id.
const FRAME_HEAD: usize = 256;

/// What is known of how a server process ended, and its last stderr lines.
#[derive(Debug, Default)]
pub(crate) struct ProcessLog {
    exit: Mutex<Option<String>>,
    stderr: Mutex<VecDeque<String>>,
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
        let log = Arc::new(ProcessLog::default());
        let server: Arc<str> = Arc::from(cmd.server.as_str());
        let (exited_tx, exited) = watch::channel(false);
        {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                if let Ok(status) = child.wait().await {
                    log.set_exit(status);
                }
                let _ = exited_tx.send(true);
            });
        }
        // Environment values given to the server may be secrets: never logged as it echoes them.
        let secrets: Arc<[String]> = cmd.env.values().filter(|v| v.len() >= 6).cloned().collect();
        tokio::spawn(read_stderr(
            Arc::clone(&server),
            secrets,
            BufReader::new(stderr),
            Arc::clone(&log),
        ));
        Ok((
            Self {
                server,
                exited,
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

    /// One complete line: a message, or `None` to skip it.
    fn parse_line(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let e = match read_line(&self.line)? {
            Ok(message) => return Some(message),
            Err(e) => e,
        };
        self.junk_lines += 1;
        let n = self.junk_lines;
        // The first few in full, then one in a hundred: a chatty server must not flood the log.
        if n <= 5 || n.is_multiple_of(100) {
            let text = String::from_utf8_lossy(&self.line);
            let shown: String = text.chars().take(200).collect();
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
        None
    }

    /// Waits (briefly) for the process to end, so that its exit status is known when stdout
    /// closed because it exited.
    async fn record_exit(&mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.exited.wait_for(|e| *e)).await;
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

async fn read_stderr(
    server: Arc<str>,
    secrets: Arc<[String]>,
    mut stderr: BufReader<tokio::process::ChildStderr>,
    log: Arc<ProcessLog>,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match stderr.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = line.trim_end();
                if text.is_empty() {
                    continue;
                }
                let mut text: String = text.chars().take(1000).collect();
                for secret in secrets.iter() {
                    if text.contains(secret.as_str()) {
                        text = text.replace(secret.as_str(), "[redacted]");
                    }
                }
                tracing::info!(server = %server, "stderr: {text}");
                let mut tail = log.stderr.lock().unwrap_or_else(|p| p.into_inner());
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(text);
            }
        }
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
    let id = super::frame_id::top_level_id(head)?;
    let message =
        format!("the server's answer was over the {max}-byte frame limit and was discarded");
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn answered_id(head: &str) -> Option<Value> {
        let answer = oversized_answer(head.as_bytes(), 64)?;
        serde_json::to_value(answer).ok().map(|v| v["id"].clone())
    }

    /// The request an oversized answer belongs to is the one its top-level `id` names: an
    /// `id` inside `result` is not it, and a string id keeps its escaped quotes (the first
    /// `"id"` in the text and the text up to the next quote were taken before).
    #[test]
    fn an_oversized_answer_is_matched_by_its_top_level_id() {
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","result":{"id":3,"text":"x"},"id":7,"more":"aaaa"#),
            Some(json!(7))
        );
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","id":"a\"b","result":{"text":"aaaa"#),
            Some(json!("a\"b"))
        );
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","result":{"id":3,"text":"aaaa"#),
            None
        );
        assert_eq!(
            answered_id(r#"{"jsonrpc":"2.0","id":12,"result":{"#),
            Some(json!(12))
        );
    }

    #[test]
    fn blank_lines_are_skipped_and_junk_is_reported() {
        assert!(read_line(b"  \r").is_none());
        assert!(read_line(b"\xEF\xBB\xBF").is_none());
        assert!(read_line(b"starting server...").is_some_and(|r| r.is_err()));
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(read_line(ping).is_some_and(|r| r.is_ok()));
    }
}
