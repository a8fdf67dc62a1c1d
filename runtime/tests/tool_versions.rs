//! Tool versions against a real MCP server: runtime/tests/peers/versioned_server.py, whose
//! `greet` carries the version written in a file when the server starts (so a test bumps it
//! between two runs), `search` 2.4.0 and `wave` none.
//! `cargo test -p toolgate-runtime --test tool_versions`.

mod support;

use std::path::Path;

use serde_json::json;
use support::peers;
use toolgate_model::config::{McpServer, PolicyConfig};
use toolgate_runtime::policy::pinning::PinState;
use toolgate_runtime::remote::ToolFilter;
use toolgate_runtime::{ErrorKind, SourceState, SourceStatus, Toolset};

/// versioned_server.py as tools.yaml MCP source `ver` (its `greet` at the version written in
/// `version_file`), with `extra` merged into the entry (e.g. `require`), pinning with an
/// approvals file in `dir`; discovered.
async fn toolset(
    dir: &Path,
    version_file: &Path,
    extra: serde_json::Value,
) -> (Toolset, SourceStatus) {
    let mut entry = json!({
        "id": "ver",
        "stdio": {
            "command": peers::venv_python().display().to_string(),
            "args": [
                peers::test_peers_dir().join("versioned_server.py").display().to_string(),
                version_file.display().to_string(),
            ],
        },
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        entry[k] = v.clone();
    }
    let server: McpServer = serde_json::from_value(entry).expect("an MCP entry");
    let source = toolgate_runtime::mcp::source(&server, dir, ToolFilter::all()).expect("a source");
    let policy: PolicyConfig = serde_json::from_value(json!({
        "pinning": {"file": "approvals.json", "approve_new": true},
    }))
    .expect("policy JSON");
    let tools = Toolset::builder()
        .source(source)
        .policy(&policy)
        .config_dir(dir)
        .build()
        .expect("a toolset");
    let mut statuses = tools.discover(1).await;
    assert_eq!(statuses[0].state, SourceState::Ready, "{statuses:?}");
    (tools, statuses.remove(0))
}

fn version_of(tools: &Toolset, name: &str) -> Option<String> {
    tools
        .tools()
        .into_iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("`{name}` is not listed"))
        .version
        .clone()
}

fn listed(tools: &Toolset) -> Vec<String> {
    let mut names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_tool_whose_major_version_does_not_meet_require_is_left_out_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("version");
    std::fs::write(&file, "3.0.0").unwrap();
    let (tools, status) = toolset(dir.path(), &file, json!({"require": "^2"})).await;

    assert_eq!(
        listed(&tools),
        ["ver.search"],
        "the other tools of the source stay"
    );
    assert_eq!(version_of(&tools, "ver.search").as_deref(), Some("2.4.0"));
    assert!(
        status
            .rejected
            .contains(&"`greet`: its version 3.0.0 does not match require \"^2\"".to_string()),
        "{:?}",
        status.rejected
    );
    assert!(
        status
            .rejected
            .iter()
            .any(|r| r.starts_with("`wave`: it declares no version")),
        "{:?}",
        status.rejected
    );
    let out = tools
        .call("ver.search", json!({"query": "q"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "results for q");
    let err = tools
        .call("ver.greet", json!({"name": "a"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}

#[tokio::test]
async fn a_per_tool_require_constrains_only_that_tool() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("version");
    std::fs::write(&file, "2.9.1").unwrap();
    let (tools, status) = toolset(
        dir.path(),
        &file,
        json!({"require": {"greet": ">=2.5, <3"}}),
    )
    .await;
    assert_eq!(listed(&tools), ["ver.greet", "ver.search", "ver.wave"]);
    assert_eq!(version_of(&tools, "ver.greet").as_deref(), Some("2.9.1"));
    assert_eq!(version_of(&tools, "ver.wave"), None);
    assert!(status.rejected.is_empty(), "{:?}", status.rejected);
}

#[tokio::test]
async fn a_major_bump_of_a_pinned_tool_is_withheld_until_approved_and_a_minor_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("version");
    let withheld = |tools: &Toolset| {
        tools
            .withheld()
            .into_iter()
            .find(|w| w.name == "ver.greet")
            .map(|w| w.state)
    };

    // First run: trusted on first use, the pin records the version.
    std::fs::write(&file, "2.0.0").unwrap();
    let (first, _) = toolset(dir.path(), &file, json!({})).await;
    assert_eq!(withheld(&first), None);
    drop(first);
    let approvals = std::fs::read_to_string(dir.path().join("approvals.json")).unwrap();
    assert!(approvals.contains("@2.0.0"), "{approvals}");

    // A minor bump with the same definition: still approved and callable.
    std::fs::write(&file, "2.1.0").unwrap();
    let (minor, _) = toolset(dir.path(), &file, json!({})).await;
    assert_eq!(withheld(&minor), None);
    assert_eq!(version_of(&minor, "ver.greet").as_deref(), Some("2.1.0"));
    minor.call("ver.greet", json!({"name": "a"})).await.unwrap();
    drop(minor);

    // A MAJOR bump with the same definition: withheld, and refused, until approved.
    std::fs::write(&file, "3.0.0").unwrap();
    let (major, _) = toolset(dir.path(), &file, json!({})).await;
    assert_eq!(withheld(&major), Some(PinState::Changed));
    let err = major
        .call("ver.greet", json!({"name": "a"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("MAJOR version"), "{err}");
    assert_eq!(
        major.approve(&["ver.greet".to_string()]).await.unwrap(),
        ["ver.greet"]
    );
    assert_eq!(withheld(&major), None);
    let out = major.call("ver.greet", json!({"name": "a"})).await.unwrap();
    assert_eq!(out.text_joined(), "hello a");
    let approvals = std::fs::read_to_string(dir.path().join("approvals.json")).unwrap();
    assert!(approvals.contains("@3.0.0"), "{approvals}");
}
