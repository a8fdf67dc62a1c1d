//! What the MCP client reads from servers: the stdout lines of a stdio server (a message, or a
//! log line to skip), the id an oversized answer is matched to, and the event stream of a
//! legacy HTTP+SSE server cut into events under a size cap, then parsed by `sse-stream`.
//!
//! Input: byte 0 picks the event size cap (1..=1021 bytes), byte 1 how the rest is cut into
//! reads; the rest is the server's output. The events must not depend on how the stream was
//! cut and stay under the cap (plus the two line ends that close an event); a message read back from its serialization is the same message;
//! an oversized answer is matched by the frame's top-level id, the gateway's reading of it.
#![no_main]

use bytes::Bytes;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use sse_stream::SseStream;
use toolgate_runtime::mcp::fuzzing::{oversized_answer, sse_events, sse_item, stdio_line};
use toolgate_runtime::mcp::top_level_id;

fuzz_target!(|data: &[u8]| {
    let [cap, cut, stream @ ..] = data else {
        return;
    };
    let max = 1 + usize::from(*cap) * 4;

    for line in stream.split(|b| *b == b'\n') {
        if let Some(Ok(text)) = stdio_line(line) {
            // rmcp reads a message into the first of its shapes that fits. A line with a
            // duplicate key (`"serverInfo"` twice) fits only the loose shape (a custom result,
            // last key wins), whose serialization has unique keys and then fits the strict one
            // (an initialize result, unknown keys dropped). From the first serialization on,
            // reading must be stable.
            let again = match stdio_line(text.as_bytes()) {
                Some(Ok(again)) => again,
                other => panic!("a serialized message no longer reads ({other:?}): {text}"),
            };
            assert_eq!(
                stdio_line(again.as_bytes()),
                Some(Ok(again.clone())),
                "{again}"
            );
        }
        let head = &line[..line.len().min(256)];
        if let Some(answer) = oversized_answer(head, max) {
            let id = &answer["id"];
            assert!(id.is_string() || id.is_i64() || id.is_u64(), "{answer}");
            assert_eq!(Some(id), top_level_id(head).as_ref(), "{answer}");
        }
    }

    let mut pieces = Vec::new();
    let mut rest = stream;
    let mut i = 0u32;
    while !rest.is_empty() {
        let n = (1 + (usize::from(*cut).rotate_left(i % 8) % 53)).min(rest.len());
        pieces.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    let (events, skipped) = sse_events(&pieces, max);
    let whole = sse_events(&[stream], max);
    assert_eq!(
        (&events, skipped),
        (&whole.0, whole.1),
        "the events depend on the reads"
    );
    for event in events {
        assert!(
            event.len() <= max + 2 && event.ends_with(b"\n"),
            "{} bytes",
            event.len()
        );
        let one = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(event))]);
        let parsed: Vec<_> =
            futures::executor::block_on(SseStream::from_bytes_stream(one).collect());
        for sse in parsed.into_iter().flatten() {
            let _ = sse_item(sse);
        }
    }
});
