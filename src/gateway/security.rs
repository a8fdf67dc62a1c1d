//! What every HTTP request passes first: the `Host`/`Origin` check (DNS-rebinding
//! protection), the caller's credential (an API key or an OAuth access token: `gateway::auth`),
//! then the body, read whole within the size limit and the
//! body timeout (`gateway::body`). The caller it finds (or the anonymous one) is put in the
//! request's extensions as a [`Caller`].

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use toolgate_runtime::{ErrorKind, ToolError};

use super::Gateway;
use super::rest::error::ErrorResponse;

/// Who is calling, as the gateway authenticated them: an API key's name and roles, an access
/// token's subject and the roles its claims map to, or anonymous (no credential required, or
/// stdio). Found in every request's extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The API key's name; for an access token `{issuer}#{subject}` (an issuer identifier has
    /// no `#`: RFC 8414 §2; API key names may not have one), so that budgets, rate limits,
    /// metrics and logs never mix two callers; `None` for an anonymous caller.
    pub name: Option<String>,
    /// The issuer (`iss`) of the access token the caller came with; `None` for an API key or
    /// an anonymous caller.
    pub issuer: Option<String>,
    /// The access token's caller claim (`sub` unless configured); `None` for an API key or an
    /// anonymous caller.
    pub subject: Option<String>,
    /// The access token's scopes (`scope` / `scp`); empty for an API key.
    pub scopes: Vec<String>,
    /// The roles calls run with.
    pub roles: Vec<String>,
    /// The access token's claims (a JSON object), what `rego` / `cel` policies read as
    /// `caller.claims`; `None` for an API key or an anonymous caller.
    pub claims: Option<std::sync::Arc<serde_json::Value>>,
    /// The access token the caller came with, when the gateway's resource server accepted
    /// one: upstreams with `oauth2: {grant: token_exchange}` exchange it (RFC 8693); it is
    /// never sent anywhere as is. `None` for an API key or an anonymous caller.
    pub access_token: Option<toolgate_model::config::Secret>,
    /// The agent acting for the caller, from the `X-Toolgate-Agent` header (budgets per agent).
    pub agent: Option<String>,
    /// The task (conversation) the request is part of, from the `X-Toolgate-Task` header
    /// (budgets per task).
    pub task: Option<String>,
    /// The W3C `traceparent` the request came with (the `traceparent` header, an MCP
    /// request's `_meta.traceparent`), when valid; forwarded to the tool's backend.
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that came with [`traceparent`](Self::traceparent) (from the same
    /// place: header or `_meta`), forwarded with it.
    pub tracestate: Option<String>,
}

impl Caller {
    /// Who the caller is, as one string that tells API-key holders and token subjects of
    /// different issuers apart (`key:ci`, `token:https://idp.example.com#alice`); `None` when
    /// anonymous.
    pub fn principal(&self) -> Option<String> {
        let name = self.name.as_deref()?;
        // A token caller's name is `{issuer}#{subject}` already.
        Some(match &self.issuer {
            Some(_) => format!("token:{name}"),
            None => format!("key:{name}"),
        })
    }

    /// The request's `traceparent`, or a new one (a new trace) when it came without one.
    pub fn traceparent_or_new(&self) -> String {
        self.traceparent
            .clone()
            .unwrap_or_else(toolgate_runtime::trace_context::generate)
    }

    /// The identity calls and listings run under.
    pub fn identity(&self) -> toolgate_runtime::Identity {
        toolgate_runtime::Identity {
            caller: self.name.clone(),
            agent: self.agent.clone(),
            roles: self.roles.clone(),
            task: self.task.clone(),
            claims: self.claims.clone(),
        }
    }
}

/// The request header naming the agent acting for the caller.
pub const AGENT_HEADER: &str = "x-toolgate-agent";
/// The request header naming the task (conversation) a request is part of.
pub const TASK_HEADER: &str = "x-toolgate-task";

/// A header's value, trimmed, if present, valid text and not empty.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Routes that answer without an API key and whatever the `Host`: probes from an orchestrator
/// reach them by the pod's address.
/// Probes reach these by the pod's address, without a key. `/metrics` is not one of them: it
/// names callers and what they spent, so it needs a key (and a known Host) like the API.
const OPEN_PATHS: &[&str] = &["/healthz", "/readyz"];

/// Whether `path` answers without a credential and whatever the `Host`: the probes, and the
/// protected resource metadata (RFC 9728 §3: a client reads it to learn how to get a token).
fn is_open(gateway: &Gateway, path: &str) -> bool {
    OPEN_PATHS.contains(&path)
        || gateway
            .settings()
            .oauth
            .as_deref()
            .is_some_and(|server| server.serves_metadata_at(path))
}

/// Wraps `router` in the checks, outermost first: body limit, Host/Origin, API key.
pub(super) fn layer(gateway: &Gateway, router: axum::Router) -> axum::Router {
    router
        .layer(axum::middleware::from_fn_with_state(gateway.clone(), check))
        .layer(DefaultBodyLimit::max(gateway.settings().max_body_bytes))
}

async fn check(State(gateway): State<Gateway>, mut request: Request<Body>, next: Next) -> Response {
    let open = is_open(&gateway, request.uri().path());
    // The web console signs its callers in itself (a session cookie: `gateway::console`), after
    // the same Host and Origin checks as every other route.
    let console = is_console(request.uri().path());
    if !open {
        if let Err(e) = check_host(&gateway, request.headers()) {
            return refused(StatusCode::FORBIDDEN, e);
        }
        if let Err(e) = check_origin(&gateway, request.headers()) {
            return refused(StatusCode::FORBIDDEN, e);
        }
    }
    let caller = if open || console {
        Caller::default()
    } else {
        match super::auth::authenticate(&gateway, request.headers()).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal.into_response(),
        }
    };
    if gateway.inner.shutdown.is_cancelled() && !open {
        let e =
            ToolError::new(ErrorKind::Network, "the gateway is shutting down").with_retryable(true);
        return refused(StatusCode::SERVICE_UNAVAILABLE, e);
    }
    let mut caller = caller;
    caller.agent = header_text(request.headers(), AGENT_HEADER);
    caller.task = header_text(request.headers(), TASK_HEADER);
    caller.traceparent = header_text(request.headers(), "traceparent")
        .filter(|t| toolgate_runtime::trace_context::is_valid(t));
    caller.tracestate = caller
        .traceparent
        .as_ref()
        .and_then(|_| header_text(request.headers(), "tracestate"));
    let scoped = caller.issuer.is_some()
        && gateway
            .settings()
            .oauth
            .as_deref()
            .is_some_and(|o| o.has_tool_scopes());
    let for_scopes = scoped.then(|| caller.clone());
    request.extensions_mut().insert(caller);
    let settings = gateway.settings();
    let request = match super::body::read_whole(
        request,
        settings.max_body_bytes,
        settings.body_timeout,
    )
    .await
    {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let Some(caller) = for_scopes else {
        return next.run(request).await;
    };
    // `tool_scopes`: a call of a tool the token lacks scopes for is refused here, with the
    // challenge a client steps up with (RFC 6750 §3.1), before any front sees it.
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    if parts.method == axum::http::Method::POST {
        for tool in called_tools(parts.uri.path(), &bytes) {
            if let Err(refusal) = super::auth::check_tool_scopes(&gateway, &caller, &tool) {
                return refusal.into_response();
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The tools a `POST` calls: `/tools/{name}/call`, the `calls` of `/calls`, and the
/// `tools/call` requests (one, or a batch) of an MCP message (`…/mcp`, `…/message`).
fn called_tools(path: &str, body: &[u8]) -> Vec<String> {
    if let Some(name) = path
        .strip_prefix("/tools/")
        .and_then(|rest| rest.strip_suffix("/call"))
    {
        return vec![
            percent_encoding::percent_decode_str(name)
                .decode_utf8_lossy()
                .into_owned(),
        ];
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let name =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|n| n.as_str()).map(str::to_string);
    if path == "/calls" {
        return value
            .get("calls")
            .and_then(|c| c.as_array())
            .map(|calls| calls.iter().filter_map(|c| name(c, "name")).collect())
            .unwrap_or_default();
    }
    if !(path.ends_with("/mcp") || path.ends_with("/message")) {
        return Vec::new();
    }
    let messages = match &value {
        serde_json::Value::Array(batch) => batch.iter().collect(),
        single => vec![single],
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").and_then(|v| v.as_str()) == Some("tools/call"))
        .filter_map(|m| m.get("params").and_then(|p| name(p, "name")))
        .collect()
}

/// Whether `path` is the web console's (`/`, `/console…`), which authenticates by session.
#[cfg(feature = "console")]
fn is_console(path: &str) -> bool {
    super::console::is_console_path(path)
}

#[cfg(not(feature = "console"))]
fn is_console(_path: &str) -> bool {
    false
}

pub(super) fn refused(status: StatusCode, e: ToolError) -> Response {
    let mut response = ErrorResponse(e).into_response();
    *response.status_mut() = status;
    response
}

/// Loopback names, accepted with any port.
fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
}

/// `host[:port]` → `host` (an IPv6 literal keeps its brackets).
fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(authority, |(host, _)| host)
}

fn check_host(gateway: &Gateway, headers: &HeaderMap) -> Result<(), ToolError> {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return Err(ToolError::permission_denied(
            "request without a Host header refused (DNS-rebinding protection)",
        ));
    };
    let host = host.to_ascii_lowercase();
    let name = strip_port(&host);
    let settings = gateway.settings();
    let allowed = is_loopback(name)
        || settings
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&host) || a.eq_ignore_ascii_case(name))
        || in_networks(name, &settings.allowed_networks);
    if allowed {
        Ok(())
    } else {
        Err(ToolError::permission_denied(format!(
            "Host `{host}` is not allowed (DNS-rebinding protection); accepted: localhost, 127.0.0.1, [::1]{}{}; add it (or its network, as 10.0.0.0/8) to gateway.allowed_hosts in tools.yaml",
            settings
                .allowed_hosts
                .iter()
                .map(|h| format!(", {h}"))
                .collect::<String>(),
            settings
                .allowed_networks
                .iter()
                .map(|n| format!(", addresses in {n}"))
                .collect::<String>()
        )))
    }
}

/// Whether `name` (a `Host` without its port) is an IP address in one of `networks`.
fn in_networks(name: &str, networks: &[ipnet::IpNet]) -> bool {
    if networks.is_empty() {
        return false;
    }
    let literal = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    literal
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| networks.iter().any(|n| n.contains(&ip)))
}

fn check_origin(gateway: &Gateway, headers: &HeaderMap) -> Result<(), ToolError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
    let host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .map(|rest| strip_port(rest.trim_end_matches('/')));
    let allowed = host.is_some_and(is_loopback)
        || gateway
            .settings()
            .allowed_origins
            .iter()
            .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin));
    if allowed {
        Ok(())
    } else {
        Err(ToolError::permission_denied(format!(
            "Origin `{origin}` is not allowed (DNS-rebinding protection); add it to gateway.allowed_origins in tools.yaml"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_a_listed_network_are_accepted_and_names_never_are() {
        let networks: Vec<ipnet::IpNet> =
            vec!["10.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()];
        assert!(in_networks("10.1.2.3", &networks));
        assert!(in_networks("[fd00::7]", &networks));
        assert!(!in_networks("11.0.0.1", &networks));
        assert!(!in_networks("[fe80::1]", &networks));
        // A name is never matched against a network, whatever it resolves to.
        assert!(!in_networks("10.0.0.1.evil.example", &networks));
        assert!(!in_networks("ten.example", &networks));
        assert!(!in_networks("10.1.2.3", &[]));
    }

    #[test]
    fn ports_are_stripped_but_not_from_ipv6_literals() {
        assert_eq!(strip_port("localhost:8787"), "localhost");
        assert_eq!(strip_port("[::1]:8787"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("example.com"), "example.com");
    }
}
