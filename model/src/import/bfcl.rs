//! The Berkeley Function Calling Leaderboard's definition dialect (PyPI `bfcl-eval`; its data
//! files `bfcl_eval/data/BFCL_v4_*.json` and `multi_turn_func_doc/*.json`).
//!
//! A BFCL definition is `{name, description, parameters: {type: "dict", properties, required}}`
//! (sometimes with a `response` schema), where the schemas use Python, Java and JavaScript type
//! names. BFCL converts them for each provider in `bfcl_eval/model_handler/utils.py`
//! (`convert_to_tool`, `_cast_to_openai_type`) with the table `GORILLA_TO_OPENAPI` of
//! `bfcl_eval/constants/type_mappings.py`, and checks answers in
//! `bfcl_eval/eval_checker/ast_eval/ast_checker.py`. The importer follows both:
//!
//! - **Types** (`GORILLA_TO_OPENAPI`): `dict`, `object`, `HashMap`, `Hashtable` → `object`;
//!   `float`, `double`, `number` → `number`; `integer`, `byte`, `short`, `long`, `Bigint` →
//!   `integer`; `string`, `String`, `char` → `string`; `boolean`, `bool` → `boolean`; `array`,
//!   `list`, `tuple`, `ArrayList`, `Array`, `Queue`, `Stack` → `array`. Two names BFCL's checker
//!   converts but `GORILLA_TO_OPENAPI` lacks: `Boolean` → `boolean` (`JS_TYPE_CONVERSION`) and
//!   `Set` → `array` with `uniqueItems: true` (`JAVA_TYPE_CONVERSION`: a Python `set`; noted).
//!   A type name BFCL does not know (or `""`) becomes `string`, BFCL's own fallback in
//!   `_cast_to_openai_type` (noted); so does a missing `type`.
//! - **`any`** (and `Any`) → no type constraint (JSON Schema `{}` plus the other keywords), noted:
//!   BFCL's `GORILLA_TO_OPENAPI` sends `string`, but the definitions mean any value (e.g. "Can be
//!   a string, boolean, or number"), and a schema must not refuse what the function takes.
//! - **Java and JavaScript.** BFCL prompts models with every top-level parameter of its
//!   `simple_java` / `simple_javascript` entries as a string of Java / JavaScript source
//!   (`_func_doc_language_specific_pre_processing` in `bfcl_eval/utils.py`), then converts the
//!   string back (`java_type_converter`, `js_type_converter`) and compares the *converted* value
//!   with the ground truth, which is written as native values (`true`, `[101, 202]`, `{...}`).
//!   The importer describes that value, the arguments a JSON caller sends, with the type names
//!   above; it does not turn parameters into source strings.
//! - **Objects.** `properties` and `required` as in JSON Schema. A `dict` without `properties` is
//!   a dictionary of any keys (BFCL's `dict_checker` compares it key by key): it gets an explicit
//!   `additionalProperties: true`, so that no exporter reads it as an empty closed object. A
//!   `required` name that is not among the `properties` (the keys are described in prose) is
//!   declared as a property of any value (noted): Gemini rejects `required` names that are not
//!   properties.
//! - **Optional parameters.** A parameter is optional when it is not in `required`, when it has a
//!   `default` (the 2020-12 `default` annotation is kept; a name in `required` with a `default`
//!   is taken out of `required`, noted), or when it is flagged `optional` (`true`, `"true"`,
//!   `"True"`, `"yes"` on the parameter, or listed in an `optional` array on its object; noted
//!   when that changes `required`). The `optional` keyword itself is not JSON Schema and is not
//!   kept.
//! - **`enum`.** Kept when its values fit the type. When they do not: on an `array` whose item
//!   type they fit, it moves into `items` (each element is one of them); values that spell a
//!   value of the type exactly are converted (`"1"` → `1`, `"True"` → `true`); values that do not
//!   (SGD-style `"dontcare"` on a `boolean` or `integer`) are admitted beside the type:
//!   `{anyOf: [{type, enum: <converted>}, {enum: <the others>}]}`, the annotations staying at the
//!   top. BFCL's checker compares values with the ground truth and never reads `enum`, and its
//!   ground truth uses both kinds (`false` and `"dontcare"` for one parameter). Noted.
//! - **`default`.** Kept as the 2020-12 annotation. A `default` that is not a value of the schema
//!   (JSON Schema 2020-12 §9.2 recommends that it be one) is reconciled, noted: `null` (Python's
//!   `None`) makes the type nullable (`[T, "null"]`, and `null` joins an `enum`); a string that
//!   spells a value of the type exactly is converted (`"False"` → `false`, `"10"` → `10`,
//!   `"[]"` → `[]`); any other value (`"dontcare"` on an `integer`, `"5 years"`) is admitted
//!   beside the type as above, since the function receives it when the argument is omitted.
//! - **`items`** and nested `properties` are converted recursively; `description`, `format`,
//!   `title`, numeric and length bounds are kept; any other key is dropped with a note, and so are
//!   a definition's `response` (BFCL's informal result description, not imported as an output
//!   schema: clients would take it as a promise about `structuredContent`) and a `default` on
//!   the parameters object itself.

use crate::config::location::escape;
use serde_json::{Map, Value, json};

type Fail = (String, String);

/// GORILLA_TO_OPENAPI (`bfcl_eval/constants/type_mappings.py`), plus `Boolean` and `Set` from
/// its `JS_TYPE_CONVERSION` / `JAVA_TYPE_CONVERSION`; `None` = no type constraint.
mod values;

use values::{default, enumeration};

const TYPES: [(&str, Option<&str>); 28] = [
    ("integer", Some("integer")),
    ("number", Some("number")),
    ("float", Some("number")),
    ("string", Some("string")),
    ("boolean", Some("boolean")),
    ("bool", Some("boolean")),
    ("array", Some("array")),
    ("list", Some("array")),
    ("dict", Some("object")),
    ("object", Some("object")),
    ("tuple", Some("array")),
    ("any", None),
    ("byte", Some("integer")),
    ("short", Some("integer")),
    ("long", Some("integer")),
    ("double", Some("number")),
    ("char", Some("string")),
    ("ArrayList", Some("array")),
    ("Array", Some("array")),
    ("HashMap", Some("object")),
    ("Hashtable", Some("object")),
    ("Queue", Some("array")),
    ("Stack", Some("array")),
    ("Any", None),
    ("String", Some("string")),
    ("Bigint", Some("integer")),
    ("Boolean", Some("boolean")),
    ("Set", Some("array")),
];

/// JSON Schema keywords kept as they are (validation bounds and annotations).
const KEPT: &str = "\
    format title minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minLength \
    maxLength pattern minItems maxItems uniqueItems minProperties maxProperties examples const";

/// The input schema of BFCL definition `def` (its `parameters`).
pub(super) fn root(def: &Map<String, Value>, notes: &mut Vec<String>) -> Result<Value, Fail> {
    for k in def.keys() {
        if !["name", "description", "parameters"].contains(&k.as_str()) {
            let why = if k == "response" {
                "the result schema is not imported"
            } else {
                "not a BFCL definition key; not imported"
            };
            notes.push(format!("/{k}: {why}"));
        }
    }
    let params = match def.get("parameters") {
        None | Some(Value::Null) => return Ok(json!({"type": "object", "properties": {}})),
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err((
                "/parameters".into(),
                format!("`parameters` must be an object, got `{other}`"),
            ));
        }
    };
    match params.get("type").and_then(Value::as_str) {
        None | Some("dict" | "object") => {}
        Some(other) => {
            return Err((
                "/parameters/type".into(),
                format!("the parameters must be a `dict`, got `{other}`"),
            ));
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    for (k, v) in params {
        match k.as_str() {
            "type" | "properties" | "required" | "optional" => {}
            "description" if v.is_string() => {
                out.insert(k.clone(), v.clone());
            }
            _ => notes.push(format!(
                "/parameters/{k}: removed `{k}: {v}` (not a BFCL key)"
            )),
        }
    }
    object_members(params, &mut out, "/parameters", notes)?;
    Ok(Value::Object(out))
}

/// `properties` / `required` / `optional` of `src` converted into `out` (pointer `at`).
fn object_members(
    src: &Map<String, Value>,
    out: &mut Map<String, Value>,
    at: &str,
    notes: &mut Vec<String>,
) -> Result<(), Fail> {
    let mut required: Vec<String> = match src.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) => {
            let mut names = Vec::new();
            for (i, n) in r.iter().enumerate() {
                match n.as_str() {
                    Some(n) if !names.iter().any(|x| x == n) => names.push(n.to_string()),
                    Some(_) => {}
                    None => {
                        return Err((
                            format!("{at}/required/{i}"),
                            format!("a `required` entry must be a string, got `{n}`"),
                        ));
                    }
                }
            }
            names
        }
        Some(other) => {
            notes.push(format!(
                "{at}/required: removed `required: {other}` (not a list of names)"
            ));
            Vec::new()
        }
    };
    let mut optional: Vec<String> = match src.get("optional") {
        Some(Value::Array(o)) => o
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let mut props = Map::new();
    match src.get("properties") {
        None => {}
        Some(Value::Object(ps)) => {
            for (name, p) in ps {
                let ptr = format!("{at}/properties/{}", escape(name));
                let (schema, opt) = schema(p, &ptr, notes)?;
                if opt {
                    optional.push(name.clone());
                }
                props.insert(name.clone(), schema);
            }
        }
        Some(other) => {
            return Err((
                format!("{at}/properties"),
                format!("`properties` must be an object, got `{other}`"),
            ));
        }
    }
    let has_default = |n: &str| {
        src.get("properties")
            .and_then(|ps| ps.get(n))
            .is_some_and(|p| p.get("default").is_some())
    };
    required.retain(|n| {
        let why = if optional.contains(n) {
            "flagged `optional`"
        } else if has_default(n) {
            "it has a `default`"
        } else {
            return true;
        };
        notes.push(format!(
            "{at}/required: `{n}` is optional: {why} (removed from `required`)"
        ));
        false
    });
    for n in &required {
        if !props.contains_key(n) {
            notes.push(format!(
                "{at}/required: `{n}` is required but not among the properties; declared as a \
                 property of any value"
            ));
            props.insert(n.clone(), json!({}));
        }
    }
    let root = at == "/parameters";
    if !root && props.is_empty() && !src.contains_key("additionalProperties") {
        out.insert("additionalProperties".into(), true.into());
    }
    if !props.is_empty() || root {
        out.insert("properties".into(), Value::Object(props));
    }
    if !required.is_empty() {
        out.insert(
            "required".into(),
            required.into_iter().map(Value::String).collect(),
        );
    }
    Ok(())
}

/// One BFCL schema at `at`, converted; `true` when it is flagged `optional`.
fn schema(src: &Value, at: &str, notes: &mut Vec<String>) -> Result<(Value, bool), Fail> {
    let Value::Object(src) = src else {
        return Err((
            at.into(),
            format!("a schema must be an object, got `{src}`"),
        ));
    };
    let mut out = Map::new();
    let ty = match src.get("type") {
        Some(Value::String(t)) => map_type(t, at, notes),
        Some(Value::Array(ts)) => {
            let mapped: Vec<Value> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|t| map_type(t, at, notes))
                .map(|t| Value::String(t.into()))
                .collect();
            if mapped.len() == ts.len() {
                out.insert("type".into(), Value::Array(mapped));
            }
            None
        }
        None => {
            notes.push(format!("{at}: no `type`; `string`, BFCL's default"));
            Some("string")
        }
        Some(other) => {
            notes.push(format!("{at}/type: `{other}` is not a type name; `string`"));
            Some("string")
        }
    };
    if let Some(t) = ty {
        out.insert("type".into(), t.into());
    }
    if src.get("type").and_then(Value::as_str) == Some("Set") {
        out.insert("uniqueItems".into(), true.into());
        notes.push(format!("{at}/type: Java `Set` is an array of unique items"));
    }
    let mut optional = false;
    let mut moved_default = None;
    for (k, v) in src {
        match k.as_str() {
            "type" | "required" | "properties" | "enum" | "default" => {}
            "description" => match v {
                Value::String(_) => {
                    out.insert(k.clone(), v.clone());
                }
                _ => notes.push(format!("{at}/description: removed `{v}` (not a string)")),
            },
            "optional" => match truthy(v) {
                Some(flag) => optional = flag,
                None => notes.push(format!("{at}/optional: `{v}` is not a flag; ignored")),
            },
            "items" => match v {
                Value::Object(item) => {
                    let mut item = item.clone();
                    // `items: {type: string, default: ["a"]}`: the array's default, misplaced.
                    if item.get("default").is_some_and(Value::is_array)
                        && !item.get("type").is_some_and(is_array_type)
                    {
                        moved_default = item.remove("default");
                        notes.push(format!(
                            "{at}/items/default: an array default on an item: moved to the array"
                        ));
                    }
                    let item = Value::Object(item);
                    out.insert(k.clone(), schema(&item, &format!("{at}/items"), notes)?.0);
                }
                Value::Array(items) => {
                    let mut list = Vec::new();
                    for (i, s) in items.iter().enumerate() {
                        list.push(schema(s, &format!("{at}/items/{i}"), notes)?.0);
                    }
                    notes.push(format!(
                        "{at}/items: a list of item schemas (a tuple) is `prefixItems`"
                    ));
                    out.insert("prefixItems".into(), Value::Array(list));
                }
                _ => notes.push(format!("{at}/items: removed `{v}` (not a schema)")),
            },
            "additionalProperties" => match v {
                Value::Bool(_) => {
                    out.insert(k.clone(), v.clone());
                }
                _ => {
                    let s = schema(v, &format!("{at}/additionalProperties"), notes)?.0;
                    out.insert(k.clone(), s);
                }
            },
            _ if listed(KEPT, k) => {
                out.insert(k.clone(), v.clone());
            }
            _ => notes.push(format!("{at}/{k}: removed `{k}: {v}` (not a BFCL keyword)")),
        }
    }
    let is_object = match out.get("type") {
        Some(t) => t == "object",
        None => src.contains_key("properties"),
    };
    if is_object {
        object_members(src, &mut out, at, notes)?;
    } else {
        for k in ["properties", "required"] {
            if let Some(v) = src.get(k) {
                notes.push(format!(
                    "{at}/{k}: removed `{v}` (the schema is not an object)"
                ));
            }
        }
    }
    if let Some(e) = src.get("enum") {
        enumeration(e, &mut out, at, notes);
    }
    if let Some(d) = src.get("default").or(moved_default.as_ref()) {
        default(d, &mut out, at, notes);
    }
    Ok((Value::Object(out), optional))
}

fn map_type(t: &str, at: &str, notes: &mut Vec<String>) -> Option<&'static str> {
    match TYPES.iter().find(|(n, _)| *n == t) {
        Some((_, Some(json))) => Some(json),
        Some((_, None)) => {
            notes.push(format!(
                "{at}/type: `{t}` imported as any value (no `type`); BFCL sends `string` to \
                 providers"
            ));
            None
        }
        None => {
            notes.push(format!(
                "{at}/type: unknown type `{t}` imported as `string`, BFCL's fallback"
            ));
            Some("string")
        }
    }
}

/// Whether `word` is one of the whitespace-separated words of `list`.
fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// Whether BFCL type name `t` maps to `array`.
fn is_array_type(t: &Value) -> bool {
    t.as_str().is_some_and(|t| {
        TYPES
            .iter()
            .any(|(n, json)| *n == t && *json == Some("array"))
    })
}

fn truthy(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}
