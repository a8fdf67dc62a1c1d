//! The gateway's MCP framing (server side): stdin cut into lines under a frame cap, each line
//! (and a legacy-SSE POST body) classified as a message, an answered error or a dropped frame,
//! and the id read from the head of an oversized line.
//!
//! Input: byte 0 picks the frame cap (1..=1021 bytes, small enough to hit the oversized path),
//! byte 1 how the rest is cut into reads; the rest is the stream. The lines must not depend on
//! how the stream was cut; no line is over the cap; every byte is accounted for; every answer
//! is a JSON-RPC error response; a message read back from its serialization is a message again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate::gateway::mcp::stdio::fuzzing::{Classified, classify, split_lines, top_level_id};

fn check_answer(answer: &str) {
    let v: Value = serde_json::from_str(answer).expect("an answer is JSON");
    assert_eq!(v["jsonrpc"], "2.0", "{answer}");
    assert!(v["error"]["code"].is_i64(), "{answer}");
    let id = &v["id"];
    assert!(
        id.is_null() || id.is_string() || id.is_i64() || id.is_u64(),
        "{answer}"
    );
}

fn check_frame(frame: &[u8]) {
    match classify(frame) {
        Classified::Invalid(answer) => check_answer(&answer),
        // rmcp reads a message into the first of its shapes that fits. A frame with a
        // duplicate key (`"capabilities"` twice in an initialize request) fits only the loose
        // shape (a custom request, last key wins), whose serialization has unique keys and then
        // fits the strict one (unknown keys dropped). From the first serialization on, reading
        // must be stable.
        Classified::Message(text) => match classify(text.as_bytes()) {
            Classified::Message(again) => match classify(again.as_bytes()) {
                Classified::Message(third) => assert_eq!(third, again),
                other => panic!("a message serialized as {again} reads back as {other:?}"),
            },
            other => panic!("a message serialized as {text} reads back as {other:?}"),
        },
        Classified::Dropped(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let [cap, cut, stream @ ..] = data else {
        return;
    };
    let max = 1 + usize::from(*cap) * 4;
    let mut pieces = Vec::new();
    let mut rest = stream;
    let mut i = 0u32;
    while !rest.is_empty() {
        let n = (1 + (usize::from(*cut).rotate_left(i % 8) % 61)).min(rest.len());
        pieces.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    let lines = split_lines(&pieces, max);
    assert_eq!(
        lines,
        split_lines(&[stream], max),
        "the lines depend on the reads"
    );

    let newlines = stream.iter().filter(|b| **b == b'\n').count();
    let mut bytes = 0;
    for line in &lines {
        match line {
            Ok(line) => {
                assert!(line.len() <= max && !line.contains(&b'\n'));
                bytes += line.len();
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                check_frame(line);
                let _ = top_level_id(&line[..line.len().min(64)]);
            }
            Err((length, head)) => {
                assert!(*length > max && head.len() <= (*length).min(4096));
                bytes += length;
                if let Some(id) = top_level_id(head) {
                    assert!(id.is_string() || id.is_i64() || id.is_u64(), "{id}");
                }
            }
        }
    }
    assert_eq!(bytes + newlines, stream.len(), "bytes lost or invented");
    // A legacy-SSE POST body is one frame, whatever it holds.
    check_frame(stream);
});
