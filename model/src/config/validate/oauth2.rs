//! Checks of `oauth2:` client credentials (RFC 6749 section 4.4) wherever an upstream takes
//! them: an OpenAPI source's `auth`, an A2A agent's `auth`, an MCP server's `http` / `sse`.

use super::super::openapi::{ASSERTION_ALGORITHMS, ClientAuth, OAuth2Grant};
use super::super::{Diagnostic, LoadedConfig, OAuth2ClientCredentials};
use super::gateway::is_loopback_url;
use super::is_http_url;

/// The token endpoint is an http(s) URL, and https unless it is on this host (the client
/// secret travels to it); `resource` is an absolute URL without a fragment (RFC 8707
/// section 2).
///
/// `exchange`: whether the upstream may use `grant: token_exchange` (MCP servers over HTTP
/// and OpenAPI sources; not A2A agents).
pub(super) fn check_client_credentials(
    cfg: &LoadedConfig,
    at: &str,
    owner: &str,
    o: &OAuth2ClientCredentials,
    exchange: bool,
    errors: &mut Vec<Diagnostic>,
) {
    if o.grant == OAuth2Grant::TokenExchange && !exchange {
        errors.push(
            cfg.error_at(
                &format!("{at}/grant"),
                format!("{owner}: `grant: token_exchange` is not available here (MCP servers over HTTP and OpenAPI sources only)"),
            )
            .with_hint("use `grant: client_credentials` (the default)"),
        );
    }
    if o.grant != OAuth2Grant::TokenExchange && o.subject_token_type.is_some() {
        errors.push(cfg.error_at(
            &format!("{at}/subject_token_type"),
            format!("{owner}: `subject_token_type` is for `grant: token_exchange`"),
        ));
    }
    if let Some(t) = &o.subject_token_type
        && !(t.starts_with("urn:") && t.contains(":oauth:token-type:"))
    {
        errors.push(
            cfg.error_at(
                &format!("{at}/subject_token_type"),
                format!("{owner}: `subject_token_type` `{t}` is not a token type URI (RFC 8693 section 3)"),
            )
            .with_hint("e.g. `urn:ietf:params:oauth:token-type:access_token` (the default) or `urn:ietf:params:oauth:token-type:jwt`"),
        );
    }
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::ToolsConfig;

    fn errors(src: &str) -> String {
        match ToolsConfig::from_yaml_str(src, Path::new("tools.yaml")) {
            Ok(_) => String::new(),
            Err(e) => e
                .diagnostics()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    const OAUTH2: &str = "{token_url: \"http://127.0.0.1:9/token\", client_id: gw, client_secret: s3cret-value, grant: token_exchange";

    #[test]
    fn token_exchange_is_taken_by_mcp_servers_and_openapi_sources_but_not_by_a2a_agents() {
        let mcp = format!(
            "version: 1\ntools:\n  mcp:\n    - id: t\n      http: {{url: \"http://127.0.0.1:9/mcp\", oauth2: {OAUTH2}}}}}\n"
        );
        assert_eq!(errors(&mcp), "");
        let openapi = format!(
            "version: 1\ntools:\n  openapi:\n    - id: o\n      spec: api.yaml\n      auth: {{oauth2: {OAUTH2}, subject_token_type: \"urn:ietf:params:oauth:token-type:jwt\"}}}}\n"
        );
        assert!(!errors(&openapi).contains("oauth2"), "{}", errors(&openapi));
        let a2a = format!(
            "version: 1\ntools:\n  a2a:\n    - id: a\n      url: \"http://127.0.0.1:9\"\n      auth: {{oauth2: {OAUTH2}}}}}\n"
        );
        let e = errors(&a2a);
        assert!(
            e.contains("A2A agent `a`: `grant: token_exchange` is not available here"),
            "{e}"
        );
    }

    #[test]
    fn a_subject_token_type_must_be_a_token_type_uri_and_only_for_an_exchange() {
        let entry = |o: &str| {
            format!(
                "version: 1\ntools:\n  mcp:\n    - id: t\n      http: {{url: \"http://127.0.0.1:9/mcp\", oauth2: {o}}}\n"
            )
        };
        let e = errors(&entry(&format!(
            "{OAUTH2}, subject_token_type: access_token}}"
        )));
        assert!(e.contains("is not a token type URI (RFC 8693"), "{e}");
        let e = errors(&entry(
            "{token_url: \"http://127.0.0.1:9/token\", client_id: gw, client_secret: s3cret-value, subject_token_type: \"urn:ietf:params:oauth:token-type:jwt\"}",
        ));
        assert!(e.contains("is for `grant: token_exchange`"), "{e}");
    }
}
