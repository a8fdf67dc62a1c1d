//! Rule 2 of [`super::normalize`]: `$ref` inlining (C04, C08).
//!
//! Every `$ref` to an acyclic `#/$defs/X` (or `#/definitions/X`) is replaced by `X`, with the
//! use-site keywords taking precedence over `X`'s own, so a field's doc wins over its type's doc
//! (JSON Schema 2020-12 §8.2.3.1 allows keywords beside `$ref`; draft-07 consumers ignore them,
//! C08). Definitions on a cycle (and `#`) are kept under `$defs` (`definitions` is rewritten to
//! `$defs`) when the dialect allows recursion, with keywords beside the `$ref` moved into a
//! one-branch combinator; otherwise the export fails. Only the recursive definitions still
//! referenced are kept, so every `$ref` in the output resolves in the same document.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::normalize::{Recursion, escape, walk};

/// The definition name a local `$ref` points to, or `None` for `#` (the root).
fn def_name(r: &str) -> Result<Option<String>, String> {
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

/// Rule 2.
pub(crate) fn inline_refs(root: &mut Value, recursion: Recursion) -> Result<(), String> {
    let Value::Object(rm) = root else {
        return Ok(());
    };
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(d)) = rm.remove(key) {
            defs.extend(d);
        }
    }
    // Direct edges, then the definitions that lie on a cycle.
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for (name, body) in &defs {
        let mut refs = Vec::new();
        collect_refs(body, &mut refs);
        let mut names = Vec::new();
        for r in refs {
            match def_name(&r)? {
                Some(n) if defs.contains_key(&n) => names.push(n),
                Some(n) => return Err(format!("dangling `$ref` `{r}` (no definition `{n}`)")),
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
    let mut inl = Inliner {
        defs: &defs,
        recursive: &recursive,
        resolved: HashMap::new(),
        recursion,
    };
    inl.resolve(root, "")?;
    // Keep the recursive definitions the output still uses.
    let mut kept = Map::new();
    let mut refs = Vec::new();
    collect_refs(root, &mut refs);
    while let Some(r) = refs.pop() {
        if let Some(n) = def_name(&r)?
            && !kept.contains_key(&n)
        {
            let body = inl.resolved_def(&n)?;
            collect_refs(&body, &mut refs);
            kept.insert(n, body);
        }
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
    resolved: HashMap<String, Value>,
    recursion: Recursion,
}

impl Inliner<'_> {
    fn resolved_def(&mut self, name: &str) -> Result<Value, String> {
        if let Some(v) = self.resolved.get(name) {
            return Ok(v.clone());
        }
        let mut v = self.defs[name].clone();
        if !v.is_object() {
            return Err(format!("definition `{name}` is not a schema object"));
        }
        self.resolve(&mut v, &format!("/$defs/{}", escape(name)))?;
        self.resolved.insert(name.to_string(), v.clone());
        Ok(v)
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
            let Recursion::Keep(combinator) = self.recursion else {
                let what = name.map_or_else(|| "the root schema".into(), |n| format!("`{n}`"));
                return Err(format!(
                    "{what} is recursive (`$ref` `{r}` at {ptr}) and this dialect has no `$ref`"
                ));
            };
            let target = name.map_or(r, |n| format!("#/$defs/{}", escape(&n)));
            m.remove("$ref");
            let single = serde_json::json!({ "$ref": target });
            if m.is_empty() {
                m.insert("$ref".into(), single["$ref"].clone());
            } else {
                m.insert(combinator.into(), Value::Array(vec![single]));
            }
            return Ok(());
        }
        let Value::Object(mut target) = self.resolved_def(&name.unwrap_or_default())? else {
            return Ok(());
        };
        m.remove("$ref");
        merge_use_site(&mut target, std::mem::take(m));
        *m = target;
        Ok(())
    }
}

/// Merges the keywords written beside a `$ref` into its (inlined) target. Both apply (JSON
/// Schema 2020-12 §10.2.1: sibling keywords are a conjunction), so: `properties` are united
/// (an empty `{}` added by an object-root fill-in never hides the target's), `required` lists
/// are united, and for every other keyword the use site wins (a field's `description` over its
/// type's, C08).
fn merge_use_site(target: &mut Map<String, Value>, use_site: Map<String, Value>) {
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
