//! The weather-agent example: a toolgate user project.
//!
//! - `src/tools.rs`: ordinary functions marked `#[toolgate::tool]`, with state and context;
//! - `tools/alerts.json` + `src/alerts.rs`: tools defined by JSON Schema, answered by one handler;
//! - `tools.yaml`: which of them form the toolset, with categories and timeouts;
//! - `build.rs`: one call to `toolgate_codegen::compile`;
//! - [`toolset`]: the generated static dispatch table, brought in with `include_toolset!`;
//! - `src/main.rs`: a tiny agent loop that replays recorded model tool calls.

pub mod alerts;
pub mod tools;

/// The toolset generated from tools.yaml.
pub mod toolset {
    toolgate::include_toolset!();
}

/// The toolset with its state, ready to call.
///
/// # Errors
/// Only if a `State<T>` were missing — which `build()` checks once, here.
pub fn build_toolset() -> Result<toolgate::Toolset, toolgate::BuildError> {
    toolset::toolset()
        .state(tools::Stations::demo())
        .state(tools::Notebook::default())
        .build()
}
