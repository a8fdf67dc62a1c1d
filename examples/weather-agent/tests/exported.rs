//! Pins what the example offers a model: its tool names and every tool's MCP definition
//! (`tools/list`), as exported from the real generated toolset.
//!
//! After an intended change of a tool, its doc comments or tools.yaml, review the snapshots with
//! `cargo insta review` (or `INSTA_UPDATE=always`) and commit them.

use toolgate::Dialect;

#[test]
fn exported_tool_names() {
    let tools = weather_agent::build_toolset().unwrap();
    let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
    insta::assert_json_snapshot!("tool_names", names);
}

#[test]
fn exported_mcp_definitions() {
    let tools = weather_agent::build_toolset().unwrap();
    let mcp = tools.export(Dialect::Mcp).unwrap();
    insta::assert_json_snapshot!("mcp_tools", mcp);
}
