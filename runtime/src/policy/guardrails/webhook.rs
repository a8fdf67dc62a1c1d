//! The webhook guardrail: one POST per check to the operator's service, bounded by its timeout
//! and the call's deadline, answered `allow`, `deny` (with a reason) or `modify`.
//!
//! The URL must be `https://`, or `http://` to a loopback address (arguments and results may
//! hold personal data), and may not carry a user name or password; redirects are not
//! followed. Logs and errors name the service by its origin (`https://guard.example.com:443`),
//! never its path, query or headers.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_model::config::{GuardDirection, WebhookFailMode, WebhookGuardrail};
use toolgate_model::secrets::Field;

use super::Verdict;

/// The most of an answer read (bytes); a longer one is a failure.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// A webhook guardrail, ready to ask.
pub(crate) struct Webhook {
    url: Url,
    /// The service's origin, for logs and errors.
    pub(crate) shown: String,
    headers: HeaderMap,
    timeout: Duration,
    pub(crate) fail: WebhookFailMode,
    arguments: bool,
    result: bool,
    client: reqwest::Client,
}

/// Why the service gave no usable answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No answer within the timeout (or the call's deadline).
    Timeout,
    /// Unreachable, an HTTP error status, or an answer that does not read.
    Error(String),
}

impl Failure {
    /// `timeout` or `error`: the metric's `kind`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Error(_) => "error",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout => f.write_str("no answer in time"),
            Self::Error(e) => f.write_str(e),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    Allow,
    Deny,
    Modify,
}

#[derive(Deserialize)]
struct Answer {
    action: Action,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
}

impl Webhook {
    /// The webhook of `config` (its URL and headers resolved: secrets are remembered then).
    ///
    /// # Errors
    /// A message when the URL or a header does not resolve or is refused.
    pub(crate) fn new(config: &WebhookGuardrail) -> Result<Self, String> {
        let raw = config
            .url
            .resolve_as(Field::Plain)
            .map_err(|e| format!("webhook url: {e}"))?;
        let url = Url::parse(raw.expose()).map_err(|e| format!("webhook url: {e}"))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(
                "webhook url: it holds a user name or password; send credentials in `headers`"
                    .into(),
            );
        }
        let shown = url.origin().ascii_serialization();
        if !crate::net::oauth::secure(&url) {
            return Err(format!(
                "webhook url: {shown} is plain http: arguments and results would cross the network unencrypted (https, or http only to a loopback address)"
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let value = value
                .resolve_as(Field::named(name))
                .map_err(|e| format!("webhook header `{name}`: {e}"))?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("webhook header `{name}`: not a valid header name"))?;
            let mut value = HeaderValue::from_str(value.expose())
                .map_err(|_| format!("webhook header `{name}`: not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .build()
            .map_err(|e| format!("webhook: cannot build the HTTP client: {e}"))?;
        Ok(Self {
            url,
            shown,
            headers,
            timeout: Duration::from_millis(config.timeout_ms),
            fail: config.fail,
            arguments: config.on.contains(&GuardDirection::Arguments),
            result: config.on.contains(&GuardDirection::Result),
            client,
        })
    }

    /// Whether the service is asked about `direction`.
    pub(crate) fn asks(&self, direction: GuardDirection) -> bool {
        match direction {
            GuardDirection::Arguments => self.arguments,
            GuardDirection::Result => self.result,
        }
    }

    /// Asks the service about `payload` (the arguments, or the result as MCP's
    /// `CallToolResult`), within the timeout and `left` (what is left of the call's deadline).
    pub(crate) async fn ask(
        &self,
        direction: GuardDirection,
        tool: &str,
        caller: Option<&str>,
        payload: &Value,
        left: Option<Duration>,
    ) -> Result<Verdict<Value>, Failure> {
        let timeout = left.map_or(self.timeout, |l| l.min(self.timeout));
        let key = direction.as_str();
        let body = json!({"direction": key, "tool": tool, "caller": caller, key: payload});
        let asked = async {
            let mut response = self
                .client
                .post(self.url.clone())
                .headers(self.headers.clone())
                .json(&body)
                .send()
                .await
                .map_err(|e| {
                    Failure::Error(format!(
                        "cannot reach {}: {}",
                        self.shown,
                        crate::net::reqwest_chain(&e)
                    ))
                })?;
            let status = response.status();
            if !status.is_success() {
                return Err(Failure::Error(format!(
                    "{} answered HTTP {}",
                    self.shown,
                    status.as_u16()
                )));
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| {
                Failure::Error(format!(
                    "{}: the answer could not be read: {}",
                    self.shown,
                    crate::net::reqwest_chain(&e)
                ))
            })? {
                if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(Failure::Error(format!(
                        "{}: the answer is longer than {MAX_ANSWER_BYTES} bytes",
                        self.shown
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        let bytes = tokio::time::timeout(timeout, asked)
            .await
            .map_err(|_| Failure::Timeout)??;
        let answer: Answer = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::Error(format!(
                "{}: the answer is not {{\"action\": \"allow\"|\"deny\"|\"modify\", ...}}: {e}",
                self.shown
            ))
        })?;
        Ok(match answer.action {
            Action::Allow => Verdict::Allow,
            Action::Deny => Verdict::Deny(
                answer
                    .reason
                    .unwrap_or_else(|| "refused by the guardrail's service".into()),
            ),
            Action::Modify => {
                let modified = match direction {
                    GuardDirection::Arguments => answer.arguments,
                    GuardDirection::Result => answer.result,
                };
                Verdict::Replace(modified.ok_or_else(|| {
                    Failure::Error(format!("{}: a `modify` answer without `{key}`", self.shown))
                })?)
            }
        })
    }
}
