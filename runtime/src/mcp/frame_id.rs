//! The id of a JSON-RPC frame too large to parse, read from its first bytes: both ends of a
//! stdio session skip such a frame without buffering it whole, and answer the request it
//! belongs to with an error for that id.

use serde_json::Value;

/// The top-level `id` of a JSON object whose text starts with `head` (a frame too large to
/// parse): a string or an integer, when it occurs in `head` at the object's top level (an `id`
/// nested deeper, inside `params` or `result`, is not taken for it).
pub fn top_level_id(head: &[u8]) -> Option<Value> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, i + 1)?;
                let key = &head[i + 1..end];
                let after = skip_space(head, end + 1);
                if depth == 1 && key == b"id" && head.get(after) == Some(&b':') {
                    let text = &head[skip_space(head, after + 1)..];
                    let mut values =
                        serde_json::Deserializer::from_slice(text).into_iter::<Value>();
                    let value = values.next()?.ok()?;
                    // A number at the very end of `head` may go on past it.
                    let whole = values.byte_offset() < text.len();
                    return (whole && (value.is_string() || value.is_i64() || value.is_u64()))
                        .then_some(value);
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
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
