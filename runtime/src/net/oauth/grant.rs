//! One token request — client credentials (RFC 6749 §4.4.2) or token exchange (RFC 8693 §2.1)
//! — and its answer (RFC 6749 §5.1, §5.2; RFC 8693 §2.2): the client's proof of who it is
//! (§2.3.1 Basic or form fields; RFC 7523 §2.2 a signed JWT), the form, and the checks an
//! answer must pass before its token is sent anywhere.

use std::time::Duration;

use base64::Engine as _;
use reqwest::Url;
use toolgate_model::config::Secret;
use toolgate_model::secrets;

use super::{MAX_TOKEN_RESPONSE, TOKEN_TIMEOUT};
use crate::{ErrorKind, ToolError};

/// The longest a token is kept, whatever its `expires_in` says.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How long a token without `expires_in` is kept (a 401 replaces it sooner).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// The client's authentication to the token endpoint.
pub(super) enum Proof {
    /// `client_secret_basic`.
    Basic(Secret),
    /// `client_secret_post`.
    Post(Secret),
    /// `private_key_jwt`: the key, its algorithm, the assertion's configured `aud`.
    Jwt {
        key: Box<jsonwebtoken::EncodingKey>,
        algorithm: jsonwebtoken::Algorithm,
        audience: Option<String>,
    },
}

/// The `grant_type` of RFC 8693 §2.1.
pub(super) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type asked for in an exchange: an access token to send as `Bearer`.
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The subject of a token exchange: the caller's token and its type URI.
pub(super) struct Subject<'a> {
    pub token: &'a Secret,
    pub token_type: &'a str,
}

/// What is asked for, besides the grant.
pub(super) struct Ask<'a> {
    pub owner: &'a str,
    /// For a token exchange: the caller's token (else the grant is client credentials).
    pub subject: Option<Subject<'a>>,
    pub client_id: &'a Secret,
    pub proof: &'a Proof,
    pub scopes: &'a [String],
    pub resource: Option<String>,
    pub audience: Option<&'a str>,
    /// The issuer, when the token endpoint was discovered (a JWT assertion's default `aud`).
    pub issuer: Option<&'a str>,
}

/// A token and how long it is used.
pub(super) struct Granted {
    pub token: Secret,
    pub expires_in: Duration,
}

/// Sends the token request to `token_url` with `http` (which follows no redirects) and checks
/// the answer.
///
/// # Errors
/// See [`super::ClientCredentials::refresh`].
pub(super) async fn request(
    http: &reqwest::Client,
    token_url: &Url,
    ask: &Ask<'_>,
) -> Result<Granted, ToolError> {
    let host = token_url.host_str().unwrap_or_default().to_string();
    let what = if ask.subject.is_some() {
        "OAuth2 token exchange (RFC 8693)"
    } else {
        "OAuth2 token request"
    };
    let context = format!("{}: {what} to `{host}`", ask.owner);
    let fail = |kind: ErrorKind, what: String| ToolError::new(kind, format!("{context}: {what}"));
    let mut form = match &ask.subject {
        None => vec![("grant_type", "client_credentials".to_string())],
        Some(subject) => vec![
            ("grant_type", TOKEN_EXCHANGE.to_string()),
            ("subject_token", subject.token.expose().to_string()),
            ("subject_token_type", subject.token_type.to_string()),
            ("requested_token_type", ACCESS_TOKEN_TYPE.to_string()),
        ],
    };
    if !ask.scopes.is_empty() {
        form.push(("scope", ask.scopes.join(" ")));
    }
    if let Some(resource) = &ask.resource {
        form.push(("resource", resource.clone()));
    }
    if let Some(audience) = ask.audience {
        form.push(("audience", audience.to_string()));
    }
    let mut request = http
        .post(token_url.clone())
        .timeout(TOKEN_TIMEOUT)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json");
    let id = ask.client_id.expose();
    match ask.proof {
        Proof::Basic(secret) => {
            let pair = basic_pair(id, secret.expose());
            request = request.header("Authorization", format!("Basic {pair}"));
        }
        Proof::Post(secret) => {
            form.push(("client_id", id.to_string()));
            form.push(("client_secret", secret.expose().to_string()));
        }
        Proof::Jwt {
            key,
            algorithm,
            audience,
        } => {
            let aud = audience
                .clone()
                .or_else(|| ask.issuer.map(str::to_string))
                .unwrap_or_else(|| token_url.to_string());
            let assertion = assertion(id, &aud, key, *algorithm).map_err(|e| {
                fail(
                    ErrorKind::Internal,
                    format!("cannot sign the client assertion: {e}"),
                )
            })?;
            form.push(("client_id", id.to_string()));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string(),
            ));
            form.push(("client_assertion", assertion));
        }
    }
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| super::super::network_error(&e, &host).with_context(&context))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = read_capped(response)
        .await
        .map_err(|e| e.with_context(&context))?;
    // A token endpoint that quotes the caller's token back: not shown.
    let text = || {
        let mut text = String::from_utf8_lossy(&body).into_owned();
        if let Some(subject) = &ask.subject {
            text = text.replace(subject.token.expose(), "[redacted]");
        }
        toolgate_model::text::cut_bytes(&text, 512).into_owned()
    };
    if !status.is_success() {
        let (kind, why) = match status.as_u16() {
            300..=399 => (
                ErrorKind::Upstream,
                "(token requests follow no redirects: set `token_url` to the endpoint itself) ",
            ),
            408 => (ErrorKind::Timeout, ""),
            429 => (ErrorKind::RateLimited, ""),
            400..=499 => (ErrorKind::PermissionDenied, ""),
            _ => (ErrorKind::Upstream, ""),
        };
        let mut e = fail(kind, format!("HTTP {status}: {why}{}", text()));
        if let Some(after) = retry_after.filter(|_| kind == ErrorKind::RateLimited) {
            e = e.with_retry_after(after);
        }
        return Err(e);
    }
    parse(&body).map_err(|what| {
        let what = match &ask.subject {
            Some(subject) => what.replace(subject.token.expose(), "[redacted]"),
            None => what,
        };
        fail(ErrorKind::Protocol, what)
    })
}

/// A token answer (RFC 6749 §5.1): a `Bearer` token of visible ASCII (it goes into a header),
/// `expires_in` a whole number of seconds (kept at most a day).
fn parse(body: &[u8]) -> Result<Granted, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        access_token: String,
        #[serde(default)]
        token_type: Option<String>,
        #[serde(default)]
        expires_in: Option<u64>,
    }
    let answer: Answer =
        serde_json::from_slice(body).map_err(|e| format!("the answer is not a token: {e}"))?;
    if answer.access_token.is_empty() {
        return Err("the answer's `access_token` is empty".into());
    }
    // Remembered before any check can quote it.
    secrets::remember(&answer.access_token);
    if !answer.access_token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "the answer's `access_token` has characters a header cannot carry (spaces, control characters or non-ASCII)"
                .into(),
        );
    }
    if let Some(kind) = answer
        .token_type
        .as_deref()
        .filter(|t| !t.eq_ignore_ascii_case("bearer"))
    {
        return Err(format!(
            "the answer's `token_type` is `{}`, not `Bearer` (RFC 6750): toolgate sends bearer tokens only",
            toolgate_model::text::cut(kind, 40)
        ));
    }
    let expires_in = answer
        .expires_in
        .map_or(DEFAULT_LIFETIME, Duration::from_secs)
        .min(MAX_LIFETIME);
    Ok(Granted {
        token: Secret::new(answer.access_token),
        expires_in,
    })
}

/// The body, at most [`MAX_TOKEN_RESPONSE`] bytes (a longer one is an error: a token answer
/// is small); a read that fails or times out is a `network` / `timeout` error.
pub(super) async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, ToolError> {
    let mut out = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                out.extend_from_slice(&chunk);
                if out.len() > MAX_TOKEN_RESPONSE {
                    return Err(ToolError::new(
                        ErrorKind::Protocol,
                        format!(
                            "the answer passed the {} KiB limit",
                            MAX_TOKEN_RESPONSE / 1024
                        ),
                    ));
                }
            }
            Ok(None) => return Ok(out),
            Err(e) if e.is_timeout() => {
                return Err(ToolError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the answer did not arrive within {} s",
                        TOKEN_TIMEOUT.as_secs()
                    ),
                ));
            }
            Err(e) => {
                return Err(ToolError::new(
                    ErrorKind::Network,
                    format!("the answer broke off: {}", super::super::reqwest_chain(&e)),
                ));
            }
        }
    }
}

/// The key of a `private_key` PEM for the algorithm named `name`.
pub(super) fn signing_key(
    pem: &str,
    name: &str,
) -> Result<(jsonwebtoken::EncodingKey, jsonwebtoken::Algorithm), String> {
    use jsonwebtoken::{Algorithm as A, EncodingKey};
    let algorithm: A = name
        .parse()
        .map_err(|_| format!("`{name}` is not a signing algorithm"))?;
    let key = match algorithm {
        A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => {
            EncodingKey::from_rsa_pem(pem.as_bytes())
        }
        A::ES256 | A::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
        A::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        _ => return Err(format!("`{name}` is not an asymmetric algorithm")),
    };
    // The PEM parser's message never quotes the key.
    let key = key.map_err(|e| format!("not a PEM key for this algorithm: {e}"))?;
    Ok((key, algorithm))
}

/// A client assertion (RFC 7523 §3): `iss` = `sub` = the client id, `aud`, a random `jti`,
/// issued now, valid 60 s.
fn assertion(
    client_id: &str,
    audience: &str,
    key: &jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": uuid::Uuid::new_v4().to_string(),
        "iat": now,
        "exp": now + 60,
    });
    jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, key)
}

/// What a form value keeps as is: the unreserved characters of RFC 3986 §2.3. A space becomes
/// `%20`, which form decoders and plain percent-decoders (some token endpoints decode the Basic
/// pair so) both read back.
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `v` encoded for an `application/x-www-form-urlencoded` body (RFC 6749 Appendix B).
fn form_encode(v: &str) -> String {
    percent_encoding::utf8_percent_encode(v, FORM).to_string()
}

/// `base64(form(id) ":" form(secret))`, the Basic credentials of RFC 6749 §2.3.1.
pub(super) fn basic_pair(id: &str, secret: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        form_encode(id),
        form_encode(secret)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basic_pair_form_encodes_id_and_secret_first() {
        // RFC 6749 §2.3.1: the id and secret are form-encoded before base64 (a space as
        // `%20`, a colon as `%3A`: the colon between them is the only one left).
        let pair = basic_pair("my client", "s:cret");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(pair)
            .unwrap();
        assert_eq!(decoded, b"my%20client:s%3Acret");
    }

    #[test]
    fn a_token_answer_must_be_a_bearer_token_a_header_can_carry() {
        let ok = parse(br#"{"access_token":"abc.DEF-1","token_type":"bearer","expires_in":60}"#);
        assert_eq!(ok.unwrap().expires_in, Duration::from_secs(60));
        for (body, says) in [
            (r#"{"access_token":"a\r\nX-Evil: 1"}"#, "cannot carry"),
            (r#"{"access_token":"a b"}"#, "cannot carry"),
            (
                r#"{"access_token":"abc","token_type":"mac"}"#,
                "not `Bearer`",
            ),
            (r#"{"access_token":""}"#, "empty"),
            (r#"{"access_token":"abc","expires_in":-1}"#, "not a token"),
            (r#"{"token":"abc"}"#, "not a token"),
        ] {
            let e = parse(body.as_bytes()).err().unwrap_or_default();
            assert!(e.contains(says), "{body}: {e}");
        }
    }

    #[test]
    fn a_huge_lifetime_is_kept_a_day_and_a_missing_one_an_hour() {
        let huge = parse(br#"{"access_token":"abc","expires_in":18446744073709551615}"#);
        assert_eq!(huge.unwrap().expires_in, MAX_LIFETIME);
        let none = parse(br#"{"access_token":"abc"}"#);
        assert_eq!(none.unwrap().expires_in, DEFAULT_LIFETIME);
    }
}
