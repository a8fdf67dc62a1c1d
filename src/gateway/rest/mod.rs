//! The REST API: discovery and calls over plain HTTP + JSON, described by the OpenAPI document
//! it serves at `/openapi.json`.

pub mod error;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::gateway::Gateway;

/// The REST routes, `/healthz`, `/readyz` and `/openapi.json`.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(gateway.clone())
}

async fn readyz(State(gateway): State<Gateway>) -> (StatusCode, &'static str) {
    if gateway.is_ready() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "discovering sources")
    }
}
