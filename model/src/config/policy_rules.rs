//! The parts of `policy:` that are not per-tool knobs: access rules, argument rules, budgets,
//! circuit breakers, fallbacks and tool pinning.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Who may see and call which tools (`policy.rules`).
///
/// A rule *matches* a tool when every selector it gives matches (no selector: every tool). A
/// caller may call a tool when, for every rule that matches it, the caller has one of the rule's
/// `roles` (a rule with `deny: true` refuses everyone), and every `rego` / `cel` rule that
/// matches allows the call: any refusal wins. A caller never sees a tool it may not call:
/// listings (`tools/list`, `GET /tools`, `toolgate list`, search) leave it out (a `rego` / `cel`
/// rule that reads the `arguments` is checked at call time only).
///
/// ```yaml
/// policy:
///   rules:
///     - {dangerous: true, roles: [admin]}            # harmful tools: admins only
///     - {tools: ["github.delete_*"], deny: true}     # nobody
///     - {sources: [billing], roles: [finance, admin]}
///     - {tools: [file_write], cel: "'admin' in caller.roles", reason: "file_write needs admin"}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessRule {
    /// Tool names or globs (`github.*`, `*.delete_*`), as the toolset names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Source ids (`local` for compiled tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Tool categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Tool tags (any one matches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Only tools marked (or not marked) `dangerous`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dangerous: Option<bool>,
    /// Only tools marked (or not marked) `requires_auth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_auth: Option<bool>,
    /// The roles that may call the matched tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// Nobody may call the matched tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deny: bool,
    /// A Rego policy deciding calls of the matched tools (instead of `roles` / `deny`): it
    /// declares `allow` (refused unless `true`) and/or `deny` (a set of messages; any refuses).
    /// Its `input` is `{caller: {id, roles, claims}, tool: {name, source, category, tags,
    /// annotations}, arguments}`. Needs the cargo feature `rego`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rego: Option<String>,
    /// A file holding the Rego policy (relative to the tools.yaml), instead of `rego`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rego_file: Option<String>,
    /// A CEL expression deciding calls of the matched tools (instead of `roles` / `deny`):
    /// `true` allows, `false` refuses. Its variables are `caller`, `tool` and `arguments` (as
    /// for `rego`). Needs the cargo feature `cel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<String>,
    /// A file holding the CEL expression (relative to the tools.yaml), instead of `cel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_file: Option<String>,
    /// The reason shown to a caller a `rego` / `cel` rule refuses (a Rego `deny` message wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The longest one evaluation of a `rego` rule may run, in milliseconds (default 100): a
    /// policy that runs longer refuses the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl AccessRule {
    /// The time limit of one evaluation of the rule's Rego policy.
    pub fn time_limit(&self) -> std::time::Duration {
        self.timeout_ms.map_or(
            crate::policy_code::DEFAULT_TIME_LIMIT,
            std::time::Duration::from_millis,
        )
    }
}

/// A rule on one argument's value, checked before the call (`policy.arguments`): e.g. "no
/// fetching from these sites". A refused call ends in `policy_denied` naming the argument and
/// the rule; nothing is sent.
///
/// ```yaml
/// policy:
///   arguments:
///     - {tools: [fetch], argument: url, deny_hosts: ["*.internal", "linkedin.com"]}
///     - {tools: ["github.*"], argument: owner, allow_values: [my-org]}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgumentRule {
    /// Tool names or globs the rule applies to (empty: every tool that has the argument).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The argument: a top-level name (`url`) or a JSON pointer (`/request/url`).
    pub argument: String,
    /// For URL values: hosts (exact or `*.example.com`) that are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_hosts: Vec<String>,
    /// For URL values: the only hosts allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// For URL values: path globs (`/admin/*`) that are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_paths: Vec<String>,
    /// Values (globs, matched against the value as text) that are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_values: Vec<String>,
    /// The only values (globs) allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_values: Vec<String>,
}

/// Spending limits (`policy.budgets`), in the unit `currency` names (the tools' `cost_per_call`
/// is in that unit). A call whose cost would take a caller, agent or task past its limit ends in
/// `budget_exceeded` before it runs.
///
/// ```yaml
/// policy:
///   budgets: {currency: USD, per_caller: 5.0, per_task: 0.5}
///   tools:
///     search: {cost_per_call: 0.01}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// The unit costs and limits are counted in (`USD`, `credits`, ...). Default `USD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// The most one caller (an API key's name, the CLI's `cli`) may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_caller: Option<f64>,
    /// The most one agent may spend, across the callers it acts for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_agent: Option<f64>,
    /// The most one task (a conversation, as the caller names it) may spend. Kept per caller
    /// and task id: another caller naming the same task has a budget of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_task: Option<f64>,
}

/// A circuit breaker (per source, and per host of an OpenAPI source): after `failures`
/// consecutive failures, or an error rate over `error_rate` among at least `min_calls` calls in
/// the last `window_ms`, it opens: calls fail at once with `circuit_open` for `open_ms`; then one
/// probe is let through (half-open): success closes it, failure opens it again. Failures are
/// `network`, `timeout`, `protocol` and retryable `upstream` errors; a caller's mistake
/// (`invalid_arguments`, `permission_denied`, ...) never counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakerConfig {
    /// Consecutive failures that open the breaker (default 5).
    #[serde(default = "default_failures")]
    pub failures: u32,
    /// Error rate (0 to 1) that opens the breaker, over the window (unset: not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// The window of the error rate, in milliseconds (default 60000).
    #[serde(default = "default_window_ms")]
    pub window_ms: u64,
    /// Calls in the window before the error rate counts (default 10).
    #[serde(default = "default_min_calls")]
    pub min_calls: u32,
    /// How long the breaker stays open before a probe, in milliseconds (default 30000).
    #[serde(default = "default_open_ms")]
    pub open_ms: u64,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self {
            failures: default_failures(),
            error_rate: None,
            window_ms: default_window_ms(),
            min_calls: default_min_calls(),
            open_ms: default_open_ms(),
        }
    }
}

fn default_failures() -> u32 {
    5
}
fn default_window_ms() -> u64 {
    60_000
}
fn default_min_calls() -> u32 {
    10
}
fn default_open_ms() -> u64 {
    30_000
}

/// The error kind names a [`Fallback`]'s `on` may list: the `snake_case` names of the runtime's
/// `ErrorKind` (a runtime test keeps the two lists the same).
pub const ERROR_KINDS: &[&str] = &[
    "invalid_arguments",
    "not_found",
    "permission_denied",
    "policy_denied",
    "budget_exceeded",
    "rate_limited",
    "circuit_open",
    "timeout",
    "network",
    "upstream",
    "protocol",
    "cancelled",
    "input_required",
    "internal",
];

/// Another tool to call when this one fails with one of the given error kinds (matched on the
/// structured kind, never on message text).
///
/// ```yaml
/// policy:
///   tools:
///     weather.forecast:
///       fallback: {tool: backup.forecast, on: [timeout, network, circuit_open], arguments: {city: /location}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// The tool to call instead.
    pub tool: String,
    /// The error kinds (`timeout`, `network`, `upstream`, `circuit_open`, `rate_limited`, ...)
    /// that trigger it.
    pub on: Vec<String>,
    /// The fallback's arguments: each key a fallback argument, each value a JSON pointer into
    /// the original arguments. Empty: the original arguments as they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, String>,
}

/// Tool pinning (`policy.pinning`): the name, description and schemas of every remote tool
/// (MCP, A2A) are hashed when first approved; a tool whose hash later differs is withheld (not
/// listed, not callable) and reported until approved again with `toolgate approve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pinning {
    /// The approvals file (JSON), relative to the tools.yaml.
    pub file: String,
    /// `true`: a remote tool seen for the first time is approved at once (trust on first use);
    /// `false`: it is withheld until `toolgate approve`. Default `true`.
    #[serde(default = "yes")]
    pub approve_new: bool,
}

fn yes() -> bool {
    true
}
