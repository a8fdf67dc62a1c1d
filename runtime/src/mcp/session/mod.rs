//! One MCP server's client: the shared session, (re)connecting with backoff, and the requests
//! toolgate sends (`tools/list` with pagination, `tools/call`, `ping`).

mod authorized;
pub(crate) use authorized::token_error_in;
mod call;
mod connect;
mod requests;
mod subscriptions;

use call::Abandoned;
use connect::Failed;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, PaginatedRequestParams, PingRequest, ProtocolVersion};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, Peer, RoleClient, RunningService};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::handler::{Forgotten, Handler, Shared};
use super::stdio::ProcessLog;
use super::{McpConnection, McpOptions, convert};
use crate::net::oauth::ClientCredentials;
use crate::remote::PeerInfo;
use crate::{ErrorKind, ToolDescriptor, ToolError};

/// The MCP protocol versions toolgate speaks as a client, oldest first: every version rmcp
/// knows. A server answering with another one is refused.
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = ProtocolVersion::KNOWN_VERSIONS;

/// The first wait after a failed reconnect; doubled on each further failure, up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long closing a session may take (the stdio shutdown sequence included).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(6);

/// A live session.
struct Session {
    generation: u64,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    process: Option<Arc<ProcessLog>>,
    info: PeerInfo,
    /// The `notifications/cancelled` of abandoned requests, still being sent: the session
    /// waits for them (at most [`CANCEL_FLUSH`]) before it ends, so that a server hears of a
    /// call cancelled just before shutdown.
    cancels: tokio_util::task::TaskTracker,
    /// The server no longer knows this session (restarted, expired it).
    forgotten: Forgotten,
}

/// How long ending a session waits for its pending `notifications/cancelled` to go out.
const CANCEL_FLUSH: Duration = Duration::from_secs(1);

impl Session {
    fn is_alive(&self) -> bool {
        !self.peer.is_transport_closed() && !self.forgotten.is_set()
    }

    async fn shutdown(&self) {
        self.cancels.close();
        let _ = tokio::time::timeout(CANCEL_FLUSH, self.cancels.wait()).await;
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
        }
    }
}

/// Why a connect failed, and whether the call's deadline (not the server) cut it short.
struct Failure {
    error: ToolError,
    by_call: bool,
}

#[derive(Default)]
struct Backoff {
    failures: u32,
    last: Option<(Instant, ToolError)>,
}

impl Backoff {
    fn wait(&self) -> Duration {
        let exp = self.failures.saturating_sub(1).min(16);
        (FIRST_BACKOFF * 2u32.pow(exp)).min(MAX_BACKOFF)
    }
}

/// The client of one server.
pub(crate) struct Client {
    id: String,
    connection: super::McpConnection,
    options: McpOptions,
    shared: Arc<Shared>,
    http: Mutex<Option<reqwest::Client>>,
    /// The stderr of the process spawned last (stdio), for a handshake that timed out.
    spawned: Mutex<Option<Arc<ProcessLog>>>,
    current: RwLock<Option<Arc<Session>>>,
    /// Held while connecting: concurrent callers wait for one handshake.
    connecting: tokio::sync::Mutex<Backoff>,
    generation: AtomicU64,
    closed: CancellationToken,
    /// Compiled output schemas, by the toolset's tool name.
    output_validators: Mutex<HashMap<String, (Value, Arc<jsonschema::Validator>)>>,
    /// What the other features' requests remember (resources, prompts, subscriptions).
    passthrough: requests::Passthrough,
}

impl Client {
    pub(crate) fn new(id: String, connection: McpConnection, options: McpOptions) -> Arc<Self> {
        remember_secrets(&connection);
        Arc::new(Self {
            shared: Shared::new(id.clone()),
            id,
            connection,
            options,
            http: Mutex::new(None),
            spawned: Mutex::new(None),
            current: RwLock::new(None),
            connecting: tokio::sync::Mutex::new(Backoff::default()),
            generation: AtomicU64::new(0),
            closed: CancellationToken::new(),
            output_validators: Mutex::new(HashMap::new()),
            passthrough: requests::Passthrough::default(),
        })
    }

    pub(crate) fn connection(&self) -> &McpConnection {
        &self.connection
    }

    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes()
    }

    /// A client of the same server for one caller, its requests authenticated with `oauth`
    /// (the caller's token-exchange credential): a session of its own, since a server binds a
    /// session to the credential that opened it.
    pub(crate) fn for_caller(&self, oauth: ClientCredentials) -> Arc<Self> {
        let connection = match &self.connection {
            McpConnection::Http { url, headers, .. } => McpConnection::Http {
                url: url.clone(),
                headers: headers.clone(),
                oauth2: Some(oauth),
            },
            McpConnection::Sse { url, headers, .. } => McpConnection::Sse {
                url: url.clone(),
                headers: headers.clone(),
                oauth2: Some(oauth),
            },
            other => other.clone(),
        };
        Self::new(self.id.clone(), connection, self.options.clone())
    }

    pub(crate) fn peer_info(&self) -> PeerInfo {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|s| s.info.clone())
            .unwrap_or_default()
    }

    fn closed_error(&self) -> ToolError {
        ToolError::new(
            ErrorKind::Network,
            format!("MCP server `{}` is closed", self.id),
        )
        .with_retryable(false)
    }

    /// The live session, connecting first if there is none (or it dropped); a connect is
    /// bounded by `deadline` too (the call's, when a call needs the session).
    async fn session(
        &self,
        deadline: Option<std::time::Instant>,
    ) -> Result<Arc<Session>, ToolError> {
        if self.closed.is_cancelled() {
            return Err(self.closed_error());
        }
        if let Some(s) = self.live() {
            return Ok(s);
        }
        let mut backoff = self.connecting.lock().await;
        if let Some(s) = self.live() {
            return Ok(s);
        }
        if let Some((at, error)) = &backoff.last {
            let wait = backoff.wait();
            let since = at.elapsed();
            if since < wait {
                return Err(ToolError::new(
                    error.kind(),
                    format!(
                        "MCP server `{}` is unreachable; next attempt to reconnect in {} ms (last error: {})",
                        self.id,
                        (wait - since).as_millis(),
                        error.message()
                    ),
                )
                .with_retry_after(wait - since));
            }
        }
        let old = self
            .current
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(old) = old {
            tracing::info!(server = %self.id, generation = old.generation, "session dropped; starting a new one");
            tokio::spawn(async move { old.shutdown().await });
        }
        let connected = tokio::select! {
            r = self.connect(deadline) => r,
            () = self.closed.cancelled() => Err(Failure { error: self.closed_error(), by_call: false }),
        };
        match connected {
            Ok(s) => {
                *backoff = Backoff::default();
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&s));
                Ok(s)
            }
            // A handshake cut short by a call's deadline says nothing against the server:
            // the next call tries again at once, with its own deadline.
            Err(Failure {
                error,
                by_call: true,
            }) => Err(error),
            Err(Failure { error, .. }) => {
                backoff.failures += 1;
                backoff.last = Some((Instant::now(), error.clone()));
                Err(error)
            }
        }
    }

    fn live(&self) -> Option<Arc<Session>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|s| s.is_alive())
            .cloned()
    }

    /// Forgets `session` if it is still the current one (its transport failed).
    fn drop_session(&self, session: &Session) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current
            .as_ref()
            .is_some_and(|s| s.generation == session.generation)
            && let Some(old) = current.take()
        {
            tokio::spawn(async move { old.shutdown().await });
        }
    }

    fn http(&self) -> Result<reqwest::Client, ToolError> {
        let mut http = self.http.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = http.as_ref() {
            return Ok(c.clone());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .build()
            .map_err(|e| {
                ToolError::internal(format!(
                    "cannot build an HTTP client for MCP server `{}`: {e}",
                    self.id
                ))
            })?;
        *http = Some(client.clone());
        Ok(client)
    }

    /// Starts a session: `server/discover` first, `initialize` when the server is older.
    /// Bounded by `connect_timeout` and by `deadline` (the call's), whichever ends first; each
    /// step's own bound ends at the same instant, so the error names the step that waited
    /// (no `endpoint` event, no answer to the handshake) rather than a generic timeout.
    async fn connect(&self, deadline: Option<std::time::Instant>) -> Result<Arc<Session>, Failure> {
        let started = Instant::now();
        let crate::remote::ConnectBound {
            limit,
            by_call,
            until,
        } = crate::remote::ConnectBound::new(self.options.connect_timeout, deadline);
        let attempt = async {
            let auto = ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::LATEST],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            };
            match self.serve(auto, until, limit).await {
                Ok(s) => Ok(s),
                // A server that answers `server/discover` with something other than a JSON-RPC
                // error (an HTTP 400, a closed connection) gets a plain `initialize` on a new
                // connection.
                // (Not when the token could not be had: `initialize` would need it too.)
                Err(Failed::Handshake(e, _))
                    if !matches!(*e, ClientInitializeError::Cancelled)
                        && authorized::token_error_in_handshake(&e).is_none() =>
                {
                    tracing::debug!(server = %self.id, error = %e, "server/discover failed; trying initialize");
                    self.serve(ClientLifecycleMode::Initialize, until, limit)
                        .await
                }
                Err(failed) => Err(failed),
            }
        };
        let failure = |error: ToolError| Failure { error, by_call };
        let (service, process) = match tokio::time::timeout_at(until, attempt).await {
            Ok(Ok(s)) => s,
            Ok(Err(Failed::Before(e))) => return Err(failure(e)),
            Ok(Err(Failed::Handshake(e, process))) => {
                return Err(failure(self.init_error(&e, process.as_deref())));
            }
            Err(_) => return Err(failure(self.handshake_timeout(limit, by_call))),
        };
        let peer = service.peer().clone();
        let forgotten = service.service().forgotten.clone();
        let info = peer.peer_info();
        let version = info
            .as_ref()
            .map(|i| i.protocol_version.clone())
            .unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version) {
            let mut service = service;
            let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
            return Err(failure(ToolError::new(
                ErrorKind::Protocol,
                format!(
                    "MCP server `{}` answered with unsupported protocol version {version} (supported: {})",
                    self.id,
                    SUPPORTED_VERSIONS
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_retryable(false)));
        }
        let server = info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| format!("{} {}", s.name, s.version));
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(
            server = %self.id,
            generation,
            protocol = %version,
            peer = server.as_deref().unwrap_or("?"),
            ms = started.elapsed().as_millis() as u64,
            "MCP session started"
        );
        subscriptions::start(self, &peer, &version, generation);
        Ok(Arc::new(Session {
            generation,
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            process,
            info: PeerInfo {
                protocol_version: Some(version.to_string()),
                server,
            },
            cancels: tokio_util::task::TaskTracker::new(),
            forgotten,
        }))
    }

    /// Every tool the server lists, following `nextCursor` up to `max_list_pages` pages.
    /// `tools/list` is idempotent: when the session drops under it (an expired HTTP session, a
    /// restarted process), it is sent once more on a new session.
    pub(crate) async fn list_tools(&self) -> Result<Vec<ToolDescriptor>, ToolError> {
        match self.list_tools_once().await {
            Err((e, true)) => {
                tracing::info!(server = %self.id, error = %e, "session dropped during tools/list; listing again on a new session");
                self.list_tools_once().await.map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// One listing; the error says whether the session dropped under it.
    async fn list_tools_once(&self) -> Result<Vec<ToolDescriptor>, (ToolError, bool)> {
        let session = self.session(None).await.map_err(|e| (e, false))?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for page in 0.. {
            if page == self.options.max_list_pages {
                tracing::warn!(server = %self.id, pages = page, "tools/list keeps returning a nextCursor; the listing is cut off here");
                break;
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let result = session.peer.list_tools(Some(params)).await.map_err(|e| {
                let dropped = matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                );
                if dropped {
                    self.drop_session(&session);
                }
                let error =
                    convert::service_error(&self.id, "tools/list", &e, session.process.as_deref());
                (error, dropped)
            })?;
            tools.extend(result.tools.iter().map(convert::descriptor));
            match result.next_cursor {
                Some(next) if seen.insert(next.to_string()) => cursor = Some(next.to_string()),
                Some(_) => {
                    tracing::warn!(server = %self.id, "tools/list repeated a cursor; the listing stops there");
                    break;
                }
                None => break,
            }
        }
        Ok(tools)
    }

    /// `ping` on the current session (connecting if needed); the round trip.
    pub(crate) async fn ping(&self) -> Result<Duration, ToolError> {
        let session = self.session(None).await?;
        let started = Instant::now();
        session
            .peer
            .send_request(ClientRequest::PingRequest(PingRequest::default()))
            .await
            .map_err(|e| {
                if matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    self.drop_session(&session);
                }
                convert::service_error(&self.id, "ping", &e, session.process.as_deref())
            })?;
        Ok(started.elapsed())
    }

    /// Ends the session (stdio: stdin closed, SIGTERM, SIGKILL; HTTP: DELETE) and refuses
    /// later calls.
    pub(crate) async fn close(&self) {
        self.closed.cancel();
        let session = self
            .current
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(s) = session {
            s.shutdown().await;
        }
    }
}

/// Remembers the values of a connection that are secrets ([`crate::redact::remember`]), for a
/// connection made in code (tools.yaml's are remembered as they are resolved): the header
/// values and environment values whose names [say credential](crate::redact::is_secret_name)
/// (`Authorization`, `X-API-Key`, `GITHUB_TOKEN`, ...). Other values are not secrets: masking
/// every env value would garble the log wherever one equals a word or a name.
fn remember_secrets(connection: &McpConnection) {
    let values = match connection {
        McpConnection::Http { headers, .. } | McpConnection::Sse { headers, .. } => headers,
        McpConnection::Stdio { env, .. } => env,
    };
    for (name, value) in values {
        if crate::redact::is_secret_name(name) {
            crate::redact::remember(value);
        }
    }
}
