//! The `gateway:` section: how `toolgate serve` listens and whom it lets in.

use serde::{Deserialize, Serialize};

use super::interpolate::Interpolated;

pub mod auth;
pub mod code_mode;
pub mod servers;
pub mod telemetry;

pub use auth::{GatewayAuth, IssuerConfig, OAuthConfig, TOKEN_ALGORITHMS};
pub use code_mode::{CodeEngine, CodeLimits, CodeModeConfig, CodeMount};
pub use servers::{
    AnnotationHints, ToolSelection, ToolSelector, VirtualServerConfig, is_server_id,
};
pub use telemetry::{OtlpConfig, TelemetryConfig};

/// Settings of `toolgate serve`. Every field is optional:
///
/// ```yaml
/// gateway:
///   listen: 127.0.0.1:8787          # --http without an address
///   allowed_hosts: [gw.internal]    # Host values besides localhost, 127.0.0.1, [::1]
///   allowed_origins: ["https://app.example.com"]
///   api_keys:
///     - {name: ci, key: "${TOOLGATE_CI_KEY}", roles: [reader]}
///   auth:
///     oauth: {resource: "https://gw.example.com/mcp", issuers: [{issuer: "https://idp.example.com"}]}
///   max_body_bytes: 4194304
///   header_timeout_ms: 10000        # a request head must arrive whole within this
///   body_timeout_ms: 30000          # a request body must arrive whole within this (408 beyond)
///   idle_timeout_ms: 10000          # a kept-alive connection waits this long for its next request
///   max_connections: 1024           # connections served at once; more wait to be accepted
///   shutdown_grace_ms: 10000
///   page_size: 100
///   tool_search: {mode: meta, always: [calc]}   # MCP tools/list: search instead of every tool
///   session_key: "${TOOLGATE_SESSION_KEY}"     # replicas resume each other's MCP sessions
///   servers:                        # virtual servers: /mcp/{id}, /servers/{id}/tools
///     - {id: readers, tools: {include: [{tag: read}]}, roles: [reader], prefix: r_}
///   # tool_search: {semantic: {model: .peers/models/all-minilm-l6-v2}}  # `semantic` builds only
///   telemetry:                      # OTLP export of every call's span (docs/telemetry.md)
///     otlp: {endpoint: "http://127.0.0.1:4318", service_name: toolgate}
///   code_mode: {enabled: true}      # run_python, describe_code_api (docs/code-mode.md)
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The address `toolgate serve --http` listens on when none is given (default
    /// `127.0.0.1:8787`: loopback only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// `Host` header values accepted besides the loopback names (`localhost`, `127.0.0.1`,
    /// `[::1]`, any port), e.g. the gateway's public name, and networks in CIDR notation
    /// (`10.0.0.0/8`): a `Host` that is an IP address in one (a Prometheus scraping each pod by
    /// its IP) is accepted. Anything else is refused with 403 on every endpoint (DNS-rebinding
    /// protection, MCP 2025-11-25 "Transports", security warning).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted in an `Origin` header (`scheme://host[:port]`) besides the
    /// loopback ones; a request with any other `Origin` is refused with 403. Requests without
    /// `Origin` (non-browser clients) are not affected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// API keys. When any is set, every endpoint but `/healthz` and `/readyz` needs one, as
    /// `Authorization: Bearer <key>` or `X-API-Key: <key>`; the key's roles become the caller's
    /// roles for every call made with it. Empty (the default): no authentication.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_keys: Vec<ApiKey>,
    /// Callers with OAuth 2.1 access tokens from identity providers (the gateway as a resource
    /// server), beside the API keys.
    #[serde(default, skip_serializing_if = "auth_is_default")]
    pub auth: GatewayAuth,
    /// The largest request body accepted, in bytes (default 4 MiB); a larger one is refused
    /// with 413 before it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<u64>,
    /// How long a client may take to send a request's head (request line and headers), in
    /// milliseconds (default 10000): counted from the moment the connection waits for it (it
    /// was accepted, or answered its previous request). A connection that has not sent a whole
    /// head by then is closed, so a client sending partial headers cannot hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_timeout_ms: Option<u64>,
    /// How long a client may take to send a request's body, in milliseconds (default 30000),
    /// counted from the end of its head; a body still incomplete then is answered 408 and the
    /// connection closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_timeout_ms: Option<u64>,
    /// How long a kept-alive connection may wait for its next request once its previous one was
    /// answered, in milliseconds (default 10000); then it is closed. The wait for a request head
    /// is also bounded by `header_timeout_ms`, so a longer value than that has no effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// The most client connections served at once (default 1024; long-lived streams such as
    /// `GET /sse` count). Beyond it new connections wait in the listen queue until one closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
    /// How long a shutdown waits for calls in flight to finish, in milliseconds (default
    /// 10000); then they are cancelled and remote sessions closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_ms: Option<u64>,
    /// The most tools in one MCP `tools/list` page (default 100); later pages are reached with
    /// the `nextCursor` the page carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<usize>,
    /// Tool search over MCP: whether `tools/list` shows the meta tools `search_tools`,
    /// `describe_tools` and `call_tool` instead of (`meta`) or beside (`both`) every tool.
    #[serde(default, skip_serializing_if = "ToolSearchConfig::is_off")]
    pub tool_search: ToolSearchConfig,
    /// The key of self-contained MCP session ids, shared by every replica behind one load
    /// balancer: 32 bytes as 64 hex digits or standard base64, normally
    /// `${TOOLGATE_SESSION_KEY}` (`openssl rand -hex 32`). With it, an `initialize`-era
    /// session's `Mcp-Session-Id` carries its negotiated version, the client's capabilities and
    /// its caller, sealed with AES-256-GCM, so any replica holding the key resumes it; an id
    /// sealed with another key, altered or older than 24 hours is answered 404 (MCP
    /// "Transports", session management: the client opens a new session). Without it, a
    /// session lives on the replica that opened it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<Interpolated>,
    /// Virtual servers: curated parts of the toolset, each at its own MCP endpoint
    /// (`/mcp/{id}`) and REST prefix (`/servers/{id}/tools`), with its own listing, title,
    /// instructions and roles. The default server (`/mcp`, `/tools`) shows every tool as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<VirtualServerConfig>,
    /// Telemetry besides the log and `/metrics`: OTLP export of every call's span.
    #[serde(default, skip_serializing_if = "TelemetryConfig::is_empty")]
    pub telemetry: TelemetryConfig,
    /// Code mode: the tools `run_python` (model-written Python run in a sandbox, the toolset's
    /// tools as its functions) and `describe_code_api` (their Python stubs).
    #[serde(default, skip_serializing_if = "CodeModeConfig::is_default")]
    pub code_mode: CodeModeConfig,
}

/// `gateway.tool_search`: progressive disclosure of a big toolset over MCP (docs/search.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchConfig {
    /// `off` (the default): `tools/list` shows every tool the caller may call. `meta`: it shows
    /// only `search_tools` (query → ranked tool names), `describe_tools` (names → their full
    /// MCP definitions) and `call_tool` (name + arguments → the call, through the same
    /// pipeline and authorization as a direct `tools/call`), plus the `always` tools. `both`:
    /// the three next to every tool.
    #[serde(default)]
    pub mode: ToolSearchMode,
    /// Tools listed in `meta` mode as well (either name form), for a caller that may call them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<String>,
    /// Semantic ranking of every tool search (REST `?q=`, `toolgate search`, `search_tools`),
    /// whatever the `mode`: a local sentence-embedding model ranks the tools too, and its ranking
    /// is fused with BM25's. Needs a toolgate built with the `semantic` cargo feature; without
    /// it, or with a model folder that does not load, start-up and `toolgate check` fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticSearchConfig>,
}

/// `gateway.tool_search.semantic`: the sentence-embedding model of semantic ranking
/// (docs/search.md, "Semantic ranking").
///
/// ```yaml
/// gateway:
///   tool_search:
///     semantic:
///       model: .peers/models/all-minilm-l6-v2   # relative to this file's folder
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticSearchConfig {
    /// The model's folder, relative to the tools.yaml's folder: a sentence-transformers model of
    /// the BERT architecture as saved by sentence-transformers (`config.json`, `tokenizer.json`,
    /// `model.safetensors`, `1_Pooling/config.json`), e.g. all-MiniLM-L6-v2 as
    /// `scripts/install-peers.sh` unpacks it into `.peers/models/all-minilm-l6-v2`.
    pub model: String,
}

impl ToolSearchConfig {
    /// Whether the mode is `off` and nothing else is set (the default).
    pub fn is_off(&self) -> bool {
        *self == Self::default()
    }
}

/// How MCP `tools/list` offers tool search (see [`ToolSearchConfig::mode`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolSearchMode {
    /// Every tool, no meta tools.
    #[default]
    Off,
    /// The meta tools (and the `always` tools) only.
    Meta,
    /// The meta tools next to every tool.
    Both,
}

/// One API key of the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// Who uses the key: the caller name calls made with it run under (logs, rate limits).
    pub name: String,
    /// The key itself, normally `${ENV}` (a secret: never logged, never in an error).
    pub key: Interpolated,
    /// The roles calls made with this key have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

fn auth_is_default(auth: &GatewayAuth) -> bool {
    auth == &GatewayAuth::default()
}
