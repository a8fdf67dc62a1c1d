//! The model of `tools.yaml`, its loader and its JSON Schema.
//!
//! A complete file:
//!
//! ```yaml
//! version: 1
//! state: [crate::AppState]            # types the application provides as State<T>
//! tools:
//!   local:
//!     - fn: crate::builtin::files::read_file
//!       timeout_ms: 5000
//!     - discover: src/builtin/math
//!   openapi:
//!     - {id: petstore, spec: specs/petstore.yaml, auth: {bearer: "${PETSTORE_TOKEN}"}}
//!   mcp:
//!     - id: everything
//!       stdio: {command: npx, args: [-y, "@modelcontextprotocol/server-everything"]}
//!   a2a:
//!     - {id: travel, url: "https://travel.example/a2a"}
//!   json_schema:
//!     - {id: bfcl, file: defs/bfcl.json, format: bfcl, handler: crate::handlers::bfcl}
//!   skills:
//!     - dir: skills/
//! policy:
//!   defaults: {timeout_ms: 30000}
//!   tools: {read_file: {rate_limit: 10/s}}
//!   sources: {everything: {concurrency: 2}}
//! settings:
//!   fetch: {allow_hosts: [example.com]}
//! ```
//!
//! Load it with [`ToolsConfig::load`] or [`ToolsConfig::from_yaml_str`]: every problem (bad YAML,
//! unknown key, wrong type, broken rule) is a [`Diagnostic`] naming `path:line:column`, and the
//! returned [`LoadedConfig`] can locate any node by JSON pointer for later checks.

mod a2a;
mod diagnostic;
mod gateway;
mod guardrails;
mod interpolate;
mod json_schema;
mod local;
pub mod location;
mod mcp;
mod mcp_json;
mod openapi;
mod overrides;
mod policy;
mod policy_rules;
mod require;
mod skills;
mod store;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_saphyr::MessageFormatter as _;

pub use a2a::{A2aAgent, A2aSkill};
pub use diagnostic::{ConfigError, Diagnostic, DisplayAll, Severity};
pub use gateway::{
    AnnotationHints, ApiKey, GatewayAuth, GatewayConfig, IssuerConfig, OAuthConfig,
    SemanticSearchConfig, TOKEN_ALGORITHMS, ToolSearchConfig, ToolSearchMode, ToolSelection,
    ToolSelector, VirtualServerConfig, is_server_id,
};
pub use gateway::{CodeEngine, CodeLimits, CodeModeConfig, CodeMount, OtlpConfig, TelemetryConfig};
pub use interpolate::{Interpolated, InterpolationError, Secret};
pub use json_schema::JsonSchemaSource;
pub use local::{Discover, LocalEntry, LocalFunction};
pub use location::{Location, LocationMap};
pub use mcp::{HttpTransport, McpServer, McpTransport, SseTransport, StdioTransport};
pub use mcp_json::{McpJsonConfig, is_mcp_json, parse_mcp_json, to_tools_config, to_tools_yaml};
pub use openapi::{
    ACCESS_TOKEN_TYPE, Adapter, ApiKeyAuth, ApiKeyLocation, ArgumentAdapter, AuthConfig, BasicAuth,
    ClientAuth, ContextField, LoadMode, OAuth2ClientCredentials, OAuth2Grant, OpenApiSource,
    OperationFilter, SchemeCredentials,
};
pub use overrides::{
    AnnotationOverride, ArgumentOverride, OverrideError, ToolOverride, fill_arguments,
    rewrite_schema, values_check,
};
pub use policy::{
    AccessRule, ArgumentRule, Budgets, CircuitBreakerConfig, DenyRule, Detector, ExtraArguments,
    Fallback, GuardDirection, GuardrailConfig, MaskConfig, MaskPattern, Pinning, PolicyConfig,
    RateLimit, ToolPolicy, ValidationMode, WebhookFailMode, WebhookGuardrail, parse_rate_limit,
};
/// The error kind names a fallback's `on` may list.
pub use policy_rules::ERROR_KINDS;
pub use require::{Constraint, Require, check_version, major, semantic};
pub use skills::SkillsDir;
pub use store::{
    DEFAULT_REDIS_CONNECT_TIMEOUT_MS, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, FailMode,
    FailModes, RedisStore, StoreConfig, session_key_bytes,
};

/// The version of the tools.yaml format this crate reads.
pub const CONFIG_VERSION: u32 = 1;

/// The root of `tools.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "toolgate tools.yaml")]
pub struct ToolsConfig {
    /// The format version; must be `1`.
    pub version: u32,
    /// Rust types the application provides to tools as `State<T>` (absolute paths such as
    /// `crate::AppState`), each given to the toolset builder with `.state(...)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<String>,
    /// The tools, by source.
    #[serde(default)]
    pub tools: ToolsSection,
    /// Timeouts, retries, limits, caching, costs and roles.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// How `toolgate serve` listens and whom it lets in.
    #[serde(default, skip_serializing_if = "is_default_gateway")]
    pub gateway: GatewayConfig,
    /// Where state shared by several gateway replicas lives (rate limits, budgets); absent:
    /// in the process.
    #[serde(default, skip_serializing_if = "StoreConfig::is_default")]
    pub store: StoreConfig,
    /// Free-form settings read by features and applications, by feature name
    /// (e.g. `settings.fetch.allow_hosts`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, Value>,
}

fn is_default_gateway(g: &GatewayConfig) -> bool {
    *g == GatewayConfig::default()
}

/// The `tools:` section: one list per kind of source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// The crate's own `#[tool]` functions (compiled in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local: Vec<LocalEntry>,
    /// HTTP APIs described by OpenAPI documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openapi: Vec<OpenApiSource>,
    /// MCP servers (tools discovered at run time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpServer>,
    /// A2A agents (skills discovered at run time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub a2a: Vec<A2aAgent>,
    /// Tools defined by JSON Schema documents (compiled in), answered by one handler each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_schema: Vec<JsonSchemaSource>,
    /// Folders of Agent Skills (`SKILL.md` + files), offered through `load_skill` and
    /// `read_skill_file`, MCP resources and REST.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillsDir>,
    /// Only the tools of remote sources (MCP, A2A) whose full name (`{id}.{tool}`) matches one
    /// of these names or globs (`*`, `?`) are offered; empty: all. Applied with each source's own
    /// `allow`/`deny`, the same way for every transport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Tools of remote sources whose full name matches one of these are never offered (wins
    /// over `allow`), e.g. `"*.delete_*"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// How tools are presented and which arguments toolgate fills in, per tool by its name
    /// inside toolgate (`read_file`, `github.repos_get`); see [`ToolOverride`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, ToolOverride>,
}

/// A loaded tools.yaml: the model, the file it came from, its text, and where each node is.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The model.
    pub config: ToolsConfig,
    /// The file (as given to the loader).
    pub path: PathBuf,
    /// The file's text, as read.
    pub source: String,
    /// Where each node is.
    pub locations: LocationMap,
    /// Problems that do not stop the load (e.g. a policy for a source that tools.yaml does not
    /// define, which may be one the application adds in code).
    pub warnings: Vec<Diagnostic>,
}

impl LoadedConfig {
    /// Where the node at `pointer` (`/tools/local/3/fn`) is; for a pointer the file does not
    /// have, its nearest ancestor (see [`LocationMap::locate`]).
    pub fn locate(&self, pointer: &str) -> Location {
        self.locations.locate(pointer)
    }

    /// An error about the node at `pointer`.
    pub fn error_at(&self, pointer: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(&self.path, Some(self.locate(pointer)), message)
    }

    /// A warning about the node at `pointer`.
    pub fn warning_at(&self, pointer: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::warning(&self.path, Some(self.locate(pointer)), message)
    }
}

impl std::ops::Deref for LoadedConfig {
    type Target = ToolsConfig;
    fn deref(&self) -> &ToolsConfig {
        &self.config
    }
}

impl ToolsConfig {
    /// Parses tools.yaml text; `path` names the file in diagnostics.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with one diagnostic for bad YAML or a shape error (unknown key,
    /// wrong type, missing field), or every rule broken (version, source ids, rate limits...),
    /// each naming `path:line:column`.
    pub fn from_yaml_str(src: &str, path: &Path) -> Result<LoadedConfig, ConfigError> {
        let config: ToolsConfig = serde_saphyr::from_str(src).map_err(|e| {
            let inner = e.without_snippet();
            let message = serde_saphyr::DefaultMessageFormatter.format_message(inner);
            let location = e.location().map(|l| {
                Location::new(
                    usize::try_from(l.line()).unwrap_or(usize::MAX),
                    usize::try_from(l.column()).unwrap_or(usize::MAX),
                )
            });
            ConfigError::Invalid(vec![Diagnostic::error(path, location, message)])
        })?;
        let loaded = LoadedConfig {
            config,
            path: path.to_path_buf(),
            source: src.to_string(),
            locations: LocationMap::from_yaml(src),
            warnings: Vec::new(),
        };
        let (errors, warnings) = validate::validate(&loaded);
        if errors.is_empty() {
            Ok(LoadedConfig { warnings, ..loaded })
        } else {
            Err(ConfigError::Invalid(errors))
        }
    }

    /// Reads and parses the file at `path`: a tools.yaml, or the `mcpServers` JSON of Claude
    /// Desktop, Cursor or VS Code ([`is_mcp_json`], read by [`parse_mcp_json`]).
    ///
    /// # Errors
    /// [`ConfigError::Io`] when it cannot be read; otherwise as [`ToolsConfig::from_yaml_str`]
    /// or [`parse_mcp_json`].
    pub fn load(path: impl AsRef<Path>) -> Result<LoadedConfig, ConfigError> {
        let path = path.as_ref();
        let src = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        if is_mcp_json(&src) {
            return mcp_json::load(&src, path);
        }
        Self::from_yaml_str(&src, path)
    }

    /// The JSON Schema (2020-12) of tools.yaml, for `toolgate schema-config` and editors.
    pub fn json_schema() -> Value {
        serde_json::to_value(schemars::schema_for!(ToolsConfig)).unwrap_or(Value::Null)
    }

    /// The ids of every configured remote source, with the JSON pointer of each `id`.
    pub fn source_ids(&self) -> Vec<(&str, String)> {
        let t = &self.tools;
        let openapi = t
            .openapi
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), format!("/tools/openapi/{i}/id")));
        let mcp = t
            .mcp
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), format!("/tools/mcp/{i}/id")));
        let a2a = t
            .a2a
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), format!("/tools/a2a/{i}/id")));
        let json_schema = t
            .json_schema
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), format!("/tools/json_schema/{i}/id")));
        openapi.chain(mcp).chain(a2a).chain(json_schema).collect()
    }
}

#[cfg(test)]
mod tests;
