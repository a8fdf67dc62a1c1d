//! Without the `builtin` feature there are no skills: nothing to route, list or read.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResponse, Resource};
use toolgate_runtime::Identity;

use super::Gateway;

/// The scheme of skill resources.
pub(crate) const SKILL_URI_PREFIX: &str = "skill://";

/// No routes.
pub(crate) fn router(_gateway: &Gateway) -> axum::Router {
    axum::Router::new()
}

/// No skills.
pub(crate) fn offered(_gateway: &Gateway) -> bool {
    false
}

/// No skills on any virtual server.
pub(crate) fn on_server(_gateway: &Gateway, _server: &super::servers::VirtualServer) -> bool {
    false
}

/// No resources.
pub(crate) fn resources(_gateway: &Gateway, _identity: &Identity) -> Vec<Resource> {
    Vec::new()
}

/// Every skill URI is not found.
pub(crate) fn read(
    _gateway: &Gateway,
    _identity: &Identity,
    uri: &str,
) -> Result<ReadResourceResponse, McpError> {
    Err(McpError::resource_not_found(
        format!("Resource {uri} not found"),
        None,
    ))
}
