//! Entry points for the fuzz targets in `fuzz/`, not an API: they change whenever the code under
//! them does. What the A2A client reads from an agent's event stream.

use bytes::Bytes;
use futures::{FutureExt, StreamExt};

/// One event's fields: (event, data, id, retry).
pub type Fields = (Option<String>, Option<String>, Option<String>, Option<u64>);

/// The events the A2A client reads from a stream arriving as `pieces` (one read each), with
/// a per-event limit of `max` bytes: each as (event, data, id, retry), or the error's text.
pub fn stream_events(pieces: Vec<Bytes>, max: usize) -> Vec<Result<Fields, String>> {
    let body = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::io::Error>));
    crate::net::sse::events(body, max)
        .map(|e| {
            e.map(|e| (e.event, e.data, e.id, e.retry))
                .map_err(|e| e.to_string())
        })
        .collect::<Vec<_>>()
        .now_or_never()
        .unwrap_or_default()
}
