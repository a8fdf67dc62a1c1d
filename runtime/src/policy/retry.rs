//! The retry layer: retryable errors of idempotent or read-only tools, backoff with jitter, bounded by the deadline.

use tower::layer::util::Identity;

use super::LayerInputs;

/// What this layer shares across tools and calls.
#[derive(Default)]
pub(crate) struct State;

/// The layer for a tool, when its policy turns it on.
pub(crate) fn layer(_: &LayerInputs<'_>) -> Option<Identity> {
    None
}
