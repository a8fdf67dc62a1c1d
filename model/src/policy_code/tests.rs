use serde_json::json;

use super::*;

#[cfg(any(feature = "rego", feature = "cel"))]
fn input(roles: &[&str], tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({
        "caller": {"id": "k", "roles": roles, "claims": {}},
        "tool": {"name": tool, "source": "local", "category": null, "tags": [], "annotations": {}},
        "arguments": arguments,
    })
}

#[cfg(feature = "rego")]
#[test]
fn a_rego_policy_allows_denies_and_gives_its_messages() {
    let text = r#"package toolgate
import rego.v1
default allow := false
allow if "admin" in input.caller.roles
deny contains msg if {
    endswith(url_host(input.arguments.url), ".internal")
    msg := sprintf("no fetching from %s", [url_host(input.arguments.url)])
}
"#;
    let rule = CompiledCode::compile(
        Language::Rego,
        text,
        "p.rego",
        Some("admins only".into()),
        DEFAULT_TIME_LIMIT,
    )
    .unwrap();
    assert!(rule.needs_arguments());
    let d = |roles: &[&str], args| rule.decide(&input(roles, "fetch", args)).unwrap();
    assert_eq!(
        d(&["admin"], json!({"url": "https://example.com"})),
        Decision::Allow
    );
    assert_eq!(
        d(&["reader"], json!({"url": "https://example.com"})),
        Decision::Deny(Some("admins only".into()))
    );
    assert_eq!(
        d(&["admin"], json!({"url": "https://DB.corp.Internal./x"})),
        Decision::Deny(Some("no fetching from db.corp.internal".into()))
    );
}

#[cfg(feature = "rego")]
#[test]
fn a_rego_syntax_error_names_its_line_and_column() {
    let text = "package toolgate\n\nallow if {\n  input.caller.roles[_] == \n}\n";
    let e = CompiledCode::compile(Language::Rego, text, "p.rego", None, DEFAULT_TIME_LIMIT)
        .unwrap_err();
    assert_eq!(e.location.map(|l| l.line), Some(5), "{e:?}");
    let e = CompiledCode::compile(
        Language::Rego,
        "package x\nfoo := 1\n",
        "p.rego",
        None,
        DEFAULT_TIME_LIMIT,
    )
    .unwrap_err();
    assert!(e.message.contains("neither `allow` nor `deny`"), "{e:?}");
}

#[cfg(feature = "rego")]
#[test]
fn a_runaway_rego_policy_is_stopped_by_its_time_limit() {
    let text = "package toolgate\nimport rego.v1\nr := numbers.range(1, 100000)\nallow if count([x | some x in r; some y in r; x < y]) > 0\n";
    let rule = CompiledCode::compile(
        Language::Rego,
        text,
        "p.rego",
        None,
        std::time::Duration::from_millis(50),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let e = rule.decide(&input(&[], "x", json!({}))).unwrap_err();
    assert!(e.contains("could not decide"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[cfg(feature = "cel")]
#[test]
fn a_cel_expression_allows_refuses_and_reads_hosts() {
    let rule = CompiledCode::compile(
        Language::Cel,
        "!(tool.name == 'fetch' && has(arguments.url) && url_host(arguments.url).endsWith('.internal'))",
        "e",
        Some("no internal hosts".into()),
        DEFAULT_TIME_LIMIT,
    )
    .unwrap();
    assert!(rule.needs_arguments());
    assert_eq!(
        rule.decide(&input(&[], "fetch", json!({"url": "https://a.internal/"})))
            .unwrap(),
        Decision::Deny(Some("no internal hosts".into()))
    );
    assert_eq!(
        rule.decide(&input(&[], "fetch", json!({"url": "https://a.example/"})))
            .unwrap(),
        Decision::Allow
    );
    let roles = CompiledCode::compile(
        Language::Cel,
        "'admin' in caller.roles",
        "e",
        None,
        DEFAULT_TIME_LIMIT,
    )
    .unwrap();
    assert!(!roles.needs_arguments());
    let e = CompiledCode::compile(
        Language::Cel,
        "caller.roles.exists(r,\n r == )",
        "e",
        None,
        DEFAULT_TIME_LIMIT,
    )
    .unwrap_err();
    assert_eq!(e.location.map(|l| l.line), Some(2), "{e:?}");
    let not_bool =
        CompiledCode::compile(Language::Cel, "caller.id", "e", None, DEFAULT_TIME_LIMIT).unwrap();
    assert!(
        not_bool
            .decide(&input(&[], "x", json!({})))
            .unwrap_err()
            .contains("not a boolean")
    );
}

#[test]
fn naming_the_arguments_is_read_outside_comments() {
    assert!(names_arguments("x := input.arguments.url", '#'));
    assert!(names_arguments(r#"x := input["arguments"]"#, '#'));
    assert!(!names_arguments("allow if true # not the arguments", '#'));
    assert!(!names_arguments("x := input.my_arguments", '#'));
}
