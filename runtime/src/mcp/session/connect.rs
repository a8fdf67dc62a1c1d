//! Starting a session: a new transport (spawned process, HTTP client, SSE stream) and the
//! handshake over it, with errors that name the server and say what happened.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle,
};
use rmcp::transport::Transport;

use super::Client;
use crate::mcp::handler::{Forgotten, Handler, ProgressInOrder};
use crate::mcp::stdio::{ProcessLog, StdioCommand, StdioTransport};
use crate::mcp::{McpConnection, sse};
use crate::{ErrorKind, ToolError};

/// Why a handshake failed: before the protocol started (spawn, connect), or in it.
pub(super) enum Failed {
    Before(ToolError),
    Handshake(Box<ClientInitializeError>, Option<Arc<ProcessLog>>),
}

impl Client {
    /// The configured headers as HTTP headers, marked sensitive (never shown by `Debug`).
    fn header_map(
        &self,
        headers: &std::collections::BTreeMap<String, String>,
    ) -> Result<reqwest::header::HeaderMap, Failed> {
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes());
            let value = reqwest::header::HeaderValue::from_str(v);
            let (Ok(name), Ok(mut value)) = (name, value) else {
                return Err(Failed::Before(ToolError::new(
                    ErrorKind::Internal,
                    format!(
                        "MCP server `{}`: header `{k}` is not a valid HTTP header",
                        self.id
                    ),
                )));
            };
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Ok(map)
    }

    /// ` at <url>` for HTTP servers (stdio servers are named by their command elsewhere).
    fn where_(&self) -> String {
        match &self.connection {
            McpConnection::Http { url, .. } | McpConnection::Sse { url, .. } => {
                format!(" at {url}")
            }
            McpConnection::Stdio { .. } => String::new(),
        }
    }

    /// The MCP handshake over `transport`, with progress reported in order
    /// ([`ProgressInOrder`]); `log` is the stdio server's stderr, kept for error messages.
    async fn handshake<T>(
        &self,
        handler: Handler,
        transport: T,
        mode: ClientLifecycleMode,
        log: Option<Arc<ProcessLog>>,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<Arc<ProcessLog>>), Failed>
    where
        T: Transport<RoleClient> + Send + 'static,
    {
        let transport = ProgressInOrder::new(
            transport,
            Arc::clone(&self.shared),
            handler.forgotten.clone(),
        );
        match serve_client_with_lifecycle(handler, transport, mode).await {
            Ok(service) => Ok((service, log)),
            Err(e) => Err(Failed::Handshake(Box::new(e), log)),
        }
    }

    /// One handshake over a new transport; `until` (`limit` after the connect started) is
    /// when the whole connect ends.
    pub(super) async fn serve(
        &self,
        mode: ClientLifecycleMode,
        until: tokio::time::Instant,
        limit: Duration,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<Arc<ProcessLog>>), Failed> {
        let handler = Handler {
            shared: Arc::clone(&self.shared),
            protocol_version: ProtocolVersion::LATEST_WITH_INITIALIZE,
            forgotten: Forgotten::default(),
        };
        let before =
            |kind: ErrorKind, message: String| Failed::Before(ToolError::new(kind, message));
        match &self.connection {
            McpConnection::Stdio {
                program,
                args,
                env,
                cwd,
            } => {
                let cmd = StdioCommand {
                    server: self.id.clone(),
                    program: program.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    cwd: cwd.clone(),
                    max_frame_bytes: self.options.max_frame_bytes,
                };
                if let Some(dir) = cwd.as_ref().filter(|d| !d.is_dir()) {
                    return Err(before(
                        ErrorKind::Network,
                        format!(
                            "cannot start MCP server `{}`: its working directory `{}` does not exist",
                            self.id,
                            dir.display()
                        ),
                    ));
                }
                let (transport, log) = StdioTransport::spawn(&cmd).map_err(|e| {
                    before(
                        ErrorKind::Network,
                        format!("cannot start MCP server `{}` (`{program}`): {e}", self.id),
                    )
                })?;
                *self.spawned.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&log));
                self.handshake(handler, transport, mode, Some(log)).await
            }
            McpConnection::Http {
                url,
                headers,
                oauth2,
            } => {
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let http = self.http().map_err(Failed::Before)?;
                // rmcp sends the token itself (`auth_header`); the rest as custom headers.
                let mut auth = None;
                let mut custom = HashMap::new();
                for (name, value) in self.header_map(headers)? {
                    let Some(name) = name else { continue };
                    if name == reqwest::header::AUTHORIZATION {
                        let v = value.to_str().unwrap_or_default();
                        auth = Some(v.strip_prefix("Bearer ").unwrap_or(v).to_string());
                    } else {
                        custom.insert(name, value);
                    }
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom)
                    .reinit_on_expired_session(false);
                // A dropped event stream is resumed a few times (the server's `retry:` field
                // sets the wait), not forever: a server that died fails its calls in about a
                // second instead of at their deadline.
                config.retry_config = Arc::new(BoundedRetry);
                config.max_json_response_size = self.options.max_frame_bytes;
                config.max_sse_event_size = self.options.max_frame_bytes;
                if let Some(oauth) = oauth2 {
                    // The token goes on each request (`AuthorizedHttp`), not in the config.
                    let http = super::authorized::AuthorizedHttp {
                        http,
                        oauth: oauth.clone(),
                    };
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::with_client(http, config);
                    return self.handshake(handler, transport, mode, None).await;
                }
                if let Some(token) = auth {
                    config = config.auth_header(token);
                }
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(http, config);
                self.handshake(handler, transport, mode, None).await
            }
            McpConnection::Sse {
                url,
                headers,
                oauth2,
            } => {
                let http = self.http().map_err(Failed::Before)?;
                let map = self.header_map(headers)?;
                let config = sse::SseConfig {
                    url: url.clone(),
                    headers: map,
                    connect_timeout: limit,
                    connect_until: Some(until),
                    post_timeout: self.options.connect_timeout,
                    max_frame_bytes: self.options.max_frame_bytes,
                    server: self.id.clone(),
                    oauth: oauth2.clone(),
                };
                let transport = sse::SseClientTransport::connect(http, config)
                    .await
                    .map_err(|e| match e {
                        sse::SseError::Token(token) => Failed::Before(token),
                        e => before(ErrorKind::Network, e.to_string()),
                    })?;
                tracing::debug!(server = %self.id, endpoint = %transport.message_url(), "legacy SSE: messages go to the endpoint the server named");
                self.handshake(handler, transport, mode, None).await
            }
        }
    }

    /// The handshake got no answer by the connect's deadline: what was waited for, for how
    /// long and whose bound it was; for a process, its state and last stderr lines.
    pub(super) fn handshake_timeout(&self, limit: Duration, by_call: bool) -> ToolError {
        let mut message = format!(
            "MCP server `{}`{} did not answer the handshake (`server/discover`, then `initialize`) within {} ms",
            self.id,
            self.where_(),
            limit.as_micros().div_ceil(1000)
        );
        if by_call {
            message.push_str(" (the call's deadline; the session is tried again by the next call)");
        } else {
            message.push_str(" (its `connect_timeout_ms`)");
        }
        let process = self
            .spawned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|_| matches!(self.connection, McpConnection::Stdio { .. }));
        push_process_state(&mut message, process.as_deref());
        ToolError::new(ErrorKind::Timeout, message)
    }

    pub(super) fn init_error(
        &self,
        e: &ClientInitializeError,
        process: Option<&ProcessLog>,
    ) -> ToolError {
        if let Some(token) = super::authorized::token_error_in_handshake(e) {
            return token.clone();
        }
        let mut message = format!(
            "cannot start an MCP session with server `{}`{}: {}",
            self.id,
            self.where_(),
            error_chain(e)
        );
        push_process_state(&mut message, process);
        let kind = match e {
            ClientInitializeError::JsonRpcError(_)
            | ClientInitializeError::ExpectedInitResult(_)
            | ClientInitializeError::NoCompatibleProtocolVersion { .. } => ErrorKind::Protocol,
            _ => ErrorKind::Network,
        };
        ToolError::new(kind, message)
    }
}

/// ` (the process exited …)` and `; its last stderr lines: …`, when there are.
fn push_process_state(message: &mut String, process: Option<&ProcessLog>) {
    if let Some(exit) = process.and_then(ProcessLog::exit) {
        message.push_str(&format!(" (the process {exit})"));
    }
    if let Some(tail) = process
        .map(ProcessLog::stderr_tail)
        .filter(|t| !t.is_empty())
    {
        message.push_str("; its last stderr lines: ");
        message.push_str(&tail.join(" | "));
    }
}

/// How rmcp resumes a dropped streamable-HTTP event stream: three attempts, 300 ms apart
/// (unless the server's `retry:` field says otherwise), then the calls waiting on it fail.
#[derive(Debug)]
struct BoundedRetry;

impl rmcp::transport::common::client_side_sse::SseRetryPolicy for BoundedRetry {
    fn retry(&self, attempts: usize) -> Option<std::time::Duration> {
        (attempts < 3).then_some(std::time::Duration::from_millis(300))
    }
}

/// An error and its causes, `a: b: c`, without rmcp's type names and without repeats: the
/// root cause (`Connection refused`) is what a user needs to see.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        // rmcp wraps transport errors as "Send message error Transport [<type>] error: ...":
        // keep what comes after the type name.
        let text = match text.find("] error: ") {
            Some(i) if text.contains("Transport [") => text[i + "] error: ".len()..].to_string(),
            _ => text,
        };
        let text = text.trim().to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.retain(|p| !text.contains(p.as_str()));
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}
