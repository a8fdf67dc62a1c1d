//! The argument rules layer: URL hosts and paths, values.

use tower::layer::util::Identity;

use super::LayerInputs;

/// What this layer shares across tools and calls.
#[derive(Default)]
pub(crate) struct State;

/// The layer for a tool, when its policy turns it on.
pub(crate) fn layer(_: &LayerInputs<'_>) -> Option<Identity> {
    None
}
