//! `toolgate serve`: the whole toolset as an MCP server (stdio, streamable HTTP at `/mcp`,
//! legacy HTTP+SSE at `/sse`) and a REST API, behind one [`Gateway`].
//!
//! Every front — MCP over any transport, REST — calls tools through [`Gateway::call`], so a
//! call made over REST and one made over MCP pass through the same toolset (and so the same
//! validation and policies) under the same caller identity. The HTTP routes:
//!
//! | route | what |
//! | --- | --- |
//! | `POST/GET/DELETE /mcp` | MCP streamable HTTP (rmcp's server), both protocol eras |
//! | `GET /sse`, `POST /message?sessionId=…` | the legacy HTTP+SSE transport (MCP 2024-11-05) |
//! | `GET /tools`, `GET /tools/{name}`, `…/schema`, `…/metadata`, `POST /tools/{name}/call`, `POST /calls` | REST |
//! | `GET /sources`, `GET /healthz`, `GET /readyz`, `GET /openapi.json` | status and the API's own description |
//! | `GET /metrics` | Prometheus metrics ([`metrics`]) |
//! | `GET /`, `/console…` | the web console (feature `console`: [`console`]) |
//!
//! Every route checks `Host` and `Origin` first (DNS-rebinding protection, MCP 2025-11-25
//! "Transports", security warning) and, when API keys are configured, the key (all but
//! `/healthz` and `/readyz`, and the console's routes, which check their session cookie).

mod auth;
mod body;
mod builder;
mod calls;
#[cfg(feature = "console")]
pub mod console;
pub mod mcp;
pub mod metrics;
mod redact;
mod reload;
pub mod rest;
mod security;
mod server;
mod servers;
#[cfg(feature = "builtin")]
mod skills;
#[cfg(not(feature = "builtin"))]
#[path = "skills_off.rs"]
mod skills;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_model::config::ToolSearchConfig;
use toolgate_runtime::{
    ProgressReporter, ToolContext, ToolContextBuilder, ToolError, ToolOutput, Toolset,
};

pub use builder::GatewayBuilder;
use calls::{CallExtras, InFlight};
pub use reload::{ReloadHook, ReloadOutcome};
pub use security::Caller;
pub use server::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
};

/// The default `--http` address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The default largest request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
/// The default bound on finishing calls in flight at shutdown: 10 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The default `tools/list` page size: 100 tools.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The gateway: a [`Toolset`] served over MCP and REST. Cheap to clone; clones share
/// everything.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    toolset: Toolset,
    settings: Settings,
    /// `false` while start-up discovery runs (`/readyz`).
    ready: watch::Sender<bool>,
    /// Cancelled when the gateway shuts down: no new requests, calls in flight get the grace
    /// period, then are cancelled through `calls`.
    shutdown: CancellationToken,
    /// The parent of every call's cancellation token: cancelled when the grace period ends.
    calls: CancellationToken,
    /// Cancelled once the calls in flight have finished (or been cancelled) at shutdown: open
    /// streams (MCP sessions, SSE) end then, so that answers still on their way get out.
    streams: CancellationToken,
    /// Counts calls in flight.
    in_flight: watch::Sender<usize>,
    /// MCP `tools/list`'s converted definitions, shared by every session.
    listing: mcp::listing::ToolListing,
    /// The web console's sessions, call log and what it was given of the configuration.
    #[cfg(feature = "console")]
    console: console::ConsoleState,
    /// What reloads the configuration, when the process that serves the gateway set it
    /// ([`Gateway::set_reload_hook`]).
    reload_hook: std::sync::OnceLock<reload::ReloadHook>,
}

/// The gateway's settings (see [`GatewayBuilder`]).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) allowed_hosts: Vec<String>,
    /// `gateway.allowed_hosts` entries that are networks: a `Host` that is an IP address in
    /// one of them is accepted.
    pub(crate) allowed_networks: Vec<ipnet::IpNet>,
    pub(crate) allowed_origins: Vec<String>,
    /// `gateway.api_keys`: replaced as a whole by [`Gateway::reload_api_keys`] (clones of the
    /// settings share them).
    pub(crate) api_keys: Arc<arc_swap::ArcSwap<Vec<auth::ApiKey>>>,
    /// Access tokens from `gateway.auth.oauth`'s issuers.
    pub(crate) oauth: Option<Arc<auth::oauth::ResourceServer>>,
    pub(crate) max_body_bytes: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) connections: server::ConnectionLimits,
    pub(crate) shutdown_grace: Duration,
    pub(crate) page_size: usize,
    /// `gateway.tool_search`: the MCP meta tools, and the tools listed beside them.
    pub(crate) tool_search: ToolSearchConfig,
    /// `gateway.session_key`: seals MCP session ids (and keys `tools/list` cursors) so that
    /// every replica holding it serves every session.
    pub(crate) session_key: Option<Arc<mcp::http::sealed::Seal>>,
    /// `gateway.servers`: the virtual servers.
    pub(crate) servers: Vec<Arc<servers::VirtualServer>>,
}

impl Settings {
    /// Whether requests need a credential (an API key or an access token).
    pub(crate) fn authenticates(&self) -> bool {
        !self.api_keys.load().is_empty() || self.oauth.is_some()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_networks: Vec::new(),
            allowed_origins: Vec::new(),
            api_keys: Arc::default(),
            oauth: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            connections: server::ConnectionLimits {
                header_timeout: DEFAULT_HEADER_TIMEOUT,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
                max_connections: DEFAULT_MAX_CONNECTIONS,
            },
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            page_size: DEFAULT_PAGE_SIZE,
            tool_search: ToolSearchConfig::default(),
            session_key: None,
            servers: Vec::new(),
        }
    }
}

/// A problem with the gateway's settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An API key's `${ENV}` reference is not set, or a setting is out of range.
    #[error("gateway: {0}")]
    Config(String),
    /// Two sources offer the same tool name (a source mounted without prefix).
    #[error("gateway: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    NameConflicts(Vec<toolgate_runtime::NameConflict>),
    /// The listener could not be bound or failed.
    #[error("gateway: {0}")]
    Io(#[from] std::io::Error),
}

impl Gateway {
    /// A builder serving `toolset`.
    pub fn builder(toolset: Toolset) -> GatewayBuilder {
        GatewayBuilder {
            toolset,
            settings: Settings::default(),
            #[cfg(feature = "console")]
            console: console::ConsoleSettings::default(),
        }
    }

    /// The toolset served.
    pub fn toolset(&self) -> &Toolset {
        &self.inner.toolset
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    pub(crate) fn listing(&self) -> &mcp::listing::ToolListing {
        &self.inner.listing
    }

    /// One page of MCP `tools/list` as an anonymous caller gets it (the cursor as the previous
    /// page gave it; `None` for the first): what the MCP handler answers, without a transport.
    /// For the benchmarks (`benches/benches/scale.rs`), not an API.
    #[doc(hidden)]
    pub fn mcp_tools_list_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        self.listing().page(
            self.toolset(),
            &toolgate_runtime::Identity::default(),
            cursor,
            self.settings().page_size,
        )
    }

    /// Whether the gateway is ready: no start-up discovery is running (`/readyz`).
    pub fn is_ready(&self) -> bool {
        *self.inner.ready.borrow()
    }

    /// Waits until start-up discovery has finished, at most `bound`; `true` when ready.
    /// `tools/list` waits like this, so an early client sees the whole toolset.
    pub async fn wait_ready(&self, bound: Duration) -> bool {
        let mut ready = self.inner.ready.subscribe();
        tokio::time::timeout(bound, ready.wait_for(|r| *r))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Lists every start-up source (at most 8 at a time, each bounded by its own discovery
    /// timeout); the gateway is not ready (`/readyz` 503) until this returns. Sources that
    /// fail are reported in `/sources` and retried on use; they never keep the gateway from
    /// becoming ready.
    ///
    /// # Errors
    /// [`GatewayError::NameConflicts`] when two sources offer one tool name (a source mounted
    /// without prefix): the gateway stays not ready and shuts down, since a model could not
    /// know which tool it calls.
    pub async fn discover(&self) -> Result<Vec<toolgate_runtime::SourceStatus>, GatewayError> {
        self.inner.ready.send_replace(false);
        let statuses = self.toolset().discover(8).await;
        let conflicts = self.toolset().name_conflicts();
        if !conflicts.is_empty() {
            self.shutdown();
            return Err(GatewayError::NameConflicts(conflicts));
        }
        self.inner.ready.send_replace(true);
        servers::warn_empty(self);
        Ok(statuses)
    }

    /// [`discover`](Self::discover) in the background: not ready from now until it is done.
    pub fn start_discovery(
        &self,
    ) -> tokio::task::JoinHandle<Result<Vec<toolgate_runtime::SourceStatus>, GatewayError>> {
        self.inner.ready.send_replace(false);
        let gateway = self.clone();
        tokio::spawn(async move { gateway.discover().await })
    }

    /// The [`ToolContext`] of a call made for `caller`: its name, roles, agent and task (as
    /// the security layer found them), its `traceparent` (or a new trace), `progress` for the
    /// tool's progress reports and `cancel` as its cancellation. The one place every front
    /// builds a call's context ([`call`](Self::call), `POST /calls`); add a deadline with
    /// [`ToolContextBuilder::timeout`] before building it.
    pub fn context(
        &self,
        caller: &Caller,
        progress: ProgressReporter,
        cancel: CancellationToken,
    ) -> ToolContextBuilder {
        let mut ctx = ToolContext::builder()
            .roles(caller.roles.clone())
            .cancellation(cancel)
            .progress(progress);
        if let Some(name) = &caller.name {
            ctx = ctx.caller(name.clone());
        }
        if let Some(agent) = &caller.agent {
            ctx = ctx.agent(agent.clone());
        }
        if let Some(task) = &caller.task {
            ctx = ctx.task(task.clone());
        }
        if let Some(claims) = &caller.claims {
            ctx = ctx.claims(std::sync::Arc::clone(claims));
        }
        if let Some(token) = &caller.access_token {
            ctx = ctx.access_token(token.clone());
        }
        match &caller.traceparent {
            Some(traceparent) => {
                ctx = ctx.traceparent(traceparent.clone());
                match &caller.tracestate {
                    Some(tracestate) => ctx.tracestate(tracestate.clone()),
                    None => ctx,
                }
            }
            None => ctx.new_trace(),
        }
    }

    /// Calls tool `name` (as the toolset or a model names it) with `args` for `caller`: the one
    /// path every front uses. `progress` receives the tool's progress reports; cancelling
    /// `cancel` (the client cancelled, the connection dropped) cancels the call, and so does the
    /// end of the shutdown grace period.
    ///
    /// # Errors
    /// The call's [`ToolError`]; `cancelled` when the gateway is shutting down and the call
    /// did not finish within the grace period.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        caller: &Caller,
        progress: ProgressReporter,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        self.call_cancellable(name, args, caller, progress, cancel, CallExtras::default())
            .await
    }

    /// [`call`](Self::call), with the slot where the client's reason for cancelling lands
    /// and the virtual server the call came through ([`CallExtras`]): its guardrails run on the
    /// call, and it is the scope of every call made on the call's behalf.
    pub(crate) async fn call_cancellable(
        &self,
        name: &str,
        args: Value,
        caller: &Caller,
        progress: ProgressReporter,
        cancel: CancellationToken,
        extras: CallExtras,
    ) -> Result<ToolOutput, ToolError> {
        // `tool_scopes` (the HTTP fronts refuse such calls with a 403 before they get here;
        // this covers every other way in, e.g. a virtual server's names).
        auth::check_tool_scopes(self, caller, name).map_err(auth::Refusal::into_error)?;
        // Cancelled by the client (its token is the parent), or below when the shutdown grace
        // period ends: no task per call to link the two.
        let token = cancel.child_token();
        let mut ctx = self.context(caller, progress, token.clone());
        if let Some(reason) = extras.reason {
            ctx = ctx.cancel_reason(reason);
        }
        if let Some(server) = &extras.server {
            ctx = ctx.scope(Arc::clone(server) as Arc<dyn toolgate_runtime::CallScope>);
        }
        #[cfg(feature = "console")]
        let (report, started) = {
            let report = std::sync::Arc::new(toolgate_runtime::policy::CallReport::default());
            ctx = ctx.report(std::sync::Arc::clone(&report));
            (report, std::time::Instant::now())
        };
        let (ctx, tools) = (ctx.build(), self.toolset());
        let call = async {
            match extras.server.as_ref().and_then(|s| s.guardrails()) {
                Some(guardrails) => tools.call_guarded(name, args, ctx, guardrails).await,
                None => tools.call_with(name, args, ctx).await,
            }
        };
        let result = self.run_call(token, call).await;
        #[cfg(feature = "console")]
        self.inner
            .console
            .log
            .record(caller, name, &result, started.elapsed(), &report);
        result
    }

    /// Runs `call` (one call or a batch, made with a context whose cancellation is `token`)
    /// counted in flight, so that shutdown waits for it; cancels `token` when the shutdown grace
    /// period ends, then waits for the call to end.
    pub(crate) async fn run_call<T>(
        &self,
        token: CancellationToken,
        call: impl std::future::Future<Output = T>,
    ) -> T {
        let _in_flight = InFlight::enter(&self.inner.in_flight);
        tokio::pin!(call);
        tokio::select! {
            result = &mut call => result,
            () = self.inner.calls.cancelled() => {
                token.cancel();
                call.await
            }
        }
    }

    /// The HTTP front: MCP streamable HTTP at `/mcp`, legacy SSE at `/sse` + `/message`, the
    /// REST API, `/healthz`, `/readyz`, `/openapi.json`, all behind the Host/Origin check, the
    /// API-key check and the body size limit, every response body masked of configured
    /// secrets (`redact`).
    pub fn router(&self) -> axum::Router {
        let router = axum::Router::new()
            .merge(mcp::http::router(self))
            .merge(mcp::sse::router(self))
            .merge(rest::router(self))
            .merge(servers::router(self))
            .merge(skills::router(self))
            .merge(metrics::router(self))
            .merge(auth::oauth::router(self));
        #[cfg(feature = "console")]
        let router = router.merge(console::router(self));
        security::layer(self, router).layer(axum::middleware::from_fn(redact::responses))
    }

    /// Serves [`router`](Self::router) on `listener` (HTTP/1.1) until
    /// [`shutdown`](Self::shutdown) (the CLI wires Ctrl-C and SIGTERM to it). Each connection
    /// is bounded by the header, idle and body timeouts, and at most `max_connections` are
    /// served at once (more wait to be accepted). At shutdown the listener closes (new
    /// connections are refused) and idle connections close; calls in flight get the grace
    /// period (default 10 s) to finish and are cancelled after it; open streams (SSE) end;
    /// every remote session is closed; and this returns.
    ///
    /// # Errors
    /// None so far: a failed `accept` (e.g. no file descriptor left) is logged and retried a
    /// second later. The `Result` is kept for errors a later version may report.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> Result<(), GatewayError> {
        let stop = self.inner.shutdown.clone();
        let connections = server::run(
            listener,
            self.router(),
            self.settings().connections,
            stop.clone(),
        );
        // The connections close gracefully at shutdown, but one may be streaming (SSE) or
        // waiting for a call: the calls get the grace period, then a second for their answers
        // to go out.
        let bounded = async {
            stop.cancelled().await;
            self.finish_calls().await;
            self.inner.streams.cancel();
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        tokio::select! {
            () = connections => {}
            () = bounded => {}
        }
        self.toolset().close().await;
        Ok(())
    }

    /// Starts shutting down: new requests are refused, calls in flight get the grace period.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Cancelled when [`shutdown`](Self::shutdown) is called.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// Cancels every call in flight (the end of the shutdown grace period).
    pub(crate) fn cancel_calls(&self) {
        self.inner.calls.cancel();
    }

    /// Cancelled when a shutdown has let the calls in flight finish (or cancelled them): the
    /// moment for open streams (MCP sessions, SSE) to end.
    pub fn streams_token(&self) -> CancellationToken {
        self.inner.streams.clone()
    }

    /// Waits up to the grace period for calls in flight, cancels what is left, and closes the
    /// toolset's sources (remote sessions end, child processes exit). [`serve`](Self::serve)
    /// does this itself; call it after serving stdio only.
    pub async fn drain(&self) {
        self.finish_calls().await;
        self.inner.streams.cancel();
        self.toolset().close().await;
    }

    /// Waits up to the grace period for calls in flight; then cancels them and gives them 2 s
    /// more to end.
    async fn finish_calls(&self) {
        let mut count = self.inner.in_flight.subscribe();
        let grace = self.settings().shutdown_grace;
        if tokio::time::timeout(grace, count.wait_for(|n| *n == 0))
            .await
            .is_err()
        {
            tracing::warn!(
                calls = *self.inner.in_flight.borrow(),
                grace_ms = grace.as_millis() as u64,
                "calls still running at the end of the shutdown grace period; cancelling them"
            );
            self.cancel_calls();
            let _ = tokio::time::timeout(Duration::from_secs(2), count.wait_for(|n| *n == 0)).await;
        }
    }
}
