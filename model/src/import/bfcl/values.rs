//! `enum` and `default` values: kept when they fit the declared type, converted when BFCL's
//! checker would accept the converted value, dropped with a note otherwise.

use serde_json::{Map, Number, Value, json};

/// Whether `v` is an instance of JSON Schema type `t`.
fn fits(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// `v` converted exactly to type `t`, when it is a string spelling a value of `t`.
fn convert(v: &Value, t: &str) -> Option<Value> {
    let s = v.as_str()?.trim();
    match t {
        "boolean" => match s.to_ascii_lowercase().as_str() {
            "true" => Some(true.into()),
            "false" => Some(false.into()),
            _ => None,
        },
        "integer" => s.parse::<i64>().ok().map(Value::from),
        "number" => s
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(Number::from_f64)
            .map(|n| match s.parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => Value::Number(n),
            }),
        "array" | "object" => serde_json::from_str::<Value>(s).ok().filter(|x| fits(x, t)),
        _ => None,
    }
}

/// The keywords that constrain a value of the declared type: what moves into the first branch
/// when a schema also admits values outside its type ([`admit`]).
const TYPED: &str = "\
    type enum const items prefixItems properties required additionalProperties uniqueItems \
    format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minLength maxLength \
    pattern minItems maxItems minProperties maxProperties";

/// `out` also admits exactly `extras` (values the definition names outside its type):
/// `{anyOf: [{<the typed keywords>}, {enum: extras}], <annotations>}`.
fn admit(out: &mut Map<String, Value>, extras: Vec<Value>) {
    if let Some(Value::Array(branches)) = out.get_mut("anyOf")
        && let Some(Value::Array(e)) = branches.get_mut(1).and_then(|b| b.get_mut("enum"))
    {
        for x in extras {
            if !e.contains(&x) {
                e.push(x);
            }
        }
        return;
    }
    let mut typed = Map::new();
    for k in TYPED.split_whitespace() {
        if let Some(v) = out.remove(k) {
            typed.insert(k.into(), v);
        }
    }
    out.insert("anyOf".into(), json!([typed, {"enum": extras}]));
}

pub(super) fn enumeration(
    e: &Value,
    out: &mut Map<String, Value>,
    at: &str,
    notes: &mut Vec<String>,
) {
    let Value::Array(values) = e else {
        notes.push(format!("{at}/enum: removed `{e}` (not a list)"));
        return;
    };
    let Some(t) = out.get("type").and_then(Value::as_str).map(str::to_string) else {
        out.insert("enum".into(), e.clone());
        return;
    };
    if values.iter().all(|v| fits(v, &t)) {
        out.insert("enum".into(), e.clone());
        return;
    }
    if t == "array"
        && let Some(Value::Object(items)) = out.get_mut("items")
        && !items.contains_key("enum")
        && items
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(|it| values.iter().all(|v| fits(v, it)))
    {
        items.insert("enum".into(), e.clone());
        notes.push(format!(
            "{at}/enum: the values are items, not arrays: moved into `items`"
        ));
        return;
    }
    // Values that are (or spell) values of the type stay with it; the others are admitted too.
    let mut typed = Vec::new();
    let mut extras = Vec::new();
    for v in values {
        match (fits(v, &t), convert(v, &t)) {
            (true, _) => typed.push(v.clone()),
            (false, Some(c)) => typed.push(c),
            (false, None) => extras.push(v.clone()),
        }
    }
    if typed.is_empty() {
        notes.push(format!(
            "{at}/enum: `{e}` are not `{t}` values; the schema accepts any `{t}` or one of them"
        ));
    } else {
        let spelled = Value::Array(typed.clone());
        out.insert("enum".into(), spelled.clone());
        if extras.is_empty() {
            notes.push(format!("{at}/enum: `{e}` converted to `{t}`: `{spelled}`"));
            return;
        }
        notes.push(format!(
            "{at}/enum: `{e}` mixes `{t}` values and others: `{spelled}` as `{t}`, or one of `{}`",
            Value::Array(extras.clone())
        ));
    }
    admit(out, extras);
}

pub(super) fn default(d: &Value, out: &mut Map<String, Value>, at: &str, notes: &mut Vec<String>) {
    out.insert("default".into(), d.clone());
    // The keywords of the declared type: `out` itself, or the first branch of an earlier split.
    let split = out.get("anyOf").and_then(|b| b.as_array()).cloned();
    let typed = match &split {
        Some(b) => b
            .first()
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        None => out.clone(),
    };
    let types: Vec<String> = match typed.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    let in_enum = |v: &Value| match typed.get("enum") {
        Some(Value::Array(e)) => e.contains(v),
        _ => true,
    };
    let in_extras = split
        .as_ref()
        .and_then(|b| b.get(1))
        .and_then(|b| b.get("enum"))
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(d));
    if types.is_empty() || in_extras || (types.iter().any(|t| fits(d, t)) && in_enum(d)) {
        return;
    }
    if d.is_null() && split.is_none() {
        // BFCL writes Python's `None` default as `null`: `null` is a value of the parameter.
        let mut nullable: Vec<Value> = types.iter().map(|t| Value::from(t.as_str())).collect();
        nullable.push("null".into());
        out.insert("type".into(), Value::Array(nullable));
        if let Some(Value::Array(e)) = out.get_mut("enum") {
            e.push(Value::Null);
        }
        notes.push(format!(
            "{at}/default: `null` (Python's `None`) is a value of the parameter: `type` also \
             admits `null`"
        ));
        return;
    }
    if split.is_none()
        && let Some(c) = types
            .iter()
            .find_map(|t| convert(d, t))
            .filter(|c| in_enum(c))
    {
        notes.push(format!("{at}/default: `{d}` converted to `{c}`"));
        out.insert("default".into(), c);
        return;
    }
    notes.push(format!(
        "{at}/default: `{d}` is not a value of the schema; the schema also admits exactly it"
    ));
    admit(out, vec![d.clone()]);
}
