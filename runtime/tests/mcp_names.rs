//! Provider-safe tool names against a real MCP server: a Python SDK server (PyPI `mcp`, from
//! `scripts/install-peers.sh`) whose tool names MCP allows but model providers do not. Its tools
//! are offered under provider-safe names, and a call under such a name reaches the tool under its
//! remote name.

mod support;

use serde_json::{Value, json};
use support::peers;
use toolgate_model::names::{exported_name, fnv1a32, validate_tool_name};
use toolgate_runtime::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate_runtime::remote::RemoteSource;
use toolgate_runtime::{Dialect, SourceState, Toolset};

/// The server's 70-character tool name (as in `odd_names_server.py`).
const LONG: &str = "analytics.generate_quarterly_revenue_breakdown_by_regions_and_products";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_tools_with_illegal_names_are_offered_under_provider_safe_names() {
    let script = peers::test_peers_dir().join("odd_names_server.py");
    let connection = McpConnection::Stdio {
        program: peers::venv_python().display().to_string(),
        args: vec![script.display().to_string()],
        env: Default::default(),
        cwd: None,
    };
    let tools = Toolset::builder()
        .source(
            RemoteSource::builder(
                "files",
                McpBackend::new("files", connection, McpOptions::default()),
            )
            .build(),
        )
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    assert_eq!(status.state, SourceState::Ready, "{status:?}");
    assert!(
        status.rejected.is_empty(),
        "nothing is left out: {:?}",
        status.rejected
    );

    // What a model is sent: the exact names, every one `^[a-zA-Z0-9_-]{1,64}$`.
    let long = format!(
        "files__{}_{:08x}",
        &LONG.replace('.', "_")[..48],
        fnv1a32(LONG)
    );
    let (exported, failed) = tools.export_available(Dialect::OpenAi);
    assert!(failed.is_empty(), "{failed:?}");
    let mut names: Vec<String> = exported
        .iter()
        .map(|t| {
            let name = t.get("name").or_else(|| t.pointer("/function/name"));
            name.and_then(Value::as_str).unwrap().to_string()
        })
        .collect();
    names.sort();
    let mut expected = vec![
        "files__admin_tools_list".to_string(),
        "files__Report_builder".to_string(),
        long.clone(),
    ];
    expected.sort();
    assert_eq!(names, expected);
    for name in &names {
        validate_tool_name(name).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(long.len(), 64, "the `files__` prefix counts toward 64");

    // Each name, exported or as the toolset names it, reaches its own remote tool.
    for (exported, remote) in [
        ("files__admin_tools_list", "admin.tools.list"),
        ("files__Report_builder", "Report builder"),
        (long.as_str(), LONG),
    ] {
        let internal = toolgate_model::names::internal_name(exported).into_owned();
        assert_eq!(exported_name(&internal), exported);
        for called in [exported, internal.as_str()] {
            let out = tools
                .call(called, json!({}))
                .await
                .unwrap_or_else(|e| panic!("{called}: {e}"));
            assert!(!out.is_error, "{called}: {out:?}");
            assert_eq!(out.text_joined(), format!("called {remote}"), "{called}");
        }
        // The remote name stays visible on the descriptor.
        let d = tools.describe(exported).unwrap();
        assert_eq!(d.annotations.title.as_deref(), Some(remote), "{exported}");
        assert!(
            d.description.contains(&format!("`{remote}`")),
            "{exported}: {}",
            d.description
        );
    }
    tools.close().await;
}
