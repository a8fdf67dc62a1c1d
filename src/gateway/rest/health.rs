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
    /// The shared store's answer to a `PING` sent by this request, when the gateway has one
    /// (tools.yaml `store.redis`); absent otherwise.
    ///
    /// A store that fails does not make the replica unready: every replica shares the one
    /// store, so all of them would leave the Service at once, while the fail modes
    /// (`store.redis.fail`) already decide what calls do meanwhile. Alert on `ok: false` (or
    /// on `toolgate_store_errors_total`) instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreReadiness>,
}

/// The shared store's part of `/readyz`: `{"store": "redis", "address": "127.0.0.1:6379/0",
/// "ok": true, "ms": 0}`, or `ok: false` with `error` (no secret in either).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StoreReadiness {
    /// The store's kind: `redis`.
    #[schema(example = "redis")]
    pub store: String,
    /// Where it is, `host:port/db`, without user or password.
    #[schema(example = "127.0.0.1:6379/0")]
    pub address: String,
    /// Whether it answered the `PING` within `store.redis.timeout_ms`.
    pub ok: bool,
    /// The round trip in milliseconds, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Why it did not answer (`did not answer within 250 ms`, the client's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
/// on use); while not ready, `pending` names the sources not listed yet. With a shared store,
/// `store` says whether it answers (bounded by `store.redis.timeout_ms`); it never changes the
/// status.
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
    let store = store_readiness(&gateway).await;
    if gateway.is_ready() {
        return (
            StatusCode::OK,
            Json(Readiness {
                status: "ready".into(),
                pending: Vec::new(),
                store,
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
            store,
        }),
    )
}

/// The shared store's answer to a `PING`, if the gateway has a store.
#[cfg(feature = "redis")]
async fn store_readiness(gateway: &Gateway) -> Option<StoreReadiness> {
    let store = gateway.toolset().shared_store()?;
    let pinged = store.ping().await;
    let health = store.health();
    Some(StoreReadiness {
        store: health.store.into(),
        address: health.address,
        ok: pinged.is_ok(),
        ms: pinged.as_ref().ok().map(|d| d.as_millis() as u64),
        error: pinged.err(),
    })
}

/// Without the `redis` feature there is no shared store.
#[cfg(not(feature = "redis"))]
async fn store_readiness(_gateway: &Gateway) -> Option<StoreReadiness> {
    None
}
