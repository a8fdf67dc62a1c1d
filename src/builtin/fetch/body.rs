//! Reading and decoding response bodies.

use reqwest::StatusCode;

/// Read at most `limit` body bytes; the flag says whether there was more.
pub(super) async fn read_body(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let expected = response.content_length();
    let mut body = Vec::with_capacity(expected.map_or(8192, |n| n as usize).min(limit));
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
        if body.len() == limit {
            let more = match expected {
                Some(n) => n > limit as u64,
                // Unknown length: peek; an error or timeout here just means "maybe more".
                None => !matches!(response.chunk().await, Ok(None)),
            };
            return Ok((body, more));
        }
    }
    Ok((body, false))
}

/// The MIME type without parameters, lowercase.
pub(super) fn essence(content_type: &str) -> String {
    let essence = content_type.split(';').next().unwrap_or_default();
    essence.trim().to_ascii_lowercase()
}

pub(super) fn is_text(content_type: &str) -> bool {
    let essence = essence(content_type);
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind == "text"
        || sub.ends_with("+json")
        || sub.ends_with("+xml")
        || sub.ends_with("+yaml")
        || (kind == "application"
            && matches!(
                sub,
                "json"
                    | "xml"
                    | "javascript"
                    | "ecmascript"
                    | "x-javascript"
                    | "x-www-form-urlencoded"
                    | "yaml"
                    | "x-yaml"
                    | "toml"
                    | "x-ndjson"
                    | "jsonl"
                    | "graphql"
                    | "sql"
                    | "x-sh"
                    | "x-httpd-php"
                    | "csv"
            ))
}

/// Decode with the declared charset (UTF-8 by default; a BOM wins), replacing invalid bytes.
/// When the body was cut, a partial UTF-8 sequence at the end is dropped.
pub(super) fn decode(body: &[u8], content_type: Option<&str>, truncated: bool) -> String {
    let encoding = content_type
        .and_then(|ct| {
            ct.split(';').skip(1).find_map(|param| {
                let (key, value) = param.split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("charset")
                    .then(|| value.trim().trim_matches('"'))
            })
        })
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let mut body = body;
    if truncated
        && encoding == encoding_rs::UTF_8
        && let Err(e) = std::str::from_utf8(body)
        && e.error_len().is_none()
    {
        body = &body[..e.valid_up_to()];
    }
    encoding.decode(body).0.into_owned()
}

pub(super) fn excerpt(status: StatusCode, text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let excerpt = toolgate_model::text::cut(&text, 300).into_owned();
    if excerpt.is_empty() {
        status.canonical_reason().unwrap_or("no body").to_owned()
    } else {
        excerpt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        for ct in [
            "text/html; charset=utf-8",
            "application/json",
            "application/ld+json",
            "image/svg+xml",
            "application/xml",
            "TEXT/PLAIN",
            "application/javascript",
        ] {
            assert!(is_text(ct), "{ct}");
        }
        for ct in [
            "image/png",
            "application/pdf",
            "application/octet-stream",
            "video/mp4",
            "garbage",
        ] {
            assert!(!is_text(ct), "{ct}");
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=\"latin1\""), false),
            "caf\u{e9}"
        );
        assert_eq!(decode(b"a\xffb", None, false), "a\u{fffd}b");
        assert_eq!(decode("\u{e9}".as_bytes()[..1].as_ref(), None, true), "");
        assert_eq!(
            decode(b"\xef\xbb\xbfhi", Some("text/plain; charset=latin1"), false),
            "hi"
        );
    }
}
