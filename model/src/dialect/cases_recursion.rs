//! Recursive types exported to Gemini: unrolled to a depth, the innermost level a described
//! placeholder, the type and depth noted (test-only; see [`super::unroll`]).

#![allow(dead_code)] // the case types only exist for their schemas

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::cases::{input_schema, tool};
use super::rules::{assert_gemini_rules, find_key};
use super::*;

/// A filter condition, as a Rust tool would take it.
#[derive(Deserialize, JsonSchema)]
struct Cond {
    /// Conditions that must all hold.
    and: Vec<Cond>,
    field: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// The filter.
    filter: Cond,
}

const LIMIT_3: &str =
    "(nesting depth limit of 3 reached; deeper levels are accepted but not described)";

fn gemini(input: &Value, options: &ExportOptions) -> (Value, Vec<String>) {
    let (v, notes) = export_with_options(Dialect::Gemini, &tool("t", input), options).unwrap();
    let p = v["parameters"].clone();
    assert!(!find_key(&p, "$ref") && !find_key(&p, "$defs"), "{p}");
    assert_gemini_rules(&p);
    (p, notes)
}

/// `filter`, then `levels` times `.and[]`: the schema at that depth.
fn cond_at(p: &Value, levels: usize) -> &Value {
    let mut at = &p["properties"]["filter"];
    for _ in 0..levels {
        at = &at["properties"]["and"]["items"];
    }
    at
}

#[test]
fn rust_recursive_type_is_unrolled_three_levels_by_default() {
    let input = input_schema::<SearchArgs>();
    assert_eq!(refs::recursive_types(&input), ["Cond"]);
    let (p, notes) = gemini(&input, &ExportOptions::default());
    // Three copies of `Cond`, described; the fourth is the placeholder.
    for level in 0..3 {
        let c = cond_at(&p, level);
        assert_eq!(c["type"], "object", "level {level}: {p}");
        assert!(c["properties"]["field"].is_object(), "level {level}: {p}");
    }
    let inner = cond_at(&p, 3);
    assert_eq!(inner["type"], "object", "{p}");
    assert!(inner.get("properties").is_none(), "{p}");
    let d = inner["description"].as_str().unwrap();
    assert!(d.ends_with(LIMIT_3), "{d}");
    // The type's doc (the `and` items have none of their own).
    assert!(d.starts_with("A filter condition"), "{d}");
    // The use site's description is kept at the top level.
    assert_eq!(cond_at(&p, 0)["description"], "The filter.");
    let note: Vec<&String> = notes.iter().filter(|n| n.contains("recursive")).collect();
    assert_eq!(note.len(), 1, "{notes:?}");
    assert!(
        note[0].contains("`Cond` is recursive") && note[0].contains("3 level(s) deep"),
        "{note:?}"
    );
    assert!(
        note[0].starts_with("/properties/filter/properties/and/items/properties/and/items/"),
        "{note:?}"
    );
    // Every other dialect keeps the `$ref`.
    let (v, notes) = export_with_notes(Dialect::Anthropic, &tool("t", &input)).unwrap();
    assert!(find_key(&v, "$ref") && notes.is_empty(), "{v}");
}

#[test]
fn depth_is_configurable() {
    let input = input_schema::<SearchArgs>();
    let (p, notes) = gemini(&input, &ExportOptions::new().with_recursion_depth(1));
    assert!(cond_at(&p, 0)["properties"]["field"].is_object(), "{p}");
    let d = cond_at(&p, 1)["description"].as_str().unwrap();
    assert!(d.contains("nesting depth limit of 1 reached"), "{d}");
    assert!(
        notes.iter().any(|n| n.contains("1 level(s) deep")),
        "{notes:?}"
    );
    // 0 is taken as 1.
    let (p0, _) = gemini(&input, &ExportOptions::new().with_recursion_depth(0));
    assert_eq!(p0, p);

    let (p, notes) = gemini(&input, &ExportOptions::new().with_recursion_depth(5));
    for level in 0..5 {
        assert!(
            cond_at(&p, level)["properties"]["field"].is_object(),
            "{level}"
        );
    }
    let d = cond_at(&p, 5)["description"].as_str().unwrap();
    assert!(d.contains("nesting depth limit of 5 reached"), "{d}");
    assert!(
        notes.iter().any(|n| n.contains("5 level(s) deep")),
        "{notes:?}"
    );
}

#[test]
fn openapi_shaped_node_keeps_its_description_at_the_limit() {
    // As the OpenAPI converter writes `Node { children: [Node] }` (components → `$defs`).
    let input = json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {"Node": {
            "type": "object",
            "description": "A tree node.",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }
        }}
    });
    let (p, notes) = gemini(&input, &ExportOptions::default());
    let mut at = &p["properties"]["root"];
    for _ in 0..3 {
        assert_eq!(at["description"], "A tree node.");
        assert!(at["properties"]["name"].is_object(), "{p}");
        at = &at["properties"]["children"]["items"];
    }
    assert_eq!(
        at,
        &json!({"type": "object", "description": format!("A tree node. {LIMIT_3}")})
    );
    assert!(
        notes.iter().any(|n| n.contains("`Node` is recursive")),
        "{notes:?}"
    );
}

#[test]
fn mutual_recursion_counts_levels_per_type() {
    // A → B → A: each type gets two copies at depth 2, then `A` is the placeholder.
    let input = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {
                "a": {"type": "array", "description": "More.", "items": {"$ref": "#/$defs/A"}}
            }}
        }
    });
    let mut types = refs::recursive_types(&input);
    types.sort();
    assert_eq!(types, ["A", "B"]);
    let (p, notes) = gemini(&input, &ExportOptions::new().with_recursion_depth(2));
    let a1 = &p["properties"]["a"];
    let a2 = &a1["properties"]["b"]["properties"]["a"]["items"];
    assert_eq!(a1["properties"]["b"]["type"], "object");
    assert_eq!(a2["properties"]["b"]["type"], "object");
    let a3 = &a2["properties"]["b"]["properties"]["a"];
    assert_eq!(a3["description"], "More.", "the array is kept: {p}");
    let placeholder = &a3["items"];
    assert_eq!(placeholder["type"], "object", "{p}");
    // Neither `A` nor its use site has a description: the type is named.
    assert!(
        placeholder["description"]
            .as_str()
            .unwrap()
            .starts_with("A nested A value ("),
        "{p}"
    );
    assert!(
        placeholder["description"]
            .as_str()
            .unwrap()
            .contains("nesting depth limit of 2 reached"),
        "{p}"
    );
    assert!(
        notes.iter().any(|n| n.contains("`A` is recursive")),
        "{notes:?}"
    );
}

#[test]
fn recursive_type_reached_from_two_properties() {
    #[derive(Deserialize, JsonSchema)]
    struct TwoArgs {
        /// Must hold.
        include: Cond,
        /// Must not hold.
        exclude: Option<Cond>,
    }
    let input = input_schema::<TwoArgs>();
    let (p, notes) = gemini(&input, &ExportOptions::default());
    for prop in ["include", "exclude"] {
        let mut at = &p["properties"][prop];
        for _ in 0..3 {
            assert!(at["properties"]["field"].is_object(), "{prop}: {p}");
            at = &at["properties"]["and"]["items"];
        }
        let d = at["description"].as_str().unwrap();
        assert!(d.ends_with(LIMIT_3), "{prop}: {d}");
    }
    assert_eq!(p["properties"]["exclude"]["description"], "Must not hold.");
    assert_eq!(p["properties"]["exclude"]["nullable"], true, "{p}");
    // One note for the type, not one per placeholder.
    let n = notes.iter().filter(|n| n.contains("`Cond`")).count();
    assert_eq!(n, 1, "{notes:?}");
}

#[test]
fn root_recursion_and_array_types() {
    // `$ref: "#"`: the root is the first level.
    let input = json!({
        "type": "object",
        "properties": {"sub": {"$ref": "#"}, "n": {"type": "integer"}}
    });
    assert_eq!(refs::recursive_types(&input), ["#"]);
    let (p, notes) = gemini(&input, &ExportOptions::new().with_recursion_depth(2));
    assert_eq!(p["properties"]["sub"]["properties"]["n"]["type"], "integer");
    let inner = &p["properties"]["sub"]["properties"]["sub"];
    assert_eq!(inner["type"], "object", "{p}");
    assert!(
        notes.iter().any(|n| n.contains("the root schema")),
        "{notes:?}"
    );

    // A recursive array type: its placeholder is an array of any items.
    let input = json!({
        "type": "object",
        "properties": {"nested": {"$ref": "#/$defs/List"}},
        "$defs": {"List": {"type": "array", "items": {
            "anyOf": [{"type": "string"}, {"$ref": "#/$defs/List"}]
        }}}
    });
    let (p, _) = gemini(&input, &ExportOptions::new().with_recursion_depth(1));
    let inner = &p["properties"]["nested"]["items"]["anyOf"][1];
    assert_eq!(inner["type"], "array", "{p}");
    assert_eq!(inner["items"], json!({}), "{p}");
}

#[test]
fn exponential_unrolling_is_bounded() {
    // Each level uses the type 8 times: 8^depth copies at a large depth.
    let props: serde_json::Map<String, Value> = (0..8)
        .map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/T"})))
        .collect();
    let input = json!({
        "type": "object",
        "properties": {"t": {"$ref": "#/$defs/T"}},
        "$defs": {"T": {"type": "object", "properties": props}}
    });
    let e = export_with_options(
        Dialect::Gemini,
        &tool("t", &input),
        &ExportOptions::new().with_recursion_depth(10),
    )
    .unwrap_err();
    assert!(e.message.contains("too large"), "{e}");
}
