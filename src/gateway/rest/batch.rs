//! `POST /calls`: several calls in one request, through [`Toolset::call_many`]
//! (toolgate_runtime), run concurrently, answered in request order.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_runtime::{ErrorKind, ProgressReporter, ToolError, ToolOutput};
use utoipa::ToSchema;

use super::api_doc::{BatchArguments, ToolErrorBody, ToolOutputSchema};
use super::call::{body_rejection, check_content_type};
use super::error::RestError;
use super::integer::{MAX_TIMEOUT_MS, whole};
use crate::gateway::{Caller, Gateway};

/// How many calls of a batch run at once when the request does not say.
pub const DEFAULT_BATCH_CONCURRENCY: usize = 8;
/// The most calls of a batch that run at once (a larger `concurrency` is lowered to it).
pub const MAX_BATCH_CONCURRENCY: usize = 64;
/// The most calls one batch may hold.
pub const MAX_BATCH_CALLS: usize = 1000;

/// The body of `POST /calls`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// The calls, answered in this order.
    #[schema(max_items = 1000)]
    pub calls: Vec<BatchCall>,
    /// How many calls run at once (default 8; at least 1; a larger number is lowered to 64).
    /// Each call still passes through its tool's policies: a tool's own `concurrency` limit
    /// makes its calls wait, a rate limit refuses the calls over it. A whole number, written
    /// `4` or `4.0` (JSON Schema's `integer`).
    #[serde(default, deserialize_with = "whole")]
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub concurrency: Option<u64>,
    /// The longest the whole batch may take, in milliseconds (at least 1, at most 86400000:
    /// one day): every call's deadline. Past it the calls still running are cancelled and
    /// answered `timeout`.
    #[serde(default, deserialize_with = "whole")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 86_400_000)]
    pub timeout_ms: Option<u64>,
}

/// One call of a batch.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchCall {
    /// The tool's name inside toolgate (`everything.echo`) or as a model sees it
    /// (`everything__echo`).
    pub name: String,
    /// The tool's arguments: an object, a JSON string holding one (decoded, as OpenAI's
    /// function calling hands arguments over), or omitted or `null` for none. Any other JSON
    /// type refuses the whole batch with 400.
    #[serde(default)]
    #[schema(value_type = Option<BatchArguments>)]
    pub arguments: Value,
}

/// The answer of `POST /calls`: one result per call, in the order of the request.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResponse {
    /// `{"output"}` for a call that succeeded, `{"error"}` for one that failed.
    pub results: Vec<BatchResult>,
}

/// The result of one call of a batch: its output, or its error. One call failing never
/// affects the others.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum BatchResult {
    /// The call succeeded (or an A2A agent asked for more input, as `POST /tools/{name}/call`
    /// answers it).
    Output {
        /// The tool's result.
        #[schema(value_type = ToolOutputSchema)]
        output: ToolOutput,
    },
    /// The call failed.
    Error {
        /// Why, as a ToolError (`kind`, `message`, `retryable`, `retry_after_ms`?, `details`?).
        #[schema(value_type = ToolErrorBody)]
        error: ToolError,
    },
}

impl From<Result<ToolOutput, ToolError>> for BatchResult {
    fn from(result: Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(output) => Self::Output { output },
            // The agent asked a question: an answer to show, not a failure.
            Err(e) if e.kind() == ErrorKind::InputRequired => Self::Output {
                output: e.into_output(),
            },
            Err(error) => Self::Error { error },
        }
    }
}

/// Calls several tools at once.
///
/// The calls run concurrently (up to `concurrency` at a time) as the API key's caller, each
/// through its tool's validation and policies, exactly as `POST /tools/{name}/call` would run
/// it; the results come back in the order of the request. One call failing (an unknown tool,
/// invalid arguments, a rate limit, a timeout) never cancels or changes the others. If the
/// client disconnects, every call still running is cancelled.
#[utoipa::path(
    post,
    path = "/calls",
    operation_id = "callTools",
    tag = "tools",
    request_body(content = BatchRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "One result per call, in the order of the request: `{\"output\"}` (the tool's result) or `{\"error\"}` (its ToolError, e.g. `rate_limited` with `retry_after_ms`).", body = BatchResponse),
        (status = 400, description = "The body is not a batch: not JSON, an unknown field, no `calls`, more than 1000 calls, `arguments` neither an object, a string nor null, `concurrency` or `timeout_ms` not a whole number or 0, `timeout_ms` over a day.", body = ToolErrorBody),
        (status = 408, description = "The body did not arrive whole within gateway.body_timeout_ms (the connection is closed).", body = ToolErrorBody),
        (status = 413, description = "The body is larger than gateway.max_body_bytes.", body = ToolErrorBody),
        (status = 415, description = "The body is sent with a Content-Type other than JSON.", body = ToolErrorBody),
    )
)]
pub(super) async fn call_batch(
    State(gateway): State<Gateway>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<BatchResponse>, RestError> {
    check_content_type(&headers)?;
    let body = body.map_err(|e| body_rejection(&gateway, &e))?;
    let request = parse(&body)?;
    let concurrency = request.concurrency.map_or(DEFAULT_BATCH_CONCURRENCY, |n| {
        usize::try_from(n).map_or(MAX_BATCH_CONCURRENCY, |n| n.min(MAX_BATCH_CONCURRENCY))
    });
    let caller = caller.map(|Extension(c)| c).unwrap_or_default();
    // As `Gateway::call`: counted in flight (shutdown waits for it), cancelled when this
    // future is dropped (the client went away) or when the shutdown grace period ends.
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let mut ctx = gateway.context(&caller, ProgressReporter::default(), cancel.clone());
    if let Some(ms) = request.timeout_ms {
        ctx = ctx.timeout(Duration::from_millis(ms));
    }
    let calls = request.calls.into_iter().map(|c| (c.name, c.arguments));
    let batch = gateway.toolset().call_many(calls, ctx.build(), concurrency);
    let results = gateway.run_call(cancel, batch).await;
    Ok(Json(BatchResponse {
        results: results.into_iter().map(BatchResult::from).collect(),
    }))
}

/// The body as a [`BatchRequest`], or a 400 saying what is wrong with it.
fn parse(body: &[u8]) -> Result<BatchRequest, RestError> {
    let request: BatchRequest = serde_json::from_slice(body).map_err(|e| {
        RestError::bad_request(format!(
            "the request body is not a batch of calls: {e} (send {{\"calls\": [{{\"name\": \"<tool>\", \"arguments\": {{...}}}}], \"concurrency\": N}})"
        ))
    })?;
    if request.calls.len() > MAX_BATCH_CALLS {
        return Err(RestError::bad_request(format!(
            "a batch holds at most {MAX_BATCH_CALLS} calls, not {}; split it",
            request.calls.len()
        )));
    }
    if let Some((i, call)) = request.calls.iter().enumerate().find(|(_, c)| {
        !matches!(
            c.arguments,
            Value::Object(_) | Value::String(_) | Value::Null
        )
    }) {
        return Err(RestError::bad_request(format!(
            "`calls[{i}].arguments` (for `{}`) must be a JSON object, a string holding one, or null, not {}",
            call.name,
            json_type(&call.arguments)
        )));
    }
    if request.concurrency == Some(0) {
        return Err(RestError::bad_request(
            "`concurrency` must be at least 1 (calls run at once)",
        ));
    }
    if let Some(ms) = request.timeout_ms {
        check_timeout("`timeout_ms`", ms)?;
    }
    Ok(request)
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "an array",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
    }
}

/// A deadline of `ms` milliseconds as a request sets it: at least 1, at most
/// [`MAX_TIMEOUT_MS`]; otherwise a 400 naming `what`.
pub(super) fn check_timeout(what: &str, ms: u64) -> Result<Duration, RestError> {
    if ms == 0 {
        return Err(RestError::bad_request(format!(
            "{what} must be at least 1 (milliseconds)"
        )));
    }
    if ms > MAX_TIMEOUT_MS {
        return Err(RestError::bad_request(format!(
            "{what} is {ms} ms; at most {MAX_TIMEOUT_MS} (one day) is accepted"
        )));
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_bad_ones_say_why() {
        let r = parse(
            br#"{"calls": [{"name": "calc", "arguments": {"expression": "1+1"}}, {"name": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[1].arguments, Value::Null);
        assert_eq!(r.concurrency, None);
        // JSON Schema's integers: 234.0 is one; above 64 is lowered when the batch runs.
        let r = parse(br#"{"calls": [], "concurrency": 234.0, "timeout_ms": 1500.0}"#).unwrap();
        assert_eq!((r.concurrency, r.timeout_ms), (Some(234), Some(1500)));
        for (body, says) in [
            (
                &br#"{"calls": [], "concurrency": 0}"#[..],
                "`concurrency` must be at least 1",
            ),
            (
                br#"{"calls": [], "timeout_ms": 0}"#,
                "`timeout_ms` must be at least 1",
            ),
            (
                br#"{"calls": [], "timeout_ms": 86400001}"#,
                "at most 86400000 (one day)",
            ),
            (
                br#"{"calls": [], "timeout_ms": 9223372036854775808}"#,
                "too large",
            ),
            (
                br#"{"calls": [], "concurrency": 2.5}"#,
                "not a whole number",
            ),
            (
                br#"{"calls": [{"name": "calc"}, {"name": "jq", "arguments": [1]}]}"#,
                "`calls[1].arguments` (for `jq`) must be a JSON object, a string holding one, or null, not an array",
            ),
            (br#"{"calls": [{"tool": "x"}]}"#, "unknown field `tool`"),
            (br#"{"concurrency": 2}"#, "missing field `calls`"),
            (b"nope", "not a batch of calls"),
        ] {
            let e = parse(body).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.error.message().contains(says), "{}", e.error.message());
        }
        let many = format!(
            "{{\"calls\": [{}]}}",
            vec![r#"{"name": "x"}"#; MAX_BATCH_CALLS + 1].join(",")
        );
        assert!(
            parse(many.as_bytes())
                .unwrap_err()
                .error
                .message()
                .contains("at most 1000")
        );
    }

    #[test]
    fn results_serialize_as_output_or_error() {
        let ok = BatchResult::from(Ok(ToolOutput::text("4")));
        let v = serde_json::to_value(&ok).unwrap();
        assert_eq!(v["output"]["content"][0]["text"], "4");
        assert!(v.get("error").is_none());
        let err = BatchResult::from(Err(ToolError::new(ErrorKind::RateLimited, "slow down")
            .with_retry_after(Duration::from_millis(200))));
        let v = serde_json::to_value(&err).unwrap();
        assert_eq!(v["error"]["kind"], "rate_limited");
        assert_eq!(v["error"]["retry_after_ms"], 200);
        assert!(v.get("output").is_none());
    }
}
