//! Server-sent events as toolgate reads them from a remote end (an A2A agent's stream, a
//! legacy MCP SSE server): the bytes are first cut into whole events ([`Framer`], bounded in
//! size), then each event is parsed on its own by `sse-stream`. So what a stream yields never
//! depends on how its bytes were split into reads: a malformed line fails its own event only,
//! at its place in the stream (fed whole chunks, `sse-stream` reports an error before the
//! events that preceded it in the same chunk and drops the rest of the chunk).
//!
//! Framing follows the HTML standard's event stream interpretation: lines end at `\r\n`,
//! `\n` or `\r`; a blank line ends an event; a line starting with `:` is a comment.

use std::mem;

use bytes::Bytes;
#[cfg(feature = "a2a")]
use futures::Stream;
use futures::{FutureExt, StreamExt};
use sse_stream::{Sse, SseStream};

/// Framing state: line endings become `\n`, comment lines are dropped.
#[derive(Default)]
pub(crate) struct Framer {
    /// The current event's lines so far.
    buf: Vec<u8>,
    /// Whether the current line has had a byte.
    in_line: bool,
    /// Whether the current line is a comment.
    comment: bool,
    /// Whether the last byte was `\r` (so a `\n` now ends nothing).
    after_cr: bool,
    /// Whether the current event went over `max` and is being skipped.
    oversized: bool,
}

impl Framer {
    /// Feeds a chunk: the events it completed (each ending in a blank line, line endings made
    /// `\n`, comment lines dropped) and how many events went over `max` bytes and are skipped.
    pub(crate) fn feed(&mut self, chunk: &[u8], max: usize) -> (Vec<Bytes>, usize) {
        let (f, mut events, mut skipped) = (self, Vec::new(), 0);
        for &byte in chunk {
            if mem::take(&mut f.after_cr) && byte == b'\n' {
                continue;
            }
            if byte == b'\r' || byte == b'\n' {
                f.after_cr = byte == b'\r';
                if mem::take(&mut f.in_line) {
                    if !f.comment && !f.oversized {
                        f.buf.push(b'\n');
                    }
                } else if !mem::take(&mut f.oversized) && !f.buf.is_empty() {
                    f.buf.push(b'\n');
                    events.push(Bytes::from(mem::take(&mut f.buf)));
                }
                continue;
            }
            if !mem::replace(&mut f.in_line, true) {
                f.comment = byte == b':';
            }
            if !f.comment && !f.oversized {
                f.buf.push(byte);
                if f.buf.len() > max {
                    (f.oversized, f.buf) = (true, Vec::new());
                    skipped += 1;
                }
            }
        }
        (events, skipped)
    }
}

/// One whole event (as [`Framer`] cut it) parsed: its fields, or why a line of it is not SSE.
///
/// # Errors
/// `sse-stream`'s error for the event's first bad line (invalid UTF-8, a line without `:`, an
/// unknown field); the event is then dropped.
pub(crate) fn parse_event(event: Bytes) -> Option<Result<Sse, sse_stream::Error>> {
    let one = futures::stream::iter([Ok::<_, std::convert::Infallible>(event)]);
    let parsed: Vec<_> = SseStream::from_bytes_stream(one)
        .collect::<Vec<_>>()
        .now_or_never()
        .unwrap_or_default();
    // One event in, at most one out (an error stops the parse).
    parsed.into_iter().next()
}

/// Why an event of a stream could not be read.
#[cfg(feature = "a2a")]
#[derive(Debug)]
pub(crate) enum EventError<E> {
    /// The body failed (the connection broke, a size limit).
    Body(E),
    /// One event was malformed; the stream goes on after it.
    Event(sse_stream::Error),
}

#[cfg(feature = "a2a")]
impl<E: std::fmt::Display> std::fmt::Display for EventError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Body(e) => e.fmt(f),
            Self::Event(e) => write!(f, "a malformed event: {e}"),
        }
    }
}

/// The events of the byte stream `body` in stream order, whatever the reads: each at most
/// `max` bytes (a larger one is skipped as it streams by, with a warning), a malformed one an
/// [`EventError::Event`] in its place, a failed body an [`EventError::Body`].
#[cfg(feature = "a2a")]
pub(crate) fn events<S, E>(body: S, max: usize) -> impl Stream<Item = Result<Sse, EventError<E>>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut framer = Framer::default();
    body.flat_map(move |chunk| {
        let items: Vec<Result<Sse, EventError<E>>> = match chunk {
            Err(e) => vec![Err(EventError::Body(e))],
            Ok(chunk) => {
                let (events, skipped) = framer.feed(&chunk, max);
                if skipped > 0 {
                    tracing::warn!(
                        max,
                        skipped,
                        "server-sent event over the size limit skipped"
                    );
                }
                events
                    .into_iter()
                    .filter_map(parse_event)
                    .map(|e| e.map_err(EventError::Event))
                    .collect()
            }
        };
        futures::stream::iter(items)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pieces: Vec<&[u8]>) -> Vec<Result<String, String>> {
        let body = futures::stream::iter(
            pieces
                .into_iter()
                .map(|p| Ok::<_, std::io::Error>(Bytes::copy_from_slice(p))),
        );
        events(body, 1 << 10)
            .map(|e| {
                e.map(|e| e.data.unwrap_or_default())
                    .map_err(|e| e.to_string())
            })
            .collect::<Vec<_>>()
            .now_or_never()
            .unwrap()
    }

    /// A malformed event (invalid UTF-8) between two good ones fails in its place, and the
    /// events do not depend on the reads (the fuzz target `a2a` found that, fed whole
    /// chunks, `sse-stream` reported the error before an earlier event of the same chunk and
    /// dropped the rest of the chunk).
    #[test]
    fn events_do_not_depend_on_the_reads() {
        let stream: &[u8] = b"data: one\n\ndata: t\xffo\n\n: a comment\r\ndata: three\r\n\r\n";
        let whole = read(vec![stream]);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(whole[0], Ok("one".to_string()));
        assert!(
            whole[1].as_ref().is_err_and(|e| e.contains("utf8")),
            "{whole:?}"
        );
        assert_eq!(whole[2], Ok("three".to_string()));
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(read(bytes), whole, "one byte per read");
        let (a, b) = stream.split_at(13);
        assert_eq!(read(vec![a, b]), whole, "a cut inside the bad event");
    }

    /// An event over the limit is skipped as it streams by; the next one is read.
    #[test]
    fn an_oversized_event_is_skipped() {
        let big = format!("data: {}\n\ndata: small\n\n", "x".repeat(2000));
        assert_eq!(read(vec![big.as_bytes()]), [Ok("small".to_string())]);
    }
}
