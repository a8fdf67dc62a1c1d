//! MCP streamable HTTP at `/mcp`: rmcp's server service, one [`McpHandler`] per session (both
//! protocol eras: initialize-based sessions with `Mcp-Session-Id`, and stateless 2026-07-28).
//! Host/Origin and API keys are checked by the gateway's own layer before rmcp sees a request.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

use super::McpHandler;
use crate::gateway::{Caller, Gateway};

/// The `/mcp` route.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(gateway.streams_token().child_token())
        .with_max_request_body_bytes(gateway.settings().max_body_bytes);
    let factory_gateway = gateway.clone();
    let service = StreamableHttpService::new(
        move || Ok(McpHandler::new(factory_gateway.clone(), Caller::default())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().route_service("/mcp", service)
}
