//! Checks of the `gateway:` section and of policy knobs the runtime does not enforce yet.

use super::super::{Diagnostic, LoadedConfig};
use super::is_http_url;

/// `gateway:`: an address `serve` can bind, limits that let requests through, hosts and origins
/// in the form they are compared in, API keys that are distinct and not written in the file.
pub(super) fn check_gateway(
    cfg: &LoadedConfig,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    let g = &cfg.gateway;
    if let Some(listen) = &g.listen
        && listen.parse::<std::net::SocketAddr>().is_err()
    {
        errors.push(
            cfg.error_at(
                "/gateway/listen",
                format!("`{listen}` is not an address to listen on"),
            )
            .with_hint("give an IP address and a port, e.g. 127.0.0.1:8787 or [::1]:8787"),
        );
    }
    if g.max_body_bytes == Some(0) {
        errors.push(cfg.error_at(
            "/gateway/max_body_bytes",
            "`max_body_bytes: 0` would refuse every request with a body (413)",
        ));
    }
    for (key, value, what) in [
        (
            "header_timeout_ms",
            g.header_timeout_ms,
            "no request head could arrive in time",
        ),
        (
            "body_timeout_ms",
            g.body_timeout_ms,
            "no request body could arrive in time (408)",
        ),
        (
            "idle_timeout_ms",
            g.idle_timeout_ms,
            "every kept-alive connection would close at once",
        ),
    ] {
        if value == Some(0) {
            errors.push(
                cfg.error_at(&format!("/gateway/{key}"), format!("`{key}: 0`: {what}"))
                    .with_hint("give milliseconds, at least 1"),
            );
        }
    }
    if g.max_connections == Some(0) {
        errors.push(cfg.error_at(
            "/gateway/max_connections",
            "`max_connections: 0` would serve no connection",
        ));
    }
    if let (Some(idle), Some(header)) = (g.idle_timeout_ms, g.header_timeout_ms)
        && idle > header
    {
        warnings.push(
            Diagnostic::warning(
                &cfg.path,
                Some(cfg.locate("/gateway/idle_timeout_ms")),
                format!(
                    "`idle_timeout_ms: {idle}` is longer than `header_timeout_ms: {header}`: a kept-alive connection is closed after {header} ms without a request anyway"
                ),
            )
            .with_hint("the wait for the next request head is bounded by header_timeout_ms too"),
        );
    }
    if g.page_size == Some(0) {
        errors.push(cfg.error_at(
            "/gateway/page_size",
            "`page_size: 0`: a tools/list page needs at least one tool",
        ));
    }
    for (i, host) in g.allowed_hosts.iter().enumerate() {
        let at = format!("/gateway/allowed_hosts/{i}");
        if host.contains('/') {
            if !is_network(host) {
                errors.push(
                    cfg.error_at(&at, format!("`{host}` is not a network in CIDR notation"))
                        .with_hint("an address and a prefix length, e.g. 10.0.0.0/8 or fd00::/8 (up to /32 for IPv4, /128 for IPv6)"),
                );
            }
        } else if host.trim().is_empty() {
            errors.push(
                cfg.error_at(&at, format!("`{host}` is not a Host header value"))
                .with_hint("a name or name:port as clients send it in `Host`, e.g. gw.internal or gw.internal:8787"),
            );
        }
    }
    for (i, origin) in g.allowed_origins.iter().enumerate() {
        let ok = origin == "null"
            || ["http://", "https://"].iter().any(|s| {
                origin
                    .strip_prefix(s)
                    .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
            });
        if !ok {
            errors.push(
                cfg.error_at(
                    &format!("/gateway/allowed_origins/{i}"),
                    format!("`{origin}` is not an origin"),
                )
                .with_hint(
                    "scheme://host[:port] as browsers send it, e.g. https://app.example.com",
                ),
            );
        }
    }
    if let Some(oauth) = &g.auth.oauth {
        check_oauth(cfg, oauth, errors);
    }
    let mut names = std::collections::HashSet::new();
    for (i, key) in g.api_keys.iter().enumerate() {
        if key.name.contains('#') {
            errors.push(
                cfg.error_at(
                    &format!("/gateway/api_keys/{i}/name"),
                    format!("API key name `{}` has a `#`", key.name),
                )
                .with_hint("`#` sets apart the callers of access tokens (`{issuer}#{subject}`); choose another name"),
            );
        }
        if !names.insert(key.name.as_str()) {
            errors.push(cfg.error_at(
                &format!("/gateway/api_keys/{i}/name"),
                format!("two API keys are named `{}`", key.name),
            ));
        }
        if key.key.is_literal() {
            warnings.push(
                Diagnostic::warning(
                    &cfg.path,
                    Some(cfg.locate(&format!("/gateway/api_keys/{i}/key"))),
                    format!("API key `{}` is written in the file", key.name),
                )
                .with_hint("take it from the environment: key: \"${TOOLGATE_KEY}\""),
            );
        }
    }
    if let Some(key) = &g.session_key {
        check_session_key(cfg, key, errors, warnings);
    }
    check_servers(cfg, errors, warnings);
}

/// `gateway.servers`: ids that are one URL path segment, each once; name globs that parse;
/// roles some caller can have when the callers' roles are all known (API keys only).
fn check_servers(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>, warnings: &mut Vec<Diagnostic>) {
    use crate::config::is_server_id;
    let g = &cfg.gateway;
    let mut ids = std::collections::HashSet::new();
    // Roles are a closed set when every caller comes with an API key.
    let known_roles: Option<std::collections::HashSet<&str>> =
        (!g.api_keys.is_empty() && g.auth.oauth.is_none()).then(|| {
            g.api_keys
                .iter()
                .flat_map(|k| k.roles.iter().map(String::as_str))
                .collect()
        });
    for (i, server) in g.servers.iter().enumerate() {
        let at = format!("/gateway/servers/{i}");
        if !is_server_id(&server.id) {
            errors.push(
                cfg.error_at(
                    &format!("{at}/id"),
                    format!(
                        "virtual server id `{}` is not one URL path segment",
                        server.id
                    ),
                )
                .with_hint("use 1 to 64 letters, digits, `-` and `_`, e.g. github-read"),
            );
        } else if !ids.insert(server.id.as_str()) {
            errors.push(cfg.error_at(
                &format!("{at}/id"),
                format!("two virtual servers have the id `{}`", server.id),
            ));
        }
        for (list, selectors) in [
            ("include", &server.tools.include),
            ("exclude", &server.tools.exclude),
        ] {
            for (j, selector) in selectors.iter().enumerate() {
                if let Some(name) = &selector.name
                    && let Err(e) = glob::Pattern::new(name)
                {
                    errors.push(cfg.error_at(
                        &format!("{at}/tools/{list}/{j}/name"),
                        format!("`{name}` is not a glob: {e}"),
                    ));
                }
            }
        }
        if let Some(prefix) = &server.prefix
            && !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            errors.push(
                cfg.error_at(
                    &format!("{at}/prefix"),
                    format!("prefix `{prefix}` would make tool names MCP clients refuse"),
                )
                .with_hint("use letters, digits, `-` and `_`, e.g. gh_"),
            );
        }
        if let Some(known) = &known_roles {
            for (j, role) in server.roles.iter().enumerate() {
                if !known.contains(role.as_str()) {
                    warnings.push(
                        cfg.warning_at(
                            &format!("{at}/roles/{j}"),
                            format!("no API key has the role `{role}`: nobody can use virtual server `{}` with it", server.id),
                        )
                        .with_hint("give the role to an API key in gateway.api_keys, or fix its spelling"),
                    );
                }
            }
        }
    }
}

/// `gateway.session_key`: written as a reference (a literal is checked for its form and
/// warned about), 32 bytes once resolved (checked by `serve`, which resolves it).
fn check_session_key(
    cfg: &LoadedConfig,
    key: &super::super::interpolate::Interpolated,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    const AT: &str = "/gateway/session_key";
    if !key.is_literal() {
        return;
    }
    if let Err(why) = crate::config::session_key_bytes(key.raw()) {
        errors.push(cfg.error_at(AT, format!("`session_key` {why}")).with_hint(
            "make one with `openssl rand -hex 32` and give it as \"${TOOLGATE_SESSION_KEY}\"",
        ));
        return;
    }
    warnings.push(
        cfg.warning_at(AT, "the session key is written in the file")
            .with_hint("take it from the environment: session_key: \"${TOOLGATE_SESSION_KEY}\""),
    );
}

/// `store:`: a Redis URL of a scheme the client speaks, a prefix, bounds that let a command
/// finish.
pub(super) fn check_store(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>) {
    let Some(redis) = &cfg.store.redis else {
        return;
    };
    let url = redis.url.raw();
    if redis.url.is_literal()
        && ![
            "redis://",
            "rediss://",
            "unix://",
            "redis+unix://",
            "valkey://",
            "valkeys://",
        ]
        .iter()
        .any(|scheme| url.starts_with(scheme))
    {
        errors.push(
            cfg.error_at("/store/redis/url", "`url` is not a Redis URL")
                .with_hint("write redis://host:6379, rediss://host:6380 (TLS) or \"${REDIS_URL}\""),
        );
    }
    if redis
        .key_prefix
        .as_deref()
        .is_some_and(|p| p.is_empty() || p.contains(char::is_whitespace))
    {
        errors.push(cfg.error_at(
            "/store/redis/key_prefix",
            "`key_prefix` must be a non-empty word without spaces",
        ));
    }
    for (key, value) in [
        ("timeout_ms", redis.timeout_ms),
        ("connect_timeout_ms", redis.connect_timeout_ms),
    ] {
        if value == Some(0) {
            errors.push(
                cfg.error_at(
                    &format!("/store/redis/{key}"),
                    format!("`{key}: 0`: no Redis command could finish"),
                )
                .with_hint(
                    "give milliseconds, at least 1 (default 250 for commands, 1000 for connecting)",
                ),
            );
        }
    }
}

/// Whether an `http://` URL's host is a loopback address or `localhost`.
pub(super) fn is_loopback_url(url: &str) -> bool {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `gateway.auth.oauth`: a resource URL, at least one issuer, issuer and key URLs that are
/// URLs, and only asymmetric signing algorithms.
fn check_oauth(
    cfg: &LoadedConfig,
    oauth: &crate::config::OAuthConfig,
    errors: &mut Vec<Diagnostic>,
) {
    const AT: &str = "/gateway/auth/oauth";
    for (tools, scopes) in &oauth.tool_scopes {
        let at = format!(
            "{AT}/tool_scopes/{}",
            tools.replace('~', "~0").replace('/', "~1")
        );
        if let Some(e) = super::glob_error(tools) {
            errors.push(cfg.error_at(&at, format!("`tool_scopes`: {e}")));
        }
        if scopes.is_empty() || scopes.iter().any(|s| s.is_empty() || s.contains(' ')) {
            errors.push(
                cfg.error_at(
                    &at,
                    format!("`tool_scopes` of `{tools}`: give one or more scope names, each without spaces"),
                )
                .with_hint("e.g. `tool_scopes: {\"tickets.*\": [tickets:write]}`"),
            );
        }
    }
    if !is_http_url(&oauth.resource) {
        errors.push(
            cfg.error_at(
                &format!("{AT}/resource"),
                format!("`{}` is not an http(s) URL", oauth.resource),
            )
            .with_hint("the URL clients reach the gateway at, e.g. https://gw.example.com/mcp (RFC 9728 §2)"),
        );
    }
    if oauth.resource.contains('#') {
        errors.push(cfg.error_at(
            &format!("{AT}/resource"),
            format!(
                "`{}` has a fragment: a resource identifier has none (RFC 8707 §2)",
                oauth.resource
            ),
        ));
    }
    if oauth.issuers.is_empty() {
        errors.push(
            cfg.error_at(
                &format!("{AT}/issuers"),
                "no issuer: no token could be accepted",
            )
            .with_hint("add one: issuers: [{issuer: https://idp.example.com}]"),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for (i, issuer) in oauth.issuers.iter().enumerate() {
        let at = format!("{AT}/issuers/{i}");
        if issuer.issuer.contains('#') {
            errors.push(cfg.error_at(
                &format!("{at}/issuer"),
                format!(
                    "issuer `{}` has a fragment (`#`): an issuer identifier has none (RFC 8414 §2)",
                    issuer.issuer
                ),
            ));
        }
        if !seen.insert(issuer.issuer.as_str()) {
            errors.push(cfg.error_at(
                &format!("{at}/issuer"),
                format!("issuer `{}` is listed twice", issuer.issuer),
            ));
        }
        for (key, url) in [
            ("issuer", Some(&issuer.issuer)),
            ("discovery_url", issuer.discovery_url.as_ref()),
            ("jwks_uri", issuer.jwks_uri.as_ref()),
        ] {
            let Some(url) = url else { continue };
            if !is_http_url(url) {
                errors.push(cfg.error_at(
                    &format!("{at}/{key}"),
                    format!("`{url}` is not an http(s) URL"),
                ));
            } else if url.starts_with("http://") && !is_loopback_url(url) {
                errors.push(
                    cfg.error_at(
                        &format!("{at}/{key}"),
                        format!("`{url}` is plain http: keys read over it could be swapped on the way"),
                    )
                    .with_hint("use https (plain http only to a loopback address, e.g. a provider on this host)"),
                );
            }
        }
        for (j, alg) in issuer.algorithms.iter().enumerate() {
            if !crate::config::TOKEN_ALGORITHMS.contains(&alg.as_str()) {
                let why = if alg.eq_ignore_ascii_case("none") || alg.starts_with("HS") {
                    "is never accepted: an unsigned token, or one signed with a shared secret, proves nothing about its issuer"
                } else {
                    "is not a signing algorithm the gateway knows"
                };
                errors.push(
                    cfg.error_at(&format!("{at}/algorithms/{j}"), format!("`{alg}` {why}"))
                        .with_hint(format!(
                            "one of {}",
                            crate::config::TOKEN_ALGORITHMS.join(", ")
                        )),
                );
            }
        }
    }
}

/// Whether `text` is `address/prefix` (CIDR, RFC 4632 §3.1; RFC 4291 §2.3 for IPv6).
fn is_network(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => prefix <= 32,
        Ok(std::net::IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}
