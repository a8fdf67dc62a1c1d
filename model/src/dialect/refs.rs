//! Rule 2 of [`super::normalize`]: `$ref` inlining.
//!
//! Every `$ref` to an acyclic `#/$defs/X` (or `#/definitions/X`) is replaced by `X`, with the
//! use-site keywords taking precedence over `X`'s own, so a field's doc wins over its type's doc
//! (JSON Schema 2020-12 §8.2.3.1 allows keywords beside `$ref`; draft-07 consumers ignore them). Definitions on a cycle (and `#`) are kept under `$defs` (`definitions` is rewritten to
//! `$defs`) when the dialect allows recursion, with keywords beside the `$ref` moved into a
//! one-branch combinator; otherwise they are unrolled to a depth ([`super::unroll`]). Only the recursive definitions still
//! referenced are kept, so every `$ref` in the output resolves in the same document.
//!
//! Inlining copies a definition at every use, so its output can be exponentially larger than
//! its input (definitions each using the next one twice). It is bounded by
//! [`MAX_INLINED_VALUES`]: past it, a dialect that allows `$ref` keeps every definition under
//! `$defs` instead (nothing is inlined), and the others fail with "too large once `$ref`s are
//! inlined".

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::normalize::{Notes, Recursion, escape, walk};

/// Most JSON values (objects, arrays and scalars, counted one each) that inlining may copy into
/// one schema. A document of 2.8 KB whose definitions `S0..S19` each use the next one twice
/// inlines to a million copies (27 s and 62 MB to list the tool; 40 levels exhaust memory).
/// 100 000 values is about 1–2 MB of JSON: far above any schema a model is sent in practice, and
/// still milliseconds to produce.
pub(crate) const MAX_INLINED_VALUES: usize = 100_000;

/// The definition name a local `$ref` points to, or `None` for `#` (the root).
pub(super) fn def_name(r: &str) -> Result<Option<String>, String> {
    if r == "#" {
        return Ok(None);
    }
    let name = r
        .strip_prefix("#/$defs/")
        .or_else(|| r.strip_prefix("#/definitions/"))
        .filter(|n| !n.contains('/'))
        .ok_or_else(|| format!("unsupported `$ref` `{r}` (only `#/$defs/NAME` is supported)"))?;
    Ok(Some(name.replace("~1", "/").replace("~0", "~")))
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.clone());
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

/// The recursive types of an object-root JSON Schema: the names of the `$defs` (or
/// `definitions`) that reach themselves through `$ref`s, sorted, and `#` first when a `$ref`
/// points to the root. These are the types a dialect without `$ref` (Gemini) unrolls to a depth
/// ([`super::ExportOptions::recursion_depth`]). A schema whose references do not resolve has no
/// recursive type by this function (its export fails instead).
pub fn recursive_types(schema: &Value) -> Vec<String> {
    let Value::Object(m) = schema else {
        return Vec::new();
    };
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(d)) = m.get(key) {
            defs.extend(d.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut out: Vec<String> = match cyclic_defs(&defs) {
        Ok(names) => names.into_iter().collect(),
        Err(_) => return Vec::new(),
    };
    out.sort();
    let mut refs = Vec::new();
    collect_refs(schema, &mut refs);
    if refs.iter().any(|r| r == "#") {
        out.insert(0, "#".into());
    }
    out
}

/// The definitions of `defs` that lie on a cycle of `$ref`s.
fn cyclic_defs(defs: &Map<String, Value>) -> Result<HashSet<String>, String> {
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for (name, body) in defs {
        let mut refs = Vec::new();
        collect_refs(body, &mut refs);
        let mut names = Vec::new();
        for r in refs {
            match def_name(&r)? {
                Some(n) if defs.contains_key(&n) => names.push(n),
                Some(n) => {
                    return Err(format!("dangling `$ref` `{r}` (no definition `{n}`)"));
                }
                None => {}
            }
        }
        edges.insert(name.clone(), names);
    }
    let mut recursive = HashSet::new();
    for start in defs.keys() {
        let mut stack = edges[start].clone();
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            if n == *start {
                recursive.insert(start.clone());
                break;
            }
            if seen.insert(n.clone()) {
                stack.extend(edges[&n].iter().cloned());
            }
        }
    }
    Ok(recursive)
}

/// Rule 2; `notes` receives the recursive types unrolled ([`Recursion::Unroll`]).
pub(crate) fn inline_refs(
    root: &mut Value,
    recursion: Recursion,
    notes: &mut Notes,
) -> Result<(), String> {
    if !root.is_object() {
        return Ok(());
    }
    let original = root.clone();
    match inline_refs_within(root, recursion, false, notes) {
        Err(Inline::TooLarge) if matches!(recursion, Recursion::Keep(_)) => {
            // Keep every definition under `$defs`: the output is as large as the input.
            *root = original;
            inline_refs_within(root, recursion, true, notes).map_err(Inline::into_message)
        }
        other => other.map_err(Inline::into_message),
    }
}

/// Why inlining failed.
pub(super) enum Inline {
    TooLarge,
    Other(String),
}

impl Inline {
    fn into_message(self) -> String {
        match self {
            Self::TooLarge => format!(
                "the input schema is too large once `$ref`s are inlined (more than \
                 {MAX_INLINED_VALUES} JSON values): a definition is used many times over, and \
                 this dialect has no `$ref` to share it"
            ),
            Self::Other(m) => m,
        }
    }
}

impl From<String> for Inline {
    fn from(m: String) -> Self {
        Self::Other(m)
    }
}

/// Rule 2, inlining nothing (every definition kept as if it were recursive) when `keep_all`.
fn inline_refs_within(
    root: &mut Value,
    recursion: Recursion,
    keep_all: bool,
    notes: &mut Notes,
) -> Result<(), Inline> {
    let Value::Object(rm) = root else {
        return Ok(());
    };
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(d)) = rm.remove(key) {
            defs.extend(d);
        }
    }
    let recursive = if keep_all {
        defs.keys().cloned().collect()
    } else {
        cyclic_defs(&defs)?
    };
    let mut inl = Inliner {
        defs: &defs,
        recursive: &recursive,
        resolved: HashMap::new(),
        recursion,
        copied: 0,
        too_large: false,
    };
    inl.resolve(root, "").map_err(|e| inl.error(e))?;
    // Keep the recursive definitions the output still uses.
    let mut kept = Map::new();
    let mut refs = Vec::new();
    collect_refs(root, &mut refs);
    while let Some(r) = refs.pop() {
        if let Some(n) = def_name(&r)?
            && !kept.contains_key(&n)
        {
            let body = inl.resolved_def(&n).map_err(|e| inl.error(e))?;
            collect_refs(&body, &mut refs);
            kept.insert(n, body);
        }
    }
    if let Recursion::Unroll(depth) = recursion {
        if !refs_left(root) {
            return Ok(());
        }
        let copied = inl.copied;
        return super::unroll::unroll(root, &kept, depth, copied, notes);
    }
    if !kept.is_empty()
        && let Value::Object(rm) = root
    {
        rm.insert("$defs".into(), Value::Object(kept));
    }
    Ok(())
}

struct Inliner<'a> {
    defs: &'a Map<String, Value>,
    recursive: &'a HashSet<String>,
    /// Each resolved definition, with its size in JSON values.
    resolved: HashMap<String, (Value, usize)>,
    recursion: Recursion,
    /// JSON values copied by inlining so far.
    copied: usize,
    /// Set when `copied` would exceed [`MAX_INLINED_VALUES`].
    too_large: bool,
}

impl Inliner<'_> {
    fn error(&self, message: String) -> Inline {
        if self.too_large {
            Inline::TooLarge
        } else {
            Inline::Other(message)
        }
    }

    /// Resolves `name` once; returns its size in JSON values.
    fn ensure_resolved(&mut self, name: &str) -> Result<usize, String> {
        if let Some((_, size)) = self.resolved.get(name) {
            return Ok(*size);
        }
        let mut v = self.defs[name].clone();
        if !v.is_object() {
            return Err(format!("definition `{name}` is not a schema object"));
        }
        self.resolve(&mut v, &format!("/$defs/{}", escape(name)))?;
        let size = count_values(&v);
        self.resolved.insert(name.to_string(), (v, size));
        Ok(size)
    }

    fn resolved_def(&mut self, name: &str) -> Result<Value, String> {
        self.ensure_resolved(name)?;
        Ok(self.resolved[name].0.clone())
    }

    fn resolve(&mut self, v: &mut Value, ptr: &str) -> Result<(), String> {
        walk(v, ptr, &mut |m, p| self.node(m, p))
    }

    fn node(&mut self, m: &mut Map<String, Value>, ptr: &str) -> Result<(), String> {
        let Some(Value::String(r)) = m.get("$ref") else {
            return Ok(());
        };
        let r = r.clone();
        let name = def_name(&r)?;
        let cyclic = name.as_ref().is_none_or(|n| self.recursive.contains(n));
        if let Some(n) = &name
            && !self.defs.contains_key(n)
        {
            return Err(format!(
                "dangling `$ref` `{r}` at {ptr} (no definition `{n}`)"
            ));
        }
        if cyclic {
            let target = name.map_or(r, |n| format!("#/$defs/{}", escape(&n)));
            let Recursion::Keep(combinator) = self.recursion else {
                // Unrolled once every recursive definition is resolved; siblings stay.
                m.insert("$ref".into(), target.into());
                return Ok(());
            };
            m.remove("$ref");
            let single = serde_json::json!({ "$ref": target });
            if m.is_empty() {
                m.insert("$ref".into(), single["$ref"].clone());
            } else {
                m.insert(combinator.into(), Value::Array(vec![single]));
            }
            return Ok(());
        }
        let name = name.unwrap_or_default();
        let size = self.ensure_resolved(&name)?;
        self.copied = self.copied.saturating_add(size);
        if self.copied > MAX_INLINED_VALUES {
            self.too_large = true;
            return Err("too large once inlined".into());
        }
        let Value::Object(mut target) = self.resolved_def(&name)? else {
            return Ok(());
        };
        m.remove("$ref");
        merge_use_site(&mut target, std::mem::take(m));
        *m = target;
        Ok(())
    }
}

/// Whether `v` holds a `$ref`.
fn refs_left(v: &Value) -> bool {
    let mut refs = Vec::new();
    collect_refs(v, &mut refs);
    !refs.is_empty()
}

/// The number of JSON values in `v` (itself included).
pub(super) fn count_values(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(count_values).sum::<usize>(),
        Value::Array(a) => 1 + a.iter().map(count_values).sum::<usize>(),
        _ => 1,
    }
}

/// Merges the keywords written beside a `$ref` into its (inlined) target. Both apply (JSON
/// Schema 2020-12 §10.2.1: sibling keywords are a conjunction), so: `properties` are united
/// (an empty `{}` added by an object-root fill-in never hides the target's), `required` lists
/// are united, and for every other keyword the use site wins (a field's `description` over its
/// type's).
pub(super) fn merge_use_site(target: &mut Map<String, Value>, use_site: Map<String, Value>) {
    for (k, v) in use_site {
        match (k.as_str(), target.get_mut(&k), v) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                mine.extend(theirs);
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for r in theirs {
                    if !mine.contains(&r) {
                        mine.push(r);
                    }
                }
            }
            (_, _, v) => {
                target.insert(k, v);
            }
        }
    }
}
