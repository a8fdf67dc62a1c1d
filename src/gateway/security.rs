//! What every HTTP request passes first: the `Host`/`Origin` check (DNS-rebinding
//! protection), the API-key check, then the body, read whole within the size limit and the
//! body timeout (`gateway::body`). The caller it finds (or the anonymous one) is put in the
//! request's extensions as a [`Caller`].

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use toolgate_runtime::{ErrorKind, ToolError};

use super::Gateway;
use super::rest::error::ErrorResponse;

/// Who is calling, as the gateway authenticated them: an API key's name and roles, or
/// anonymous (no keys configured, or stdio). Found in every request's extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The API key's name; `None` for an anonymous caller.
    pub name: Option<String>,
    /// The roles calls run with.
    pub roles: Vec<String>,
    /// The agent acting for the caller, from the `X-Toolgate-Agent` header (budgets per agent).
    pub agent: Option<String>,
    /// The task (conversation) the request is part of, from the `X-Toolgate-Task` header
    /// (budgets per task).
    pub task: Option<String>,
    /// The W3C `traceparent` the request came with (the `traceparent` header, an MCP
    /// request's `_meta.traceparent`), when valid; forwarded to the tool's backend.
    pub traceparent: Option<String>,
}

impl Caller {
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

/// Wraps `router` in the checks, outermost first: body limit, Host/Origin, API key.
pub(super) fn layer(gateway: &Gateway, router: axum::Router) -> axum::Router {
    router
        .layer(axum::middleware::from_fn_with_state(gateway.clone(), check))
        .layer(DefaultBodyLimit::max(gateway.settings().max_body_bytes))
}

async fn check(State(gateway): State<Gateway>, mut request: Request<Body>, next: Next) -> Response {
    let open = OPEN_PATHS.contains(&request.uri().path());
    if !open {
        if let Err(e) = check_host(&gateway, request.headers()) {
            return refused(StatusCode::FORBIDDEN, e);
        }
        if let Err(e) = check_origin(&gateway, request.headers()) {
            return refused(StatusCode::FORBIDDEN, e);
        }
    }
    let caller = if open {
        Caller::default()
    } else {
        match authenticate(&gateway, request.headers()) {
            Ok(caller) => caller,
            Err(e) => {
                let mut response = refused(StatusCode::UNAUTHORIZED, e);
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
                return response;
            }
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
    request.extensions_mut().insert(caller);
    let settings = gateway.settings();
    match super::body::read_whole(request, settings.max_body_bytes, settings.body_timeout).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

fn refused(status: StatusCode, e: ToolError) -> Response {
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
    let allowed = is_loopback(name)
        || gateway
            .settings()
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&host) || a.eq_ignore_ascii_case(name));
    if allowed {
        Ok(())
    } else {
        Err(ToolError::permission_denied(format!(
            "Host `{host}` is not allowed (DNS-rebinding protection); accepted: localhost, 127.0.0.1, [::1]{}; add it to gateway.allowed_hosts in tools.yaml",
            gateway
                .settings()
                .allowed_hosts
                .iter()
                .map(|h| format!(", {h}"))
                .collect::<String>()
        )))
    }
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

fn authenticate(gateway: &Gateway, headers: &HeaderMap) -> Result<Caller, ToolError> {
    let keys = &gateway.settings().api_keys;
    if keys.is_empty() {
        return Ok(Caller::default());
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let Some(given) = bearer.or(api_key).map(str::trim) else {
        return Err(ToolError::permission_denied(
            "an API key is required: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
        ));
    };
    let given = ApiKey::digest(given.as_bytes());
    // Every key is compared, whichever matches: the time taken says nothing about which did.
    let mut found = None;
    for key in keys {
        if bool::from(key.digest.ct_eq(&given)) {
            found = found.or(Some(&key.caller));
        }
    }
    found
        .cloned()
        .ok_or_else(|| ToolError::permission_denied("the API key is not valid"))
}

/// One configured API key: the SHA-256 digest of the key (the key itself is not kept) and the
/// caller its requests run as.
///
/// A request's key is hashed and the two 32-byte digests compared in constant time
/// (`subtle`), so the time a check takes depends neither on how much of a key was right nor
/// on its length (comparing the keys themselves would stop at a length mismatch).
#[derive(Clone)]
pub(crate) struct ApiKey {
    digest: [u8; 32],
    caller: Caller,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("caller", &self.caller)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    pub(crate) fn new(key: &toolgate_model::config::Secret, caller: Caller) -> Self {
        Self {
            digest: Self::digest(key.expose().as_bytes()),
            caller,
        }
    }

    fn digest(key: &[u8]) -> [u8; 32] {
        Sha256::digest(key).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_stripped_but_not_from_ipv6_literals() {
        assert_eq!(strip_port("localhost:8787"), "localhost");
        assert_eq!(strip_port("[::1]:8787"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("example.com"), "example.com");
    }

    fn keys(keys: &[(&str, &str)]) -> Gateway {
        let mut builder = Gateway::builder(toolgate_runtime::Toolset::builder().build().unwrap());
        for (name, key) in keys {
            builder = builder.api_key(*name, *key, ["r"]);
        }
        builder.build()
    }

    fn with_key(key: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", key.parse().unwrap());
        headers
    }

    #[test]
    fn keys_are_found_by_digest_and_only_whole() {
        let gateway = keys(&[("a", "key-one"), ("b", "key-two")]);
        let caller = |key: &str| authenticate(&gateway, &with_key(key)).map(|c| c.name);
        assert_eq!(caller("key-one").unwrap().as_deref(), Some("a"));
        assert_eq!(caller("key-two").unwrap().as_deref(), Some("b"));
        for wrong in ["key-on", "key-one!", "key-onf", "", "KEY-ONE"] {
            assert!(caller(wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn a_key_is_compared_as_a_digest_whatever_its_length() {
        // What is compared is always two 32-byte digests, never the keys: a key of another
        // length is no shortcut (the compare of the keys themselves stopped at the length).
        let short = ApiKey::digest(b"k");
        let long = ApiKey::digest(&[b'k'; 4096]);
        assert_eq!((short.len(), long.len()), (32, 32));
        assert_ne!(short, long);
        let key = ApiKey::new(&toolgate_model::config::Secret::new("k"), Caller::default());
        assert_eq!(key.digest, short);
        assert!(!format!("{key:?}").contains("digest"), "{key:?}");
    }
}
