//! Arguments sent as one string holding JSON (`"{\"city\":\"Oslo\"}"` instead of
//! `{"city":"Oslo"}`): OpenAI's function calling hands a tool call's `arguments` to the client as
//! such a string, and clients, providers and models forward it as it is. Every front (CLI, REST,
//! MCP on every transport) passes the string on, and [`Toolset::call`](crate::Toolset::call)
//! decodes it here, once, before the pipeline, whether or not arguments are validated.

use serde_json::Value;

use super::{Coercion, CoercionKind};
use crate::{ArgumentError, ErrorKind, ToolError};

/// The arguments held by `text`, sent for tool `tool` as one string, and the change recorded
/// for the result's `_meta` ([`CoercionKind::JsonText`], pointer `""`).
///
/// A string of only whitespace holds no arguments (`null`): models send `""` for a tool
/// without parameters.
///
/// # Errors
/// `invalid_arguments` for `tool` when `text` is not JSON
/// ([`ToolError::arguments_not_json`]: `arguments for `tool` are not valid JSON at line L
/// column C`), or is JSON of another type than an object.
pub(crate) fn decode(tool: &str, text: String) -> Result<(Value, Coercion), ToolError> {
    let value = if text.trim().is_empty() {
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
}
