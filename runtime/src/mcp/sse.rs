//! Placeholder, replaced by the legacy HTTP+SSE client transport.

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};

pub(crate) struct SseConfig {
    pub url: String,
    pub headers: reqwest::header::HeaderMap,
    pub connect_timeout: Duration,
    pub post_timeout: Duration,
    pub max_frame_bytes: usize,
    pub server: String,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    #[error("legacy SSE is not available yet for server `{0}`")]
    Unavailable(String),
}

pub(crate) struct SseClientTransport;

impl SseClientTransport {
    pub(crate) async fn connect(
        _client: reqwest::Client,
        config: SseConfig,
    ) -> Result<Self, SseError> {
        Err(SseError::Unavailable(config.server))
    }
}

impl rmcp::transport::Transport<RoleClient> for SseClientTransport {
    type Error = SseError;
    fn send(
        &mut self,
        _item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        async { Err(SseError::Unavailable(String::new())) }
    }
    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        async { None }
    }
    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }
}
