//! The `policy:` section: defaults, per-tool and per-source overrides.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::guardrails::{
    DenyRule, Detector, GuardDirection, GuardrailConfig, MaskConfig, MaskPattern, WebhookFailMode,
    WebhookGuardrail,
};
pub use super::policy_rules::{
    AccessRule, ArgumentRule, Budgets, CircuitBreakerConfig, Fallback, Pinning,
};

/// The `policy:` section. For each tool the effective policy is, field by field: its entry in
/// `tools`, else the entry of its source in `sources`, else `defaults`.
///
/// ```yaml
/// policy:
///   defaults: {timeout_ms: 30000, retries: 0}
///   tools:
///     fetch_url: {timeout_ms: 10000, rate_limit: 5/s}
///   sources:
///     github: {concurrency: 4}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Applies to every tool unless overridden.
    #[serde(default)]
    pub defaults: ToolPolicy,
    /// Per tool, by the tool's name inside toolgate (`read_file`, or `{source}.{tool}` for a
    /// remote tool).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Per source, by the `id` of an `openapi`, `mcp` or `a2a` entry (or `local`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, ToolPolicy>,
    /// Who may see and call which tools (see [`AccessRule`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<AccessRule>,
    /// Rules on argument values, checked before the call (see [`ArgumentRule`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ArgumentRule>,
    /// Spending limits per caller, agent and task (see [`Budgets`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<Budgets>,
    /// Tool pinning of remote tools (see [`Pinning`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Pinning>,
    /// Named guardrails (masking, deny rules, webhooks), applied to the tools whose
    /// `guardrails:` list names them (see [`GuardrailConfig`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub guardrails: BTreeMap<String, GuardrailConfig>,
}

/// How a tool's arguments are checked against its input schema before it runs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ValidationMode {
    /// Arguments must match the schema as sent (after the strict-dialect round trip: a `null`
    /// sent for an optional argument that does not admit `null` means "omitted").
    #[default]
    Strict,
    /// Unambiguous mistakes models make are coerced first, on a copy: numbers and booleans sent
    /// as strings, JSON sent as a string where an object or array is expected. Ambiguous cases
    /// (the string `"null"`, a union that admits strings) are left alone.
    Lenient,
}

/// What happens to argument keys that a tool's input schema refuses (`additionalProperties:
/// false` or `unevaluatedProperties: false`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExtraArguments {
    /// The call is refused with `invalid_arguments` naming the unknown and the allowed keys.
    #[default]
    Reject,
    /// The unknown keys are removed before the tool runs; each removal is logged as a warning
    /// and reported in the result's `_meta`.
    Strip,
}

impl ExtraArguments {
    /// `true` for the default, [`ExtraArguments::Reject`].
    pub fn is_reject(&self) -> bool {
        *self == Self::Reject
    }
}

/// The policy knobs of one tool, one source or the defaults. Every field is optional: an unset
/// field falls through to the next level (see [`PolicyConfig`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// The longest one call may take, in milliseconds, retries and waits for a concurrency slot
    /// included (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// How many times a failed call whose error is retryable is tried again (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// At most this many calls per period, as `N/unit` with unit `s`, `m` or `h`
    /// (e.g. `5/s`, `100/m`); see [`parse_rate_limit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\s*[0-9]+\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$"))]
    pub rate_limit: Option<String>,
    /// How long a successful result is reused for the same arguments, in milliseconds
    /// (unset or 0: no caching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl_ms: Option<u64>,
    /// At most this many calls of the tool run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// The cost charged to the caller's budget for each call (in the budget's unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_call: Option<f64>,
    /// How arguments are checked against the input schema: `strict` (default) or `lenient`
    /// (numbers and booleans sent as strings, JSON sent as a string, are coerced first; each
    /// coercion is reported in the result's `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationMode>,
    /// What happens to argument keys the input schema does not declare (where it refuses
    /// them): `reject` (default: an `invalid_arguments` error naming them) or `strip` (dropped
    /// with a warning in the log and in the result's `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_arguments: Option<ExtraArguments>,
    /// Roles allowed to call the tool; empty: anyone may.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// One rate limit per caller (and tool), `N/unit` like [`rate_limit`](Self::rate_limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\s*[0-9]+\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$"))]
    pub caller_rate_limit: Option<String>,
    /// One rate limit shared by every tool of a source, `N/unit` (read from `sources` and
    /// `defaults` only: each source gets its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\s*[0-9]+\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$"))]
    pub source_rate_limit: Option<String>,
    /// At most this many calls of a source's tools run at once (read from `sources` and
    /// `defaults` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_concurrency: Option<u32>,
    /// The first wait before a retry, in milliseconds (default 100); doubled each time, with
    /// jitter, up to 10 s, never past the call's deadline. A `retry_after` the error carries wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_backoff_ms: Option<u64>,
    /// Whether the tool may be retried and its results cached: calling it twice has no further
    /// effect. Default: the tool's own annotations (`readOnlyHint` or `idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The circuit breaker of a source (read from `sources` and `defaults` only; see
    /// [`CircuitBreakerConfig`]). Unset: no breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerConfig>,
    /// Another tool to call when this one fails with given error kinds (see [`Fallback`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// The guardrails the tool runs under, by name in `policy.guardrails` (or registered in
    /// code), in order; `[]` turns off those of the source or defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<Vec<String>>,
}

impl ToolPolicy {
    /// [`timeout_ms`](Self::timeout_ms) as a `Duration`.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// This policy with every unset field taken from `fallback`.
    #[must_use]
    pub fn or(&self, fallback: &ToolPolicy) -> ToolPolicy {
        ToolPolicy {
            timeout_ms: self.timeout_ms.or(fallback.timeout_ms),
            retries: self.retries.or(fallback.retries),
            rate_limit: self
                .rate_limit
                .clone()
                .or_else(|| fallback.rate_limit.clone()),
            cache_ttl_ms: self.cache_ttl_ms.or(fallback.cache_ttl_ms),
            concurrency: self.concurrency.or(fallback.concurrency),
            cost_per_call: self.cost_per_call.or(fallback.cost_per_call),
            validation: self.validation.or(fallback.validation),
            extra_arguments: self.extra_arguments.or(fallback.extra_arguments),
            roles: if self.roles.is_empty() {
                fallback.roles.clone()
            } else {
                self.roles.clone()
            },
            caller_rate_limit: self
                .caller_rate_limit
                .clone()
                .or_else(|| fallback.caller_rate_limit.clone()),
            source_rate_limit: self
                .source_rate_limit
                .clone()
                .or_else(|| fallback.source_rate_limit.clone()),
            source_concurrency: self.source_concurrency.or(fallback.source_concurrency),
            retry_backoff_ms: self.retry_backoff_ms.or(fallback.retry_backoff_ms),
            idempotent: self.idempotent.or(fallback.idempotent),
            circuit_breaker: self
                .circuit_breaker
                .clone()
                .or_else(|| fallback.circuit_breaker.clone()),
            fallback: self.fallback.clone().or_else(|| fallback.fallback.clone()),
            guardrails: self
                .guardrails
                .clone()
                .or_else(|| fallback.guardrails.clone()),
        }
    }
}

impl PolicyConfig {
    /// The policy of source `source` as a whole: its `sources` entry, else `defaults` (where
    /// the per-source knobs — `source_rate_limit`, `source_concurrency`, `circuit_breaker` —
    /// are read).
    pub fn source_policy(&self, source: &str) -> ToolPolicy {
        let none = ToolPolicy::default();
        self.sources.get(source).unwrap_or(&none).or(&self.defaults)
    }

    /// The effective policy of tool `tool` of source `source` (see [`PolicyConfig`]).
    pub fn effective(&self, tool: &str, source: &str) -> ToolPolicy {
        let none = ToolPolicy::default();
        let t = self.tools.get(tool).unwrap_or(&none);
        let s = self.sources.get(source).unwrap_or(&none);
        t.or(s).or(&self.defaults)
    }
}

/// A parsed `rate_limit`: `calls` per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// How many calls.
    pub calls: u32,
    /// In which period.
    pub per: Duration,
}

/// Parses a rate limit written `N/unit` (`5/s`, `100/m`, `1000/h`; `sec`, `second`, `min`,
/// `minute`, `hour` also work; spaces are ignored).
///
/// # Errors
/// A message saying what form is expected.
pub fn parse_rate_limit(text: &str) -> Result<RateLimit, String> {
    let bad = || format!("invalid rate limit `{text}`: expected `N/s`, `N/m` or `N/h`, e.g. `5/s`");
    let (n, unit) = text.split_once('/').ok_or_else(bad)?;
    let calls: u32 = n.trim().parse().map_err(|_| bad())?;
    if calls == 0 {
        return Err(format!(
            "invalid rate limit `{text}`: the count must be at least 1"
        ));
    }
    let per = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return Err(bad()),
    };
    Ok(RateLimit { calls, per })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits() {
        assert_eq!(
            parse_rate_limit("5/s").unwrap(),
            RateLimit {
                calls: 5,
                per: Duration::from_secs(1)
            }
        );
        assert_eq!(parse_rate_limit(" 100 / min ").unwrap().calls, 100);
        assert!(parse_rate_limit("5 per second").is_err());
        assert!(parse_rate_limit("0/s").is_err());
        assert!(parse_rate_limit("5/d").is_err());
    }

    #[test]
    fn effective_policy_falls_through() {
        let p = PolicyConfig {
            defaults: ToolPolicy {
                timeout_ms: Some(30_000),
                retries: Some(1),
                ..Default::default()
            },
            tools: [(
                "a".to_string(),
                ToolPolicy {
                    timeout_ms: Some(5),
                    ..Default::default()
                },
            )]
            .into(),
            sources: [(
                "gh".to_string(),
                ToolPolicy {
                    retries: Some(3),
                    ..Default::default()
                },
            )]
            .into(),
            ..Default::default()
        };
        let e = p.effective("a", "gh");
        assert_eq!((e.timeout_ms, e.retries), (Some(5), Some(3)));
        let e = p.effective("b", "local");
        assert_eq!((e.timeout_ms, e.retries), (Some(30_000), Some(1)));
    }
}
