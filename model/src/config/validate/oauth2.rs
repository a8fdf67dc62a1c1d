//! Checks of `oauth2:` client credentials (RFC 6749 section 4.4) wherever an upstream takes
//! them: an OpenAPI source's `auth`, an A2A agent's `auth`, an MCP server's `http` / `sse`.

use super::super::openapi::{ASSERTION_ALGORITHMS, ClientAuth};
use super::super::{Diagnostic, LoadedConfig, OAuth2ClientCredentials};
use super::gateway::is_loopback_url;
use super::is_http_url;

/// The token endpoint is an http(s) URL, and https unless it is on this host (the client
/// secret travels to it); `resource` is an absolute URL without a fragment (RFC 8707
/// section 2).
pub(super) fn check_client_credentials(
    cfg: &LoadedConfig,
    at: &str,
    owner: &str,
    o: &OAuth2ClientCredentials,
    errors: &mut Vec<Diagnostic>,
) {
    for (key, v) in [
        ("client_id", Some(&o.client_id)),
        ("client_secret", o.client_secret.as_ref()),
    ] {
        if v.is_some_and(|v| v.raw().trim().is_empty()) {
            errors.push(cfg.error_at(
                &format!("{at}/{key}"),
                format!("{owner}: `oauth2.{key}` is empty"),
            ));
        }
    }
    if let Some(url) = &o.token_url
        && url.contains('@')
        && url.split("://").nth(1).is_some_and(|rest| {
            rest.split(['/', '?', '#'])
                .next()
                .unwrap_or("")
                .contains('@')
        })
    {
        errors.push(
            cfg.error_at(
                &format!("{at}/token_url"),
                format!("{owner}: `oauth2.token_url` holds a user name or password"),
            )
            .with_hint("give the credentials as `client_id` and `client_secret`, not in the URL"),
        );
    } else if let Some(url) = &o.token_url {
        if !is_http_url(url) {
            errors.push(cfg.error_at(
                &format!("{at}/token_url"),
                format!("{owner}: `oauth2.token_url` `{url}` is not an http(s) URL"),
            ));
        } else if url.starts_with("http://") && !is_loopback_url(url) {
            errors.push(
                cfg.error_at(
                    &format!("{at}/token_url"),
                    format!(
                        "{owner}: `oauth2.token_url` `{url}` is plain http: the client secret would cross the network unencrypted"
                    ),
                )
                .with_hint("use https (plain http only to a loopback address, e.g. a provider on this host)"),
            );
        }
    }
    if let Some(resource) = &o.resource
        && (!is_http_url(resource) || resource.contains('#'))
    {
        errors.push(
            cfg.error_at(
                &format!("{at}/resource"),
                format!(
                    "{owner}: `oauth2.resource` `{resource}` is not an absolute http(s) URL without a fragment (RFC 8707 section 2)"
                ),
            )
            .with_hint("give the upstream's URL, e.g. `https://tickets.example.com/mcp`"),
        );
    }
    let jwt = o.client_auth == ClientAuth::PrivateKeyJwt;
    if jwt && o.private_key.is_none() {
        errors.push(
            cfg.error_at(
                at,
                format!("{owner}: `oauth2.client_auth: private_key_jwt` needs `private_key`"),
            )
            .with_hint(
                "give the PEM key, e.g. `private_key: \"${file:/run/secrets/toolgate-key.pem}\"`",
            ),
        );
    }
    if !jwt && o.client_secret.is_none() {
        errors.push(
            cfg.error_at(at, format!("{owner}: `oauth2` needs `client_secret`"))
                .with_hint(
                    "or sign with a key instead: `client_auth: private_key_jwt` and `private_key`",
                ),
        );
    }
    if !jwt
        && (o.private_key.is_some()
            || o.signing_algorithm.is_some()
            || o.assertion_audience.is_some())
    {
        errors.push(cfg.error_at(
            at,
            format!(
                "{owner}: `private_key`, `signing_algorithm` and `assertion_audience` are for `client_auth: private_key_jwt`"
            ),
        ));
    }
    if let Some(alg) = &o.signing_algorithm
        && !ASSERTION_ALGORITHMS.contains(&alg.as_str())
    {
        errors.push(cfg.error_at(
            &format!("{at}/signing_algorithm"),
            format!(
                "{owner}: `{alg}` is not an algorithm a client assertion is signed with (one of: {})",
                ASSERTION_ALGORITHMS.join(", ")
            ),
        ));
    }
    if o.scopes.iter().any(|s| s.is_empty() || s.contains(' ')) {
        errors.push(
            cfg.error_at(
                &format!("{at}/scopes"),
                format!("{owner}: `oauth2.scopes` entries are single scope names: not empty, without spaces"),
            )
            .with_hint("list each scope on its own: `scopes: [tickets.read, tickets.write]`"),
        );
    }
}
