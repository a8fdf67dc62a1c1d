//! The `allOf` merge, and the `readOnly` / `writeOnly` properties its members
//! hide (OAS 3.0 §4.7.24.3 "Fixed Fields", `readOnly`; JSON Schema Validation §9.4: the flag
//! holds when any subschema sets it).
//!
//! An `allOf` is merged into its schema when every member, after following its `$ref`, is a
//! plain schema (no `$ref` left, no nested `allOf`, no reference to a definition being
//! converted, i.e. recursion):
//! - `properties` united (a property in two members with different schemas becomes an `allOf`
//!   of both; `{}` gives way to the other), `required` united;
//! - `type`s intersected (`integer` ∧ `number` = `integer`), `enum`s intersected; an empty
//!   intersection is `E_UNSATISFIABLE_SCHEMA` (`string ∧ object`);
//! - `description`, `title`, `examples`, `default`, `deprecated`, `$comment`: the first wins;
//!   any other keyword is kept when only one member has it or all agree, else the `allOf` is
//!   kept as written; so is one where a member's `additionalProperties` would reject another
//!   member's properties.
//!
//! A property that any member (or the schema beside `allOf`) marks `readOnly` stays out of the
//! merged input schema and its `required`, even when another member requires it; likewise
//! `writeOnly` for output schemas.

use serde_json::{Map, Value, json};

use super::super::refs::{self, MAX_REF_CHAIN};
use super::{Mode, Result, SchemaError, Schemas, type_list};

/// The most schemas [`Schemas::hidden_in_all_of`] looks at for one `allOf`.
const MAX_HIDDEN_VISITS: usize = 256;

impl Schemas<'_> {
    /// `allOf` merged into its schema when that is safe; unchanged otherwise.
    pub(super) fn merge_all_of(
        &mut self,
        out: Map<String, Value>,
        ptr: &str,
        mode: Mode,
        depth: usize,
    ) -> Result<Map<String, Value>> {
        let Some(Value::Array(members)) = out.get("allOf") else {
            return Ok(out);
        };
        let mut parts: Vec<Map<String, Value>> = Vec::new();
        let mut outer = out.clone();
        outer.shift_remove("allOf");
        parts.push(outer);
        for mem in members {
            let mut mem = match mem {
                Value::Object(m) => m.clone(),
                Value::Bool(true) => continue,
                _ => return Ok(out),
            };
            for _ in 0..MAX_REF_CHAIN {
                let Some(name) = mem
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .map(str::to_string)
                else {
                    break;
                };
                let target_ptr = self.ptr_of.get(&name).cloned().unwrap_or_default();
                if self.in_progress.contains(&(target_ptr, mode)) {
                    return Ok(out); // recursive: kept as allOf
                }
                let def = self.def(&name, mode, depth + 1)?;
                let Value::Object(mut target) = (*def).clone() else {
                    return Ok(out);
                };
                for (k, x) in &mem {
                    if k != "$ref" {
                        target.insert(k.clone(), x.clone());
                    }
                }
                mem = target;
            }
            if mem.contains_key("$ref") || mem.contains_key("allOf") {
                return Ok(out);
            }
            parts.push(mem);
        }
        let mut merged = Map::new();
        let mut types: Option<Vec<String>> = None;
        for part in &parts {
            for (k, v) in part {
                match k.as_str() {
                    "type" => {
                        let these = type_list(v);
                        types = Some(match types {
                            None => these,
                            Some(prev) => {
                                let both = intersect(&prev, &these);
                                if both.is_empty() {
                                    return Err(SchemaError::new(
                                        "E_UNSATISFIABLE_SCHEMA",
                                        ptr,
                                        format!(
                                            "allOf cannot be satisfied ({} ∧ {})",
                                            prev.join(" | "),
                                            these.join(" | ")
                                        ),
                                    ));
                                }
                                both
                            }
                        });
                    }
                    "properties" => {
                        let Value::Object(ps) = v else { continue };
                        let entry = merged
                            .entry("properties")
                            .or_insert_with(|| Value::Object(Map::new()));
                        let Value::Object(into) = entry else { continue };
                        for (name, s) in ps {
                            match into.get_mut(name) {
                                None => {
                                    into.insert(name.clone(), s.clone());
                                }
                                Some(prev) if prev == s || s == &json!({}) => {}
                                Some(prev) if prev == &json!({}) => *prev = s.clone(),
                                Some(prev) => {
                                    *prev = json!({"allOf": [prev.clone(), s.clone()]});
                                }
                            }
                        }
                    }
                    "required" => {
                        let entry = merged
                            .entry("required")
                            .or_insert_with(|| Value::Array(Vec::new()));
                        if let (Value::Array(into), Value::Array(add)) = (entry, v) {
                            for n in add {
                                if !into.contains(n) {
                                    into.push(n.clone());
                                }
                            }
                        }
                    }
                    "enum" => match merged.get_mut("enum") {
                        Some(Value::Array(prev)) => {
                            let add = v.as_array().cloned().unwrap_or_default();
                            prev.retain(|x| add.contains(x));
                            if prev.is_empty() {
                                return Err(SchemaError::new(
                                    "E_UNSATISFIABLE_SCHEMA",
                                    ptr,
                                    "allOf cannot be satisfied (enum ∧ enum: no common value)",
                                ));
                            }
                        }
                        _ => {
                            merged.insert(k.clone(), v.clone());
                        }
                    },
                    "description" | "title" | "examples" | "default" | "deprecated"
                    | "$comment" => {
                        merged.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                    _ => match merged.get(k) {
                        Some(prev) if prev != v => return Ok(out),
                        _ => {
                            merged.insert(k.clone(), v.clone());
                        }
                    },
                }
            }
        }
        // `additionalProperties` of one member only sees its own properties.
        for part in &parts {
            if let Some(ap) = part.get("additionalProperties")
                && ap != &Value::Bool(true)
            {
                let own = part.get("properties").and_then(Value::as_object);
                let all = merged.get("properties").and_then(Value::as_object);
                if let Some(all) = all
                    && all.keys().any(|k| !own.is_some_and(|o| o.contains_key(k)))
                {
                    return Ok(out);
                }
            }
        }
        if let Some(t) = types {
            let t = if t.len() == 1 {
                Value::String(t.into_iter().next().unwrap_or_default())
            } else {
                Value::Array(t.into_iter().map(Value::String).collect())
            };
            merged.insert("type".into(), t);
        }
        Ok(merged)
    }

    /// The properties `mode` hides (see [`Mode::hidden`]) that the `allOf` members of the raw
    /// schema `m` declare, following `$ref`s and nested `allOf`s.
    pub(super) fn hidden_in_all_of(&self, m: &Map<String, Value>, mode: Mode) -> Vec<String> {
        let flag = mode.hidden();
        let mut names: Vec<String> = Vec::new();
        let mut stack: Vec<&Value> = m
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        // Bounded: a recursive `allOf` (through `$ref`s) is visited a limited number of times.
        let mut visits = 0;
        while let Some(node) = stack.pop() {
            visits += 1;
            if visits > MAX_HIDDEN_VISITS {
                break;
            }
            let Some(obj) = node.as_object() else {
                continue;
            };
            if obj.contains_key("$ref") {
                if let Ok((target, _)) = refs::follow(self.root, node, "") {
                    stack.push(target);
                }
                if !self.v31 {
                    continue; // OAS 3.0: keywords beside `$ref` are ignored
                }
            }
            if let Some(Value::Object(props)) = obj.get("properties") {
                for (name, s) in props {
                    if self.flagged(s, flag) && !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
            if let Some(Value::Array(a)) = obj.get("allOf") {
                stack.extend(a);
            }
        }
        names
    }
}

/// The types both lists allow (`integer` is a `number`).
fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let t = match (x.as_str(), y.as_str()) {
                (x, y) if x == y => x,
                ("integer", "number") | ("number", "integer") => "integer",
                _ => continue,
            };
            if !out.iter().any(|o: &String| o == t) {
                out.push(t.to_string());
            }
        }
    }
    out
}
