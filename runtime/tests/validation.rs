//! Argument validation wired into `Toolset::run`: opt-in with
//! `ToolsetBuilder::validate_arguments(true)`, off by default.

use serde_json::{Value, json};
use toolgate_runtime::testing::StubSource;
use toolgate_runtime::{ErrorKind, ToolDescriptor, ToolOutput, Toolset, ValidationMode};

fn stubs() -> StubSource {
    let descriptor = ToolDescriptor {
        name: "search".into(),
        description: "search".into(),
        input_schema: json!({"type": "object",
                             "properties": {"limit": {"type": "integer", "minimum": 1},
                                            "exact": {"type": "boolean"}},
                             "required": ["limit"], "additionalProperties": false}),
        source: "stubs".into(),
        ..ToolDescriptor::default()
    };
    StubSource::new("stubs").stub_with(descriptor, |args: Value| {
        Ok(ToolOutput::text(args.to_string()))
    })
}

#[tokio::test]
async fn off_by_default() {
    let stubs = stubs();
    let tools = Toolset::builder().source(stubs.clone()).build().unwrap();
    let out = tools.call("search", json!({"limit": "x"})).await.unwrap();
    assert_eq!(out.text_joined(), r#"{"limit":"x"}"#);
}

#[tokio::test]
async fn strict_rejects_before_the_tool_runs() {
    let stubs = stubs();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .build()
        .unwrap();
    let err = tools
        .call("search", json!({"limit": 0, "id": 3}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let pointers: Vec<String> = err
        .argument_errors()
        .into_iter()
        .map(|e| e.pointer)
        .collect();
    assert_eq!(pointers, vec!["".to_string(), "/limit".to_string()]);
    stubs.assert_not_called("search");
    tools.call("search", json!({"limit": 2})).await.unwrap();
    assert_eq!(stubs.calls().len(), 1);
}

#[tokio::test]
async fn lenient_forwards_the_coerced_copy() {
    let stubs = stubs();
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .validation_mode(ValidationMode::Lenient)
        .build()
        .unwrap();
    tools
        .call("search", json!({"limit": "5", "exact": "true"}))
        .await
        .unwrap();
    stubs.assert_called_with("search", json!({"limit": 5, "exact": true}));
    let err = tools
        .call("search", json!({"limit": "0"}))
        .await
        .unwrap_err();
    assert!(
        err.message().ends_with("/limit: 0 is less than minimum 1"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn lenient_for_one_tool_only() {
    let stubs = stubs().stub("other", |args: Value| {
        Ok(ToolOutput::text(args.to_string()))
    });
    let tools = Toolset::builder()
        .source(stubs.clone())
        .validate_arguments(true)
        .validation_mode_for("search", ValidationMode::Lenient)
        .build()
        .unwrap();
    tools.call("search", json!({"limit": "5"})).await.unwrap();
    stubs.assert_called_with("search", json!({"limit": 5}));
    // The stub's schema takes any object: nothing to coerce, nothing rejected.
    tools.call("other", json!({"x": "1"})).await.unwrap();
    stubs.assert_called_with("other", json!({"x": "1"}));
}

#[tokio::test]
async fn strict_by_default_when_on() {
    let tools = Toolset::builder()
        .source(stubs())
        .validate_arguments(true)
        .build()
        .unwrap();
    let err = tools
        .call("search", json!({"limit": "5"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "invalid arguments for tool `search`: /limit: expected integer, got string \"5\""
    );
}

#[test]
fn check_arguments_reports_coercions_without_calling() {
    let stubs = stubs();
    let tools = Toolset::builder().source(stubs.clone()).build().unwrap();
    let checked = tools
        .check_arguments("search", json!({"limit": "5"}), ValidationMode::Lenient)
        .unwrap();
    assert_eq!(checked.args, json!({"limit": 5}));
    assert_eq!(checked.coercions.len(), 1);
    assert_eq!(checked.coercions[0].pointer, "/limit");
    let err = tools
        .check_arguments("search", json!({"limit": "5"}), ValidationMode::Strict)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let err = tools
        .check_arguments("nope", json!({}), ValidationMode::Strict)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    stubs.assert_not_called("search");
}
