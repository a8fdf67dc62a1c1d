//! Keeping secrets out of everything toolgate outputs: log lines, errors, results.
//!
//! Which configured values are secrets, the forms they travel in and the process-wide list of
//! them are [`toolgate_model::secrets`] (every secret is remembered there when tools.yaml's
//! values are resolved, or when a source is built from code). This module applies them to the
//! runtime's types:
//!
//! * [`text`] and [`value`]: a text, or every string of a JSON value, with each remembered
//!   secret replaced by [`REDACTED`];
//! * [`output`]: the same for a [`ToolOutput`] (text parts, URIs, names, descriptions,
//!   `structuredContent`, `_meta`; not base64 data). [`Toolset`](crate::Toolset) applies it to
//!   every result, and [`ToolError`](crate::ToolError) to every message and details when the
//!   error is made, before the message is cut to its size limit;
//! * [`is_credential_key`] and [`redact_value`]: argument values under keys that name a
//!   credential (`password`, `api_key`, ...) replaced by `***`, for a log line that shows
//!   arguments;
//! * [`scrub`]: a log line with every secret and every `key: value` / `key=value` of a
//!   credential key masked. The CLI passes every log line through it (the last line of defence
//!   for a library's own debug output, rmcp's or reqwest's).

use std::borrow::Cow;

use serde_json::Value;
pub use toolgate_model::secrets::{
    Field, REDACTED, is_credential_key, is_secret_name, remember, remember_as, remember_public,
};

use crate::{Content, ResourceContents, ToolOutput};

/// What the value of a credential key is replaced by in a log line or an argument shown in one.
pub const MASK: &str = "***";

/// `text` with every remembered secret (in every form) replaced by [`REDACTED`]; borrowed when
/// nothing was.
pub fn text(text: &str) -> Cow<'_, str> {
    toolgate_model::secrets::redact(text)
}

/// Every string of `value` (at any depth; object keys included) with every remembered secret
/// replaced; whether anything was.
pub fn value(value: &mut Value) -> bool {
    if !toolgate_model::secrets::any() {
        return false;
    }
    let Some(r) = toolgate_model::secrets::current() else {
        return false;
    };
    value_with(&r, value)
}

fn value_with(r: &toolgate_model::secrets::Redactor, value: &mut Value) -> bool {
    match value {
        Value::String(s) => string_with(r, s),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, v| value_with(r, v) | any),
        Value::Object(map) => {
            let mut any = false;
            if map.keys().any(|k| matches!(r.redact(k), Cow::Owned(_))) {
                let entries = std::mem::take(map);
                for (k, v) in entries {
                    map.insert(r.redact(&k).into_owned(), v);
                }
                any = true;
            }
            map.values_mut().fold(any, |any, v| value_with(r, v) | any)
        }
        _ => false,
    }
}

fn string_with(r: &toolgate_model::secrets::Redactor, s: &mut String) -> bool {
    match r.redact(s) {
        Cow::Borrowed(_) => false,
        Cow::Owned(clean) => {
            *s = clean;
            true
        }
    }
}

/// `out` with every remembered secret replaced in its text parts, resource URIs, names,
/// descriptions and texts, `structuredContent` and `_meta` (base64 image, audio and blob data
/// are left as they are: masking inside them would only corrupt them); whether anything was.
pub fn output(out: &mut ToolOutput) -> bool {
    if !toolgate_model::secrets::any() {
        return false;
    }
    let Some(r) = toolgate_model::secrets::current() else {
        return false;
    };
    let mut any = false;
    for part in &mut out.content {
        any |= match part {
            Content::Text { text } => string_with(&r, text),
            Content::Image { .. } | Content::Audio { .. } => false,
            Content::ResourceLink {
                uri,
                name,
                description,
                ..
            } => {
                string_with(&r, uri)
                    | string_with(&r, name)
                    | description.as_mut().is_some_and(|d| string_with(&r, d))
            }
            Content::Resource { resource } => match resource {
                ResourceContents::Text { uri, text, .. } => {
                    string_with(&r, uri) | string_with(&r, text)
                }
                ResourceContents::Blob { uri, .. } => string_with(&r, uri),
            },
        };
    }
    if let Some(v) = out.structured.as_mut() {
        any |= value_with(&r, v);
    }
    if let Some(meta) = out.meta.as_mut() {
        let mut v = Value::Object(std::mem::take(meta));
        any |= value_with(&r, &mut v);
        if let Value::Object(m) = v {
            *meta = m;
        }
    }
    any
}

/// `value` with the value of every object key that [names a credential](is_credential_key)
/// replaced by `"***"`, at any depth.
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_credential_key(k) {
                        Value::String(MASK.into())
                    } else {
                        redact_value(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        other => other.clone(),
    }
}

/// `line` with every remembered secret (in every form) replaced by [`REDACTED`], and the value
/// after every credential key (`password: x`, `"api_key":"x"`, `token=x`, `Authorization:
/// Bearer x`, `"password": String("x")`) by `***`. Borrowed when nothing was masked.
pub fn scrub(line: &str) -> Cow<'_, str> {
    let out = text(line);
    match mask_credential_values(&out) {
        Some(masked) => Cow::Owned(masked),
        None => out,
    }
}

/// The line with the value after each credential key masked; `None` when there is none.
fn mask_credential_values(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.');
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if !is_credential_key(&line[start..i]) {
            continue;
        }
        let Some((from, to)) = value_span(b, i) else {
            continue;
        };
        if from < copied {
            continue;
        }
        out.push_str(&line[copied..from]);
        out.push_str(MASK);
        copied = to;
        i = to;
    }
    (copied > 0).then(|| {
        out.push_str(&line[copied..]);
        out
    })
}

/// Where the value after a key ending at `i` lies: past closing quotes, `:` or `=`, opening
/// quotes, a `String(` / `Some(` wrapper and a `Bearer ` / `Basic ` scheme; up to its closing
/// quote, or to the next delimiter when unquoted. A value that is already [`REDACTED`] is left.
fn value_span(b: &[u8], mut i: usize) -> Option<(usize, usize)> {
    let skip = |i: &mut usize, set: &[u8]| {
        while *i < b.len() && set.contains(&b[*i]) {
            *i += 1;
        }
    };
    skip(&mut i, b"\"'\\ ");
    if i >= b.len() || !matches!(b[i], b':' | b'=') {
        return None;
    }
    i += 1;
    skip(&mut i, b" ");
    // A Debug wrapper: `String("x")`, `Some("x")`.
    for wrapper in [&b"String("[..], b"Some("] {
        if b[i..].starts_with(wrapper) {
            i += wrapper.len();
        }
    }
    let quoted_from = i;
    skip(&mut i, b"\"'\\");
    let quote = &b[quoted_from..i];
    for scheme in [&b"Bearer "[..], b"Basic ", b"bearer ", b"basic "] {
        if b[i..].starts_with(scheme) {
            i += scheme.len();
        }
    }
    let from = i;
    if b[from..].starts_with(REDACTED.as_bytes()) {
        return None;
    }
    let end = if quote.is_empty() {
        let mut j = i;
        while j < b.len() && !b" ,;&)}]\"'\t\r\n".contains(&b[j]) {
            j += 1;
        }
        j
    } else {
        // Up to the same quote sequence (`"`, `'` or `\"`).
        let mut j = i;
        while j < b.len() && !b[j..].starts_with(quote) {
            j += 1;
        }
        j
    };
    (end > from).then_some((from, end))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_under_credential_keys_are_masked_at_any_depth() {
        let v = json!({"user": "ann", "password": "hunter22", "nested": [{"api_key": 42}]});
        assert_eq!(
            redact_value(&v),
            json!({"user": "ann", "password": "***", "nested": [{"api_key": "***"}]})
        );
    }

    #[test]
    fn log_lines_lose_secrets_and_credential_values() {
        remember("s3cr3t-value");
        remember(r#"qu"o\te-secret"#);
        let cases = [
            (
                "sent s3cr3t-value twice: s3cr3t-value",
                "sent [redacted] twice: [redacted]",
            ),
            (
                r#"args={"user":"ann","password":"hunter 22"}"#,
                r#"args={"user":"ann","password":"***"}"#,
            ),
            (
                r#"arguments: Object {"password": String("hunter22"), "n": Number(1)}"#,
                r#"arguments: Object {"password": String("***"), "n": Number(1)}"#,
            ),
            (
                "authorization: Bearer abc.def ok",
                "authorization: Bearer *** ok",
            ),
            ("GET /x?api_key=abc&q=1", "GET /x?api_key=***&q=1"),
            (r#"{\"token\":\"t0k\"}"#, r#"{\"token\":\"***\"}"#),
            ("max_tokens=10 user=ann", "max_tokens=10 user=ann"),
            // Debug-escaped, JSON-escaped and percent-encoded forms of a secret.
            (
                r#"header: "Bearer qu\"o\\te-secret" json "qu\"o\\te-secret" q=qu%22o%5Cte-secret"#,
                r#"header: "Bearer [redacted]" json "[redacted]" q=[redacted]"#,
            ),
            ("token=s3cr3t-value rest", "token=[redacted] rest"),
        ];
        for (line, want) in cases {
            assert_eq!(scrub(line), want, "{line}");
        }
        assert!(matches!(scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn outputs_lose_secrets_but_not_binary_data() {
        remember("out-secret-4b1d");
        let mut out = ToolOutput::structured(json!({"out-secret-4b1d": ["out-secret-4b1d"]}))
            .with_content(Content::Image {
                data: "out-secret-4b1d".into(),
                mime_type: "image/png".into(),
            });
        assert!(output(&mut out));
        assert_eq!(out.structured, Some(json!({"[redacted]": ["[redacted]"]})));
        assert_eq!(
            out.content[0].as_text(),
            Some(r#"{"[redacted]":["[redacted]"]}"#)
        );
        assert!(
            matches!(&out.content[1], Content::Image { data, .. } if data == "out-secret-4b1d")
        );
        let mut clean = ToolOutput::text("nothing");
        assert!(!output(&mut clean));
    }
}
