use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn args(pairs: &[(&str, ArgumentOverride)]) -> BTreeMap<String, ArgumentOverride> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn fixed(v: Value) -> ArgumentOverride {
    ArgumentOverride {
        value: Some(v),
        ..Default::default()
    }
}

fn defaulted(v: Value) -> ArgumentOverride {
    ArgumentOverride {
        default: Some(v),
        ..Default::default()
    }
}

fn repos_get() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "repo": {"type": "string", "description": "old"},
            "per_page": {"type": "integer", "maximum": 100},
            "filter": {"$ref": "#/$defs/Filter"}
        },
        "required": ["owner", "repo", "per_page"],
        "$defs": {"Filter": {"type": "object", "properties": {"owner": {"type": "string"}}, "required": ["owner"]}}
    })
}

#[test]
fn a_hidden_argument_leaves_properties_and_required_and_defs_stay() {
    let schema = rewrite_schema(&repos_get(), &args(&[("owner", fixed(json!("my-org")))])).unwrap();
    assert_eq!(
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["repo", "per_page", "filter"]
    );
    assert_eq!(schema["required"], json!(["repo", "per_page"]));
    // a nested schema with a property of the same name is not the argument
    assert_eq!(schema["$defs"], repos_get()["$defs"]);
}

#[test]
fn a_default_is_shown_and_the_argument_is_no_longer_required() {
    let mut d = defaulted(json!(30));
    d.description = Some("Results per page.".into());
    let schema = rewrite_schema(&repos_get(), &args(&[("per_page", d)])).unwrap();
    assert_eq!(
        schema["properties"]["per_page"],
        json!({"type": "integer", "maximum": 100, "default": 30, "description": "Results per page."})
    );
    assert_eq!(schema["required"], json!(["owner", "repo"]));
}

#[test]
fn a_description_replaces_the_arguments_and_an_empty_required_goes() {
    let only =
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
    let schema = rewrite_schema(
        &only,
        &args(&[(
            "q",
            ArgumentOverride {
                description: Some("new".into()),
                default: Some(json!("x")),
                ..Default::default()
            },
        )]),
    )
    .unwrap();
    assert_eq!(schema["properties"]["q"]["description"], "new");
    assert!(schema.get("required").is_none());
}

#[test]
fn an_argument_the_schema_does_not_have_is_an_error_naming_it() {
    let e = rewrite_schema(&repos_get(), &args(&[("org", fixed(json!("x")))])).unwrap_err();
    assert_eq!(e.argument.as_deref(), Some("org"));
    assert!(e.message.contains("`org` is not a property"), "{e}");
}

#[test]
fn value_and_default_together_are_refused() {
    let mut both = fixed(json!(1));
    both.default = Some(json!(2));
    let e = rewrite_schema(&repos_get(), &args(&[("per_page", both)])).unwrap_err();
    assert!(e.message.contains("both `value` and `default`"), "{e}");
}

#[test]
fn the_values_check_keeps_defs_and_only_the_filled_arguments() {
    let (schema, instance) = values_check(
        &repos_get(),
        &args(&[
            ("owner", fixed(json!("o"))),
            ("per_page", defaulted(json!(500))),
        ]),
    )
    .unwrap();
    assert_eq!(instance, json!({"owner": "o", "per_page": 500}));
    assert_eq!(
        schema["properties"],
        json!({"owner": {"type": "string"}, "per_page": {"type": "integer", "maximum": 100}})
    );
    assert!(schema.get("required").is_none());
    assert!(schema["$defs"]["Filter"].is_object());
    assert!(values_check(&repos_get(), &BTreeMap::new()).is_none());
}

#[test]
fn filling_sets_fixed_values_and_absent_or_null_defaults() {
    let o = args(&[
        ("owner", fixed(json!("my-org"))),
        ("per_page", defaulted(json!(30))),
    ]);
    let mut a = json!({"repo": "r", "per_page": null});
    fill_arguments(&mut a, &o).unwrap();
    assert_eq!(a, json!({"repo": "r", "owner": "my-org", "per_page": 30}));
    let mut kept = json!({"per_page": 5});
    fill_arguments(&mut kept, &o).unwrap();
    assert_eq!(kept["per_page"], 5);
    let mut none = Value::Null;
    fill_arguments(&mut none, &o).unwrap();
    assert_eq!(none, json!({"owner": "my-org", "per_page": 30}));
}

#[test]
fn a_caller_sending_a_hidden_argument_is_refused() {
    let o = args(&[("owner", fixed(json!("my-org")))]);
    let mut a = json!({"owner": "someone-else"});
    let e = fill_arguments(&mut a, &o).unwrap_err();
    assert!(
        e.contains("`owner` is set by the gateway's configuration"),
        "{e}"
    );
    assert!(fill_arguments(&mut json!([1]), &o).is_err());
}

#[test]
fn the_config_schema_describes_overrides_and_accepts_the_documented_example() {
    let schema = crate::config::ToolsConfig::json_schema();
    let defs = schema["$defs"].as_object().unwrap();
    for name in ["ToolOverride", "ArgumentOverride", "AnnotationOverride"] {
        assert!(defs.contains_key(name), "no $defs/{name}");
    }
    assert!(
        schema["$defs"]["ToolsSection"]["properties"]["overrides"].is_object(),
        "{}",
        schema["$defs"]["ToolsSection"]
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let example = "version: 1\ntools:\n  overrides:\n    github.repos_get:\n      name: get_repo\n      title: Get a repository\n      description: Reads one repository of my-org.\n      annotations: {read_only_hint: true}\n      arguments:\n        owner: {value: my-org}\n        repo: {description: The repository's name.}\n        per_page: {default: 30}\n";
    let value: Value = serde_saphyr::from_str(example).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let loaded =
        crate::config::ToolsConfig::from_yaml_str(example, std::path::Path::new("t.yaml")).unwrap();
    assert_eq!(
        loaded.tools.overrides["github.repos_get"].arguments.len(),
        3
    );
    let typo: Value =
        serde_saphyr::from_str("version: 1\ntools: {overrides: {a: {nmae: b}}}").unwrap();
    assert!(!validator.is_valid(&typo));
}

#[test]
fn a_policy_keyed_by_a_renamed_tools_old_name_is_a_warning_at_its_line() {
    let yaml = "version: 1\ntools:\n  overrides:\n    github.repos_get: {name: get_repo}\n    calc: {description: Arithmetic.}\npolicy:\n  tools:\n    github.repos_get: {timeout_ms: 100}\n    get_repo: {timeout_ms: 200}\n    calc: {timeout_ms: 300}\n";
    let loaded =
        crate::config::ToolsConfig::from_yaml_str(yaml, std::path::Path::new("t.yaml")).unwrap();
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("t.yaml:8:")
            && warnings[0].contains("renames to `get_repo`")
            && warnings[0].contains("write `get_repo`"),
        "{warnings:#?}"
    );
}
