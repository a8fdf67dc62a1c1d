//! `gateway.auth`: who may call the gateway besides API-key holders — OAuth 2.1 access tokens
//! (JWTs) from the operator's identity providers, the gateway acting as a resource server.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How callers authenticate beyond `gateway.api_keys`:
///
/// ```yaml
/// gateway:
///   auth:
///     oauth:
///       resource: https://gw.example.com/mcp
///       issuers:
///         - issuer: https://idp.example.com/realms/agents
///           roles_claim: realm_access.roles
///           scope_roles: {"tools:read": reader}
///       required_scopes: [mcp]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayAuth {
    /// Access tokens from OAuth 2.1 / OpenID Connect issuers (the MCP authorization
    /// specification's resource server). Absent: API keys only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
}

/// The gateway as an OAuth 2.1 resource server: which issuers' JWT access tokens it accepts,
/// for which audience, and how their claims become the caller's name and roles.
///
/// A request with `Authorization: Bearer <JWT>` is checked against these issuers (signature by
/// a key from the issuer's JWKS, `iss`, `aud`, `exp`, `nbf`); API keys keep working beside
/// tokens. Without a valid credential the answer is `401` with
/// `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1), and the gateway serves its
/// protected resource metadata at `/.well-known/oauth-protected-resource` (RFC 9728 §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The gateway's resource identifier (RFC 8707 §2, RFC 9728 §2 `resource`): the URL its
    /// clients use, e.g. `https://gw.example.com/mcp`. Tokens must carry it in `aud` unless
    /// `audiences` says otherwise; the metadata URL in the `401` challenge is made from it.
    pub resource: String,
    /// The `aud` values accepted (any one is enough). Default: `[resource]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// The issuers whose tokens are accepted (at least one).
    pub issuers: Vec<IssuerConfig>,
    /// Scopes every token must carry (the `scope` claim, space-separated, or `scp`); a token
    /// without them is answered `403` with `error="insufficient_scope"` (RFC 6750 §3.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Scopes a token must carry to call some tools, by tool name or glob (the toolset's name,
    /// e.g. `tickets.*`): a call of such a tool with a token lacking one is answered `403`
    /// with `error="insufficient_scope"` and `scope` naming what the tool needs (RFC 6750
    /// section 3.1), over REST and MCP alike, before the call runs. Callers with an API key are
    /// not concerned (their roles decide).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// Scopes listed in the protected resource metadata (`scopes_supported`). Default: the
    /// required scopes, every `scope_roles` key and every scope of `tool_scopes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How far `exp` and `nbf` may be off the gateway's clock, in seconds (default 60; `iat` is
    /// not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_s: Option<u64>,
    /// The deadline of one request for an issuer's metadata or JWKS, in milliseconds (default
    /// 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_timeout_ms: Option<u64>,
    /// The least time between two fetches of an issuer's JWKS, in seconds (default 10): a
    /// token naming a key the gateway does not hold (the issuer rotated its keys) makes it
    /// fetch the JWKS again, at most this often whatever the tokens say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_min_refresh_s: Option<u64>,
    /// A human-readable name for the metadata's `resource_name` (RFC 9728 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

/// One accepted token issuer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The issuer identifier, exactly as tokens carry it in `iss` (RFC 8414 §2; OpenID Connect
    /// Discovery §3), e.g. `https://login.example.com/tenant/v2.0`.
    pub issuer: String,
    /// Where the issuer's metadata is read from. Default: `{issuer}/.well-known/openid-configuration`,
    /// then `/.well-known/oauth-authorization-server` inserted before the issuer's path
    /// (RFC 8414 §3.1). Unused when `jwks_uri` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_url: Option<String>,
    /// The issuer's JWKS (RFC 7517 §5) URL, when it is not to be read from its metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The signing algorithms accepted (`RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`,
    /// `ES256`, `ES384`, `EdDSA`). Default: all of them. `none` and the HMAC algorithms
    /// (`HS256`, ...) are never accepted: a token signed with a shared secret, or with the
    /// public key used as one, is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<String>,
    /// The `aud` values accepted from this issuer, instead of the `oauth.audiences` (some
    /// providers put an application id there, e.g. `api://…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// The claim that names the caller (default `sub`; `client_id`, `azp`, `email`, ... for
    /// providers that put something else there). A dotted path reaches into objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_claim: Option<String>,
    /// The claim holding the caller's roles or groups: an array of strings or a space-separated
    /// string; a dotted path reaches into objects (`realm_access.roles`). Absent: no roles from
    /// claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles_claim: Option<String>,
    /// Claim values (roles, groups) → gateway roles. When set, only mapped values give roles;
    /// when empty, each value of `roles_claim` is a role as it is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub role_map: BTreeMap<String, String>,
    /// Scopes → gateway roles: a token carrying the scope has the role.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scope_roles: BTreeMap<String, String>,
}

/// The algorithms a token may be signed with: the asymmetric JOSE algorithms (RFC 7518 §3,
/// RFC 8037 §3.1). Never `none`, never HMAC.
pub const TOKEN_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];
