//! Rules shared by every dialect, applied to the internal JSON Schema 2020-12 form.
//!
//! 1. **Numeric widths**. schemars writes OpenAPI-style widths (`int8`..`int128`, `uint`,
//!    `uint8`..`uint128`, `float`, `double`) into `format`. JSON Schema 2020-12 §7.2.3 (format
//!    vocabulary) defines no such formats, and Ajv-based MCP clients warn or fail on them, so they
//!    are removed and the width is written as `minimum` / `maximum` (an existing stricter bound is
//!    kept). 64- and 128-bit widths give no bound except `minimum: 0` for unsigned ones (JSON
//!    numbers beyond 2^53 are not portable anyway). Standard formats (`date-time`, `uuid`, ...)
//!    are kept here; a dialect may drop them later.
//! 2. **`$ref` inlining**. Every `$ref` to an acyclic `#/$defs/X` (or
//!    `#/definitions/X`) is replaced by `X`, the use-site keywords taking precedence over `X`'s own
//!    (so the field's doc wins over the type's doc). References that are part of a cycle (and `#`)
//!    are kept under `$defs` when the dialect allows recursion, with any keyword written beside
//!    the `$ref` moved into a wrapper (`{"description": d, "allOf": [{"$ref": r}]}`, or `anyOf`
//!    where `allOf` is not allowed), because draft-07 consumers ignore siblings of `$ref`.
//!    A dialect without `$ref` (Gemini) unrolls them instead to a configured depth
//!    ([`super::unroll`]). Inlining that would copy more than
//!    [`super::refs::MAX_INLINED_VALUES`] JSON values keeps every definition under `$defs`
//!    instead (or fails, without `$ref`). A dangling or non-local `$ref` always fails.
//!    Implemented in
//!    [`super::refs`].
//! 3. **Documented unit enums**. `oneOf` whose branches are all `{const, [type],
//!    [description]}` is the same set of values as an `enum` (JSON Schema 2020-12 §6.1.2–6.1.3);
//!    it becomes `{type, enum, description: "A: doc. B: doc."}`.

/// Keywords that only annotate a schema (JSON Schema 2020-12 §9 meta-data and content
/// vocabularies, plus identifiers): a dialect that does not support one drops it without a note,
/// since no constraint is lost.
pub(super) const ANNOTATIONS: [&str; 8] = [
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "$id",
];

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

/// Messages about meaning-changing transformations, each prefixed with a JSON pointer.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    pub(crate) list: Vec<String>,
}

impl Notes {
    pub(crate) fn push(&mut self, ptr: &str, msg: impl std::fmt::Display) {
        let at = if ptr.is_empty() { "/" } else { ptr };
        let line = format!("{at}: {msg}");
        if !self.list.contains(&line) {
            self.list.push(line);
        }
    }

    pub(crate) fn push_whole(&mut self, msg: String) {
        self.list.push(msg);
    }
}

/// A callback on one schema object and its JSON pointer.
pub(crate) type Visit<'a> = dyn FnMut(&mut Map<String, Value>, &str) -> Result<(), String> + 'a;

/// Calls `f` on every schema object under `v` (pre-order: `f` runs before the subschemas of the
/// object, as `f` left them, are visited).
pub(crate) fn walk(v: &mut Value, ptr: &str, f: &mut Visit<'_>) -> Result<(), String> {
    let Value::Object(map) = v else {
        return Ok(());
    };
    f(map, ptr)?;
    for (k, child) in map.iter_mut() {
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(m) = child {
                    for (name, s) in m.iter_mut() {
                        walk(s, &format!("{ptr}/{k}/{}", escape(name)), f)?;
                    }
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems"
            | "allOf"
            | "anyOf"
            | "oneOf"
            | "prefixItems" => match child {
                Value::Array(a) => {
                    for (i, s) in a.iter_mut().enumerate() {
                        walk(s, &format!("{ptr}/{k}/{i}"), f)?;
                    }
                }
                other => walk(other, &format!("{ptr}/{k}"), f)?,
            },
            _ => {}
        }
    }
    Ok(())
}

pub(crate) use crate::config::location::escape;

/// How a dialect treats recursive `$ref`s.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Recursion {
    /// Keep them under `$defs`; siblings of `$ref` are moved into this one-branch combinator.
    Keep(&'static str),
    /// Inline them this many levels deep (at least 1), with a described placeholder below
    /// ([`super::unroll`]); each recursive type unrolled is noted.
    Unroll(usize),
}

/// Rules 1–3 on an object-root schema; `notes` receives what unrolling recursion changed.
pub(crate) fn common(
    mut root: Value,
    recursion: Recursion,
    notes: &mut Notes,
) -> Result<Value, String> {
    walk(&mut root, "", &mut |m, _| {
        lower_format(m);
        Ok(())
    })?;
    super::refs::inline_refs(&mut root, recursion, notes)?;
    walk(&mut root, "", &mut |m, _| {
        lower_const_one_of(m);
        Ok(())
    })?;
    Ok(root)
}

fn has_type(m: &Map<String, Value>, t: &str) -> bool {
    match m.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|x| x == t),
        _ => false,
    }
}

/// Rule 1.
fn lower_format(m: &mut Map<String, Value>) {
    let Some(Value::String(f)) = m.get("format") else {
        return;
    };
    if m.contains_key("type") && !has_type(m, "integer") && !has_type(m, "number") {
        return;
    }
    let (lo, hi): (Option<i128>, Option<i128>) = match f.as_str() {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint" | "uint64" | "uint128" => (Some(0), None),
        "int" | "int64" | "int128" | "float" | "double" => (None, None),
        _ => return,
    };
    m.remove("format");
    let num = |n: i128| Value::Number(Number::from_i128(n).expect("fits"));
    if let Some(lo) = lo {
        let keep = m
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|x| x >= lo as f64);
        if !keep {
            m.insert("minimum".into(), num(lo));
        }
    }
    if let Some(hi) = hi {
        let keep = m
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|x| x <= hi as f64);
        if !keep {
            m.insert("maximum".into(), num(hi));
        }
    }
}

/// Rule 3.
fn lower_const_one_of(m: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = m.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut types = HashSet::new();
    let mut docs = Vec::new();
    for b in branches {
        let Value::Object(b) = b else { return };
        let Some(c) = b.get("const") else { return };
        if b.keys()
            .any(|k| !matches!(k.as_str(), "const" | "type" | "description" | "title"))
        {
            return;
        }
        types.insert(json_type(c));
        if let Some(Value::String(d)) = b.get("description") {
            let name = c.as_str().map_or_else(|| c.to_string(), str::to_string);
            docs.push(format!("{name}: {}", sentence(d)));
        }
        values.push(c.clone());
    }
    if values.is_empty() {
        return;
    }
    m.remove("oneOf");
    if types.len() == 1 && !m.contains_key("type") {
        let t = types.into_iter().next().unwrap_or("string");
        m.insert("type".into(), t.into());
    }
    m.insert("enum".into(), Value::Array(values));
    if !docs.is_empty() {
        let docs = docs.join(" ");
        let d = match m.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{} {docs}", sentence(d)),
            _ => docs,
        };
        m.insert("description".into(), d.into());
    }
}

/// `s` ending with a full stop (or other final punctuation).
pub(crate) fn sentence(s: &str) -> String {
    let s = s.trim();
    if s.ends_with(['.', '!', '?']) {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

/// The JSON Schema type name of a value.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Removes the ways `m` accepts `null` (`"null"` in a `type` array, a `{type: null}` branch of
/// `anyOf` / `oneOf`, `null` in `enum`); a single remaining branch is merged into `m` (keywords
/// already in `m`, such as a use-site description, win). Returns whether anything was removed.
pub(crate) fn strip_null(m: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    if let Some(Value::Array(types)) = m.get_mut("type")
        && types.iter().any(|t| t == "null")
    {
        types.retain(|t| t != "null");
        changed = true;
        if types.len() == 1 {
            let t = types[0].clone();
            m.insert("type".into(), t);
        }
    }
    if let Some(Value::Array(e)) = m.get_mut("enum")
        && e.iter().any(Value::is_null)
    {
        e.retain(|x| !x.is_null());
        changed = true;
    }
    for key in ["anyOf", "oneOf"] {
        let others = m.len() > 1;
        let Some(Value::Array(branches)) = m.get_mut(key) else {
            continue;
        };
        let is_null = |b: &Value| {
            b.as_object()
                .is_some_and(|o| o.len() == 1 && o.get("type").is_some_and(|t| t == "null"))
        };
        if !branches.iter().any(is_null) {
            continue;
        }
        branches.retain(|b| !is_null(b));
        changed = true;
        // A lone `$ref` stays a one-branch combinator when other keywords (a description) would
        // otherwise sit beside it.
        let lone_ref = branches.len() == 1 && branches[0].get("$ref").is_some();
        if branches.len() == 1 && !(lone_ref && others) {
            let Some(Value::Object(only)) = branches.pop() else {
                continue;
            };
            m.remove(key);
            for (k, v) in only {
                m.entry(k).or_insert(v);
            }
        }
    }
    changed
}
