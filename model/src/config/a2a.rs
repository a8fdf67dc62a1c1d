//! `tools.a2a`: A2A agents whose skills join the toolset as `{id}.{skill}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::openapi::AuthConfig;

/// An A2A agent (A2A protocol 1.0 or 0.3, chosen from its agent card). Its agent card (fetched at
/// run time) lists its skills; each allowed skill becomes a tool `{id}.{skill_id}` that sends the
/// agent a message and follows the task it starts to its end.
///
/// ```yaml
/// tools:
///   a2a:
///     - id: travel
///       url: https://travel.example              # the card is looked up under it
///       auth: {bearer: "${TRAVEL_TOKEN}"}
///       allow: [book_*]
///       timeout_ms: 60000
///       skills:
///         book_flight:
///           input_schema:
///             type: object
///             properties: {from: {type: string}, to: {type: string}}
///             required: [from, to]
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aAgent {
    /// The source id, prefix of its tools (`{id}.{skill}`).
    pub id: String,
    /// Where the agent is: its agent card is looked up at
    /// `{url}/.well-known/agent-card.json`, then `{url}/.well-known/agent.json`.
    /// The card names the JSON-RPC endpoint calls go to. At least one of `url` and `card_url` is
    /// required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The agent card's exact URL (no fallback path is tried). When both are given, `card_url`
    /// is where the card is fetched and `url` is not used (calls go where the card says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_url: Option<String>,
    /// How requests authenticate: `bearer`, `api_key` (header or query), `basic`, `headers`, or
    /// `schemes` (credentials by the name of an entry of the card's `securitySchemes`, which
    /// says where each goes). With credentials, an agent whose card offers an authenticated
    /// extended card is asked for it, and its skills are the ones offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthConfig>,
    /// Only skills matching one of these ids or globs are offered; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Skills matching one of these ids or globs are never offered (wins over `allow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Per skill id: what the card cannot say (A2A skills have no input schema).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, A2aSkill>,
    /// The longest one call may take, in milliseconds, polling or streaming included (the
    /// policy's timeout otherwise). When it passes, the task is cancelled (`CancelTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The longest connecting and fetching the agent card may take, in milliseconds (default
    /// 10000). A call that has to fetch the card is also bounded by its own deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
    /// `true`: fetch the card on first use of the `{id}.` prefix, not when the toolset starts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lazy: bool,
    /// Whether calls stream (`SendStreamingMessage` / `message/stream`, server-sent events).
    /// Default: when the card says `capabilities.streaming: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Whether a non-streaming call asks the agent to answer only when the task is done or
    /// interrupted (default `true`). `false`: the agent answers at once and the task is
    /// polled with `GetTask` / `tasks/get`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub blocking: bool,
    /// The first wait between two polls of a task, in milliseconds (default 200); each later
    /// wait doubles, up to 5000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// The most bytes a result may have (default 65536; `0`: no limit), cut as an MCP
    /// server's results are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_bytes: Option<u64>,
    /// Whether the skills are named `{id}.{skill}` (default `true`).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub prefix: bool,
    /// Hosts (exact, or `*.example.com`) that may receive this entry's credentials besides the
    /// one the card was fetched from. A card naming a JSON-RPC endpoint on any other host is
    /// refused when `auth` is set: a card must not be able to send the token elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Semver constraints on the skills (each has the agent card's `version`): one for all
    /// (`"^2"`) or one per skill id; a skill that does not meet its constraint, or an agent
    /// with no semantic version, is left out with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<super::Require>,
}

/// Settings of one A2A skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aSkill {
    /// JSON Schema of the tool's arguments (an object schema); the arguments are sent as one
    /// data part. Without it the tool takes `{"text": string}`, sent as a text part. Either way
    /// the tool also takes `taskId` and `contextId`, to continue a task that asked for input.
    pub input_schema: Value,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}
