//! toolgate's runtime core.
//!
//! Every tool, wherever it lives (a compiled `#[tool]` function, an OpenAPI operation, a remote MCP
//! server's tool, an A2A agent's skill), is described by a [`ToolDescriptor`], reached through a
//! [`ToolSource`], and called through a [`Toolset`]. A call takes JSON arguments and a
//! [`ToolContext`] and returns a [`ToolOutput`] (the MCP content model) or a [`ToolError`] (a
//! typed kind, a message fit for a model, and the source chain for logs).
//!
//! Most users reach these types through the `toolgate` facade crate.

#![warn(missing_docs)]

#[cfg(feature = "a2a")]
pub mod a2a;
pub mod catalog;
mod context;
mod descriptor;
mod error;
mod future;
mod json_schema;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "net")]
pub mod net;
#[cfg(feature = "openapi")]
pub mod openapi;
mod output;
pub mod policy;
pub mod redact;
pub mod remote;
mod scope;
pub mod search;
mod source;
mod state;
#[cfg(feature = "redis")]
pub mod store;
#[cfg(test)]
pub(crate) mod test_server;
pub mod testing;
mod toolset;
pub mod trace_context;
mod validate;

#[doc(hidden)]
pub mod __private;

pub use context::{
    CancelReason, Identity, Progress, ProgressReporter, ToolContext, ToolContextBuilder,
};
pub use descriptor::{ToolAnnotations, ToolDescriptor};
pub use error::{ArgumentError, BuildError, ErrorKind, ToolError};
pub use future::{BoxFuture, ToolFuture};
pub use json_schema::{
    JsonSchemaSource, JsonSchemaSourceBuilder, JsonSourceError, JsonToolCall, JsonToolHandler,
};
#[cfg(feature = "openapi")]
pub use openapi::{OpenApiHook, OpenApiSource, OpenApiSourceBuilder, OpenApiSourceError};
pub use output::{Content, ResourceContents, ToolOutput};
pub use scope::CallScope;
pub use search::semantic::SemanticSearch;
pub use search::{SearchField, SearchHit, SearchOptions};
pub use source::{
    ResultSink, SourceLifecycle, SourceState, SourceStatus, SourceTool, ToolKey, ToolSource,
};
pub use state::{Provides, State, StateMap};
pub use tokio_util::sync::CancellationToken;
pub use toolgate_model::dialect::Dialect;
pub use toolset::{
    COERCIONS_META_KEY, DeferredExport, DeferredLoading, NameConflict, PolicyReload,
    RETIRED_SOURCE_GRACE, SourcesReload, ToolsWatch, Toolset, ToolsetBuilder,
};
pub use validate::{
    ArgumentPolicy, ArgumentValidator, Coercion, CoercionKind, ExtraArguments, Validated,
    ValidationMode, ValidatorCache,
};
