//! jaq values to `serde_json` values, within size limits; depth checks and teardown of jaq
//! values without recursion (a value nested a million levels deep overflows any stack when
//! dropped, formatted or compared recursively).

use jaq_json::{Num, Rc, Val};
use serde_json::{Map, Number, Value};

use super::{JqError, MAX_DEPTH};

/// Collects outputs and counts their approximate JSON size.
pub(super) struct Collector {
    pub(super) results: Vec<Value>,
    pub(super) truncated: bool,
    bytes: usize,
    max_bytes: usize,
}

impl Collector {
    /// No results yet; at most `max_bytes` of JSON (approximately) in all.
    pub(super) fn new(max_bytes: usize) -> Self {
        Self {
            results: Vec::new(),
            truncated: false,
            bytes: 0,
            max_bytes,
        }
    }

    pub(super) fn push(&mut self, v: &Val) -> Result<(), JqError> {
        let value = self.convert(v, 0)?;
        self.results.push(value);
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), JqError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.max_bytes {
            return Err(too_large(format!(
                "more than {} bytes of JSON",
                self.max_bytes
            )));
        }
        Ok(())
    }

    /// `v`, inside `depth` arrays or objects.
    fn convert(&mut self, v: &Val, depth: usize) -> Result<Value, JqError> {
        if matches!(v, Val::Arr(_) | Val::Obj(_)) && depth >= MAX_DEPTH {
            return Err(too_large(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(match v {
            Val::Null => {
                self.count(4)?;
                Value::Null
            }
            Val::Bool(b) => {
                self.count(5)?;
                Value::Bool(*b)
            }
            Val::Num(n) => {
                self.count(8)?;
                number(n)
            }
            Val::TStr(b) | Val::BStr(b) => {
                self.count(b.len() + 2)?;
                Value::String(String::from_utf8_lossy(b).into_owned())
            }
            Val::Arr(items) => {
                self.count(2)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items.iter() {
                    self.count(1)?;
                    out.push(self.convert(item, depth + 1)?);
                }
                Value::Array(out)
            }
            Val::Obj(entries) => {
                self.count(2)?;
                let mut out = Map::new();
                for (k, v) in entries.iter() {
                    let key = match k {
                        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
                        // jaq allows non-string keys; JSON does not: use their JSON text.
                        other => other.to_string(),
                    };
                    self.count(key.len() + 4)?;
                    let v = self.convert(v, depth + 1)?;
                    out.insert(key, v);
                }
                Value::Object(out)
            }
        })
    }
}

/// Whether `v` has arrays or objects nested more than `limit` levels deep (`[]` is one level,
/// `[[1]]` two; object keys count too). Without recursion.
pub(super) fn deeper_than(v: &Val, limit: usize) -> bool {
    let mut stack = vec![(v, 0_usize)];
    while let Some((v, depth)) = stack.pop() {
        match v {
            Val::Arr(items) => {
                if depth >= limit {
                    return true;
                }
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            Val::Obj(entries) => {
                if depth >= limit {
                    return true;
                }
                for (k, v) in entries.iter() {
                    stack.push((k, depth + 1));
                    stack.push((v, depth + 1));
                }
            }
            _ => {}
        }
    }
    false
}

/// Drops `v` without recursion: arrays and objects this is the last reference to are taken
/// apart on a heap stack (the derived drop recurses once per level, about 48 bytes of stack
/// each: a million levels need more stack than a thread has).
pub(super) fn dispose(v: Val) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Val::Arr(items) => {
                if let Ok(items) = Rc::try_unwrap(items) {
                    stack.extend(items);
                }
            }
            Val::Obj(entries) => {
                if let Ok(entries) = Rc::try_unwrap(entries) {
                    for (k, v) in entries {
                        stack.push(k);
                        stack.push(v);
                    }
                }
            }
            _ => {}
        }
    }
}

fn too_large(reason: String) -> JqError {
    JqError::OutputTooLarge { reason }
}

fn number(n: &Num) -> Value {
    match n {
        Num::Int(i) => Value::from(*i as i64),
        Num::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        // Big integers and decimal literals: as precise as serde_json allows (u64/i64/f64).
        other => {
            let text = other.to_string();
            match serde_json::from_str::<Number>(&text) {
                Ok(n) => Value::Number(n),
                Err(_) => text
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map_or(Value::Null, Value::Number),
            }
        }
    }
}
