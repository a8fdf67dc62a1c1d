//! jaq values to `serde_json` values, within size limits.

use jaq_json::{Num, Val};
use serde_json::{Map, Number, Value};

use super::{JqError, MAX_OUTPUT_BYTES};

/// Deepest nesting of an output value.
const MAX_DEPTH: usize = 128;

/// Collects outputs and counts their approximate JSON size.
#[derive(Default)]
pub(super) struct Collector {
    pub(super) results: Vec<Value>,
    pub(super) truncated: bool,
    bytes: usize,
}

impl Collector {
    pub(super) fn push(&mut self, v: &Val) -> Result<(), JqError> {
        let value = self.convert(v, 0)?;
        self.results.push(value);
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), JqError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > MAX_OUTPUT_BYTES {
            return Err(too_large(format!(
                "more than {MAX_OUTPUT_BYTES} bytes of JSON"
            )));
        }
        Ok(())
    }

    fn convert(&mut self, v: &Val, depth: usize) -> Result<Value, JqError> {
        if depth > MAX_DEPTH {
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
