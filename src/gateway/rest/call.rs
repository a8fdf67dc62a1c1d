//! `POST /tools/{name}/call`: one call through [`Gateway::call`], the path every front uses.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_runtime::{ArgumentError, ErrorKind, ProgressReporter, ToolError, ToolOutput};
use utoipa::IntoParams;

use super::api_doc::{CallArguments, ToolErrorBody, ToolOutputSchema};
use super::error::RestError;
use super::{ApiQuery, ToolName};
use crate::gateway::calls::CallExtras;
use crate::gateway::servers::VirtualServer;
use crate::gateway::{Caller, Gateway};

/// The query of `POST /tools/{name}/call`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CallQuery {
    /// The longest the call may take, in milliseconds (at least 1, at most 86400000: one
    /// day). It can only shorten the tool's own timeout, which applies anyway; past it the call
    /// is cancelled and answered with 504, kind `timeout`.
    #[serde(default, deserialize_with = "super::integer::whole_in_query")]
    #[param(value_type = Option<u64>, minimum = 1, maximum = 86_400_000)]
    pub timeout_ms: Option<u64>,
}

/// Calls a tool.
///
/// The body is the arguments object itself (`{"expression": "2+3"}`), not wrapped; an empty
/// body means no arguments. A JSON string holding the object (`"{\"expression\": \"2+3\"}"`,
/// as OpenAI's function calling hands arguments over) is decoded, and the change is listed in
/// the result's `_meta`. The call runs as the API key's caller, through the toolset's
/// validation and policies; if the client disconnects, the call is cancelled.
///
/// A tool's failure is answered with its ToolError JSON and the status of its kind (e.g. 422
/// `invalid_arguments` with every violation in `details.errors`, 502 `upstream` for a remote
/// tool that reported an error result — its content parts are in `details.content`).
#[utoipa::path(
    post,
    path = "/tools/{name}/call",
    operation_id = "callTool",
    tag = "tools",
    params(
        ("name" = String, Path, description = "The tool's name inside toolgate (`everything.echo`) or as a model sees it (`everything__echo`)."),
        CallQuery,
    ),
    request_body(
        content = CallArguments,
        content_type = "application/json",
        description = "The tool's arguments, as a JSON object (see the tool's input schema at /tools/{name}); an empty body for none.",
    ),
    responses(
        (status = 200, description = "The tool's result (MCP CallToolResult: content parts, structuredContent, isError, _meta). Also the answer when an A2A agent asks for more input (`input_required`): the question as text, `{state, taskId, contextId}` as structuredContent; call again with that taskId to continue.", body = ToolOutputSchema),
        (status = 400, description = "The body is not JSON (`arguments for `{tool}` are not valid JSON at line L column C`), or an unknown query parameter, or `timeout_ms` not a whole number from 1 to 86400000.", body = ToolErrorBody),
        (status = 402, description = "The caller's budget would be exceeded (`budget_exceeded`).", body = ToolErrorBody),
        (status = 404, description = "No tool of that name (`not_found`).", body = ToolErrorBody),
        (status = 408, description = "The body did not arrive whole within gateway.body_timeout_ms (the connection is closed).", body = ToolErrorBody),
        (status = 413, description = "The body is larger than gateway.max_body_bytes.", body = ToolErrorBody),
        (status = 415, description = "The body is sent with a Content-Type other than JSON.", body = ToolErrorBody),
        (status = 422, description = "The arguments do not match the tool's input schema, or are not an object, nor a string holding one (`invalid_arguments`; `details.errors` lists each violation with its JSON pointer).", body = ToolErrorBody),
        (status = 429, description = "A rate limit refused the call (`rate_limited`; `Retry-After` in seconds).", body = ToolErrorBody),
        (status = 502, description = "The tool's backend failed (`upstream`, `network`, `protocol`).", body = ToolErrorBody),
        (status = 503, description = "The source's circuit breaker is open (`circuit_open`), or the gateway is shutting down.", body = ToolErrorBody),
        (status = 504, description = "The call did not finish in time (`timeout`).", body = ToolErrorBody),
    )
)]
pub(super) async fn call_tool(
    State(gateway): State<Gateway>,
    ToolName(name): ToolName,
    ApiQuery(query): ApiQuery<CallQuery>,
    caller: Option<Extension<Caller>>,
    server: Option<Extension<std::sync::Arc<VirtualServer>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ToolOutput>, RestError> {
    let timeout = query
        .timeout_ms
        .map(|ms| super::batch::check_timeout("query parameter `timeout_ms`", ms))
        .transpose()?;
    check_content_type(&headers)?;
    let body = body.map_err(|e| body_rejection(&gateway, &e))?;
    let args = arguments(&gateway, &name, &body)?;
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    // Cancelled when this future is dropped (the client went away) or the call ends: the call
    // then stops, and so does the task `Gateway::call` links the token with.
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    // On a virtual server (`/servers/{id}/tools/{name}/call`): its guardrails too, the calls
    // made on the call's behalf kept inside it, and the call counted under its label as over
    // MCP.
    let server = server.map(|Extension(s)| s);
    let extras = CallExtras {
        reason: None,
        server: server.clone(),
    };
    let call = gateway.call_cancellable(
        &name,
        args,
        &caller,
        ProgressReporter::default(),
        cancel.clone(),
        extras,
    );
    let result = match timeout {
        None => call.await,
        Some(t) => tokio::time::timeout(t, call)
            .await
            .unwrap_or_else(|_| Err(ToolError::timeout(&name, t))),
    };
    if let Some(server) = &server {
        let outcome = match &result {
            Ok(out) if out.is_error => "tool_error",
            Ok(_) => "ok",
            Err(e) => e.kind().as_str(),
        };
        server.count_call(&name, outcome);
    }
    match result {
        // The agent asked a question: an answer to show, not a failure.
        Err(e) if e.kind() == ErrorKind::InputRequired => Ok(Json(e.into_output())),
        result => Ok(Json(result?)),
    }
}

/// A `Content-Type` that is not JSON (`application/json`, `*/*+json`) is refused with 415; none
/// at all is taken as JSON.
pub(super) fn check_content_type(headers: &HeaderMap) -> Result<(), RestError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let text = value.to_str().unwrap_or("");
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        return Ok(());
    }
    Err(RestError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ToolError::new(
            ErrorKind::InvalidArguments,
            format!(
                "the request body is sent as `{text}`: send the arguments as JSON, with `Content-Type: application/json`"
            ),
        ),
    ))
}

/// The body could not be read: over the size limit (413), or the connection failed (400).
pub(super) fn body_rejection(gateway: &Gateway, e: &BytesRejection) -> RestError {
    let status = e.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return RestError::new(
            status,
            ToolError::new(
                ErrorKind::InvalidArguments,
                format!(
                    "the request body is larger than the gateway's limit of {} bytes (gateway.max_body_bytes in tools.yaml)",
                    gateway.settings().max_body_bytes
                ),
            ),
        );
    }
    RestError::new(
        status,
        ToolError::new(
            ErrorKind::InvalidArguments,
            format!("the request body could not be read: {}", e.body_text()),
        ),
    )
}

/// The body as the call's arguments: an object, a string holding one (decoded by the toolset,
/// as on every front), or an empty body for none (`Value::Null`). Not JSON is a 400 naming the tool and
/// the place (`arguments for `calc` are not valid JSON at line 1 column 9: ...`); JSON of
/// another type is a 422 `invalid_arguments` for the tool. `tool` is its name inside toolgate
/// when the catalog knows it, so that errors name it as the toolset's own errors do.
fn arguments(gateway: &Gateway, name: &str, body: &[u8]) -> Result<Value, RestError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let tool = || {
        gateway
            .toolset()
            .entry(name)
            .map_or_else(|| name.to_string(), |e| e.name().to_string())
    };
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        RestError::new(
            StatusCode::BAD_REQUEST,
            ToolError::arguments_not_json(&tool(), &e),
        )
    })?;
    let kind = match &value {
        Value::Object(_) | Value::String(_) => return Ok(value),
        // The document's body is an object: `null` is not one (an empty body is no arguments).
        Value::Null => "null (send an empty body for no arguments)",
        Value::Array(_) => "an array",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
    };
    Err(ToolError::invalid_arguments(
        &tool(),
        vec![ArgumentError {
            pointer: String::new(),
            message: format!(
                "the arguments must be a JSON object (each argument by name), not {kind}"
            ),
        }],
    )
    .into())
}
