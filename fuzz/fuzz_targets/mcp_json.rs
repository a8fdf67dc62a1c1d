//! An editor's `mcpServers` JSON (Claude Desktop, Cursor, VS Code's `servers`, JSONC): the
//! reader and its diagnostics; what it reads, written as tools.yaml by `toolgate import-mcp`,
//! must load again and give the same servers.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use toolgate_model::config::{
    ConfigError, DisplayAll, ToolsConfig, is_mcp_json, parse_mcp_json, to_tools_yaml,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = is_mcp_json(text);
    let path = Path::new("/work/project/.vscode/mcp.json");
    match parse_mcp_json(text, path) {
        Ok(read) => {
            let _ = DisplayAll(&read.warnings).to_string();
            let yaml = to_tools_yaml(&read.servers, path);
            let loaded = ToolsConfig::from_yaml_str(&yaml, Path::new("tools.yaml"))
                .unwrap_or_else(|e| panic!("the generated tools.yaml does not load: {e}\n{yaml}"));
            assert_eq!(
                loaded.config.tools.mcp, read.servers,
                "the generated tools.yaml gives other servers:\n{yaml}"
            );
        }
        Err(ConfigError::Invalid(diagnostics)) => {
            assert!(
                !diagnostics.is_empty(),
                "an invalid file with no diagnostic"
            );
            let _ = DisplayAll(&diagnostics).to_string();
        }
        Err(other) => panic!("parsing text gave a non-parse error: {other}"),
    }
});
