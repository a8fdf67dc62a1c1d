//! JSON values to and from monty's boundary values ([`MontyObject`]).
//!
//! Tool arguments and results cross the sandbox boundary as JSON: a JSON object becomes a
//! Python `dict`, an array a `list`, a number an `int` or `float`. Going out, every Python value
//! has a JSON form: tuples and sets become arrays, dict keys become strings, bytes become a
//! list of integers, and anything without a JSON shape (a date, a class instance) its `str()`.

use monty_types::{DictPairs, MontyObject};
use serde_json::{Map, Number, Value};

/// A JSON value as a Python value.
pub(super) fn to_python(value: Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::Int(i)
            } else if let Some(u) = n.as_u64() {
                MontyObject::BigInt(u.into())
            } else {
                MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::String(s),
        Value::Array(items) => MontyObject::List(items.into_iter().map(to_python).collect()),
        Value::Object(map) => MontyObject::Dict(DictPairs::from(
            map.into_iter()
                .map(|(k, v)| (MontyObject::String(k), to_python(v)))
                .collect::<Vec<_>>(),
        )),
    }
}

/// A Python value as JSON (see the module docs for the values without a JSON form).
pub(super) fn to_json(value: MontyObject) -> Value {
    match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(b),
        MontyObject::Int(i) => Value::from(i),
        MontyObject::BigInt(big) => {
            let text = big.to_string();
            serde_json::from_str::<Number>(&text).map_or(Value::String(text), Value::Number)
        }
        MontyObject::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        MontyObject::String(s) | MontyObject::Path(s) => Value::String(s),
        MontyObject::Bytes(bytes) => Value::Array(bytes.into_iter().map(Value::from).collect()),
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::Set(items)
        | MontyObject::FrozenSet(items) => Value::Array(items.into_iter().map(to_json).collect()),
        MontyObject::NamedTuple {
            field_names,
            values,
            ..
        } => Value::Object(
            field_names
                .into_iter()
                .zip(values)
                .map(|(k, v)| (k, to_json(v)))
                .collect(),
        ),
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                let key = match k {
                    MontyObject::String(s) => s,
                    other => other.to_string(),
                };
                map.insert(key, to_json(v));
            }
            Value::Object(map)
        }
        MontyObject::ClassInstance(instance) => {
            let mut map = Map::new();
            for (k, v) in instance.attrs {
                map.insert(k.to_string(), to_json(v));
            }
            Value::Object(map)
        }
        other => Value::String(other.to_string()),
    }
}

/// The keyword arguments of a call as a JSON object (keys are always strings in Python).
pub(super) fn kwargs_to_json(kwargs: Vec<(MontyObject, MontyObject)>) -> Map<String, Value> {
    kwargs
        .into_iter()
        .map(|(k, v)| {
            let key = match k {
                MontyObject::String(s) => s,
                other => other.to_string(),
            };
            (key, to_json(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_survives_a_round_trip_through_python_values() {
        let value =
            json!({"a": [1, 2.5, "x", null, true], "big": 18446744073709551615u64, "o": {}});
        assert_eq!(to_json(to_python(value.clone())), value);
    }

    #[test]
    fn tuples_and_sets_leave_as_arrays_and_non_string_keys_as_strings() {
        let tuple = MontyObject::Tuple(vec![MontyObject::Int(1), MontyObject::Bool(false)]);
        assert_eq!(to_json(tuple), json!([1, false]));
        let dict = MontyObject::Dict(DictPairs::from(vec![(
            MontyObject::Int(3),
            MontyObject::String("three".into()),
        )]));
        assert_eq!(to_json(dict), json!({"3": "three"}));
        assert_eq!(to_json(MontyObject::Float(f64::NAN)), Value::Null);
    }
}
