//! Checks of `oauth2:` client credentials (RFC 6749 section 4.4) wherever an upstream takes
//! them: an OpenAPI source's `auth`, an A2A agent's `auth`, an MCP server's `http` / `sse`.

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
    if let Some(url) = &o.token_url {
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
    if o.scopes.iter().any(|s| s.is_empty() || s.contains(' ')) {
        errors.push(
            cfg.error_at(
                &format!("{at}/scopes"),
                format!("{owner}: `oauth2.scopes` entries are single scope names, without spaces"),
            )
            .with_hint("list each scope on its own: `scopes: [tickets.read, tickets.write]`"),
        );
    }
}
