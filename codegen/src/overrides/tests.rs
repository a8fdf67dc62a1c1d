use std::path::Path;

use serde_json::json;
use toolgate_model::config::ToolsConfig;

use super::*;

fn known() -> Known {
    let mut k = Known::new();
    k.insert("read_file".into(), None);
    k.insert("calc".into(), None);
    k.insert(
        "petstore.get_pet".into(),
        Some(json!({
            "type": "object",
            "properties": {"id": {"type": "integer", "minimum": 1}, "owner": {"type": "string"}},
            "required": ["id", "owner"]
        })),
    );
    k
}

/// The errors of `overrides` (the YAML under `tools.overrides`), as `line:column: message`.
fn errors(overrides: &str) -> Vec<String> {
    let yaml = format!(
        "version: 1\ntools:\n  mcp:\n    - {{id: gh, stdio: {{command: gh-mcp}}}}\n  overrides:\n{overrides}"
    );
    let loaded = ToolsConfig::from_yaml_str(&yaml, Path::new("tools.yaml")).unwrap();
    check(&loaded, &known(), true)
        .iter()
        .map(|d| {
            let l = d.location.unwrap();
            format!("{}:{}: {}", l.line, l.column, d.message)
        })
        .collect()
}

#[test]
fn fitting_overrides_and_remote_tools_are_no_error() {
    let e = errors(
        "    petstore.get_pet: {name: pet, arguments: {owner: {value: me}, id: {default: 3}}}\n    gh.repos_get: {name: get_repo}\n    calc: {description: Adds.}\n",
    );
    assert!(e.is_empty(), "{e:?}");
}

#[test]
fn an_override_of_no_tool_fails_at_its_line() {
    let e = errors("    calc: {title: Calc}\n    nothing.here: {title: X}\n");
    assert_eq!(
        e,
        ["7:19: tools.overrides names `nothing.here`, which no source offers"]
    );
}

#[test]
fn an_argument_the_schema_lacks_fails_at_its_line() {
    let e = errors("    petstore.get_pet:\n      arguments:\n        org: {value: x}\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("8:14: override of `petstore.get_pet`: argument `org` is not a property"),
        "{e:?}"
    );
}

#[test]
fn a_fixed_value_the_schema_refuses_fails_at_its_line() {
    let e = errors("    petstore.get_pet:\n      arguments: {id: {value: 0}}\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with(
            "7:18: override of `petstore.get_pet`: a fixed value or default does not fit"
        ),
        "{e:?}"
    );
    assert!(e[0].contains("/id"), "{e:?}");
}

#[test]
fn two_tools_under_one_name_fail_at_the_second_name() {
    let e = errors("    petstore.get_pet: {name: calc}\n");
    assert_eq!(
        e,
        ["6:30: override of `petstore.get_pet`: `calc` is already the name of tool `calc`"]
    );
    // a tool renamed away frees its name
    assert!(
        errors("    petstore.get_pet: {name: calc}\n    calc: {name: calculator}\n").is_empty()
    );
}

#[test]
fn two_overrides_to_one_name_fail_when_loading() {
    let yaml = "version: 1\ntools:\n  overrides:\n    calc: {name: x}\n    read_file: {name: x}\n";
    let e = ToolsConfig::from_yaml_str(yaml, Path::new("tools.yaml")).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("tools.yaml:5:"), "{text}");
    assert!(text.contains("already exported as `x`"), "{text}");
}
