//! [`ToolError`]: the one error type every tool call can end in, whatever its source.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What kind of failure ended a tool call.
///
/// Serialized in `snake_case` (`"invalid_arguments"`, `"rate_limited"`, ...). The kind, never the
/// message text, is what callers, retries and fallbacks match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The arguments do not match the tool's input schema (the details name each argument path).
    InvalidArguments,
    /// No tool of that name exists in the toolset.
    NotFound,
    /// The caller may not call this tool, or the tool may not touch what it was asked to
    /// (a host outside an allowlist, a path outside a root).
    PermissionDenied,
    /// A policy refused the call before it ran.
    PolicyDenied,
    /// The caller's budget would be exceeded by this call.
    BudgetExceeded,
    /// A rate limit refused the call; `retry_after` says when to try again.
    RateLimited,
    /// The circuit breaker of the tool's source is open.
    CircuitOpen,
    /// The call did not finish before its deadline.
    Timeout,
    /// The network failed (connection refused or reset, DNS, a remote process that exited).
    Network,
    /// The backend ran and reported a failure: the tool function returned `Err`, an HTTP API
    /// answered with an error status, an MCP server answered `isError: true`, an A2A task failed.
    Upstream,
    /// A remote peer broke its protocol (malformed JSON-RPC, an unexpected message).
    Protocol,
    /// The call was cancelled by its caller.
    Cancelled,
    /// Not a failure: the tool (an A2A agent) stopped to ask the caller something (its task is
    /// `input-required` or `auth-required`). The message is the agent's question;
    /// `details` are `{"state", "taskId", "contextId"}`: call the tool again with that `taskId`
    /// (and `contextId`) and the answer to continue the same task. Shown to a model as a normal
    /// result (`isError: false`, see [`ToolError::into_output`]).
    InputRequired,
    /// A bug or an unexpected condition inside toolgate or the tool (a panic, for instance).
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 14] = [
        Self::InvalidArguments,
        Self::NotFound,
        Self::PermissionDenied,
        Self::PolicyDenied,
        Self::BudgetExceeded,
        Self::RateLimited,
        Self::CircuitOpen,
        Self::Timeout,
        Self::Network,
        Self::Upstream,
        Self::Protocol,
        Self::Cancelled,
        Self::InputRequired,
        Self::Internal,
    ];

    /// The `snake_case` name used in JSON and on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::NotFound => "not_found",
            Self::PermissionDenied => "permission_denied",
            Self::PolicyDenied => "policy_denied",
            Self::BudgetExceeded => "budget_exceeded",
            Self::RateLimited => "rate_limited",
            Self::CircuitOpen => "circuit_open",
            Self::Timeout => "timeout",
            Self::Network => "network",
            Self::Upstream => "upstream",
            Self::Protocol => "protocol",
            Self::Cancelled => "cancelled",
            Self::InputRequired => "input_required",
            Self::Internal => "internal",
        }
    }

    /// Whether a call that failed with this kind may succeed if simply tried again later.
    ///
    /// `rate_limited`, `circuit_open`, `timeout` and `network` are; everything else is not by
    /// default (an individual error can say otherwise with [`ToolError::with_retryable`]).
    pub const fn default_retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::CircuitOpen | Self::Timeout | Self::Network
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One violation found in a tool call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArgumentError {
    /// JSON pointer (RFC 6901) into the arguments object, `""` for the object itself,
    /// e.g. `/filter/year`.
    pub pointer: String,
    /// What is wrong there, in a sentence a model can act on.
    pub message: String,
}

/// Why a tool call failed.
///
/// Carries a [`kind`](ErrorKind), a message written to be shown to a model (it names the tool, the
/// argument path, the limit — never a secret), whether retrying may help, an optional
/// `retry_after`, optional structured details (for `invalid_arguments`: every [`ArgumentError`])
/// and, for logs only, the chain of underlying errors ([`std::error::Error::source`]).
///
/// Serializes as `{"kind", "message", "retryable", "retry_after_ms"?, "details"?}`; the source
/// chain is never serialized.
#[derive(Clone)]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
    retryable: bool,
    retry_after: Option<Duration>,
    /// Boxed: rare, and it keeps `Result<_, ToolError>` small.
    details: Option<Box<serde_json::Value>>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `message` with every remembered secret masked (`crate::redact::text`), then cut to
/// [`ToolError::MAX_MESSAGE_BYTES`] on a character boundary: masked first, so that a secret
/// across the cut leaves no part of itself.
fn bounded(message: String) -> String {
    let mut message = match crate::redact::text(&message) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(clean) => clean,
    };
    let max = ToolError::MAX_MESSAGE_BYTES;
    if message.len() <= max {
        return message;
    }
    let cut = toolgate_model::text::floor_char_boundary(&message, max);
    let left_out = message.len() - cut;
    message.truncate(cut);
    message.push_str(&format!(" … [{left_out} more bytes not shown]"));
    message
}

impl ToolError {
    /// The longest message kept, in bytes (4 KiB); longer ones are cut with a note.
    pub const MAX_MESSAGE_BYTES: usize = 4096;

    /// A new error of `kind` with a model-facing `message`; `retryable` defaults from the kind.
    ///
    /// Every configured secret the message quotes is masked ([`crate::redact`]: an upstream
    /// may echo a credential in its error). Messages longer than
    /// [`ToolError::MAX_MESSAGE_BYTES`] are then cut (on a character boundary) with a note saying
    /// how much was left out: an error echoing a huge value must not flood a model's context.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: bounded(message.into()),
            retryable: kind.default_retryable(),
            retry_after: None,
            details: None,
            source: None,
        }
    }

    /// `invalid_arguments` for `tool`, listing every violation (pointer + reason) in the message
    /// and in `details.errors`.
    pub fn invalid_arguments(tool: &str, errors: Vec<ArgumentError>) -> Self {
        let listed = errors
            .iter()
            .map(|e| {
                if e.pointer.is_empty() {
                    e.message.clone()
                } else {
                    format!("{}: {}", e.pointer, e.message)
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let details = serde_json::json!({ "tool": tool, "errors": errors });
        Self::new(
            ErrorKind::InvalidArguments,
            format!("invalid arguments for tool `{tool}`: {listed}"),
        )
        .with_details(details)
    }

    /// `invalid_arguments`: the arguments of `tool` were sent as text that is not JSON (a
    /// request body, a CLI argument, a string holding the arguments). The message gives the
    /// place serde stopped at, `arguments for `calc` are not valid JSON at line 1 column 20:
    /// EOF while parsing an object`, and `details` has `tool` and one [`ArgumentError`] at
    /// pointer `""`.
    pub fn arguments_not_json(tool: &str, error: &serde_json::Error) -> Self {
        let (line, column) = (error.line(), error.column());
        // serde's own text ends with " at line L column C"; the position is said once.
        let text = error.to_string();
        let reason = text
            .strip_suffix(&format!(" at line {line} column {column}"))
            .unwrap_or(&text);
        let at = format!("not valid JSON at line {line} column {column}: {reason}");
        let details = serde_json::json!({
            "tool": tool,
            "errors": [ArgumentError { pointer: String::new(), message: at.clone() }],
        });
        Self::new(
            ErrorKind::InvalidArguments,
            format!("arguments for `{tool}` are {at}"),
        )
        .with_details(details)
    }

    /// `not_found`: no tool called `name`.
    pub fn not_found(name: &str) -> Self {
        Self::new(ErrorKind::NotFound, format!("no tool named `{name}`"))
    }

    /// `timeout`: `tool` did not finish within `after` (shown in milliseconds, rounded up, so
    /// that 499.9 ms left of a 500 ms deadline reads as 500).
    pub fn timeout(tool: &str, after: Duration) -> Self {
        Self::new(
            ErrorKind::Timeout,
            format!(
                "tool `{tool}` did not finish within {} ms",
                after.as_micros().div_ceil(1000)
            ),
        )
    }

    /// `cancelled`: the caller cancelled the call to `tool`.
    pub fn cancelled(tool: &str) -> Self {
        Self::new(
            ErrorKind::Cancelled,
            format!("call to tool `{tool}` was cancelled"),
        )
    }

    /// `upstream`: the tool ran and reported `message`.
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Upstream, message)
    }

    /// `internal`: something unexpected happened (a panic, a bug).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// `permission_denied` with `message`.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// Attaches the underlying error (kept for logs, never serialized).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Says when the call may be tried again (also marks it retryable).
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self.retryable = true;
        self
    }

    /// Overrides whether retrying may help.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Attaches structured details (shown to callers as `details`), every configured secret in
    /// them masked as in the message.
    pub fn with_details(mut self, mut details: serde_json::Value) -> Self {
        crate::redact::value(&mut details);
        self.details = Some(Box::new(details));
        self
    }

    /// Replaces each of `secrets` (values that were not configured through toolgate, so not
    /// remembered: configured ones are masked already), in every form it may be quoted in
    /// ([`toolgate_model::secrets::forms`]), in the message and in the strings of the details
    /// with `[redacted]`: for errors that may quote what a remote end sent back. Empty
    /// secrets are ignored.
    pub fn redacted<S: AsRef<str>>(mut self, secrets: &[S]) -> Self {
        use toolgate_model::secrets::Redactor;
        fn scrub_value(r: &Redactor, v: &mut serde_json::Value) {
            match v {
                serde_json::Value::String(text) => {
                    if let std::borrow::Cow::Owned(clean) = r.redact(text) {
                        *text = clean;
                    }
                }
                serde_json::Value::Array(items) => items.iter_mut().for_each(|i| scrub_value(r, i)),
                serde_json::Value::Object(map) => map.values_mut().for_each(|i| scrub_value(r, i)),
                _ => {}
            }
        }
        let Some(r) = Redactor::new(secrets.iter().map(AsRef::as_ref), Vec::<String>::new()) else {
            return self;
        };
        if let std::borrow::Cow::Owned(clean) = r.redact(&self.message) {
            self.message = clean;
        }
        if let Some(details) = self.details.as_deref_mut() {
            scrub_value(&r, details);
        }
        self
    }

    /// Prefixes the message with context, e.g. the tool name.
    pub fn with_context(mut self, context: impl fmt::Display) -> Self {
        self.message = bounded(format!("{context}: {}", self.message));
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The model-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying may help.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// When to retry, if the failure said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Structured details, if any.
    pub fn details(&self) -> Option<&serde_json::Value> {
        self.details.as_deref()
    }

    /// The violations of an `invalid_arguments` error (empty for other kinds).
    pub fn argument_errors(&self) -> Vec<ArgumentError> {
        self.details
            .as_ref()
            .and_then(|d| d.get("errors"))
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default()
    }

    /// The error as a tool result a model can read and act on (MCP's "tool execution error":
    /// `isError: true`, as MCP 2025-06-18 "Error Handling" asks for invalid arguments and other
    /// failures of the call itself): one text part with `<kind>: <message>`, and the error as
    /// JSON (`{"kind", "message", "retryable", ...}`) under `_meta["toolgate/error"]`.
    ///
    /// [`ErrorKind::InputRequired`] is the exception: the agent asked a question, which a model
    /// should read as an answer, not as a failure. Its output is `isError: false`, the message
    /// (`Agent needs more input: Which city?`) as its first text part, and the details
    /// (`{"state", "taskId", "contextId"}`) as `structuredContent` and, mirrored as JSON, a
    /// second text part; the error JSON is still under `_meta["toolgate/error"]`.
    pub fn into_output(self) -> crate::ToolOutput {
        let mut out = if self.kind == ErrorKind::InputRequired {
            let mut out = crate::ToolOutput::text(self.message.clone());
            if let Some(details) = self.details.as_deref() {
                // Mirrored as text, so a client reading only `content` sees the taskId too.
                out.content.push(crate::Content::text(details.to_string()));
                out.structured = Some(details.clone());
            }
            out
        } else {
            crate::ToolOutput::error_text(self.to_string())
        };
        if let Ok(json) = serde_json::to_value(&self) {
            out.meta = Some(serde_json::Map::from_iter([(
                Self::META_KEY.to_string(),
                json,
            )]));
        }
        out
    }

    /// The `_meta` key under which [`into_output`](Self::into_output) puts the error as JSON.
    pub const META_KEY: &'static str = "toolgate/error";

    /// The error and its whole source chain, one per line, for logs.
    pub fn report(&self) -> String {
        let mut out = self.to_string();
        let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(self);
        while let Some(e) = next {
            let text = e.to_string();
            // An error converted with its own message as ours adds nothing the first time.
            if text != self.message {
                out.push_str("\n  caused by: ");
                out.push_str(&text);
            }
            next = e.source();
        }
        out
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("retryable", &self.retryable)
            .field("retry_after", &self.retry_after)
            .field("details", &self.details)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for ToolError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.message == other.message
            && self.retryable == other.retryable
            && self.retry_after == other.retry_after
            && self.details == other.details
    }
}

#[derive(Serialize, Deserialize)]
struct ToolErrorRepr {
    kind: ErrorKind,
    message: String,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<serde_json::Value>,
}

impl Serialize for ToolError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolErrorRepr {
            kind: self.kind,
            message: self.message.clone(),
            retryable: self.retryable,
            retry_after_ms: self
                .retry_after
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            details: self.details.as_deref().cloned(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = ToolErrorRepr::deserialize(deserializer)?;
        let mut details = r.details;
        if let Some(d) = details.as_mut() {
            crate::redact::value(d);
        }
        Ok(Self {
            kind: r.kind,
            message: bounded(r.message),
            retryable: r.retryable,
            retry_after: r.retry_after_ms.map(Duration::from_millis),
            details: details.map(Box::new),
            source: None,
        })
    }
}

/// Why a [`Toolset`](crate::Toolset) could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool takes `State<T>` but no value of `T` was given to the builder.
    #[error(
        "no state of type `{type_name}` was given to the toolset builder, but tool(s) {} take `State<{type_name}>`; call `.state(...)` with one",
        tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
    )]
    MissingState {
        /// The Rust type name (`std::any::type_name`).
        type_name: String,
        /// The tools that need it.
        tools: Vec<String>,
    },
    /// Two sources offer a tool under the same name.
    #[error("tool name `{name}` is offered by both source `{first}` and source `{second}`")]
    DuplicateTool {
        /// The clashing name.
        name: String,
        /// The source that registered it first.
        first: String,
        /// The source that registered it again.
        second: String,
    },
    /// Two sources share an id.
    #[error("two tool sources share the id `{0}`")]
    DuplicateSource(String),
    /// A source could not be built.
    #[error("source `{source_id}` cannot be built: {message}")]
    Source {
        /// The source's id.
        source_id: String,
        /// Why.
        message: String,
    },
    /// Semantic search was asked for ([`ToolsetBuilder::semantic_search`](crate::ToolsetBuilder::semantic_search),
    /// `gateway.tool_search.semantic`) but cannot run: the build has no `semantic` feature, or
    /// the model does not load (the message says which file and why).
    #[error("semantic tool search cannot start: {0}")]
    Semantic(String),
    /// A `rego` / `cel` rule of `policy.rules` does not compile, cannot be read, or needs a
    /// cargo feature this build lacks (the message names the rule, and the line and column in
    /// the policy).
    #[error("a policy rule cannot be built: {0}")]
    Policy(String),
    /// A `tools.overrides` entry does not fit: it names no tool, or an argument its tool's
    /// schema lacks, or a fixed value or default the argument's schema refuses.
    #[error("{message}")]
    Override {
        /// The tool the override is keyed by (its name inside toolgate).
        tool: String,
        /// What is wrong, naming the tool.
        message: String,
    },
}

#[cfg(test)]
mod tests;
