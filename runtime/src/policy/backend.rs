//! The innermost service: the tool's source runs the call. A source that panics (while building
//! its future, where a synchronous tool runs, or while its future runs) gives an `internal`
//! error, never a crashed caller.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use tower::Service;

use super::call::{Call, CallFuture};
use crate::{ToolError, ToolFuture, ToolOutput};

/// Calls the tool's source: no allocation when the source answers at once (a synchronous
/// tool), one boxed wrapper (to catch a panic) when its future must be polled.
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
        let Call {
            entry, args, ctx, ..
        } = call;
        let source = Arc::clone(entry.source());
        let future = match std::panic::catch_unwind(AssertUnwindSafe(|| {
            source.call(entry.source_tool(), args, ctx)
        })) {
            Ok(future) => future,
            Err(panic) => {
                return ToolFuture::err(crate::toolset::panic_error(entry.name(), panic.as_ref()));
            }
        };
        match future.into_ready() {
            Ok(result) => ToolFuture::ready(result),
            Err(running) => ToolFuture::new(async move {
                AssertUnwindSafe(running)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        Err(crate::toolset::panic_error(entry.name(), panic.as_ref()))
                    })
            }),
        }
    }
}
