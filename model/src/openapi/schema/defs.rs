//! `$defs`: the name each referenced schema gets, and the `$defs` attached to a tool's input or
//! output schema (references kept, never expanded or left dangling).
//!
//! - Names: the pointer's segments after `components/{kind}` (or after the bundled file's key),
//!   joined with `_`, characters outside `[a-zA-Z0-9_.-]` replaced by `_`, at most 60
//!   characters, made unique per document with `_2`, `_3`; component schemas are named first,
//!   in document order.
//! - Attaching: every definition reachable from the schema, breadth first. An output schema has
//!   a byte budget ([`ConvertOptions::max_output_schema_bytes`](super::super::ConvertOptions));
//!   definitions beyond it are left out and their references loosened to `{}`
//!   (`W_OUTPUT_SCHEMA_LOOSENED`, reported once per document by the driver).

use std::collections::{HashSet, VecDeque};

use serde_json::{Map, Value};

use super::super::refs::{self, BUNDLED};
use super::{Mode, Result, Schemas};

impl Schemas<'_> {
    /// The `$defs` name of the canonical pointer `ptr`.
    pub(super) fn name_for(&mut self, ptr: &str) -> String {
        if let Some(n) = self.name_of.get(ptr) {
            return n.clone();
        }
        let segs = refs::segments(ptr).unwrap_or_default();
        let tail: &[String] = match segs.first().map(String::as_str) {
            Some("components" | BUNDLED) if segs.len() > 2 => segs.get(2..).unwrap_or(&[]),
            _ => &segs,
        };
        let joined = if tail.is_empty() {
            segs.join("_")
        } else {
            tail.join("_")
        };
        let mut base: String = joined
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        if base.is_empty() {
            base = "schema".to_string();
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.ptr_of.contains_key(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.name_of.insert(ptr.to_string(), name.clone());
        self.ptr_of.insert(name.clone(), ptr.to_string());
        name
    }

    /// Adds `$defs` to `root` with every definition it reaches. With a `budget` (bytes,
    /// serialized), definitions beyond it are left out and their references loosened to `{}`;
    /// returns whether that happened.
    pub(crate) fn attach_defs(
        &mut self,
        root: &mut Value,
        mode: Mode,
        budget: Option<usize>,
    ) -> Result<bool> {
        let mut used = budget.map_or(0, |_| serde_json::to_string(root).map_or(0, |s| s.len()));
        let mut defs = Map::new();
        let mut excluded: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<String> = VecDeque::new();
        let mut seen: HashSet<String> = HashSet::new();
        collect(root, &mut |n| {
            if seen.insert(n.to_string()) {
                queue.push_back(n.to_string());
            }
        });
        while let Some(name) = queue.pop_front() {
            let def = self.def(&name, mode, 0)?;
            if let Some(b) = budget {
                let key = (name.clone(), mode);
                let size = match self.sizes.get(&key) {
                    Some(s) => *s,
                    None => {
                        let s = serde_json::to_string(&*def).map_or(0, |s| s.len()) + name.len();
                        self.sizes.insert(key, s);
                        s
                    }
                };
                if used + size > b {
                    excluded.insert(name);
                    continue;
                }
                used += size;
            }
            collect(&def, &mut |n| {
                if seen.insert(n.to_string()) {
                    queue.push_back(n.to_string());
                }
            });
            defs.insert(name, (*def).clone());
        }
        let loosened = !excluded.is_empty();
        if loosened {
            loosen(root, &excluded);
            for d in defs.values_mut() {
                loosen(d, &excluded);
            }
        }
        if !defs.is_empty()
            && let Value::Object(m) = root
        {
            m.insert("$defs".into(), Value::Object(defs));
        }
        Ok(loosened)
    }
}

/// Calls `f` with the name of every `#/$defs/NAME` reference in `v`.
fn collect(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::Object(m) => {
            if let Some(n) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
            {
                f(n);
            }
            m.values().for_each(|c| collect(c, f));
        }
        Value::Array(a) => a.iter().for_each(|c| collect(c, f)),
        _ => {}
    }
}

/// References to `excluded` definitions removed (a lone `$ref` becomes `{}`).
fn loosen(v: &mut Value, excluded: &HashSet<String>) {
    match v {
        Value::Object(m) => {
            if m.get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .is_some_and(|n| excluded.contains(n))
            {
                m.shift_remove("$ref");
            }
            m.values_mut().for_each(|c| loosen(c, excluded));
        }
        Value::Array(a) => a.iter_mut().for_each(|c| loosen(c, excluded)),
        _ => {}
    }
}
