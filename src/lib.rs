//! # toolgate
//!
//! A tool gateway for LLM agents: an agent's whole action space in one place.
//!
//! Write ordinary Rust functions, mark them [`#[tool]`](macro@tool), list them in `tools.yaml`,
//! and call `toolgate_codegen::compile("tools.yaml")` from `build.rs`. The build generates typed
//! argument structs, JSON Schemas and a **static dispatch table**; a broken toolset (an unknown
//! function, two tools with one name, an illegal name, a `State<T>` nobody provides) fails
//! `cargo build` with the `tools.yaml` line. At run time, a [`Toolset`] calls any tool by name
//! with JSON arguments and returns a [`ToolOutput`] or a typed [`ToolError`], and exports every
//! tool's definition for MCP, OpenAI and Anthropic ([`Dialect`]).
//!
//! ```ignore
//! // src/tools.rs
//! /// Add two numbers.
//! #[toolgate::tool(read_only)]
//! pub fn add(/// The first addend.
//!            a: f64,
//!            /// The second addend.
//!            b: f64) -> f64 { a + b }
//!
//! // tools.yaml:   version: 1
//! //               tools: { local: [ { fn: crate::tools::add } ] }
//! // build.rs:     fn main() { toolgate_codegen::compile("tools.yaml"); }
//!
//! // src/main.rs
//! mod tools;
//! mod toolset { toolgate::include_toolset!(); }
//!
//! let tools = toolset::toolset().build()?;
//! let out = tools.call("add", serde_json::json!({"a": 1, "b": 2})).await?;
//! assert_eq!(out.structured, Some(serde_json::json!({"result": 3.0})));
//! ```
//!
//! The crate re-exports `serde`, `serde_json` and `schemars`, so code generated for your crate
//! always uses the same versions toolgate was built with.

#![warn(missing_docs)]

extern crate self as toolgate;

#[cfg(feature = "builtin")]
pub mod builtin;

#[cfg(feature = "builtin")]
pub mod skills;

#[cfg(feature = "code-mode")]
pub mod code_mode;

pub use schemars;
pub use serde;
pub use serde_json;
pub use toolgate_model as model;

pub use toolgate_runtime::{
    ArgumentError, ArgumentPolicy, ArgumentValidator, BoxFuture, BuildError, COERCIONS_META_KEY,
    Coercion, CoercionKind, Content, DeferredExport, DeferredLoading, Dialect, ErrorKind,
    ExtraArguments, Identity, JsonSchemaSource, JsonSchemaSourceBuilder, JsonSourceError,
    JsonToolCall, JsonToolHandler, NameConflict, PolicyReload, Progress, ProgressReporter,
    Provides, ResourceContents, SearchField, SearchHit, SearchOptions, SemanticSearch,
    SourceLifecycle, SourceState, SourceStatus, SourceTool, SourcesReload, State, StateMap,
    ToolAnnotations, ToolContext, ToolContextBuilder, ToolDescriptor, ToolError, ToolFuture,
    ToolKey, ToolOutput, ToolSource, ToolsWatch, Toolset, ToolsetBuilder, Validated,
    ValidationMode, ValidatorCache, testing,
};

/// The tool catalog: one [`catalog::ToolEntry`] per tool of a toolset.
pub use toolgate_runtime::catalog;

/// Tool search: BM25 over every tool's name, description, arguments and tags
/// ([`Toolset::search`]), fused with a local sentence-embedding model's ranking with the
/// `semantic` feature ([`search::semantic`]).
pub use toolgate_runtime::search;

/// OpenAPI operations as tools, called over HTTP (see [`toolgate_runtime::openapi`]).
#[cfg(feature = "openapi")]
pub use toolgate_runtime::{OpenApiHook, OpenApiSource, OpenApiSourceBuilder, OpenApiSourceError};

/// The run-time HTTP binding of OpenAPI sources (loading filters, limits).
#[cfg(feature = "openapi")]
pub use toolgate_runtime::openapi;

/// The host guard shared by `fetch`, OpenAPI sources and A2A agents.
#[cfg(any(feature = "builtin", feature = "openapi", feature = "a2a"))]
pub use toolgate_runtime::net;

/// Remote tool sources: the registry every protocol shares ([`remote::RemoteSource`]).
pub use toolgate_runtime::remote;

/// Remote MCP servers as tool sources (stdio, streamable HTTP, legacy HTTP+SSE).
#[cfg(feature = "mcp")]
pub use toolgate_runtime::mcp;

/// Remote A2A agents as tool sources (A2A 1.0 and 0.3; see `docs/a2a.md`).
#[cfg(feature = "a2a")]
pub use toolgate_runtime::a2a;

/// State shared by several gateway replicas through Redis (tools.yaml `store.redis`): rate
/// limits, budgets and notices between replicas (see `docs/deploy.md`).
#[cfg(feature = "redis")]
pub use toolgate_runtime::store;

/// The policy pipeline every call goes through (authorization, limits, breakers, retries,
/// caching, telemetry), one tower layer per stage.
pub use toolgate_runtime::policy;

/// The cancellation token of a [`ToolContext`] (re-exported from `tokio-util`, so callers can
/// pass their own to [`ToolContextBuilder::cancellation`] without depending on it).
pub use toolgate_runtime::CancellationToken;

#[doc(hidden)]
pub use toolgate_runtime::__private;

/// `toolgate serve`: the toolset as an MCP server and a REST API.
#[cfg(feature = "gateway")]
pub mod gateway;

#[cfg(feature = "rig")]
pub mod rig;

/// Turns a free function (sync or `async`) into a tool.
///
/// - The doc comment becomes the tool's description; doc comments on parameters become the
///   descriptions of the arguments.
/// - Every ordinary parameter is an argument of the input schema (JSON Schema 2020-12 from
///   schemars): `Option<T>` is optional, `#[tool(default = expr)]` (or a serde default) gives a
///   default, enums, nested `JsonSchema` structs, `Vec` and maps work. A lone parameter named
///   `args` *is* the arguments object (its struct's fields are the arguments). Unknown argument
///   keys are rejected (`additionalProperties: false`). `#[tool(rename = "x")]`, `#[serde(...)]`
///   and `#[schemars(...)]` on a parameter are applied to its field.
/// - Injected parameters never appear in the schema: `&ToolContext` (caller identity, roles,
///   deadline, cancellation, progress, nested calls) and `State<T>` (shared application state
///   given to the toolset builder; checked once when the toolset is built).
/// - Return `T: Serialize` (structured content mirrored as JSON text; the output schema comes from
///   `T` when it is `JsonSchema`, wrapped as `{"result": T}` when `T` is not an object), `String`
///   (text), `ToolOutput`, `()`, or `Result<_, E>` where `E` becomes a [`ToolError`]:
///   `ToolError`/`Into<ToolError>` as is, other errors as kind `upstream` with their message.
///
/// A sync function runs inline on the calling task, so a `timeout` cannot interrupt it; mark
/// long-running sync functions `blocking` (or make them `async`) so that timeouts and
/// cancellation take effect on time.
///
/// Options: `name = "..."`, `description = "..."`, `title = "..."`, `category = "..."`,
/// `tags = ["a", "b"]`, `version = "1.2.0"` (semver), `timeout = "30s"` (or milliseconds),
/// `dangerous`, `requires_auth`, `idempotent`, `read_only` (MCP annotations), `blocking` (run a
/// sync function on tokio's blocking pool), `extra = "strip"` (unknown argument keys are removed
/// before the call, with a warning in the log and the result's `_meta`, instead of being an
/// `invalid_arguments` error; the advertised schema still says `additionalProperties: false`).
///
/// Every call's arguments are checked against the input schema before the function runs (see
/// [`ToolsetBuilder::validate_arguments`]), and a `null` sent for an optional argument (what the
/// OpenAI strict dialect sends for "omitted") becomes its default or `None`.
///
/// Compile errors, with the span of the offending code, for: generic functions, `self`
/// receivers, borrowed or otherwise undecodable argument types, argument types that are not
/// `Deserialize + JsonSchema`, result types that are not `Serialize`, error types that become no
/// `ToolError`, duplicate argument names, names outside `^[a-zA-Z0-9_-]{1,64}$`, malformed
/// versions and timeouts (a quoted timeout needs a unit: `"30s"`, `"500ms"`), and `blocking` on an
/// `async fn`. The expected messages are pinned in `tests/ui/`.
pub use toolgate_macros::tool;

/// Includes the toolset `toolgate_codegen::compile` generated from `tools.yaml` into the current
/// module: `pub fn toolset() -> ToolsetBuilder`, `enum Tool`, `StaticTools`, `TOOLS_YAML`.
///
/// ```ignore
/// mod toolset { toolgate::include_toolset!(); }
/// ```
#[macro_export]
macro_rules! include_toolset {
    () => {
        include!(concat!(env!("OUT_DIR"), "/toolgate_toolset.rs"));
    };
}
