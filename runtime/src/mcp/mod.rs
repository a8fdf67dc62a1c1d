//! Remote MCP servers as tool sources, over one persistent session per server.
//!
//! [`McpBackend`] is the MCP client behind a [`RemoteSource`]: rmcp's client service over
//! stdio (our [transport](stdio) with junk-line skipping and process-group shutdown), streamable
//! HTTP (rmcp's reqwest transport) or the legacy HTTP+SSE transport of MCP 2024-11-05 (ours, on
//! rmcp's types: rmcp dropped it). Both protocol eras are negotiated: `server/discover`
//! (2026-07-28) first, `initialize` (2024-11-05 … 2025-11-25) when the server is older; any
//! version rmcp knows is accepted, never only an exact match.
//!
//! One session is shared by every call. When it drops (the process dies, the HTTP session
//! expires), the calls in flight fail at once with `network` naming what happened, and the next
//! call starts a new session; consecutive failures to connect back off exponentially.

mod convert;
mod frame_id;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod on_behalf;
pub mod passthrough;
mod session;
mod sse;
mod stdio;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use toolgate_model::config::{McpServer, McpTransport};

use crate::net::oauth::ClientCredentials;
use crate::remote::{PeerInfo, RemoteBackend, RemoteSource, ToolFilter};
use crate::{BoxFuture, BuildError, ToolContext, ToolDescriptor, ToolError, ToolOutput};

/// The top-level `id` in the first bytes of a JSON-RPC frame too large to parse (shared with
/// the gateway's stdio server, which answers such a frame for it).
#[doc(hidden)]
pub use frame_id::top_level_id;
pub use passthrough::{McpEvent, McpServerHandle, servers};
pub use session::SUPPORTED_VERSIONS;
pub(crate) use session::token_error_in;
pub use stdio::{INHERITED_ENV, kill_stdio_servers};

/// How to reach an MCP server, with every `${ENV}` already resolved.
#[derive(Clone)]
#[non_exhaustive]
pub enum McpConnection {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (looked up in `PATH`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment, besides the few variables it inherits ([`INHERITED_ENV`]).
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// MCP streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request (values may be secrets: never logged).
        headers: BTreeMap<String, String>,
        /// OAuth2 client credentials: the token goes on every request as `Authorization:
        /// Bearer`, and is replaced once when the server answers HTTP 401.
        oauth2: Option<ClientCredentials>,
    },
    /// The legacy HTTP+SSE transport (MCP 2024-11-05).
    Sse {
        /// The SSE endpoint, e.g. `http://127.0.0.1:3001/sse`.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// OAuth2 client credentials, as for [`McpConnection::Http`].
        oauth2: Option<ClientCredentials>,
    },
}

impl std::fmt::Debug for McpConnection {
    /// Shows where, never header or environment values (they may hold secrets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio {
                program,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http {
                url,
                headers,
                oauth2,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("oauth2", oauth2)
                .finish(),
            Self::Sse {
                url,
                headers,
                oauth2,
            } => f
                .debug_struct("Sse")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("oauth2", oauth2)
                .finish(),
        }
    }
}

/// Limits of an MCP connection.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The longest the handshake (spawn or connect, then `server/discover` or `initialize`)
    /// may take. Default 30 s (tools.yaml: `connect_timeout_ms`). A call that needs a new
    /// session is bounded by its own deadline too.
    pub connect_timeout: Duration,
    /// The longest a `tools/call` may wait without a `notifications/progress` for it (each one
    /// starts the wait again); the call's own deadline still ends it. Default `None`: only the
    /// deadline (tools.yaml: `idle_timeout_ms`). Past it, the call fails with `timeout` and the
    /// server gets `notifications/cancelled`.
    pub idle_timeout: Option<Duration>,
    /// The largest frame accepted from the server, in bytes (stdio line, SSE event, HTTP JSON
    /// body); a larger one is rejected, never buffered. Default 64 MiB.
    pub max_frame_bytes: usize,
    /// The most `tools/list` pages followed (a server that always returns a `nextCursor` is cut
    /// off there, with a warning). Default 100. The same bound applies to `resources/list`,
    /// `resources/templates/list` and `prompts/list`.
    pub max_list_pages: usize,
    /// The longest one request of the other features (resources, prompts, completions,
    /// subscriptions; see [`passthrough`]) may wait for its answer, per page of a listing.
    /// Default 30 s.
    pub request_timeout: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            idle_timeout: None,
            max_frame_bytes: 64 << 20,
            max_list_pages: 100,
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The MCP client of one server, as a [`RemoteBackend`]. Cheap to clone; clones share the
/// session.
#[derive(Clone)]
pub struct McpBackend {
    client: Arc<session::Client>,
    /// With `oauth2: {grant: token_exchange}`: each caller's session.
    callers: Option<Arc<on_behalf::Callers>>,
}

impl McpBackend {
    /// A client of server `id` (its source id: log lines and errors name it). Nothing is
    /// contacted until the first listing or call.
    pub fn new(id: impl Into<String>, connection: McpConnection, options: McpOptions) -> Self {
        let oauth = match &connection {
            McpConnection::Http { oauth2, .. } | McpConnection::Sse { oauth2, .. } => {
                oauth2.as_ref()
            }
            McpConnection::Stdio { .. } => None,
        };
        let callers = on_behalf::Callers::new(oauth);
        Self {
            client: session::Client::new(id.into(), connection, options),
            callers,
        }
    }

    /// A client for one tools.yaml `mcp` entry: `${ENV}` references resolved now, relative
    /// `cwd`s taken from `base_dir` (the folder of the tools.yaml).
    ///
    /// # Errors
    /// [`BuildError::Source`] naming the server when an environment variable it references is
    /// not set.
    pub fn from_config(server: &McpServer, base_dir: &Path) -> Result<Self, BuildError> {
        let connection = connection(server, base_dir)?;
        Ok(Self::new(&server.id, connection, options(server)))
    }

    /// The connection's settings.
    pub fn connection(&self) -> &McpConnection {
        self.client.connection()
    }
}

/// The limits a tools.yaml `mcp` entry sets (`connect_timeout_ms`, `idle_timeout_ms`); the
/// defaults for the rest.
fn options(server: &McpServer) -> McpOptions {
    let defaults = McpOptions::default();
    McpOptions {
        connect_timeout: server
            .connect_timeout_ms
            .map_or(defaults.connect_timeout, Duration::from_millis),
        idle_timeout: server.idle_timeout_ms.map(Duration::from_millis),
        ..defaults
    }
}

/// The tool source of one tools.yaml `mcp` entry: its allow/deny lists, `lazy`, `timeout_ms`,
/// plus `global`, the allow/deny lists that apply to every remote source.
///
/// # Errors
/// [`BuildError::Source`] for an unset environment variable or an invalid glob.
pub fn source(
    server: &McpServer,
    base_dir: &Path,
    global: ToolFilter,
) -> Result<RemoteSource, BuildError> {
    source_and_backend(server, base_dir, global).map(|(source, _)| source)
}

/// [`source`], and the backend inside it (the same session) for the passthrough.
fn source_and_backend(
    server: &McpServer,
    base_dir: &Path,
    global: ToolFilter,
) -> Result<(RemoteSource, McpBackend), BuildError> {
    let backend = McpBackend::from_config(server, base_dir)?;
    let shared = backend.clone();
    let filter = ToolFilter::new(&server.id, &server.allow, &server.deny)?;
    // A listing's bound leaves the handshake its own, so that a server that does not finish
    // it is reported as such, not as a listing that took too long.
    let limits = options(server);
    let discovery = limits.connect_timeout + limits.request_timeout;
    let mut builder = RemoteSource::builder(&server.id, backend)
        .discovery_timeout(discovery)
        .lazy(server.lazy)
        .prefix(server.prefix)
        .filter(filter)
        .global_filter(global)
        .require(server.require.clone())
        .call_timeout(server.timeout_ms.map(Duration::from_millis));
    if let Some(max) = server.max_result_bytes {
        builder =
            builder.max_result_bytes((max > 0).then(|| usize::try_from(max).unwrap_or(usize::MAX)));
    }
    Ok((builder.build(), shared))
}

/// An MCP server made when a toolset is built: its source, and its handle for
/// [`Toolset::mcp_servers`](crate::Toolset::mcp_servers).
pub(crate) type McpFactory =
    Box<dyn FnOnce() -> Result<(Arc<dyn crate::ToolSource>, McpServerHandle), BuildError> + Send>;

impl crate::ToolsetBuilder {
    /// Adds `source` and, when its backend is an [`McpBackend`], lists its server among
    /// [`Toolset::mcp_servers`](crate::Toolset::mcp_servers) (for the pass-through of
    /// resources, prompts and completions); any other remote source is added as
    /// [`source`](crate::ToolsetBuilder::source) adds it.
    pub fn mcp_source(self, source: crate::remote::RemoteSource) -> Self {
        use crate::ToolSource as _;
        let Some(backend) = source.backend_as::<McpBackend>().cloned() else {
            return self.source(source);
        };
        let handle = McpServerHandle {
            id: source.id().to_string(),
            prefixed: source.prefixed(),
            backend,
        };
        self.mcp_server_with(Box::new(move || {
            Ok((Arc::new(source) as Arc<dyn crate::ToolSource>, handle))
        }))
    }

    /// Adds one source per `mcp` entry of a tools.yaml `tools:` section (see [`source`]), with
    /// the section's `allow`/`deny` applied to every one; relative `cwd`s are taken from
    /// `base_dir`. Nothing is contacted until [`Toolset::discover`](crate::Toolset::discover)
    /// or the first call.
    ///
    /// # Errors
    /// At [`build`](crate::ToolsetBuilder::build): [`BuildError::Source`] for an unset
    /// environment variable or an invalid glob.
    pub fn mcp_servers(
        mut self,
        tools: &toolgate_model::config::ToolsSection,
        base_dir: impl AsRef<Path>,
    ) -> Self {
        let base = base_dir.as_ref().to_path_buf();
        let global = ToolFilter::new("tools", &tools.allow, &tools.deny);
        for server in &tools.mcp {
            let server = server.clone();
            let base = base.clone();
            let global = global.clone();
            self = self.mcp_server_with(Box::new(move || {
                let (source, backend) = source_and_backend(&server, &base, global?)?;
                let handle = McpServerHandle {
                    id: server.id.clone(),
                    prefixed: server.prefix,
                    backend,
                };
                Ok((Arc::new(source) as Arc<dyn crate::ToolSource>, handle))
            }));
        }
        self
    }

    /// [`mcp_servers`](Self::mcp_servers) from the text of a tools.yaml (generated code passes
    /// the `TOOLS_YAML` it was built from).
    ///
    /// # Errors
    /// At [`build`](crate::ToolsetBuilder::build): [`BuildError::Source`] when the text does
    /// not load, and as [`mcp_servers`](Self::mcp_servers).
    pub fn mcp_servers_from_yaml(self, yaml: &str, base_dir: impl AsRef<Path>) -> Self {
        match toolgate_model::config::ToolsConfig::from_yaml_str(yaml, Path::new("tools.yaml")) {
            Ok(loaded) => self.mcp_servers(&loaded.config.tools, base_dir),
            Err(e) => {
                let message = e.to_string();
                self.source_with(move |_| {
                    Err(BuildError::Source {
                        source_id: "mcp".to_string(),
                        message,
                    })
                })
            }
        }
    }
}

/// The connection of a tools.yaml entry, every `${ENV}` resolved: each value as the kind of
/// field it is ([`Field`]): command arguments are plain, env values and headers credentials
/// when their names say so (and carriers of `${...}` secrets otherwise), the bearer token a
/// credential.
fn connection(server: &McpServer, base_dir: &Path) -> Result<McpConnection, BuildError> {
    use toolgate_model::config::Interpolated;
    use toolgate_model::secrets::Field;
    let id = &server.id;
    let resolve = |what: &str, field: Field, v: &Interpolated| {
        v.resolve_as(field)
            .map(toolgate_model::config::Secret::into_inner)
            .map_err(|e| BuildError::Source {
                source_id: id.clone(),
                message: format!("{what}: {e}"),
            })
    };
    let headers = |headers: &BTreeMap<String, Interpolated>, bearer: &Option<Interpolated>| {
        let mut out = BTreeMap::new();
        for (k, v) in headers {
            out.insert(
                k.clone(),
                resolve(&format!("header `{k}`"), Field::named(k), v)?,
            );
        }
        if let Some(token) = bearer {
            out.insert(
                "Authorization".to_string(),
                format!(
                    "Bearer {}",
                    resolve("bearer_token", Field::Credential, token)?
                ),
            );
        }
        Ok::<_, BuildError>(out)
    };
    let oauth2 = |config: &Option<toolgate_model::config::OAuth2ClientCredentials>, url: &str| {
        let owner = format!("MCP server `{}`", server.id);
        config
            .as_ref()
            .map(|c| ClientCredentials::for_resource_server(&owner, c, url))
            .transpose()
            .map_err(|message| BuildError::Source {
                source_id: server.id.clone(),
                message,
            })
    };
    Ok(match &server.transport {
        McpTransport::Stdio(t) => McpConnection::Stdio {
            program: t.command.clone(),
            args: t
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| resolve(&format!("args[{i}]"), Field::Plain, a))
                .collect::<Result<_, _>>()?,
            env: t
                .env
                .iter()
                .map(|(k, v)| {
                    let value = resolve(&format!("env `{k}`"), Field::named(k), v)?;
                    Ok((k.clone(), value))
                })
                .collect::<Result<_, BuildError>>()?,
            cwd: t.cwd.as_ref().map(|c| base_dir.join(c)),
        },
        McpTransport::Http(t) => McpConnection::Http {
            url: t.url.clone(),
            headers: headers(&t.headers, &t.bearer_token)?,
            oauth2: oauth2(&t.oauth2, &t.url)?,
        },
        McpTransport::Sse(t) => McpConnection::Sse {
            url: t.url.clone(),
            headers: headers(&t.headers, &t.bearer_token)?,
            oauth2: oauth2(&t.oauth2, &t.url)?,
        },
    })
}

impl RemoteBackend for McpBackend {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, ToolError>> {
        Box::pin(self.client.list_tools())
    }

    fn call<'a>(
        &'a self,
        tool: &'a ToolDescriptor,
        remote_name: &'a str,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            match &self.callers {
                Some(callers) => {
                    let client = callers.client(&self.client, ctx)?;
                    client.call(tool, remote_name, args, ctx).await
                }
                None => self.client.call(tool, remote_name, args, ctx).await,
            }
        })
    }

    fn ping(&self) -> BoxFuture<'_, Result<Duration, ToolError>> {
        Box::pin(self.client.ping())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(callers) = &self.callers {
                callers.close().await;
            }
            self.client.close().await;
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.client.changes()
    }

    fn peer(&self) -> PeerInfo {
        self.client.peer_info()
    }
}

impl std::fmt::Debug for McpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpBackend")
            .field("connection", self.client.connection())
            .finish()
    }
}
