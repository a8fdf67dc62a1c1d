//! The gateway as an OAuth 2.1 resource server: JWT access tokens from configured issuers,
//! checked against the issuers' published keys.
//!
//! A token is accepted when (the checks of RFC 9068 §4 but the header's `typ`, which providers
//! such as Keycloak and Entra ID do not set to `at+jwt`; RFC 7519 §7.2; RFC 8725 §3):
//!
//! - it is at most [`MAX_TOKEN_BYTES`] long and is a JWS in compact form;
//! - its `iss` is one of the configured issuers, and its `alg` one that issuer may use (never
//!   `none` nor HMAC: RFC 8725 §3.1–3.2);
//! - its signature verifies with a key of the issuer's JWKS (the key its `kid` names; the only
//!   key of the right type when it names none);
//! - `exp` is in the future and `nbf` (if any) in the past, within the clock skew;
//! - `aud` holds one of the accepted audiences (RFC 8707: the gateway's resource URL by default);
//! - it carries every required scope (else `403 insufficient_scope`).
//!
//! Nothing of a token (nor any key) goes into an answer or a log line: refusals say which rule
//! failed. The caller's token is never sent upstream.

mod keys;
mod metadata;

use std::collections::BTreeMap;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;
use sha2::Digest as _;
use toolgate_model::config::{IssuerConfig, OAuthConfig};

pub(crate) use metadata::router;

use crate::gateway::Caller;

/// The longest access token accepted, in bytes: far above what providers issue (a few KiB
/// with many groups), far below what would make parsing it costly.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The default clock skew allowed on `exp` and `nbf`, in seconds (`iat` is not checked: RFC
/// 9068 §4 leaves it to the resource server, and `exp` bounds a token's life).
const DEFAULT_SKEW_S: u64 = 60;

/// The most tokens remembered as checked.
const VERIFIED_CAPACITY: u64 = 10_000;

/// How long a checked token is remembered at most (and never past its `exp`).
const VERIFIED_TTL: Duration = Duration::from_secs(300);

/// Why a token was refused.
#[derive(Debug)]
pub(crate) enum TokenError {
    /// `401 invalid_token`: the token does not hold (the reason, without any of its content
    /// but the issuer's name).
    Invalid(String),
    /// `403 insufficient_scope`: the scopes it lacks.
    Scope(Vec<String>),
    /// `503`: no key of its issuer can be had now (the JWKS unreachable, nothing cached).
    Unavailable(String),
}

/// One issuer whose tokens are accepted.
struct Issuer {
    id: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    caller_claim: String,
    roles_claim: Option<String>,
    role_map: BTreeMap<String, String>,
    scope_roles: BTreeMap<String, String>,
    keys: keys::KeySet,
}

/// The checks of `gateway.auth.oauth`, built once.
pub(crate) struct ResourceServer {
    resource: String,
    issuers: Vec<Issuer>,
    required_scopes: Vec<String>,
    /// `tool_scopes`: the scopes the tools a glob matches need.
    tool_scopes: Vec<(glob::Pattern, Vec<String>)>,
    skew: u64,
    metadata: metadata::Metadata,
    /// Tokens that passed every check, by SHA-256 digest: the caller they stand for and their
    /// `exp`. A token is checked once, then found here until it expires (or [`VERIFIED_TTL`]).
    verified: moka::sync::Cache<[u8; 32], (Caller, u64)>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field(
                "issuers",
                &self.issuers.iter().map(|i| &i.id).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// How keys are fetched: the deadline of one metadata or JWKS request, and how soon a token
/// naming an unknown key may cause another fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchLimits {
    /// The deadline of one fetch (metadata and JWKS together), and the longest a request waits
    /// for keys (`jwks_timeout_ms`, default 5 s).
    pub timeout: Duration,
    /// The least time between two JWKS fetches of one issuer, whatever tokens name
    /// (`jwks_min_refresh_s`, default 10 s; never below `timeout`).
    pub min_refresh: Duration,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            min_refresh: Duration::from_secs(10),
        }
    }
}

impl ResourceServer {
    /// Builds the checks of `config`.
    ///
    /// # Errors
    /// A message naming the setting when the resource is not a URL, an issuer has no usable
    /// algorithm, or the HTTP client cannot be built.
    pub(crate) fn new(config: &OAuthConfig, limits: FetchLimits) -> Result<Self, String> {
        // A request waits at most one fetch deadline: no second fetch may start within it.
        let limits = FetchLimits {
            min_refresh: limits.min_refresh.max(limits.timeout),
            ..limits
        };
        if config.issuers.is_empty() {
            return Err("gateway.auth.oauth: no issuer".into());
        }
        let client = reqwest::Client::builder()
            .timeout(limits.timeout)
            .connect_timeout(limits.timeout)
            // At most 3 redirects, each to a URL keys may be read from (no https → http).
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() >= 3 {
                    attempt.error("more than 3 redirects")
                } else if keys::secure_url(attempt.url().as_str()) {
                    attempt.follow()
                } else {
                    attempt.error("a redirect to plain http")
                }
            }))
            .build()
            .map_err(|e| format!("gateway.auth.oauth: HTTP client: {e}"))?;
        let audiences = if config.audiences.is_empty() {
            vec![config.resource.clone()]
        } else {
            config.audiences.clone()
        };
        let issuers = config
            .issuers
            .iter()
            .map(|c| Issuer::new(c, &audiences, client.clone(), limits))
            .collect::<Result<Vec<_>, _>>()?;
        let metadata = metadata::Metadata::new(config)?;
        let tool_scopes = config
            .tool_scopes
            .iter()
            .map(|(tools, scopes)| {
                glob::Pattern::new(tools)
                    .map(|p| (p, scopes.clone()))
                    .map_err(|e| format!("gateway.auth.oauth.tool_scopes: `{tools}`: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            resource: config.resource.clone(),
            issuers,
            required_scopes: config.required_scopes.clone(),
            tool_scopes,
            skew: config.clock_skew_s.unwrap_or(DEFAULT_SKEW_S),
            metadata,
            verified: moka::sync::Cache::builder()
                .max_capacity(VERIFIED_CAPACITY)
                .time_to_live(VERIFIED_TTL)
                .build(),
        })
    }

    /// The `WWW-Authenticate` value of a `401` (RFC 6750 §3, RFC 9728 §5.1): `Bearer
    /// resource_metadata="…"`, with `error` and `error_description` when given.
    pub(crate) fn challenge(&self, error: Option<(&str, &str)>) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata.url());
        if let Some((code, description)) = error {
            value.push_str(&format!(
                ", error=\"{code}\", error_description=\"{}\"",
                quoted(description)
            ));
        }
        value
    }

    /// The `WWW-Authenticate` value of a `403` for missing scopes (RFC 6750 §3.1): `scope`
    /// lists every scope the gateway requires (what a client asks for when it steps up), the
    /// description the missing ones.
    pub(crate) fn scope_challenge(&self, missing: &[String]) -> String {
        format!(
            "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"{}\", error_description=\"the token lacks the scope(s) {}\"",
            self.metadata.url(),
            quoted(&self.required_scopes.join(" ")),
            quoted(&missing.join(" "))
        )
    }

    /// The scopes tool `tool` (its toolset name) needs by `tool_scopes` that `scopes` lack:
    /// `(every scope it needs, the missing ones)`, or `None` when nothing is missing.
    pub(crate) fn tool_scopes_missing(
        &self,
        tool: &str,
        scopes: &[String],
    ) -> Option<(Vec<String>, Vec<String>)> {
        let mut needed: Vec<String> = Vec::new();
        for (pattern, wanted) in &self.tool_scopes {
            if pattern.matches(tool) {
                for s in wanted {
                    if !needed.contains(s) {
                        needed.push(s.clone());
                    }
                }
            }
        }
        let missing: Vec<String> = needed
            .iter()
            .filter(|s| !scopes.contains(s))
            .cloned()
            .collect();
        (!missing.is_empty()).then_some((needed, missing))
    }

    /// Whether any tool needs scopes of its own (`tool_scopes`).
    pub(crate) fn has_tool_scopes(&self) -> bool {
        !self.tool_scopes.is_empty()
    }

    /// The `WWW-Authenticate` value of a `403` for a tool's missing scopes: `scope` lists what
    /// a token for the call needs (the gateway's required scopes and the tool's), the
    /// description the missing ones.
    pub(crate) fn tool_scope_challenge(
        &self,
        tool: &str,
        needed: &[String],
        missing: &[String],
    ) -> String {
        let mut all = self.required_scopes.clone();
        for s in needed {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        format!(
            "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"{}\", error_description=\"tool {} needs the scope(s) {}\"",
            self.metadata.url(),
            quoted(&all.join(" ")),
            quoted(&cut(tool)),
            quoted(&missing.join(" "))
        )
    }

    /// Whether `path` is where the protected resource metadata is served.
    pub(crate) fn serves_metadata_at(&self, path: &str) -> bool {
        self.metadata.serves_at(path)
    }

    /// The caller a token stands for.
    ///
    /// # Errors
    /// [`TokenError`], see the module docs for the rules.
    pub(crate) async fn authenticate(&self, token: &str) -> Result<Caller, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Invalid(format!(
                "the token is longer than {MAX_TOKEN_BYTES} bytes"
            )));
        }
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some((caller, exp)) = self.verified.get(&digest) {
            if now() <= exp.saturating_add(self.skew) {
                return Ok(caller);
            }
            self.verified.invalidate(&digest);
        }
        let (caller, exp) = self.check(token).await?;
        self.verified.insert(digest, (caller.clone(), exp));
        Ok(caller)
    }

    /// Every check of a token not seen before: the caller, and the token's `exp`.
    async fn check(&self, token: &str) -> Result<(Caller, u64), TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            TokenError::Invalid(match e.kind() {
                jsonwebtoken::errors::ErrorKind::Json(_)
                    if header_alg(token).is_some_and(|a| a.eq_ignore_ascii_case("none")) =>
                {
                    "unsigned tokens (`alg: none`) are never accepted".into()
                }
                _ => "the token is not a JWS in compact form (RFC 7515 §7.1): its header does not decode".into(),
            })
        })?;
        let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|_| TokenError::Invalid("the token's claims do not decode as JSON".into()))?;
        let Some(iss) = claims.get("iss").and_then(Value::as_str) else {
            return Err(TokenError::Invalid("the token has no `iss` claim".into()));
        };
        let Some(issuer) = self.issuers.iter().find(|i| i.id == iss) else {
            return Err(TokenError::Invalid(format!(
                "tokens of issuer `{}` are not accepted",
                cut(iss)
            )));
        };
        issuer.check(token, &header, self.skew).await?;
        let scopes = scopes(&claims);
        let missing: Vec<String> = self
            .required_scopes
            .iter()
            .filter(|s| !scopes.contains(s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(TokenError::Scope(missing));
        }
        let Some(subject) = claim(&claims, &issuer.caller_claim)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
        else {
            return Err(TokenError::Invalid(format!(
                "the token has no `{}` claim naming the caller (a non-empty string)",
                issuer.caller_claim
            )));
        };
        // Present and a number: the signature check required it.
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        let caller = Caller {
            name: Some(format!("{}#{subject}", issuer.id)),
            issuer: Some(issuer.id.clone()),
            subject: Some(subject.to_string()),
            roles: issuer.roles(&claims, &scopes),
            scopes,
            claims: Some(std::sync::Arc::new(claims.clone())),
            access_token: Some(toolgate_model::config::Secret::new(token)),
            ..Caller::default()
        };
        Ok((caller, exp))
    }
}

impl Issuer {
    fn new(
        config: &IssuerConfig,
        audiences: &[String],
        client: reqwest::Client,
        limits: FetchLimits,
    ) -> Result<Self, String> {
        let algorithms = if config.algorithms.is_empty() {
            toolgate_model::config::TOKEN_ALGORITHMS.to_vec()
        } else {
            config.algorithms.iter().map(String::as_str).collect()
        };
        let algorithms = algorithms
            .into_iter()
            .map(|a| match a.parse::<Algorithm>() {
                Ok(alg)
                    if !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) =>
                {
                    Ok(alg)
                }
                _ => Err(format!(
                    "gateway.auth.oauth: issuer `{}`: `{a}` is not an accepted signing algorithm",
                    config.issuer
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fetched_from: Vec<&String> = match (&config.jwks_uri, &config.discovery_url) {
            (Some(jwks), _) => vec![jwks],
            (None, Some(discovery)) => vec![discovery],
            (None, None) => vec![&config.issuer],
        };
        if let Some(url) = fetched_from.iter().find(|u| !keys::secure_url(u)) {
            return Err(format!(
                "gateway.auth.oauth: issuer `{}`: keys would be read from `{url}` over plain http; use https (http only to a loopback address)",
                config.issuer
            ));
        }
        Ok(Self {
            id: config.issuer.clone(),
            audiences: if config.audiences.is_empty() {
                audiences.to_vec()
            } else {
                config.audiences.clone()
            },
            algorithms,
            caller_claim: config.caller_claim.clone().unwrap_or_else(|| "sub".into()),
            roles_claim: config.roles_claim.clone(),
            role_map: config.role_map.clone(),
            scope_roles: config.scope_roles.clone(),
            keys: keys::KeySet::new(config, client, limits),
        })
    }

    /// Checks the token's algorithm, signature, issuer, audience and times.
    async fn check(
        &self,
        token: &str,
        header: &jsonwebtoken::Header,
        skew: u64,
    ) -> Result<(), TokenError> {
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!(
                "algorithm `{:?}` is not accepted for issuer `{}`",
                header.alg, self.id
            )));
        }
        let (key, generation) = self.keys.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = skew;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.id]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        match jsonwebtoken::decode::<Value>(token, &key, &validation) {
            Ok(_) => Ok(()),
            // The provider may have made a new key under the same `kid`: one fetch (if due),
            // then, if the keys changed since (this fetch or another request's), one more try.
            Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => {
                self.keys.refresh().await;
                if self.keys.generation().await == generation {
                    return Err(TokenError::Invalid(self.explain(e.kind())));
                }
                let (key, _) = self.keys.key(header.kid.as_deref(), header.alg).await?;
                jsonwebtoken::decode::<Value>(token, &key, &validation)
                    .map(drop)
                    .map_err(|e| TokenError::Invalid(self.explain(e.kind())))
            }
            Err(e) => Err(TokenError::Invalid(self.explain(e.kind()))),
        }
    }

    fn explain(&self, kind: &jsonwebtoken::errors::ErrorKind) -> String {
        use jsonwebtoken::errors::ErrorKind as K;
        match kind {
            K::ExpiredSignature => "the token has expired (`exp`)".into(),
            K::ImmatureSignature => "the token is not valid yet (`nbf`)".into(),
            K::InvalidAudience => format!(
                "the token's audience (`aud`) is not this gateway: expected {}",
                self.audiences
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            K::InvalidIssuer => format!("the token's issuer is not `{}`", self.id),
            K::InvalidSignature => "the signature does not verify with the issuer's key".into(),
            K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
            K::InvalidAlgorithm => "the token's algorithm does not fit the key it names".into(),
            _ => "the token does not decode".into(),
        }
    }

    /// The roles of a token: its roles claim's values (mapped when `role_map` is set), then the
    /// roles of its scopes; each once.
    fn roles(&self, claims: &Value, scopes: &[String]) -> Vec<String> {
        let mut roles: Vec<String> = Vec::new();
        let mut push = |role: &str| {
            if !roles.iter().any(|r| r == role) {
                roles.push(role.to_string());
            }
        };
        if let Some(path) = &self.roles_claim {
            for value in strings(claim(claims, path)) {
                if self.role_map.is_empty() {
                    push(&value);
                } else if let Some(role) = self.role_map.get(&value) {
                    push(role);
                }
            }
        }
        for scope in scopes {
            if let Some(role) = self.scope_roles.get(scope) {
                push(role);
            }
        }
        roles
    }
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether a bearer value has the shape of a JWS in compact form: three non-empty base64url
/// parts (an API key almost never has two dots).
pub(crate) fn looks_like_jwt(value: &str) -> bool {
    let mut parts = value.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
        })
    };
    ok(parts.next())
        && ok(parts.next())
        && parts.next().is_some_and(|p| ok(Some(p)) || p.is_empty())
        && parts.next().is_none()
}

/// The `alg` of a token's header when it reads as JSON (even one `jsonwebtoken` refuses, such
/// as `none`).
fn header_alg(token: &str) -> Option<String> {
    use base64::Engine as _;
    let head = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_end_matches('='))
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("alg")?.as_str().map(str::to_owned)
}

/// The claim at a dotted `path` (`realm_access.roles`); a claim whose own name has a dot is
/// found too.
fn claim<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    path.split('.').try_fold(claims, |v, key| v.get(key))
}

/// A claim's strings: an array's string items, or a string's space-separated words.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A token's scopes: `scope` (RFC 8693 §4.2, space-separated) or `scp` (an array, as some
/// providers send).
fn scopes(claims: &Value) -> Vec<String> {
    let scope = strings(claims.get("scope"));
    if scope.is_empty() {
        strings(claims.get("scp"))
    } else {
        scope
    }
}

/// Text from a token, fit for an error message: at most 100 characters, each printable ASCII
/// (others become `?`).
fn cut(text: &str) -> String {
    // Printable ASCII only: no control, bidirectional or zero-width character of a token
    // reaches an answer.
    let mut out: String = text
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    if text.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// Text fit for a quoted-string of a header (RFC 9110 §5.6.4): printable ASCII, no `"` or `\`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests;
