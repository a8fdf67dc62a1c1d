//! Schema-valid arguments for a tool's input schema (JSON Schema 2020-12 with `$defs`, as the
//! OpenAPI conversion produces it): required properties only, the first `const` / `enum` value,
//! `examples` / `default` / `example` when they validate, formats, length and range bounds,
//! `pattern` (a small sampler for the regex subset APIs use, checked with `jsonschema`),
//! `oneOf` / `anyOf` (the first branch that validates), `allOf` (merged), `$ref` into `$defs`
//! (bounded depth) and `contentEncoding: base64`.
//!
//! [`generate`] always validates what it produced against the whole schema: a generator failure
//! is reported as such ([`GenFailure`]), never sent.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// `$ref`s expanded along one path before the generator gives up on it.
const MAX_REF_DEPTH: usize = 12;
/// Schema nesting (properties, items, branches) followed before the generator gives up.
const MAX_NESTING: usize = 40;
/// A small valid base64 value (`hello`).
pub const BASE64: &str = "aGVsbG8=";

/// Why no valid arguments were found.
#[derive(Debug, Clone)]
pub struct GenFailure {
    /// What the generator produced, if anything.
    pub candidate: Option<Value>,
    /// The validator's errors (or why nothing was produced).
    pub errors: Vec<String>,
}

impl std::fmt::Display for GenFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.candidate {
            Some(c) => write!(f, "candidate {c} is invalid: {}", self.errors.join("; ")),
            None => write!(f, "no candidate: {}", self.errors.join("; ")),
        }
    }
}

/// A `jsonschema` validator as the runtime compiles one: 2020-12 unless `$schema` says
/// otherwise, known formats asserted.
pub fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Arguments that validate against `schema`, or why there are none.
pub fn generate(schema: &Value) -> Result<Value, GenFailure> {
    generate_with(schema, false)
}

/// [`generate`], with every optional top-level argument filled too when `optional` (each
/// parameter then goes on the wire, which exercises its serialization).
pub fn generate_with(schema: &Value, optional: bool) -> Result<Value, GenFailure> {
    let whole = validator(schema).map_err(|e| GenFailure {
        candidate: None,
        errors: vec![format!("the schema does not compile: {e}")],
    })?;
    let generator = Generator::new(schema);
    let Some(candidate) = generator.gen_top(schema, optional) else {
        return Err(GenFailure {
            candidate: None,
            errors: vec!["no value satisfies the generator's rules".into()],
        });
    };
    let errors: Vec<String> = whole
        .iter_errors(&candidate)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(candidate)
    } else {
        Err(GenFailure {
            candidate: Some(candidate),
            errors,
        })
    }
}

/// Generates values for subschemas of one root schema (whose `$defs` its `$ref`s point into).
pub struct Generator<'s> {
    root: &'s Value,
    /// Compiled validators of subschemas, by their JSON text (`None`: does not compile).
    validators: RefCell<HashMap<String, Option<jsonschema::Validator>>>,
}

impl<'s> Generator<'s> {
    pub fn new(root: &'s Value) -> Self {
        Self {
            root,
            validators: RefCell::new(HashMap::new()),
        }
    }

    /// The root: an object with the required properties; arrays get at least one item (an
    /// empty array parameter is not sent at all, so a required one would be missing).
    fn gen_top(&self, schema: &Value, optional: bool) -> Option<Value> {
        self.value_of(schema, Ctx::top().optional(optional))
    }

    /// Whether `value` validates against `schema` (a subschema of the root; the root's
    /// `$defs` are attached when it has `$ref`s).
    pub fn valid(&self, schema: &Value, value: &Value) -> bool {
        let with_defs = self.with_defs(schema);
        let key = with_defs.to_string();
        let mut cache = self.validators.borrow_mut();
        let entry = cache
            .entry(key)
            .or_insert_with(|| validator(&with_defs).ok());
        entry.as_ref().is_some_and(|v| v.is_valid(value))
    }

    fn with_defs(&self, schema: &Value) -> Value {
        let Value::Object(obj) = schema else {
            return schema.clone();
        };
        let mut obj = obj.clone();
        if schema.to_string().contains("\"$ref\"") {
            for key in ["$defs", "definitions"] {
                if let Some(defs) = self.root.get(key) {
                    obj.entry(key.to_string()).or_insert_with(|| defs.clone());
                }
            }
        }
        Value::Object(obj)
    }

    /// The schema a local `$ref` (`#/$defs/X`, any JSON pointer into the root) points to.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        let pointer = percent_decode(pointer);
        self.root.pointer(&pointer)
    }

    fn value_of(&self, schema: &Value, ctx: Ctx) -> Option<Value> {
        if ctx.nesting > MAX_NESTING {
            return None;
        }
        let obj = match schema {
            Value::Bool(false) => return None,
            Value::Object(o) => o,
            _ => return Some(json!("x")),
        };
        if let Some(Value::String(r)) = obj.get("$ref") {
            if ctx.refs >= MAX_REF_DEPTH {
                return None;
            }
            let target = self.resolve(r)?;
            let rest = without(obj, &["$ref"]);
            let next = ctx.deeper_ref();
            if has_constraints(&rest) {
                let merged = self.merge(&[target.clone(), Value::Object(rest)], next)?;
                return self.value_of(&merged, next);
            }
            return self.value_of(target, next);
        }
        if let Some(c) = obj.get("const") {
            return Some(c.clone());
        }
        if let Some(Value::Array(values)) = obj.get("enum") {
            return values
                .iter()
                .find(|v| !v.is_null() && self.valid(schema, v))
                .or_else(|| values.iter().find(|v| self.valid(schema, v)))
                .cloned();
        }
        let samples = obj
            .get("examples")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .chain(obj.get("default"))
            .chain(obj.get("example"));
        for sample in samples {
            if !sample.is_null() && self.valid(schema, sample) {
                return Some(sample.clone());
            }
        }
        if let Some(Value::Array(parts)) = obj.get("allOf") {
            let mut all = vec![Value::Object(without(obj, &["allOf"]))];
            all.extend(parts.iter().cloned());
            let merged = self.merge(&all, ctx.deeper())?;
            return self.value_of(&merged, ctx.deeper());
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = obj.get(key) {
                let rest = Value::Object(without(obj, &[key]));
                for branch in branches {
                    let Some(merged) = self.merge(&[rest.clone(), branch.clone()], ctx.deeper())
                    else {
                        continue;
                    };
                    for optional in [false, true] {
                        let Some(value) = self.value_of(&merged, ctx.deeper().optional(optional))
                        else {
                            continue;
                        };
                        if self.valid(schema, &value) {
                            return Some(value);
                        }
                    }
                }
                return None;
            }
        }
        match pick_type(obj) {
            "null" => Some(Value::Null),
            "boolean" => Some(Value::Bool(true)),
            "integer" => number(obj, true),
            "number" => number(obj, false),
            "array" => self.gen_array(obj, ctx),
            "object" => self.gen_object(obj, ctx),
            _ => self.gen_string(schema, obj),
        }
    }

    fn gen_object(&self, obj: &Map<String, Value>, ctx: Ctx) -> Option<Value> {
        let props = obj.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let extra = match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(s @ Value::Object(_)) => Some(s.clone()),
            _ => Some(json!({})),
        };
        let child = ctx.child();
        let mut out = Map::new();
        for name in &required {
            let sub = props
                .and_then(|p| p.get(*name))
                .cloned()
                .or_else(|| extra.clone())
                .unwrap_or(json!({}));
            out.insert((*name).to_string(), self.value_of(&sub, child)?);
        }
        // An empty object parameter is an empty path segment or nothing at all on the wire
        // (prism 5.14 crashes on some): a top-level object gets its optional properties.
        let fill = ctx.optional || (ctx.top && ctx.nesting > 0 && out.is_empty());
        if fill && let Some(props) = props {
            for (name, sub) in props {
                if !out.contains_key(name)
                    && let Some(v) = self.value_of(sub, child)
                {
                    out.insert(name.clone(), v);
                }
            }
        }
        let min = obj
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        if out.len() < min {
            for (name, sub) in props.into_iter().flatten() {
                if out.len() >= min {
                    break;
                }
                if !out.contains_key(name)
                    && let Some(v) = self.value_of(sub, child)
                {
                    out.insert(name.clone(), v);
                }
            }
            let mut i = 0;
            while out.len() < min {
                let sub = extra.clone()?;
                out.insert(format!("extra{i}"), self.value_of(&sub, child)?);
                i += 1;
            }
        }
        Some(Value::Object(out))
    }

    fn gen_array(&self, obj: &Map<String, Value>, ctx: Ctx) -> Option<Value> {
        let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = obj
            .get("maxItems")
            .and_then(Value::as_u64)
            .map(|m| m as usize);
        let mut n = if ctx.top { min.max(1) } else { min };
        if let Some(max) = max {
            n = n.min(max);
        }
        let prefix: &[Value] = obj
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let items = obj.get("items").cloned().unwrap_or(json!({}));
        let unique = obj.get("uniqueItems").and_then(Value::as_bool) == Some(true);
        let child = ctx.child();
        let mut out: Vec<Value> = Vec::new();
        for i in 0..n.max(prefix.len().min(min)) {
            let sub = prefix.get(i).unwrap_or(&items);
            let mut value = self.value_of(sub, child)?;
            if unique && out.contains(&value) {
                value = self.distinct(sub, &out, child)?;
            }
            out.push(value);
        }
        Some(Value::Array(out))
    }

    /// A value of `schema` not in `taken` (for `uniqueItems`).
    fn distinct(&self, schema: &Value, taken: &[Value], ctx: Ctx) -> Option<Value> {
        let resolved = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self.resolve(r)?,
            None => schema,
        };
        if let Some(Value::Array(values)) = resolved.get("enum") {
            return values.iter().find(|v| !taken.contains(v)).cloned();
        }
        let base = self.value_of(schema, ctx)?;
        (1..50).find_map(|i| {
            let candidate = match &base {
                Value::String(s) => json!(format!("{s}{i}")),
                Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) as i64 + i),
                _ => return None,
            };
            (!taken.contains(&candidate) && self.valid(schema, &candidate)).then_some(candidate)
        })
    }

    fn gen_string(&self, schema: &Value, obj: &Map<String, Value>) -> Option<Value> {
        let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = obj
            .get("maxLength")
            .and_then(Value::as_u64)
            .map(|m| m as usize);
        let mut candidates: Vec<String> = Vec::new();
        if obj.get("contentEncoding").and_then(Value::as_str) == Some("base64") {
            candidates.push(BASE64.into());
        }
        if let Some(format) = obj.get("format").and_then(Value::as_str)
            && let Some(v) = format_value(format)
        {
            candidates.push(v.into());
        }
        if let Some(pattern) = obj.get("pattern").and_then(Value::as_str) {
            candidates.extend(regex_samples(pattern, min));
        }
        candidates.extend(
            [
                "test", "x", "1", "abc", "a1", "A", "test-1", "test_1", "1.0", "true",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        candidates
            .into_iter()
            .map(|c| fit_length(c, min, max))
            .map(Value::String)
            .find(|c| self.valid(schema, c))
    }

    /// `parts` merged into one schema (`allOf` semantics, approximately): properties united
    /// (a property in several parts becomes their `allOf`), `required` united, `type`
    /// intersected, bounds tightened, other keywords from the first part that has them.
    fn merge(&self, parts: &[Value], ctx: Ctx) -> Option<Value> {
        let mut flat: Vec<Map<String, Value>> = Vec::new();
        self.flatten(parts, ctx, &mut flat)?;
        let mut out = Map::new();
        for part in flat {
            for (key, value) in part {
                match (key.as_str(), out.get_mut(&key)) {
                    (_, None) => {
                        out.insert(key, value);
                    }
                    ("properties", Some(Value::Object(have))) => {
                        for (name, sub) in value.as_object().into_iter().flatten() {
                            match have.get_mut(name) {
                                Some(existing) => {
                                    *existing = json!({"allOf": [existing.clone(), sub.clone()]});
                                }
                                None => {
                                    have.insert(name.clone(), sub.clone());
                                }
                            }
                        }
                    }
                    ("required", Some(Value::Array(have))) => {
                        for name in value.as_array().into_iter().flatten() {
                            if !have.contains(name) {
                                have.push(name.clone());
                            }
                        }
                    }
                    ("type", Some(have)) => {
                        let a = types(have);
                        let b = types(&value);
                        let both: Vec<Value> = a
                            .iter()
                            .filter(|t| {
                                b.contains(t) || (**t == "integer" && b.contains(&"number"))
                            })
                            .map(|t| json!(t))
                            .chain(
                                b.iter()
                                    .filter(|t| **t == "integer" && a.contains(&"number"))
                                    .map(|t| json!(t)),
                            )
                            .collect();
                        *have = match both.len() {
                            0 => return None,
                            1 => both[0].clone(),
                            _ => Value::Array(both),
                        };
                    }
                    (
                        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties",
                        Some(have),
                    ) if value.as_f64() > have.as_f64() => {
                        *have = value;
                    }
                    (
                        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties",
                        Some(have),
                    ) if value.as_f64() < have.as_f64() => {
                        *have = value;
                    }
                    ("allOf" | "oneOf" | "anyOf", Some(have)) => {
                        // Both parts branch: keep both as an allOf of the two.
                        let mine = json!({ key.clone(): have.clone() });
                        let theirs = json!({ key.clone(): value });
                        out.remove(&key);
                        let all = out.entry("allOf").or_insert_with(|| json!([]));
                        if let Value::Array(all) = all {
                            all.push(mine);
                            all.push(theirs);
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(Value::Object(out))
    }

    /// Resolves top-level `$ref`s and nested `allOf`s of `parts` into plain objects.
    fn flatten(&self, parts: &[Value], ctx: Ctx, out: &mut Vec<Map<String, Value>>) -> Option<()> {
        if ctx.refs >= MAX_REF_DEPTH || ctx.nesting > MAX_NESTING {
            return None;
        }
        for part in parts {
            match part {
                Value::Bool(true) => {}
                Value::Bool(false) => return None,
                Value::Object(obj) => {
                    if let Some(Value::String(r)) = obj.get("$ref") {
                        let target = self.resolve(r)?;
                        self.flatten(std::slice::from_ref(target), ctx.deeper_ref(), out)?;
                        out.push(without(obj, &["$ref"]));
                    } else if let Some(Value::Array(all)) = obj.get("allOf") {
                        self.flatten(all, ctx.deeper(), out)?;
                        out.push(without(obj, &["allOf"]));
                    } else {
                        out.push(obj.clone());
                    }
                }
                _ => {}
            }
        }
        Some(())
    }
}

/// Where in the schema the generator is.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    /// `$ref`s expanded so far on this path.
    refs: usize,
    /// Subschemas entered so far on this path.
    nesting: usize,
    /// The root object or one of its properties.
    top: bool,
    /// Fill optional properties of the next object too (to tell `oneOf` branches apart).
    optional: bool,
}

impl Ctx {
    fn top() -> Self {
        Self {
            refs: 0,
            nesting: 0,
            top: true,
            optional: false,
        }
    }
    fn deeper_ref(self) -> Self {
        Self {
            refs: self.refs + 1,
            nesting: self.nesting + 1,
            ..self
        }
    }
    fn deeper(self) -> Self {
        Self {
            nesting: self.nesting + 1,
            ..self
        }
    }
    /// Entering a property or an item: arrays nested there may stay empty, optional properties
    /// stay out. The root's properties count as top.
    fn child(self) -> Self {
        Self {
            nesting: self.nesting + 1,
            top: self.top && self.nesting == 0,
            optional: false,
            ..self
        }
    }
    fn optional(self, optional: bool) -> Self {
        Self { optional, ..self }
    }
}

fn without(obj: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    obj.iter()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether a schema object says anything besides annotations.
fn has_constraints(obj: &Map<String, Value>) -> bool {
    const ANNOTATIONS: &[&str] = &[
        "description",
        "title",
        "examples",
        "example",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$defs",
        "definitions",
    ];
    obj.keys()
        .any(|k| !ANNOTATIONS.contains(&k.as_str()) && !k.starts_with("x-"))
}

fn types(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The type to generate: the first non-null of `type`, else inferred from the keywords.
fn pick_type(obj: &Map<String, Value>) -> &str {
    if let Some(t) = obj.get("type") {
        let all = types(t);
        if let Some(first) = all.iter().find(|t| **t != "null") {
            return first;
        }
        if !all.is_empty() {
            return "null";
        }
    }
    let has = |keys: &[&str]| keys.iter().any(|k| obj.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "patternProperties",
    ]) {
        "object"
    } else if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
    ]) {
        "array"
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        "number"
    } else {
        "string"
    }
}

/// A value within the bounds: 1 when allowed (ids are usually positive), moved into
/// `minimum` / `maximum` (exclusive ones too) and onto `multipleOf`.
fn number(obj: &Map<String, Value>, integer: bool) -> Option<Value> {
    let get = |k: &str| obj.get(k).and_then(Value::as_f64);
    let step = if integer { 1.0 } else { 0.5 };
    let mut lo = get("minimum");
    if let Some(x) = get("exclusiveMinimum") {
        lo = Some(lo.map_or(x + step, |l: f64| l.max(x + step)));
    }
    let mut hi = get("maximum");
    if let Some(x) = get("exclusiveMaximum") {
        hi = Some(hi.map_or(x - step, |h: f64| h.min(x - step)));
    }
    let mut v: f64 = 1.0;
    if let Some(lo) = lo {
        v = v.max(if integer { lo.ceil() } else { lo });
    }
    if let Some(hi) = hi {
        v = v.min(if integer { hi.floor() } else { hi });
    }
    if let Some(m) = get("multipleOf").filter(|m| *m > 0.0) {
        let up = (v / m).ceil() * m;
        v = if hi.is_none_or(|hi| up <= hi) {
            up
        } else {
            (v / m).floor() * m
        };
    }
    if integer || v.fract() == 0.0 && v.abs() < 9.0e15 {
        Some(json!(v as i64))
    } else {
        Some(json!(v))
    }
}

fn format_value(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2024-01-02T03:04:05Z",
        "date" => "2024-01-02",
        "time" => "03:04:05Z",
        "duration" => "P1D",
        "email" | "idn-email" => "user@example.com",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "uri" | "iri" | "url" | "uri-reference" | "iri-reference" => "https://example.com/x",
        "uri-template" => "https://example.com/{id}",
        "uuid" => "123e4567-e89b-42d3-a456-426614174000",
        "json-pointer" => "/a",
        "relative-json-pointer" => "0",
        "regex" => "^a$",
        "byte" | "binary" | "base64" => BASE64,
        "int32" | "int64" | "integer" | "unix-time" => "1",
        "decimal" | "double" | "float" | "number" => "1.5",
        "password" => "secret",
        "phone" => "+15555550100",
        _ => return None,
    })
}

/// `s` padded with `x` to `min` characters and cut to `max`.
fn fit_length(mut s: String, min: usize, max: Option<usize>) -> String {
    while s.chars().count() < min {
        s.push('x');
    }
    if let Some(max) = max
        && s.chars().count() > max
    {
        s = s.chars().take(max).collect();
    }
    s
}

pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len() + 1
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

mod regex;

pub use regex::regex_samples;

#[cfg(test)]
mod tests;
