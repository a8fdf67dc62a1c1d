use serde_json::{Value, json};

use super::*;

#[test]
fn an_endless_line_keeps_a_bounded_tail() {
    let mut line = StderrLine::default();
    let chunk = vec![b'f'; 8192];
    for _ in 0..1000 {
        line.push(&chunk);
        assert!(line.len() <= STDERR_LINE_MAX);
    }
    line.push(b"the end");
    let shown = line.finish().unwrap();
    assert!(
        shown.starts_with('…') && shown.ends_with("fffthe end"),
        "{shown}"
    );
    assert_eq!(shown.chars().count(), STDERR_SHOWN + 1);
    assert_eq!(line.len(), 0);
    assert_eq!(line.finish(), None);
}

#[test]
fn lines_are_decoded_lossily_masked_then_cut() {
    let mut line = StderrLine::default();
    line.push(b"bad \xff\xfe bytes\r");
    assert_eq!(line.finish().unwrap(), "bad \u{fffd}\u{fffd} bytes");
    toolgate_model::secrets::remember("stderr-cut-secret-8c1f2e");
    let mut line = StderrLine::default();
    line.push("p".repeat(990).as_bytes());
    line.push(b"stderr-cut-secret-8c1f2e and on");
    let shown = line.finish().unwrap();
    assert!(shown.ends_with("pp[redacted]…"), "{}", &shown[980..]);
    assert!(!shown.contains("stderr-cut"));
}

#[test]
fn a_secret_cut_where_the_kept_tail_starts_leaves_nothing() {
    let secret = "tail-cut-secret-5d0b9a";
    toolgate_model::secrets::remember(secret);
    let mut line = StderrLine::default();
    line.push(b"x");
    // The secret's first 10 bytes are dropped with the line's start, its rest is kept.
    let mut long = vec![b'p'; STDERR_LINE_MAX - 12];
    long.splice(0..0, secret.bytes());
    line.push(&long);
    assert!(line.dropped > 0);
    let shown = line.finish().unwrap();
    assert!(!shown.contains("5d0b9a"), "{}", &shown[..40]);
}

#[tokio::test]
async fn invalid_utf8_never_stops_the_reading() {
    let (mut writer, reader) = tokio::io::duplex(64);
    let log = Arc::new(ProcessLog::default());
    let task = tokio::spawn(read_stderr(Arc::from("s"), reader, Arc::clone(&log)));
    writer.write_all(b"first \xff\xfe\n").await.unwrap();
    for i in 0..100 {
        writer
            .write_all(format!("line {i}\n").as_bytes())
            .await
            .unwrap();
    }
    writer.write_all(b"no newline at the end").await.unwrap();
    drop(writer);
    task.await.unwrap();
    let tail = log.stderr_tail();
    assert_eq!(tail.len(), STDERR_TAIL);
    assert_eq!(
        tail.last().map(String::as_str),
        Some("no newline at the end")
    );
    assert!(*log.stderr_done.borrow());
}

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

/// A request of the server's own (it has a `method`) is never answered in its place, even
/// when it is too large or cannot be read: its id comes from the server's sequence, and an
/// error under it would end one of our own requests that happens to have the same id.
#[test]
fn a_frame_with_a_method_is_never_taken_for_an_answer() {
    assert_eq!(
        answered_id(r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"#),
        None
    );
    assert_eq!(
        answered_id(r#"{"method":"roots/list","jsonrpc":"2.0","id":3,"params":{"#),
        None
    );
    // `method` inside the result is the result's business.
    assert_eq!(
        answered_id(r#"{"jsonrpc":"2.0","id":4,"result":{"method":"x","#),
        Some(json!(4))
    );
}

/// An answer that cannot be read — nested deeper than the parser's 128 levels, or JSON that
/// is not an MCP result — ends its request at once with an error naming why, instead of
/// leaving the request to its timeout; junk without an id is only skipped.
#[test]
fn an_unreadable_answer_ends_its_request_with_an_error() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"result":{{"tools":[{{"name":"t","inputSchema":{{"type":"object","x":{}1{}}}}}]}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = read_line(deep.as_bytes()).unwrap().unwrap_err();
    let answer = serde_json::to_value(unreadable_answer(deep.as_bytes(), &e).unwrap()).unwrap();
    assert_eq!(answer["id"], json!(9));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("could not be read") && message.contains("recursion limit"),
        "{message}"
    );

    let junk = b"starting server...";
    let e = read_line(junk).unwrap().unwrap_err();
    assert!(unreadable_answer(junk, &e).is_none());
}
