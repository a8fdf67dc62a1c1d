//! Finding a resource server's token endpoint, as the MCP authorization specification
//! (2025-06-18 and later, "Authorization Server Discovery") has clients do:
//!
//! 1. The protected resource metadata (RFC 9728 §3): at the URL the server's HTTP 401 names in
//!    `WWW-Authenticate: Bearer resource_metadata="…"` (§5.1; one unauthenticated `ping` asks
//!    for it), else at `{origin}/.well-known/oauth-protected-resource{path}`, then without the
//!    path. Its `resource` must be the server's URL or a prefix of it on the same origin (§3.3:
//!    metadata for another resource is not used); its `authorization_servers` names the issuer
//!    (the first is used).
//! 2. The issuer's metadata: for an issuer with a path, `/.well-known/oauth-authorization-server
//!    {path}` (RFC 8414 §3.1), `/.well-known/openid-configuration{path}`, then
//!    `{path}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4); without one,
//!    the first two. Its `issuer` must be the issuer asked for (RFC 8414 §3.3); its
//!    `token_endpoint` is the answer, and must be `https://` (plain `http://` only to a
//!    loopback address: the client secret goes there).
//!
//! Each request has [`TOKEN_TIMEOUT`](super::TOKEN_TIMEOUT) and reads at most 64 KiB.

use reqwest::Url;
use serde_json::Value;

use super::grant::read_capped;
use super::{TOKEN_TIMEOUT, secure};
use crate::{ErrorKind, ToolError};

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The authorization server's token endpoint.
    pub token_url: Url,
    /// The resource identifier the metadata names (sent as `resource`, RFC 8707).
    pub resource: String,
    /// The authorization server's issuer (a `private_key_jwt` assertion's `aud`).
    pub issuer: String,
}

/// `url` without a trailing `/` on its path, fragment-free: the form resource identifiers are
/// compared in (RFC 9728 §3.3 asks for identical strings; a trailing slash is the usual
/// difference between two spellings of one URL).
fn canonical(url: &str) -> String {
    let url = url.split('#').next().unwrap_or(url);
    url.strip_suffix('/').unwrap_or(url).to_string()
}

/// The well-known URLs of `base` for `suffix`: with the path inserted after the suffix first
/// (RFC 8414 §3.1 / RFC 9728 §3.1), then at the root.
fn well_known(base: &Url, suffix: &str) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut out = Vec::new();
    let mut at = |p: &str| {
        let mut u = base.clone();
        u.set_path(p);
        u.set_query(None);
        u.set_fragment(None);
        if !out.contains(&u) {
            out.push(u);
        }
    };
    if !path.is_empty() {
        at(&format!("/.well-known/{suffix}{path}"));
    }
    at(&format!("/.well-known/{suffix}"));
    out
}

/// Whether the resource identifier `resource` is `server`'s URL or a prefix of it (whole path
/// segments) on the same origin: the resource a server's metadata may name for it.
fn covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.origin() != server.origin() {
        return false;
    }
    let want = r.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    have == want || have.starts_with(&format!("{want}/"))
}

/// The `resource_metadata` URL a server's 401 names (RFC 9728 §5.1), asked with one
/// unauthenticated JSON-RPC `ping`; `None` when it names none (or does not answer 401).
async fn challenge_metadata(client: &reqwest::Client, server: &Url) -> Option<Url> {
    let response = client
        .post(server.clone())
        .timeout(TOKEN_TIMEOUT)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    let named = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(resource_metadata_param)?;
    let url = server.join(&named).ok()?;
    // Metadata fetched over plain http from another host could be swapped on the way.
    secure(&url).then_some(url)
}

/// The `resource_metadata` auth-param of a `WWW-Authenticate` value (quoted or not).
fn resource_metadata_param(value: &str) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let at = lower.find("resource_metadata")?;
    let rest = value[at + "resource_metadata".len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let v = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    (!v.is_empty()).then(|| v.to_string())
}

/// Where an issuer's metadata may be, in the order the MCP specification tries them.
fn issuer_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut u = issuer.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        u
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// The first of `urls` that answers 200 with a JSON object, with the URL it came from.
async fn first_json(
    client: &reqwest::Client,
    urls: &[Url],
    owner: &str,
    what: &str,
) -> Result<(Url, serde_json::Map<String, Value>), ToolError> {
    let mut tried = Vec::new();
    for url in urls {
        let host = url.host_str().unwrap_or_default().to_string();
        let response = client
            .get(url.clone())
            .timeout(TOKEN_TIMEOUT)
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| {
                crate::net::network_error(&e, &host)
                    .with_context(format!("{owner}: OAuth2 discovery ({what})"))
            })?;
        let status = response.status();
        if !status.is_success() {
            tried.push(format!("{} (HTTP {})", url.path(), status.as_u16()));
            continue;
        }
        let body = read_capped(response)
            .await
            .map_err(|e| e.with_context(format!("{owner}: OAuth2 discovery ({what}) at {url}")))?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => return Ok((url.clone(), map)),
            _ => tried.push(format!("{} (not a JSON object)", url.path())),
        }
    }
    Err(ToolError::new(
        ErrorKind::Upstream,
        format!(
            "{owner}: OAuth2 discovery found no {what} (tried {}); set `oauth2.token_url`",
            tried.join(", ")
        ),
    ))
}

/// The token endpoint of the authorization server that protects `server`.
///
/// # Errors
/// A [`ToolError`] naming `owner`: `network` / `timeout` for a metadata URL that cannot be
/// reached; `upstream` when no metadata is found or it lacks what is needed, names another
/// resource or issuer, or a token endpoint that is not https (outside loopback).
pub(crate) async fn discover(
    client: &reqwest::Client,
    server: &Url,
    owner: &str,
) -> Result<Found, ToolError> {
    let fail = |message: String| ToolError::new(ErrorKind::Upstream, format!("{owner}: {message}"));
    if !secure(server) {
        return Err(fail(format!(
            "{server} is plain http: its metadata, and the token for it, would cross the network unencrypted; set `oauth2.token_url` or use https"
        )));
    }
    let mut prm_urls = Vec::new();
    if let Some(named) = challenge_metadata(client, server).await {
        prm_urls.push(named);
    }
    for u in well_known(server, "oauth-protected-resource") {
        if !prm_urls.contains(&u) {
            prm_urls.push(u);
        }
    }
    let (prm_url, prm) =
        first_json(client, &prm_urls, owner, "protected resource metadata").await?;
    let resource = match prm.get("resource").and_then(Value::as_str) {
        Some(r) if covers(r, server) => r.to_string(),
        Some(r) => {
            return Err(fail(format!(
                "the protected resource metadata at {prm_url} is for `{}`, not for this server (RFC 9728 section 3.3)",
                toolgate_model::text::cut(r, 200)
            )));
        }
        None => server.to_string(),
    };
    let issuer = prm
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or_else(|| {
            fail(format!(
                "the protected resource metadata at {prm_url} names no `authorization_servers`"
            ))
        })?;
    let issuer_url = Url::parse(issuer).map_err(|e| {
        fail(format!(
            "the authorization server `{}` is not a URL: {e}",
            toolgate_model::text::cut(issuer, 200)
        ))
    })?;
    // RFC 8414 §2: an issuer is https, with no query or fragment (plain http only on loopback).
    if !secure(&issuer_url) || issuer_url.query().is_some() || issuer_url.fragment().is_some() {
        return Err(fail(format!(
            "the authorization server `{}` is not an https URL without query or fragment (RFC 8414 section 2); not asked",
            toolgate_model::text::cut(issuer, 200)
        )));
    }
    let as_urls = issuer_metadata_urls(&issuer_url);
    let (as_url, meta) =
        first_json(client, &as_urls, owner, "authorization server metadata").await?;
    let said = meta
        .get("issuer")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if canonical(said) != canonical(issuer) {
        return Err(fail(format!(
            "the authorization server metadata at {as_url} is for issuer `{}`, not `{issuer}` (RFC 8414 section 3.3)",
            toolgate_model::text::cut(said, 200)
        )));
    }
    let token = meta
        .get("token_endpoint")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            fail(format!(
                "the authorization server metadata at {as_url} has no `token_endpoint`"
            ))
        })?;
    let token_url = Url::parse(token).map_err(|e| {
        fail(format!(
            "the token endpoint `{}` is not a URL: {e}",
            toolgate_model::text::cut(token, 200)
        ))
    })?;
    if let Some(why) = super::token_url_refusal(&token_url) {
        return Err(fail(format!("the token endpoint is refused: {why}")));
    }
    tracing::debug!(owner, token_endpoint = %token_url, resource = %resource, "OAuth2 token endpoint discovered");
    Ok(Found {
        token_url,
        resource,
        issuer: issuer.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_insert_the_path_first_then_try_the_root() {
        let server = Url::parse("https://mcp.example.com/tenant/mcp/").unwrap();
        let urls: Vec<String> = well_known(&server, "oauth-protected-resource")
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            urls,
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        let root = Url::parse("https://idp.example.com").unwrap();
        assert_eq!(
            well_known(&root, "openid-configuration")
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>(),
            ["https://idp.example.com/.well-known/openid-configuration"]
        );
    }

    #[test]
    fn issuer_metadata_is_looked_for_where_the_mcp_specification_says() {
        let with_path = Url::parse("https://idp.example.com/realms/agents").unwrap();
        let urls: Vec<String> = issuer_metadata_urls(&with_path)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            urls,
            [
                "https://idp.example.com/.well-known/oauth-authorization-server/realms/agents",
                "https://idp.example.com/.well-known/openid-configuration/realms/agents",
                "https://idp.example.com/realms/agents/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("https://idp.example.com/").unwrap();
        assert_eq!(issuer_metadata_urls(&root).len(), 2);
    }

    #[test]
    fn only_https_or_loopback_http_is_secure() {
        for (url, ok) in [
            ("https://idp.example.com/token", true),
            ("http://127.0.0.1:8080/token", true),
            ("http://[::1]/token", true),
            ("http://localhost/token", true),
            ("http://idp.example.com/token", false),
            ("http://10.0.0.1/token", false),
        ] {
            assert_eq!(secure(&Url::parse(url).unwrap()), ok, "{url}");
        }
    }

    #[test]
    fn issuers_compare_without_a_trailing_slash() {
        assert_eq!(canonical("https://a/realm/"), canonical("https://a/realm"));
        assert_ne!(canonical("https://a/realm"), canonical("https://b/realm"));
    }

    #[test]
    fn a_resource_covers_its_own_url_and_the_paths_below_it_on_its_origin() {
        let server = Url::parse("https://mcp.example.com/tenant/mcp").unwrap();
        for (resource, ok) in [
            ("https://mcp.example.com/tenant/mcp", true),
            ("https://mcp.example.com/tenant/mcp/", true),
            ("https://mcp.example.com/tenant", true),
            ("https://mcp.example.com", true),
            ("https://mcp.example.com/ten", false),
            ("https://mcp.example.com/other/mcp", false),
            ("https://evil.example.com/tenant/mcp", false),
            ("http://mcp.example.com/tenant/mcp", false),
            ("not a url", false),
        ] {
            assert_eq!(covers(resource, &server), ok, "{resource}");
        }
    }

    #[test]
    fn the_resource_metadata_parameter_is_read_quoted_or_not() {
        for (header, want) in [
            (
                r#"Bearer error="invalid_token", resource_metadata="https://a/.well-known/oauth-protected-resource/mcp""#,
                Some("https://a/.well-known/oauth-protected-resource/mcp"),
            ),
            (
                "Bearer resource_metadata=https://a/prm, scope=x",
                Some("https://a/prm"),
            ),
            (r#"Bearer realm="x""#, None),
            (r#"Bearer resource_metadata="""#, None),
        ] {
            assert_eq!(resource_metadata_param(header).as_deref(), want, "{header}");
        }
    }
}
