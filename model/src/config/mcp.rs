//! `tools.mcp`: MCP servers whose tools join the toolset as `{id}.{tool}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::interpolate::Interpolated;

/// An MCP server. Its transport is given by exactly one of the keys `stdio`, `http` (streamable
/// HTTP) or `sse` (the legacy HTTP+SSE transport):
///
/// ```yaml
/// tools:
///   mcp:
///     - id: everything
///       stdio:
///         command: npx
///         args: [-y, "@modelcontextprotocol/server-everything"]
///         env: {API_KEY: "${EVERYTHING_KEY}"}
///       allow: [echo, "get_*"]
///       lazy: true
///     - id: remote
///       http: {url: "https://mcp.example.com/mcp", bearer_token: "${REMOTE_TOKEN}"}
///       timeout_ms: 20000
///       connect_timeout_ms: 5000
///     - id: builds
///       http: {url: "https://ci.example.com/mcp"}
///       timeout_ms: 3600000     # a build may take an hour...
///       idle_timeout_ms: 60000  # ...if it reports progress at least once a minute
///     - id: tickets
///       http:
///         url: https://tickets.example.com/mcp
///         oauth2:
///           token_url: https://idp.example.com/oauth2/token
///           client_id: toolgate
///           client_secret: "${TICKETS_CLIENT_SECRET}"
///           resource: https://tickets.example.com/mcp
///     - id: legacy
///       sse: {url: "http://127.0.0.1:3001/sse"}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "RawMcpServer", into = "RawMcpServer")]
pub struct McpServer {
    /// The source id, prefix of its tools (`{id}.{tool}`).
    pub id: String,
    /// How to reach the server.
    pub transport: McpTransport,
    /// Only the server's tools matching one of these names or globs (`*`, `?`) are offered;
    /// empty: all.
    pub allow: Vec<String>,
    /// Tools matching one of these names or globs are never offered (wins over `allow`).
    pub deny: Vec<String>,
    /// The longest one call may take, in milliseconds (the policy's timeout otherwise).
    pub timeout_ms: Option<u64>,
    /// The longest starting a session may take, in milliseconds: spawning the process or
    /// connecting, then the handshake (`server/discover` or `initialize`; the legacy SSE
    /// transport's `endpoint` event first). Default 30000. A call that has to start a session
    /// is also bounded by its own deadline, whichever ends first; the error says which step
    /// was waiting.
    pub connect_timeout_ms: Option<u64>,
    /// The longest a call may go without a sign of life from the server, in milliseconds: each
    /// `notifications/progress` for the call starts the wait again. The call still ends at its
    /// timeout (`timeout_ms`, the policy's) however much progress came. Default: none (only
    /// the timeout). Set a long `timeout_ms` with it for long tasks that report progress.
    pub idle_timeout_ms: Option<u64>,
    /// `true`: connect and list tools on first use of the `{id}.` prefix, not when the toolset
    /// starts. Default `false`.
    pub lazy: bool,
    /// The most bytes a result may have (default 65536): the text part that crosses the limit
    /// is cut head + tail with a marker naming a `toolgate://results/...` URI where the full
    /// result stays readable, later parts become notes, a larger `structuredContent` is left
    /// out whole, with a note. `0`: no limit.
    pub max_result_bytes: Option<u64>,
    /// Whether the server's tools are named `{id}.{tool}` (default `true`). `false` mounts them
    /// under their own names (`echo`, not `everything.echo`), as a gateway fronting one server
    /// would; a name another source also offers is then a conflict, reported by
    /// `Toolset::name_conflicts` and refused by `toolgate serve`.
    pub prefix: bool,
    /// Semver constraints its tools must meet (a tool's version is read from its `_meta`
    /// `toolgate/version` or `version`, or its annotations' `version`); a tool that does not
    /// meet its constraint, or declares no version, is left out with the reason.
    pub require: Option<super::Require>,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio(StdioTransport),
    /// MCP streamable HTTP.
    Http(HttpTransport),
    /// The legacy HTTP+SSE transport (MCP 2024-11-05).
    Sse(SseTransport),
}

/// A child process speaking MCP over stdin/stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StdioTransport {
    /// The program (looked up in `PATH`).
    pub command: String,
    /// Its arguments (`${ENV}` allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Interpolated>,
    /// Environment variables added to the child's environment (`${ENV}` allowed: secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Interpolated>,
    /// The child's working directory (default: the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// An MCP server over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpTransport {
    /// The MCP endpoint, e.g. `https://host/mcp`.
    pub url: String,
    /// Headers sent with every request (`${ENV}` allowed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Interpolated>,
    /// Sent as `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<Interpolated>,
    /// OAuth2 client credentials: a token fetched from the token endpoint, cached, sent as
    /// `Authorization: Bearer` with every request and fetched again once when the server
    /// answers HTTP 401. Not with `bearer_token` or an `Authorization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2: Option<super::openapi::OAuth2ClientCredentials>,
}

/// An MCP server over the legacy HTTP+SSE transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SseTransport {
    /// The SSE endpoint, e.g. `http://host/sse`.
    pub url: String,
    /// Headers sent with every request (`${ENV}` allowed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Interpolated>,
    /// Sent as `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<Interpolated>,
    /// OAuth2 client credentials: a token fetched from the token endpoint, cached, sent as
    /// `Authorization: Bearer` with every request and fetched again once when the server
    /// answers HTTP 401. Not with `bearer_token` or an `Authorization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2: Option<super::openapi::OAuth2ClientCredentials>,
}

/// The YAML shape of an `mcp` entry (one transport key).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpServer", transform = one_transport)]
struct RawMcpServer {
    /// The source id, prefix of its tools (`{id}.{tool}`).
    id: String,
    /// A child process speaking MCP over stdin/stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdio: Option<StdioTransport>,
    /// MCP streamable HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    http: Option<HttpTransport>,
    /// The legacy HTTP+SSE transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sse: Option<SseTransport>,
    /// Tool names or globs to offer (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    allow: Vec<String>,
    /// Tool names or globs never to offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deny: Vec<String>,
    /// Per-call timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    /// The longest starting a session (process or connection, then the handshake) may take,
    /// in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    connect_timeout_ms: Option<u64>,
    /// The longest a call may go without progress from the server, in milliseconds; each
    /// progress notification starts the wait again, up to the call's timeout (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle_timeout_ms: Option<u64>,
    /// Connect on first use instead of at start (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    lazy: bool,
    /// The most bytes a result may have (default 65536; 0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_result_bytes: Option<u64>,
    /// Name tools `{id}.{tool}` (default true); false: under their own names.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    prefix: bool,
    /// Semver constraints its tools must meet: one for all (`"^2"`) or one per tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    require: Option<super::Require>,
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
fn is_yes(b: &bool) -> bool {
    *b
}

fn one_transport(schema: &mut schemars::Schema) {
    schema.insert(
        "oneOf".into(),
        serde_json::json!([
            {"required": ["stdio"]}, {"required": ["http"]}, {"required": ["sse"]}
        ]),
    );
}

impl TryFrom<RawMcpServer> for McpServer {
    type Error = String;
    fn try_from(r: RawMcpServer) -> Result<Self, String> {
        let mut transports = Vec::new();
        if let Some(t) = r.stdio {
            transports.push(McpTransport::Stdio(t));
        }
        if let Some(t) = r.http {
            transports.push(McpTransport::Http(t));
        }
        if let Some(t) = r.sse {
            transports.push(McpTransport::Sse(t));
        }
        if transports.len() != 1 {
            return Err(format!(
                "MCP server `{}` needs exactly one transport key: `stdio: {{command, args}}`, \
                 `http: {{url}}` or `sse: {{url}}` (found {})",
                r.id,
                transports.len()
            ));
        }
        Ok(McpServer {
            id: r.id,
            transport: transports.remove(0),
            allow: r.allow,
            deny: r.deny,
            timeout_ms: r.timeout_ms,
            connect_timeout_ms: r.connect_timeout_ms,
            idle_timeout_ms: r.idle_timeout_ms,
            lazy: r.lazy,
            max_result_bytes: r.max_result_bytes,
            prefix: r.prefix,
            require: r.require,
        })
    }
}

impl From<McpServer> for RawMcpServer {
    fn from(s: McpServer) -> Self {
        let (mut stdio, mut http, mut sse) = (None, None, None);
        match s.transport {
            McpTransport::Stdio(t) => stdio = Some(t),
            McpTransport::Http(t) => http = Some(t),
            McpTransport::Sse(t) => sse = Some(t),
        }
        RawMcpServer {
            id: s.id,
            stdio,
            http,
            sse,
            allow: s.allow,
            deny: s.deny,
            timeout_ms: s.timeout_ms,
            connect_timeout_ms: s.connect_timeout_ms,
            idle_timeout_ms: s.idle_timeout_ms,
            lazy: s.lazy,
            max_result_bytes: s.max_result_bytes,
            prefix: s.prefix,
            require: s.require,
        }
    }
}
