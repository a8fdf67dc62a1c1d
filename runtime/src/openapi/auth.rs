//! Credentials (OAS 3.1 §4.8.27 "Security Scheme Object", §4.8.30 "Security Requirement
//! Object") and the OAuth2 client-credentials grant (RFC 6749 §4.4).
//!
//! Every secret is resolved once when the source is built (as a credential:
//! [`Field::Credential`]), held as a [`Secret`] and remembered process-wide
//! ([`toolgate_model::secrets`]), so that no error, result or log line shows it in any form
//! (percent-encoded, JSON-escaped, ...); request descriptions for logs show `api_key=***` and
//! `X-API-Key: ***`. An upstream may echo what it received: the base64 of `user:password` of
//! basic and OAuth2 client credentials (standard alphabet, of the pair as is and of its
//! form-encoded parts) is remembered too, and so is each OAuth2 access token when it is fetched.

use std::collections::BTreeMap;

use base64::Engine as _;
use toolgate_model::config::{ApiKeyLocation, AuthConfig, Interpolated, SchemeCredentials, Secret};
use toolgate_model::openapi::{Conversion, Operation, ParamLocation, SecurityScheme};
use toolgate_model::secrets::Field;

use super::style;
use crate::net::oauth::{ClientCredentials, remember_basic};
use crate::{ToolContext, ToolError};

/// Where one credential goes.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // a few per source, built once
pub(crate) enum Cred {
    /// An API key in a header, query parameter or cookie.
    ApiKey {
        location: ParamLocation,
        name: String,
        value: Secret,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// `Authorization: Basic <base64(user:password)>`.
    Basic(Secret),
    /// Arbitrary headers.
    Headers(Vec<(String, Secret)>),
    /// OAuth2 client credentials: a bearer token fetched and cached.
    OAuth2(ClientCredentials),
}

/// How a source authenticates.
#[derive(Debug, Default)]
pub(crate) struct Auth {
    /// One credential for every operation that declares security (or for all operations when
    /// the document declares no schemes).
    single: Option<(Cred, bool)>,
    /// Credentials by security scheme name.
    schemes: BTreeMap<String, Cred>,
}

/// Credentials applied to one request, plus what a log line may show of them.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub headers: Vec<(String, String)>,
    pub query: Vec<String>,
    pub cookies: Vec<String>,
    /// Header names and query names whose values must be shown as `***`.
    pub masked: Vec<String>,
    /// The OAuth2 token sent (a 401 replaces it once).
    pub oauth: Option<Secret>,
}

/// Resolves one credential (remembered as a secret), naming the source and the field when it
/// cannot be.
fn resolve(id: &str, what: &str, v: &Interpolated) -> Result<Secret, String> {
    v.resolve_as(Field::Credential)
        .map_err(|e| format!("source `{id}`: {what}: {e}"))
}

fn basic(id: &str, b: &toolgate_model::config::BasicAuth) -> Result<Secret, String> {
    let user = resolve(id, "basic username", &b.username)?;
    let pass = resolve(id, "basic password", &b.password)?;
    let token = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        user.expose(),
        pass.expose()
    ));
    remember_basic(user.expose(), pass.expose());
    Ok(Secret::new(token))
}

impl Auth {
    /// Resolves the configured credentials against the document's schemes.
    ///
    /// # Errors
    /// A message naming the source: an unset `${ENV}` / unreadable `${file:...}`, a scheme
    /// name the document does not declare, a scheme type that cannot be used.
    pub(crate) fn new(
        id: &str,
        config: Option<&AuthConfig>,
        conversion: &Conversion,
    ) -> Result<Self, String> {
        let mut auth = Self::default();
        let no_schemes = conversion.security_schemes.is_empty();
        let Some(config) = config else {
            return Ok(auth);
        };
        let single = match config {
            AuthConfig::Bearer(t) => Some(Cred::Bearer(resolve(id, "bearer", t)?)),
            AuthConfig::ApiKey(k) => Some(Cred::ApiKey {
                location: match k.location {
                    ApiKeyLocation::Header => ParamLocation::Header,
                    ApiKeyLocation::Query => ParamLocation::Query,
                    ApiKeyLocation::Cookie => ParamLocation::Cookie,
                },
                name: k.name.clone(),
                value: resolve(id, "api_key", &k.value)?,
            }),
            AuthConfig::Basic(b) => Some(Cred::Basic(basic(id, b)?)),
            AuthConfig::Headers(h) => Some(Cred::Headers(
                h.iter()
                    .map(|(k, v)| Ok((k.clone(), resolve(id, &format!("header `{k}`"), v)?)))
                    .collect::<Result<_, String>>()?,
            )),
            // Without a token URL: the document's client-credentials scheme's `tokenUrl`.
            AuthConfig::OAuth2(o) => Some(Cred::OAuth2(ClientCredentials::new(
                &format!("source `{id}`"),
                o,
                conversion.security_schemes.values().find_map(|s| match s {
                    SecurityScheme::OAuth2 { token_url } => token_url.as_deref(),
                    _ => None,
                }),
            )?)),
            AuthConfig::Schemes(map) => {
                for (name, creds) in map {
                    let scheme = conversion.security_schemes.get(name).ok_or_else(|| {
                        format!(
                            "source `{id}`: auth.schemes: `{name}` is not a security scheme of \
                             the document (it declares: {})",
                            conversion
                                .security_schemes
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?;
                    let cred = scheme_cred(id, name, scheme, creds)?;
                    auth.schemes.insert(name.clone(), cred);
                }
                None
            }
        };
        auth.single = single.map(|c| (c, no_schemes));
        Ok(auth)
    }

    /// The credentials for `op`: for `schemes`, the first alternative of `op.security` whose
    /// schemes all have credentials (an empty alternative `{}` means anonymous access is
    /// allowed: nothing is sent); for a single credential, sent when `op.security` is non-empty
    /// or the document declares no schemes. `op.security` empty: nothing (an operation such as a health `ping`).
    ///
    /// # Errors
    /// An OAuth2 token that cannot be had; `permission_denied` for a token exchange when the
    /// call (`ctx`) came without an access token.
    pub(crate) async fn apply(
        &self,
        op: &Operation,
        rejected: Option<&Secret>,
        ctx: &ToolContext,
    ) -> Result<Applied, ToolError> {
        let mut out = Applied::default();
        if let Some((cred, everywhere)) = &self.single {
            if !op.security.is_empty() || *everywhere {
                put(cred, &mut out, rejected, ctx).await?;
            }
            return Ok(out);
        }
        let chosen = op
            .security
            .iter()
            .find(|alt| alt.keys().all(|name| self.schemes.contains_key(name)));
        match chosen {
            Some(alt) => {
                for name in alt.keys() {
                    put(&self.schemes[name], &mut out, rejected, ctx).await?;
                }
            }
            None if !op.security.is_empty() && !self.schemes.is_empty() => {
                tracing::debug!(
                    tool = %op.name,
                    "no configured credentials satisfy the operation's security; sending none"
                );
            }
            None => {}
        }
        Ok(out)
    }

    /// Whether some credential goes in a header other than `Authorization` (an apiKey in a
    /// header, `headers:` auth): reqwest strips only `Authorization` and `Cookie` when a
    /// redirect changes origin, so such a source follows same-origin redirects only.
    pub(crate) fn sends_custom_headers(&self) -> bool {
        self.single
            .iter()
            .map(|(c, _)| c)
            .chain(self.schemes.values())
            .any(|c| match c {
                Cred::ApiKey {
                    location: ParamLocation::Header,
                    name,
                    ..
                } => !name.eq_ignore_ascii_case("authorization"),
                Cred::Headers(_) => true,
                _ => false,
            })
    }
}

fn scheme_cred(
    id: &str,
    name: &str,
    scheme: &SecurityScheme,
    creds: &SchemeCredentials,
) -> Result<Cred, String> {
    let what = format!("auth.schemes.{name}");
    Ok(match (scheme, creds) {
        (
            SecurityScheme::ApiKey {
                name: key,
                location,
            },
            SchemeCredentials::Secret(v),
        ) => Cred::ApiKey {
            location: *location,
            name: key.clone(),
            value: resolve(id, &what, v)?,
        },
        (SecurityScheme::Http { scheme }, SchemeCredentials::Secret(v))
            if scheme.eq_ignore_ascii_case("bearer") =>
        {
            Cred::Bearer(resolve(id, &what, v)?)
        }
        (SecurityScheme::Http { scheme }, SchemeCredentials::Basic(b))
            if scheme.eq_ignore_ascii_case("basic") =>
        {
            Cred::Basic(basic(id, b)?)
        }
        (SecurityScheme::OAuth2 { token_url }, SchemeCredentials::OAuth2(o)) => Cred::OAuth2(
            ClientCredentials::new(&format!("source `{id}`"), o, token_url.as_deref())?,
        ),
        // A bearer token given for an OAuth2 / OpenID Connect scheme: sent as is.
        (
            SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. },
            SchemeCredentials::Secret(v),
        ) => Cred::Bearer(resolve(id, &what, v)?),
        (scheme, _) => {
            return Err(format!(
                "source `{id}`: {what}: these credentials do not fit the scheme ({}); give a \
                 string for apiKey and http bearer, {{username, password}} for http basic, \
                 {{client_id, client_secret}} for oauth2",
                serde_json::to_string(scheme).unwrap_or_default()
            ));
        }
    })
}

async fn put(
    cred: &Cred,
    out: &mut Applied,
    rejected: Option<&Secret>,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    match cred {
        Cred::ApiKey {
            location,
            name,
            value,
        } => match location {
            ParamLocation::Header | ParamLocation::Path => {
                out.headers.push((name.clone(), value.expose().to_string()));
                out.masked.push(name.clone());
            }
            ParamLocation::Query => {
                out.query.push(format!(
                    "{}={}",
                    style::encode_query(name, false),
                    style::encode_query(value.expose(), false)
                ));
                out.masked.push(style::encode_query(name, false));
            }
            ParamLocation::Cookie => out.cookies.push(format!("{name}={}", value.expose())),
        },
        Cred::Bearer(t) => bearer(out, t.expose()),
        Cred::Basic(t) => {
            out.headers
                .push(("Authorization".into(), format!("Basic {}", t.expose())));
            out.masked.push("Authorization".into());
        }
        Cred::Headers(h) => {
            for (k, v) in h {
                out.headers.push((k.clone(), v.expose().to_string()));
                out.masked.push(k.clone());
            }
        }
        Cred::OAuth2(source) => {
            // Token exchange: the caller's own credential.
            let source = source.on_behalf(ctx)?;
            let token = match rejected {
                Some(old) => source.refresh(old).await?,
                None => source.token().await?,
            };
            bearer(out, token.expose());
            out.oauth = Some(token);
        }
    }
    Ok(())
}

fn bearer(out: &mut Applied, token: &str) {
    out.headers
        .push(("Authorization".into(), format!("Bearer {token}")));
    out.masked.push("Authorization".into());
}
