//! The generator and the regex sampler, against hand-written schemas.

use super::*;

fn ok(schema: Value) -> Value {
    generate(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

#[test]
fn required_properties_only_with_formats_and_bounds() {
    let v = ok(json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 10, "multipleOf": 4},
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "uid": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "name": {"type": "string", "minLength": 5, "maxLength": 6},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.75},
            "small": {"type": "integer", "maximum": -3},
            "optional": {"type": "string"}
        },
        "required": ["id", "when", "day", "mail", "site", "uid", "ip", "name", "ratio", "small"],
        "additionalProperties": false
    }));
    assert_eq!(v["id"], 12);
    assert_eq!(v["small"], -3);
    assert!(v.get("optional").is_none());
    assert_eq!(v["name"].as_str().map(str::len), Some(5));
    assert_eq!(v["ratio"], 0.75);
}

#[test]
fn const_enum_examples_default_and_type_arrays() {
    let v = ok(json!({
        "type": "object",
        "properties": {
            "c": {"const": "fixed"},
            "e": {"enum": [null, "b", "c"]},
            "ex": {"type": "string", "pattern": "^[A-Z]{3}$", "examples": ["nope", "ABC"]},
            "d": {"type": "integer", "default": 7},
            "t": {"type": ["null", "boolean"]},
            "n": {"type": "null"}
        },
        "required": ["c", "e", "ex", "d", "t", "n"]
    }));
    assert_eq!(
        v,
        json!({"c": "fixed", "e": "b", "ex": "ABC", "d": 7, "t": true, "n": null})
    );
}

#[test]
fn patterns_without_examples() {
    for pattern in [
        r"^[a-z0-9]+(-[a-z0-9]+)*$",
        r"^\d{4}-\d{2}$",
        r"^(cus|acct)_[A-Za-z0-9]{8,}$",
        r"^[^/]+/[^/]+$",
        r"^v\d+\.\d+(\.\d+)?$",
        r"^#?[0-9a-fA-F]{6}$",
        r"^[\w.-]+@[\w-]+\.[a-z]{2,}$",
    ] {
        let schema = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": pattern}}, "required": ["p"]});
        let v = ok(schema);
        assert!(v["p"].is_string(), "{pattern}: {v}");
    }
}

#[test]
fn one_of_any_of_all_of_and_refs() {
    let v = ok(json!({
        "type": "object",
        "properties": {
            "shape": {"oneOf": [
                {"type": "object", "properties": {"r": {"type": "number"}}},
                {"type": "object", "properties": {"w": {"type": "number"}}, "required": ["w"], "additionalProperties": false}
            ]},
            "any": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
            "both": {"allOf": [
                {"$ref": "#/$defs/Named"},
                {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]}
            ]},
            "tree": {"$ref": "#/$defs/Tree"}
        },
        "required": ["shape", "any", "both", "tree"],
        "$defs": {
            "Named": {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}, "required": ["name"]},
            "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}, "label": {"type": "string"}}, "required": ["label", "children"]}
        }
    }));
    assert_eq!(v["any"], 5);
    assert_eq!(v["both"]["age"], 1);
    assert_eq!(v["tree"]["children"], json!([]));
}

#[test]
fn arrays_base64_and_unique_items() {
    let v = ok(json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 2, "uniqueItems": true},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "file": {"type": "string", "contentEncoding": "base64"}
        },
        "required": ["tags", "ids", "file"]
    }));
    assert_eq!(v["tags"], json!(["a", "b"]));
    assert_eq!(
        v["ids"],
        json!([1]),
        "a required top-level array gets one item"
    );
    assert_eq!(v["file"], BASE64);
}

#[test]
fn failures_are_reported_not_hidden() {
    let e = generate(&json!({
        "type": "object",
        "properties": {"x": {"type": "string", "pattern": "^(?=a)b$"}},
        "required": ["x"]
    }))
    .unwrap_err();
    assert!(e.candidate.is_none(), "{e}");
    let e = generate(&json!({"type": "object", "properties": {"x": false}, "required": ["x"]}))
        .unwrap_err();
    assert!(e.to_string().contains("no"), "{e}");
}
