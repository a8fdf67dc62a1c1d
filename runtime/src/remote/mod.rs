//! Remote tool sources: one registry, whatever the protocol.
//!
//! A [`RemoteSource`] is the [`ToolSource`] of one remote end (an MCP server today, an A2A agent
//! next). It owns what every protocol shares: lazy or start-up discovery with an "attempted"
//! record (a failing server is not contacted again on every lookup, only after a retry interval
//! or an explicit refresh), allow/deny filtering, `{id}.{tool}` naming, the status shown in
//! listings, a background task for health checks and `tools/list_changed` refreshes, and result
//! size limits. The protocol itself is a [`RemoteBackend`].
//!
//! # Names
//!
//! A remote end may name a tool anything its protocol allows (`admin.tools.list`,
//! `Report builder`, 70 characters); a model provider only takes `^[a-zA-Z0-9_-]{1,64}$`, and
//! one bad name fails the whole request. So each tool is offered under a provider-safe name,
//! [`toolgate_model::names::provider_safe`] (the rule of the OpenAPI conversion): every illegal
//! character becomes `_`, and a name too long for the 64 characters left after the exported
//! `{id}__` prefix keeps its head, then `_` and 8 hex digits of the FNV-1a 32 hash of the remote
//! name. `files` offering `admin.tools.list` gives `files.admin_tools_list` in the toolset,
//! `files__admin_tools_list` for a model; either one calls `admin.tools.list`. A renamed tool
//! keeps its remote name visible: as its title when the server gave none, and at the end of its
//! description. Allow/deny lists match the remote name or the provider-safe one.
//!
//! Two tools never share a name:
//! * a tool whose remote name is already provider-safe keeps it, whatever else is listed;
//! * renamed tools whose safe name is another tool's too (`a.b` and `a b`, or `a.b` next to
//!   `a_b`) all take the hash suffix of their own remote name (`a_b_1a2b3c4d`), so each stays
//!   callable and its name does not depend on the listing order;
//! * anything still equal after that (a name listed twice, a hash coincidence) keeps the first
//!   tool and leaves the other out, named in [`SourceStatus::rejected`] with the one it clashes
//!   with.

mod builder;
mod filter;
mod limit;
mod listing;

use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use builder::RemoteSourceBuilder;
use builder::Settings;
pub use filter::ToolFilter;
pub use limit::RESULT_URI_PREFIX;

/// The `_meta` key of a stored (cut) result naming the tool that gave it (its name at the
/// source), so that reading the result back runs that tool's result guardrails; removed
/// before the result is shown.
pub const STORED_TOOL_META_KEY: &str = "toolgate/tool";

use crate::{
    BoxFuture, ErrorKind, SourceLifecycle, SourceState, SourceStatus, SourceTool, ToolContext,
    ToolDescriptor, ToolError, ToolFuture, ToolOutput, ToolSource,
};

/// The protocol client behind a [`RemoteSource`]: lists the remote end's tools and calls them.
///
/// Implementations keep their own connection (one persistent session shared by all calls,
/// reconnected when it drops) and must end every future with a result or an error: never hang
/// past the caller's deadline, never panic.
///
/// `Any` is a supertrait so that code knowing the protocol can reach the concrete client
/// behind a source ([`RemoteSource::backend_as`]), e.g. the gateway passing an MCP server's
/// resources and prompts through.
pub trait RemoteBackend: std::any::Any + Send + Sync + 'static {
    /// The protocol's name, for listings: `mcp`, `a2a`.
    fn protocol(&self) -> &'static str;

    /// Lists the remote end's tools (connecting first if needed), named as the remote end names
    /// them; `source` is filled in by the [`RemoteSource`].
    ///
    /// # Errors
    /// `network`, `timeout` or `protocol`, naming the remote end.
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, ToolError>>;

    /// Calls tool `remote_name` (described by `tool`, whose name is the toolset's) with `args`.
    ///
    /// # Errors
    /// Whatever failed: `network` when the connection dropped, `upstream` when the tool reported
    /// an error, `protocol` for a malformed answer, `cancelled` when the context was cancelled.
    fn call<'a>(
        &'a self,
        tool: &'a ToolDescriptor,
        remote_name: &'a str,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// A health check (MCP `ping`) on the current connection; the round trip on success.
    ///
    /// # Errors
    /// Why the check failed (the backend reconnects on the next call).
    fn ping(&self) -> BoxFuture<'_, Result<Duration, ToolError>>;

    /// Closes the connection and releases its resources (child processes are asked to exit,
    /// then killed). Later calls fail.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// A counter the backend bumps whenever the remote end says its tool list changed
    /// (MCP `notifications/tools/list_changed`).
    fn changes(&self) -> watch::Receiver<u64>;

    /// The protocol version and the remote end's name, once connected.
    fn peer(&self) -> PeerInfo;
}

/// What a backend knows of the remote end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerInfo {
    /// The negotiated protocol version, e.g. `2025-06-18`.
    pub protocol_version: Option<String>,
    /// The remote end's name and version, e.g. `mcp-servers/everything 2.0.0`.
    pub server: Option<String>,
}

/// The [`ToolSource`] of one remote end: its tools as `{id}.{tool}`, discovered at start-up or
/// on first use, filtered, and called through its [`RemoteBackend`]. Cheap to clone.
#[derive(Clone)]
pub struct RemoteSource {
    inner: Arc<Inner>,
}

struct Inner {
    id: String,
    backend: Arc<dyn RemoteBackend>,
    settings: Settings,
    listing: RwLock<Listing>,
    /// Held while listing, so that concurrent lookups wait for one listing.
    discovery: tokio::sync::Mutex<()>,
    closed: CancellationToken,
    /// Whether the background task (health checks, list_changed) runs.
    watcher: Mutex<bool>,
    results: limit::ResultStore,
    /// Where cut results are kept too (the replicas' shared store), if anywhere.
    results_sink: std::sync::OnceLock<crate::ResultSink>,
    /// Bumped whenever a listing changes the offered tools.
    changed: watch::Sender<u64>,
}

/// What is known of the remote end's tools.
#[derive(Default)]
struct Listing {
    /// The tools offered, each keyed by its remote name.
    order: Vec<SourceTool>,
    listed: bool,
    hidden: usize,
    rejected: Vec<String>,
    state: Option<SourceState>,
    error: Option<String>,
    /// The last listing failed as `permission_denied` (credentials the upstream or its token
    /// endpoint refuse): waiting does not help, so callers are told so rather than `network`.
    refused: bool,
    attempted: Option<Instant>,
    discovery: Option<Duration>,
    ping: Option<Duration>,
}

impl RemoteSource {
    /// A builder for the source `id` (the prefix of its tools' names) over `backend`.
    pub fn builder(id: impl Into<String>, backend: impl RemoteBackend) -> RemoteSourceBuilder {
        RemoteSourceBuilder::new(id.into(), Arc::new(backend))
    }

    /// The protocol client behind this source.
    pub fn backend(&self) -> &Arc<dyn RemoteBackend> {
        &self.inner.backend
    }

    /// The protocol client behind this source as its concrete type (e.g. the MCP client,
    /// `toolgate_runtime::mcp::McpBackend`); `None` when it is another one.
    pub fn backend_as<T: RemoteBackend>(&self) -> Option<&T> {
        (self.inner.backend.as_ref() as &dyn std::any::Any).downcast_ref::<T>()
    }

    fn catalog(&self) -> std::sync::RwLockReadGuard<'_, Listing> {
        self.inner.listing.read().unwrap_or_else(|p| p.into_inner())
    }

    fn catalog_mut(&self) -> std::sync::RwLockWriteGuard<'_, Listing> {
        self.inner
            .listing
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Lists the tools now and replaces the catalog (or records the failure).
    async fn list(&self) -> Result<(), ToolError> {
        let id = &self.inner.id;
        if self.inner.closed.is_cancelled() {
            return Err(closed_error(id));
        }
        let started = Instant::now();
        let timeout = self.inner.settings.discovery_timeout;
        let listed = tokio::select! {
            r = tokio::time::timeout(timeout, self.inner.backend.list_tools()) => r,
            () = self.inner.closed.cancelled() => return Err(closed_error(id)),
        };
        let listed = match listed {
            Ok(r) => r,
            Err(_) => Err(ToolError::new(
                ErrorKind::Timeout,
                format!(
                    "source `{id}` did not list its tools within {} ms",
                    timeout.as_millis()
                ),
            )),
        };
        let mut catalog = self.catalog_mut();
        catalog.attempted = Some(Instant::now());
        match listed {
            Ok(tools) => {
                let before = std::mem::take(&mut catalog.order);
                self.fill(&mut catalog, tools);
                if fingerprint(&catalog.order) != fingerprint(&before) {
                    self.inner.changed.send_modify(|n| *n += 1);
                    tracing::debug!(source = %id, "the offered tools changed");
                }
                catalog.state = Some(SourceState::Ready);
                catalog.error = None;
                catalog.refused = false;
                catalog.discovery = Some(started.elapsed());
                drop(catalog);
                tracing::info!(
                    source = %id,
                    tools = self.catalog().order.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "tools listed"
                );
                self.start_watcher();
                Ok(())
            }
            Err(e) => {
                tracing::warn!(source = %id, error = %e, "cannot list tools");
                catalog.state = Some(SourceState::Failed);
                catalog.error = Some(e.message().to_string());
                catalog.refused = e.kind() == ErrorKind::PermissionDenied;
                Err(e)
            }
        }
    }

    /// Starts the background task once: health checks every `health_interval`, and a new
    /// listing whenever the backend reports a changed tool list. It stops when the source is
    /// closed or dropped.
    fn start_watcher(&self) {
        let mut started = self.inner.watcher.lock().unwrap_or_else(|p| p.into_inner());
        if *started || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        *started = true;
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let mut changes = self.inner.backend.changes();
        changes.mark_unchanged();
        let closed = self.inner.closed.clone();
        let interval = self.inner.settings.health_interval;
        tokio::spawn(async move {
            loop {
                let ping_due = async {
                    match interval {
                        Some(i) => tokio::time::sleep(i).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = closed.cancelled() => return,
                    changed = changes.changed() => {
                        if changed.is_err() { return; }
                        let Some(inner) = weak.upgrade() else { return };
                        let source = RemoteSource { inner };
                        tracing::info!(source = %source.inner.id, "tool list changed; listing again");
                        let _guard = source.inner.discovery.lock().await;
                        let _ = source.list().await;
                    }
                    () = ping_due => {
                        let Some(inner) = weak.upgrade() else { return };
                        let source = RemoteSource { inner };
                        source.health_check().await;
                    }
                }
            }
        });
    }

    async fn health_check(&self) {
        let result = tokio::time::timeout(Duration::from_secs(10), self.inner.backend.ping()).await;
        let mut catalog = self.catalog_mut();
        match result {
            Ok(Ok(rtt)) => {
                catalog.ping = Some(rtt);
                if catalog.state == Some(SourceState::Degraded) {
                    catalog.state = Some(SourceState::Ready);
                    catalog.error = None;
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(source = %self.inner.id, error = %e, "health check failed");
                catalog.ping = None;
                catalog.state = Some(SourceState::Degraded);
                catalog.error = Some(format!("health check failed: {}", e.message()));
            }
            Err(_) => {
                tracing::warn!(source = %self.inner.id, "health check got no answer within 10 s");
                catalog.ping = None;
                catalog.state = Some(SourceState::Degraded);
                catalog.error = Some("health check got no answer within 10000 ms".into());
            }
        }
    }

    /// Records the outcome of a call: a dropped connection degrades the source, a successful
    /// call after that makes it ready again.
    fn note_call(&self, result: &Result<ToolOutput, ToolError>) {
        let dropped = matches!(result, Err(e) if e.kind() == ErrorKind::Network);
        let state = self.catalog().state;
        if dropped && state == Some(SourceState::Ready) {
            let mut catalog = self.catalog_mut();
            catalog.state = Some(SourceState::Degraded);
            if let Err(e) = result {
                catalog.error = Some(e.message().to_string());
            }
        } else if result.is_ok() && state == Some(SourceState::Degraded) {
            let mut catalog = self.catalog_mut();
            catalog.state = Some(SourceState::Ready);
            catalog.error = None;
        }
    }

    /// Cuts the content an error carries (a tool's `isError` result, in its details) to the
    /// same limit as results, keeping the full one.
    fn limit_error(&self, e: ToolError, tool: &str) -> ToolError {
        let Some(details) = e.details() else {
            return e;
        };
        let Some(content) = details.get("content") else {
            return e;
        };
        let Ok(content) = serde_json::from_value::<Vec<crate::Content>>(content.clone()) else {
            return e;
        };
        let out = self.limit(ToolOutput::from_content(content), tool);
        let mut details = details.clone();
        details["content"] = serde_json::to_value(&out.content).unwrap_or_default();
        e.with_details(details)
    }

    /// Cuts a result of tool `tool` over the size limit, keeping the full one, marked with the
    /// tool's name ([`STORED_TOOL_META_KEY`]) so that reading it back runs the tool's result
    /// guardrails ([`Toolset::stored_result`](crate::Toolset::stored_result)).
    fn limit(&self, out: ToolOutput, tool: &str) -> ToolOutput {
        let Some(max) = self.inner.settings.max_result_bytes else {
            return out;
        };
        if !limit::over(&out, max) {
            return out;
        }
        let uri = self.inner.results.next_uri(&self.inner.id);
        match limit::cut(&out, max, &uri) {
            None => out,
            Some(cut) => {
                let size = limit::size_of(&out);
                let mut out = out;
                out.meta
                    .get_or_insert_with(Default::default)
                    .insert(STORED_TOOL_META_KEY.into(), Value::String(tool.into()));
                tracing::info!(source = %self.inner.id, bytes = size, %uri, "result cut to the size limit; full result stored");
                if let Some(sink) = self.inner.results_sink.get() {
                    sink(&uri, &out);
                }
                self.inner.results.put(uri, out, size);
                cut
            }
        }
    }
}

/// What a client of the toolset sees of a listing: names, descriptions, schemas.
fn fingerprint(tools: &[SourceTool]) -> Vec<(&str, &str, &Value, Option<&Value>)> {
    tools
        .iter()
        .map(|t| &t.descriptor)
        .map(|d| {
            (
                d.name.as_str(),
                d.description.as_str(),
                &d.input_schema,
                d.output_schema.as_ref(),
            )
        })
        .collect()
}

/// How long starting a connection may take: `connect_timeout`, or what is left of a call's
/// `deadline` when that is shorter (`by_call`, which the error then names). `until` is the end
/// on tokio's clock, read now: never later than a relative sleep to the same deadline armed
/// earlier (the timeout layer's), so a backend's bound at `until` fires first, or in the same
/// timer tick, and its error (naming the step that waited) is the one the caller sees.
#[cfg(any(feature = "mcp", feature = "a2a"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectBound {
    /// The time allowed, from now.
    pub(crate) limit: Duration,
    /// Whether the call's deadline, not `connect_timeout`, set it.
    pub(crate) by_call: bool,
    /// When it ends.
    pub(crate) until: tokio::time::Instant,
}

#[cfg(any(feature = "mcp", feature = "a2a"))]
impl ConnectBound {
    pub(crate) fn new(connect_timeout: Duration, deadline: Option<Instant>) -> Self {
        let now = tokio::time::Instant::now();
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let (limit, by_call) = match left {
            Some(left) if left < connect_timeout => (left, true),
            _ => (connect_timeout, false),
        };
        Self {
            limit,
            by_call,
            until: now + limit,
        }
    }
}

fn closed_error(id: &str) -> ToolError {
    ToolError::new(ErrorKind::Network, format!("source `{id}` is closed")).with_retryable(false)
}

impl ToolSource for RemoteSource {
    fn id(&self) -> &str {
        &self.inner.id
    }

    fn kind(&self) -> &str {
        self.inner.backend.protocol()
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.catalog().order.clone()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let descriptor = Arc::clone(&tool.descriptor);
        let Some(remote) = tool.key.name().cloned() else {
            return ToolFuture::err(ToolError::not_found(&descriptor.name));
        };
        ToolFuture::new(async move {
            if self.inner.closed.is_cancelled() {
                return Err(closed_error(&self.inner.id));
            }
            let call = self.inner.backend.call(&descriptor, &remote, args, &ctx);
            // Every remote call ends: with no deadline from the caller or the toolset, the
            // source's own bound applies.
            let result = match ctx.deadline() {
                Some(_) => call.await,
                None => {
                    let limit = self
                        .inner
                        .settings
                        .call_timeout
                        .unwrap_or(RemoteSourceBuilder::FALLBACK_CALL_TIMEOUT);
                    tokio::time::timeout(limit, call)
                        .await
                        .unwrap_or_else(|_| Err(ToolError::timeout(&descriptor.name, limit)))
                }
            };
            self.note_call(&result);
            result
                .map(|out| self.limit(out, &descriptor.name))
                .map_err(|e| self.limit_error(e, &descriptor.name))
        })
    }

    fn prefixed(&self) -> bool {
        self.inner.settings.prefix
    }

    fn lifecycle(&self) -> Option<&dyn SourceLifecycle> {
        Some(self)
    }
}

impl SourceLifecycle for RemoteSource {
    fn status(&self) -> SourceStatus {
        let catalog = self.catalog();
        let peer = self.inner.backend.peer();
        let state = if self.inner.closed.is_cancelled() {
            SourceState::Closed
        } else {
            catalog.state.unwrap_or(SourceState::Pending)
        };
        SourceStatus {
            id: self.inner.id.clone(),
            kind: self.inner.backend.protocol().to_string(),
            state,
            tools: catalog.order.len(),
            hidden: catalog.hidden,
            rejected: catalog.rejected.clone(),
            error: catalog.error.clone(),
            discovery_ms: catalog.discovery.map(|d| d.as_millis() as u64),
            protocol: peer
                .protocol_version
                .map(|v| format!("{} {v}", self.inner.backend.protocol())),
            server: peer.server,
            ping_ms: catalog.ping.map(|d| d.as_millis() as u64),
            lazy: false,
        }
    }

    fn discover(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            let fresh_failure = |c: &Listing| {
                (!c.listed
                    && c.attempted
                        .is_some_and(|t| t.elapsed() < self.inner.settings.retry_interval))
                .then(|| (c.error.clone().unwrap_or_default(), c.refused))
            };
            let unavailable = |(error, refused): (String, bool)| {
                let kind = if refused {
                    ErrorKind::PermissionDenied
                } else {
                    ErrorKind::Network
                };
                ToolError::new(
                    kind,
                    format!(
                        "source `{}` is unavailable (its last listing failed: {error}); retried after {} ms or on refresh",
                        self.inner.id,
                        self.inner.settings.retry_interval.as_millis()
                    ),
                )
            };
            {
                let c = self.catalog();
                if c.listed {
                    return Ok(());
                }
                if let Some(error) = fresh_failure(&c) {
                    return Err(unavailable(error));
                }
            }
            let _guard = self.inner.discovery.lock().await;
            // Someone else may have listed (or failed) while this one waited.
            {
                let c = self.catalog();
                if c.listed {
                    return Ok(());
                }
                if let Some(error) = fresh_failure(&c) {
                    return Err(unavailable(error));
                }
            }
            self.list().await
        })
    }

    fn refresh(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            let _guard = self.inner.discovery.lock().await;
            self.list().await
        })
    }

    fn discover_at_startup(&self) -> bool {
        !self.inner.settings.lazy
    }

    fn call_timeout(&self) -> Option<Duration> {
        self.inner.settings.call_timeout
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.inner.closed.cancel();
            self.inner.backend.close().await;
        })
    }

    fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        self.inner.results.get(uri)
    }

    fn keep_results_in(&self, sink: crate::ResultSink) {
        let _ = self.inner.results_sink.set(sink);
    }

    fn tool_changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.changed.subscribe())
    }

    fn remote_changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.backend.changes())
    }
}

impl std::fmt::Debug for RemoteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSource")
            .field("id", &self.inner.id)
            .field("protocol", &self.inner.backend.protocol())
            .field("settings", &self.inner.settings)
            .finish()
    }
}

#[cfg(test)]
mod tests;
