//! [`ToolSource`]: where tools come from.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolContext, ToolDescriptor, ToolError, ToolOutput};

/// A boxed, `Send` future: what [`ToolSource::call`] returns (one allocation per call).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A provider of tools: the compiled static table, a remote MCP server, an A2A agent, an OpenAPI
/// document — or your own (a registry, a filtering or caching wrapper, a fake for tests).
///
/// A [`Toolset`](crate::Toolset) asks its sources, in the order they were added, which one has a
/// tool of a given name, then calls it there. Implementations must not panic; every failure is a
/// [`ToolError`].
pub trait ToolSource: std::any::Any + Send + Sync + 'static {
    /// A short id, unique within a toolset (`local` for the compiled tools; the configured id for
    /// remote sources, which prefixes their tools' names).
    fn id(&self) -> &str;

    /// Every tool this source offers now.
    fn tools(&self) -> Vec<Arc<ToolDescriptor>>;

    /// The tool called `name`, if this source offers it. The default scans [`tools`](Self::tools);
    /// implementations with an index should override it.
    fn descriptor(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.tools().into_iter().find(|d| d.name == name)
    }

    /// Calls the tool `name` with `args` (a JSON object; `null` means no arguments).
    ///
    /// Arguments are checked by the source against the tool's input schema; a mismatch is
    /// [`ErrorKind::InvalidArguments`](crate::ErrorKind::InvalidArguments) naming each argument
    /// path. An unknown name is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// What kind of source this is: `local`, `json_schema`, `mcp`, `a2a`, ... (for listings).
    fn kind(&self) -> &str {
        "local"
    }

    /// Where the source stands: ready, not contacted yet, failed (with the error), closed.
    /// The default: ready, with [`tools`](Self::tools) counted.
    fn status(&self) -> SourceStatus {
        SourceStatus::ready(self.id(), self.kind(), self.tools().len())
    }

    /// Makes sure the source's tool list is known: a remote source that was never listed, or
    /// whose last attempt failed longer ago than its retry interval, is contacted now. Cheap
    /// when there is nothing to do. The default does nothing.
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

    /// Releases what the source holds: sessions, child processes, background tasks. Later calls
    /// fail. The default does nothing.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// A result kept in full by this source after it was cut to fit a size limit, by the URI
    /// given in the cut result (`toolgate://results/...`). The default keeps none.
    fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        let _ = uri;
        None
    }

    /// Whether the source's tools are named `{id}.{tool}` (the default). A source mounted
    /// without prefix offers tools under their own names; for such a source, a lookup of an
    /// unknown name without a known prefix makes it [discover](Self::discover) its tools.
    fn prefixed(&self) -> bool {
        true
    }

    /// A counter the source bumps whenever the tools it offers change (a remote end listed
    /// again with different tools); `None` (the default) for a source whose tools never
    /// change. [`Toolset::watch_tools`](crate::Toolset::watch_tools) merges them.
    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// The state of a [`ToolSource`], as [`ToolSource::status`] reports it.
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
    /// Closed by [`ToolSource::close`].
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
        }
    }
}

// Every method must be forwarded: `source.method()` on an `Arc<dyn ToolSource>` resolves to
// this impl, whose defaults would silently answer for the source inside.
impl<S: ToolSource + ?Sized> ToolSource for Arc<S> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn tools(&self) -> Vec<Arc<ToolDescriptor>> {
        (**self).tools()
    }
    fn descriptor(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        (**self).descriptor(name)
    }
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (**self).call(name, args, ctx)
    }
    fn kind(&self) -> &str {
        (**self).kind()
    }
    fn status(&self) -> SourceStatus {
        (**self).status()
    }
    fn discover(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        (**self).discover()
    }
    fn refresh(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        (**self).refresh()
    }
    fn discover_at_startup(&self) -> bool {
        (**self).discover_at_startup()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
    fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        (**self).stored_result(uri)
    }
    fn prefixed(&self) -> bool {
        (**self).prefixed()
    }
    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        (**self).tool_changes()
    }
}
