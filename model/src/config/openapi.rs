//! `tools.openapi`: HTTP API operations from OpenAPI documents, and the `auth:` shape shared by
//! HTTP-based sources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::interpolate::Interpolated;

/// An OpenAPI 3.0 / 3.1 document whose operations become tools named `{id}.{operationId}`.
///
/// ```yaml
/// tools:
///   openapi:
///     - id: petstore
///       spec: specs/petstore.yaml          # a path (relative to the crate root) or a URL
///       load: build                        # build (default): compiled in; runtime: fetched at start
///       base_url: https://petstore.example/v1
///       include: {tags: [pets]}
///       exclude: {operations: [deletePet], paths: ["/admin/**"]}
///       auth: {bearer: "${PETSTORE_TOKEN}"}
///       server_variables: {region: us}
///       names: {"GET /pets/{petId}/photos": list_pet_photos}
/// ```
///
/// A `spec` URL needs `load: runtime` (build scripts do not reach the network).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenApiSource {
    /// The source id, prefix of its tools (`{id}.{operationId}`). Tool-name characters, no `__`,
    /// not `local`, unique among all sources.
    pub id: String,
    /// Where the document is: a file path (relative to the crate root, the folder of
    /// `Cargo.toml`) or an `http(s)://` URL.
    pub spec: String,
    /// When the document is read: `build` (default) compiles it in; `runtime` loads it when the
    /// toolset starts.
    #[serde(default)]
    pub load: LoadMode,
    /// The server to call; defaults to the document's first `servers` entry. May reference
    /// environment variables (`${PETSTORE_URL:-https://petstore.example/v1}`), resolved when the
    /// toolset is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<Interpolated>,
    /// Only operations matching this filter become tools (empty: all).
    #[serde(default, skip_serializing_if = "OperationFilter::is_empty")]
    pub include: OperationFilter,
    /// Operations matching this filter are left out (applied after `include`).
    #[serde(default, skip_serializing_if = "OperationFilter::is_empty")]
    pub exclude: OperationFilter,
    /// How requests authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthConfig>,
    /// Whether tools are named `{id}.{tool}` (default `true`); `false` offers them under their
    /// own names (a name another source has is then a build error).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub prefix: bool,
    /// Tool names chosen by hand, by operation: the key is an `operationId` or `METHOD /path`
    /// (`"GET /accounts/{accountId}/transactions": list_transactions`). Wins over the derived
    /// name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    /// Values of the server URL's `{variables}` (`region: us`); each must be one of the
    /// variable's `enum` when it has one. Unset variables take their `default`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_variables: BTreeMap<String, String>,
    /// Hosts requests may go to besides the server's own (exact names or `*.example.com`).
    /// Requests (and redirects) to any other host are refused before they are sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Allow requests to private, loopback and link-local addresses (default `false`: a server
    /// URL that resolves to one is refused).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_private: bool,
    /// The longest one call may take, in milliseconds (the policy's timeout otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The most bytes of a response body read (default 1048576); a larger body fails the call
    /// with `upstream` naming the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<u64>,
    /// The category given to every tool of the source (default: the operation's first tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Argument adapters: hide an argument and fill it from config or the caller's context,
    /// rename it, give it a default, or drop it. Applied in order; a later adapter sees the
    /// names an earlier one gave.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<Adapter>,
    /// A Rust path to a `static` implementing `toolgate::OpenApiHook`, for request and response
    /// transforms a declaration cannot express (compiled sources only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Whether the generated module also has typed argument structs and one async function per
    /// operation for Rust callers (default `true`; compiled sources only).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub typed: bool,
    /// The version of every tool of the source (a semantic version), instead of the
    /// document's `info.version` (which is used only when it is one: a date or `1.0` leaves
    /// the tools unversioned unless this is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A semver constraint (`"^2"`) the source's version must meet: a compiled source
    /// (`load: build`) that does not meet it fails the build, one loaded at run time fails
    /// to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<String>,
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
fn is_true(b: &bool) -> bool {
    *b
}

/// Argument adapters for the operations they select:
///
/// ```yaml
/// adapters:
///   - tools: ["repos/*", getOrg]        # globs over tool names or operationIds; empty: all
///     arguments:
///       owner: {value: acme}            # hidden from the model, always `acme`
///       tenant: {from_context: caller}  # hidden, the caller's name (or `agent`)
///       per_page: {default: 30}         # shown, with this default, filled when missing
///       q: {rename: query}              # shown as `query`, sent as `q`
///       X-Trace: {drop: true}           # removed (optional arguments only)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    /// The operations it applies to: globs (`*`, `?`) matched against the tool name and the
    /// `operationId`. Empty: every operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// What to do with each argument, by its name in the input schema.
    pub arguments: BTreeMap<String, ArgumentAdapter>,
}

/// What an [`Adapter`] does with one argument. Exactly one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ArgumentAdapter {
    /// Hidden from the model; always sent with this value (may reference `${ENV}`).
    Value(Interpolated),
    /// Hidden from the model; filled from the caller's context: `caller` or `agent`. A call
    /// without it fails with `invalid_arguments` when the argument is required.
    FromContext(ContextField),
    /// Shown with this default, which is sent when the model leaves it out.
    Default(serde_json::Value),
    /// Shown under this name instead.
    Rename(String),
    /// Removed from the schema and never sent (`drop: true`; only for optional arguments).
    Drop(bool),
}

/// A field of the caller's context an argument can be filled from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextField {
    /// The caller's name (the API key's name at the gateway).
    Caller,
    /// The agent's name.
    Agent,
}

impl OpenApiSource {
    /// Whether [`spec`](Self::spec) is a URL rather than a file.
    pub fn spec_is_url(&self) -> bool {
        self.spec.starts_with("http://") || self.spec.starts_with("https://")
    }
}

/// When an OpenAPI document is read.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// At build time: operations are compiled into the binary (typed, checked by `cargo build`).
    #[default]
    Build,
    /// At run time, when the toolset starts.
    Runtime,
}

/// Selects operations of an OpenAPI document. An operation matches when any list matches it;
/// an empty filter matches nothing as `exclude` and everything as `include`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationFilter {
    /// `operationId`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// Operation tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Path globs (`*` one segment, `**` any number): `/pets/*`, `/admin/**`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

impl OperationFilter {
    /// Whether no list has an entry.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty() && self.tags.is_empty() && self.paths.is_empty()
    }
}

/// How an HTTP-based source (OpenAPI, A2A) authenticates. One key, the scheme:
///
/// ```yaml
/// auth: {bearer: "${TOKEN}"}
/// auth: {api_key: {in: header, name: X-API-Key, value: "${KEY}"}}
/// auth: {basic: {username: me, password: "${PASSWORD}"}}
/// auth: {headers: {X-Org: acme, X-Token: "${TOKEN}"}}
/// ```
///
/// Every value is [`Interpolated`]: secrets come from the environment at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthConfig {
    /// `Authorization: Bearer <token>`.
    Bearer(Interpolated),
    /// An API key in a header, query parameter or cookie.
    ApiKey(ApiKeyAuth),
    /// HTTP basic authentication.
    Basic(BasicAuth),
    /// Arbitrary headers added to every request.
    Headers(BTreeMap<String, Interpolated>),
    /// Credentials by the name of a `securitySchemes` entry (an OpenAPI document's, or an A2A
    /// agent card's); the scheme says where each goes (and, for OpenAPI, the operation's
    /// `security` which are sent).
    Schemes(BTreeMap<String, SchemeCredentials>),
    /// OAuth2 client credentials: a token is fetched from `token_url`, cached until it expires,
    /// and sent as `Authorization: Bearer`.
    #[serde(rename = "oauth2")]
    OAuth2(OAuth2ClientCredentials),
}

/// The credentials for one security scheme of an OpenAPI document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SchemeCredentials {
    /// The key of an `apiKey` scheme, or the token of an `http` `bearer` scheme.
    Secret(Interpolated),
    /// `http` `basic`.
    Basic(BasicAuth),
    /// `oauth2` with the `clientCredentials` flow (the token URL defaults to the document's).
    OAuth2(OAuth2ClientCredentials),
}

/// The OAuth2 client-credentials grant (RFC 6749 section 4.4), for an upstream (an OpenAPI
/// source, an A2A agent, an MCP server over HTTP):
///
/// ```yaml
/// oauth2:
///   token_url: https://idp.example.com/oauth2/token
///   client_id: toolgate
///   client_secret: "${TOOLGATE_CLIENT_SECRET}"
///   scopes: [tickets.read]
///   resource: https://tickets.example.com/mcp   # RFC 8707, for IdPs that take it
/// ```
///
/// The token is fetched on first use, cached until 30 s before its `expires_in` (an hour when
/// the answer has none), and fetched again once when the upstream answers HTTP 401.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuth2ClientCredentials {
    /// The client id.
    pub client_id: Interpolated,
    /// The client secret (for `client_auth: basic` and `post`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Interpolated>,
    /// The client's private key, PEM (PKCS#8, or PKCS#1 for RSA), for `client_auth:
    /// private_key_jwt`: usually `"${file:/run/secrets/toolgate-key.pem}"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<Interpolated>,
    /// The algorithm the assertion is signed with, for `private_key_jwt`: `RS256` (the
    /// default), `RS384`, `RS512`, `PS256`, `PS384`, `PS512`, `ES256`, `ES384` or `EdDSA`; it
    /// must fit the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_algorithm: Option<String>,
    /// The assertion's `aud`, for `private_key_jwt` (RFC 7523 section 3): default the issuer
    /// when the token endpoint was discovered, else the token endpoint's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_audience: Option<String>,
    /// The token endpoint (`https://`; plain `http://` only to a loopback address); for a
    /// `schemes` entry of an OpenAPI document, defaults to the scheme's `tokenUrl`; for an MCP
    /// server, discovered from its protected resource metadata (RFC 9728, then RFC 8414) when
    /// left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Scopes requested (sent space-separated as `scope`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The resource the token is for, sent as `resource` (RFC 8707 "Resource Indicators"):
    /// the upstream's URL, as the MCP authorization specification asks of clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The audience the token is for, sent as `audience` (the parameter of IdPs such as Auth0
    /// that predate RFC 8707).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// How the client authenticates to the token endpoint (RFC 6749 section 2.3.1): `basic`
    /// (the default, HTTP Basic with the form-encoded id and secret), `post` (both as form
    /// fields of the request body) or `private_key_jwt` (a JWT signed with `private_key`,
    /// RFC 7523 section 2.2).
    #[serde(default, skip_serializing_if = "ClientAuth::is_default")]
    pub client_auth: ClientAuth,
    /// The grant the token is fetched with: `client_credentials` (the default: the gateway's
    /// own token) or `token_exchange` (RFC 8693: the access token the calling user came to the
    /// gateway with is exchanged for one for this upstream, per caller; MCP servers over HTTP
    /// and OpenAPI sources).
    #[serde(default, skip_serializing_if = "OAuth2Grant::is_default")]
    pub grant: OAuth2Grant,
    /// For `grant: token_exchange`: the type of the caller's token, sent as
    /// `subject_token_type` (RFC 8693 section 3); default
    /// `urn:ietf:params:oauth:token-type:access_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_token_type: Option<String>,
}

/// The OAuth2 grant an upstream's token is fetched with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OAuth2Grant {
    /// Client credentials (RFC 6749 section 4.4): one token for the gateway itself.
    #[default]
    ClientCredentials,
    /// Token exchange (RFC 8693) on behalf of the caller: the caller's validated access token
    /// is the `subject_token`; each caller gets its own token for the upstream. Requests made
    /// on nobody's behalf (an MCP server's listing at start-up) use client credentials.
    TokenExchange,
}

impl OAuth2Grant {
    fn is_default(&self) -> bool {
        *self == Self::ClientCredentials
    }
}

/// The `subject_token_type` sent by default (RFC 8693 section 3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// How an OAuth2 client authenticates to the token endpoint (RFC 6749 section 2.3.1).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// `Authorization: Basic` with the form-encoded client id and secret
    /// (`client_secret_basic`).
    #[default]
    Basic,
    /// `client_id` and `client_secret` in the form body (`client_secret_post`).
    Post,
    /// A short-lived JWT signed with the client's private key (`private_key_jwt`, RFC 7523
    /// section 2.2, OpenID Connect Core section 9): no shared secret.
    PrivateKeyJwt,
}

/// The algorithms a `private_key_jwt` assertion may be signed with (asymmetric only).
pub const ASSERTION_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

impl ClientAuth {
    fn is_default(&self) -> bool {
        *self == Self::Basic
    }
}

/// An API key sent with each request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyAuth {
    /// Where the key goes.
    #[serde(rename = "in")]
    pub location: ApiKeyLocation,
    /// The header, query parameter or cookie name.
    pub name: String,
    /// The key.
    pub value: Interpolated,
}

/// Where an API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyLocation {
    /// A request header.
    Header,
    /// A query parameter.
    Query,
    /// A cookie.
    Cookie,
}

/// HTTP basic authentication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user name.
    pub username: Interpolated,
    /// The password.
    pub password: Interpolated,
}
