//! `GET /sources`: every source's status.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use toolgate_runtime::SourceStatus;
use utoipa::ToSchema;

use super::api_doc::SourceStatusSchema;
use crate::gateway::Gateway;

/// The body of `GET /sources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SourceList {
    /// Every source, in resolution order (the order of tools.yaml; the compiled tools,
    /// `local`, first): id, kind, state (`pending`, `ready`, `degraded`, `failed`, `closed`),
    /// how many tools it offers, the last error when it is not ready, and what is known of the
    /// remote end.
    #[schema(value_type = Vec<SourceStatusSchema>)]
    pub sources: Vec<SourceStatus>,
    /// The configuration generation: how many hot reloads (SIGHUP, `serve --watch`) were
    /// applied since start-up (0 before the first).
    #[serde(default)]
    pub generation: u64,
}

/// Every source's status.
///
/// As it stands now: this does not contact any source.
#[utoipa::path(
    get,
    path = "/sources",
    operation_id = "listSources",
    tag = "sources",
    responses((status = 200, description = "Every source's status.", body = SourceList))
)]
pub(super) async fn list_sources(State(gateway): State<Gateway>) -> Json<SourceList> {
    Json(SourceList {
        sources: gateway.toolset().statuses(),
        generation: gateway.toolset().config_generation(),
    })
}
