//! A2A agents' answers: a streamed answer (server-sent events, read as the A2A client reads
//! them: cut into whole events, each parsed by `sse-stream`) whose events carry JSON-RPC results, each decoded as a task, message, status or
//! artifact event of either protocol version; and the whole input as one JSON value read as an
//! event, a task, a message and an agent card.
//!
//! Input: byte 0 says how the rest is cut into reads. The events must not depend on how the
//! stream was cut; a message decoded and encoded again in either version reads back the same.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_runtime::a2a::card::AgentCard;
use toolgate_runtime::a2a::fuzzing::Fields;
use toolgate_runtime::a2a::wire::{self, Event, Part, Version};

/// The events the A2A client reads from `pieces`, as (event, data, id, retry) or the error's
/// text; events up to 64 KiB.
fn events(pieces: Vec<Bytes>) -> Vec<Result<Fields, String>> {
    toolgate_runtime::a2a::fuzzing::stream_events(pieces, 1 << 16)
}

/// Whether encoding `part` keeps everything decoding reads (a file part needs its bytes or
/// its URI: 1.0 has no form for a file with neither).
fn encodable(part: &Part) -> bool {
    !matches!(
        part,
        Part::File {
            bytes: None,
            uri: None,
            ..
        }
    )
}

fn decode(v: &Value) {
    if let Ok(event) = wire::decode_event(v) {
        let _ = format!("{event:?}");
        if let Event::Message(m) = event
            && m.parts.iter().all(encodable)
        {
            for version in [Version::V1, Version::V03] {
                let again = wire::decode_message(&wire::encode_message(version, &m));
                assert_eq!(again.as_ref(), Ok(&m), "{version:?} round trip");
                let _ = wire::send_params(version, &m, true);
            }
        }
    }
    let _ = wire::decode_task(v);
    let _ = wire::excerpt(v);
}

fuzz_target!(|data: &[u8]| {
    let [cut, stream @ ..] = data else {
        return;
    };
    let mut pieces = Vec::new();
    let mut rest = stream;
    let mut i = 0u32;
    while !rest.is_empty() {
        let n = (1 + (usize::from(*cut).rotate_left(i % 8) % 37)).min(rest.len());
        pieces.push(Bytes::copy_from_slice(&rest[..n]));
        rest = &rest[n..];
        i += 1;
    }
    let whole = events(vec![Bytes::copy_from_slice(stream)]);
    let cut_up = events(pieces);
    assert_eq!(whole, cut_up, "the events depend on the reads");
    for (_, data, _, _) in whole.iter().flatten() {
        let Some(data) = data.as_deref().map(str::trim).filter(|d| !d.is_empty()) else {
            continue;
        };
        if let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(data)
            && let Some(result) = answer.remove("result")
        {
            decode(&result);
        }
    }
    if let Ok(v) = serde_json::from_slice::<Value>(stream) {
        decode(&v);
        let _ = wire::decode_message(&v);
        let _ = AgentCard::parse(&v, "https://agent.example/.well-known/agent-card.json");
    }
});
