//! How an A2A agent's requests authenticate: the `auth:` of its tools.yaml entry, placed where
//! the agent card's `securitySchemes` say (A2A 1.0 §7 "Authentication and Authorization").
//!
//! `bearer`, `api_key`, `basic` and `headers` are sent with every request, the card fetch
//! included. `schemes` names entries of the card's `securitySchemes` (`{bearerAuth:
//! "${TOKEN}"}`); each credential goes where its scheme says (an `Authorization: Bearer` or
//! `Basic` header, an API key header, query parameter or cookie), from the first call on (the
//! card itself is fetched without them). `oauth2` client credentials ([`ClientCredentials`]):
//! a token fetched from the token endpoint and sent as `Authorization: Bearer` with every
//! JSON-RPC request (the card itself is fetched without it); an agent answering HTTP 401 gets
//! the request once more with a fresh token.
//!
//! Every credential is resolved as one ([`Field::Credential`]) and so remembered process-wide
//! (with the base64 `Basic` form): no error, result or log line shows it.

use std::collections::BTreeMap;

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, COOKIE, HeaderMap, HeaderName, HeaderValue};
use toolgate_model::config::{ApiKeyLocation, AuthConfig, Interpolated, SchemeCredentials, Secret};
use toolgate_model::secrets::{self, Field};

use super::card::SecurityScheme;
use crate::net::oauth::ClientCredentials;

/// Where credentials go on every request.
#[derive(Default, Clone)]
pub(crate) struct Credentials {
    pub headers: HeaderMap,
    pub query: Vec<(String, String)>,
    /// A credential travels in a header reqwest does not strip on a cross-origin redirect.
    pub custom_headers: bool,
    /// `auth.oauth2`: a fetched token, sent as `Authorization: Bearer` with every JSON-RPC
    /// request (not with the card fetch).
    pub oauth: Option<ClientCredentials>,
}

impl Credentials {
    /// Whether anything is sent.
    pub fn any(&self) -> bool {
        !self.headers.is_empty() || !self.query.is_empty() || self.oauth.is_some()
    }
}

/// The resolved `auth:` of an entry: fixed credentials now, `schemes` once the card is known.
#[derive(Default, Clone)]
pub(crate) struct Auth {
    pub fixed: Credentials,
    pub schemes: BTreeMap<String, Resolved>,
}

/// A resolved credential of a `schemes` entry.
#[derive(Clone)]
pub(crate) enum Resolved {
    Secret(Secret),
    Basic(Secret, Secret),
}

/// Resolves one credential (remembered as a secret), naming the agent and the field when it
/// cannot be.
fn resolve(id: &str, what: &str, v: &Interpolated) -> Result<Secret, String> {
    v.resolve_as(Field::Credential)
        .map_err(|e| format!("a2a `{id}`: {what}: {e}"))
}

fn header(out: &mut Credentials, name: &str, value: &str, id: &str) -> Result<(), String> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("a2a `{id}`: `{name}` is not a header name"))?;
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        format!("a2a `{id}`: the value for header `{name}` has characters a header cannot carry")
    })?;
    value.set_sensitive(true);
    if name != AUTHORIZATION && name != COOKIE {
        out.custom_headers = true;
    }
    if name == COOKIE
        && let Some(old) = out.headers.get(COOKIE).and_then(|v| v.to_str().ok())
    {
        let joined = format!("{old}; {}", value.to_str().unwrap_or_default());
        let mut joined =
            HeaderValue::from_str(&joined).map_err(|_| format!("a2a `{id}`: bad cookie"))?;
        joined.set_sensitive(true);
        out.headers.insert(COOKIE, joined);
        return Ok(());
    }
    out.headers.insert(name, value);
    Ok(())
}

/// The base64 of `user:password` (remembered as a secret: an agent may echo the header).
fn basic_value(user: &str, password: &str) -> String {
    let value = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    secrets::remember(&value);
    value
}

fn api_key(
    out: &mut Credentials,
    location: &str,
    name: &str,
    key: &str,
    id: &str,
) -> Result<(), String> {
    match location {
        "query" => {
            out.query.push((name.to_string(), key.to_string()));
            Ok(())
        }
        "cookie" => header(out, "cookie", &format!("{name}={key}"), id),
        _ => header(out, name, key, id),
    }
}

impl Auth {
    /// Resolves `${ENV}` / `${file:…}` references now.
    ///
    /// # Errors
    /// A message naming the entry: an unset variable, an unreadable file, a bad header name,
    /// OAuth2 credentials under `schemes` or without a token endpoint.
    pub fn new(id: &str, auth: Option<&AuthConfig>) -> Result<Self, String> {
        let mut out = Auth::default();
        let Some(auth) = auth else { return Ok(out) };
        let fixed = &mut out.fixed;
        match auth {
            AuthConfig::Bearer(token) => {
                let t = resolve(id, "bearer", token)?;
                header(
                    fixed,
                    "authorization",
                    &format!("Bearer {}", t.expose()),
                    id,
                )?;
            }
            AuthConfig::ApiKey(k) => {
                let v = resolve(id, "api_key.value", &k.value)?;
                let location = match k.location {
                    ApiKeyLocation::Header => "header",
                    ApiKeyLocation::Query => "query",
                    ApiKeyLocation::Cookie => "cookie",
                };
                api_key(fixed, location, &k.name, v.expose(), id)?;
            }
            AuthConfig::Basic(b) => {
                let u = resolve(id, "basic.username", &b.username)?;
                let p = resolve(id, "basic.password", &b.password)?;
                let encoded = basic_value(u.expose(), p.expose());
                header(fixed, "authorization", &format!("Basic {encoded}"), id)?;
            }
            AuthConfig::Headers(h) => {
                for (name, v) in h {
                    let v = resolve(id, &format!("headers.{name}"), v)?;
                    header(fixed, name, v.expose(), id)?;
                }
            }
            AuthConfig::Schemes(schemes) => {
                for (name, cred) in schemes {
                    let what = format!("schemes.{name}");
                    let r = match cred {
                        SchemeCredentials::Secret(s) => Resolved::Secret(resolve(id, &what, s)?),
                        SchemeCredentials::Basic(b) => {
                            let u = resolve(id, &what, &b.username)?;
                            let p = resolve(id, &what, &b.password)?;
                            basic_value(u.expose(), p.expose());
                            Resolved::Basic(u, p)
                        }
                        SchemeCredentials::OAuth2(_) => {
                            return Err(format!(
                                "a2a `{id}`: `{what}`: OAuth2 client credentials go under `auth.oauth2` (the token is sent as `Authorization: Bearer`), not under `schemes`"
                            ));
                        }
                    };
                    out.schemes.insert(name.clone(), r);
                }
            }
            AuthConfig::OAuth2(o) => {
                if o.grant == toolgate_model::config::OAuth2Grant::TokenExchange {
                    return Err(format!(
                        "agent `{id}`: oauth2 `grant: token_exchange` is not available for A2A agents (MCP servers over HTTP and OpenAPI sources only)"
                    ));
                }
                fixed.oauth = Some(ClientCredentials::new(&format!("agent `{id}`"), o, None)?);
            }
        }
        Ok(out)
    }

    /// The credentials for calls once the card is known: the fixed ones plus each `schemes`
    /// entry placed as the card's scheme of that name says.
    ///
    /// # Errors
    /// A message naming a `schemes` entry the card does not declare, or one whose kind toolgate
    /// cannot send.
    pub fn for_card(
        &self,
        id: &str,
        card_schemes: &BTreeMap<String, SecurityScheme>,
    ) -> Result<Credentials, String> {
        let mut out = self.fixed.clone();
        for (name, cred) in &self.schemes {
            let Some(scheme) = card_schemes.get(name) else {
                let known: Vec<&str> = card_schemes.keys().map(String::as_str).collect();
                return Err(format!(
                    "a2a `{id}`: `auth.schemes.{name}`: the agent card declares no security scheme `{name}` (it declares: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            };
            match (scheme, cred) {
                (SecurityScheme::Bearer, Resolved::Secret(s)) => {
                    header(
                        &mut out,
                        "authorization",
                        &format!("Bearer {}", s.expose()),
                        id,
                    )?;
                }
                (SecurityScheme::Basic, Resolved::Basic(u, p)) => {
                    let v = basic_value(u.expose(), p.expose());
                    header(&mut out, "authorization", &format!("Basic {v}"), id)?;
                }
                (
                    SecurityScheme::ApiKey {
                        location,
                        name: key_name,
                    },
                    Resolved::Secret(s),
                ) => {
                    api_key(&mut out, location, key_name, s.expose(), id)?;
                }
                (other, _) => {
                    return Err(format!(
                        "a2a `{id}`: `auth.schemes.{name}`: the card's scheme is {other:?}, which this credential does not fit (give a token for bearer and API keys, `{{username, password}}` for basic)"
                    ));
                }
            }
        }
        Ok(out)
    }
}
