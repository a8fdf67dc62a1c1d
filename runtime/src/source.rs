//! [`ToolSource`]: where tools come from.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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
pub trait ToolSource: Send + Sync + 'static {
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
}

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
}
