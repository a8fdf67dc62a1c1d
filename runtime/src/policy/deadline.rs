//! The timeout layer: the call's deadline is the earlier of the caller's and now + the tool's
//! timeout (its policy's `timeout_ms`, else the descriptor's, else the toolset's default). The
//! inner services (retries included) run until then; at the deadline the call's cancellation
//! token is cancelled (the backend sees it: an MCP server gets `notifications/cancelled`, an A2A
//! task is cancelled) and the call ends in `timeout`. A caller cancelling ends it in
//! `cancelled`.

use std::task::{Context, Poll};
use std::time::Duration;

use tower::{Layer, Service};

use super::call::{Call, CallFuture};
use crate::{ToolError, ToolFuture, ToolOutput};

/// Bounds the call by its deadline and its caller's cancellation.
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Option<Duration>,
}

impl TimeoutLayer {
    /// `timeout`: the tool's own limit (`None`: only the caller's deadline, if any).
    pub fn new(timeout: Option<Duration>) -> Self {
        Self { timeout }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timeout {
            timeout: self.timeout,
            inner,
        }
    }
}

/// The service of [`TimeoutLayer`].
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    timeout: Option<Duration>,
    inner: S,
}

impl<S> Service<Call> for Timeout<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: Call) -> CallFuture {
        if let Some(timeout) = self.timeout {
            call.ctx.tighten_deadline(timeout);
        }
        // What the caller is told it was allowed: the tool's timeout, or what was left of the
        // caller's own deadline when the call started, whichever is shorter.
        let allowed = match (self.timeout, call.caller_left) {
            (Some(t), Some(left)) => Some(t.min(left)),
            (t, left) => t.or(left),
        };
        let deadline = call.ctx.deadline();
        let cancel = call.ctx.cancellation().clone();
        let watch_cancel = call.watch_cancel;
        let entry = std::sync::Arc::clone(&call.entry);
        let inner = match self.inner.call(call).into_ready() {
            // A synchronous tool answered inline: no clock to arm.
            Ok(result) => return ToolFuture::ready(result),
            Err(running) => running,
        };
        ToolFuture::new(async move {
            let tool = entry.name();
            match deadline {
                Some(deadline) => {
                    tokio::select! {
                        biased;
                        r = inner => r,
                        () = cancel.cancelled() => Err(ToolError::cancelled(tool)),
                        // A relative sleep on tokio's clock (not `sleep_until` of the std
                        // deadline), so that tokio's paused test clock drives timeouts too.
                        () = tokio::time::sleep(deadline.saturating_duration_since(std::time::Instant::now())) => {
                            cancel.cancel();
                            Err(ToolError::timeout(tool, allowed.unwrap_or_default()))
                        }
                    }
                }
                None if watch_cancel => {
                    tokio::select! {
                        biased;
                        r = inner => r,
                        () = cancel.cancelled() => Err(ToolError::cancelled(tool)),
                    }
                }
                None => inner.await,
            }
        })
    }
}
