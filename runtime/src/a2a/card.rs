//! Agent card discovery (A2A 1.0 §8 "Agent Discovery"; 0.3 §5) and the card as toolgate reads
//! it.
//!
//! * **Where**: an explicit `card_url`, or under the agent's `url`
//!   `/.well-known/agent-card.json` (1.0 and 0.3) and then `/.well-known/agent.json` (the 0.2
//!   name). Only a 404 or 410 moves on to the next path: a 401/403 stops and is reported as an
//!   authentication problem, anything else as what it is. The path that worked is logged and
//!   shown in the source's status.
//! * **Caching**: the card's `ETag` / `Last-Modified` are sent back (`If-None-Match`,
//!   `If-Modified-Since`); a 304 keeps the card. While `Cache-Control: max-age` has not passed,
//!   the card is not fetched again at all.
//! * **Version and endpoint**: a card with `supportedInterfaces` is A2A 1.0; the first
//!   `JSONRPC` interface is used, and its `protocolVersion` picks 1.0 or 0.3. A card with a
//!   top-level `url` and `protocolVersion` is 0.3 (0.2.x cards are read the same way); its
//!   `preferredTransport` must be `JSONRPC`, or one of its `additionalInterfaces` must be. Calls
//!   go to that URL, never to the discovery base.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{
    CACHE_CONTROL, ETAG, HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED,
};
use serde_json::Value;

use super::rpc::{read_limited, root_cause};
use super::wire::{Version, excerpt};
use crate::{ErrorKind, ToolError};

/// An agent card, read.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The agent's own version string, if any.
    pub agent_version: Option<String>,
    /// The protocol spoken at [`rpc_url`](Self::rpc_url).
    pub version: Version,
    /// The protocol version as the card states it (`1.0`, `0.3.0`, `0.2.5`).
    pub protocol_version: String,
    /// The JSON-RPC endpoint.
    pub rpc_url: String,
    /// `capabilities.streaming`.
    pub streaming: bool,
    /// The agent serves an authenticated extended card (1.0 `capabilities.extendedAgentCard`,
    /// 0.3 `supportsAuthenticatedExtendedCard`).
    pub extended_card: bool,
    /// The skills, in card order.
    pub skills: Vec<Skill>,
    /// `securitySchemes`, by name.
    pub security_schemes: BTreeMap<String, SecurityScheme>,
}

/// One skill on a card.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skill {
    /// Its id (the tool is `{source}.{id}`).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Example requests.
    pub examples: Vec<String>,
}

/// Where a security scheme of the card wants its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityScheme {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `Authorization: Basic …`.
    Basic,
    /// An API key in a header, the query or a cookie.
    ApiKey {
        /// `header`, `query` or `cookie`.
        location: String,
        /// The header, parameter or cookie name.
        name: String,
    },
    /// Something toolgate cannot send by itself (OAuth2 flows, OpenID Connect, mTLS).
    Other(String),
}

impl AgentCard {
    /// Reads a card (`what` names where it came from, for errors).
    ///
    /// # Errors
    /// A message naming what the card lacks: a name, a JSON-RPC interface, a readable skill.
    pub fn parse(v: &Value, what: &str) -> Result<Self, String> {
        let s = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let name = s("name").ok_or_else(|| format!("the agent card at {what} has no `name`"))?;
        let (version, protocol_version, rpc_url) = endpoint(v, what)?;
        let caps = v.get("capabilities").unwrap_or(&Value::Null);
        let flag = |o: &Value, key: &str| o.get(key).and_then(Value::as_bool).unwrap_or(false);
        let skills = match v.get("skills") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, sk)| {
                    skill(sk).ok_or_else(|| {
                        format!("skill {i} of the agent card at {what} has no string `id`")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(format!(
                    "`skills` of the agent card at {what} is not an array"
                ));
            }
        };
        let security_schemes = v
            .get("securitySchemes")
            .and_then(Value::as_object)
            .map(|o| o.iter().map(|(k, s)| (k.clone(), scheme(s))).collect())
            .unwrap_or_default();
        Ok(Self {
            name,
            description: s("description").unwrap_or_default(),
            agent_version: s("version"),
            version,
            protocol_version,
            rpc_url,
            streaming: flag(caps, "streaming"),
            extended_card: flag(caps, "extendedAgentCard")
                || flag(v, "supportsAuthenticatedExtendedCard"),
            skills,
            security_schemes,
        })
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn skill(v: &Value) -> Option<Skill> {
    let s = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let id = s("id")?;
    Some(Skill {
        name: s("name").unwrap_or_else(|| id.clone()),
        id,
        description: s("description").unwrap_or_default(),
        tags: strings(v.get("tags")),
        examples: strings(v.get("examples")),
    })
}

fn scheme(v: &Value) -> SecurityScheme {
    // 1.0: one field naming the kind; 0.3: OpenAPI-like `type`.
    let http = v
        .get("httpAuthSecurityScheme")
        .or_else(|| (v.get("type").and_then(Value::as_str) == Some("http")).then_some(v));
    if let Some(h) = http {
        let scheme = h.get("scheme").and_then(Value::as_str).unwrap_or("");
        return match scheme.to_ascii_lowercase().as_str() {
            "bearer" => SecurityScheme::Bearer,
            "basic" => SecurityScheme::Basic,
            other => SecurityScheme::Other(format!("http {other}")),
        };
    }
    let key = v
        .get("apiKeySecurityScheme")
        .or_else(|| (v.get("type").and_then(Value::as_str) == Some("apiKey")).then_some(v));
    if let Some(k) = key {
        let location = k
            .get("location")
            .or_else(|| k.get("in"))
            .and_then(Value::as_str)
            .unwrap_or("header")
            .to_ascii_lowercase();
        let name = k
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        return SecurityScheme::ApiKey { location, name };
    }
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| v.as_object().and_then(|o| o.keys().next().cloned()))
        .unwrap_or_else(|| "unknown".to_string());
    SecurityScheme::Other(kind)
}

fn is_jsonrpc(binding: Option<&str>) -> bool {
    binding.is_some_and(|b| b.eq_ignore_ascii_case("JSONRPC") || b.eq_ignore_ascii_case("JSON-RPC"))
}

fn version_of(protocol_version: &str) -> Version {
    if protocol_version.starts_with("0.") {
        Version::V03
    } else {
        Version::V1
    }
}

/// The JSON-RPC endpoint a card names, and the protocol spoken there.
fn endpoint(v: &Value, what: &str) -> Result<(Version, String, String), String> {
    if let Some(interfaces) = v.get("supportedInterfaces").and_then(Value::as_array) {
        let offered: Vec<&str> = interfaces
            .iter()
            .filter_map(|i| i.get("protocolBinding").and_then(Value::as_str))
            .collect();
        let rpc = interfaces.iter().find(|i| {
            is_jsonrpc(i.get("protocolBinding").and_then(Value::as_str))
                && i.get("url").and_then(Value::as_str).is_some()
        });
        let Some(rpc) = rpc else {
            return Err(format!(
                "the agent card at {what} offers no JSON-RPC interface (only: {}); toolgate speaks A2A over JSON-RPC",
                offered.join(", ")
            ));
        };
        let pv = rpc
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("1.0")
            .to_string();
        let url = rpc["url"].as_str().unwrap_or_default().to_string();
        return Ok((version_of(&pv), pv, url));
    }
    let Some(url) = v.get("url").and_then(Value::as_str) else {
        return Err(format!(
            "the agent card at {what} has neither `supportedInterfaces` (A2A 1.0) nor `url` (A2A 0.3)"
        ));
    };
    let pv = v
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("0.3.0")
        .to_string();
    let preferred = v.get("preferredTransport").and_then(Value::as_str);
    if preferred.is_none() || is_jsonrpc(preferred) {
        return Ok((version_of(&pv), pv, url.to_string()));
    }
    let extra = v
        .get("additionalInterfaces")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|i| is_jsonrpc(i.get("transport").and_then(Value::as_str)))
        })
        .and_then(|i| i.get("url").and_then(Value::as_str));
    match extra {
        Some(u) => Ok((version_of(&pv), pv, u.to_string())),
        None => Err(format!(
            "the agent card at {what} prefers transport `{}` and lists no JSON-RPC interface; toolgate speaks A2A over JSON-RPC",
            preferred.unwrap_or_default()
        )),
    }
}

/// The well-known card paths, newest first.
pub const WELL_KNOWN_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// Fetches an agent's card, trying each candidate URL, and remembers what HTTP caching allows.
pub(crate) struct CardFetcher {
    source: String,
    candidates: Vec<reqwest::Url>,
    cache: Mutex<Option<Cached>>,
}

#[derive(Clone)]
struct Cached {
    url: reqwest::Url,
    etag: Option<String>,
    last_modified: Option<String>,
    fresh_until: Option<Instant>,
    body: Value,
}

/// A fetched card: its JSON, where it was found, and whether it differs from the last one.
pub(crate) struct Fetched {
    pub body: Value,
    pub url: reqwest::Url,
}

impl CardFetcher {
    /// The candidates: `card_url` alone, or `url` + each [`WELL_KNOWN_PATHS`].
    ///
    /// # Errors
    /// A message when a URL does not parse.
    pub fn new(source: &str, url: Option<&str>, card_url: Option<&str>) -> Result<Self, String> {
        let parse = |key: &str, u: &str| {
            reqwest::Url::parse(u)
                .map_err(|e| format!("a2a `{source}`: `{key}` `{u}` is not a URL: {e}"))
        };
        let candidates = match (card_url, url) {
            (Some(c), _) => vec![parse("card_url", c)?],
            (None, Some(u)) => {
                let base = parse("url", u)?;
                let root = base.as_str().trim_end_matches('/').to_string();
                WELL_KNOWN_PATHS
                    .iter()
                    .map(|p| parse("url", &format!("{root}{p}")))
                    .collect::<Result<_, _>>()?
            }
            (None, None) => {
                return Err(format!("a2a `{source}` needs `url` or `card_url`"));
            }
        };
        Ok(Self {
            source: source.to_string(),
            candidates,
            cache: Mutex::new(None),
        })
    }

    /// The URLs tried, in order.
    pub fn candidates(&self) -> &[reqwest::Url] {
        &self.candidates
    }

    /// The card: from the cache while `max-age` holds, revalidated with the stored validators
    /// otherwise, or fetched from the first candidate that has it.
    ///
    /// # Errors
    /// `permission_denied` on 401/403 (no fallback), `network`, `upstream` (a status other
    /// than 404/410, a body that is no JSON, every candidate 404), `protocol`.
    pub async fn fetch(
        &self,
        client: &reqwest::Client,
        headers: &HeaderMap,
        query: &[(String, String)],
        max_bytes: usize,
    ) -> Result<Fetched, ToolError> {
        let cached = self.cache.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(c) = &cached
            && c.fresh_until.is_some_and(|t| Instant::now() < t)
        {
            return Ok(Fetched {
                body: c.body.clone(),
                url: c.url.clone(),
            });
        }
        let source = &self.source;
        let mut missing = Vec::new();
        for url in &self.candidates {
            let mut with_query = url.clone();
            if !query.is_empty() {
                with_query.query_pairs_mut().extend_pairs(query);
            }
            let mut req = client
                .get(with_query)
                .headers(headers.clone())
                .header(reqwest::header::ACCEPT, "application/json");
            if let Some(c) = cached.as_ref().filter(|c| &c.url == url) {
                if let Some(etag) = &c.etag {
                    req = req.header(IF_NONE_MATCH, etag);
                }
                if let Some(lm) = &c.last_modified {
                    req = req.header(IF_MODIFIED_SINCE, lm);
                }
            }
            let resp = req.send().await.map_err(|e| {
                ToolError::new(
                    ErrorKind::Network,
                    format!(
                        "agent `{source}`: cannot fetch its agent card at {url}: {}",
                        root_cause(&e)
                    ),
                )
                .with_source(e)
            })?;
            let status = resp.status();
            let etag = header(resp.headers(), ETAG);
            let last_modified = header(resp.headers(), LAST_MODIFIED);
            let fresh_until = max_age(resp.headers()).map(|d| Instant::now() + d);
            match status {
                StatusCode::NOT_MODIFIED => {
                    if let Some(mut c) = cached.clone().filter(|c| &c.url == url) {
                        tracing::debug!(source = %source, %url, "agent card not modified");
                        c.fresh_until = fresh_until;
                        let body = c.body.clone();
                        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
                        return Ok(Fetched {
                            body,
                            url: url.clone(),
                        });
                    }
                    return Err(ToolError::new(
                        ErrorKind::Protocol,
                        format!(
                            "agent `{source}` answered 304 for its card at {url} without toolgate having one"
                        ),
                    ));
                }
                StatusCode::NOT_FOUND | StatusCode::GONE => {
                    tracing::debug!(source = %source, %url, %status, "no agent card here");
                    missing.push(format!("{url} ({})", status.as_u16()));
                    continue;
                }
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    return Err(ToolError::new(
                        ErrorKind::PermissionDenied,
                        format!(
                            "agent `{source}`: its agent card at {url} needs authentication (HTTP {}); set `auth:` on the a2a entry",
                            status.as_u16()
                        ),
                    ));
                }
                s if !s.is_success() => {
                    return Err(ToolError::new(
                        ErrorKind::Upstream,
                        format!("agent `{source}`: fetching its agent card at {url} gave HTTP {s}"),
                    )
                    .with_retryable(s.is_server_error()));
                }
                _ => {}
            }
            let body = read_limited(resp, max_bytes)
                .await
                .map_err(|e| e.with_context(format!("agent `{source}`: agent card at {url}")))?;
            let body: Value = serde_json::from_slice(&body).map_err(|e| {
                ToolError::new(
                    ErrorKind::Protocol,
                    format!("agent `{source}`: the agent card at {url} is not JSON: {e}"),
                )
            })?;
            if !body.is_object() {
                return Err(ToolError::new(
                    ErrorKind::Protocol,
                    format!(
                        "agent `{source}`: the agent card at {url} is not an object: {}",
                        excerpt(&body)
                    ),
                ));
            }
            tracing::info!(source = %source, %url, "agent card found");
            *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(Cached {
                url: url.clone(),
                etag,
                last_modified,
                fresh_until,
                body: body.clone(),
            });
            return Ok(Fetched {
                body,
                url: url.clone(),
            });
        }
        Err(ToolError::new(
            ErrorKind::Upstream,
            format!("agent `{source}` has no agent card: {}", missing.join(", ")),
        )
        .with_retryable(true))
    }

    /// Forgets the cached card's freshness, so that the next fetch revalidates it.
    pub fn expire(&self) {
        if let Some(c) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            c.fresh_until = None;
        }
    }
}

fn header(h: &HeaderMap, name: reqwest::header::HeaderName) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `Cache-Control: max-age=N` (RFC 9111 §5.2.2.1); `no-cache` / `no-store` give none.
fn max_age(h: &HeaderMap) -> Option<Duration> {
    let cc = header(h, CACHE_CONTROL)?;
    let mut age = None;
    for directive in cc.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-cache" || lower == "no-store" {
            return None;
        }
        if let Some(n) = lower.strip_prefix("max-age=") {
            age = n
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    age
}
