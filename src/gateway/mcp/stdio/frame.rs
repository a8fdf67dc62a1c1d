//! One frame (a stdin line, a POST body) as the stdio and legacy HTTP+SSE transports read it:
//! a JSON-RPC message for the session, or the JSON-RPC error that answers it (JSON-RPC 2.0 §5.1), or a malformed notification or answer to drop.

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest,
};
use serde_json::{Value, json};

/// JSON-RPC 2.0 "Parse error": the frame is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0 "Invalid Request": JSON, but not a JSON-RPC message.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0 "Invalid params": a request of a known shape whose params do not fit it.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What one frame is.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A JSON-RPC message for the session.
    Message(Box<ClientJsonRpcMessage>),
    /// Not a usable message, and answerable: this JSON-RPC error response (serialized, one
    /// line) is the answer.
    Invalid(String),
    /// A malformed notification or response: JSON-RPC never answers those; this says why it
    /// was dropped (for the log).
    Dropped(String),
}

/// A JSON-RPC error response: `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}` (in
/// that key order; `id` is `null` when the frame's id could not be read).
pub(crate) fn error_response(id: Option<&Value>, code: i64, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
    .to_string()
}

/// Classifies one frame (a stdin line without its newline, a POST body): a leading UTF-8 BOM
/// is ignored (RFC 8259 §8.1); then
///
/// | frame | result |
/// | --- | --- |
/// | a client message MCP knows (unknown methods included: they get -32601 from rmcp) | [`Parsed::Message`] |
/// | not JSON | -32700 `Parse error`, id `null` |
/// | JSON, not an object; no or a bad `jsonrpc`; neither `method` nor `result`/`error` | -32600 `Invalid Request: …`, with the frame's id when it has a usable one |
/// | a request (`method` and `id`) whose params do not fit its method | -32602 `Invalid params: …`, with its id |
/// | a notification (`method`, no `id`) or an answer (`result`/`error`) that does not fit | [`Parsed::Dropped`] |
pub(crate) fn parse(frame: &[u8]) -> Parsed {
    let frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(frame) {
        Ok(message) => return checked(message),
        Err(e) => e,
    };
    let value: Value = match serde_json::from_slice(frame) {
        Ok(value) => value,
        Err(_) => return Parsed::Invalid(error_response(None, PARSE_ERROR, "Parse error")),
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            "a batch (JSON array); send one message at a time"
        } else {
            "not a JSON object"
        };
        return Parsed::Invalid(invalid_request(None, what));
    };
    // Only a string or an integer identifies a request (MCP: "MUST be a string or integer").
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64());
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Parsed::Invalid(invalid_request(id, "`jsonrpc` must be \"2.0\""));
    }
    match (object.get("method"), object.contains_key("id")) {
        (Some(Value::String(method)), false) => {
            let why =
                serde_json::from_value::<JsonRpcNotification<ClientNotification>>(value.clone())
                    .err()
                    .map_or_else(|| error.to_string(), |e| e.to_string());
            Parsed::Dropped(format!(
                "a notification `{method}` that does not fit it: {why}"
            ))
        }
        (Some(Value::String(method)), true) => match id {
            // The request alone parses: the message also carries `result` or `error`.
            Some(id) => {
                match serde_json::from_value::<JsonRpcRequest<ClientRequest>>(value.clone()) {
                    Ok(_) => Parsed::Invalid(invalid_request(
                        Some(id),
                        "a request carries no `result` or `error`",
                    )),
                    Err(e) => {
                        let why = check_params(method, object.get("params"))
                            .err()
                            .unwrap_or_else(|| e.to_string());
                        Parsed::Invalid(error_response(
                            Some(id),
                            INVALID_PARAMS,
                            &invalid_params_message(method, &why),
                        ))
                    }
                }
            }
            None => Parsed::Invalid(invalid_request(None, "`id` must be a string or an integer")),
        },
        (Some(_), _) => Parsed::Invalid(invalid_request(id, "`method` must be a string")),
        (None, _) if object.contains_key("result") || object.contains_key("error") => {
            Parsed::Dropped(format!(
                "an answer that is not a JSON-RPC response: {error}"
            ))
        }
        (None, _) => Parsed::Invalid(invalid_request(
            id,
            "neither a request (`method`) nor a response (`result` or `error`)",
        )),
    }
}

/// A parsed message, unless it is a request of a method MCP defines whose params did not fit
/// it: rmcp then takes it for a custom request and would answer -32601 "method not found".
fn checked(message: ClientJsonRpcMessage) -> Parsed {
    if let JsonRpcMessage::Request(request) = &message
        && let ClientRequest::CustomRequest(custom) = &request.request
        && let Err(why) = check_params(&custom.method, custom.params.as_ref())
    {
        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
        return Parsed::Invalid(error_response(
            Some(&id),
            INVALID_PARAMS,
            &invalid_params_message(&custom.method, &why),
        ));
    }
    Parsed::Message(Box::new(message))
}

/// The message of the -32602 answer to a request of `method` whose params do not fit it
/// because of `why`: the same text on every transport (stdio and SSE answer it before rmcp
/// sees the request, streamable HTTP from the handler's `on_custom_request`).
pub(crate) fn invalid_params_message(method: &str, why: &str) -> String {
    format!("Invalid params for `{method}`: {why}")
}

/// Whether `params` fit `method`, for the requests a client sends that take params (MCP
/// 2025-11-25 schema); other methods are not checked here.
// `logging/setLevel` is deprecated in rmcp (SEP-2577), but clients of the initialize era send it.
#[allow(deprecated)]
pub(crate) fn check_params(method: &str, params: Option<&Value>) -> Result<(), String> {
    use rmcp::model::{
        CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams,
        InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams,
        SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
    };
    fn fits<T: serde::de::DeserializeOwned>(params: Option<&Value>) -> Result<(), String> {
        let params = params.cloned().unwrap_or(Value::Null);
        serde_json::from_value::<T>(params)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    match method {
        "initialize" => fits::<InitializeRequestParams>(params),
        "tools/call" => {
            check_call(params)?;
            match text_arguments(params) {
                // Arguments sent as one string holding JSON: the handler passes the string to
                // the toolset, which decodes it as on every front; the rest must fit.
                Some(_) => {
                    let mut rest = params.cloned().unwrap_or(Value::Null);
                    if let Some(rest) = rest.as_object_mut() {
                        rest.remove("arguments");
                    }
                    fits::<CallToolRequestParams>(Some(&rest))
                }
                None => fits::<CallToolRequestParams>(params),
            }
        }
        "resources/read" => fits::<ReadResourceRequestParams>(params),
        "prompts/get" => fits::<GetPromptRequestParams>(params),
        "completion/complete" => fits::<CompleteRequestParams>(params),
        "logging/setLevel" => fits::<SetLevelRequestParams>(params),
        "resources/subscribe" => fits::<SubscribeRequestParams>(params),
        "resources/unsubscribe" => fits::<UnsubscribeRequestParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            fits::<Option<PaginatedRequestParams>>(params)
        }
        _ => Ok(()),
    }
}

/// The `arguments` of a `tools/call` sent as one string (holding JSON, as OpenAI's function
/// calling hands them over): rmcp takes such a request for a custom one, and the handler's
/// `on_custom_request` runs it with the string.
pub(crate) fn text_arguments(params: Option<&Value>) -> Option<&str> {
    params?.get("arguments")?.as_str()
}

/// The two mistakes a `tools/call` is most often sent with, said in words rather than serde's:
/// no tool name, and `arguments` that are neither an object nor a string holding one (a
/// number, an array).
fn check_call(params: Option<&Value>) -> Result<(), String> {
    let Some(Value::Object(params)) = params else {
        return Ok(()); // serde's message says what the params are instead
    };
    let name = match params.get("name") {
        None => return Err("missing field `name` (the tool to call)".into()),
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(format!(
                "`name` must be a string (the tool to call), not {}",
                json_type(other)
            ));
        }
    };
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_) | Value::String(_)) => Ok(()),
        Some(other) => Err(format!(
            "the arguments of tool `{name}` must be a JSON object, not {}",
            json_type(other)
        )),
    }
}

/// `a string`, `an array`, ...: what a JSON value is, for messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid_request(id: Option<&Value>, why: &str) -> String {
    error_response(id, INVALID_REQUEST, &format!("Invalid Request: {why}"))
}

/// The top-level `id` of a JSON object whose text starts with `head` (a frame too large to
/// parse); the MCP client reads an oversized answer's id the same way.
pub(crate) use toolgate_runtime::mcp::top_level_id;

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(frame: &str) -> Value {
        match parse(frame.as_bytes()) {
            Parsed::Invalid(answer) => serde_json::from_str(&answer).unwrap(),
            other => panic!("{frame}: {other:?}"),
        }
    }

    #[test]
    fn frames_are_classified() {
        assert_eq!(
            parse(b"not json").answer(),
            Some(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#)
        );
        assert!(matches!(
            parse(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
            Parsed::Message(_)
        ));
        let unknown = parse(br#"{"jsonrpc":"2.0","id":"u","method":"no/such"}"#);
        assert!(matches!(unknown, Parsed::Message(_)), "{unknown:?}");

        let e = invalid(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!(7), json!(-32600))
        );
        let e = invalid(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!("a"), json!(-32600))
        );
        let e = invalid(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!(3), json!(-32602))
        );
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("invalid type"),
            "{e}"
        );
        // rmcp would take it for a custom request and answer "method not found".
        let e = invalid(r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{}}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!("c"), json!(-32602))
        );
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("missing field `name`"),
            "{e}"
        );
        // Arguments that are not an object, and a name that is not a string, are named.
        // A string holding the arguments is for the toolset to decode.
        let text = parse(
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"calc","arguments":"{\"x\":1}"}}"#,
        );
        assert!(matches!(text, Parsed::Message(_)), "{text:?}");
        for (args, what) in [("7", "a number"), ("[1]", "an array")] {
            let frame = format!(
                r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"calc","arguments":{args}}}}}"#
            );
            let e = invalid(&frame);
            assert_eq!(e["error"]["code"], -32602, "{e}");
            assert_eq!(
                e["error"]["message"],
                format!(
                    "Invalid params for `tools/call`: the arguments of tool `calc` must be a JSON object, not {what}"
                ),
                "{e}"
            );
        }
        let e = invalid(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#);
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`name` must be a string"),
            "{e}"
        );
        let e = invalid(r#"{"jsonrpc":"2.0","id":3,"method":"ping","result":{}}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!(3), json!(-32600))
        );
        let e = invalid(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (Value::Null, json!(-32600))
        );
        for frame in ["[1,2]", "42", r#""s""#, "{}"] {
            let e = invalid(frame);
            assert_eq!(
                (e["id"].clone(), e["error"]["code"].clone()),
                (Value::Null, json!(-32600))
            );
        }
        let dropped = parse(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#);
        assert!(matches!(dropped, Parsed::Dropped(_)), "{dropped:?}");
        let dropped = parse(br#"{"jsonrpc":"2.0","id":9,"error":"x"}"#);
        assert!(matches!(dropped, Parsed::Dropped(_)), "{dropped:?}");
    }

    impl Parsed {
        fn answer(&self) -> Option<&str> {
            match self {
                Parsed::Invalid(s) => Some(s),
                _ => None,
            }
        }
    }
}
