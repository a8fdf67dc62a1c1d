//! OAuth 2.0 client credentials (RFC 6749 §4.4) for upstream requests: OpenAPI sources, A2A
//! agents and MCP servers over HTTP get their access token here.
//!
//! * The client authenticates to the token endpoint with HTTP Basic (`client_secret_basic`,
//!   the id and secret form-encoded first, RFC 6749 §2.3.1), with both in the form body
//!   (`client_secret_post`), or with a JWT signed by its private key (`private_key_jwt`,
//!   RFC 7523 §2.2: `iss` = `sub` = the client id, `aud` the issuer or token endpoint, a `jti`,
//!   60 s of life); `scope`, `resource` (RFC 8707) and `audience` are sent when set.
//! * The token is cached until 30 s before its `expires_in` (at most half its lifetime before;
//!   an hour when the answer gives none), so no expired token is sent; concurrent callers
//!   wait for one fetch.
//! * An upstream that answers HTTP 401 gets one more try with a fresh token
//!   ([`ClientCredentials::refresh`]); a token that other callers already replaced is not
//!   fetched again.
//! * Every token request has a deadline ([`TOKEN_TIMEOUT`]) and follows no redirects (the
//!   secret would go with it); its answer is read up to 64 KiB, and must be a `Bearer` token a
//!   header can carry. A failed request is not repeated for [`FAILURE_HOLD`]: the calls in
//!   that time get its error (an unreachable identity provider is not asked once per call).
//! * The token endpoint, configured or discovered, must be `https://` (plain `http://` only
//!   to a loopback address) and carry no user name or password.
//! * Without a `token_url`, an MCP server's token endpoint is discovered as the MCP
//!   authorization specification describes ([`discover`]): its protected resource metadata
//!   (RFC 9728) names the authorization server, whose metadata (RFC 8414, or OpenID Connect
//!   discovery) names the token endpoint; the resource the metadata names is then sent as
//!   `resource` unless one is configured.
//!
//! * With `grant: token_exchange` (RFC 8693), a call made for a caller who came with an access
//!   token gets a credential of its own ([`ClientCredentials::on_behalf`]): that token is the
//!   `subject_token` of an exchange, and the token the exchange gives is cached for that
//!   caller (and that subject token) like a client-credentials token ([`exchange`]).
//!   Requests made for nobody (an MCP server's listing) use client credentials.
//!
//! Secrets: the client id and secret are resolved as credentials and remembered process-wide
//! ([`toolgate_model::secrets`]), with the base64 of the Basic pair; each access token is
//! remembered when it is fetched (replacing the one it refreshes), so no error, result or log
//! line shows any of them, even when an upstream or the token endpoint echoes them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::Url;
use toolgate_model::config::{
    ClientAuth, Interpolated, OAuth2ClientCredentials, OAuth2Grant, Secret,
};
use toolgate_model::secrets::{self, Field};

use crate::ToolError;

pub(crate) mod discover;
mod exchange;
mod grant;

use grant::{Ask, Proof};

/// How long before `expires_in` a cached token is replaced (at most half the lifetime).
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// The shortest a token is kept (an answer with `expires_in: 0` still serves the calls that
/// waited for it).
const MIN_LIFETIME: Duration = Duration::from_secs(1);
/// The longest one token request may take, connect to last byte.
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a failed token request's error is the answer before the endpoint is asked again.
pub const FAILURE_HOLD: Duration = Duration::from_secs(2);
/// The most bytes read of a token endpoint's (or a metadata document's) answer.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// Where the token endpoint is.
enum Endpoint {
    /// Configured (or an OpenAPI scheme's `tokenUrl`).
    Fixed(Url),
    /// Discovered from the resource server's metadata on first use, then kept.
    Discover {
        server: Url,
        found: Mutex<Option<discover::Found>>,
    },
}

/// An OAuth2 client's credentials and its cached access token. Cloning shares the cache.
///
/// Made from the `oauth2:` of a tools.yaml entry ([`ClientCredentials::new`]); its `Debug`
/// shows the token endpoint only.
#[derive(Clone)]
pub struct ClientCredentials(Arc<Inner>);

/// What every token request for one upstream shares (a caller's credential too).
struct Client {
    /// Who the token is for, as error messages name it (`MCP server `tickets``).
    owner: String,
    endpoint: Endpoint,
    client_id: Secret,
    /// How the client proves who it is.
    proof: Proof,
    scopes: Vec<String>,
    resource: Option<String>,
    audience: Option<String>,
    /// The client for token and metadata requests: no redirects, its own timeouts.
    http: reqwest::Client,
    /// `grant: token_exchange`: the `subject_token_type` sent.
    exchange: Option<String>,
}

/// The SHA-256 of a caller's token: which subject token a cached token was exchanged from.
type Digest = [u8; 32];

/// A cached token, until when it is used, and the subject token it was exchanged from.
struct Cached {
    token: Secret,
    until: Instant,
    subject: Option<Digest>,
}

struct Inner {
    client: Arc<Client>,
    /// A caller's credential (token exchange): the access token that caller came with last.
    subject: Option<Mutex<Secret>>,
    /// Where the current access token is remembered ([`secrets::remember_as`]).
    slot: String,
    cached: Mutex<Option<Cached>>,
    /// The last failed request, when, and for which subject token (see [`FAILURE_HOLD`]).
    failed: Mutex<Option<(Instant, ToolError, Option<Digest>)>>,
    fetch: tokio::sync::Mutex<()>,
    /// Token exchange: the credential of each caller, by caller name.
    callers: Mutex<std::collections::HashMap<String, ClientCredentials>>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let endpoint = match &self.0.client.endpoint {
            Endpoint::Fixed(url) => url.to_string(),
            Endpoint::Discover { server, .. } => format!("discovered from {server}"),
        };
        f.debug_struct("ClientCredentials")
            .field("owner", &self.0.client.owner)
            .field("token_url", &endpoint)
            .finish_non_exhaustive()
    }
}

/// `https://`, or `http://` to a loopback address: where a client secret may go.
pub(crate) fn secure(url: &Url) -> bool {
    url.scheme() == "https"
        || (url.scheme() == "http"
            && match url.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            })
}

/// Why `url` may not be a token endpoint, if it may not.
pub(crate) fn token_url_refusal(url: &Url) -> Option<String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Some("it holds a user name or password: give the credentials as `client_id` and `client_secret`".into());
    }
    if !secure(url) {
        let mut shown = url.clone();
        shown.set_query(None);
        return Some(format!(
            "{shown} is plain http: the client secret would cross the network unencrypted (https, or http only to a loopback address)"
        ));
    }
    None
}

impl ClientCredentials {
    /// Resolves the client id and secret or key (`${ENV}`, `${file:…}`) and the token
    /// endpoint: `config.token_url`, else `default_token_url` (an OpenAPI scheme's
    /// `tokenUrl`).
    ///
    /// `owner` names the upstream in messages, e.g. ``MCP server `tickets` ``.
    ///
    /// # Errors
    /// A message naming `owner`: no token endpoint, one that is not an absolute URL or is
    /// plain http to another host, an unset variable or unreadable file, no secret (or no key
    /// for `private_key_jwt`), a key that does not fit its algorithm.
    pub fn new(
        owner: &str,
        config: &OAuth2ClientCredentials,
        default_token_url: Option<&str>,
    ) -> Result<Self, String> {
        let url = config
            .token_url
            .as_deref()
            .or(default_token_url)
            .ok_or_else(|| format!("{owner}: oauth2: no `token_url` (and no security scheme of the source gives one)"))?;
        let token_url = Url::parse(url).map_err(|e| {
            format!(
                "{owner}: oauth2: the token URL `{}` is not an absolute URL: {e}",
                toolgate_model::text::cut(url, 200)
            )
        })?;
        if let Some(why) = token_url_refusal(&token_url) {
            return Err(format!("{owner}: oauth2: the token URL is refused: {why}"));
        }
        Self::with_endpoint(owner, config, Endpoint::Fixed(token_url))
    }

    /// Like [`ClientCredentials::new`], for the resource server at `server` (an MCP server's
    /// URL): without `config.token_url`, the token endpoint is discovered from the server's
    /// metadata on first use ([`discover`]).
    ///
    /// # Errors
    /// As [`ClientCredentials::new`]; `server` not a URL.
    pub fn for_resource_server(
        owner: &str,
        config: &OAuth2ClientCredentials,
        server: &str,
    ) -> Result<Self, String> {
        if config.token_url.is_some() {
            return Self::new(owner, config, None);
        }
        let server =
            Url::parse(server).map_err(|e| format!("{owner}: `{server}` is not a URL: {e}"))?;
        let found = Mutex::new(None);
        Self::with_endpoint(owner, config, Endpoint::Discover { server, found })
    }

    fn with_endpoint(
        owner: &str,
        config: &OAuth2ClientCredentials,
        endpoint: Endpoint,
    ) -> Result<Self, String> {
        let resolve = |what: &str, v: &Interpolated| {
            v.resolve_as(Field::Credential)
                .map_err(|e| format!("{owner}: oauth2 {what}: {e}"))
        };
        let client_id = resolve("client_id", &config.client_id)?;
        let secret = |config: &OAuth2ClientCredentials| {
            let v = config
                .client_secret
                .as_ref()
                .ok_or_else(|| format!("{owner}: oauth2: no `client_secret`"))?;
            let secret = resolve("client_secret", v)?;
            remember_basic(client_id.expose(), secret.expose());
            Ok::<_, String>(secret)
        };
        let proof = match config.client_auth {
            ClientAuth::Basic => Proof::Basic(secret(config)?),
            ClientAuth::Post => Proof::Post(secret(config)?),
            ClientAuth::PrivateKeyJwt => {
                let pem = config.private_key.as_ref().ok_or_else(|| {
                    format!("{owner}: oauth2: `client_auth: private_key_jwt` needs `private_key`")
                })?;
                let pem = resolve("private_key", pem)?;
                let name = config.signing_algorithm.as_deref().unwrap_or("RS256");
                let (key, algorithm) = grant::signing_key(pem.expose(), name)
                    .map_err(|e| format!("{owner}: oauth2 private_key ({name}): {e}"))?;
                Proof::Jwt {
                    key: Box::new(key),
                    algorithm,
                    audience: config.assertion_audience.clone(),
                }
            }
        };
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(TOKEN_TIMEOUT)
            .referer(false)
            .build()
            .map_err(|e| format!("{owner}: oauth2: cannot build an HTTP client: {e}"))?;
        let exchange = (config.grant == OAuth2Grant::TokenExchange).then(|| {
            config
                .subject_token_type
                .clone()
                .unwrap_or_else(|| toolgate_model::config::ACCESS_TOKEN_TYPE.to_string())
        });
        let client = Client {
            owner: owner.to_string(),
            endpoint,
            client_id,
            proof,
            scopes: config.scopes.clone(),
            resource: config.resource.clone(),
            audience: config.audience.clone(),
            http,
            exchange,
        };
        Ok(Self::with_client(
            Arc::new(client),
            None,
            format!("{owner} oauth2 access token"),
        ))
    }

    fn with_client(client: Arc<Client>, subject: Option<Secret>, slot: String) -> Self {
        Self(Arc::new(Inner {
            client,
            subject: subject.map(Mutex::new),
            slot,
            cached: Mutex::new(None),
            failed: Mutex::new(None),
            fetch: tokio::sync::Mutex::new(()),
            callers: Mutex::new(std::collections::HashMap::new()),
        }))
    }

    /// The upstream the token is for, as messages name it.
    pub fn owner(&self) -> &str {
        &self.0.client.owner
    }

    /// Sends a request with the current token (`send(token)`) and, when the upstream refuses
    /// it (`refused(&answer)`: HTTP 401), once more with a fresh one. The answer, and whether
    /// the fresh token was refused too (then [`ClientCredentials::refused_again`] says why).
    ///
    /// # Errors
    /// A token that cannot be had, as [`ClientCredentials::refresh`].
    #[cfg_attr(not(any(feature = "a2a", feature = "mcp")), allow(dead_code))]
    pub(crate) async fn send<R, Fut>(
        &self,
        send: impl Fn(Secret) -> Fut,
        refused: impl Fn(&R) -> bool,
    ) -> Result<(R, bool), ToolError>
    where
        Fut: std::future::Future<Output = R>,
    {
        let token = self.token().await?;
        let first = send(token.clone()).await;
        if !refused(&first) {
            return Ok((first, false));
        }
        tracing::debug!(owner = %self.0.client.owner, "HTTP 401: the request once more with a fresh OAuth2 token");
        let fresh = self.refresh(&token).await?;
        let second = send(fresh).await;
        let again = refused(&second);
        Ok((second, again))
    }

    /// The error for an upstream that refused a token fetched after its first refusal: the
    /// credentials work at the token endpoint but not there (scopes, `resource`, `audience`).
    pub fn refused_again(&self) -> ToolError {
        ToolError::permission_denied(format!(
            "{}: refused a fresh OAuth2 access token too (HTTP 401): the token is not good for it; check the client's `scopes`, `resource` or `audience`",
            self.0.client.owner
        ))
    }

    /// The token endpoint, when it is configured or already discovered.
    pub fn token_url(&self) -> Option<Url> {
        match &self.0.client.endpoint {
            Endpoint::Fixed(url) => Some(url.clone()),
            Endpoint::Discover { found, .. } => found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map(|f| f.token_url.clone()),
        }
    }

    /// The digest of the subject token a caller's credential exchanges now.
    fn subject_digest(&self) -> Option<Digest> {
        self.0.subject.as_ref().map(|s| {
            use sha2::Digest as _;
            let token = s.lock().unwrap_or_else(PoisonError::into_inner);
            sha2::Sha256::digest(token.expose().as_bytes()).into()
        })
    }

    fn fresh(&self) -> Option<Secret> {
        let subject = self.subject_digest();
        let guard = self.0.cached.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .filter(|c| Instant::now() < c.until && c.subject == subject)
            .map(|c| c.token.clone())
    }

    /// A valid access token: the cached one, or a new one from the token endpoint.
    ///
    /// # Errors
    /// See [`ClientCredentials::refresh`].
    pub async fn token(&self) -> Result<Secret, ToolError> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _single = self.0.fetch.lock().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        self.fetch().await
    }

    /// A new access token after an upstream refused `rejected` (HTTP 401): fetched unless
    /// another caller already replaced `rejected` with a token that is still fresh.
    ///
    /// # Errors
    /// A [`ToolError`] naming the owner and the token endpoint's host (never its path or
    /// query): `network` / `timeout` when the endpoint cannot be reached or does not answer
    /// within [`TOKEN_TIMEOUT`]; `permission_denied` when it refuses the client (HTTP 4xx,
    /// e.g. `invalid_client`); `rate_limited` (429, with its `Retry-After`) and `timeout`
    /// (408); `upstream` for an HTTP 5xx, a redirect, or a discovery that found nothing
    /// usable; `protocol` for an answer that is not a bearer token or passes 64 KiB. Within
    /// [`FAILURE_HOLD`] of a failure, that failure again.
    pub async fn refresh(&self, rejected: &Secret) -> Result<Secret, ToolError> {
        let _single = self.0.fetch.lock().await;
        if let Some(t) = self.fresh().filter(|t| t.expose() != rejected.expose()) {
            return Ok(t);
        }
        self.fetch().await
    }

    /// One token request (the caller holds `fetch`), unless one failed a moment ago (for the
    /// same subject token).
    async fn fetch(&self) -> Result<Secret, ToolError> {
        let inner = &*self.0;
        let subject = self.subject_digest();
        if let Some((at, e, for_subject)) = inner
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && at.elapsed() < FAILURE_HOLD
            && *for_subject == subject
        {
            return Err(e.clone());
        }
        let result = self.request(subject).await;
        let mut failed = inner.failed.lock().unwrap_or_else(PoisonError::into_inner);
        match &result {
            Ok(_) => *failed = None,
            Err(e) => *failed = Some((Instant::now(), e.clone(), subject)),
        }
        result
    }

    async fn request(&self, digest: Option<Digest>) -> Result<Secret, ToolError> {
        let inner = &*self.0;
        let client = &*inner.client;
        let (token_url, discovered) = match &client.endpoint {
            Endpoint::Fixed(url) => (url.clone(), None),
            Endpoint::Discover { server, found } => {
                let known = found.lock().unwrap_or_else(PoisonError::into_inner).clone();
                let f = match known {
                    Some(f) => f,
                    None => {
                        let f = discover::discover(&client.http, server, &client.owner).await?;
                        *found.lock().unwrap_or_else(PoisonError::into_inner) = Some(f.clone());
                        f
                    }
                };
                (f.token_url.clone(), Some(f))
            }
        };
        let subject_token = inner
            .subject
            .as_ref()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).clone());
        let ask = Ask {
            owner: &client.owner,
            subject: subject_token
                .as_ref()
                .zip(client.exchange.as_deref())
                .map(|(token, token_type)| grant::Subject { token, token_type }),
            client_id: &client.client_id,
            proof: &client.proof,
            scopes: &client.scopes,
            resource: client
                .resource
                .clone()
                .or_else(|| discovered.as_ref().map(|f| f.resource.clone())),
            audience: client.audience.as_deref(),
            issuer: discovered.as_ref().map(|f| f.issuer.as_str()),
        };
        let granted = grant::request(&client.http, &token_url, &ask).await?;
        let lifetime = granted.expires_in;
        let lifetime = (lifetime - EXPIRY_MARGIN.min(lifetime / 2)).max(MIN_LIFETIME);
        secrets::remember_as(&inner.slot, granted.token.expose());
        tracing::debug!(owner = %client.owner, host = %token_url.host_str().unwrap_or_default(), lifetime_s = lifetime.as_secs(), exchanged = ask.subject.is_some(), "OAuth2 access token fetched");
        *inner.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some(Cached {
            token: granted.token.clone(),
            until: Instant::now() + lifetime,
            subject: digest,
        });
        Ok(granted.token)
    }
}

/// Remembers the base64 (standard alphabet) of `user:password` as a secret, both as is and
/// form-encoded (an upstream may echo the header it was sent).
pub(crate) fn remember_basic(user: &str, password: &str) {
    secrets::remember(
        &base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")),
    );
    secrets::remember(&grant::basic_pair(user, password));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(v: serde_json::Value) -> OAuth2ClientCredentials {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_missing_token_url_names_the_owner() {
        let c = config(serde_json::json!({"client_id": "a", "client_secret": "b"}));
        let e = ClientCredentials::new("MCP server `t`", &c, None).unwrap_err();
        assert!(
            e.starts_with("MCP server `t`: oauth2: no `token_url`"),
            "{e}"
        );
        let ok = ClientCredentials::new("MCP server `t`", &c, Some("https://idp/token"));
        let ok = ok.unwrap().token_url().map(|u| u.to_string());
        assert_eq!(ok.as_deref(), Some("https://idp/token"));
    }

    #[test]
    fn a_token_url_must_be_https_or_loopback_without_credentials_in_it() {
        let c = config(serde_json::json!({"client_id": "a", "client_secret": "b"}));
        for (url, refused) in [
            ("http://127.0.0.1:9/token", false),
            ("https://idp.example.com/token", false),
            ("http://idp.example.com/token", true),
            ("http://u:pw-9f2@127.0.0.1/token", true),
            ("/relative/token", true),
        ] {
            let got = ClientCredentials::new("source `s`", &c, Some(url));
            assert_eq!(got.is_err(), refused, "{url}: {got:?}");
            if let Err(e) = got {
                assert!(!e.contains("pw-9f2"), "{e}");
            }
        }
    }
}
