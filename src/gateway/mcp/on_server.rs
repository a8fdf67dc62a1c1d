//! A session on a virtual server (`gateway.servers`): its calls, mapped from the names the
//! server shows and counted under its label, and the changes of its own listing.

use std::sync::Arc;

use rmcp::service::{RequestContext, RoleServer};
use toolgate_runtime::ProgressReporter;

use super::{McpHandler, convert, log_failure, progress};
use crate::gateway::Gateway;
use crate::gateway::calls::CallExtras;
use crate::gateway::servers::VirtualServer;

impl McpHandler {
    /// One `tools/call` on a virtual server: the tool the server shows as `name`, else
    /// `not_found`; counted under the server's label.
    pub(super) async fn run_server_tool(
        &self,
        server: &Arc<VirtualServer>,
        name: String,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResult {
        let tool = match server.resolve(self.gateway.toolset(), &name) {
            Ok(tool) => tool,
            Err(e) => {
                server.count_call(&name, e.kind().as_str());
                log_failure(&name, &e);
                return convert::result(convert::error_output(e), None);
            }
        };
        let mut caller = self.caller(&context.extensions);
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
                &tool,
                args,
                &caller,
                progress,
                context.ct.clone(),
                CallExtras {
                    reason,
                    server: Some(Arc::clone(server)),
                },
            )
            .await;
        if let Some(relay) = &relay {
            relay.flush(progress::FLUSH_WITHIN).await;
        }
        let descriptor = self.gateway.toolset().describe(&tool);
        match result {
            Ok(out) => {
                server.count_call(&tool, if out.is_error { "tool_error" } else { "ok" });
                convert::result(out, descriptor.as_deref())
            }
            Err(e) => {
                server.count_call(&tool, e.kind().as_str());
                log_failure(&tool, &e);
                convert::result(convert::error_output(e), descriptor.as_deref())
            }
        }
    }

    /// Resolves when the toolset's tools changed in a way this session's server lists (every
    /// change on the default server); `false` once the watch ends.
    pub(super) async fn listing_changed(
        gateway: &Gateway,
        server: Option<&VirtualServer>,
        watch: &mut toolgate_runtime::ToolsWatch,
        seen: &mut u64,
    ) -> bool {
        loop {
            if !watch.changed().await {
                return false;
            }
            let Some(server) = server else {
                return true;
            };
            let now = server.fingerprint(gateway.toolset());
            if now != *seen {
                *seen = now;
                return true;
            }
        }
    }

    /// What this session's server lists now (its fingerprint; 0 on the default server).
    pub(super) fn listing_fingerprint(&self) -> u64 {
        self.server
            .as_ref()
            .map_or(0, |s| s.fingerprint(self.gateway.toolset()))
    }
}
