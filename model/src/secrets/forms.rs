//! The forms a secret may travel in: what an upstream echoing it, a library logging it or a
//! JSON document quoting it makes of it.

use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};

/// WHATWG `application/x-www-form-urlencoded` (space as `+`, added after encoding): what
/// `reqwest`, `url` and browsers send in a query string or a form body.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');
/// JavaScript's `encodeURIComponent`.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');
/// The WHATWG URL query percent-encode set: what a URL parser leaves of a raw query.
const QUERY: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'\'');
/// The WHATWG URL path percent-encode set.
const PATH: &AsciiSet = &QUERY.add(b'?').add(b'`').add(b'{').add(b'}');

/// `secret` in every form it may show in, distinct, none empty:
///
/// * as is;
/// * JSON-escaped (the body of a JSON string: `"` → `\"`, `\` → `\\`, control characters),
///   also with every non-ASCII character as `\uXXXX` (Python's `json.dumps`), and escaped twice
///   (a JSON text inside a JSON string: a mirrored result, a logged request body);
/// * Rust-`Debug`-escaped (a `{:?}` log field) and Python-`repr`-escaped (a Python server's
///   `%r` log line: `\` and `'` escaped, `"` as is); each escaping also applied to each
///   escaped form (a JSON text logged with `{:?}`, a repr of a JSON text);
/// * percent-encoded: strictly (RFC 3986), as a form value (WHATWG), by
///   `encodeURIComponent`, and with the WHATWG URL query and path sets, with upper-case hex;
///   the strict and form encodings also with space as `+` and with lower-case hex.
///
/// Not base64: the base64 of `user:password` (HTTP Basic) is a secret of its own, remembered
/// where it is made.
pub fn forms(secret: &str) -> Vec<String> {
    if secret.is_empty() {
        return Vec::new();
    }
    let escapes: [fn(&str) -> String; 3] = [json_escaped, debug_escaped, repr_escaped];
    let mut out = vec![secret.to_string(), ascii_json_escaped(secret)];
    for once in escapes {
        let escaped = once(secret);
        for twice in escapes {
            out.push(twice(&escaped));
        }
        out.push(escaped);
    }
    // (set, whether its space-as-`+` and lower-case variants are listed too)
    for (set, variants) in [
        (crate::uri::UNRESERVED, true),
        (FORM, true),
        (COMPONENT, false),
        (QUERY, false),
        (PATH, false),
    ] {
        let encoded = utf8_percent_encode(secret, set).to_string();
        if variants {
            // Space as `+` (a form value; Python's `quote_plus`), and lower-case hex.
            let plus = encoded.replace("%20", "+");
            out.push(lower_hex(&plus));
            out.push(lower_hex(&encoded));
            out.push(plus);
        }
        out.push(encoded);
    }
    out.sort();
    out.dedup();
    out
}

/// The body of the JSON string of `s` (serde_json's escaping).
fn json_escaped(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""));
    quoted[1..quoted.len() - 1].to_string()
}

/// [`json_escaped`], with every non-ASCII character as `\uXXXX` (lower-case hex, surrogate
/// pairs above U+FFFF).
fn ascii_json_escaped(s: &str) -> String {
    let mut out = String::new();
    for c in json_escaped(s).chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The body of Python's `repr(s)` in single quotes: `\`, `'` and control characters escaped
/// (`\n`, `\r`, `\t`, `\xNN`), everything else as is.
fn repr_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// The body of `format!("{s:?}")`.
fn debug_escaped(s: &str) -> String {
    let quoted = format!("{s:?}");
    quoted[1..quoted.len() - 1].to_string()
}

/// `s` with the hex digits of each `%XX` in lower case.
fn lower_hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut hex_left = 0;
    for c in s.chars() {
        if c == '%' {
            hex_left = 2;
            out.push(c);
        } else if hex_left > 0 {
            hex_left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_listed() {
        let f = forms(r#"a "b\c/é"#);
        for want in [
            r#"a "b\c/é"#,
            r#"a \"b\\c/é"#,
            r#"a \"b\\c/\u00e9"#,
            r#"a \\\"b\\\\c/é"#,
            r#"a \"b\\c/é"#,
            "a%20%22b%5Cc%2F%C3%A9",
            "a%20%22b%5cc%2f%c3%a9",
            "a+%22b%5Cc%2F%C3%A9",
            "a+%22b%5cc%2f%c3%a9",
            r#"a%20%22b\c/%C3%A9"#,
            r#"a "b\\c/é"#,
            r#"a \"b\\\\c/é"#,
        ] {
            assert!(f.iter().any(|s| s == want), "{want} not in {f:#?}");
        }
        let f = forms("a b+c/~*");
        for want in [
            "a b+c/~*",
            "a%20b%2Bc%2F~%2A",
            "a+b%2Bc%2F%7E*",
            "a%20b%2Bc%2F~*",
        ] {
            assert!(f.iter().any(|s| s == want), "{want} not in {f:#?}");
        }
        assert!(forms("").is_empty());
        assert_eq!(forms("plain-token_123"), ["plain-token_123"]);
        let f = forms("\u{1}xyz");
        assert!(
            f.iter().any(|s| s == "%01xyz") && f.iter().any(|s| s == "\\u0001xyz"),
            "{f:?}"
        );
    }
}
