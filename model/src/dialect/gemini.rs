//! The `gemini` dialect: one entry of Gemini's `functionDeclarations`,
//! `{"name", "description", "parameters"}`.
//!
//! Source: Gemini API reference, "Function calling" and the `Schema` object ("a select subset of
//! an OpenAPI 3.0 schema object"). Applied after the shared rules of [`super::normalize`], with
//! every `$ref` inlined (the `Schema` object has no `$ref` / `$defs`), a recursive type unrolled
//! to [`super::ExportOptions::recursion_depth`] levels with a described placeholder below, noted
//! ([`super::unroll`]):
//!
//! - a single `type` plus `nullable: true` (OpenAPI 3.0): `type: [T, "null"]`, an `anyOf` /
//!   `oneOf` branch `{type: null}` and `null` in `enum` become `nullable: true`; a `type`
//!   array with several non-null types becomes an `anyOf` of single-type schemas;
//! - no `const`: a string `const` becomes a one-value `enum`; `enum` only for strings
//!   (`type: string`), so a non-string `enum` / `const` is removed (noted);
//! - `oneOf` becomes `anyOf` (noted), `allOf` of objects is merged into one object (noted);
//! - kept keywords: `type`, `format`, `title`, `description`, `nullable`, `enum`, `maxItems`,
//!   `minItems`, `properties`, `required`, `minProperties`, `maxProperties`, `minLength`,
//!   `maxLength`, `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`, `items`,
//!   `minimum`, `maximum`; `format` only `date-time` for strings (the formats the reference lists
//!   as supported). Every other keyword is removed, noted unless it is an annotation;
//!   `additionalProperties: true` is the OpenAPI default and is removed silently;
//! - a tool without arguments has no `parameters` key: Gemini rejects an `OBJECT` whose
//!   `properties` is empty (`parameters.properties: should be non-empty for OBJECT type`, reported
//!   in pipecat-ai/pipecat-flows#110, agno-agi/agno#2112), and `additionalProperties` anywhere is
//!   a 400 (`Unknown name "additionalProperties"`, nanbingxyz/5ire#42).

use serde_json::{Map, Value, json};

use super::normalize::{ANNOTATIONS, Notes, json_type, strip_null, walk};

const KEPT: [&str; 22] = [
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

/// Lowers `root` (already through the shared rules, no `$ref` left) to Gemini's subset.
pub(crate) fn lower(mut root: Value, notes: &mut Notes) -> Result<Value, String> {
    objects_for_true(&mut root, "", notes);
    walk(&mut root, "", &mut |m, p| {
        node(m, p, notes);
        Ok(())
    })?;
    Ok(root)
}

fn node(m: &mut Map<String, Value>, ptr: &str, notes: &mut Notes) {
    // First, so that a merged-in branch goes through the rules below.
    if strip_null(m) {
        m.insert("nullable".into(), true.into());
    }
    if let Some(Value::Array(parts)) = m.remove("allOf") {
        notes.push(
            ptr,
            "`allOf` merged into one schema (Gemini has no `allOf`)",
        );
        for part in parts {
            let Value::Object(part) = part else { continue };
            for (k, v) in part {
                match (k.as_str(), m.get_mut(&k), v) {
                    ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                        mine.extend(theirs);
                    }
                    ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                        mine.extend(
                            theirs
                                .into_iter()
                                .filter(|r| !mine.contains(r))
                                .collect::<Vec<_>>(),
                        );
                    }
                    (_, Some(_), _) => {}
                    (_, None, v) => {
                        m.insert(k, v);
                    }
                }
            }
        }
    }
    if let Some(one_of) = m.remove("oneOf") {
        notes.push(ptr, "`oneOf` exported as `anyOf` (Gemini has no `oneOf`)");
        m.insert("anyOf".into(), one_of);
    }
    if let Some(c) = m.remove("const") {
        m.insert("enum".into(), json!([c]));
    }
    if let Some(Value::Array(types)) = m.get("type") {
        let types = types.clone();
        m.remove("type");
        let rest = std::mem::take(m);
        let branches = types
            .into_iter()
            .map(|t| {
                let mut b = rest.clone();
                b.remove("description");
                b.remove("nullable");
                b.insert("type".into(), t);
                Value::Object(b)
            })
            .collect();
        for k in ["description", "nullable"] {
            if let Some(v) = rest.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        m.insert("anyOf".into(), Value::Array(branches));
        // The branches are visited next by `walk`, and they have one type each.
        return;
    }
    if let Some(Value::Array(e)) = m.get("enum") {
        if e.iter().all(Value::is_string) {
            m.insert("type".into(), "string".into());
        } else {
            let e = m.remove("enum").unwrap_or_default();
            if m.get("type").is_none() {
                // The types of the values, never fewer (taking the first value's type would
                // refuse the others); an array value's items by the same rule.
                let values = e.as_array().cloned().unwrap_or_default();
                let branches: Vec<Value> = distinct_types(&values)
                    .into_iter()
                    .map(|t| {
                        let mut b = json!({"type": t});
                        if t == "array" {
                            let items: Vec<Value> = values
                                .iter()
                                .filter_map(Value::as_array)
                                .flatten()
                                .cloned()
                                .collect();
                            if let [one] = distinct_types(&items)[..] {
                                b["items"] = json!({"type": one});
                            }
                        }
                        b
                    })
                    .collect();
                match <[Value; 1]>::try_from(branches) {
                    Ok([Value::Object(one)]) => m.extend(one),
                    Ok(_) => {}
                    Err(many) => {
                        m.insert("anyOf".into(), Value::Array(many));
                    }
                }
            }
            notes.push(
                ptr,
                format!("removed `enum: {e}` (Gemini supports string enums only)"),
            );
        }
    }
    if let Some(Value::String(f)) = m.get("format")
        && f != "date-time"
    {
        notes.push(
            ptr,
            format!("removed `format: {f}` (not supported by Gemini)"),
        );
        m.remove("format");
    }
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        if KEPT.contains(&k.as_str()) {
            continue;
        }
        let v = m.remove(&k).unwrap_or_default();
        let silent = (ANNOTATIONS.contains(&k.as_str()) || k == "$schema")
            || (k == "additionalProperties" && v == Value::Bool(true));
        if !silent {
            notes.push(ptr, format!("removed `{k}: {v}` (not supported by Gemini)"));
        }
    }
}

/// The JSON types of `values`, each once, in order of first appearance.
fn distinct_types(values: &[Value]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for v in values {
        let t = json_type(v);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Gemini's `Schema` is an object: a JSON Schema `true` ("any value") in a schema position
/// becomes `{}` (an OpenAPI 3.0 schema without `type` accepts any value), noted.
fn objects_for_true(v: &mut Value, ptr: &str, notes: &mut Notes) {
    let Value::Object(m) = v else { return };
    for (k, child) in m.iter_mut() {
        let at = format!("{ptr}/{}", super::normalize::escape(k));
        match (k.as_str(), child) {
            ("properties", Value::Object(props)) => {
                for (name, p) in props.iter_mut() {
                    let at = format!("{at}/{}", super::normalize::escape(name));
                    subschema(p, &at, notes);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                for (i, p) in items.iter_mut().enumerate() {
                    objects_for_true(p, &format!("{at}/{i}"), notes);
                }
            }
            ("items", p) => subschema(p, &at, notes),
            ("additionalProperties" | "not", p @ Value::Object(_)) => {
                objects_for_true(p, &at, notes);
            }
            _ => {}
        }
    }
}

/// One subschema of [`objects_for_true`]: `true` replaced, anything else walked.
fn subschema(p: &mut Value, at: &str, notes: &mut Notes) {
    if *p == Value::Bool(true) {
        *p = Value::Object(Map::new());
        notes.push(at, "accepts any value: exported as a schema without `type`");
    } else {
        objects_for_true(p, at, notes);
    }
}
