//! `tools/call` on a session: progress relayed to the caller in order, the idle timeout
//! (`idle_timeout_ms`) restarted by each progress report, structured content checked against
//! the tool's output schema, and `notifications/cancelled` (with the caller's reason when it
//! gave one) for a call abandoned before its answer.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;

use super::Client;
use crate::mcp::convert;
use crate::mcp::handler::Listener;
use crate::{ErrorKind, ToolContext, ToolDescriptor, ToolError, ToolOutput};

impl Client {
    /// `tools/call`: progress relayed to the caller, a cancellation sent when the call is
    /// abandoned (timeout, caller cancel) before the answer, a dropped session failing it at once.
    ///
    /// A call sent on a session the server no longer knows (it restarted while the session
    /// was idle: it answers 404, or an error tied to no request) did not run there: it goes
    /// once more on a new session, within the same deadline.
    pub(crate) async fn call(
        &self,
        tool: &ToolDescriptor,
        remote: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let session = self.session(ctx.deadline()).await?;
        match self
            .call_on(&session, tool, remote, args.clone(), ctx)
            .await
        {
            Err(e) if session.forgotten.is_set() => {
                tracing::info!(server = %self.id, generation = session.generation, error = %e.message(), "the server no longer knows the session; the call goes again on a new session");
                self.drop_session(&session);
                let session = self.session(ctx.deadline()).await?;
                self.call_on(&session, tool, remote, args, ctx).await
            }
            other => other,
        }
    }

    /// One `tools/call` on `session`.
    async fn call_on(
        &self,
        session: &Arc<super::Session>,
        tool: &ToolDescriptor,
        remote: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // Named in errors only.
        let what = || format!("tools/call {remote}");
        let mut params = CallToolRequestParams::new(remote.to_string());
        params.arguments = match args {
            Value::Object(map) => Some(map),
            _ => None,
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // The caller's trace goes on in `_meta.traceparent` (MCP SEP-414).
        let mut options = PeerRequestOptions::no_options();
        if let Some(traceparent) = ctx.traceparent() {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.set_traceparent(traceparent);
            if let Some(tracestate) = ctx.tracestate() {
                meta.set_tracestate(tracestate);
            }
            options.meta = Some(meta);
        }
        let handle = session
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| {
                self.drop_session(session);
                convert::service_error(&self.id, &what(), &e, session.process.as_deref())
            })?;
        let idle = self.options.idle_timeout;
        let alive = idle.map(|_| Arc::new(tokio::sync::Notify::new()));
        let listener = Listener {
            reporter: ctx.progress().is_active().then(|| ctx.progress().clone()),
            alive: alive.clone(),
        };
        let _progress = (listener.reporter.is_some() || listener.alive.is_some()).then(|| {
            self.shared
                .track_progress(handle.progress_token.clone(), listener)
        });
        let mut abandoned = Abandoned::new(session, handle.id.clone());
        abandoned.reason = ctx.cancel_reason_slot();
        abandoned.deadline = ctx.deadline();
        let response = handle.await_response();
        tokio::pin!(response);
        let response = loop {
            // Without an idle timeout this waits on the response and the caller only.
            let quiet = async {
                match (idle, &alive) {
                    (Some(idle), Some(alive)) => {
                        tokio::time::timeout(idle, alive.notified()).await.is_err()
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut response => break r,
                () = ctx.cancellation().cancelled() => {
                    return Err(ToolError::cancelled(&tool.name));
                }
                silent = quiet => if silent {
                    let idle = idle.unwrap_or_default();
                    abandoned.why = Some(format!("no progress for {} ms", idle.as_millis()));
                    return Err(ToolError::new(
                        ErrorKind::Timeout,
                        format!(
                            "MCP server `{}`: {} sent no progress for {} ms (its `idle_timeout_ms`); the call was cancelled",
                            self.id,
                            what(),
                            idle.as_millis()
                        ),
                    ));
                },
            }
        };
        abandoned.answered();
        let result = match response {
            Ok(ServerResult::CallToolResult(r)) => r,
            Ok(other) => {
                return Err(ToolError::new(
                    ErrorKind::Protocol,
                    format!(
                        "MCP server `{}` answered {} with a result that is not a tool result: {}",
                        self.id,
                        what(),
                        toolgate_model::text::cut(
                            &serde_json::to_string(&other).unwrap_or_default(),
                            200
                        )
                    ),
                ));
            }
            Err(e) => {
                if matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    self.drop_session(session);
                }
                return Err(convert::service_error(
                    &self.id,
                    &what(),
                    &e,
                    session.process.as_deref(),
                ));
            }
        };
        convert::output(&self.id, tool, result, |structured| {
            self.check_output(tool, structured)
        })
    }

    /// Checks structured content against the tool's output schema (compiled once per schema).
    fn check_output(&self, tool: &ToolDescriptor, structured: &Value) -> Result<(), String> {
        let Some(schema) = &tool.output_schema else {
            return Ok(());
        };
        let validator = {
            let mut cache = self
                .output_validators
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match cache.get(&tool.name) {
                Some((s, v)) if s == schema => Arc::clone(v),
                _ => match jsonschema::validator_for(schema) {
                    Ok(v) => {
                        let v = Arc::new(v);
                        cache.insert(tool.name.clone(), (schema.clone(), Arc::clone(&v)));
                        v
                    }
                    Err(e) => {
                        tracing::warn!(server = %self.id, tool = %tool.name, error = %e, "output schema does not compile; structuredContent not checked");
                        return Ok(());
                    }
                },
            }
        };
        let violations: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations.join("; "))
        }
    }
}

/// Sends `notifications/cancelled` for a request dropped before its answer (the caller's
/// deadline passed, the caller cancelled); the late answer, if any, is then ignored by rmcp.
/// Its `reason` is the caller's own when it gave one (its `notifications/cancelled`), else
/// what ended the call.
pub(super) struct Abandoned {
    peer: Peer<RoleClient>,
    /// The session's pending cancellations, which it waits for before it ends.
    cancels: tokio_util::task::TaskTracker,
    id: Option<RequestId>,
    reason: Option<crate::CancelReason>,
    deadline: Option<std::time::Instant>,
    /// Set when toolgate itself ended the call (its idle timeout).
    why: Option<String>,
}

impl Abandoned {
    /// The answer came: nothing to cancel.
    pub(super) fn answered(&mut self) {
        self.id = None;
    }

    pub(super) fn new(session: &super::Session, id: RequestId) -> Self {
        Self {
            peer: session.peer.clone(),
            cancels: session.cancels.clone(),
            id: Some(id),
            reason: None,
            deadline: None,
            why: None,
        }
    }

    fn reason(&self) -> String {
        if let Some(why) = &self.why {
            return why.clone();
        }
        if let Some(reason) = self.reason.as_ref().and_then(crate::CancelReason::get) {
            return reason.to_string();
        }
        match self.deadline {
            Some(d) if d <= std::time::Instant::now() => "the call's deadline passed".into(),
            _ => "the caller gave up on the request".into(),
        }
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = self.reason();
        self.cancels.spawn_on(
            async move {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some(reason),
                ));
                let _ = peer
                    .send_notification(ClientNotification::CancelledNotification(notification))
                    .await;
            },
            &runtime,
        );
    }
}
