//! Coercion: what the schema admits at each place, and the changes made to arguments that are
//! not valid as sent (see the module documentation of [`super`]).

use std::fmt::Write as _;

use serde_json::Value;
use toolgate_model::config::location::escape;

use super::{Coercion, CoercionKind};

pub(super) const MAX_DEPTH: usize = 48;

/// The JSON types a schema admits, as bit flags (`NUMBER` admits integers too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const INTEGER: u8 = 4;
    const NUMBER: u8 = 8;
    const STRING: u8 = 16;
    const ARRAY: u8 = 32;
    const OBJECT: u8 = 64;
    const ALL: u8 = 127;

    fn named(name: &str) -> u8 {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => Self::ALL,
        }
    }

    fn of(value: &Value) -> u8 {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::INTEGER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn integers(self) -> bool {
        self.has(Self::INTEGER | Self::NUMBER)
    }

    /// Both admit it (an integer is admitted by `integer` and by `number`).
    fn and(self, other: Types) -> Types {
        let mut bits = self.0 & other.0;
        if self.integers() && other.integers() {
            bits |= Self::INTEGER;
        }
        Types(bits)
    }
}

/// The types `schema` admits; `None` when it does not constrain them.
fn types(root: &Value, schema: &Value, depth: usize) -> Option<Types> {
    let Value::Object(s) = schema else {
        return None;
    };
    if depth > MAX_DEPTH {
        return None;
    }
    let mut known: Option<Types> = None;
    let mut and = |t: Types| {
        known = Some(known.map_or(t, |k| k.and(t)));
    };
    match s.get("type") {
        Some(Value::String(t)) => and(Types(Types::named(t))),
        Some(Value::Array(ts)) => and(Types(
            ts.iter()
                .map(|t| t.as_str().map_or(Types::ALL, Types::named))
                .fold(0, |a, b| a | b),
        )),
        _ => {}
    }
    if let Some(c) = s.get("const") {
        and(Types(Types::of(c)));
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        and(Types(options.iter().map(Types::of).fold(0, |a, b| a | b)));
    }
    if let Some(target) = s.get("$ref").and_then(|r| resolve(root, r))
        && let Some(t) = types(root, target, depth + 1)
    {
        and(t);
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for branch in all {
            if let Some(t) = types(root, branch, depth + 1) {
                and(t);
            }
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            let mut union = 0;
            let mut constrained = true;
            for branch in branches {
                match types(root, branch, depth + 1) {
                    Some(t) => union |= t.0,
                    None => constrained = false,
                }
            }
            if constrained {
                and(Types(union));
            }
        }
    }
    known
}

/// A local `$ref` (`#`, `#/$defs/x`); anything else is not followed.
fn resolve<'s>(root: &'s Value, reference: &Value) -> Option<&'s Value> {
    let fragment = reference.as_str()?.strip_prefix('#')?;
    root.pointer(fragment)
}

/// The schema objects that together describe the same instance as `schema`: itself, its `$ref`
/// target, its `allOf` members, and the one branch of an `anyOf` / `oneOf` that is not plain
/// `null` when there is exactly one (the shape of `Option<Struct>`).
pub(super) fn views<'s>(root: &'s Value, schema: &'s Value, depth: usize) -> Vec<&'s Value> {
    let mut out = Vec::new();
    collect_views(root, schema, depth, &mut out);
    out
}

fn collect_views<'s>(root: &'s Value, schema: &'s Value, depth: usize, out: &mut Vec<&'s Value>) {
    let Value::Object(s) = schema else {
        return;
    };
    if depth > MAX_DEPTH || out.iter().any(|v| std::ptr::eq(*v, schema)) {
        return;
    }
    out.push(schema);
    if let Some(target) = s.get("$ref").and_then(|r| resolve(root, r)) {
        collect_views(root, target, depth + 1, out);
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for branch in all {
            collect_views(root, branch, depth + 1, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            let mut not_null = branches
                .iter()
                .filter(|b| types(root, b, depth + 1) != Some(Types(Types::NULL)));
            if let (Some(only), None) = (not_null.next(), not_null.next()) {
                collect_views(root, only, depth + 1, out);
            }
        }
    }
}

pub(super) struct Coercer<'s> {
    pub(super) root: &'s Value,
    /// Whether strings are parsed too (lenient mode), or only `null`s omitted.
    pub(super) lenient: bool,
    pub(super) out: Vec<Coercion>,
}

impl<'s> Coercer<'s> {
    pub(super) fn coerce(
        &mut self,
        value: &mut Value,
        schema: &'s Value,
        pointer: &mut String,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        if self.lenient
            && let Value::String(text) = value
            && let Some(admitted) = types(self.root, schema, 0)
            && let Some(new) = coerce_string(text, admitted)
        {
            self.out.push(Coercion {
                pointer: pointer.clone(),
                kind: CoercionKind::Parsed,
                from: value.clone(),
                to: Some(new.clone()),
            });
            *value = new;
        }
        if let Value::Number(n) = value
            && let Some(whole) = whole_number(n)
            && let Some(admitted) = types(self.root, schema, 0)
            && admitted.has(Types::INTEGER)
            && !admitted.has(Types::NUMBER)
        {
            self.out.push(Coercion {
                pointer: pointer.clone(),
                kind: CoercionKind::WholeNumber,
                from: value.clone(),
                to: Some(whole.clone()),
            });
            *value = whole;
        }
        let views = views(self.root, schema, 0);
        match value {
            Value::Object(map) => {
                let required: Vec<&str> = views
                    .iter()
                    .filter_map(|v| v.get("required").and_then(Value::as_array))
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let declared = declared_property(&views, &key);
                    let Some(sub) = declared.or_else(|| additional_schema(&views)) else {
                        continue;
                    };
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape(&key));
                    let is_null = map.get(&key).is_some_and(Value::is_null);
                    if is_null {
                        let optional = !required.contains(&key.as_str());
                        let admits_null =
                            types(self.root, sub, 0).is_none_or(|t| t.has(Types::NULL));
                        // Only declared properties: a `null` map value is not an omission.
                        if optional && !admits_null && declared.is_some() {
                            map.remove(&key);
                            self.out.push(Coercion {
                                pointer: pointer.clone(),
                                kind: CoercionKind::NullOmitted,
                                from: Value::Null,
                                to: None,
                            });
                        }
                    } else if let Some(v) = map.get_mut(&key) {
                        self.coerce(v, sub, pointer, depth + 1);
                    }
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let Some(sub) = item_schema(&views, i) else {
                        continue;
                    };
                    let len = pointer.len();
                    let _ = write!(pointer, "/{i}");
                    self.coerce(item, sub, pointer, depth + 1);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
}

/// The schema of declared property `key`: the first view's `properties[key]`.
fn declared_property<'s>(views: &[&'s Value], key: &str) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("properties").and_then(|p| p.get(key)))
}

/// The schema of undeclared keys: the first view's `additionalProperties` schema.
fn additional_schema<'s>(views: &[&'s Value]) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("additionalProperties").filter(|a| a.is_object()))
}

/// The schema of item `i`: `prefixItems[i]`, else `items`.
fn item_schema<'s>(views: &[&'s Value], i: usize) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("prefixItems").and_then(|p| p.get(i)))
        .or_else(|| {
            views
                .iter()
                .find_map(|v| v.get("items").filter(|a| a.is_object()))
        })
}

/// `n` as an integer when it is a float without fraction that fits `i64`/`u64` (`2.0` → `2`).
fn whole_number(n: &serde_json::Number) -> Option<Value> {
    let f = n.as_f64().filter(|_| n.is_f64())?;
    if f.fract() != 0.0 || !f.is_finite() {
        return None;
    }
    // Exact conversions only: within ±2^63 every whole f64 is an exact i64.
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    if f >= -(2f64.powi(63)) && f < 2f64.powi(63) {
        return Some(Value::from(f as i64));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if f >= 0.0 && f < 2f64.powi(64) {
        return Some(Value::from(f as u64));
    }
    None
}

/// Whether `v` holds a float without fraction anywhere (`2.0`): JSON Schema counts it as an
/// integer, serde's integer types refuse it, so such arguments take the slow path.
pub(super) fn has_whole_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && whole_number(n).is_some(),
        Value::Array(a) => a.iter().any(has_whole_float),
        Value::Object(m) => m.values().any(has_whole_float),
        _ => false,
    }
}

/// What `text` becomes where the schema admits `admitted` (never a string), if unambiguous.
fn coerce_string(text: &str, admitted: Types) -> Option<Value> {
    if admitted.has(Types::STRING) || admitted.0 == 0 || admitted.0 == Types::ALL || text == "null"
    {
        return None;
    }
    if admitted.integers()
        && text.trim() == text
        && let Ok(Value::Number(n)) = serde_json::from_str::<Value>(text)
    {
        let integral = n.is_i64() || n.is_u64();
        return (integral || admitted.has(Types::NUMBER)).then_some(Value::Number(n));
    }
    if admitted.has(Types::BOOLEAN) {
        match text {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    if admitted.has(Types::OBJECT | Types::ARRAY) {
        let t = text.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) if admitted.has(Types::OBJECT) => return Some(v),
                Ok(v @ Value::Array(_)) if admitted.has(Types::ARRAY) => return Some(v),
                _ => {}
            }
        }
    }
    None
}
