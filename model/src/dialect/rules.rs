//! Assertions on exported schemas (through the public rule checker, [`super::check`]), and the
//! tests of rules the cases do not show (test-only).

#![allow(dead_code)] // the test types only exist for their schemas

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::cases::{input_schema, params, tool};
use super::check::{Violation, check};
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
/// siblings.
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

/// `root` (an exported `parameters` schema with `"strict": true`) obeys OpenAI's "Structured
/// Outputs" → "Supported schemas" rules, as [`check`] applies them.
pub(super) fn assert_strict_rules(root: &Value) {
    let def = json!({"type": "function", "name": "t", "description": "d",
        "parameters": root, "strict": true});
    let violations = check(Dialect::OpenAiStrict, &def);
    assert!(violations.is_empty(), "{}: {root}", list(&violations));
}

/// `root` (an exported Gemini `parameters`, `null` for a tool without) obeys the rules of
/// Gemini's `Schema` subset, as [`check`] applies them.
pub(super) fn assert_gemini_rules(root: &Value) {
    let mut def = json!({"name": "t", "description": "d"});
    if !root.is_null() {
        def["parameters"] = root.clone();
    }
    let violations = check(Dialect::Gemini, &def);
    assert!(violations.is_empty(), "{}: {root}", list(&violations));
}

fn list(violations: &[Violation]) -> String {
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    lines.join("\n")
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
fn recursion_keeps_defs_or_is_unrolled_for_gemini() {
    let input = input_schema::<TreeArgs>();
    let (v, notes) = export_with_notes(Dialect::Gemini, &tool("draw_tree", &input)).unwrap();
    assert!(!find_key(&v, "$ref") && !find_key(&v, "$defs"), "{v}");
    assert!(
        notes.iter().any(|n| n.contains("`Tree` is recursive")),
        "{notes:?}"
    );
    assert_gemini_rules(&v["parameters"]);
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
fn strict_carries_any_value_as_json_text_or_falls_back() {
    // A top-level "any" value is carried as JSON text, optional ones nullable like the rest.
    let s = json!({"type": "object", "properties": {"payload": {"description": "What to send"},
                                                     "meta": {"type": "object"},
                                                     "n": {"type": "integer"}},
                   "required": ["payload"]});
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("t", &s)).unwrap();
    assert_eq!(v["strict"], true, "{v}");
    let p = &v["parameters"]["properties"];
    assert_eq!(p["payload_json"]["type"], "string", "{p}");
    let d = p["payload_json"]["description"].as_str().unwrap();
    assert!(d.starts_with("What to send. Carried as JSON text"), "{d}");
    // `meta` was optional: nullable, like every optional argument in strict mode.
    assert_eq!(p["meta_json"]["type"], json!(["string", "null"]), "{p}");
    assert_eq!(p["n"]["type"], json!(["integer", "null"]), "{p}");
    assert_eq!(
        v["parameters"]["required"],
        json!(["payload_json", "meta_json", "n"])
    );
    assert_eq!(
        notes.iter().filter(|n| n.contains("JSON text")).count(),
        2,
        "{notes:?}"
    );
    // A name already taken by another argument is not reused: the tool is not strict.
    let s = json!({"type": "object", "properties": {"payload": {},
                                                     "payload_json": {"type": "string"}}});
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("t", &s)).unwrap();
    assert_eq!(v["strict"], false);
    assert!(
        notes[0].contains("/properties/payload") && notes[0].contains("accepts any value"),
        "{notes:?}"
    );
    // A root that is a map cannot be strict at all.
    let s = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("t", &s)).unwrap();
    assert_eq!(v["strict"], false);
    assert!(notes[0].contains("a map"), "{notes:?}");
}

#[test]
fn gemini_enum_of_other_types_keeps_every_type() {
    let s = json!({"type": "object", "properties": {
        "mixed": {"enum": [1, "a", [1, 2]]},
        "pairs": {"enum": [[1, 2], [3, 4]]}}});
    let (v, notes) = export_with_notes(Dialect::Gemini, &tool("t", &s)).unwrap();
    let p = &v["parameters"];
    assert_gemini_rules(p);
    assert_eq!(
        p["properties"]["mixed"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string"},
                         {"type": "array", "items": {"type": "integer"}}]})
    );
    assert_eq!(
        p["properties"]["pairs"],
        json!({"type": "array", "items": {"type": "integer"}})
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
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

#[test]
fn the_checker_rejects_each_broken_rule() {
    let good = |d: Dialect| {
        let s = json!({"type": "object", "properties": {
            "q": {"type": "string", "description": "query"},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["q"]});
        let def = export(d, &tool("search", &s)).unwrap();
        assert_eq!(check(d, &def), [], "{d}: {def}");
        def
    };
    let broken = |d: Dialect, pointer: &str, rule: &str, edit: &dyn Fn(&mut Value)| {
        let mut def = good(d);
        edit(&mut def);
        let v = check(d, &def);
        assert!(
            v.iter()
                .any(|v| v.pointer == pointer && v.rule.contains(rule)),
            "{d}: expected `{pointer}: {rule}` in {v:?} for {def}"
        );
    };
    for d in Dialect::ALL {
        let key = match d {
            Dialect::Mcp => "inputSchema",
            Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Gemini => "parameters",
            Dialect::Anthropic => "input_schema",
        };
        let at = format!("/{key}");
        broken(d, "/name", "does not match", &|v| v["name"] = json!("a.b"));
        broken(d, "/extra", "unexpected key", &|v| v["extra"] = json!(1));
        broken(d, &at, "must be \"object\"", &|v| {
            v[key]["type"] = json!("array")
        });
        let q = format!("{at}/properties/q");
        if d != Dialect::Gemini {
            broken(d, &q, "not a JSON Schema type", &|v| {
                v[key]["properties"]["q"]["type"] = json!("text")
            });
            broken(d, &q, "does not resolve", &|v| {
                v[key]["properties"]["q"]["$ref"] = json!("#/$defs/Nope")
            });
        }
        broken(d, &format!("{at}/required/0"), "not a property", &|v| {
            v[key]["required"] = json!(["nope"])
        });
        if d != Dialect::Gemini {
            broken(d, "", "missing required", &|v| {
                v.as_object_mut().unwrap().remove(key);
            });
        }
    }
    let p = "/parameters/properties";
    broken(
        Dialect::OpenAiStrict,
        "",
        "missing required `strict`",
        &|v| {
            v.as_object_mut().unwrap().remove("strict");
        },
    );
    broken(
        Dialect::OpenAiStrict,
        "/parameters",
        "additionalProperties: false",
        &|v| {
            v["parameters"]
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        },
    );
    broken(
        Dialect::OpenAiStrict,
        "/parameters",
        "`n` is not in `required`",
        &|v| v["parameters"]["required"] = json!(["q", "tags"]),
    );
    broken(
        Dialect::OpenAiStrict,
        &format!("{p}/q"),
        "`minLength` is not supported",
        &|v| v["parameters"]["properties"]["q"]["minLength"] = json!(1),
    );
    broken(
        Dialect::OpenAiStrict,
        &format!("{p}/q"),
        "format `uri`",
        &|v| v["parameters"]["properties"]["q"]["format"] = json!("uri"),
    );
    broken(
        Dialect::OpenAiStrict,
        &format!("{p}/n"),
        "needs `type`",
        &|v| v["parameters"]["properties"]["n"] = json!({"description": "any"}),
    );
    // `"strict": false` (the fallback) obeys only the non-strict rules.
    let mut def = good(Dialect::OpenAiStrict);
    def["strict"] = json!(false);
    def["parameters"]["properties"]["n"] = json!({"description": "any"});
    assert_eq!(check(Dialect::OpenAiStrict, &def), []);
    broken(Dialect::Gemini, "/name", "start with a letter", &|v| {
        v["name"] = json!("1st")
    });
    broken(Dialect::Gemini, "/parameters", "non-empty", &|v| {
        v["parameters"]["properties"] = json!({});
        v["parameters"]["required"] = json!([]);
    });
    broken(
        Dialect::Gemini,
        &format!("{p}/n"),
        "`additionalProperties`",
        &|v| v["parameters"]["properties"]["n"]["additionalProperties"] = json!(false),
    );
    broken(
        Dialect::Gemini,
        &format!("{p}/n"),
        "single Gemini type",
        &|v| v["parameters"]["properties"]["n"]["type"] = json!(["integer", "null"]),
    );
    broken(
        Dialect::Gemini,
        &format!("{p}/n"),
        "`enum` is only allowed",
        &|v| v["parameters"]["properties"]["n"]["enum"] = json!([1, 2]),
    );
    broken(Dialect::Gemini, &format!("{p}/q"), "`format: uuid`", &|v| {
        v["parameters"]["properties"]["q"]["format"] = json!("uuid")
    });
    broken(
        Dialect::Gemini,
        &format!("{p}/tags"),
        "needs `items`",
        &|v| {
            v["parameters"]["properties"]["tags"]
                .as_object_mut()
                .unwrap()
                .remove("items");
        },
    );
    broken(
        Dialect::Mcp,
        "/annotations/read_only_hint",
        "ToolAnnotations",
        &|v| v["annotations"] = json!({"read_only_hint": true}),
    );
    broken(Dialect::Anthropic, "/type", "\"custom\"", &|v| {
        v["type"] = json!("function")
    });
    assert_eq!(
        check(Dialect::Mcp, &json!(5))[0].to_string(),
        "/: a definition must be a JSON object, got `5`"
    );
}
