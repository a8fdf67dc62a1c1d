use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::{ErrorKind, ToolDescriptor};

fn c34_schema() -> Value {
    json!({"type": "object",
           "properties": {"limit": {"type": "integer", "minimum": 1},
                          "exact": {"type": "boolean"},
                          "ratio": {"type": "number"}},
           "required": ["limit"], "additionalProperties": false})
}

fn archive_schema() -> Value {
    json!({"type": "object",
           "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
           "required": ["name", "reason"], "additionalProperties": false})
}

fn pointers(e: &ToolError) -> Vec<(String, String)> {
    e.argument_errors()
        .into_iter()
        .map(|a| (a.pointer, a.message))
        .collect()
}

fn descriptor(name: &str, schema: Value) -> Arc<ToolDescriptor> {
    Arc::new(ToolDescriptor {
        name: name.to_string(),
        input_schema: schema,
        source: "test".to_string(),
        ..ToolDescriptor::default()
    })
}

#[test]
fn valid_arguments_pass() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    v.validate("search", &json!({"limit": 5, "exact": true, "ratio": 0.5}))
        .unwrap();
    assert!(v.is_valid(&json!({"limit": 1})));
}

#[test]
fn every_violation_is_listed_with_its_pointer() {
    let schema = json!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "query": {"type": "string", "minLength": 2},
            "mode": {"enum": ["fast", "exact"]},
            "filter": {"type": "object",
                       "properties": {"year": {"type": "integer"}},
                       "required": ["year"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["query", "limit"]
    });
    let v = ArgumentValidator::compile("search", &schema).unwrap();
    let err = v
        .validate(
            "search",
            &json!({"limit": 0, "query": "a", "mode": "slow",
                    "filter": {"year": "2020"}, "tags": ["ok", 3]}),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    let got = pointers(&err);
    assert_eq!(
        got,
        vec![
            (
                "/filter/year".into(),
                "expected integer, got string \"2020\"".into()
            ),
            ("/limit".into(), "0 is less than minimum 1".into()),
            (
                "/mode".into(),
                "\"slow\" is not one of \"fast\", \"exact\"".into()
            ),
            (
                "/query".into(),
                "\"a\" is shorter than 2 character(s)".into()
            ),
            ("/tags/1".into(), "expected string, got number 3".into()),
        ]
    );
    // The message lists each one too, with its pointer.
    for (pointer, message) in &got {
        assert!(
            err.message().contains(&format!("{pointer}: {message}")),
            "{}",
            err.message()
        );
    }
}

#[test]
fn missing_required_points_at_the_key() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let err = v.validate("search", &json!({})).unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![("/limit".to_string(), "required but missing".to_string())]
    );
    // `null` reads as no arguments.
    let err = v.validate("search", &Value::Null).unwrap_err();
    assert_eq!(pointers(&err)[0].0, "/limit");
}

#[test]
fn details_carry_the_pointers() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let err = v.validate("search", &json!({"limit": 0})).unwrap_err();
    let details = err.details().unwrap();
    assert_eq!(details["tool"], "search");
    assert_eq!(
        details["errors"],
        json!([{"pointer": "/limit", "message": "0 is less than minimum 1"}])
    );
    let wire = serde_json::to_value(&err).unwrap();
    assert_eq!(wire["kind"], "invalid_arguments");
    assert_eq!(wire["details"]["errors"][0]["pointer"], "/limit");
}

/// One combined message naming the unknown and the allowed keys, at the object's pointer.
#[test]
fn c37_unknown_arguments() {
    let v = ArgumentValidator::compile("archive", &archive_schema()).unwrap();
    let err = v
        .validate(
            "archive",
            &json!({"name": "n1", "reason": "old", "id": "n1", "force": true}),
        )
        .unwrap_err();
    // serde_json (without `preserve_order`) keeps object keys sorted, so the unknown keys are
    // listed in key order, not in the order the model sent them.
    assert_eq!(
        pointers(&err),
        vec![(
            String::new(),
            "unknown argument(s) 'id', 'force' for tool archive; allowed: name, reason".to_string()
        )]
    );
    assert_eq!(
        err.message(),
        "invalid arguments for tool `archive`: unknown argument(s) 'id', 'force' for tool archive; allowed: name, reason"
    );
}

#[test]
fn unknown_keys_in_nested_objects_and_through_refs() {
    let schema = json!({
        "type": "object",
        "properties": {"filter": {"$ref": "#/$defs/Filter"}},
        "$defs": {"Filter": {"type": "object",
                             "properties": {"year": {"type": "integer"}},
                             "additionalProperties": false}},
        "additionalProperties": false
    });
    let v = ArgumentValidator::compile("search", &schema).unwrap();
    let err = v
        .validate("search", &json!({"filter": {"year": 1, "month": 2}}))
        .unwrap_err();
    let got = pointers(&err);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "/filter");
    assert!(got[0].1.starts_with("unknown key(s) 'month'"), "{got:?}");
}

#[test]
fn schema_allowing_extra_keys_accepts_them() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    v.validate("t", &json!({"name": "x", "other": 1})).unwrap();
}

/// An unknown `format` is an annotation: it neither fails compilation nor validation.
#[test]
fn unknown_format_is_an_annotation() {
    let schema = json!({"type": "object",
                        "properties": {"id": {"type": "integer", "format": "uint64"},
                                       "w": {"type": "number", "format": "double"},
                                       "at": {"type": "string", "format": "date-time"}}});
    let v = ArgumentValidator::compile("remote.tool", &schema).unwrap();
    v.validate("remote.tool", &json!({"id": 5, "w": 0.5}))
        .unwrap();
    // Known formats are still checked.
    let err = v
        .validate("remote.tool", &json!({"at": "yesterday"}))
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/at".to_string(),
            "\"yesterday\" is not a valid date-time".to_string()
        )]
    );
    v.validate("remote.tool", &json!({"at": "2026-01-02T03:04:05Z"}))
        .unwrap();
}

#[test]
fn invalid_schema_is_an_internal_error_naming_the_tool() {
    let err = ArgumentValidator::compile("broken", &json!({"type": "dict"})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(err.message().contains("`broken`"), "{}", err.message());
    // Nothing is fetched from outside the schema.
    let err = ArgumentValidator::compile(
        "remote",
        &json!({"$ref": "https://example.invalid/schema.json"}),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
}

#[test]
fn option_struct_errors_name_the_inner_violation() {
    let schema = json!({
        "type": "object",
        "properties": {"page": {"anyOf": [{"$ref": "#/$defs/Page"}, {"type": "null"}]}},
        "$defs": {"Page": {"type": "object",
                           "properties": {"size": {"type": "integer", "minimum": 1}},
                           "required": ["size"]}}
    });
    let v = ArgumentValidator::compile("list", &schema).unwrap();
    v.validate("list", &json!({"page": null})).unwrap();
    let err = v
        .validate("list", &json!({"page": {"size": 0}}))
        .unwrap_err();
    // The model meant the object: its own violations are reported, not "none of the forms".
    assert_eq!(
        pointers(&err),
        vec![(
            "/page/size".to_string(),
            "0 is less than minimum 1".to_string()
        )]
    );
    // A real union lists what each option wanted.
    let schema = json!({"type": "object",
                        "properties": {"when": {"anyOf": [{"type": "integer", "minimum": 0},
                                                          {"type": "string", "format": "date"}]}}});
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    let err = v.validate("t", &json!({"when": true})).unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/when".to_string(),
            "true matches none of the allowed forms (option 1: expected integer, got boolean true \
             | option 2: expected string, got boolean true)"
                .to_string()
        )]
    );
}

// ---- lenient coercion ----------------------------------------------------------------------

#[test]
fn c34_strings_are_coerced_in_lenient_mode() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let sent = json!({"limit": "5", "exact": "true", "ratio": "0.5"});
    let ok = v
        .check("search", sent.clone(), ValidationMode::Lenient)
        .unwrap();
    assert_eq!(ok.args, json!({"limit": 5, "exact": true, "ratio": 0.5}));
    assert_eq!(
        ok.coercions,
        vec![
            Coercion {
                pointer: "/limit".into(),
                kind: CoercionKind::Parsed,
                from: json!("5"),
                to: Some(json!(5))
            },
            Coercion {
                pointer: "/exact".into(),
                kind: CoercionKind::Parsed,
                from: json!("true"),
                to: Some(json!(true))
            },
            Coercion {
                pointer: "/ratio".into(),
                kind: CoercionKind::Parsed,
                from: json!("0.5"),
                to: Some(json!(0.5))
            },
        ]
    );
    // Strict mode (the default) rejects the same call, each string named.
    let err = v
        .check("search", sent, ValidationMode::default())
        .unwrap_err();
    assert_eq!(err.argument_errors().len(), 3);
}

#[test]
fn c34_coercion_works_on_a_copy() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let sent = json!({"limit": "5"});
    let (copy, coercions) = v.coerce(&sent, ValidationMode::Lenient);
    assert_eq!(sent, json!({"limit": "5"}));
    assert_eq!(copy, json!({"limit": 5}));
    assert_eq!(coercions.len(), 1);
}

#[test]
fn c34_non_integer_string_is_not_coerced() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let err = v
        .check("search", json!({"limit": "5.5"}), ValidationMode::Lenient)
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/limit".to_string(),
            "expected integer, got string \"5.5\"".to_string()
        )]
    );
    assert!(
        err.message()
            .ends_with("/limit: expected integer, got string \"5.5\""),
        "{}",
        err.message()
    );
}

#[test]
fn c34_coerced_value_reports_the_real_violation() {
    let v = ArgumentValidator::compile("search", &c34_schema()).unwrap();
    let err = v
        .check("search", json!({"limit": "0"}), ValidationMode::Lenient)
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![("/limit".to_string(), "0 is less than minimum 1".to_string())]
    );
    assert!(err.message().ends_with("/limit: 0 is less than minimum 1"));
}

#[test]
fn c34_ambiguous_cases_are_not_coerced() {
    let schema = json!({"type": "object",
                        "properties": {"n": {"type": ["integer", "null"]},
                                       "id": {"type": ["integer", "string"]},
                                       "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                                       "free": {}}});
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    // The string "null" stays a string (and is then a type error).
    let (copy, coercions) = v.coerce(&json!({"n": "null"}), ValidationMode::Lenient);
    assert_eq!(copy, json!({"n": "null"}));
    assert!(coercions.is_empty());
    // Unions that admit a string, and unconstrained values, are left alone (and valid).
    let sent = json!({"id": "5", "u": "7", "free": "1"});
    let ok = v.check("t", sent.clone(), ValidationMode::Lenient).unwrap();
    assert_eq!(ok.args, sent);
    assert!(ok.coercions.is_empty());
    // A nullable integer still takes a quoted number.
    let ok = v
        .check("t", json!({"n": "3"}), ValidationMode::Lenient)
        .unwrap();
    assert_eq!(ok.args, json!({"n": 3}));
}

#[test]
fn lenient_json_strings_and_null_optionals() {
    let schema = json!({
        "type": "object",
        "properties": {
            "filter": {"$ref": "#/$defs/Filter"},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "note": {"type": "string"},
            "name": {"type": "string"}
        },
        "required": ["name"],
        "additionalProperties": false,
        "$defs": {"Filter": {"type": "object",
                             "properties": {"year": {"type": "integer"}},
                             "additionalProperties": false}}
    });
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    let ok = v
        .check(
            "t",
            json!({"filter": "{\"year\": \"2020\"}", "ids": "[1, \"2\"]",
                   "note": null, "name": "x"}),
            ValidationMode::Lenient,
        )
        .unwrap();
    assert_eq!(
        ok.args,
        json!({"filter": {"year": 2020}, "ids": [1, 2], "name": "x"})
    );
    let changed: Vec<(&str, Option<&Value>)> = ok
        .coercions
        .iter()
        .map(|c| (c.pointer.as_str(), c.to.as_ref()))
        .collect();
    assert_eq!(
        changed,
        vec![
            ("/filter", Some(&json!({"year": "2020"}))),
            ("/filter/year", Some(&json!(2020))),
            ("/ids", Some(&json!([1, "2"]))),
            ("/ids/1", Some(&json!(2))),
            ("/note", None),
        ]
    );
    // `null` for a *required* field is not removed: it is reported.
    let err = v
        .check("t", json!({"name": null}), ValidationMode::Lenient)
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![("/name".to_string(), "expected string, got null".to_string())]
    );
}

#[test]
fn lenient_coerces_inside_option_struct_and_enums() {
    let schema = json!({
        "type": "object",
        "properties": {
            "page": {"anyOf": [{"$ref": "#/$defs/Page"}, {"type": "null"}]},
            "level": {"enum": [1, 2, 3]}
        },
        "$defs": {"Page": {"type": "object", "properties": {"size": {"type": "integer"}}}}
    });
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    let ok = v
        .check(
            "t",
            json!({"page": {"size": "10"}, "level": "2"}),
            ValidationMode::Lenient,
        )
        .unwrap();
    assert_eq!(ok.args, json!({"page": {"size": 10}, "level": 2}));
}

// ---- the cache ----------------------------------------------------------------------------

#[test]
fn cache_compiles_once_per_tool() {
    let cache = ValidatorCache::new();
    let search = descriptor("search", c34_schema());
    let archive = descriptor("archive", archive_schema());
    for _ in 0..5 {
        cache
            .check(&search, json!({"limit": 2}), ValidationMode::Strict)
            .unwrap();
        cache
            .check(
                &archive,
                json!({"name": "a", "reason": "b"}),
                ValidationMode::Strict,
            )
            .unwrap();
    }
    assert_eq!(cache.compilations(), 2);
    assert_eq!(cache.len(), 2);
    let a = cache.get(&search).unwrap();
    let b = cache.get(&search).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    // A new descriptor Arc with the same schema reuses the entry ...
    cache.get(&descriptor("search", c34_schema())).unwrap();
    assert_eq!(cache.compilations(), 2);
    // ... a changed schema is compiled again.
    cache.get(&descriptor("search", archive_schema())).unwrap();
    assert_eq!(cache.compilations(), 3);
}

#[test]
fn cache_remembers_compile_errors() {
    let cache = ValidatorCache::new();
    let broken = descriptor("broken", json!({"type": 12}));
    for _ in 0..3 {
        let err = cache
            .check(&broken, json!({}), ValidationMode::Strict)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
        assert!(err.message().contains("`broken`"));
    }
    assert_eq!(cache.compilations(), 1);
}

#[test]
fn cache_is_shared_across_threads() {
    let cache = Arc::new(ValidatorCache::new());
    let search = descriptor("search", c34_schema());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let cache = Arc::clone(&cache);
            let search = Arc::clone(&search);
            std::thread::spawn(move || {
                cache
                    .check(&search, json!({"limit": 3}), ValidationMode::Strict)
                    .unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(cache.compilations(), 1);
}

#[test]
fn const_per_option_enums_read_as_enums() {
    let schema = json!({"type": "object",
                        "properties": {"unit": {"oneOf": [
                            {"const": "celsius", "type": "string", "description": "C"},
                            {"const": "fahrenheit", "type": "string", "description": "F"}]}}});
    let v = ArgumentValidator::compile("weather", &schema).unwrap();
    let err = v
        .validate("weather", &json!({"unit": "kelvin"}))
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/unit".to_string(),
            "\"kelvin\" is not one of \"celsius\", \"fahrenheit\"".to_string()
        )]
    );
}

/// Remote tools declare other drafts and ids; their bundled meta-schemas need no network.
#[test]
fn other_drafts_and_ids_compile_offline() {
    for schema in [
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
               "properties": {"n": {"type": "integer", "format": "uint64"}},
               "additionalProperties": false}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
               "$id": "https://example.invalid/tools/search", "type": "object",
               "properties": {"n": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "integer"}},
               "additionalProperties": false}),
    ] {
        let v = ArgumentValidator::compile("remote.search", &schema).unwrap();
        v.validate("remote.search", &json!({"n": 5})).unwrap();
        let err = v
            .validate("remote.search", &json!({"n": "x", "m": 1}))
            .unwrap_err();
        let got = pointers(&err);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0]
                .1
                .starts_with("unknown argument(s) 'm' for tool remote.search"),
            "{got:?}"
        );
        assert_eq!(got[1].0, "/n");
    }
}

// ---- the strict dialect's nulls mean "omitted", in every mode --------------------------------

/// The input schema schemars writes for the round-trip case's `SearchArgs`.
fn c01_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "format": "uint32", "minimum": 0, "default": 10},
            "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]}
        },
        "required": ["query"],
        "additionalProperties": false,
        "$defs": {"Filter": {"type": "object",
                             "properties": {"year": {"type": ["integer", "null"]}},
                             "additionalProperties": false}}
    })
}

#[test]
fn c01_strict_nulls_are_omissions_in_strict_mode() {
    let v = ArgumentValidator::compile("search_books", &c01_schema()).unwrap();
    let ok = v
        .check(
            "search_books",
            json!({"query": "rust", "limit": null, "filter": null}),
            ValidationMode::Strict,
        )
        .unwrap();
    // `limit` does not admit null: removed, so its serde default applies; `filter` admits
    // null (`Option`), so it stays and decodes to `None`.
    assert_eq!(ok.args, json!({"query": "rust", "filter": null}));
    assert_eq!(
        ok.coercions,
        vec![Coercion {
            pointer: "/limit".into(),
            kind: CoercionKind::NullOmitted,
            from: Value::Null,
            to: None,
        }]
    );
    // Nested: the strict export makes `year` required and nullable; `null` there is valid.
    let ok = v
        .check(
            "search_books",
            json!({"query": "q", "limit": 3, "filter": {"year": null}}),
            ValidationMode::Strict,
        )
        .unwrap();
    assert!(ok.coercions.is_empty());
    // A `null` for a required argument is still an error, and a string is not coerced in
    // strict mode.
    let err = v
        .check(
            "search_books",
            json!({"query": null, "limit": "5"}),
            ValidationMode::Strict,
        )
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![
            (
                "/limit".to_string(),
                "expected integer, got string \"5\"".to_string()
            ),
            (
                "/query".to_string(),
                "expected string, got null".to_string()
            ),
        ]
    );
}

#[test]
fn null_map_values_are_not_omissions() {
    let schema = json!({"type": "object", "properties": {"labels": {
        "type": "object", "additionalProperties": {"type": "string"}}}});
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    let err = v
        .check("t", json!({"labels": {"a": null}}), ValidationMode::Lenient)
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/labels/a".to_string(),
            "expected string, got null".to_string()
        )]
    );
}

// ---- extra = "strip" -----------------------------------------------------------------------

fn archive_meta_schema() -> Value {
    json!({"type": "object",
           "properties": {"name": {"type": "string"}, "reason": {"type": "string"},
                          "meta": {"type": "object", "properties": {"by": {"type": "string"}},
                                   "additionalProperties": false}},
           "required": ["name", "reason"], "additionalProperties": false})
}

#[test]
fn c37_strip_removes_unknown_keys_at_every_depth() {
    let v = ArgumentValidator::compile("archive", &archive_meta_schema()).unwrap();
    let sent = json!({"name": "n1", "reason": "old", "id": "n1", "force": true,
                      "meta": {"by": "me", "when": "now"}});
    let strip = ArgumentPolicy {
        mode: ValidationMode::Strict,
        extra: ExtraArguments::Strip,
    };
    let ok = v.check("archive", sent.clone(), strip).unwrap();
    assert_eq!(
        ok.args,
        json!({"name": "n1", "reason": "old", "meta": {"by": "me"}})
    );
    let stripped: Vec<(&str, CoercionKind, &Value)> = ok
        .coercions
        .iter()
        .map(|c| (c.pointer.as_str(), c.kind, &c.from))
        .collect();
    assert_eq!(
        stripped,
        vec![
            ("/meta/when", CoercionKind::Stripped, &json!("now")),
            ("/id", CoercionKind::Stripped, &json!("n1")),
            ("/force", CoercionKind::Stripped, &json!(true)),
        ]
    );
    // Stripping does not hide other violations.
    let err = v
        .check(
            "archive",
            json!({"name": 1, "reason": "old", "id": 2}),
            strip,
        )
        .unwrap_err();
    assert_eq!(
        pointers(&err),
        vec![(
            "/name".to_string(),
            "expected string, got number 1".to_string()
        )]
    );
    // Reject (the default) names them all.
    let err = v
        .check("archive", sent, ValidationMode::Strict)
        .unwrap_err();
    assert!(
        err.message().contains(
            "unknown argument(s) 'id', 'force' for tool archive; allowed: name, reason, meta"
        ),
        "{}",
        err.message()
    );
}

#[test]
fn valid_arguments_are_forwarded_without_a_copy_or_changes() {
    let v = ArgumentValidator::compile("archive", &archive_meta_schema()).unwrap();
    let sent = json!({"name": "n1", "reason": "old"});
    let strip = ArgumentPolicy {
        mode: ValidationMode::Lenient,
        extra: ExtraArguments::Strip,
    };
    let ok = v.check("archive", sent.clone(), strip).unwrap();
    assert_eq!(ok.args, sent);
    assert!(ok.coercions.is_empty());
}

#[test]
fn whole_floats_become_integers_where_an_integer_is_wanted() {
    let schema = json!({"type": "object",
        "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7},
                       "ratio": {"type": "number"},
                       "ids": {"type": "array", "items": {"type": "integer"}}},
        "additionalProperties": false});
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    for mode in [ValidationMode::Strict, ValidationMode::Lenient] {
        let ok = v
            .check(
                "t",
                json!({"days": 2.0, "ratio": 1.0, "ids": [1.0, 2]}),
                mode,
            )
            .unwrap();
        // `ratio` is a number: 1.0 stays as sent.
        assert_eq!(
            ok.args,
            json!({"days": 2, "ratio": 1.0, "ids": [1, 2]}),
            "{mode:?}"
        );
        let kinds: Vec<(&str, CoercionKind)> = ok
            .coercions
            .iter()
            .map(|c| (c.pointer.as_str(), c.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("/days", CoercionKind::WholeNumber),
                ("/ids/0", CoercionKind::WholeNumber)
            ]
        );
        // A whole float where only a number is wanted: valid as sent, nothing changed.
        let ok = v.check("t", json!({"ratio": 3.0}), mode).unwrap();
        assert!(ok.coercions.is_empty());
        assert_eq!(ok.args, json!({"ratio": 3.0}));
        // Still bounded, and a real fraction is still an error.
        let err = v.check("t", json!({"days": 8.0}), mode).unwrap_err();
        assert_eq!(
            pointers(&err),
            vec![(
                "/days".to_string(),
                "8 is greater than maximum 7".to_string()
            )]
        );
        let err = v.check("t", json!({"days": 2.5}), mode).unwrap_err();
        assert_eq!(pointers(&err)[0].0, "/days");
    }
}

#[test]
fn an_integer_must_fit_the_width_its_format_names() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "format": "int64"},
            "small": {"type": "integer", "format": "int32"},
            "count": {"type": "integer", "format": "uint64", "minimum": 1},
            "label": {"type": "string", "format": "int64"},
            "own": {"type": "integer", "format": "int32", "maximum": 10},
        }
    });
    let v = ArgumentValidator::compile("t", &schema).unwrap();
    assert!(v.is_valid(&json!({"id": 9_223_372_036_854_775_807_i64, "small": -2_147_483_648_i64})));
    assert!(
        !v.is_valid(&json!({"id": 9_223_372_036_854_775_808_u64})),
        "2^63 is no int64"
    );
    assert!(
        !v.is_valid(&json!({"small": 2_147_483_648_u64})),
        "2^31 is no int32"
    );
    assert!(v.is_valid(&json!({"count": u64::MAX})));
    assert!(
        !v.is_valid(&json!({"count": 0})),
        "the schema's own minimum stays"
    );
    assert!(
        v.is_valid(&json!({"label": "x"})),
        "a string's format is not a width"
    );
    assert!(
        !v.is_valid(&json!({"own": 11})),
        "the schema's own maximum stays"
    );
    // The schema shown is the one given.
    assert!(v.schema()["properties"]["id"].get("maximum").is_none());
}
