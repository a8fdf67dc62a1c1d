//! The REST API: discovery and calls over plain HTTP + JSON, described by the OpenAPI 3.1
//! document it serves at `/openapi.json`.
//!
//! | route | answer |
//! | --- | --- |
//! | `GET /tools?category=&source=&tag=&dialect=` | [`tools::ToolList`]: the tools, filtered |
//! | `GET /tools?q=&k=` (and the filters above) | [`tools::ToolList`]: the tools that fit the query, best first, with scores |
//! | `GET /tools/{name}` | the tool's `ToolDescriptor` (input and output schema) |
//! | `GET /tools/{name}/schema?dialect=` | [`tools::ToolSchemaExport`]: the definition in a dialect |
//! | `GET /tools/{name}/metadata` | [`tools::ToolMetadata`]: annotations, timeout, source status |
//! | `POST /tools/{name}/call?timeout_ms=` | the call's `ToolOutput` (body: the arguments object) |
//! | `POST /calls` | [`batch::BatchResponse`]: several calls at once, results in request order |
//! | `GET /sources` | [`sources::SourceList`]: every source's `SourceStatus` |
//! | `GET /skills`, `/skills/{name}`, `/skills/{name}/files/{path}` | the toolset's Agent Skills (routed by the gateway's `skills` module) |
//! | `GET /healthz`, `GET /readyz` | [`health::Health`], [`health::Readiness`] |
//! | `GET /openapi.json` | the OpenAPI document of all of the above, one operation per tool |
//!
//! `{name}` is the tool's name inside toolgate (`everything.echo`) or the one a model sees
//! (`everything__echo`). Every error — a tool's, and the HTTP request's own (a query or body
//! that does not parse, an unknown route, a method a route does not offer, a body over the
//! size limit or not sent in time) — is answered with the `ToolError` JSON `{"kind",
//! "message", "retryable", "retry_after_ms"?, "details"?}`; the status follows the kind
//! ([`error::status_for`]) or, for the request's own errors, says what was wrong with the
//! request (400, 404, 405, 408, 413, 415).
//!
//! The REST router owns the gateway's fallback (unknown routes anywhere answer the ToolError
//! JSON 404): routers merged with it must not set one of their own (axum refuses two).

pub mod api_doc;
pub mod batch;
pub mod error;
pub mod health;
pub mod integer;
pub mod sources;
pub mod tools;

mod call;
#[cfg(test)]
mod tests;
pub mod tool_operations;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, Uri};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use toolgate_runtime::{ErrorKind, ToolError};

use crate::gateway::Gateway;
use error::RestError;

/// The REST routes, `/healthz`, `/readyz` and `/openapi.json`, with the ToolError JSON for
/// unknown routes (404) and methods a route does not offer (405).
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/tools", get(tools::list_tools))
        .route("/tools/{name}", get(tools::get_tool))
        .route("/tools/{name}/schema", get(tools::get_tool_schema))
        .route("/tools/{name}/metadata", get(tools::get_tool_metadata))
        .route("/tools/{name}/call", post(call::call_tool))
        .route("/calls", post(batch::call_batch))
        .route("/sources", get(sources::list_sources))
        .route("/openapi.json", get(api_doc::get_openapi))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(gateway.clone())
}

/// An unknown route: 404, kind `not_found`, naming the route and where the routes are listed.
async fn not_found(method: Method, uri: Uri) -> RestError {
    RestError::new(
        StatusCode::NOT_FOUND,
        ToolError::new(
            ErrorKind::NotFound,
            format!(
                "no route `{method} {}`; the REST API is described at /openapi.json (MCP is at /mcp)",
                uri.path()
            ),
        ),
    )
}

/// A method the route does not offer: 405, kind `not_found` (axum adds the `Allow` header).
async fn method_not_allowed(method: Method, uri: Uri) -> RestError {
    RestError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ToolError::new(
            ErrorKind::NotFound,
            format!(
                "route `{}` does not answer {method}; see the `Allow` header, or /openapi.json",
                uri.path()
            ),
        ),
    )
}

/// The `{name}` path segment (percent-decoded): a tool name as toolgate or a model names it.
/// A segment that does not decode to UTF-8 is a 400 saying so.
pub struct ToolName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ToolName {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(name)) => Ok(Self(name)),
            Err(e) => Err(path_rejection(&e)),
        }
    }
}

fn path_rejection(e: &PathRejection) -> RestError {
    RestError::bad_request(format!(
        "the tool name in the path is not valid: {}",
        e.body_text()
    ))
}

/// A query string parsed into `T` (unknown parameters refused), or a 400 naming the parameter
/// that is unknown or whose value does not parse.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(query)) => Ok(Self(query)),
            Err(e) => Err(query_rejection(&e)),
        }
    }
}

fn query_rejection(e: &QueryRejection) -> RestError {
    // axum's text reads "Failed to deserialize query string: <serde's reason>".
    let text = e.body_text();
    let reason = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(&text);
    RestError::bad_request(format!("invalid query string: {reason}"))
}
