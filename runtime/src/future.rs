//! [`ToolFuture`]: the result of a tool call, ready at once or still running.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::{ToolError, ToolOutput};

/// A boxed, `Send` future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a call gives back: [`ToolSource::call`](crate::ToolSource::call) and every policy layer
/// return one.
///
/// Either the result is known when the call returns — a synchronous `#[tool]` function ran
/// inline, a policy refused the call, a cached result was found — and nothing is allocated, or
/// the work goes on in a boxed future (one allocation). A layer that only looks at a call on its
/// way in passes the inner `ToolFuture` on unchanged, so a call through many layers is boxed at
/// most once per layer that must wait for something.
///
/// Polling a `ToolFuture` again after it gave its result gives an `internal` error (never a
/// panic).
#[must_use = "a ToolFuture does nothing unless awaited"]
pub struct ToolFuture<'a>(Repr<'a>);

enum Repr<'a> {
    Ready(Option<Result<ToolOutput, ToolError>>),
    Boxed(BoxFuture<'a, Result<ToolOutput, ToolError>>),
}

impl<'a> ToolFuture<'a> {
    /// A call whose result is already known.
    pub fn ready(result: Result<ToolOutput, ToolError>) -> Self {
        Self(Repr::Ready(Some(result)))
    }

    /// A call that fails with `error` before anything runs (a refusal).
    pub fn err(error: ToolError) -> Self {
        Self::ready(Err(error))
    }

    /// A call still running: `future` is boxed.
    pub fn new(future: impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a) -> Self {
        Self(Repr::Boxed(Box::pin(future)))
    }

    /// A call still running, already boxed.
    pub fn boxed(future: BoxFuture<'a, Result<ToolOutput, ToolError>>) -> Self {
        Self(Repr::Boxed(future))
    }

    /// Whether the result is known without polling.
    pub fn is_ready(&self) -> bool {
        matches!(self.0, Repr::Ready(Some(_)))
    }

    /// The result if it is known without polling, else the future itself.
    ///
    /// # Errors
    /// `Err(self)` when the call is still running.
    // The `Err` side hands the future back unchanged; boxing it would add the allocation this
    // type exists to avoid.
    #[allow(clippy::result_large_err)]
    pub fn into_ready(self) -> Result<Result<ToolOutput, ToolError>, Self> {
        match self.0 {
            Repr::Ready(Some(result)) => Ok(result),
            repr => Err(Self(repr)),
        }
    }

    /// The result passed through `f` once known: applied now when the result is ready (no
    /// allocation), else after the future ends.
    pub fn map(
        self,
        f: impl FnOnce(Result<ToolOutput, ToolError>) -> Result<ToolOutput, ToolError> + Send + 'a,
    ) -> Self {
        match self.into_ready() {
            Ok(result) => Self::ready(f(result)),
            Err(running) => Self::new(async move { f(running.await) }),
        }
    }
}

impl Future for ToolFuture<'_> {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Repr::Ready(result) => Poll::Ready(result.take().unwrap_or_else(|| {
                Err(ToolError::internal(
                    "a tool call's future was polled after it completed",
                ))
            })),
            Repr::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

impl std::fmt::Debug for ToolFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Repr::Ready(Some(_)) => "ToolFuture::Ready",
            Repr::Ready(None) => "ToolFuture::Done",
            Repr::Boxed(_) => "ToolFuture::Running",
        })
    }
}

impl<'a> From<BoxFuture<'a, Result<ToolOutput, ToolError>>> for ToolFuture<'a> {
    fn from(future: BoxFuture<'a, Result<ToolOutput, ToolError>>) -> Self {
        Self(Repr::Boxed(future))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_ready_result_is_given_once_then_an_internal_error() {
        let mut f = ToolFuture::ready(Ok(ToolOutput::text("hi")));
        assert!(f.is_ready());
        let out = (&mut f).await.expect("the result");
        assert_eq!(out, ToolOutput::text("hi"));
        assert!(!f.is_ready());
        let again = f.await.expect_err("polled twice");
        assert_eq!(again.kind(), crate::ErrorKind::Internal);
    }

    #[tokio::test]
    async fn map_applies_now_when_ready_and_later_when_running() {
        let ready =
            ToolFuture::ready(Ok(ToolOutput::text("a"))).map(|r| r.map(|_| ToolOutput::text("b")));
        assert!(ready.is_ready(), "mapping a ready result allocates nothing");
        assert_eq!(ready.await.unwrap(), ToolOutput::text("b"));
        let running = ToolFuture::new(async { Ok(ToolOutput::text("a")) })
            .map(|r| r.map(|_| ToolOutput::text("c")));
        assert!(!running.is_ready());
        assert_eq!(running.await.unwrap(), ToolOutput::text("c"));
    }
}
