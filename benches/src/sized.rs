//! The synthetic toolsets of the local dispatch comparison (`benches/benches/dispatch.rs`):
//! `greet` (`name: String, times: u32` → text) and N − 1 tools of the same arguments, for N = 10,
//! 150 and 1 000 (1 000 only in release builds).
//!
//! `benches/build/sized.rs` generates each size as a module `n{N}` holding the same tools twice:
//! as `#[toolgate::tool]` functions with the static table toolgate's codegen generated from them
//! (`n{N}::toolset`), and as the `#[rmcp::tool]` methods of an rmcp server (`n{N}::RmcpServer`,
//! `#[tool_router]` and `#[tool_handler]`). The modules are compiled into the dispatch
//! benchmark only (its `mod sized`), not into this library, so that other benchmarks and the
//! library's tests do not pay their compile time; this module holds the interface they
//! implement: [`SizedToolset`] per size, visited by the generated `for_each_size` through
//! [`SizeVisitor`].

use rmcp::handler::server::router::tool::ToolRouter;

/// One generated size: its toolgate table and its rmcp server.
pub trait SizedToolset {
    /// How many tools it has.
    const TOOLS: usize;
    /// toolgate's static table of these tools (the codegen's `StaticTools`).
    type Table: toolgate::ToolSource;
    /// The rmcp server with the same tools.
    type Server: rmcp::ServerHandler;

    /// Builds toolgate's table (every descriptor built once).
    fn table() -> Self::Table;

    /// The rmcp server.
    fn server() -> Self::Server;

    /// rmcp's router of the server's tools (`#[tool_router]`'s `tool_router()`): what the
    /// default `#[tool_handler]` builds on every call.
    fn router() -> ToolRouter<Self::Server>;
}

/// Something done with each size (see [`SizedToolset`]).
pub trait SizeVisitor {
    /// Called once per size, smallest first.
    fn visit<S: SizedToolset>(&mut self);
}
