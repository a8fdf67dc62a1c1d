//! The id of a JSON-RPC frame too large to parse, read from its first bytes: both ends of a
//! stdio session skip such a frame without buffering it whole, and answer the request it
//! belongs to with an error for that id.

use serde_json::Value;

/// The top-level `id` of a JSON object whose text starts with `head` (a frame too large to
/// parse): a string or an integer, when it occurs in `head` at the object's top level (an `id`
/// nested deeper, inside `params` or `result`, is not taken for it).
pub fn top_level_id(head: &[u8]) -> Option<Value> {
    let mut id = None;
    for_each_top_level_key(head, |key, text| {
        if key != b"id" {
            return true;
        }
        let mut values = serde_json::Deserializer::from_slice(text).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            // A number at the very end of `head` may go on past it.
            let whole = values.byte_offset() < text.len();
            if whole && (value.is_string() || value.is_i64() || value.is_u64()) {
                id = Some(value);
            }
        }
        false
    });
    id
}

/// The id of the request a frame starting with `head` answers: its [`top_level_id`] when the
/// frame is no request or notification of its own (no top-level `method` in `head`). A frame
/// that cannot be read is answered in the peer's place only when this gives an id: a request
/// of the peer's carries an id from the peer's own sequence, not one of ours.
pub fn answered_id(head: &[u8]) -> Option<Value> {
    let mut method = false;
    for_each_top_level_key(head, |key, _| {
        method |= key == b"method";
        !method
    });
    if method { None } else { top_level_id(head) }
}

/// Calls `visit(key, value)` for each key of the top-level object `head` starts (in order, as
/// far as `head` goes), `value` being the text from the key's value on; stops when `visit`
/// returns `false`.
fn for_each_top_level_key(head: &[u8], mut visit: impl FnMut(&[u8], &[u8]) -> bool) {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let Some(end) = string_end(head, i + 1) else {
                    return;
                };
                let after = skip_space(head, end + 1);
                if depth == 1 && head.get(after) == Some(&b':') {
                    let value = &head[skip_space(head, after + 1)..];
                    if !visit(&head[i + 1..end], value) {
                        return;
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
}

/// The index of the quote closing the string whose text starts at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn skip_space(text: &[u8], mut i: usize) -> usize {
    while text.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_top_level_id_is_found_in_a_frame_head() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","par"#),
            Some(json!(17))
        );
        assert_eq!(id(r#"{"id" : "a\"b", "x"#), Some(json!("a\"b")));
        assert_eq!(
            id(r#"{"method":"x","params":{"id":3,"text":"\"id\": 4"},"id":5,"#),
            Some(json!(5))
        );
        assert_eq!(id(r#"{"method":"x","params":{"id":3,"text":"aaaa"#), None);
        assert_eq!(id(r#"{"id":{"no":1},"#), None);
        assert_eq!(
            id(r#"{"id":12"#),
            None,
            "an id cut by the head's end is not trusted"
        );
    }
}
