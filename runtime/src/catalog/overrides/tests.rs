//! Overrides on a toolset of stub tools: what is exported, what the source receives, what
//! fails the build.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolgate_model::config::{ToolOverride, ToolsConfig};
use toolgate_model::dialect::Dialect;

use crate::testing::StubSource;
use crate::{BuildError, ErrorKind, ToolDescriptor, ToolOutput, Toolset};

fn repos_get() -> StubSource {
    let descriptor = ToolDescriptor {
        name: "repos_get".into(),
        description: "Get a repository.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "per_page": {"type": "integer", "maximum": 100}
            },
            "required": ["owner", "repo"],
            "additionalProperties": false
        }),
        source: "local".into(),
        ..ToolDescriptor::default()
    };
    StubSource::new("local").stub_with(descriptor, |args| Ok(ToolOutput::structured(args)))
}

fn overrides(yaml: &str) -> BTreeMap<String, ToolOverride> {
    let text = format!("version: 1\ntools:\n  overrides:\n{yaml}");
    ToolsConfig::from_yaml_str(&text, std::path::Path::new("tools.yaml"))
        .unwrap()
        .config
        .tools
        .overrides
}

const GET_REPO: &str = "    repos_get:\n      name: get_repo\n      description: Reads a repository of my-org.\n      title: Get repo\n      annotations: {read_only_hint: true}\n      arguments:\n        owner: {value: my-org}\n        repo: {description: The name.}\n        per_page: {default: 30}\n";

fn toolset(stub: &StubSource, yaml: &str) -> Result<Toolset, BuildError> {
    Toolset::builder()
        .source(stub.clone())
        .tool_overrides(&overrides(yaml))
        .build()
}

#[tokio::test]
async fn the_new_name_and_schema_are_exported_and_the_source_gets_the_fixed_value() {
    let stub = repos_get();
    let tools = toolset(&stub, GET_REPO).unwrap();
    let catalog = tools.catalog();
    assert_eq!(catalog.len(), 1);
    assert!(catalog.get("repos_get").is_none(), "the old name is gone");
    let entry = catalog.get("get_repo").unwrap();
    for dialect in Dialect::ALL {
        let export = entry.export(dialect).unwrap().to_string();
        assert!(export.contains("\"get_repo\""), "{dialect:?}: {export}");
        assert!(
            export.contains("Reads a repository of my-org."),
            "{dialect:?}: {export}"
        );
        assert!(!export.contains("owner"), "{dialect:?}: {export}");
        assert!(export.contains("The name."), "{dialect:?}: {export}");
    }
    let mcp: Value = (*entry.export(Dialect::Mcp).unwrap()).clone();
    assert_eq!(mcp["annotations"]["title"], "Get repo", "{mcp}");
    assert_eq!(mcp["annotations"]["readOnlyHint"], true, "{mcp}");
    assert_eq!(
        mcp["inputSchema"]["properties"]["per_page"]["default"], 30,
        "{mcp}"
    );
    assert_eq!(mcp["inputSchema"]["required"], json!(["repo"]), "{mcp}");

    tools
        .call("get_repo", json!({"repo": "toolgate"}))
        .await
        .unwrap();
    stub.assert_called_with(
        "repos_get",
        json!({"repo": "toolgate", "owner": "my-org", "per_page": 30}),
    );
    let old = tools
        .call("repos_get", json!({"repo": "x"}))
        .await
        .unwrap_err();
    assert_eq!(old.kind(), ErrorKind::NotFound, "{old}");
}

#[tokio::test]
async fn a_hidden_argument_sent_anyway_is_refused_before_the_source() {
    let stub = repos_get();
    let tools = toolset(&stub, GET_REPO).unwrap();
    let e = tools
        .call("get_repo", json!({"repo": "r", "owner": "evil"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
    assert!(e.message().contains("`owner` is set by the gateway"), "{e}");
    assert!(stub.calls().is_empty());
}

#[test]
fn an_override_that_does_not_fit_fails_the_build() {
    let stub = repos_get();
    let cases = [
        (
            "    nothing: {title: X}\n",
            "names `nothing`, which no source offers",
        ),
        (
            "    repos_get: {arguments: {org: {value: x}}}\n",
            "argument `org` is not a property",
        ),
        (
            "    repos_get: {arguments: {per_page: {default: 500}}}\n",
            "does not fit the argument's schema: /per_page",
        ),
    ];
    for (yaml, expected) in cases {
        let e = toolset(&stub, yaml).map(|_| ()).unwrap_err();
        assert!(matches!(e, BuildError::Override { .. }), "{e}");
        assert!(e.to_string().contains(expected), "{yaml}: {e}");
    }
}

#[test]
fn two_tools_under_one_name_fail_the_build() {
    let stub = repos_get().stub("get_repo", |_| Ok(ToolOutput::text("ok")));
    let e = toolset(&stub, "    repos_get: {name: get_repo}\n")
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(e, BuildError::DuplicateTool { .. }), "{e}");
}
