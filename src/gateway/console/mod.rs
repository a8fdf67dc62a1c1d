//! The web console at `/console` (`GET /` redirects there): server-rendered pages over the
//! same toolset, policies and callers as the REST API and MCP (docs/console.md).
//!
//! | route | page |
//! | --- | --- |
//! | `GET /console/login`, `POST /console/login`, `POST /console/logout` | sign-in with an API key or an access token |
//! | `GET /console`, `GET /console/sources` | every source's state, protocol, tool count, last error, latencies |
//! | `GET /console/tools` | tools, searched (the toolset's search) and filtered |
//! | `GET /console/tools/{name}`, `POST /console/tools/{name}/call` | one tool: schema in every dialect, policy, a try-it form |
//! | `GET /console/calls`, `GET /console/calls/stream` | the live call log (SSE) |
//! | `GET /console/pinning`, `POST /console/pinning/approve` | tools withheld by pinning, with a diff; approve (admin) |
//! | `GET /console/config`, `POST /console/reload` | the configuration, secrets masked; reload it as SIGHUP does (admin) |
//! | `GET /console/charts` | calls/s, p50/p99 latency and errors by kind over the last 5 minutes (SVG) |
//! | `GET /console/assets/{file}` | the stylesheet and script, embedded in the binary |
//!
//! Access: the security layer checks `Host` and `Origin` as on every route, then lets console
//! routes through without a credential; every console page but the sign-in page needs a
//! session ([`session`]). Every POST that changes something carries the session's CSRF token.

mod charts;
mod config;
mod log;
mod pages;
mod pinning;
mod render;
mod session;
mod try_it;

use std::path::{Path, PathBuf};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

pub use log::{CAPACITY, CallRecord};
pub use session::Role;

use super::{Caller, Gateway, GatewayBuilder};
use render::{Chrome, Message};
use session::Session;

/// Whether `path` belongs to the console (the security layer lets it through without a
/// credential: the console checks its session itself).
pub(crate) fn is_console_path(path: &str) -> bool {
    path == "/" || path == "/console" || path.starts_with("/console/")
}

/// What the console is given besides the gateway (see [`GatewayBuilder::console_config`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsoleSettings {
    /// The configuration the process serves, as JSON, secrets masked.
    config: Option<serde_json::Value>,
    /// Where the approved definitions of remote tools are kept, for the pinning page's diff.
    definitions_file: Option<PathBuf>,
    /// Whether `policy.pinning` is on.
    pinning: bool,
}

/// The console's state, one per gateway.
pub(crate) struct ConsoleState {
    sessions: session::Sessions,
    /// The call-log streams each session holds open.
    streams: session::StreamSlots,
    pub(crate) log: log::CallLog,
    settings: ConsoleSettings,
    /// The configuration shown (as JSON, masked): the start-up one, then each reload's.
    config: std::sync::Mutex<Option<std::sync::Arc<serde_json::Value>>>,
    definitions: pinning::Definitions,
}

impl ConsoleState {
    pub(crate) fn new(settings: ConsoleSettings) -> Self {
        Self {
            sessions: session::Sessions::default(),
            streams: session::StreamSlots::default(),
            log: log::CallLog::default(),
            definitions: pinning::Definitions::new(settings.definitions_file.clone()),
            config: std::sync::Mutex::new(settings.config.clone().map(std::sync::Arc::new)),
            settings,
        }
    }
}

impl GatewayBuilder {
    /// What the web console shows of the configuration: `config` (the tools.yaml served, its
    /// secrets masked on the config page) and, when it turns on `policy.pinning`, the file
    /// beside the approvals file where the console keeps the definitions of approved remote
    /// tools (`{approvals stem}.definitions.json`), so that the pinning page can show what
    /// changed, even after a restart. `file` is the tools.yaml's path (its folder is where
    /// relative paths start; `None`: the current folder).
    pub fn console_config(
        mut self,
        config: &toolgate_model::config::ToolsConfig,
        file: Option<&Path>,
    ) -> Self {
        self.console.config = serde_json::to_value(config)
            .ok()
            .map(|v| config::masked(&v));
        self.console.pinning = config.policy.pinning.is_some();
        self.console.definitions_file = config.policy.pinning.as_ref().map(|p| {
            let base = file
                .and_then(Path::parent)
                .map_or_else(PathBuf::new, Path::to_path_buf);
            pinning::definitions_file(&base.join(&p.file))
        });
        self
    }
}

impl Gateway {
    fn console(&self) -> &ConsoleState {
        &self.inner.console
    }

    /// What the console's config page shows from now on: `config` (a reloaded tools.yaml),
    /// its credentials masked.
    pub fn reload_console_config(&self, config: &toolgate_model::config::ToolsConfig) {
        if let Ok(value) = serde_json::to_value(config) {
            *self
                .console()
                .config
                .lock()
                .unwrap_or_else(|e| e.into_inner()) =
                Some(std::sync::Arc::new(config::masked(&value)));
        }
    }

    /// The configuration the console shows.
    fn console_shown_config(&self) -> Option<std::sync::Arc<serde_json::Value>> {
        self.console()
            .config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The calls in the console's log, newest first (at most [`CAPACITY`]).
    pub fn recent_calls(&self) -> Vec<std::sync::Arc<CallRecord>> {
        self.console().log.recent()
    }
}

/// The console's routes.
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    pinning::watch(gateway);
    axum::Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .route("/console", get(pages::sources))
        .route("/console/", get(pages::sources))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/sources", get(pages::sources))
        .route("/console/tools", get(pages::tools))
        .route("/console/tools/{name}", get(try_it::tool_page_get))
        .route("/console/tools/{name}/call", post(try_it::call))
        .route("/console/calls", get(pages::calls))
        .route("/console/calls/stream", get(pages::calls_stream))
        .route("/console/pinning", get(pinning::page_get))
        .route("/console/pinning/approve", post(pinning::approve))
        .route("/console/config", get(config::page_get))
        .route("/console/reload", post(config::reload))
        .route("/console/charts", get(charts::page_get))
        .route("/console/assets/{file}", get(render::asset))
        .layer(axum::middleware::map_response(render::headers))
        .with_state(gateway.clone())
}

/// Whether the gateway takes no credential at all (the console then signs in anyone who
/// reaches it, as the REST API lets anyone call).
fn open(gateway: &Gateway) -> bool {
    !gateway.settings().authenticates()
}

/// The signed-in session of a request, or the answer that sends the browser to sign in.
pub(crate) fn signed_in(
    gateway: &Gateway,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Session, Box<Response>> {
    if let Some(mut s) = gateway.console().sessions.find(headers) {
        let Some(digest) = &s.key_digest else {
            return Ok(s);
        };
        // The key as configured now (a reload may have removed it or changed its roles).
        match super::auth::api_key::find_digest(&gateway.settings().api_keys.load(), digest) {
            Ok(caller) => {
                s.role = Role::of(&caller, false);
                s.caller = caller;
                return Ok(s);
            }
            Err(_) => gateway.console().sessions.remove(&s.id),
        }
    }
    let next = uri.path_and_query().map_or("/console", |p| p.as_str());
    let target = format!(
        "/console/login?next={}",
        percent_encoding::utf8_percent_encode(next, percent_encoding::NON_ALPHANUMERIC)
    );
    Err(Box::new(Redirect::to(&target).into_response()))
}

/// A console page's session as a handler argument: the request's signed-in session, or (the
/// rejection) the redirect to the sign-in page that [`signed_in`] answers.
impl axum::extract::FromRequestParts<Gateway> for Session {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        gateway: &Gateway,
    ) -> Result<Self, Response> {
        signed_in(gateway, &parts.headers, &parts.uri).map_err(|to_login| *to_login)
    }
}

/// A POST's session, its CSRF token checked: the session, or the refusal (403 without the
/// session's token, the sign-in page without a session).
pub(crate) fn checked_post(
    gateway: &Gateway,
    headers: &HeaderMap,
    uri: &Uri,
    csrf: Option<&str>,
) -> Result<Session, Box<Response>> {
    let session = signed_in(gateway, headers, uri)?;
    if session::csrf_matches(&session, csrf) {
        Ok(session)
    } else {
        Err(Box::new(Message::page(
            Some(Chrome::new(&session, "")),
            StatusCode::FORBIDDEN,
            "Refused",
            "The form did not carry this session's CSRF token: reload the page and submit it again.",
        )))
    }
}

#[derive(Deserialize)]
struct LoginQuery {
    next: Option<String>,
}

/// `next` if it is a console page (never another site: an open redirect otherwise).
fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n) if is_console_path(n) && !n.starts_with("//") && n != "/" => n,
        _ => "/console/tools",
    }
}

async fn login_page(
    State(gateway): State<Gateway>,
    axum::extract::Query(query): axum::extract::Query<LoginQuery>,
) -> Response {
    render::login(&gateway, query.next.as_deref(), None, StatusCode::OK)
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    credential: String,
    next: Option<String>,
}

/// Signs in with the API key or access token of the form, checked exactly as a request's
/// credential is (`gateway::auth`).
async fn login(State(gateway): State<Gateway>, Form(form): Form<LoginForm>) -> Response {
    let open = open(&gateway);
    let credential = form.credential.trim();
    let mut key_digest = None;
    let caller = if open {
        Caller::default()
    } else {
        let mut headers = HeaderMap::new();
        let oauth = gateway.settings().oauth.is_some();
        let value = if oauth && super::auth::oauth::looks_like_jwt(credential) {
            HeaderValue::from_str(&format!("Bearer {credential}"))
                .map(|v| (header::AUTHORIZATION, v))
        } else {
            HeaderValue::from_str(credential)
                .map(|v| (header::HeaderName::from_static("x-api-key"), v))
        };
        match value {
            Ok((name, value)) if !credential.is_empty() => {
                headers.insert(name, value);
            }
            _ => {
                return render::login(
                    &gateway,
                    form.next.as_deref(),
                    Some("Sign-in refused: give an API key or an access token."),
                    StatusCode::UNAUTHORIZED,
                );
            }
        }
        match super::auth::authenticate(&gateway, &headers).await {
            Ok(caller) => {
                // An API key (a token caller has an issuer).
                if caller.issuer.is_none() {
                    key_digest = Some(super::auth::api_key::digest(credential));
                }
                caller
            }
            Err(refusal) => {
                let status = refusal.status();
                return render::login(
                    &gateway,
                    form.next.as_deref(),
                    Some(&format!("Sign-in refused: {}", refusal.message())),
                    status,
                );
            }
        }
    };
    let role = Role::of(&caller, open);
    let ttl = token_lifetime(&caller).unwrap_or(session::TTL);
    let session = gateway
        .console()
        .sessions
        .create(caller, role, key_digest, ttl);
    let mut response = Redirect::to(safe_next(form.next.as_deref())).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&session::set_cookie(&session)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// How long an access token has left (its `exp` claim), so that a session never outlives it.
fn token_lifetime(caller: &Caller) -> Option<std::time::Duration> {
    let exp = caller.claims.as_ref()?.get("exp")?.as_u64()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(std::time::Duration::from_secs(exp.saturating_sub(now)))
}

#[derive(Deserialize)]
struct CsrfForm {
    csrf: Option<String>,
}

async fn logout(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match checked_post(&gateway, &headers, &uri, form.csrf.as_deref()) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    gateway.console().sessions.remove(&session.id);
    let mut response = Redirect::to("/console/login").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&session::clear_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}
