//! The gateway as an MCP server on stdin/stdout (`toolgate serve --stdio`; MCP 2025-06-18
//! "Transports", stdio): newline-delimited JSON-RPC messages in both directions.
//!
//! Ours rather than rmcp's `transport-io`, which skips a line that is not JSON without a word
//! and answers an invalid message without its id. Here (server side):
//! * a line that is not JSON is answered with
//!   `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, JSON that is
//!   no JSON-RPC message with -32600 (with its id when it has one), a request whose params do not
//!   fit with -32602; the session stays open either way;
//! * a UTF-8 BOM before a message is ignored, and so are blank lines; a `\r` before the `\n` too;
//! * reads are buffered until `\n` (one message split across reads, several in one read);
//! * a line over [`MAX_FRAME_BYTES`] is never buffered whole: it is skipped, and answered with
//!   -32600 for the id it starts with (when that can be read from its first bytes);
//! * stdout carries nothing but JSON-RPC messages, one per line (the log goes to stderr);
//! * when stdin closes or the gateway shuts down, requests already read get their answers within
//!   the gateway's grace period before the session ends.

pub(super) mod channel;
pub(super) mod frame;

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use self::channel::{ChannelSession, Inbox};
use self::frame::{INVALID_REQUEST, Parsed};
use super::McpHandler;
use crate::gateway::{Caller, Gateway, GatewayError};

/// The longest line (one JSON-RPC message, newline excluded) read from stdin: 64 MiB. A longer
/// one is skipped, never buffered whole.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// How much of a skipped oversized line is kept to find the id of the request it starts.
const FRAME_HEAD_BYTES: usize = 4096;
/// Messages buffered between the stdin reader and the session (backpressure on stdin beyond).
const INCOMING_CAPACITY: usize = 64;
/// Lines buffered for stdout (backpressure on the session beyond).
const OUTGOING_CAPACITY: usize = 64;
/// How long the last answers get to reach stdout once the session ended.
const FLUSH_BOUND: Duration = Duration::from_secs(5);
/// How long the session's end (rmcp's own drain included) may take once it was closed.
const SESSION_END_BOUND: Duration = Duration::from_secs(10);

/// Serves `gateway` on stdin/stdout as one MCP session (caller: anonymous) until stdin closes or
/// the gateway shuts down; see the [module docs](self) for the framing rules.
///
/// # Errors
/// [`GatewayError::Io`] when stdin cannot be read or stdout cannot be written (a closed stdout
/// — the client went away — is no error).
pub async fn serve(gateway: &Gateway) -> Result<(), GatewayError> {
    serve_io(gateway, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve`] on any byte streams: `input` carries the client's messages, `output` the
/// gateway's, each one JSON-RPC message per line. Returns when `input` ends or the gateway
/// shuts down, after requests already read were answered (within the gateway's grace period).
///
/// # Errors
/// [`GatewayError::Io`] when `input` cannot be read or `output` cannot be written (a broken
/// pipe on `output` is no error: the client is gone).
pub async fn serve_io<R, W>(gateway: &Gateway, input: R, output: W) -> Result<(), GatewayError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<String>(OUTGOING_CAPACITY);
    let mut writer = tokio::spawn(write_lines(BufWriter::new(output), out_rx));
    let (session, inbox) = ChannelSession::new("stdio", INCOMING_CAPACITY, out_tx.clone(), None);
    let (pending, closing) = (session.pending(), session.closing());
    let session = {
        let gateway = gateway.clone();
        tokio::spawn(
            session.run(move |r| McpHandler::with_reasons(gateway.clone(), Caller::default(), r)),
        )
    };

    let shutdown = gateway.shutdown_token();
    let mut write_result = None;
    let read_result = tokio::select! {
        r = read_lines(input, inbox, out_tx.clone()) => r,
        () = shutdown.cancelled() => Ok(()),
        r = &mut writer => {
            write_result = Some(r);
            Ok(())
        }
    };
    if write_result.is_none() {
        channel::wind_down(gateway, &pending, "stdio").await;
    }
    closing.cancel();
    if tokio::time::timeout(SESSION_END_BOUND, session)
        .await
        .is_err()
    {
        tracing::warn!("stdio: the MCP session did not end within {SESSION_END_BOUND:?}");
    }
    drop(out_tx);
    let write_result = match write_result {
        Some(r) => Some(r),
        None => tokio::time::timeout(FLUSH_BOUND, &mut writer).await.ok(),
    };
    writer.abort();
    read_result.map_err(|e| io_error("cannot read stdin", e))?;
    match write_result {
        Some(Ok(Err(e))) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(io_error("cannot write stdout", e))
        }
        Some(Ok(Err(_))) => {
            tracing::debug!("stdio: stdout is closed; the client went away");
            Ok(())
        }
        Some(Err(e)) => Err(io_error(
            "the stdout writer failed",
            std::io::Error::other(e),
        )),
        Some(Ok(Ok(()))) => Ok(()),
        None => {
            tracing::warn!("stdio: the last answers were not written within {FLUSH_BOUND:?}");
            Ok(())
        }
    }
}

fn io_error(what: &str, e: std::io::Error) -> GatewayError {
    GatewayError::Io(std::io::Error::new(e.kind(), format!("stdio: {what}: {e}")))
}

/// Writes each message as one line, every configured secret masked (`gateway::redact`),
/// flushing whenever no more are queued. Ends when every sender is gone (`Ok`) or `output`
/// fails.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::Receiver<String>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        let line = crate::gateway::redact::line_masked(line);
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        if lines.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

/// Reads `input` line by line until it ends, handing messages to the session through `messages`
/// and writing the answers to invalid lines to `answers`. A last line without `\n` is read
/// too.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    messages: Inbox,
    answers: mpsc::Sender<String>,
) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 << 10, input);
    let mut lines = LineReader::default();
    let mut handler = LineHandler {
        messages,
        answers,
        complaints: 0,
    };
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            if let Some(line) = lines.finish() {
                handler.handle(line).await;
            }
            return Ok(());
        }
        let (taken, line) = lines.push(available);
        input.consume(taken);
        if let Some(line) = line
            && !handler.handle(line).await
        {
            return Ok(());
        }
    }
}

/// A complete line, or what replaces a skipped oversized one.
#[derive(Debug, PartialEq)]
enum Line {
    /// The line's bytes, newline excluded.
    Frame(Vec<u8>),
    /// A line over the cap: its length and first bytes.
    Oversized { bytes: usize, head: Vec<u8> },
}

/// Cuts a byte stream into lines of at most [`MAX_FRAME_BYTES`] without buffering more than that.
struct LineReader {
    line: Vec<u8>,
    /// `Some((bytes so far, first bytes))` while an oversized line is being skipped.
    skipping: Option<(usize, Vec<u8>)>,
    max: usize,
}

impl Default for LineReader {
    fn default() -> Self {
        Self::with_max(MAX_FRAME_BYTES)
    }
}

impl LineReader {
    /// A reader whose lines are at most `max` bytes.
    fn with_max(max: usize) -> Self {
        Self {
            line: Vec::new(),
            skipping: None,
            max,
        }
    }

    /// Takes bytes from `available` up to and including the first `\n`: how many were taken,
    /// and the line they completed, if they did.
    fn push(&mut self, available: &[u8]) -> (usize, Option<Line>) {
        let newline = available.iter().position(|b| *b == b'\n');
        let taken = newline.map_or(available.len(), |i| i + 1);
        let body = &available[..newline.unwrap_or(available.len())];
        match &mut self.skipping {
            Some((bytes, head)) => {
                *bytes += body.len();
                let room = FRAME_HEAD_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&body[..body.len().min(room)]);
            }
            None if self.line.len() + body.len() > self.max => {
                // The buffer goes (not just its contents): its capacity is the frame cap.
                let line = std::mem::take(&mut self.line);
                let mut head = line[..line.len().min(FRAME_HEAD_BYTES)].to_vec();
                let room = FRAME_HEAD_BYTES - head.len();
                head.extend_from_slice(&body[..body.len().min(room)]);
                self.skipping = Some((line.len() + body.len(), head));
            }
            None => self.line.extend_from_slice(body),
        }
        if newline.is_none() {
            return (taken, None);
        }
        (taken, Some(self.take()))
    }

    /// The last line, when the input ended without a `\n` after it.
    fn finish(&mut self) -> Option<Line> {
        (!self.line.is_empty() || self.skipping.is_some()).then(|| self.take())
    }

    fn take(&mut self) -> Line {
        match self.skipping.take() {
            Some((bytes, head)) => Line::Oversized { bytes, head },
            None => Line::Frame(std::mem::take(&mut self.line)),
        }
    }
}

/// Entry points for the fuzz targets in `fuzz/` (not an API: they change whenever the code
/// under them does).
#[doc(hidden)]
pub mod fuzzing {
    use serde_json::Value;

    use super::{Line, LineReader, frame};

    /// One line [`split_lines`] cut: the line without its `\n`, or `(length, first bytes)` of
    /// a skipped oversized line.
    pub type SplitLine = Result<Vec<u8>, (usize, Vec<u8>)>;

    /// Cuts the stream made of `pieces` (one read each) into lines of at most `max` bytes the
    /// way stdin is read: `Ok(line)` without its `\n`, or `Err((length, first bytes))` for a
    /// skipped oversized line.
    pub fn split_lines(pieces: &[&[u8]], max: usize) -> Vec<SplitLine> {
        let mut reader = LineReader::with_max(max);
        let mut lines = Vec::new();
        for piece in pieces {
            let mut rest = *piece;
            while !rest.is_empty() {
                let (taken, line) = reader.push(rest);
                assert!(
                    taken > 0 && taken <= rest.len(),
                    "push took {taken} of {}",
                    rest.len()
                );
                rest = &rest[taken..];
                lines.extend(line);
            }
        }
        lines.extend(reader.finish());
        lines
            .into_iter()
            .map(|line| match line {
                Line::Frame(bytes) => Ok(bytes),
                Line::Oversized { bytes, head } => Err((bytes, head)),
            })
            .collect()
    }

    /// What the session does with one frame (a stdin line without `\n`, a POST body).
    #[derive(Debug)]
    pub enum Classified {
        /// A message for the session, serialized again.
        Message(String),
        /// The JSON-RPC error response that answers it.
        Invalid(String),
        /// Dropped unanswered, with the reason.
        Dropped(String),
    }

    /// Classifies one frame ([`frame::parse`]).
    pub fn classify(frame: &[u8]) -> Classified {
        match frame::parse(frame) {
            frame::Parsed::Message(m) => {
                Classified::Message(serde_json::to_string(&m).unwrap_or_default())
            }
            frame::Parsed::Invalid(answer) => Classified::Invalid(answer),
            frame::Parsed::Dropped(why) => Classified::Dropped(why),
        }
    }

    /// The id an oversized frame's first bytes give ([`frame::top_level_id`]).
    pub fn top_level_id(head: &[u8]) -> Option<Value> {
        frame::top_level_id(head)
    }
}

/// Where complete lines go.
struct LineHandler {
    messages: Inbox,
    answers: mpsc::Sender<String>,
    /// Lines that were not messages so far (the log names the first few, then one in a
    /// hundred: a client gone wrong must not flood it).
    complaints: u64,
}

impl LineHandler {
    /// Handles one line; `false` once the session is gone.
    async fn handle(&mut self, line: Line) -> bool {
        let answer = match line {
            Line::Oversized { bytes, head } => {
                let id = frame::top_level_id(&head);
                self.complain(&format!(
                    "skipped a {bytes}-byte message (over the {MAX_FRAME_BYTES}-byte frame limit; id {})",
                    id.as_ref().map_or("unknown".to_string(), ToString::to_string)
                ));
                frame::error_response(
                    id.as_ref(),
                    INVALID_REQUEST,
                    &format!(
                        "Invalid Request: the message is over the {MAX_FRAME_BYTES}-byte limit of one stdio frame; it was skipped"
                    ),
                )
            }
            Line::Frame(bytes) => {
                let line = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
                let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
                if text.iter().all(u8::is_ascii_whitespace) {
                    return true;
                }
                match frame::parse(line) {
                    Parsed::Message(message) => return self.messages.send(*message).await.is_ok(),
                    Parsed::Dropped(why) => {
                        self.complain(&format!("dropped {why}"));
                        return true;
                    }
                    Parsed::Invalid(answer) => {
                        let shown = toolgate_model::text::cut(&String::from_utf8_lossy(text), 200)
                            .into_owned();
                        self.complain(&format!("answered with an error: {answer} (line: {shown})"));
                        answer
                    }
                }
            }
        };
        self.answers.send(answer).await.is_ok()
    }

    fn complain(&mut self, what: &str) {
        self.complaints += 1;
        let n = self.complaints;
        if n <= 5 || n.is_multiple_of(100) {
            tracing::warn!(bad_lines = n, "stdio: {what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]], max: usize) -> Vec<Line> {
        let mut reader = LineReader {
            max,
            ..LineReader::default()
        };
        let mut out = Vec::new();
        for chunk in chunks {
            let mut rest = *chunk;
            while !rest.is_empty() {
                let (taken, line) = reader.push(rest);
                rest = &rest[taken..];
                out.extend(line);
            }
        }
        out.extend(reader.finish());
        out
    }

    fn line(s: &str) -> Line {
        Line::Frame(s.as_bytes().to_vec())
    }

    #[test]
    fn lines_are_cut_at_newlines_whatever_the_reads() {
        assert_eq!(
            lines_of(&[b"{\"a\":", b"1}\n{\"b\"", b":2}\n{\"c\":3}\n\n"], 100),
            [
                line("{\"a\":1}"),
                line("{\"b\":2}"),
                line("{\"c\":3}"),
                line("")
            ]
        );
        assert_eq!(lines_of(&[b"x\ny"], 100), [line("x"), line("y")]);
    }

    #[test]
    fn an_oversized_line_is_skipped_and_the_next_one_read() {
        let long = format!("{{\"id\":9,\"p\":\"{}\"}}", "x".repeat(50));
        let lines = lines_of(&[long.as_bytes(), b"\n", b"{\"ok\":1}\n"], 20);
        let Line::Oversized { bytes, head } = &lines[0] else {
            panic!("{lines:?}");
        };
        assert_eq!(*bytes, long.len());
        assert_eq!(frame::top_level_id(head), Some(serde_json::json!(9)));
        assert_eq!(lines[1], line("{\"ok\":1}"));
        assert_eq!(lines.len(), 2);
    }
}
