//! FastMCP on the same documents: `benches/peers/scale_fastmcp.py`, one fresh interpreter per
//! size.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use toolgate_benches::harness::Samples;
use toolgate_benches::scale::Size;

/// What FastMCP measured for one size (seconds; bytes).
#[derive(Debug, Clone, Default)]
pub struct FastMcp {
    /// Tools it made.
    pub tools: usize,
    /// `from_openapi` + the first `list_tools()`.
    pub startup: Samples,
    /// `list_tools()`, warm.
    pub list: Samples,
    /// `list_tools()` + `to_mcp_tool()` + the `ListToolsResult` as JSON.
    pub body: Samples,
    /// `get_tool(name)`, per call.
    pub lookup: Samples,
    /// Resident set growth from before `from_openapi` to after the first listing.
    pub rss: f64,
    /// The `tools/list` body's size.
    pub body_bytes: f64,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The venv's Python, when `scripts/install-peers.sh` made it.
pub fn python() -> Option<PathBuf> {
    let p = repo_root().join(".peers/venv-fastmcp/bin/python");
    p.is_file().then_some(p)
}

/// Runs the script on `size`'s document with `repeats` warm listings.
pub fn run(python: &Path, size: &Size, repeats: usize) -> Result<FastMcp, String> {
    let script = repo_root().join("benches/peers/scale_fastmcp.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(size.file("openapi.json"))
        .arg(repeats.to_string())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value =
        serde_json::from_str(text.trim().lines().last().unwrap_or_default()).map_err(|e| {
            format!(
                "no result ({e}); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    if let Some(e) = v["error"].as_str() {
        return Err(e.to_string());
    }
    let samples = |k: &str| {
        Samples::new(
            v[k].as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64),
        )
    };
    Ok(FastMcp {
        tools: v["tools"].as_u64().unwrap_or(0) as usize,
        startup: Samples::new(v["startup_s"].as_f64()),
        list: samples("list_s"),
        body: samples("body_s"),
        lookup: samples("lookup_s"),
        rss: v["rss_growth_bytes"].as_f64().unwrap_or(f64::NAN),
        body_bytes: v["body_bytes"].as_f64().unwrap_or(f64::NAN),
    })
}
