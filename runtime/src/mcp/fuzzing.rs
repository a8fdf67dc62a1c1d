//! Entry points for the fuzz targets in `fuzz/`, not an API: they change whenever the code under
//! them does. What the MCP client reads from a server: stdout lines of a stdio server, the id of
//! an oversized answer, the event stream of a legacy HTTP+SSE server.

use serde_json::Value;

/// One stdout line of a stdio server (without `\n`): `None` when blank, else the message it
/// holds, serialized again, or why it is skipped.
pub fn stdio_line(line: &[u8]) -> Option<Result<String, String>> {
    super::stdio::read_line(line).map(|r| {
        r.map(|m| serde_json::to_string(&m).unwrap_or_default())
            .map_err(|e| e.to_string())
    })
}

/// The JSON-RPC error answering, in the server's place, a request whose answer was over `max`
/// bytes and discarded, for the top-level id in the answer's first bytes `head`.
pub fn oversized_answer(head: &[u8], max: usize) -> Option<Value> {
    super::stdio::oversized_answer(head, max).and_then(|m| serde_json::to_value(m).ok())
}

/// Cuts the event stream made of `pieces` (one read each) into whole events of at most `max`
/// bytes as the SSE client does: the events and how many were skipped for their size.
pub fn sse_events(pieces: &[&[u8]], max: usize) -> (Vec<Vec<u8>>, usize) {
    let mut framer = super::sse::Framer::default();
    let (mut events, mut skipped) = (Vec::new(), 0);
    for piece in pieces {
        let (done, over) = framer.feed(piece, max);
        events.extend(done.into_iter().map(|e| e.to_vec()));
        skipped += over;
    }
    (events, skipped)
}

/// What an `sse-stream` parsed event is to the SSE client: `endpoint <url>`, `message <the
/// message serialized again>`, `junk <why>` or `other <event name>`.
pub fn sse_item(sse: sse_stream::Sse) -> String {
    match super::sse::Item::of(sse) {
        super::sse::Item::Endpoint(url) => format!("endpoint {url}"),
        super::sse::Item::Message(m) => {
            format!("message {}", serde_json::to_string(&m).unwrap_or_default())
        }
        super::sse::Item::NotJsonRpc(_, e) => format!("junk {e}"),
        super::sse::Item::Other(event) => format!("other {event}"),
    }
}
