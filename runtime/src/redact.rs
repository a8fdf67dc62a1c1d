//! Keeping secrets out of logs: argument keys that name credentials, and the values tools.yaml's
//! `${ENV}` / `${file:...}` references resolved to.
//!
//! * [`is_credential_key`]: whether a key (an argument, a header, a field) names a credential
//!   (`password`, `token`, `secret`, `api_key`, `authorization`, ...);
//! * [`redact_value`]: a JSON value with every credential key's value replaced by `***`, for a
//!   log line that shows arguments;
//! * [`scrub`]: a log line with every resolved secret value and every `key: value` /
//!   `key=value` of a credential key masked. The CLI passes every log line through it (the last
//!   line of defence for a library's own debug output, rmcp's or reqwest's).

use std::borrow::Cow;

use serde_json::Value;

/// What a masked value is replaced by.
pub const MASK: &str = "***";

/// Whether `key` names a credential: compared without case, `-`, `_` and `.`, it contains
/// `password`, `passwd`, `passphrase`, `secret`, `token` (not `tokens`: `max_tokens` is a
/// count), `apikey`, `authorization`, `credential`, `privatekey`, `accesskey`, `cookie` or
/// `sessionid`.
pub fn is_credential_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "authorization",
        "credential",
        "privatekey",
        "accesskey",
        "cookie",
        "sessionid",
    ];
    WORDS.iter().any(|w| k.contains(w)) || (k.contains("token") && !k.contains("tokens"))
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

/// `line` with every one of `secrets` (non-empty values) and the value after every credential
/// key (`password: x`, `"api_key":"x"`, `token=x`, `Authorization: Bearer x`,
/// `"password": String("x")`) replaced by `***`. Borrowed when nothing was masked.
pub fn scrub<'a>(line: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(line);
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), MASK));
        }
    }
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
/// quote, or to the next delimiter when unquoted.
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
    fn credential_keys_are_recognized() {
        for k in [
            "password",
            "db_password",
            "API_KEY",
            "x-api-key",
            "Authorization",
            "access_token",
            "client.secret",
            "Cookie",
        ] {
            assert!(is_credential_key(k), "{k}");
        }
        for k in ["max_tokens", "query", "author", "path", "keyword"] {
            assert!(!is_credential_key(k), "{k}");
        }
    }

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
        let secrets = vec!["s3cr3t-value".to_string()];
        let cases = [
            (
                "sent s3cr3t-value twice: s3cr3t-value",
                "sent *** twice: ***",
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
        ];
        for (line, want) in cases {
            assert_eq!(scrub(line, &secrets), want, "{line}");
        }
        assert!(matches!(scrub("nothing here", &secrets), Cow::Borrowed(_)));
    }
}
