//! [`ToolSource`]: where tools come from.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BoxFuture, ToolContext, ToolDescriptor, ToolError, ToolFuture, ToolOutput};

/// A provider of tools: the compiled static table, a remote MCP server, an A2A agent, an OpenAPI
/// document — or your own (a registry, a filtering or caching wrapper, a fake for tests).
///
/// A source says what it offers ([`tools`](Self::tools)) and runs calls
/// ([`call`](Self::call)); what a remote source also does — connect, list again, report its
/// health, close — is its [`SourceLifecycle`], reached through [`lifecycle`](Self::lifecycle).
/// A [`Toolset`](crate::Toolset) puts every source's tools into one catalog (one entry per tool,
/// rebuilt when a source's [`tool_changes`](SourceLifecycle::tool_changes) counter moves), looks
/// a name up there once per call, runs the tool's policy layers (argument validation among them)
/// and only then calls the source, with the [`SourceTool`] it listed.
///
/// Implementations must not panic (a panic is caught and becomes an `internal` error); every
/// failure is a [`ToolError`].
pub trait ToolSource: Send + Sync + 'static {
    /// A short id, unique within a toolset (`local` for the compiled tools; the configured id for
    /// remote sources, which prefixes their tools' names).
    fn id(&self) -> &str;

    /// What kind of source this is: `local`, `json_schema`, `openapi`, `mcp`, `a2a`, ... (for
    /// listings, and to tell remote tools, which [pinning](crate::policy::pinning) covers).
    fn kind(&self) -> &str {
        "local"
    }

    /// Every tool this source offers now, each with the [`ToolKey`] the source wants back when
    /// it is called. Asked when the toolset is built and whenever the source's tools change,
    /// never per call.
    fn tools(&self) -> Vec<SourceTool>;

    /// Runs one call of `tool` (one of [`tools`](Self::tools), maybe from an earlier listing)
    /// with `args` (already checked against the tool's input schema unless the toolset turned
    /// validation off; `null` means no arguments). The source owns what the call needs (`self`
    /// is shared, `ctx` is given), so the future borrows nothing: a synchronous tool returns
    /// [`ToolFuture::ready`] and costs no allocation.
    ///
    /// # Errors
    /// Whatever the tool fails with; `not_found` for a tool the source no longer offers.
    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static>;

    /// Whether the source's tools are named `{id}.{tool}` (the default). A source mounted
    /// without prefix offers tools under their own names; for such a source, a lookup of an
    /// unknown name without a known prefix makes it [discover](SourceLifecycle::discover) its
    /// tools.
    fn prefixed(&self) -> bool {
        true
    }

    /// The source's lifecycle and health, for a source that has one (remote sources, run-time
    /// loaded documents); `None` (the default) for a source that is always ready and whose tools
    /// never change.
    fn lifecycle(&self) -> Option<&dyn SourceLifecycle> {
        None
    }
}

/// Where a source also keeps the full results it cut ([`SourceLifecycle::keep_results_in`]):
/// called with the `toolgate://results/...` URI and the full result, on the call's task; it
/// must not block (the toolset's sink starts a task of its own for the write).
pub type ResultSink = std::sync::Arc<dyn Fn(&str, &ToolOutput) + Send + Sync>;

/// What a source that lives outside the process (or is loaded late) does besides listing and
/// calling: it is contacted, listed again, health-checked and closed. Every method has a
/// default for a source with nothing to do.
pub trait SourceLifecycle: Send + Sync {
    /// Where the source stands: ready, not contacted yet, failed (with the error), closed.
    fn status(&self) -> SourceStatus;

    /// Makes sure the source's tool list is known: a remote source that was never listed, or
    /// whose last attempt failed longer ago than its retry interval, is contacted now. Cheap
    /// when there is nothing to do.
    ///
    /// # Errors
    /// Why the tools could not be listed (`network`, `timeout`, `protocol`), naming the source.
    fn discover(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async { Ok(()) })
    }

    /// Lists the tools again now, whatever the last attempt gave (an explicit refresh).
    ///
    /// # Errors
    /// As [`discover`](Self::discover).
    fn refresh(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        self.discover()
    }

    /// Whether [`Toolset::discover`](crate::Toolset::discover) should contact the source at
    /// start-up (`false` for sources configured `lazy`, which are contacted on first use of
    /// their `{id}.` prefix).
    fn discover_at_startup(&self) -> bool {
        true
    }

    /// The timeout the source gives each call of its tools, if it sets one (a remote
    /// source's `timeout_ms`). A call to one of its tools that first has to wait for the
    /// source's listing is bounded by it (when the policy names no timeout for the tool), so
    /// that a source that hangs while listing does not hold the call longer. Default `None`.
    fn call_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Releases what the source holds: sessions, child processes, background tasks. Later calls
    /// fail.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// A result kept in full by this source after it was cut to fit a size limit, by the URI
    /// given in the cut result (`toolgate://results/...`). The default keeps none.
    fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        let _ = uri;
        None
    }

    /// Gives the source a second place for the full results it cuts: `sink` is called with
    /// each one's URI and result, besides the source's own store (the toolset passes one that
    /// writes to the replicas' shared store). Called at most once, when the toolset is built.
    /// The default ignores it (a source that cuts nothing).
    fn keep_results_in(&self, sink: ResultSink) {
        let _ = sink;
    }

    /// A counter the source bumps whenever the tools it offers change (a remote end listed
    /// again with different tools, a lazy source's first listing); `None` (the default) for a
    /// source whose tools never change. The toolset rebuilds its catalog when one moves, and
    /// [`Toolset::watch_tools`](crate::Toolset::watch_tools) merges them.
    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// A counter the source bumps whenever the remote end itself says its tools changed (MCP
    /// `notifications/tools/list_changed` on this process's session), before any listing;
    /// `None` (the default) for a source without such notices. Replicas sharing a
    /// [store](crate::store) pass it on to each other, since the remote end tells only the
    /// session it holds with one of them.
    fn remote_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// One tool as its source lists it: the descriptor, and the source's own handle for it.
#[derive(Debug, Clone)]
pub struct SourceTool {
    /// What the tool is.
    pub descriptor: Arc<ToolDescriptor>,
    /// What the source needs to find the tool again when it is called (so that a call costs
    /// the source no second lookup by name).
    pub key: ToolKey,
}

impl SourceTool {
    /// A tool the source finds by its position in a list that never changes (the static table,
    /// a document's operations).
    pub fn indexed(descriptor: Arc<ToolDescriptor>, index: usize) -> Self {
        Self {
            descriptor,
            key: ToolKey::Index(u32::try_from(index).unwrap_or(u32::MAX)),
        }
    }

    /// A tool the source finds by a name of its own (a remote tool's name on its server).
    pub fn named(descriptor: Arc<ToolDescriptor>, name: impl Into<Arc<str>>) -> Self {
        Self {
            descriptor,
            key: ToolKey::Name(name.into()),
        }
    }

    /// The tool's name inside the toolset.
    pub fn name(&self) -> &str {
        &self.descriptor.name
    }
}

/// A source's handle for one of its tools (see [`SourceTool`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolKey {
    /// A position in a list that never changes.
    Index(u32),
    /// A name of the source's own (for a remote tool: its name on the server, which may differ
    /// from the toolset's `{id}.{tool}`).
    Name(Arc<str>),
}

impl ToolKey {
    /// The position, for an [`Index`](Self::Index) key.
    pub fn index(&self) -> Option<usize> {
        match self {
            Self::Index(i) => Some(*i as usize),
            Self::Name(_) => None,
        }
    }

    /// The name, for a [`Name`](Self::Name) key.
    pub fn name(&self) -> Option<&Arc<str>> {
        match self {
            Self::Name(n) => Some(n),
            Self::Index(_) => None,
        }
    }
}

/// The state of a [`ToolSource`], as [`SourceLifecycle::status`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    /// Not contacted yet (a lazy remote source before first use).
    Pending,
    /// Its tools are known and callable.
    Ready,
    /// Its tools are known, but the last health check or call found the connection down; the
    /// next call reconnects.
    Degraded,
    /// The last attempt to list its tools failed (see the error); retried later or on refresh.
    Failed,
    /// Closed by [`SourceLifecycle::close`].
    Closed,
}

/// A source's status: state, tool count, last error, and what is known of the remote end.
///
/// Serialized (for `toolgate discover --json` and the REST API) with snake_case keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceStatus {
    /// The source id.
    pub id: String,
    /// The kind of source (`local`, `mcp`, ...).
    pub kind: String,
    /// Where it stands.
    pub state: SourceState,
    /// How many tools it offers now (after allow/deny filtering).
    pub tools: usize,
    /// How many tools the remote end listed that allow/deny lists hide.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden: usize,
    /// Tools the remote end listed that cannot be offered, each with the reason (a name no
    /// provider accepts, an input schema that is not a valid object schema).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
    /// The last error (listing, health check), if the source is not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the last successful listing took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_ms: Option<u64>,
    /// The protocol and version spoken with the remote end (`mcp 2025-06-18`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The remote end's name and version, as it introduced itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The round trip of the last successful health check (`ping`), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_ms: Option<u64>,
    /// Configured `lazy`: contacted on first use of one of its tools, not at start-up. With
    /// state `pending`, it has not been contacted yet. Left out when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lazy: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl SourceStatus {
    /// A ready source with `tools` tools and nothing else known.
    pub fn ready(id: &str, kind: &str, tools: usize) -> Self {
        Self {
            id: id.to_string(),
            kind: kind.to_string(),
            state: SourceState::Ready,
            tools,
            hidden: 0,
            rejected: Vec::new(),
            error: None,
            discovery_ms: None,
            protocol: None,
            server: None,
            ping_ms: None,
            lazy: false,
        }
    }
}
