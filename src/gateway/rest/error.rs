//! A [`ToolError`] as an HTTP response: the status by error kind, the error as JSON.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolgate_runtime::{ErrorKind, ToolError};

/// The HTTP status a [`ToolError`] of `kind` is answered with.
///
/// | kind | status |
/// | --- | --- |
/// | `invalid_arguments` | 422 Unprocessable Content |
/// | `not_found` | 404 Not Found |
/// | `permission_denied`, `policy_denied` | 403 Forbidden |
/// | `budget_exceeded` | 402 Payment Required |
/// | `rate_limited` | 429 Too Many Requests (with `Retry-After`) |
/// | `circuit_open` | 503 Service Unavailable (with `Retry-After` when known) |
/// | `timeout` | 504 Gateway Timeout |
/// | `network`, `upstream`, `protocol` | 502 Bad Gateway |
/// | `cancelled` | 499 (client closed request, as nginx names it) |
/// | `internal` and any later kind | 500 Internal Server Error |
pub fn status_for(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::PermissionDenied | ErrorKind::PolicyDenied => StatusCode::FORBIDDEN,
        ErrorKind::BudgetExceeded => StatusCode::PAYMENT_REQUIRED,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::CircuitOpen => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::Network | ErrorKind::Upstream | ErrorKind::Protocol => StatusCode::BAD_GATEWAY,
        ErrorKind::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A [`ToolError`] answered as HTTP: [`status_for`] its kind, the error's JSON
/// (`{"kind", "message", "retryable", "retry_after_ms"?, "details"?}`) as the body, and
/// `Retry-After` (whole seconds, rounded up) when the error carries one.
pub struct ErrorResponse(pub ToolError);

impl From<ToolError> for ErrorResponse {
    fn from(e: ToolError) -> Self {
        Self(e)
    }
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let status = status_for(self.0.kind());
        let retry_after = self.0.retry_after();
        let mut response = (status, axum::Json(&self.0)).into_response();
        if let Some(after) = retry_after {
            let secs = after.as_millis().div_ceil(1000).max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// A [`ToolError`] answered with a status of its own rather than [`status_for`] its kind: for
/// refusals of the HTTP request itself (a query string that does not parse: 400, a body over
/// the size limit: 413, a method the route does not offer: 405), whose body is still the
/// ToolError JSON.
#[derive(Debug)]
pub struct RestError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The error, sent as the body.
    pub error: ToolError,
}

impl RestError {
    /// `error` answered with `status`.
    pub fn new(status: StatusCode, error: ToolError) -> Self {
        Self { status, error }
    }

    /// 400 Bad Request, kind `invalid_arguments`, with `message` (which should say what part of
    /// the request was wrong and what is accepted).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ToolError::new(ErrorKind::InvalidArguments, message),
        )
    }
}

impl From<ToolError> for RestError {
    fn from(error: ToolError) -> Self {
        Self::new(status_for(error.kind()), error)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let mut response = ErrorResponse(self.error).into_response();
        *response.status_mut() = self.status;
        response
    }
}
