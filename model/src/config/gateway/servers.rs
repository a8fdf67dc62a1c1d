//! `gateway.servers`: virtual servers, each a curated part of the toolset served at its own
//! MCP endpoint and REST prefix.

use serde::{Deserialize, Serialize};

/// One virtual server: the tools it selects, served at `/mcp/{id}` (MCP streamable HTTP),
/// `/servers/{id}/sse` (legacy HTTP+SSE) and `/servers/{id}/tools…` (REST), to callers with
/// one of its roles.
///
/// ```yaml
/// gateway:
///   servers:
///     - id: github-read
///       title: GitHub, read only
///       instructions: Look things up on GitHub; nothing here changes anything.
///       tools:
///         include: [{source: github, annotations: {readOnlyHint: true}}]
///         exclude: [{name: "github.*_secret*"}]
///       roles: [reader]
///       prefix: gh_
///       guardrails: [pii]       # names in policy.guardrails; besides each tool's own
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VirtualServerConfig {
    /// The server's id, the path segment of its endpoints: letters, digits, `-` and `_`.
    pub id: String,
    /// The name an MCP client shows for the server (`serverInfo.title`; default the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The `instructions` of the server's MCP `initialize` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Which tools the server shows (default: every tool).
    #[serde(default, skip_serializing_if = "ToolSelection::is_all")]
    pub tools: ToolSelection,
    /// The roles that may use the server (any one; a token's scope of the same name counts
    /// too). Empty (the default): every caller the gateway lets in. Others get 403.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// Put before each tool's name as the server shows it (`gh_` shows `github__get_repo` as
    /// `gh_github__get_repo`); calls by that name reach the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Guardrails (names in `policy.guardrails`, or registered in code) run on every call made
    /// through the server's endpoints, besides the tool's own guardrails, which always run:
    /// on the arguments before the tool's, on the result after them; one the tool runs
    /// already is not run twice. Empty (the default): only the tool's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<String>,
}

/// `tools:` of a virtual server: a tool is shown when some `include` selector matches it
/// (or `include` is empty) and no `exclude` selector does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSelection {
    /// Selectors of the tools shown; empty: every tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<ToolSelector>,
    /// Selectors of the tools left out, even when included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<ToolSelector>,
}

impl ToolSelection {
    /// Whether it selects every tool (nothing set).
    pub fn is_all(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }
}

/// One selector: a tool matches when it matches every field that is set (an empty selector
/// matches every tool).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSelector {
    /// The id of the tool's source (`github`; `local` for compiled tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A glob (`*`, `?`, `[…]`) over the tool's name inside toolgate (`github.repos_*`) or the
    /// name a model sees (`github__repos_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tag the tool carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The tool's category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// MCP annotation hints the tool declares with these values (a hint it does not declare
    /// does not match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<AnnotationHints>,
}

/// MCP tool annotation hints to match (MCP `ToolAnnotations`, camelCase as MCP spells them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AnnotationHints {
    /// `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// `openWorldHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Whether `id` may be a virtual server's id: 1 to 64 ASCII letters, digits, `-` and `_`
/// (one URL path segment as written).
pub fn is_server_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use crate::config::ToolsConfig;

    #[test]
    fn a_servers_guardrails_are_read_described_and_checked_by_name() {
        let yaml = "version: 1\ntools: {}\npolicy:\n  guardrails:\n    pii: {mask: {}}\ngateway:\n  servers:\n    - id: partners\n      guardrails:\n        - pii\n        - pij\n";
        let loaded = ToolsConfig::from_yaml_str(yaml, std::path::Path::new("t.yaml")).unwrap();
        assert_eq!(loaded.gateway.servers[0].guardrails, ["pii", "pij"]);
        // A name the file does not define may be registered in code: a warning, at its line.
        let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 1, "{warnings:#?}");
        assert!(
            warnings[0].contains("t.yaml:11:") && warnings[0].contains("`pij`"),
            "{warnings:#?}"
        );
        let schema = ToolsConfig::json_schema();
        let property = &schema["$defs"]["VirtualServerConfig"]["properties"]["guardrails"];
        assert_eq!(property["type"], "array", "{property}");
        assert!(
            property["description"]
                .as_str()
                .is_some_and(|d| d.contains("besides the tool's own")),
            "{property}"
        );
    }
}
