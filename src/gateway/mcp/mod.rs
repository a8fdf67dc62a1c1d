//! The gateway as an MCP server: [`McpHandler`] (rmcp's `ServerHandler`) answers every MCP
//! request from the [`Gateway`], whatever the transport: [`stdio`], streamable HTTP
//! ([`http`], rmcp's service at `/mcp`) or the legacy HTTP+SSE transport ([`sse`]).
//!
//! - `tools/list`: every tool in the MCP dialect, under the name a model sees
//!   (`{source}__{tool}`), in pages of the configured size; the cursor is opaque.
//! - `tools/call`: through [`Gateway::call`] (so through the toolset's validation and every
//!   policy); every content part and `structuredContent` passed through; a failed call is a
//!   result with `isError: true` whose `_meta["toolgate/error"]` carries the error's kind (MCP
//!   "tool execution error"), never a JSON-RPC error. Progress is relayed when
//!   the request carries a `progressToken`; `notifications/cancelled` cancels the call.
//! - `notifications/tools/list_changed` when discovery changes the toolset (initialize-era
//!   sessions), or on a `subscriptions/listen` stream (2026-07-28).
//! - Resources, resource templates, prompts and completions of the MCP servers behind the
//!   gateway are passed through ([`passthrough`]); `toolgate://results/…` URIs (results cut
//!   to a size limit) are readable as resources.

mod cancel;
mod convert;
pub mod http;
pub(crate) mod listing;
mod meta;
mod on_server;
mod passthrough;
mod progress;
pub mod sse;
pub mod stdio;

use std::sync::{Arc, Mutex};

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio_util::sync::CancellationToken;
use toolgate_model::config::ToolSearchMode;
use toolgate_runtime::{ProgressReporter, ToolError};

use super::calls::CallExtras;
use super::servers::VirtualServer;
use super::{Caller, Gateway};

/// rmcp's server handler for one MCP session of the gateway. Made per session (streamable
/// HTTP, SSE) or once (stdio); the caller comes from the HTTP request (its API key) or is
/// anonymous.
#[derive(Clone)]
pub struct McpHandler {
    gateway: Gateway,
    session: Arc<Session>,
    /// The virtual server the session is on (`None`: the default server).
    server: Option<Arc<VirtualServer>>,
}

/// What one session remembers.
#[allow(deprecated)]
struct Session {
    /// The caller for transports without per-request HTTP parts (stdio, SSE).
    caller: Caller,
    /// The level set by `logging/setLevel` (messages below it are not sent).
    log_level: Mutex<Option<LoggingLevel>>,
    /// Cancelled when the session's handler is dropped: its background tasks stop.
    closed: CancellationToken,
    /// Resource subscriptions passed through (taken back upstream when the session ends).
    passthrough: passthrough::SessionState,
    /// Where the transport notes the reasons of `notifications/cancelled`.
    reasons: Reasons,
}

/// Where a session's cancel reasons are noted: by its own transport (stdio, SSE), or by the
/// HTTP front for every session, keyed by `Mcp-Session-Id`.
#[derive(Clone, Default)]
pub(crate) enum Reasons {
    #[default]
    None,
    Session(cancel::CancelReasons<rmcp::model::RequestId>),
    Http(HttpReasons),
}

/// Forgets a call's cancel reason when dropped (the call ended).
pub(crate) enum Forget {
    Session(#[allow(dead_code)] cancel::Taken<rmcp::model::RequestId>),
    Http(#[allow(dead_code)] cancel::Taken<(String, rmcp::model::RequestId)>),
}

/// The HTTP front's cancel reasons: by session id and request id.
pub(crate) type HttpReasons = cancel::CancelReasons<(String, rmcp::model::RequestId)>;

impl Drop for Session {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

impl McpHandler {
    /// A handler serving `gateway` to `caller`.
    pub fn new(gateway: Gateway, caller: Caller) -> Self {
        Self::with_reasons(gateway, caller, Reasons::None)
    }

    /// A handler whose transport notes the reasons clients give for cancelling.
    pub(crate) fn with_reasons(gateway: Gateway, caller: Caller, reasons: Reasons) -> Self {
        Self {
            gateway,
            session: Arc::new(Session {
                caller,
                log_level: Mutex::new(None),
                closed: CancellationToken::new(),
                passthrough: passthrough::SessionState::default(),
                reasons,
            }),
            server: None,
        }
    }

    /// The handler serving virtual server `server` (`None`: the default server).
    pub(crate) fn on_server(mut self, server: Option<Arc<VirtualServer>>) -> Self {
        self.server = server;
        self
    }

    /// The slot for request `id`'s cancel reason, if this session's transport notes them,
    /// and the guard that forgets it when the call ends.
    fn cancel_reason(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<(toolgate_runtime::CancelReason, Forget)> {
        match &self.session.reasons {
            Reasons::None => None,
            Reasons::Session(reasons) => {
                let (slot, taken) = reasons.slot(context.id.clone());
                Some((slot, Forget::Session(taken)))
            }
            Reasons::Http(reasons) => {
                let session = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|p| p.headers.get(http::SESSION_HEADER))
                    .and_then(|v| v.to_str().ok())?;
                let (slot, taken) = reasons.slot((session.to_string(), context.id.clone()));
                Some((slot, Forget::Http(taken)))
            }
        }
    }

    /// The caller of a request: the one the HTTP front authenticated (in the request's HTTP
    /// parts), else the session's.
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Caller {
        extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(|| self.session.caller.clone())
    }

    /// The level `logging/setLevel` asked for, if any.
    #[allow(deprecated)]
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *self
            .session
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// One `tools/call` of tool `name` (either name form) with `args`, as its MCP result: a
    /// meta tool of `gateway.tool_search` answers here; any other goes through
    /// [`Gateway::call_cancellable`], with progress relayed and the cancellation reason noted.
    async fn run_tool(
        &self,
        name: String,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResult {
        // gateway.tool_search: the meta tools answer here; `call_tool` goes on as a direct call
        // of the tool it names, by the same caller (on a virtual server, one of its tools).
        let identity = || self.caller(&context.extensions).identity();
        let on = self.server.as_deref();
        let (name, args) = match meta::dispatch(&self.gateway, identity, on, name, args) {
            Ok(call) => call,
            Err(answered) => return *answered,
        };
        if let Some(server) = &self.server {
            return self.run_server_tool(server, name, args, context).await;
        }
        let mut caller = self.caller(&context.extensions);
        // The trace the request is part of: its `_meta.traceparent` (MCP SEP-414), else the
        // HTTP request's `traceparent` header.
        if let Some(traceparent) = context
            .meta
            .get_traceparent()
            .filter(|t| toolgate_runtime::trace_context::is_valid(t))
        {
            caller.traceparent = Some(traceparent.to_string());
            caller.tracestate = context.meta.get_tracestate().map(str::to_owned);
        }
        let relay = context
            .meta
            .get_progress_token()
            .map(|token| progress::ProgressRelay::new(context.peer.clone(), token));
        let progress = relay
            .as_ref()
            .map_or_else(ProgressReporter::default, progress::ProgressRelay::reporter);
        let (reason, _forget) = self.cancel_reason(context).unzip();
        let result = self
            .gateway
            .call_cancellable(
                &name,
                args,
                &caller,
                progress,
                context.ct.clone(),
                CallExtras {
                    reason,
                    server: None,
                },
            )
            .await;
        // Every progress notification goes out before the result (MCP clients stop listening
        // for a request's progress once its result arrived).
        if let Some(relay) = &relay {
            relay.flush(progress::FLUSH_WITHIN).await;
        }
        let descriptor = self.gateway.toolset().describe(&name);
        match result {
            Ok(out) => convert::result(out, descriptor.as_deref()),
            Err(e) => {
                log_failure(&name, &e);
                convert::result(convert::error_output(e), descriptor.as_deref())
            }
        }
    }

    /// Sends `notifications/tools/list_changed` on `peer` whenever the tools the session's
    /// server lists change, until the session ends.
    fn watch_tools(&self, peer: rmcp::Peer<RoleServer>) {
        let mut watch = self.gateway.toolset().watch_tools();
        let mut seen = self.listing_fingerprint();
        let closed = self.session.closed.clone();
        let gateway = self.gateway.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = closed.cancelled() => return,
                    changed = Self::listing_changed(&gateway, server.as_deref(), &mut watch, &mut seen) => {
                        if !changed || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// The longest `tools/list` waits for start-up discovery to finish (each source's own
/// discovery timeout is 30 s by default); then it answers with what is known.
const LIST_WAITS_FOR_DISCOVERY: std::time::Duration = std::time::Duration::from_secs(35);

/// The cursor of the page starting at `offset`.
fn cursor(offset: usize) -> String {
    offset.to_string()
}

fn offset(request: Option<&PaginatedRequestParams>) -> Result<usize, McpError> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None => Ok(0),
        Some(c) => c.parse().map_err(|_| {
            McpError::invalid_params(
                format!("invalid cursor `{c}`: pass a nextCursor as it was given"),
                None,
            )
        }),
    }
}

// Logging and resources/subscribe are deprecated in rmcp (SEP-2577, SEP-2567) but clients of
// the initialize era still use them.
#[allow(deprecated)]
impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        passthrough::capabilities(&self.gateway, &mut capabilities);
        if capabilities.resources.is_none() && super::skills::offered(&self.gateway) {
            capabilities.resources = Some(Default::default());
        }
        if let Some(server) = &self.server {
            let config = ServerConfig::new(capabilities).with_server_info(
                Implementation::new(server.id().to_string(), env!("CARGO_PKG_VERSION"))
                    .with_title(server.title().to_string()),
            );
            return match server.instructions() {
                Some(text) => config.with_instructions(text.to_string()),
                None => config,
            };
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "toolgate gateway: {} tools; remote tools are named {{source}}__{{tool}}.",
                self.gateway.toolset().tools().len()
            ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        passthrough::relay(
            &self.gateway,
            self.server.clone(),
            &self.session,
            context.peer.clone(),
        );
        self.watch_tools(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        if requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        passthrough::accept_subscription(&self.gateway, requested, &mut accepted);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut watch = self.gateway.toolset().watch_tools();
        let mut seen = self.listing_fingerprint();
        tracing::debug!(sources = watch.len(), "watching tools");
        let tools = context.accepted().tools_list_changed == Some(true);
        tracing::debug!(accepted = ?context.accepted(), "subscriptions/listen opened");
        let mut events =
            passthrough::Listener::new(&self.gateway, self.server.as_deref(), context.accepted())
                .await;
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = Self::listing_changed(&self.gateway, self.server.as_deref(), &mut watch, &mut seen), if tools => {
                    if !changed {
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!(error = %e, "subscriptions/listen: cannot send tools/list_changed; closing the stream");
                        return Ok(());
                    }
                    tracing::debug!("subscriptions/listen: sent tools/list_changed");
                }
                more = events.forward(context.sink()) => {
                    if !more {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self
            .session
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.gateway.wait_ready(LIST_WAITS_FOR_DISCOVERY).await;
        // A caller never sees a tool it may not call.
        let identity = self.caller(&context.extensions).identity();
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let on = self.server.as_deref();
        let mode = self.gateway.settings().tool_search.mode;
        if mode == ToolSearchMode::Meta {
            if let Some(cursor) = cursor {
                return Err(McpError::invalid_params(
                    format!(
                        "invalid cursor `{}`: the tool list has one page (gateway.tool_search.mode is meta)",
                        cursor.chars().take(64).collect::<String>()
                    ),
                    None,
                ));
            }
            return Ok(ListToolsResult::with_all_items(meta::listed(
                &self.gateway,
                &identity,
                on,
            )));
        }
        let (toolset, size) = (self.gateway.toolset(), self.gateway.settings().page_size);
        let mut page = match on {
            Some(server) => {
                server
                    .listing()
                    .page_of(toolset, &identity, cursor, size, Some(server))?
            }
            None => self
                .gateway
                .listing()
                .page(toolset, &identity, cursor, size)?,
        };
        if mode == ToolSearchMode::Both && cursor.is_none() {
            // The meta tools first, on the first page; a tool named like one is shadowed.
            let mut tools = meta::definitions();
            tools.extend(
                page.tools
                    .into_iter()
                    .filter(|t| meta::meta(&self.gateway, &t.name).is_none()),
            );
            page.tools = tools;
        }
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        if meta::meta(&self.gateway, name).is_some() {
            return meta::definition(name);
        }
        if let Some(server) = &self.server {
            let entry = server.entry(self.gateway.toolset(), name)?;
            let mut tool = server
                .listing()
                .tool(self.gateway.toolset(), entry.name())?;
            tool.name = name.to_string().into();
            return Some(tool);
        }
        self.gateway.listing().tool(self.gateway.toolset(), name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let result = self
            .run_tool(request.name.to_string(), args, &context)
            .await;
        Ok(CallToolResponse::Complete(result))
    }

    /// A request rmcp did not recognise: a `tools/call` whose `arguments` are one string
    /// (holding JSON) runs as a call with that string, which the toolset decodes as on every
    /// front; a method MCP defines whose params do not fit it (rmcp parses those as custom
    /// requests) is answered -32602 with the reason, as stdio and SSE answer it before the
    /// session sees it; any other method -32601.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        let method = request.method.as_str();
        if let Err(why) = stdio::frame::check_params(method, request.params.as_ref()) {
            return Err(McpError::invalid_params(
                stdio::frame::invalid_params_message(method, &why),
                None,
            ));
        }
        let params = request.params.as_ref();
        if method == "tools/call"
            && let Some(text) = stdio::frame::text_arguments(params)
            && let Some(name) = params.and_then(|p| p.get("name")).and_then(|n| n.as_str())
        {
            let args = serde_json::Value::String(text.to_string());
            let result = self.run_tool(name.to_string(), args, &context).await;
            let result = serde_json::to_value(result)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(rmcp::model::CustomResult::new(result));
        }
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            method.to_string(),
            None,
        ))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let identity = self.caller(&context.extensions).identity();
        let on = self.server.as_deref();
        // On a virtual server, the skills only when it selects `load_skill`.
        let skills = match on {
            Some(server) if !super::skills::on_server(&self.gateway, server) => Vec::new(),
            _ => super::skills::resources(&self.gateway, &identity),
        };
        passthrough::list_resources(&self.gateway, on, skills, request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        passthrough::list_resource_templates(
            &self.gateway,
            self.server.as_deref(),
            request,
            context,
        )
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let on = self.server.as_deref();
        if request.uri.starts_with(super::skills::SKILL_URI_PREFIX) {
            if on.is_some_and(|server| !super::skills::on_server(&self.gateway, server)) {
                let uri = &request.uri;
                return Err(McpError::resource_not_found(
                    format!("Resource {uri} not found"),
                    None,
                ));
            }
            let identity = self.caller(&context.extensions).identity();
            return super::skills::read(&self.gateway, &identity, &request.uri);
        }
        passthrough::read_resource(&self.gateway, on, request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        passthrough::subscribe(
            &self.gateway,
            self.server.as_deref(),
            &self.session.passthrough,
            request,
            context,
        )
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        passthrough::unsubscribe(&self.gateway, &self.session.passthrough, request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        passthrough::list_prompts(&self.gateway, self.server.as_deref(), request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        passthrough::get_prompt(&self.gateway, self.server.as_deref(), request, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        passthrough::complete(&self.gateway, self.server.as_deref(), request, context).await
    }
}

fn log_failure(tool: &str, e: &ToolError) {
    tracing::debug!(tool, kind = %e.kind(), "tool call failed: {}", e.report());
}
