//! The kinds behind the width, `Option` and `$ref` export cases, beyond their examples: every integer
//! width, nested `Option`s, `$ref` chains and aliases, a root `$ref` (the shape
//! zod-to-json-schema gives remote MCP servers). Test-only.

#![allow(dead_code)] // the test types only exist for their schemas

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::cases::{Location, canon, input_schema, params, tool};
use super::check::check;
use super::rules::{assert_gemini_rules, assert_strict_rules, find_key};
use super::{Dialect, export, export_with_notes};

#[test]
fn c04_root_ref_keeps_the_arguments() {
    let remote = json!({"$schema": "http://json-schema.org/draft-07/schema#",
        "$ref": "#/definitions/search",
        "definitions": {"search": {"type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"], "additionalProperties": false}}});
    for d in Dialect::ALL {
        let v = export(d, &tool("search", &remote)).unwrap();
        let p = params(d, &v);
        assert_eq!(
            p["properties"]["query"],
            json!({"type": "string"}),
            "{d}: {v}"
        );
        assert!(
            !find_key(&p, "$ref") && !find_key(&p, "definitions"),
            "{d}: {v}"
        );
        assert_eq!(check(d, &v), [], "{d}: {v}");
    }
    let v = export(Dialect::Mcp, &tool("search", &remote)).unwrap();
    assert_eq!(v["inputSchema"]["$schema"], super::JSON_SCHEMA_2020_12);
}

/// A leg of a trip.
#[derive(Deserialize, JsonSchema)]
struct Leg {
    /// Start of the leg.
    at: Location,
    stops: Vec<Location>,
}

#[derive(Deserialize, JsonSchema)]
struct Chain {
    /// The first leg.
    first: Leg,
    rest: Vec<Leg>,
    /// Maybe a leg.
    maybe: Option<Leg>,
}

#[test]
fn c04_ref_chains_are_inlined_with_each_use_site_description() {
    let input = input_schema::<Chain>();
    let loc = json!({"type": "object", "properties": {"city": {"type": "string"},
        "unit": {"type": "string", "enum": ["Celsius", "Fahrenheit"]}}, "required": ["city", "unit"]});
    let mut at = loc.clone();
    at["description"] = "Start of the leg.".into();
    let leg = |desc: &str| {
        json!({"type": "object", "description": desc,
        "properties": {"at": at, "stops": {"type": "array", "items": loc}}, "required": ["at", "stops"]})
    };
    for d in [Dialect::Mcp, Dialect::Anthropic, Dialect::Gemini] {
        let p = params(d, &export(d, &tool("chain", &input)).unwrap());
        assert!(!find_key(&p, "$ref") && !find_key(&p, "$defs"), "{d}: {p}");
        assert_eq!(
            canon(p["properties"]["first"].clone()),
            canon(leg("The first leg.")),
            "{d}"
        );
        assert_eq!(
            canon(p["properties"]["rest"]["items"].clone()),
            canon(leg("A leg of a trip.")),
            "{d}"
        );
        assert_eq!(
            p["properties"]["maybe"]["description"], "Maybe a leg.",
            "{d}"
        );
    }
    let alias = json!({"type": "object",
        "properties": {"a": {"$ref": "#/definitions/A", "description": "use"}},
        "definitions": {"A": {"$ref": "#/definitions/B"},
                        "B": {"type": "object", "description": "type",
                              "properties": {"x": {"type": "integer"}}}}});
    for d in Dialect::ALL {
        let p = params(d, &export(d, &tool("t", &alias)).unwrap());
        assert_eq!(p["properties"]["a"]["description"], "use", "{d}: {p}");
        assert!(!find_key(&p, "$ref"), "{d}: {p}");
    }
}

#[derive(Deserialize, JsonSchema)]
struct Widths {
    a_i8: i8,
    a_i16: i16,
    a_i32: i32,
    a_i64: i64,
    a_u8: u8,
    a_u16: u16,
    a_u64: u64,
    a_isize: isize,
    a_f32: f32,
    nz: std::num::NonZeroU32,
    opt_u64: Option<u64>,
    list: Vec<u16>,
}

#[test]
fn c02_every_width_becomes_bounds() {
    let input = input_schema::<Widths>();
    let expected = json!({
        "a_i8": {"type": "integer", "minimum": -128, "maximum": 127},
        "a_i16": {"type": "integer", "minimum": -32768, "maximum": 32767},
        "a_i32": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
        "a_i64": {"type": "integer"},
        "a_u8": {"type": "integer", "minimum": 0, "maximum": 255},
        "a_u16": {"type": "integer", "minimum": 0, "maximum": 65535},
        "a_u64": {"type": "integer", "minimum": 0},
        "a_isize": {"type": "integer"},
        "a_f32": {"type": "number"},
        "nz": {"type": "integer", "minimum": 1, "maximum": 4_294_967_295_u32},
        "list": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 65535}}});
    for d in Dialect::ALL {
        let p = params(d, &export(d, &tool("w", &input)).unwrap());
        let mut props = p["properties"].clone();
        props.as_object_mut().unwrap().remove("opt_u64");
        assert_eq!(canon(props), canon(expected.clone()), "{d}");
        assert!(!find_key(&p, "format"), "{d}: {p}");
    }
}

#[derive(Deserialize, JsonSchema)]
struct Leaf {
    v: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
struct NestedOptions {
    items: Vec<Option<String>>,
    deep: Option<Vec<Option<i32>>>,
    leaf: Option<Leaf>,
}

#[test]
fn c03_nested_options_per_dialect() {
    let input = input_schema::<NestedOptions>();
    let v = export(Dialect::Gemini, &tool("n", &input)).unwrap();
    let p = params(Dialect::Gemini, &v);
    assert_eq!(
        p["properties"]["items"]["items"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(p["properties"]["deep"]["nullable"], true);
    assert_eq!(p["properties"]["deep"]["items"]["nullable"], true);
    assert_eq!(p["properties"]["leaf"]["nullable"], true);
    assert_eq!(
        p["properties"]["leaf"]["properties"]["v"],
        json!({"type": "boolean", "nullable": true})
    );
    assert_gemini_rules(&p);
    let p = params(
        Dialect::Mcp,
        &export(Dialect::Mcp, &tool("n", &input)).unwrap(),
    );
    assert_eq!(p["properties"]["deep"]["type"], "array");
    assert_eq!(
        p["properties"]["leaf"]["properties"]["v"],
        json!({"type": "boolean"})
    );
    // An element's `null` is a value, not an omission: kept.
    assert_eq!(
        p["properties"]["items"]["items"]["type"],
        json!(["string", "null"])
    );
    let (v, notes) = export_with_notes(Dialect::OpenAiStrict, &tool("n", &input)).unwrap();
    assert_eq!(v["strict"], true, "{notes:?}");
    let p: Value = params(Dialect::OpenAiStrict, &v);
    assert_eq!(p["required"], json!(["deep", "items", "leaf"])); // sorted by `params`
    assert_eq!(
        p["properties"]["leaf"]["anyOf"][0]["required"],
        json!(["v"])
    );
    assert_strict_rules(&p);
}

#[derive(Deserialize, JsonSchema)]
struct Loose {
    any: serde_json::Value,
    labels: std::collections::HashMap<String, String>,
}

#[test]
fn gemini_any_value_is_a_schema_without_type() {
    let input = input_schema::<Loose>();
    let (v, notes) = export_with_notes(Dialect::Gemini, &tool("l", &input)).unwrap();
    assert_eq!(v["parameters"]["properties"]["any"], json!({}));
    assert_eq!(check(Dialect::Gemini, &v), []);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("/properties/any: accepts any value")),
        "{notes:?}"
    );
}
