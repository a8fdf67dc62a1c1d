//! Who is calling: the credential of an HTTP request turned into a [`Caller`].
//!
//! Two kinds of credential, side by side:
//!
//! - an **API key** from tools.yaml (`gateway.api_keys`), sent as `X-API-Key: <key>` or
//!   `Authorization: Bearer <key>` ([`api_key`]);
//! - an **OAuth 2.1 access token** (a JWT) from one of the identity providers in
//!   `gateway.auth.oauth`, sent as `Authorization: Bearer <token>` ([`oauth`]): the gateway is
//!   then a resource server in the sense of the MCP authorization specification.
//!
//! A bearer value that has the shape of a JWT (three base64url parts) is checked as a token
//! when OAuth is configured, anything else as an API key. Refusals carry the challenge of
//! RFC 6750 §3 (`WWW-Authenticate: Bearer …`), with `resource_metadata` (RFC 9728 §5.1) when
//! OAuth is configured, so that an MCP client can find the authorization server.

pub(crate) mod api_key;
pub(crate) mod oauth;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use toolgate_runtime::{ErrorKind, ToolError};

pub(crate) use api_key::ApiKey;

use super::{Caller, Gateway};

/// Why a request was refused before any route saw it.
pub(crate) struct Refusal {
    status: StatusCode,
    error: ToolError,
    /// The `WWW-Authenticate` value.
    challenge: String,
}

impl Refusal {
    /// The status the refusal is answered with.
    #[cfg(feature = "console")]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// Why the credential was refused.
    #[cfg(feature = "console")]
    pub(crate) fn message(&self) -> &str {
        self.error.message()
    }

    /// Why the credential was refused, as a call's error.
    pub(crate) fn into_error(self) -> ToolError {
        self.error
    }

    /// The answer: the error as the REST API's error body, with the status and the challenge.
    pub(crate) fn into_response(self) -> Response {
        let mut response = super::security::refused(self.status, self.error);
        if let Ok(value) = HeaderValue::from_str(&self.challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Finds the caller of a request from its headers.
///
/// # Errors
/// A [`Refusal`]: `401` for a missing or bad credential (`error="invalid_token"` for a token
/// that does not hold), `403` with `error="insufficient_scope"` for a token without a required
/// scope, `503` when no key of the token's issuer can be had (its JWKS unreachable).
pub(crate) async fn authenticate(
    gateway: &Gateway,
    headers: &HeaderMap,
) -> Result<Caller, Refusal> {
    let settings = gateway.settings();
    if !settings.authenticates() {
        return Ok(Caller::default());
    }
    let oauth = settings.oauth.as_deref();
    let challenge = |error: Option<(&str, &str)>| match oauth {
        Some(server) => server.challenge(error),
        None => "Bearer".to_string(),
    };
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
        || headers.get_all("x-api-key").iter().nth(1).is_some()
    {
        // Which one would count is not for a proxy and the gateway to disagree on.
        return Err(Refusal {
            status: StatusCode::BAD_REQUEST,
            error: ToolError::permission_denied(
                "the request has more than one Authorization (or X-API-Key) header; send one",
            ),
            challenge: challenge(Some(("invalid_request", "more than one credential header"))),
        });
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
        });
    if let (Some(server), Some(token)) = (oauth, bearer)
        && oauth::looks_like_jwt(token)
    {
        return server
            .authenticate(token)
            .await
            .map_err(|e| e.refusal(server));
    }
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let Some(given) = bearer.or(api_key).map(str::trim) else {
        let how = match (settings.api_keys.load().is_empty(), oauth.is_some()) {
            (true, _) => {
                "an access token is required: send `Authorization: Bearer <token>` (how to get one: the resource metadata in WWW-Authenticate)"
            }
            (false, true) => {
                "a credential is required: send an access token as `Authorization: Bearer <token>`, or an API key as `X-API-Key: <key>`"
            }
            (false, false) => {
                "an API key is required: send `Authorization: Bearer <key>` or `X-API-Key: <key>`"
            }
        };
        // No error code when the request carried no credential (RFC 6750 §3.1).
        return Err(Refusal {
            status: StatusCode::UNAUTHORIZED,
            error: ToolError::permission_denied(how),
            challenge: challenge(None),
        });
    };
    if settings.api_keys.load().is_empty() {
        return Err(Refusal {
            status: StatusCode::UNAUTHORIZED,
            error: ToolError::permission_denied(
                "the credential is not a JWT access token, and the gateway takes no API keys: send an access token as `Authorization: Bearer <token>`",
            ),
            challenge: challenge(Some(("invalid_token", "the token is not a JWT"))),
        });
    }
    api_key::find(&settings.api_keys.load(), given).map_err(|error| Refusal {
        status: StatusCode::UNAUTHORIZED,
        challenge: challenge(Some(("invalid_token", "the credential is not valid"))),
        error,
    })
}

/// Checks the scopes tool `tool` (as the request names it, either name form) needs by
/// `gateway.auth.oauth.tool_scopes` against those of `caller`'s token. Callers without a token
/// (API keys, anonymous) are not concerned.
///
/// # Errors
/// A `403` [`Refusal`] with `error="insufficient_scope"` and the scopes the call needs.
pub(crate) fn check_tool_scopes(
    gateway: &Gateway,
    caller: &Caller,
    tool: &str,
) -> Result<(), Refusal> {
    let settings = gateway.settings();
    let Some(server) = settings.oauth.as_deref() else {
        return Ok(());
    };
    if caller.issuer.is_none() || !server.has_tool_scopes() {
        return Ok(());
    }
    let name = toolgate_model::names::internal_name(tool);
    match server.tool_scopes_missing(&name, &caller.scopes) {
        None => Ok(()),
        Some((needed, missing)) => Err(Refusal {
            status: StatusCode::FORBIDDEN,
            challenge: server.tool_scope_challenge(&name, &needed, &missing),
            error: ToolError::permission_denied(format!(
                "the access token lacks the scope(s) `{}` that tool `{}` needs",
                missing.join(" "),
                toolgate_model::text::cut(&name, 200)
            )),
        }),
    }
}

/// The refusal of a token check.
impl oauth::TokenError {
    fn refusal(self, server: &oauth::ResourceServer) -> Refusal {
        match self {
            Self::Invalid(why) => Refusal {
                status: StatusCode::UNAUTHORIZED,
                challenge: server.challenge(Some(("invalid_token", &why))),
                error: ToolError::permission_denied(format!(
                    "the access token is not valid: {why}"
                )),
            },
            Self::Scope(missing) => Refusal {
                status: StatusCode::FORBIDDEN,
                challenge: server.scope_challenge(&missing),
                error: ToolError::permission_denied(format!(
                    "the access token lacks the scope(s) `{}` this gateway requires",
                    missing.join(" ")
                )),
            },
            Self::Unavailable(why) => Refusal {
                status: StatusCode::SERVICE_UNAVAILABLE,
                challenge: server.challenge(None),
                error: ToolError::new(ErrorKind::Network, why).with_retryable(true),
            },
        }
    }
}
