//! The innermost service: the tool's source runs the call. A source that panics (while building
//! its future, where arguments are decoded, or while it runs) gives an `internal` error, never a
//! crashed caller.

use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::FutureExt;
use tower::Service;

use super::{Call, CallFuture};
use crate::{ToolError, ToolOutput};

/// Calls the tool's source.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backend;

impl Service<Call> for Backend {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> CallFuture {
        Box::pin(async move {
            let Call {
                tool,
                source,
                args,
                ctx,
                ..
            } = call;
            let name = tool.name.as_str();
            let future = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                source.call(name, args, &ctx)
            })) {
                Ok(future) => future,
                Err(panic) => return Err(crate::toolset::panic_error(name, panic.as_ref())),
            };
            AssertUnwindSafe(future)
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Err(crate::toolset::panic_error(name, panic.as_ref())))
        })
    }
}
