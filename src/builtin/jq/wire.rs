//! What the gateway and a jq worker say to each other, over the worker's stdin (one end of a
//! Unix socket pair): frames of a 4-byte little-endian length and that many bytes of JSON.
//!
//! The worker speaks first ([`Hello`]); then, one at a time, the parent sends a [`Request`] and
//! the worker answers with a [`Response`]. Values inside are at most
//! [`MAX_DEPTH`](super::MAX_DEPTH) levels deep, so a frame stays within serde_json's parsing
//! depth (127 levels).

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JqError, JqResult};

/// The environment variable that makes a process a jq worker, and its value (the protocol
/// version: a worker from another build of toolgate refuses to start).
pub(super) const WORKER_ENV: &str = "TOOLGATE_JQ_WORKER";
pub(super) const PROTOCOL: &str = "1";

/// Largest frame the worker reads (a request: the filter and its input document).
pub(super) const MAX_REQUEST_BYTES: usize = 1 << 30;

/// The worker's first frame.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hello {
    /// `toolgate-jq`.
    pub(super) worker: String,
    /// [`PROTOCOL`].
    pub(super) protocol: String,
}

impl Hello {
    pub(super) fn ours() -> Self {
        Self {
            worker: "toolgate-jq".into(),
            protocol: PROTOCOL.into(),
        }
    }
}

/// One filter to run.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub(super) filter: String,
    pub(super) input: Value,
    pub(super) max_results: usize,
    pub(super) max_output_bytes: usize,
    /// CPU seconds the filter may use (the worker's `RLIMIT_CPU` backstop).
    pub(super) cpu_seconds: u64,
    /// The worker's memory limit, for error messages.
    pub(super) memory_mb: u64,
}

/// The outcome of a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Response {
    pub(super) result: Result<JqResult, JqError>,
    /// The worker's resident memory after the run, in bytes (0 if unknown): the parent retires
    /// a worker that holds on to much.
    pub(super) rss_bytes: u64,
    /// The worker should not be used again (the engine panicked).
    pub(super) retire: bool,
}

/// Writes one frame (blocking).
pub(super) fn write_frame(w: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let bytes = encode(value)?;
    w.write_all(&bytes)?;
    w.flush()
}

/// One frame: length prefix and JSON.
pub(super) fn encode(value: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; 4];
    serde_json::to_writer(&mut bytes, value)?;
    let len = u32::try_from(bytes.len() - 4)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "frame over 4 GiB"))?;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    Ok(bytes)
}

/// Reads one frame of at most `max` bytes (blocking). `Ok(None)` at a clean end of stream.
pub(super) fn read_frame(r: &mut impl Read, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(too_big(len, max));
    }
    let mut buf = vec![0; len];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

pub(super) fn too_big(len: usize, max: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("frame of {len} bytes, more than {max}"),
    )
}
