//! Resources, resource templates, prompts and completions of the MCP servers behind the
//! gateway, passed through.
#![allow(dead_code, unused_variables, clippy::unused_async)]

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;

pub(super) fn capabilities(gateway: &Gateway, capabilities: &mut ServerCapabilities) {}

pub(super) fn accept_subscription(
    gateway: &Gateway,
    requested: &SubscriptionFilter,
    accepted: &mut SubscriptionFilter,
) {
}

/// Forwards resource and prompt notifications to a `subscriptions/listen` stream.
pub(super) struct Listener {}

impl Listener {
    pub(super) fn new(gateway: &Gateway, accepted: &SubscriptionFilter) -> Self {
        Self {}
    }

    /// Sends the next event; `false` when there will be none.
    pub(super) async fn forward(&mut self, sink: &SubscriptionSink) -> bool {
        std::future::pending().await
    }
}

pub(super) async fn list_resources(
    gateway: &Gateway,
    request: Option<PaginatedRequestParams>,
    context: RequestContext<RoleServer>,
) -> Result<ListResourcesResult, McpError> {
    Ok(ListResourcesResult::default())
}

pub(super) async fn list_resource_templates(
    gateway: &Gateway,
    request: Option<PaginatedRequestParams>,
    context: RequestContext<RoleServer>,
) -> Result<ListResourceTemplatesResult, McpError> {
    Ok(ListResourceTemplatesResult::default())
}

pub(super) async fn read_resource(
    gateway: &Gateway,
    request: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, McpError> {
    Err(McpError::resource_not_found(format!("no resource `{}`", request.uri), None))
}

pub(super) async fn subscribe(
    gateway: &Gateway,
    session_closed: &CancellationToken,
    request: SubscribeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<(), McpError> {
    Ok(())
}

pub(super) async fn unsubscribe(
    gateway: &Gateway,
    request: UnsubscribeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<(), McpError> {
    Ok(())
}

pub(super) async fn list_prompts(
    gateway: &Gateway,
    request: Option<PaginatedRequestParams>,
    context: RequestContext<RoleServer>,
) -> Result<ListPromptsResult, McpError> {
    Ok(ListPromptsResult::default())
}

pub(super) async fn get_prompt(
    gateway: &Gateway,
    request: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, McpError> {
    Err(McpError::invalid_params(format!("no prompt `{}`", request.name), None))
}

pub(super) async fn complete(
    gateway: &Gateway,
    request: CompleteRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CompleteResult, McpError> {
    Ok(CompleteResult::default())
}
