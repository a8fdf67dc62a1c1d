//! OAuth 2.0 client credentials (RFC 6749 §4.4) for upstream requests: OpenAPI sources, A2A
//! agents and MCP servers over HTTP get their access token here.
//!
//! * The client authenticates to the token endpoint with HTTP Basic (`client_secret_basic`,
//!   the id and secret form-encoded first, RFC 6749 §2.3.1) or with both in the form body
//!   (`client_secret_post`); `scope`, `resource` (RFC 8707) and `audience` are sent when set.
//! * The token is cached until 30 s before its `expires_in` (at most half its lifetime before;
//!   an hour when the answer gives none), so no expired token is sent; concurrent callers
//!   wait for one fetch.
//! * An upstream that answers HTTP 401 gets one more try with a fresh token
//!   ([`ClientCredentials::refresh`]); a token that other callers already replaced is not
//!   fetched again.
//! * Every token request has a deadline ([`TOKEN_TIMEOUT`]).
//! * Without a `token_url`, an MCP server's token endpoint is discovered as the MCP
//!   authorization specification describes ([`discover`]): its protected resource metadata
//!   (RFC 9728) names the authorization server, whose metadata (RFC 8414, or OpenID Connect
//!   discovery) names the token endpoint; the resource the metadata names is then sent as
//!   `resource` unless one is configured.
//!
//! Secrets: the client id and secret are resolved as credentials and remembered process-wide
//! ([`toolgate_model::secrets`]), with the base64 of the Basic pair; each access token is
//! remembered when it is fetched (replacing the one it refreshes), so no error, result or log
//! line shows any of them, even when an upstream or the token endpoint echoes them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::Url;
use toolgate_model::config::{ClientAuth, Interpolated, OAuth2ClientCredentials, Secret};
use toolgate_model::secrets::{self, Field};

use crate::{ErrorKind, ToolError};

pub(crate) mod discover;

/// How long before `expires_in` a cached token is replaced (at most half the lifetime).
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// How long a token without `expires_in` is kept (a 401 replaces it sooner).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
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

/// The longest one token request may take, connect to last byte.
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes read of a token endpoint's answer.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// An OAuth2 client's credentials and its cached access token. Cloning shares the cache.
///
/// Made from the `oauth2:` of a tools.yaml entry ([`ClientCredentials::new`]); its `Debug`
/// shows the token endpoint only.
#[derive(Clone)]
pub struct ClientCredentials(Arc<Inner>);

struct Inner {
    /// Who the token is for, as error messages name it (`MCP server `tickets``).
    owner: String,
    endpoint: Endpoint,
    client_id: Secret,
    client_secret: Secret,
    client_auth: ClientAuth,
    scopes: Vec<String>,
    resource: Option<String>,
    audience: Option<String>,
    /// Where the current access token is remembered ([`secrets::remember_as`]).
    slot: String,
    cached: Mutex<Option<(Secret, Instant)>>,
    fetch: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let endpoint = match &self.0.endpoint {
            Endpoint::Fixed(url) => url.to_string(),
            Endpoint::Discover { server, .. } => format!("discovered from {server}"),
        };
        f.debug_struct("ClientCredentials")
            .field("owner", &self.0.owner)
            .field("token_url", &endpoint)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// Resolves the client id and secret (`${ENV}`, `${file:…}`) and the token endpoint:
    /// `config.token_url`, else `default_token_url` (an OpenAPI scheme's `tokenUrl`).
    ///
    /// `owner` names the upstream in messages, e.g. ``MCP server `tickets` ``.
    ///
    /// # Errors
    /// A message naming `owner`: no token endpoint, one that is not a URL, an unset variable
    /// or unreadable file in the id or secret.
    pub fn new(
        owner: &str,
        config: &OAuth2ClientCredentials,
        default_token_url: Option<&str>,
    ) -> Result<Self, String> {
        let url = config
            .token_url
            .as_deref()
            .or(default_token_url)
            .ok_or_else(|| format!("{owner}: oauth2: no token_url (and the scheme gives none)"))?;
        let token_url = Url::parse(url)
            .map_err(|e| format!("{owner}: oauth2: token_url `{url}` is not a URL: {e}"))?;
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
        let client_secret = resolve("client_secret", &config.client_secret)?;
        remember_basic(client_id.expose(), client_secret.expose());
        Ok(Self(Arc::new(Inner {
            slot: format!("{owner} oauth2 access token"),
            owner: owner.to_string(),
            endpoint,
            client_id,
            client_secret,
            client_auth: config.client_auth,
            scopes: config.scopes.clone(),
            resource: config.resource.clone(),
            audience: config.audience.clone(),
            cached: Mutex::new(None),
            fetch: tokio::sync::Mutex::new(()),
        })))
    }

    /// The token endpoint, when it is configured or already discovered.
    pub fn token_url(&self) -> Option<Url> {
        match &self.0.endpoint {
            Endpoint::Fixed(url) => Some(url.clone()),
            Endpoint::Discover { found, .. } => found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map(|f| f.token_url.clone()),
        }
    }

    /// The token endpoint and the resource discovery found (if it was discovered).
    async fn endpoint(&self, client: &reqwest::Client) -> Result<(Url, Option<String>), ToolError> {
        let (server, found) = match &self.0.endpoint {
            Endpoint::Fixed(url) => return Ok((url.clone(), None)),
            Endpoint::Discover { server, found } => (server, found),
        };
        if let Some(f) = found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            return Ok((f.token_url.clone(), Some(f.resource.clone())));
        }
        let f = discover::discover(client, server, &self.0.owner).await?;
        let out = (f.token_url.clone(), Some(f.resource.clone()));
        *found.lock().unwrap_or_else(PoisonError::into_inner) = Some(f);
        Ok(out)
    }

    fn fresh(&self) -> Option<Secret> {
        let guard = self.0.cached.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(t, _)| t.clone())
    }

    /// A valid access token: the cached one, or a new one from the token endpoint.
    ///
    /// # Errors
    /// See [`ClientCredentials::refresh`].
    pub async fn token(&self, client: &reqwest::Client) -> Result<Secret, ToolError> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _single = self.0.fetch.lock().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        self.fetch(client).await
    }

    /// A new access token after an upstream refused `rejected` (HTTP 401): fetched unless
    /// another caller already replaced `rejected` with a token that is still fresh.
    ///
    /// # Errors
    /// A [`ToolError`] naming the owner and the token endpoint's host (never its path or
    /// query): `network` / `timeout` when the endpoint cannot be reached within
    /// [`TOKEN_TIMEOUT`]; `permission_denied` when it refuses the client (HTTP 4xx, e.g.
    /// `invalid_client`); `upstream` for an HTTP 5xx; `protocol` for an answer that is not a
    /// token.
    pub async fn refresh(
        &self,
        client: &reqwest::Client,
        rejected: &Secret,
    ) -> Result<Secret, ToolError> {
        let _single = self.0.fetch.lock().await;
        if let Some(t) = self.fresh().filter(|t| t.expose() != rejected.expose()) {
            return Ok(t);
        }
        self.fetch(client).await
    }

    /// One token request; the caller holds `fetch`.
    async fn fetch(&self, client: &reqwest::Client) -> Result<Secret, ToolError> {
        let inner = &*self.0;
        let (token_url, discovered) = self.endpoint(client).await?;
        let host = token_url.host_str().unwrap_or_default().to_string();
        let owner = &inner.owner;
        let mut form = vec![("grant_type", "client_credentials".to_string())];
        if !inner.scopes.is_empty() {
            form.push(("scope", inner.scopes.join(" ")));
        }
        if let Some(resource) = inner.resource.clone().or(discovered) {
            form.push(("resource", resource));
        }
        if let Some(audience) = &inner.audience {
            form.push(("audience", audience.clone()));
        }
        let mut request = client
            .post(token_url)
            .timeout(TOKEN_TIMEOUT)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json");
        match inner.client_auth {
            ClientAuth::Basic => {
                let pair = basic_pair(inner.client_id.expose(), inner.client_secret.expose());
                request = request.header("Authorization", format!("Basic {pair}"));
            }
            ClientAuth::Post => {
                form.push(("client_id", inner.client_id.expose().to_string()));
                form.push(("client_secret", inner.client_secret.expose().to_string()));
            }
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let context = || format!("{owner}: OAuth2 token request to `{host}`");
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| super::network_error(&e, &host).with_context(context()))?;
        let status = response.status();
        let body = read_capped(response).await;
        if !status.is_success() {
            let kind = if status.is_server_error() {
                ErrorKind::Upstream
            } else {
                ErrorKind::PermissionDenied
            };
            return Err(ToolError::new(
                kind,
                format!(
                    "{}: HTTP {status}: {}",
                    context(),
                    toolgate_model::text::cut_bytes(&String::from_utf8_lossy(&body), 512)
                ),
            ));
        }
        #[derive(serde::Deserialize)]
        struct TokenResponse {
            access_token: String,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        let parsed: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
            ToolError::new(
                ErrorKind::Protocol,
                format!("{}: the answer is not a token: {e}", context()),
            )
        })?;
        if parsed.access_token.is_empty() {
            return Err(ToolError::new(
                ErrorKind::Protocol,
                format!("{}: the answer's `access_token` is empty", context()),
            ));
        }
        let lifetime = parsed
            .expires_in
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        let lifetime = lifetime - EXPIRY_MARGIN.min(lifetime / 2);
        secrets::remember_as(&inner.slot, &parsed.access_token);
        let token = Secret::new(parsed.access_token);
        tracing::debug!(owner = %owner, host = %host, lifetime_s = lifetime.as_secs(), "OAuth2 access token fetched");
        *inner.cached.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((token.clone(), Instant::now() + lifetime));
        Ok(token)
    }
}

/// At most [`MAX_TOKEN_RESPONSE`] bytes of the body (a token endpoint that streams forever
/// cannot fill memory; the request's timeout ends it).
async fn read_capped(mut response: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        out.extend_from_slice(&chunk);
        if out.len() > MAX_TOKEN_RESPONSE {
            out.truncate(MAX_TOKEN_RESPONSE);
            break;
        }
    }
    out
}

/// What a form value keeps as is: the unreserved characters of RFC 3986 §2.3. A space becomes
/// `%20`, which form decoders and plain percent-decoders (some token endpoints decode the Basic
/// pair so) both read back.
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `v` encoded for an `application/x-www-form-urlencoded` body (RFC 6749 Appendix B).
fn form_encode(v: &str) -> String {
    percent_encoding::utf8_percent_encode(v, FORM).to_string()
}

/// `base64(form(id) ":" form(secret))`, the Basic credentials of RFC 6749 §2.3.1.
fn basic_pair(id: &str, secret: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        form_encode(id),
        form_encode(secret)
    ))
}

/// Remembers the base64 (standard alphabet) of `user:password` as a secret, both as is and
/// form-encoded (an upstream may echo the header it was sent).
pub(crate) fn remember_basic(user: &str, password: &str) {
    secrets::remember(
        &base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")),
    );
    secrets::remember(&basic_pair(user, password));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basic_pair_form_encodes_id_and_secret_first() {
        // RFC 6749 §2.3.1: the id and secret are form-encoded before base64 (a space as
        // `%20`, a colon as `%3A`: the colon between them is the only one left).
        let pair = basic_pair("my client", "s:cret");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(pair)
            .unwrap();
        assert_eq!(decoded, b"my%20client:s%3Acret");
    }

    #[test]
    fn a_missing_token_url_names_the_owner() {
        let config: OAuth2ClientCredentials =
            serde_json::from_value(serde_json::json!({"client_id": "a", "client_secret": "b"}))
                .unwrap();
        let e = ClientCredentials::new("MCP server `t`", &config, None).unwrap_err();
        assert!(e.starts_with("MCP server `t`: oauth2: no token_url"), "{e}");
        let ok = ClientCredentials::new("MCP server `t`", &config, Some("https://idp/token"));
        let ok = ok.unwrap().token_url().map(|u| u.to_string());
        assert_eq!(ok.as_deref(), Some("https://idp/token"));
    }
}
