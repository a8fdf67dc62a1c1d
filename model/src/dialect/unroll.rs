//! Recursive types in a dialect without `$ref` (Gemini): unrolled to a depth.
//!
//! Gemini's `Schema` object (API reference, "Function calling", `Schema`: "a select subset of an
//! OpenAPI 3.0 schema object") has no `$ref` and no `$defs`, so a recursive type (a Rust
//! `struct Cond { and: Vec<Cond>, .. }`, an OpenAPI `Node` with `children: [Node]`) cannot be
//! written as itself. It is inlined instead, at most
//! [`ExportOptions::recursion_depth`](super::ExportOptions::recursion_depth) levels deep (3 by
//! default): a level is one copy of the type on a path from the root, counted per type (so in a
//! mutual recursion `A → B → A`, `A` and `B` get that many copies each). Where the next copy
//! would go, a placeholder describes what happened in words a model can read:
//!
//! - for a type that is an object, `{"type": "object", "description": "<the use site's or the
//!   type's description> (nesting depth limit of 3 reached; deeper levels are accepted but not
//!   described)"}`;
//! - for a type that is an array, the same with `"type": "array", "items": {}`;
//! - for any other type, the description alone (a schema without `type`, any value).
//!
//! A placeholder accepts more than the type did (any keys, any items), never less: the
//! arguments a model sends below it are still validated against the full recursive schema by the
//! gateway. Each recursive type unrolled is noted once (with the pointer of its first
//! placeholder), so `toolgate schema --dialect gemini` says which types were cut and where.
//!
//! Unrolling copies a type at every use, as acyclic inlining does: the copies count toward
//! [`super::refs::MAX_INLINED_VALUES`], past which the export fails.

use serde_json::{Map, Value, json};

use super::normalize::{Notes, walk};
use super::refs::{Inline, MAX_INLINED_VALUES, count_values, def_name, merge_use_site};

/// The words a placeholder's description ends with, for `depth` levels.
pub(crate) fn limit_words(depth: usize) -> String {
    format!("nesting depth limit of {depth} reached; deeper levels are accepted but not described")
}

/// Replaces every `$ref` left in `root` (to `#` or to a definition of `defs`, all recursive) by
/// its target, `depth` levels deep per type, then a placeholder. `copied` is what inlining
/// already copied, toward [`MAX_INLINED_VALUES`].
pub(super) fn unroll(
    root: &mut Value,
    defs: &Map<String, Value>,
    depth: usize,
    copied: usize,
    notes: &mut Notes,
) -> Result<(), Inline> {
    let mut u = Unroller {
        defs,
        root: root.clone(),
        depth: depth.max(1),
        copied,
        too_large: false,
        // The root is the first copy of itself.
        stack: vec![None],
        reached: Vec::new(),
    };
    if let Err(e) = u.within(root, "") {
        return Err(if u.too_large {
            Inline::TooLarge
        } else {
            Inline::Other(e)
        });
    }
    let depth = u.depth;
    for (label, ptr) in u.reached {
        notes.push(
            &ptr,
            format!(
                "{label} is recursive and Gemini's `Schema` has no `$ref`: described {depth} \
                 level(s) deep, deeper levels are accepted but not described (\"nesting depth \
                 limit of {depth} reached\"); the arguments are still validated against the \
                 full schema"
            ),
        );
    }
    Ok(())
}

struct Unroller<'a> {
    defs: &'a Map<String, Value>,
    /// The root as `#` refers to it (its `$defs` already taken out).
    root: Value,
    depth: usize,
    copied: usize,
    too_large: bool,
    /// The types being expanded, outermost first (`None`: the root).
    stack: Vec<Option<String>>,
    /// Each type that got a placeholder (its label), with the first placeholder's pointer.
    reached: Vec<(String, String)>,
}

impl Unroller<'_> {
    fn within(&mut self, v: &mut Value, ptr: &str) -> Result<(), String> {
        walk(v, ptr, &mut |m, p| self.node(m, p))
    }

    fn node(&mut self, m: &mut Map<String, Value>, ptr: &str) -> Result<(), String> {
        let Some(Value::String(r)) = m.remove("$ref") else {
            return Ok(());
        };
        let name = def_name(&r)?;
        let body = match &name {
            None => self.root.clone(),
            Some(n) => self
                .defs
                .get(n)
                .cloned()
                .ok_or_else(|| format!("dangling `$ref` `{r}` at {ptr}"))?,
        };
        let label = name
            .as_ref()
            .map_or_else(|| "the root schema (`#`)".to_string(), |n| format!("`{n}`"));
        let use_site = std::mem::take(m);
        let level = self.stack.iter().filter(|s| **s == name).count();
        if level >= self.depth {
            *m = placeholder(&body, &use_site, name.as_deref(), self.depth);
            if !self.reached.iter().any(|(l, _)| *l == label) {
                self.reached.push((label, ptr.to_string()));
            }
            return Ok(());
        }
        self.copied = self.copied.saturating_add(count_values(&body));
        if self.copied > MAX_INLINED_VALUES {
            self.too_large = true;
            return Err("too large once unrolled".into());
        }
        let mut body = body;
        self.stack.push(name);
        let expanded = self.within(&mut body, ptr);
        self.stack.pop();
        expanded?;
        let Value::Object(mut target) = body else {
            return Err(format!("`$ref` `{r}` at {ptr} is not a schema object"));
        };
        merge_use_site(&mut target, use_site);
        *m = target;
        Ok(())
    }
}

/// The schema standing for `body` below the last level: its kind (object, array, or any value)
/// and the description of the use site (else of the type) with the limit stated.
fn placeholder(
    body: &Value,
    use_site: &Map<String, Value>,
    name: Option<&str>,
    depth: usize,
) -> Map<String, Value> {
    let has = |t: &str| match body.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|x| x == t),
        _ => false,
    };
    let described = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
    };
    let desc = described(use_site.get("description"))
        .or_else(|| described(body.get("description")))
        .unwrap_or_else(|| format!("A nested {} value", name.unwrap_or("arguments")));
    let mut out = Map::new();
    let kind = if has("object") || body.get("properties").is_some() {
        Some("object")
    } else if has("array") || body.get("items").is_some() {
        Some("array")
    } else {
        None
    };
    if let Some(kind) = kind {
        let ty = if has("null") {
            json!([kind, "null"])
        } else {
            json!(kind)
        };
        out.insert("type".into(), ty);
        if kind == "array" {
            out.insert("items".into(), json!({}));
        }
    }
    out.insert(
        "description".into(),
        format!("{desc} ({})", limit_words(depth)).into(),
    );
    out
}
