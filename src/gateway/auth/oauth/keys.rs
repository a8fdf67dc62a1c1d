//! An issuer's signing keys: found through its metadata (OpenID Connect Discovery 1.0 §4,
//! RFC 8414 §3), read from its JWKS (RFC 7517 §5), cached.
//!
//! - The keys are fetched on the first token of the issuer, not at start-up (an identity
//!   provider that is down then does not stop the gateway).
//! - A token naming a key the cache does not hold causes one new fetch (key rotation), at most
//!   once per `min_refresh` whatever the tokens say (a stream of made-up `kid`s cannot make the
//!   gateway hammer the provider); concurrent requests share one fetch. So does a signature
//!   that does not verify with the key of its `kid` (a provider that made a new key under an
//!   old `kid`).
//! - A fetch (metadata and JWKS together) has one deadline, and a request waits at most that
//!   long for a fetch to end; a provider that never answers delays no request by more.
//! - The keys are fetched again after [`MAX_AGE`], in the background: a key held is used at
//!   once. When a fetch fails (or gives no usable key) the keys held stay in use, for at most
//!   [`MAX_STALE`] (the provider briefly down does not lock callers out); a request that needs
//!   a key the gateway does not have then gets `503`.
//! - A metadata document or JWKS over [`MAX_BYTES`] is refused; symmetric (`oct`) keys and keys
//!   not for signatures are ignored; at most [`MAX_KEYS`] keys are kept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use tokio::sync::{Mutex, RwLock};
use toolgate_model::config::IssuerConfig;

use super::{FetchLimits, TokenError};

/// How long fetched keys are used before they are fetched again.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// How long keys are used at most when no new fetch works: past it the issuer's tokens get
/// `503` (a provider down for a day may have withdrawn them).
const MAX_STALE: Duration = Duration::from_secs(24 * 3600);

/// The largest metadata document or JWKS read, in bytes.
const MAX_BYTES: usize = 1 << 20;

/// The most keys kept of one JWKS.
const MAX_KEYS: usize = 5_000;

#[derive(Clone)]
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
}

#[derive(Default)]
struct Cache {
    keys: Vec<Key>,
    /// When the keys were last fetched successfully.
    fetched: Option<Instant>,
    /// How many times keys were fetched successfully (a request that tried a key can tell
    /// whether the keys changed since).
    generation: u64,
    /// When a fetch was last tried, and what went wrong if it failed.
    tried: Option<(Instant, Option<String>)>,
    /// The JWKS URL, once read from the metadata.
    jwks_uri: Option<String>,
}

/// The keys of one issuer.
pub(super) struct KeySet {
    shared: Arc<Shared>,
}

struct Shared {
    issuer: String,
    discovery: Vec<String>,
    client: reqwest::Client,
    limits: FetchLimits,
    cache: RwLock<Cache>,
    /// Held while a fetch runs: one fetch at a time.
    fetching: Arc<Mutex<()>>,
}

impl KeySet {
    pub(super) fn new(config: &IssuerConfig, client: reqwest::Client, limits: FetchLimits) -> Self {
        let discovery = match &config.discovery_url {
            Some(url) => vec![url.clone()],
            None => discovery_urls(&config.issuer),
        };
        Self {
            shared: Arc::new(Shared {
                issuer: config.issuer.clone(),
                discovery,
                client,
                limits,
                cache: RwLock::new(Cache {
                    jwks_uri: config.jwks_uri.clone(),
                    ..Cache::default()
                }),
                fetching: Arc::new(Mutex::new(())),
            }),
        }
    }

    /// The key for a token with `kid` (or none) signed with `alg`.
    ///
    /// A key the cache holds is used at once, even past [`MAX_AGE`] (the fetch then runs in
    /// the background). Otherwise the JWKS is fetched (if the last fetch is older than
    /// `min_refresh`), and this waits at most the fetch deadline for it.
    ///
    /// # Errors
    /// `Invalid` when the issuer has no such key (after a fetch, if one was due);
    /// `Unavailable` when no key could ever be fetched.
    pub(super) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<(DecodingKey, u64), TokenError> {
        let shared = &self.shared;
        {
            let cache = shared.cache.read().await;
            if let Some(key) = cache.usable(kid, alg)? {
                if cache.fetched.is_none_or(|t| t.elapsed() >= MAX_AGE) {
                    drop(cache);
                    self.refresh_in_background();
                }
                return Ok(key);
            }
        }
        self.refresh().await;
        let cache = shared.cache.read().await;
        if cache.keys.is_empty() || cache.too_old() {
            let why = match &cache.tried {
                Some((_, Some(e))) => e.clone(),
                Some((_, None)) => "its JWKS holds no signing key".into(),
                None => "a fetch of its keys is still under way".into(),
            };
            // The reason (URLs, errors) is in the gateway's log; the caller learns which
            // issuer, and that it may try again.
            tracing::debug!(issuer = %shared.issuer, reason = %why, "a token's issuer has no keys to check it with");
            return Err(TokenError::Unavailable(format!(
                "the keys of issuer `{}` cannot be had now ({}); try again later",
                shared.issuer,
                if cache.tried.is_none() {
                    "a fetch is under way"
                } else {
                    "its JWKS could not be fetched or holds no usable key: the gateway's log says why"
                }
            )));
        }
        cache.usable(kid, alg)?.ok_or_else(|| {
            TokenError::Invalid(match kid {
                Some(kid) => format!(
                    "issuer `{}` has no key `{}` in its JWKS",
                    shared.issuer,
                    super::cut(kid)
                ),
                None => format!("issuer `{}` has no key for this token", shared.issuer),
            })
        })
    }

    /// The count of successful fetches so far (see [`key`](Self::key)).
    pub(super) async fn generation(&self) -> u64 {
        self.shared.cache.read().await.generation
    }

    /// Fetches the JWKS again if the last fetch is older than `min_refresh`, waiting at most
    /// the fetch deadline (for the fetch, or for another request's fetch to end).
    pub(super) async fn refresh(&self) {
        let shared = &self.shared;
        let deadline = shared.limits.timeout;
        let Ok(_one) = tokio::time::timeout(deadline, shared.fetching.lock()).await else {
            return;
        };
        if shared.due().await {
            shared.fetch_into_cache().await;
        }
    }

    /// Starts a fetch in the background, unless one runs or the last is recent.
    fn refresh_in_background(&self) {
        let due = self.shared.cache.try_read().is_ok_and(|cache| {
            cache
                .tried
                .as_ref()
                .is_none_or(|(t, _)| t.elapsed() >= self.shared.limits.min_refresh)
        });
        if !due {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let Ok(one) = Arc::clone(&shared.fetching).try_lock_owned() else {
            return;
        };
        tokio::spawn(async move {
            let _one = one;
            if shared.due().await {
                shared.fetch_into_cache().await;
            }
        });
    }
}

impl Cache {
    /// Whether the keys were last fetched longer ago than [`MAX_STALE`]: then they are not
    /// used any more.
    fn too_old(&self) -> bool {
        self.fetched.is_none_or(|t| t.elapsed() >= MAX_STALE)
    }

    /// The key for `kid` and `alg` and the keys' generation, unless the keys are too old.
    fn usable(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<(DecodingKey, u64)>, TokenError> {
        if self.too_old() {
            return Ok(None);
        }
        Ok(pick(&self.keys, kid, alg)?.map(|k| (k, self.generation)))
    }
}

impl Shared {
    /// Whether the last fetch (whether it worked or not) is older than `min_refresh`.
    async fn due(&self) -> bool {
        self.cache
            .read()
            .await
            .tried
            .as_ref()
            .is_none_or(|(t, _)| t.elapsed() >= self.limits.min_refresh)
    }

    /// One fetch, within the fetch deadline as a whole (metadata and JWKS together); the
    /// cache updated with its keys, or with its error (the keys held are kept). Returns
    /// whether it worked.
    async fn fetch_into_cache(&self) -> bool {
        let result = tokio::time::timeout(self.limits.timeout, self.fetch())
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no keys within {} ms",
                    self.limits.timeout.as_millis()
                ))
            });
        let mut cache = self.cache.write().await;
        match result {
            Ok((keys, _)) if keys.is_empty() => {
                let e = "its JWKS holds no signing key the gateway can use".to_string();
                tracing::warn!(issuer = %self.issuer, error = %e, "the issuer's keys could not be fetched");
                cache.tried = Some((Instant::now(), Some(e)));
                false
            }
            Ok((keys, jwks_uri)) => {
                cache.generation += 1;
                cache.keys = keys;
                cache.jwks_uri = Some(jwks_uri);
                cache.fetched = Some(Instant::now());
                cache.tried = Some((Instant::now(), None));
                true
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "the issuer's keys could not be fetched");
                cache.tried = Some((Instant::now(), Some(e)));
                false
            }
        }
    }

    /// Reads the JWKS (through the metadata the first time, unless configured), with the
    /// fetch deadline on each request.
    async fn fetch(&self) -> Result<(Vec<Key>, String), String> {
        let known = self.cache.read().await.jwks_uri.clone();
        let jwks_uri = match known {
            Some(uri) => uri,
            None => self.discover().await?,
        };
        let jwks = self.get_json(&jwks_uri).await?;
        let keys = parse_jwks(&jwks).map_err(|e| format!("its JWKS at {jwks_uri}: {e}"))?;
        Ok((keys, jwks_uri))
    }

    /// The `jwks_uri` of the issuer's metadata: the first discovery URL that answers with
    /// metadata of this issuer (its `issuer` must be exactly the configured one: RFC 8414
    /// §3.3, OpenID Connect Discovery §4.3).
    async fn discover(&self) -> Result<String, String> {
        let mut errors = Vec::new();
        for url in &self.discovery {
            match self.get_json(url).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                        errors.push(format!(
                            "{url}: its `issuer` is not `{}` (RFC 8414 §3.3)",
                            self.issuer
                        ));
                        continue;
                    }
                    let Some(jwks_uri) = doc.get("jwks_uri").and_then(Value::as_str) else {
                        return Err(format!("{url}: no `jwks_uri`"));
                    };
                    if !secure_url(jwks_uri) {
                        return Err(format!(
                            "{url}: its `jwks_uri` is not https (keys over plain http could be swapped on the way)"
                        ));
                    }
                    return Ok(jwks_uri.to_owned());
                }
                Err(e) => errors.push(e),
            }
        }
        Err(errors.join("; "))
    }

    /// A JSON document, within the fetch deadline and [`MAX_BYTES`].
    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let read = async {
            let mut response = self
                .client
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| format!("{url}: {}", describe(e)))?;
            if !response.status().is_success() {
                return Err(format!("{url}: HTTP {}", response.status().as_u16()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| format!("{url}: {}", describe(e)))?
            {
                if body.len() + chunk.len() > MAX_BYTES {
                    return Err(format!(
                        "{url}: the answer is larger than {MAX_BYTES} bytes"
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
        };
        tokio::time::timeout(self.limits.timeout, read)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "{url}: no answer within {} ms",
                    self.limits.timeout.as_millis()
                ))
            })
    }
}

/// What went wrong with a request, without the URL reqwest puts in its message.
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else if e.is_redirect() {
        "too many redirects".into()
    } else {
        e.without_url().to_string()
    }
}

/// Where an issuer's metadata may be: OpenID Connect Discovery §4 (`/.well-known/openid-configuration`
/// appended), then RFC 8414 §3.1 (`/.well-known/oauth-authorization-server` inserted before the
/// path).
fn discovery_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let mut urls = vec![format!("{trimmed}/.well-known/openid-configuration")];
    if let Ok(url) = reqwest::Url::parse(issuer) {
        let path = url.path().trim_end_matches('/');
        let mut origin = url.clone();
        origin.set_path("");
        origin.set_query(None);
        urls.push(format!(
            "{}/.well-known/oauth-authorization-server{path}",
            origin.as_str().trim_end_matches('/')
        ));
    }
    urls
}

/// The signing keys of a JWKS; keys of unknown or symmetric types, and keys whose `use` is not
/// `sig`, are skipped.
fn parse_jwks(jwks: &Value) -> Result<Vec<Key>, String> {
    let Some(items) = jwks.get("keys").and_then(Value::as_array) else {
        return Err("no `keys` array (RFC 7517 §5)".into());
    };
    let keys: Vec<Key> = items
        .iter()
        .filter(|k| k.get("kty").and_then(Value::as_str) != Some("oct"))
        .filter(|k| {
            k.get("use")
                .and_then(Value::as_str)
                .is_none_or(|u| u == "sig")
        })
        .filter_map(|k| {
            let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(k.clone()).ok()?;
            // A key whose `alg` is no signing algorithm (`RSA-OAEP`) is not for tokens.
            let alg = match jwk.common.key_algorithm {
                Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
                None => None,
            };
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            })
        })
        .take(MAX_KEYS)
        .collect();
    Ok(keys)
}

/// The key for `kid` and `alg`: the key of that `kid` (whose `alg`, if it says one, must be
/// `alg`); without a `kid`, the only key that may be used with `alg`.
fn pick(
    keys: &[Key],
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Option<DecodingKey>, TokenError> {
    let fits = |k: &&Key| k.alg.is_none_or(|a| a == alg) && k.key.family() == alg.family();
    match kid {
        Some(kid) => {
            let mut named = keys
                .iter()
                .filter(|k| k.kid.as_deref() == Some(kid))
                .peekable();
            if named.peek().is_none() {
                return Ok(None);
            }
            if let Some(key) = named.find(fits) {
                Ok(Some(key.key.clone()))
            } else {
                Err(TokenError::Invalid(format!(
                    "key `{}` is not for algorithm `{alg:?}`",
                    super::cut(kid)
                )))
            }
        }
        None => {
            let mut usable = keys.iter().filter(fits);
            match (usable.next(), usable.next()) {
                (Some(key), None) => Ok(Some(key.key.clone())),
                (Some(_), Some(_)) => Err(TokenError::Invalid(
                    "the token names no key (`kid`) and the issuer has several".into(),
                )),
                (None, _) => Ok(None),
            }
        }
    }
}

/// Whether keys may be read from `url`: `https`, or `http` to a loopback address (a provider on
/// the same host, as in tests). Over plain http to anywhere else, anyone on the path could
/// swap the keys and sign tokens for any caller.
pub(super) fn secure_url(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => url.host_str().is_some_and(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }),
        _ => false,
    }
}
