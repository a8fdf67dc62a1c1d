//! `tools.a2a`: A2A agents whose skills join the toolset as `{id}.{skill}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::openapi::AuthConfig;

/// An A2A agent. Its agent card (fetched at run time) lists its skills; each allowed skill
/// becomes a tool `{id}.{skill_id}` that sends the agent a message.
///
/// ```yaml
/// tools:
///   a2a:
///     - id: travel
///       card_url: https://travel.example/.well-known/agent-card.json
///       auth: {bearer: "${TRAVEL_TOKEN}"}
///       allow: [book_*]
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
    /// The agent's JSON-RPC endpoint. Defaults to the `url` of its agent card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where the agent card is. Defaults to `{url}/.well-known/agent-card.json`. At least one of
    /// `url` and `card_url` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_url: Option<String>,
    /// How requests authenticate.
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
}

/// Settings of one A2A skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aSkill {
    /// JSON Schema of the tool's arguments (an object schema). Without it the tool takes
    /// `{"message": string}`.
    pub input_schema: Value,
}
