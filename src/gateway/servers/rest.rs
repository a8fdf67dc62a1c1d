//! A virtual server's REST routes, `/servers/{id}/tools…`: the default REST routes, told
//! which server they answer for. A request's tool name (the one the server shows) is mapped
//! to the toolset's before the request goes on to `/tools/{name}…`; a tool the server does
//! not select is a 404 `not_found` there, and `GET /servers/{id}/tools` lists only the
//! server's tools, under its names.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt as _;

use super::VirtualServer;
use crate::gateway::Gateway;
use crate::gateway::rest::error::RestError;

/// The routes under `/servers/{id}` for `server`.
pub(crate) fn router(gateway: &Gateway, server: &Arc<VirtualServer>) -> axum::Router {
    let rest = crate::gateway::rest::router(gateway);
    let base = format!("/servers/{}", server.id());
    let service = {
        let server = Arc::clone(server);
        let base = base.clone();
        let gateway = gateway.clone();
        tower::service_fn(move |request: Request<Body>| {
            let rest = rest.clone();
            let server = Arc::clone(&server);
            let base = base.clone();
            let gateway = gateway.clone();
            async move { Ok::<_, Infallible>(forward(&gateway, rest, &server, &base, request).await) }
        })
    };
    // Nested as a service: the inner routes see no path parameter of the outer ones.
    axum::Router::new().nest_service(&format!("{base}/tools"), service)
}

/// Maps the request's path onto the default routes and answers it there.
async fn forward(
    gateway: &Gateway,
    rest: axum::Router,
    server: &Arc<VirtualServer>,
    base: &str,
    mut request: Request<Body>,
) -> Response {
    // The path below `{base}/tools` (nesting strips the prefix; the original is kept too).
    let path = request.uri().path().to_string();
    let below = path
        .strip_prefix(&format!("{base}/tools"))
        .unwrap_or(&path)
        .trim_start_matches('/');
    let mapped = match below {
        "" => "/tools".to_string(),
        rest => {
            let (name, suffix) = rest.split_once('/').map_or((rest, ""), |(n, s)| (n, s));
            let decoded = match percent_encoding::percent_decode_str(name).decode_utf8() {
                Ok(name) => name.into_owned(),
                Err(_) => {
                    return RestError::bad_request("the tool name in the path is not UTF-8")
                        .into_response();
                }
            };
            let tool = match server.resolve(gateway.toolset(), &decoded) {
                Ok(tool) => tool,
                Err(e) => return RestError::new(StatusCode::NOT_FOUND, e).into_response(),
            };
            let encoded =
                percent_encoding::utf8_percent_encode(&tool, percent_encoding::NON_ALPHANUMERIC);
            if suffix.is_empty() {
                format!("/tools/{encoded}")
            } else {
                format!("/tools/{encoded}/{suffix}")
            }
        }
    };
    let uri = match request.uri().query() {
        Some(query) => format!("{mapped}?{query}"),
        None => mapped,
    };
    *request.uri_mut() = match uri.parse::<Uri>() {
        Ok(uri) => uri,
        Err(e) => return RestError::bad_request(format!("invalid path: {e}")).into_response(),
    };
    request.extensions_mut().insert(Arc::clone(server));
    match rest.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
