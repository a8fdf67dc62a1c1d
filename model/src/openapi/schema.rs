//! OpenAPI Schema Objects → JSON Schema 2020-12 (OAS 3.0 §4.7.24 / 3.1
//! §4.8.24 "Schema Object").
//!
//! Every referenced schema becomes a `$defs` entry of the tool's schema (`#/components/schemas/Pet`
//! → `#/$defs/Pet`, named in [`defs`]), so recursion stays a `$ref` and nothing is expanded
//! without bound. Each definition is normalised once per document and mode (input / output) and
//! shared by every tool.
//!
//! Normalisation of one schema (this file):
//! - OAS 3.0 `nullable: true` → `"null"` added to `type` (and `null` to `enum`), or
//!   `anyOf: [S, {type: null}]` when there is no `type`; `nullable: false` removed;
//! - `example` → `examples: [example]`; `discriminator`, `xml`, `externalDocs`, the `readOnly`
//!   / `writeOnly` flags, `$schema`, `$id`, `$anchor`, `$dynamicAnchor`, `$dynamicRef`,
//!   `$vocabulary`, nested `$defs` / `definitions` and `x-*` extensions dropped;
//! - OAS 3.0 boolean `exclusiveMinimum` / `exclusiveMaximum` → the numeric 2020-12 form
//!   (JSON Schema Validation §6.2.3, §6.2.5); array `items` → `prefixItems`;
//! - `readOnly` properties left out of input schemas (and `required`), `writeOnly` ones out of
//!   output schemas (OAS 3.0 §4.7.24.3 "Fixed Fields", `readOnly`);
//! - OAS 3.0 (§4.7.26 "Reference Object"): keywords beside `$ref` are ignored; 3.1 keeps them;
//! - `allOf` merged when safe ([`merge`]); `oneOf` / `anyOf` kept;
//! - every `required` name gets a property (`{}` when undeclared);
//! - nesting deeper than [`MAX_DEPTH`] is `E_SCHEMA_TOO_DEEP`.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::refs::{self, MAX_REF_CHAIN, escape};

mod defs;
mod merge;

/// The deepest nesting of schemas converted (levels below one definition).
pub(crate) const MAX_DEPTH: usize = 64;

/// Which side of the call a schema describes (`readOnly` / `writeOnly` handling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// Arguments: `readOnly` properties left out.
    Input,
    /// Results: `writeOnly` properties left out.
    Output,
}

impl Mode {
    /// The flag whose properties this side leaves out.
    pub(crate) fn hidden(self) -> &'static str {
        match self {
            Self::Input => "readOnly",
            Self::Output => "writeOnly",
        }
    }
}

/// Why a schema cannot be converted: skips the operation (input) or drops the output schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// `E_UNRESOLVED_REF`, `W_EXTERNAL_REF`, `E_UNSATISFIABLE_SCHEMA`, `E_SCHEMA_TOO_DEEP`.
    pub code: &'static str,
    /// Where in the document.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl SchemaError {
    fn new(code: &'static str, pointer: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    /// From a failed [`refs::follow`].
    pub(crate) fn from_ref(e: refs::RefError, pointer: &str) -> Self {
        match e {
            refs::RefError::External(r) => Self::new(
                "W_EXTERNAL_REF",
                pointer,
                format!(
                    "`$ref: {r}` points into another document; read the document with \
                     `Document::from_file` to bundle relative files"
                ),
            ),
            refs::RefError::Unresolved(m) => Self::new("E_UNRESOLVED_REF", pointer, m),
        }
    }
}

type Result<T> = std::result::Result<T, SchemaError>;

/// The schema converter of one document: definition names and the normalised definitions.
pub(crate) struct Schemas<'a> {
    root: &'a Value,
    /// OAS 3.1 or later: keywords beside `$ref` count.
    v31: bool,
    name_of: HashMap<String, String>,
    ptr_of: HashMap<String, String>,
    cache: HashMap<(String, Mode), Result<Rc<Value>>>,
    sizes: HashMap<(String, Mode), usize>,
    in_progress: HashSet<(String, Mode)>,
}

impl<'a> Schemas<'a> {
    /// A converter for `root`; the component schemas get their names first, in document order.
    pub(crate) fn new(root: &'a Value, v31: bool) -> Self {
        let mut s = Self {
            root,
            v31,
            name_of: HashMap::new(),
            ptr_of: HashMap::new(),
            cache: HashMap::new(),
            sizes: HashMap::new(),
            in_progress: HashSet::new(),
        };
        if let Some(m) = root
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        {
            for k in m.keys() {
                s.name_for(&format!("#/components/schemas/{}", escape(k)));
            }
        }
        s
    }

    /// Converts the schema `node` found at `ptr`; references stay `$ref`s into `$defs`.
    pub(crate) fn convert(&mut self, node: &Value, ptr: &str, mode: Mode) -> Result<Value> {
        self.norm(node, ptr, mode, 0)
    }

    /// `{$ref: #/$defs/X}` at the root replaced by `X` itself (keywords beside it winning), so
    /// that a body's or a response's properties can be seen.
    pub(crate) fn deref_root(&mut self, mut v: Value, mode: Mode) -> Result<Value> {
        for _ in 0..MAX_REF_CHAIN {
            let Some(name) = v
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .map(str::to_string)
            else {
                return Ok(v);
            };
            let def = self.def(&name, mode, 0)?;
            let Value::Object(mut target) = (*def).clone() else {
                return Ok(v);
            };
            if let Value::Object(m) = &v {
                for (k, x) in m {
                    if k != "$ref" {
                        target.insert(k.clone(), x.clone());
                    }
                }
            }
            v = Value::Object(target);
        }
        Ok(v)
    }

    /// The normalised definition `name`.
    fn def(&mut self, name: &str, mode: Mode, depth: usize) -> Result<Rc<Value>> {
        let ptr = self.ptr_of.get(name).cloned().unwrap_or_default();
        let key = (ptr.clone(), mode);
        if let Some(r) = self.cache.get(&key) {
            return r.clone();
        }
        let root = self.root;
        let Some(node) = refs::lookup(root, &ptr) else {
            return Err(SchemaError::new(
                "E_UNRESOLVED_REF",
                &ptr,
                format!("`$ref: {ptr}` points to nothing"),
            ));
        };
        self.in_progress.insert(key.clone());
        let r = self.norm(node, &ptr, mode, depth).map(Rc::new);
        self.in_progress.remove(&key);
        self.cache.insert(key, r.clone());
        r
    }

    /// `{$ref: "#/$defs/NAME"}` for the reference `r` written at `at`.
    fn reference(&mut self, r: &Value, at: &str) -> Result<Value> {
        let Some(r) = r.as_str() else {
            return Err(SchemaError::new(
                "E_UNRESOLVED_REF",
                at,
                format!("`$ref` is not a string: {r}"),
            ));
        };
        if !r.starts_with('#') {
            return Err(SchemaError::from_ref(
                refs::RefError::External(r.to_string()),
                at,
            ));
        }
        let segs = refs::segments(r).ok_or_else(|| {
            SchemaError::new(
                "E_UNRESOLVED_REF",
                at,
                format!("`$ref: {r}` is not a pointer"),
            )
        })?;
        let canonical: String = std::iter::once("#".to_string())
            .chain(segs.iter().map(|s| escape(s)))
            .collect::<Vec<_>>()
            .join("/");
        if refs::lookup(self.root, &canonical).is_none() {
            return Err(SchemaError::new(
                "E_UNRESOLVED_REF",
                at,
                format!("`$ref: {r}` points to nothing in the document"),
            ));
        }
        let name = self.name_for(&canonical);
        Ok(json!({"$ref": format!("#/$defs/{name}")}))
    }

    /// Whether the schema (or the one its `$ref` points to) sets `flag: true`.
    fn flagged(&self, node: &Value, flag: &str) -> bool {
        if node.get(flag) == Some(&Value::Bool(true)) {
            return true;
        }
        node.get("$ref").is_some()
            && refs::follow(self.root, node, "")
                .is_ok_and(|(t, _)| t.get(flag) == Some(&Value::Bool(true)))
    }

    fn norm(&mut self, node: &Value, ptr: &str, mode: Mode, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(SchemaError::new(
                "E_SCHEMA_TOO_DEEP",
                ptr,
                format!("schemas nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        match node {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::Object(m) => self.norm_obj(m, ptr, mode, depth),
            _ => Ok(json!({})),
        }
    }

    #[allow(clippy::too_many_lines)] // one match over the keywords
    fn norm_obj(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
        mode: Mode,
        depth: usize,
    ) -> Result<Value> {
        if let Some(r) = m.get("$ref") {
            let reference = self.reference(r, ptr)?;
            if !self.v31 || m.len() == 1 {
                return Ok(reference);
            }
            let mut rest = m.clone();
            rest.shift_remove("$ref");
            let Value::Object(mut out) = self.norm_obj(&rest, ptr, mode, depth)? else {
                return Ok(reference);
            };
            if out.is_empty() {
                return Ok(reference);
            }
            out.insert("$ref".into(), reference["$ref"].clone());
            return Ok(Value::Object(out));
        }
        let sub = |k: &str| format!("{ptr}/{}", escape(k));
        let mut out = Map::new();
        let mut removed: Vec<String> = Vec::new();
        for (k, v) in m {
            match k.as_str() {
                "nullable" | "discriminator" | "xml" | "externalDocs" | "example" | "readOnly"
                | "writeOnly" | "$schema" | "$id" | "$anchor" | "$dynamicAnchor"
                | "$dynamicRef" | "$vocabulary" | "$defs" | "definitions" => {}
                k if k.starts_with("x-") => {}
                "type" => {
                    if let Some(t) = clean_type(v) {
                        out.insert(k.into(), t);
                    }
                }
                "properties" => {
                    let Value::Object(props) = v else { continue };
                    let mut o = Map::new();
                    let hidden = mode.hidden();
                    let at = sub(k);
                    for (name, s) in props {
                        if self.flagged(s, hidden) {
                            removed.push(name.clone());
                            continue;
                        }
                        let p = format!("{at}/{}", escape(name));
                        o.insert(name.clone(), self.norm(s, &p, mode, depth + 1)?);
                    }
                    out.insert(k.into(), Value::Object(o));
                }
                "patternProperties" | "dependentSchemas" => {
                    let Value::Object(props) = v else { continue };
                    let mut o = Map::new();
                    let at = sub(k);
                    for (name, s) in props {
                        let p = format!("{at}/{}", escape(name));
                        o.insert(name.clone(), self.norm(s, &p, mode, depth + 1)?);
                    }
                    out.insert(k.into(), Value::Object(o));
                }
                "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties" => {
                    if v.is_object() || v.is_boolean() {
                        out.insert(k.into(), self.norm(v, &sub(k), mode, depth + 1)?);
                    }
                }
                "items" | "additionalItems" => match v {
                    Value::Array(a) if k == "items" && !a.is_empty() => {
                        let mut list = Vec::new();
                        for (i, s) in a.iter().enumerate() {
                            list.push(self.norm(
                                s,
                                &format!("{ptr}/items/{i}"),
                                mode,
                                depth + 1,
                            )?);
                        }
                        out.insert("prefixItems".into(), Value::Array(list));
                    }
                    Value::Object(_) | Value::Bool(_) => {
                        if k == "additionalItems" && out.contains_key("items") {
                            continue;
                        }
                        out.insert("items".into(), self.norm(v, &sub(k), mode, depth + 1)?);
                    }
                    _ => {}
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    let Value::Array(a) = v else { continue };
                    if a.is_empty() {
                        continue;
                    }
                    let mut list = Vec::new();
                    for (i, s) in a.iter().enumerate() {
                        list.push(self.norm(s, &format!("{ptr}/{k}/{i}"), mode, depth + 1)?);
                    }
                    out.insert(k.into(), Value::Array(list));
                }
                "required" => {
                    if let Value::Array(a) = v {
                        let mut seen = Vec::new();
                        for n in a.iter().filter(|n| n.is_string()) {
                            if !seen.contains(n) {
                                seen.push(n.clone());
                            }
                        }
                        out.insert(k.into(), Value::Array(seen));
                    }
                }
                "examples" | "default" if has_ref_key(v) => {}
                "enum" | "examples" => {
                    if v.is_array() {
                        out.insert(k.into(), v.clone());
                    }
                }
                "description" | "title" | "pattern" | "format" | "$comment" => {
                    if v.is_string() {
                        out.insert(k.into(), v.clone());
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let bound = if k == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    match v {
                        Value::Number(_) => {
                            out.insert(k.into(), v.clone());
                        }
                        Value::Bool(true) => {
                            if let Some(b) = m.get(bound).filter(|b| b.is_number()) {
                                out.insert(k.into(), b.clone());
                            }
                        }
                        _ => {}
                    }
                }
                "minimum" | "maximum" => {
                    let excl = if k == "minimum" {
                        "exclusiveMinimum"
                    } else {
                        "exclusiveMaximum"
                    };
                    if m.get(excl) != Some(&Value::Bool(true)) && v.is_number() {
                        out.insert(k.into(), v.clone());
                    }
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        if !removed.is_empty()
            && let Some(Value::Array(req)) = out.get_mut("required")
        {
            req.retain(|n| !n.as_str().is_some_and(|n| removed.iter().any(|r| r == n)));
        }
        if out
            .get("required")
            .is_some_and(|r| r.as_array().is_some_and(Vec::is_empty))
        {
            out.shift_remove("required");
        }
        if let Some(ex) = m.get("example").filter(|e| !has_ref_key(e))
            && !out.contains_key("examples")
        {
            out.insert("examples".into(), Value::Array(vec![ex.clone()]));
        }
        if out.contains_key("allOf") {
            out = self.merge_all_of(out, ptr, mode, depth)?;
            // A property hidden here or by any member stays hidden, even when another member
            // lists it in `required` (the merge would bring it back as `{}`).
            removed.extend(self.hidden_in_all_of(m, mode));
            drop_properties(&mut out, &removed);
        }
        declare_required(&mut out);
        if m.get("nullable") == Some(&Value::Bool(true)) {
            out = nullable(out);
        }
        Ok(Value::Object(out))
    }
}

/// Whether an example or default value has a `$ref` key somewhere (it would read as a
/// reference to tools that look for them).
fn has_ref_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref_key),
        Value::Array(a) => a.iter().any(has_ref_key),
        _ => false,
    }
}

/// The properties `names` removed from `properties` and `required` (an empty `required` goes).
fn drop_properties(out: &mut Map<String, Value>, names: &[String]) {
    if names.is_empty() {
        return;
    }
    if let Some(Value::Object(p)) = out.get_mut("properties") {
        p.retain(|k, _| !names.contains(k));
    }
    if let Some(Value::Array(req)) = out.get_mut("required") {
        req.retain(|n| !n.as_str().is_some_and(|n| names.iter().any(|r| r == n)));
        if req.is_empty() {
            out.shift_remove("required");
        }
    }
}

/// Every `required` name that `properties` does not declare gets the schema `{}` (any value):
/// the same set of instances, and consumers that require every `required` name to be a
/// property (Gemini: `required[0]: property is not defined`) accept it.
fn declare_required(out: &mut Map<String, Value>) {
    let Some(Value::Array(req)) = out.get("required") else {
        return;
    };
    let missing: Vec<String> = req
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| {
            !out.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(*n))
        })
        .map(str::to_string)
        .collect();
    if missing.is_empty() {
        return;
    }
    let props = out
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        for n in missing {
            p.insert(n, json!({}));
        }
    }
}

const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// `type` kept with only JSON Schema type names (unique); `None` when none is left.
fn clean_type(v: &Value) -> Option<Value> {
    let list = type_list(v);
    let mut out: Vec<String> = Vec::new();
    for t in list {
        if TYPES.contains(&t.as_str()) && !out.contains(&t) {
            out.push(t);
        }
    }
    match out.len() {
        0 => None,
        1 => out.into_iter().next().map(Value::String),
        _ => Some(Value::Array(out.into_iter().map(Value::String).collect())),
    }
}

fn type_list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// OAS 3.0 `nullable: true` in JSON Schema 2020-12.
fn nullable(mut out: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::Array(e)) = out.get_mut("enum")
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            if t != "null" {
                out.insert("type".into(), json!([t, "null"]));
            }
            out
        }
        Some(Value::Array(ts)) => {
            if !ts.contains(&json!("null")) {
                ts.push(json!("null"));
            }
            out
        }
        _ => {
            let constraining = out.keys().any(|k| {
                !matches!(
                    k.as_str(),
                    "description"
                        | "title"
                        | "examples"
                        | "default"
                        | "deprecated"
                        | "enum"
                        | "$comment"
                )
            });
            if !constraining {
                return out;
            }
            let mut wrapper = Map::new();
            for k in ["description", "title", "default", "examples", "deprecated"] {
                if let Some(v) = out.shift_remove(k) {
                    wrapper.insert(k.into(), v);
                }
            }
            wrapper.insert(
                "anyOf".into(),
                json!([Value::Object(out), {"type": "null"}]),
            );
            wrapper
        }
    }
}
