//! The `openai-strict` dialect: OpenAI function tools with `"strict": true`.
//!
//! Source of every rule: OpenAI platform docs, "Structured Outputs" → "Supported schemas"
//! (which function calling with `strict: true` shares). Applied after the shared rules of
//! [`super::normalize`] (acyclic `$ref`s inlined; recursion kept through `$defs`/`$ref`, which the
//! document allows, with a description beside a `$ref` moved into a one-branch `anyOf`, since
//! `allOf` is not supported):
//!
//! - every object has `additionalProperties: false` and lists **all** its properties in
//!   `required` ("All fields must be required" / "additionalProperties: false must always be
//!   set"); a property that was optional is made nullable (`type: [T, "null"]`, `null` added to
//!   `enum`, or an `anyOf` with `{type: null}`), and its `default` is removed and stated in the
//!   description (`Defaults to 10 when null.`); the gateway maps `null` back to the default;
//! - `oneOf` becomes `anyOf` (only `anyOf` is supported; noted), `const` becomes a one-value
//!   `enum`; `default` elsewhere is removed (noted);
//! - kept keywords: `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`,
//!   `anyOf`, `$ref`, `$defs`, `description`, `title`; strings `pattern` and `format` (only
//!   `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`); numbers
//!   `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`; arrays
//!   `minItems`, `maxItems`. Other constraints (`minLength`, `maxLength`, `uniqueItems`,
//!   `minProperties`, other formats, ...) are removed and noted; annotations (`examples`,
//!   `$comment`, `deprecated`, ...) are removed silently;
//! - not expressible, so the tool falls back to `"strict": false` with the non-strict parameters
//!   (noted): a map (`additionalProperties` other than `false`, `patternProperties`), a
//!   schema with no `type` / `enum` / `anyOf` / `$ref` (any JSON value), `allOf`, `not`,
//!   `if`/`then`/`else`, tuples (`prefixItems`, `items` arrays), a root `anyOf`, more than 10
//!   levels of nesting or 5000 properties, an `enum` over 1000 values;
//! - except that a **top-level argument** strict mode cannot express (an "any" value such as
//!   `jq`'s `input`, a map, a tuple, ...) is carried as **JSON text**: it is exported as a string
//!   argument named `{name}_json` ([`JSON_TEXT_SUFFIX`]) whose description says to send the value
//!   JSON-encoded, and the gateway decodes `{name}_json` back into `{name}` before validation
//!   (so the value is still checked against the original schema). Noted per argument. When the
//!   tool still cannot be strict after that (a nested "any" value, too deep, ...), it falls back
//!   to `"strict": false` as above.

use serde_json::{Map, Value, json};

use super::normalize::{ANNOTATIONS, Notes, sentence, walk};

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
const KEPT: [&str; 21] = [
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
    "$schema",
];
const FATAL: [&str; 9] = [
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "patternProperties",
    "dependentSchemas",
    "unevaluatedItems",
];

/// What a top-level argument carried as JSON text is renamed with: `input` is sent as
/// `input_json`, a string holding the value's JSON text.
pub const JSON_TEXT_SUFFIX: &str = "_json";

/// The text appended to the description of an argument carried as JSON text.
const JSON_TEXT_WORDS: &str = "Carried as JSON text: send the value JSON-encoded in this string \
     (for example '{\"a\": 1}' or '[1, 2]'); it is decoded before the call.";

/// Replaces each top-level property of `root` that strict mode cannot express on its own by a
/// string property `{name}_json` ([`JSON_TEXT_SUFFIX`]) saying to send the value JSON-encoded,
/// keeping its place in `properties` and `required`; a property whose `{name}_json` is already
/// taken is left alone. Returns the names replaced (none: `root` unchanged).
pub(crate) fn carry_as_json_text(root: &mut Value, notes: &mut Notes) -> Vec<String> {
    let Some(Value::Object(props)) = root.get("properties") else {
        return Vec::new();
    };
    let inexpressible: Vec<String> = props
        .iter()
        .filter(|(name, schema)| {
            let alone = json!({
                "type": "object",
                "properties": {"v": schema},
                "required": ["v"],
            });
            !props.contains_key(&format!("{name}{JSON_TEXT_SUFFIX}"))
                && lower(alone, &mut Notes::default()).is_err()
        })
        .map(|(name, _)| name.clone())
        .collect();
    if inexpressible.is_empty() {
        return inexpressible;
    }
    let Some(Value::Object(props)) = root.get_mut("properties") else {
        return Vec::new();
    };
    let old = std::mem::take(props);
    for (name, schema) in old {
        if !inexpressible.contains(&name) {
            props.insert(name, schema);
            continue;
        }
        let description = match schema.get("description").and_then(Value::as_str) {
            Some(d) if !d.trim().is_empty() => format!("{} {JSON_TEXT_WORDS}", sentence(d)),
            _ => JSON_TEXT_WORDS.to_string(),
        };
        let carried = format!("{name}{JSON_TEXT_SUFFIX}");
        notes.push(
            &format!("/properties/{}", super::normalize::escape(&name)),
            format!(
                "`{name}` accepts values strict mode cannot describe: exported as `{carried}`, \
                 a string of JSON text decoded before validation"
            ),
        );
        props.insert(
            carried,
            json!({"type": "string", "description": description}),
        );
    }
    if let Some(Value::Array(required)) = root.get_mut("required") {
        for r in required.iter_mut() {
            if let Some(n) = r.as_str()
                && inexpressible.iter().any(|i| i == n)
            {
                *r = Value::from(format!("{n}{JSON_TEXT_SUFFIX}"));
            }
        }
    }
    inexpressible
}

/// Lowers `root` (already through the shared rules) to a strict schema, or explains why it
/// cannot be strict.
pub(crate) fn lower(mut root: Value, notes: &mut Notes) -> Result<Value, String> {
    if let Some(k) = ["anyOf", "oneOf"].iter().find(|k| root.get(**k).is_some()) {
        return Err(format!(
            "the root is an `{k}` (the root must be a plain object)"
        ));
    }
    let mut local = Notes::default();
    let mut props = 0usize;
    walk(&mut root, "", &mut |m, p| {
        node(m, p, &mut local, &mut props)
    })?;
    if props > 5000 {
        return Err(format!("{props} properties (the limit is 5000)"));
    }
    let depth = depth(&root);
    if depth > 10 {
        return Err(format!(
            "{depth} levels of object nesting (the limit is 10)"
        ));
    }
    if let Value::Object(m) = &mut root {
        m.remove("$schema");
    }
    notes.list.extend(local.list);
    Ok(root)
}

fn depth(v: &Value) -> usize {
    let own = usize::from(v.get("properties").is_some());
    let inner = match v {
        Value::Object(m) => m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    };
    own + inner
}

fn is_object(m: &Map<String, Value>) -> bool {
    m.contains_key("properties")
        || match m.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(a)) => a.iter().any(|t| t == "object"),
            _ => false,
        }
}

fn node(
    m: &mut Map<String, Value>,
    ptr: &str,
    notes: &mut Notes,
    props: &mut usize,
) -> Result<(), String> {
    if let Some(k) = FATAL.iter().find(|k| m.contains_key(**k)) {
        return Err(format!("`{k}` at {} is not supported", at(ptr)));
    }
    if m.get("items").is_some_and(Value::is_array) {
        return Err(format!(
            "the tuple (`items` array) at {} is not supported",
            at(ptr)
        ));
    }
    if let Some(one_of) = m.remove("oneOf") {
        notes.push(
            ptr,
            "`oneOf` exported as `anyOf` (strict mode supports only `anyOf`)",
        );
        m.insert("anyOf".into(), one_of);
    }
    if let Some(c) = m.remove("const") {
        m.insert("enum".into(), json!([c]));
    }
    if m.get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.len() > 1000)
    {
        return Err(format!("`enum` at {} has more than 1000 values", at(ptr)));
    }
    if !["type", "enum", "anyOf", "$ref"]
        .iter()
        .any(|k| m.contains_key(*k))
    {
        return Err(format!(
            "the schema at {} accepts any value (no `type`)",
            at(ptr)
        ));
    }
    if let Some(Value::String(f)) = m.get("format")
        && !FORMATS.contains(&f.as_str())
    {
        notes.push(
            ptr,
            format!("removed `format: {f}` (not supported in strict mode)"),
        );
        m.remove("format");
    }
    if is_object(m) {
        // `{"type": "object"}` alone accepts any object: closing it would refuse every key.
        if !m.contains_key("properties")
            && m.get("additionalProperties") != Some(&Value::Bool(false))
        {
            return Err(format!(
                "the object at {} accepts any keys (no `properties`)",
                at(ptr)
            ));
        }
        match m.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(other) => {
                return Err(format!(
                    "the object at {} has `additionalProperties: {other}` (a map)",
                    at(ptr)
                ));
            }
        }
        m.insert("additionalProperties".into(), false.into());
        let was_required: Vec<Value> = match m.get("required") {
            Some(Value::Array(r)) => r.clone(),
            _ => Vec::new(),
        };
        // Every property, in property order.
        let mut required = Vec::new();
        let mut unreachable_defaults = Vec::new();
        let props_map = m.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(ps) = props_map {
            *props += ps.len();
            for (name, p) in ps.iter_mut() {
                required.push(Value::from(name.clone()));
                if !was_required.iter().any(|r| r == name)
                    && let Some(d) = make_optional_nullable(p)
                {
                    unreachable_defaults.push((name.clone(), d));
                }
            }
        }
        m.insert("required".into(), Value::Array(required));
        for (name, d) in unreachable_defaults {
            notes.push(
                &format!("{ptr}/properties/{}", super::normalize::escape(&name)),
                format!(
                    "removed `default: {d}` (the property already accepts `null`, which means \
                     none; strict mode cannot leave it out to get the default)"
                ),
            );
        }
    }
    if m.remove("default").is_some() {
        notes.push(ptr, "removed `default` (not supported in strict mode)");
    }
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        if KEPT.contains(&k.as_str()) {
            continue;
        }
        let v = m.remove(&k);
        if !(ANNOTATIONS.contains(&k.as_str()) || k == "$anchor") {
            let v = v.unwrap_or_default();
            notes.push(
                ptr,
                format!("removed `{k}: {v}` (not supported in strict mode)"),
            );
        }
    }
    Ok(())
}

fn at(ptr: &str) -> &str {
    if ptr.is_empty() { "the root" } else { ptr }
}

/// An optional property of a strict object: made nullable, its `default` moved into the
/// description. A property that already accepts `null` (an `Option` with a default other than
/// `None`) keeps `null` meaning `None`, so its default cannot be reached in strict mode: it is
/// removed and returned, for a note.
fn make_optional_nullable(p: &mut Value) -> Option<Value> {
    let Value::Object(m) = p else { return None };
    if accepts_null(m) {
        return m.remove("default").filter(|d| !d.is_null());
    }
    if let Some(d) = m.remove("default")
        && !d.is_null()
    {
        let text = format!("Defaults to {d} when null.");
        let desc = match m.get("description").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => format!("{} {text}", sentence(s)),
            _ => text,
        };
        m.insert("description".into(), desc.into());
    }
    if let Some(t) = m.get_mut("type") {
        match t {
            Value::String(s) => *t = json!([s.clone(), "null"]),
            Value::Array(a) => a.push("null".into()),
            _ => {}
        }
        if let Some(Value::Array(e)) = m.get_mut("enum") {
            e.push(Value::Null);
        }
    } else if let Some(Value::Array(e)) = m.get_mut("enum") {
        e.push(Value::Null);
    } else if let Some(Value::Array(b)) = m.get_mut("anyOf") {
        b.push(json!({"type": "null"}));
    } else {
        let desc = m.remove("description");
        let inner = std::mem::take(m);
        m.insert("anyOf".into(), json!([inner, {"type": "null"}]));
        if let Some(d) = desc {
            m.insert("description".into(), d);
        }
    }
    None
}

fn accepts_null(m: &Map<String, Value>) -> bool {
    let by_type = match m.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(a)) => a.iter().any(|t| t == "null"),
        _ => false,
    };
    let by_any = m
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|b| b.iter().any(|x| x.get("type").is_some_and(|t| t == "null")));
    by_type || by_any
}
