//! MCP streamable HTTP at `/mcp`: rmcp's server service, one [`McpHandler`] per session (both
//! protocol eras: initialize-based sessions with `Mcp-Session-Id`, and stateless 2026-07-28).
//! Host/Origin and credentials are checked by the gateway's own layer before rmcp sees a
//! request; with credentials, a session is bound to the caller that opened it ([`owners`]).
//!
//! Where rmcp's answers are not what MCP clients expect, [`answer_as_mcp`] changes them:
//! * a POST body that is no JSON-RPC message (not JSON, a batch, JSON that is no message, a
//!   known method with params that do not fit it before a session exists) gets the JSON-RPC
//!   error stdio and SSE answer it with (-32700, -32600, -32602; `400` with the error as an
//!   `application/json` body, as the TypeScript SDK answers it), not rmcp's
//!   `415 fail to deserialize request body`;
//! * a `DELETE` that ended its session answers `200 OK` (the TypeScript SDK's answer; the
//!   Python SDK warns about anything but 200 and 204), not rmcp's `202 Accepted`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

mod owners;
pub(crate) mod sealed;

use super::stdio::frame::{self, INVALID_REQUEST, Parsed};
use super::{HttpReasons, McpHandler, Reasons};
use crate::gateway::{Caller, Gateway};

/// The session header of MCP streamable HTTP (MCP 2025-06-18, "Transports", session
/// management).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// The `/mcp` route.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    router_at(gateway, "/mcp", None)
}

/// The streamable HTTP route at `path`, for virtual server `server` (`None`: the default
/// server).
pub(crate) fn router_at(
    gateway: &Gateway,
    path: &str,
    server: Option<Arc<crate::gateway::servers::VirtualServer>>,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(gateway.streams_token().child_token())
        .with_max_request_body_bytes(gateway.settings().max_body_bytes);
    let seal = gateway.settings().session_key.clone();
    if let Some(seal) = &seal {
        // A session this replica does not hold is re-created from its id (rmcp replays the
        // handshake from the id's claims).
        config.session_store = Some(Arc::new(sealed::SealedStore::new(Arc::clone(seal))));
    }
    let factory_gateway = gateway.clone();
    let reasons = HttpReasons::default();
    let factory_reasons = Reasons::Http(reasons.clone());
    let manager = Arc::new(sealed::Sessions::default());
    let service = StreamableHttpService::new(
        move || {
            let reasons = factory_reasons.clone();
            Ok(
                McpHandler::with_reasons(factory_gateway.clone(), Caller::default(), reasons)
                    .on_server(server.clone()),
            )
        },
        Arc::clone(&manager),
        config,
    );
    let front = Front {
        reasons,
        seal: seal.clone(),
    };
    let router = axum::Router::new()
        .route_service(path, service)
        .layer(axum::middleware::from_fn_with_state(front, answer_as_mcp));
    if !gateway.settings().authenticates() {
        return router;
    }
    router.layer(axum::middleware::from_fn_with_state(
        Arc::new(owners::Owners::new(manager, seal)),
        owners::bind_sessions,
    ))
}

/// What the HTTP front keeps for [`answer_as_mcp`].
#[derive(Clone)]
struct Front {
    reasons: HttpReasons,
    /// `gateway.session_key`: an `initialize` opens a session under a sealed id.
    seal: Option<Arc<sealed::Seal>>,
}

/// Changes rmcp's answers where MCP clients expect others (see the [module docs](self)): a
/// POST body rmcp could not take as a JSON-RPC message is answered with the JSON-RPC error our
/// frame reader gives it; a successful `DELETE` answers 200.
///
/// Costs nothing on the way of a good request: the body was already read whole (the gateway's
/// body layer) and is only looked at again when rmcp refused it.
///
/// A `notifications/cancelled` with a reason, in a session, has its reason noted before rmcp
/// reads it ([`super::cancel`]). With a session key, an `initialize` outside a session opens
/// its session under an id sealed with the client's params and caller ([`sealed`]).
async fn answer_as_mcp(
    State(Front { reasons, seal }): State<Front>,
    request: Request<Body>,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // Already buffered: this takes the bytes without copying them.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return rpc_error(
                INVALID_REQUEST,
                &format!("Invalid Request: the body could not be read: {e}"),
            );
        }
    };
    note_reason(&reasons, &parts.headers, &bytes);
    let sealed_id = seal
        .as_deref()
        .and_then(|seal| sealed_id(seal, &parts, &bytes));
    let request = Request::from_parts(parts, Body::from(bytes.clone()));
    let response = match sealed_id {
        Some(id) => sealed::opening_as(id, next.run(request)).await,
        None => next.run(request).await,
    };
    // rmcp refuses a body it cannot deserialize with 415, and a known method with params that
    // do not fit (a custom request to it) outside a session with 400.
    if !matches!(
        response.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE | StatusCode::BAD_REQUEST
    ) {
        return response;
    }
    match frame::parse(&bytes) {
        Parsed::Message(_) => response,
        Parsed::Invalid(answer) => json_error(answer),
        Parsed::Dropped(why) => rpc_error(INVALID_REQUEST, &format!("Invalid Request: {why}")),
    }
}

/// Notes the reason of a `notifications/cancelled` POSTed in a session. Only a small body
/// naming the method is parsed twice; a large one (a call's arguments) is not even scanned.
fn note_reason(reasons: &HttpReasons, headers: &axum::http::HeaderMap, body: &[u8]) {
    const METHOD: &[u8] = b"notifications/cancelled";
    /// Far more than a cancellation with a long reason needs.
    const MAX_NOTIFICATION: usize = 16 << 10;
    let Some(session) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return;
    };
    if body.len() > MAX_NOTIFICATION || !body.windows(METHOD.len()).any(|w| w == METHOD) {
        return;
    }
    if let Parsed::Message(message) = frame::parse(body)
        && let Some((id, reason)) = super::cancel::cancelled(&message)
    {
        reasons.note((session.to_string(), id.clone()), reason);
    }
}

/// The sealed id of the session an `initialize` request (outside any session) opens: its
/// params and the request's caller. `None` for anything else, or params too big for an id.
fn sealed_id(
    seal: &sealed::Seal,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> Option<String> {
    /// The initialize method's name, looked for before a body is parsed twice.
    const METHOD: &[u8] = b"initialize";
    if parts.headers.contains_key(SESSION_HEADER)
        || !body.windows(METHOD.len()).any(|w| w == METHOD)
    {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Initialize {
        method: String,
        #[serde(default)]
        params: serde_json::Value,
    }
    let request: Initialize = serde_json::from_slice(body).ok()?;
    if request.method != "initialize" || !request.params.is_object() {
        return None;
    }
    let owner = parts.extensions.get::<Caller>().and_then(Caller::principal);
    seal.seal(&sealed::Claims::new(owner, request.params))
}

/// A `Content-Type` of `application/json` (any parameters): rmcp's 415 means "not JSON" for
/// anything else, and that answer is right.
fn declares_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn rpc_error(code: i64, message: &str) -> Response {
    json_error(frame::error_response(None, code, message))
}

/// `400 Bad Request` with a JSON-RPC error response as the `application/json` body.
fn json_error(answer: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        answer,
    )
        .into_response()
}
