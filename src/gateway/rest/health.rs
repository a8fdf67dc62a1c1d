//! `GET /healthz` (the process answers) and `GET /readyz` (start-up discovery has finished).
//! Both answer without an API key and whatever the `Host` (probes reach them by the pod's
//! address).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolgate_runtime::SourceState;
use utoipa::ToSchema;

use crate::gateway::Gateway;

/// The body of `GET /healthz`: always `{"status": "ok"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// Always `ok`: the process is up and answers HTTP.
    #[schema(example = "ok")]
    pub status: String,
}

/// The body of `GET /readyz`: `{"status": "ready", "pending": []}` (200), or
/// `{"status": "discovering", "pending": ["everything"]}` (503) while start-up discovery runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Readiness {
    /// `ready` (200) or `discovering` (503).
    #[schema(example = "ready")]
    pub status: String,
    /// The ids of the sources contacted at start-up whose tools are not listed yet (empty when
    /// ready). Sources configured `lazy` are never pending: they are contacted on first use.
    pub pending: Vec<String>,
}

/// Liveness: always 200 `{"status": "ok"}`.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "getHealth",
    tag = "health",
    security(()),
    responses((status = 200, description = "The process answers.", body = Health))
)]
pub(super) async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Readiness: 200 once start-up discovery has finished, else 503.
///
/// Ready whatever each source's outcome (a failed source is reported in `/sources` and retried
/// on use); while not ready, `pending` names the sources not listed yet.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "getReadiness",
    tag = "health",
    security(()),
    responses(
        (status = 200, description = "Start-up discovery has finished.", body = Readiness),
        (status = 503, description = "Start-up discovery is still running; `pending` names the sources not listed yet.", body = Readiness),
    )
)]
pub(super) async fn readyz(State(gateway): State<Gateway>) -> (StatusCode, Json<Readiness>) {
    if gateway.is_ready() {
        return (
            StatusCode::OK,
            Json(Readiness {
                status: "ready".into(),
                pending: Vec::new(),
            }),
        );
    }
    let pending = gateway
        .toolset()
        .sources()
        .iter()
        .filter_map(|s| s.lifecycle())
        .filter(|l| l.discover_at_startup())
        .map(|l| l.status())
        .filter(|s| s.state == SourceState::Pending)
        .map(|s| s.id)
        .collect();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(Readiness {
            status: "discovering".into(),
            pending,
        }),
    )
}
