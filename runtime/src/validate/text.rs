//! Arguments sent as one string holding JSON (`"{\"city\":\"Oslo\"}"` instead of
//! `{"city":"Oslo"}`): OpenAI's function calling hands a tool call's `arguments` to the client as
//! such a string, and clients, providers and models forward it as it is. Every front (CLI, REST,
//! MCP on every transport) passes the string on, and [`Toolset::call`](crate::Toolset::call)
//! decodes it here, once, before the pipeline, whether or not arguments are validated.

use serde_json::Value;

use super::{Coercion, CoercionKind};
use crate::{ArgumentError, ErrorKind, ToolError};

/// The characters JSON counts as whitespace (RFC 8259 section 2, `ws`).
pub const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The arguments held by `text`, sent for tool `tool` as one string, and the change recorded
/// for the result's `_meta` ([`CoercionKind::JsonText`], pointer `""`).
///
/// A string of only JSON whitespace (space, tab, line feed, carriage return: RFC 8259
/// section 2) holds no arguments (`null`): models send `""` for a tool without parameters.
///
/// # Errors
/// `invalid_arguments` for `tool` when `text` is not JSON
/// ([`ToolError::arguments_not_json`]: `arguments for `tool` are not valid JSON at line L
/// column C`), or is JSON of another type than an object.
pub(crate) fn decode(tool: &str, text: String) -> Result<(Value, Coercion), ToolError> {
    let value = if text.trim_matches(JSON_WHITESPACE).is_empty() {
        Value::Null
    } else {
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(e) => return Err(ToolError::arguments_not_json(tool, &e)),
        }
    };
    if !matches!(value, Value::Object(_) | Value::Null) {
        return Err(ToolError::new(
            ErrorKind::InvalidArguments,
            format!(
                "arguments for `{tool}` must be a JSON object (each argument by name); the string sent holds {}",
                kind_of(&value)
            ),
        )
        .with_details(serde_json::json!({
            "tool": tool,
            "errors": [ArgumentError {
                pointer: String::new(),
                message: format!("a string holding {}, not an object", kind_of(&value)),
            }],
        })));
    }
    let coercion = Coercion {
        pointer: String::new(),
        kind: CoercionKind::JsonText,
        from: Value::String(text),
        to: Some(value.clone()),
    };
    Ok((value, coercion))
}

/// Arguments carried as JSON text, as the `openai-strict` export asks for an argument strict
/// mode cannot describe (an "any" value, a map; see
/// [`JSON_TEXT_SUFFIX`](toolgate_model::dialect::openai_strict::JSON_TEXT_SUFFIX)): each
/// `{name}_json` of `args` that `schema` does not declare, where `schema` declares `name` and
/// `args` does not send it, is replaced by `name` holding the value its string decodes to
/// (`null` is the argument left out). One [`CoercionKind::JsonText`] change per argument, at
/// the pointer of `name`. Arguments without such a key are not touched (and nothing is
/// allocated).
///
/// # Errors
/// `invalid_arguments` for `tool` at `/{name}_json` when the string is not JSON.
pub(crate) fn decode_carried(
    tool: &str,
    schema: &Value,
    args: &mut Value,
) -> Result<Vec<Coercion>, ToolError> {
    use toolgate_model::dialect::openai_strict::JSON_TEXT_SUFFIX;
    let Value::Object(map) = args else {
        return Ok(Vec::new());
    };
    if !map.keys().any(|k| k.ends_with(JSON_TEXT_SUFFIX)) {
        return Ok(Vec::new());
    }
    let Some(Value::Object(declared)) = schema.get("properties") else {
        return Ok(Vec::new());
    };
    let carried: Vec<String> = map
        .keys()
        .filter(|k| {
            k.strip_suffix(JSON_TEXT_SUFFIX).is_some_and(|name| {
                !declared.contains_key(k.as_str())
                    && declared.contains_key(name)
                    && !map.contains_key(name)
            })
        })
        .cloned()
        .collect();
    let mut changes = Vec::with_capacity(carried.len());
    for key in carried {
        let name = &key[..key.len() - JSON_TEXT_SUFFIX.len()];
        let Some(sent) = map.remove(&key) else {
            continue;
        };
        let value = match &sent {
            Value::Null => None,
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(v) => Some(v),
                Err(e) => {
                    return Err(ToolError::invalid_arguments(
                        tool,
                        vec![ArgumentError {
                            pointer: format!("/{}", toolgate_model::config::location::escape(&key)),
                            message: format!(
                                "`{key}` carries `{name}` as JSON text, and it is not valid JSON \
                                 at line {} column {}",
                                e.line(),
                                e.column()
                            ),
                        }],
                    ));
                }
            },
            // Sent as the value itself: taken as it is.
            other => Some(other.clone()),
        };
        if let Some(v) = &value {
            map.insert(name.to_string(), v.clone());
        }
        changes.push(Coercion {
            pointer: format!("/{}", toolgate_model::config::location::escape(name)),
            kind: CoercionKind::JsonText,
            from: sent,
            to: value,
        });
    }
    Ok(changes)
}

/// `an array`, `a number`, ...: a JSON value's type, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_string_holding_an_object_is_that_object_and_the_change_is_recorded() {
        let (args, change) = decode("calc", r#"{"expression": "2+3"}"#.into()).unwrap();
        assert_eq!(args, json!({"expression": "2+3"}));
        assert_eq!(change.kind, CoercionKind::JsonText);
        assert_eq!(change.pointer, "");
        assert_eq!(change.from, json!(r#"{"expression": "2+3"}"#));
        assert_eq!(change.to, Some(args));
    }

    #[test]
    fn an_empty_string_holds_no_arguments() {
        for text in ["", "  \n"] {
            let (args, _) = decode("now", text.into()).unwrap();
            assert_eq!(args, Value::Null, "{text:?}");
        }
        let (args, _) = decode("now", "null".into()).unwrap();
        assert_eq!(args, Value::Null);
        // Only JSON's own whitespace: a no-break space is no JSON at all.
        let e = decode("now", "\u{a0}".into()).unwrap_err();
        assert!(e.message().contains("not valid JSON"), "{}", e.message());
    }

    #[test]
    fn text_that_is_not_json_is_refused_with_its_position_and_the_tool() {
        let e = decode("calc", "{\"expression\": \"2+3\"".into()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArguments);
        assert_eq!(
            e.message(),
            "arguments for `calc` are not valid JSON at line 1 column 20: EOF while parsing an object"
        );
        let e = decode("calc", "{\n  'expression': 1}".into()).unwrap_err();
        assert!(
            e.message()
                .starts_with("arguments for `calc` are not valid JSON at line 2 column 3"),
            "{}",
            e.message()
        );
        assert_eq!(e.details().unwrap()["tool"], "calc");
    }

    #[test]
    fn json_of_another_type_is_refused_naming_it() {
        for (text, kind) in [
            ("[1, 2]", "an array"),
            ("7", "a number"),
            ("\"x\"", "a string"),
        ] {
            let e = decode("calc", text.into()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArguments);
            assert!(
                e.message().ends_with(&format!("holds {kind}")),
                "{}",
                e.message()
            );
        }
    }

    #[test]
    fn an_argument_carried_as_json_text_is_decoded_only_where_the_schema_asks_for_it() {
        let schema = json!({"type": "object", "properties": {
            "filter": {"type": "string"}, "input": {}, "meta": {},
            "name_json": {"type": "string"}, "name": {"type": "string"}}});
        let mut args = json!({"filter": ".", "input_json": "[1, 2]", "meta_json": null,
                              "name_json": "\"declared, so kept\"", "other_json": "{}"});
        let changes = decode_carried("jq", &schema, &mut args).unwrap();
        // `input_json` decoded, `meta_json: null` is `meta` left out; a declared `name_json`
        // and an `other_json` without an `other` are left for validation to judge.
        assert_eq!(
            args,
            json!({"filter": ".", "input": [1, 2], "name_json": "\"declared, so kept\"",
                   "other_json": "{}"})
        );
        let pointers: Vec<&str> = changes.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/input", "/meta"]);
        assert_eq!(changes[1].to, None);
        // Sent beside the argument itself: nothing is decoded.
        let mut both = json!({"input": 1, "input_json": "2"});
        assert!(decode_carried("jq", &schema, &mut both).unwrap().is_empty());
        let mut bad = json!({"input_json": "{\"a\": "});
        let e = decode_carried("jq", &schema, &mut bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArguments);
        assert!(
            e.message().contains("/input_json") && e.message().contains("not valid JSON"),
            "{}",
            e.message()
        );
    }
}
