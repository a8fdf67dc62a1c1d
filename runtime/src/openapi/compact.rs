//! The schemas of an OpenAPI source's tools, held compactly: each schema once, as JSON text,
//! with its `$defs` entries shared by every tool that has them.
//!
//! The conversion gives every tool a self-contained schema: each component it reaches is
//! copied into its own `$defs`, so one document's components are repeated in
//! hundreds of tools, and a `serde_json::Value` takes about eight times the bytes of its JSON
//! text (an `IndexMap` and a separate key `String` per object). Here a schema is its JSON text
//! (`Arc<str>`, identical texts shared) with the `$defs` entries taken out, and the entries
//! kept once per source in a [`DefTable`], as `(name, JSON text)` pairs; the `$defs` object
//! itself stays in place, empty, so that keys keep their order. [`Compact::value`] puts the
//! schema back together: the same `Value` as before, key for key (floats round-trip exactly:
//! `serde_json`'s `float_roundtrip` is on in this crate's build, through `jsonschema`).
//!
//! A definition is shared only with the same name *and* the same text: the conversion can give
//! one name different contents in two tools (input and output sides, or an output schema whose
//! references beyond its byte budget were loosened).
//!
//! Text nested deeper than `serde_json` reads back ([`MAX_TEXT_DEPTH`]) is kept as a value.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

/// The deepest nesting (arrays and objects) a piece is kept as text with: `serde_json` refuses
/// to read more than 127 levels.
const MAX_TEXT_DEPTH: usize = 100;

/// One `$defs` entry: its name and its schema as JSON text.
#[derive(Debug)]
struct Def {
    name: Arc<str>,
    json: Arc<str>,
}

/// The `$defs` entries of one source's schemas, each once.
#[derive(Debug, Default)]
pub(crate) struct DefTable {
    defs: Vec<Def>,
}

impl DefTable {
    /// How many distinct entries the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.defs.len()
    }
}

/// One tool schema.
#[derive(Debug)]
pub(crate) enum Compact {
    /// The schema's JSON text, its `$defs` entries (if any) taken out and its `$defs` object
    /// left empty in place; the entries, in order, as indices into the [`DefTable`].
    Text { root: Arc<str>, defs: Box<[u32]> },
    /// A schema too deep to be read back from text (or a `$defs` entry of one), as it was.
    Value(Box<Value>),
}

impl Compact {
    /// The schema as it was given to [`Interner::compact`].
    pub(crate) fn value(&self, table: &DefTable) -> Value {
        match self {
            Self::Value(v) => (**v).clone(),
            Self::Text { root, defs } => {
                let mut v = parse(root);
                if !defs.is_empty()
                    && let Some(Value::Object(slot)) = v.get_mut("$defs")
                {
                    for &i in defs.iter() {
                        if let Some(def) = table.defs.get(i as usize) {
                            slot.insert(def.name.to_string(), parse(&def.json));
                        }
                    }
                }
                v
            }
        }
    }
}

/// Text this module wrote from a `Value` no deeper than [`MAX_TEXT_DEPTH`]: it reads back.
fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| {
        // Unreachable: the text was written from a value and checked for depth.
        tracing::error!(error = %e, "a compact OpenAPI schema does not read back");
        Value::Null
    })
}

/// The nesting depth of `v` (a scalar is 0), counted no further than `limit + 1`.
fn depth(v: &Value, limit: usize) -> usize {
    let deepest = |children: &mut dyn Iterator<Item = &Value>| {
        if limit == 0 {
            return 1;
        }
        1 + children.map(|c| depth(c, limit - 1)).max().unwrap_or(0)
    };
    match v {
        Value::Array(a) => deepest(&mut a.iter()),
        Value::Object(m) => deepest(&mut m.values()),
        _ => 0,
    }
}

/// Builds the compact schemas of one source: identical texts and `$defs` entries shared.
#[derive(Default)]
pub(crate) struct Interner {
    texts: HashSet<Arc<str>>,
    defs: HashMap<(Arc<str>, Arc<str>), u32>,
    table: DefTable,
}

impl Interner {
    fn text(&mut self, text: String) -> Arc<str> {
        if let Some(t) = self.texts.get(text.as_str()) {
            return Arc::clone(t);
        }
        let t: Arc<str> = Arc::from(text);
        self.texts.insert(Arc::clone(&t));
        t
    }

    /// `schema`, compacted. Lossless: [`Compact::value`] gives it back.
    pub(crate) fn compact(&mut self, mut schema: Value) -> Compact {
        if depth(&schema, MAX_TEXT_DEPTH) > MAX_TEXT_DEPTH {
            return Compact::Value(Box::new(schema));
        }
        let mut entries = Map::new();
        if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            std::mem::swap(defs, &mut entries);
        }
        let mut ids = Vec::with_capacity(entries.len());
        for (name, def) in entries {
            let json = self.text(def.to_string());
            let name = self.text(name);
            let next = u32::try_from(self.table.defs.len()).unwrap_or(u32::MAX);
            let id = *self
                .defs
                .entry((Arc::clone(&name), Arc::clone(&json)))
                .or_insert_with(|| {
                    self.table.defs.push(Def { name, json });
                    next
                });
            ids.push(id);
        }
        Compact::Text {
            root: self.text(schema.to_string()),
            defs: ids.into_boxed_slice(),
        }
    }

    /// The table every [`Compact::Text`] made by this interner refers to.
    pub(crate) fn finish(self) -> DefTable {
        self.table
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round_trip(v: &Value) -> (Value, DefTable) {
        let mut i = Interner::default();
        let c = i.compact(v.clone());
        let table = i.finish();
        (c.value(&table), table)
    }

    #[test]
    fn schemas_come_back_key_for_key() {
        let cases = [
            json!({"type": "object"}),
            json!({"type": "object", "$defs": {}, "properties": {}}),
            // `$defs` in the middle of the object: it stays there.
            json!({"$schema": "x", "$defs": {"B": {"type": "string"}, "A": {"$ref": "#/$defs/B"}},
                   "properties": {"a": {"$ref": "#/$defs/A"}}, "required": ["a"]}),
            // Not an object: kept as it is.
            json!({"$defs": [1, 2], "type": "object"}),
            json!(true),
            json!({"maximum": 0.1, "minimum": -1.7976931348623157e308, "multipleOf": 5e-324,
                   "default": 18446744073709551615u64, "enum": [-9223372036854775808i64, 1.0, -0.0],
                   "description": "\u{0}\u{1f}\"\\ é 😀"}),
        ];
        for v in &cases {
            let (back, _) = round_trip(v);
            assert_eq!(&back, v);
            assert_eq!(back.to_string(), v.to_string(), "key order");
        }
    }

    #[test]
    fn definitions_are_shared_by_name_and_content() {
        let mut i = Interner::default();
        let a = json!({"$defs": {"Pet": {"type": "object"}, "Id": {"type": "string"}}});
        let b = json!({"$defs": {"Pet": {"type": "object"}}, "type": "object"});
        // The same name with another content (a loosened variant) is an entry of its own.
        let c = json!({"$defs": {"Pet": {}}});
        let compacted: Vec<Compact> = [&a, &b, &c].map(|v| i.compact(v.clone())).into();
        let table = i.finish();
        assert_eq!(table.len(), 3);
        for (v, c) in [&a, &b, &c].iter().zip(&compacted) {
            assert_eq!(&&c.value(&table), v);
        }
    }

    #[test]
    fn too_deep_for_text_is_kept_as_a_value() {
        let mut deep = json!({"type": "string"});
        for _ in 0..150 {
            deep = json!({"items": deep});
        }
        let schema = json!({"type": "object", "properties": {"x": deep}});
        let mut i = Interner::default();
        let c = i.compact(schema.clone());
        assert!(matches!(c, Compact::Value(_)));
        assert_eq!(c.value(&i.finish()), schema);
        // Deep but readable: text.
        let mut ok = json!({});
        for _ in 0..40 {
            ok = json!({"items": ok});
        }
        let (back, _) = round_trip(&ok);
        assert_eq!(back, ok);
    }
}
