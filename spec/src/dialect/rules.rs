//! Rule checkers for exported schemas, written from the providers' published rules, and the
//! tests of rules the cases do not show (test-only).

#![allow(dead_code)] // the test types only exist for their schemas

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::cases::{input_schema, params, tool};
use super::{Dialect, export, export_with_notes};

/// Whether `key` occurs as an object key anywhere in `v`.
pub(super) fn find_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|c| find_key(c, key)),
        Value::Array(a) => a.iter().any(|c| find_key(c, key)),
        _ => false,
    }
}

/// Every `$ref` is `#` or `#/$defs/NAME` with `NAME` in the document's `$defs`, and no `$ref` has
/// siblings (C04, C08).
pub(super) fn all_refs_resolve(doc: &Value) -> bool {
    fn go(v: &Value, defs: &Map<String, Value>) -> bool {
        match v {
            Value::Object(m) => {
                let here = match m.get("$ref").and_then(Value::as_str) {
                    None => true,
                    Some(r) => {
                        m.len() == 1
                            && (r == "#"
                                || r.strip_prefix("#/$defs/")
                                    .is_some_and(|n| defs.contains_key(n)))
                    }
                };
                here && m.values().all(|c| go(c, defs))
            }
            Value::Array(a) => a.iter().all(|c| go(c, defs)),
            _ => true,
        }
    }
    let empty = Map::new();
    let defs = doc
        .get("$defs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    go(doc, defs)
}

/// Calls `f` on every subschema of `v` (including `v`) with its pointer.
fn each_schema(v: &Value, ptr: &str, f: &mut dyn FnMut(&Map<String, Value>, &str)) {
    let Value::Object(m) = v else { return };
    f(m, ptr);
    for (k, c) in m {
        match (k.as_str(), c) {
            ("properties" | "$defs", Value::Object(ps)) => {
                for (n, s) in ps {
                    each_schema(s, &format!("{ptr}/{k}/{n}"), f);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(a)) => {
                for (i, s) in a.iter().enumerate() {
                    each_schema(s, &format!("{ptr}/{k}/{i}"), f);
                }
            }
            ("items" | "additionalProperties" | "not", s) => {
                each_schema(s, &format!("{ptr}/{k}"), f)
            }
            _ => {}
        }
    }
}

/// OpenAI, "Structured Outputs" → "Supported schemas": root an object (not `anyOf`); every
/// object has `additionalProperties: false` and all properties required; every schema has a
/// `type`, `enum`, `anyOf` or `$ref`; only the supported keywords and string formats; at most 10
/// levels of nesting and 5000 properties.
pub(super) fn assert_strict_rules(root: &Value) {
    const KEYWORDS: [&str; 20] = [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    ];
    const FORMATS: [&str; 9] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    assert_eq!(root["type"], "object", "root: {root}");
    assert!(root.get("anyOf").is_none(), "root anyOf: {root}");
    let mut props = 0;
    each_schema(root, "", &mut |m, p| {
        for k in m.keys() {
            assert!(
                KEYWORDS.contains(&k.as_str()),
                "{p}: `{k}` not supported in strict mode"
            );
        }
        assert!(
            ["type", "enum", "anyOf", "$ref"]
                .iter()
                .any(|k| m.contains_key(*k)),
            "{p}: no type"
        );
        if let Some(f) = m.get("format").and_then(Value::as_str) {
            assert!(FORMATS.contains(&f), "{p}: format {f}");
        }
        if let Some(Value::Object(ps)) = m.get("properties") {
            props += ps.len();
            assert_eq!(
                m.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{p}"
            );
            let req = m["required"]
                .as_array()
                .unwrap_or_else(|| panic!("{p}: no required"));
            for n in ps.keys() {
                assert!(req.iter().any(|r| r == n), "{p}: `{n}` not required");
            }
        }
    });
    assert!(props <= 5000);
}

/// Gemini API, `Schema` (OpenAPI 3.0 subset): a single string `type`, no `$ref` / `$defs` /
/// `const` / `oneOf` / `allOf` / `additionalProperties`, string enums only, `format` only
/// `date-time` on strings, no empty `properties` at the root.
pub(super) fn assert_gemini_rules(root: &Value) {
    const KEYWORDS: [&str; 22] = [
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    ];
    if root.is_null() {
        return; // a tool without parameters
    }
    assert_eq!(root["type"], "object");
    assert!(
        root["properties"]
            .as_object()
            .is_some_and(|p| !p.is_empty()),
        "{root}"
    );
    each_schema(root, "", &mut |m, p| {
        for k in m.keys() {
            assert!(
                KEYWORDS.contains(&k.as_str()),
                "{p}: `{k}` not in Gemini's Schema"
            );
        }
        if let Some(t) = m.get("type") {
            assert!(t.is_string(), "{p}: type {t}");
        }
        if let Some(Value::Array(e)) = m.get("enum") {
            assert!(
                e.iter().all(Value::is_string) && m["type"] == "string",
                "{p}: enum"
            );
        }
        if let Some(f) = m.get("format") {
            assert_eq!(f, "date-time", "{p}");
        }
    });
}

#[derive(Deserialize, JsonSchema)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct Tree {
    label: Option<String>,
    children: Vec<Tree>,
    /// The parent node.
    parent: Option<Box<Tree>>,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct TreeArgs {
    /// The tree to draw.
    tree: Tree,
    mode: Mode,
}

#[test]
fn recursion_keeps_defs_or_fails_naming_the_tool() {
    let input = input_schema::<TreeArgs>();
    let e = export(Dialect::Gemini, &tool("draw_tree", &input)).unwrap_err();
    assert!(
        e.to_string().contains("`draw_tree`") && e.message.contains("`Tree` is recursive"),
        "{e}"
    );
    for d in [
        Dialect::Mcp,
        Dialect::OpenAi,
        Dialect::OpenAiStrict,
        Dialect::Anthropic,
    ] {
        let v = export(d, &tool("draw_tree", &input)).unwrap();
        let p = params(d, &v);
        assert!(all_refs_resolve(&p), "{d}: {p}");
        assert!(
            p["$defs"].get("Tree").is_some() && p["$defs"].get("Mode").is_none(),
            "{d}: {p}"
        );
        let combinator = if d == Dialect::OpenAiStrict {
            "anyOf"
        } else {
            "allOf"
        };
        assert_eq!(
            p["properties"]["tree"]["description"], "The tree to draw.",
            "{d}"
        );
        assert_eq!(
            p["properties"]["tree"][combinator],
            json!([{"$ref": "#/$defs/Tree"}]),
            "{d}"
        );
        if d == Dialect::OpenAiStrict {
            assert_eq!(v["strict"], true);
            assert_strict_rules(&p);
        }
    }
}

#[test]
fn strict_removes_unsupported_keywords_with_notes() {
    let s = json!({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
        "home": {"type": "string", "format": "uri"},
        "id": {"type": "string", "format": "uuid"},
        "tags": {"type": "array", "items": {"type": "string", "default": "x"}, "uniqueItems": true}},
        "required": ["name", "home", "id", "tags"]});
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("t", &s)).unwrap();
    assert_eq!(v["strict"], true);
    let p = &v["parameters"];
    assert_strict_rules(p);
    assert_eq!(
        p["properties"]["name"],
        json!({"type": "string", "pattern": "^[a-z]+$"})
    );
    assert_eq!(p["properties"]["id"]["format"], "uuid");
    for n in [
        "/properties/name: removed `minLength: 1`",
        "/properties/home: removed `format: uri`",
        "/properties/tags/items: removed `default`",
        "/properties/tags: removed `uniqueItems: true`",
    ] {
        assert!(notes.iter().any(|x| x.starts_with(n)), "{n}: {notes:?}");
    }
    // MCP keeps every 2020-12 keyword.
    let v = export(Dialect::Mcp, &tool("t", &s)).unwrap();
    assert_eq!(v["inputSchema"]["properties"], s["properties"]);
}

#[test]
fn strict_falls_back_for_any_value() {
    let s = json!({"type": "object", "properties": {"payload": {}}, "required": ["payload"]});
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("t", &s)).unwrap();
    assert_eq!(v["strict"], false);
    assert!(
        notes[0].contains("/properties/payload accepts any value"),
        "{notes:?}"
    );
}

#[test]
fn gemini_drops_what_it_cannot_express_with_notes() {
    let s = json!({"type": "object", "additionalProperties": false, "properties": {
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "id": {"type": "string", "format": "uuid"},
        "when": {"type": ["string", "null"], "format": "date-time"},
        "either": {"type": ["string", "integer"], "description": "d"},
        "fixed": {"const": "v1"}}});
    let (v, notes) = export_with_notes(Dialect::Gemini, &tool("t", &s)).unwrap();
    let p = &v["parameters"];
    assert_gemini_rules(p);
    assert_eq!(p["properties"]["level"], json!({"type": "integer"}));
    assert_eq!(
        p["properties"]["when"],
        json!({"type": "string", "format": "date-time", "nullable": true})
    );
    assert_eq!(
        p["properties"]["either"],
        json!({"description": "d", "anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert_eq!(
        p["properties"]["fixed"],
        json!({"type": "string", "enum": ["v1"]})
    );
    for n in [
        "/: removed `additionalProperties: false`",
        "/properties/level: removed `enum: [1,2,3]`",
        "/properties/id: removed `format: uuid`",
    ] {
        assert!(notes.iter().any(|x| x.starts_with(n)), "{n}: {notes:?}");
    }
}

#[test]
fn dangling_and_foreign_refs_are_errors_in_every_dialect() {
    let dangling = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}});
    let foreign = json!({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}});
    for d in Dialect::ALL {
        let e = export(d, &tool("t", &dangling)).unwrap_err();
        assert!(e.message.contains("dangling"), "{d}: {e}");
        let e = export(d, &tool("t", &foreign)).unwrap_err();
        assert!(e.message.contains("unsupported `$ref`"), "{d}: {e}");
    }
}
