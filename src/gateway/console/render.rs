//! What every console page shares: the page chrome (who is signed in, the navigation, the
//! session's CSRF token), rendering an askama template into a response, the message and
//! sign-in pages, the embedded assets and the security headers of every console answer.

use askama::Template;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use super::session::Session;
use crate::gateway::Gateway;

/// The stylesheet, embedded.
const CSS: &str = include_str!("assets/console.css");
/// The script (the live call log's stream; nothing else needs one), embedded.
const JS: &str = include_str!("assets/console.js");

/// The page chrome: who is signed in and what the navigation marks as the current page.
pub(crate) struct Chrome {
    /// The caller's name (`anonymous` on a gateway without credentials).
    pub who: String,
    /// `viewer` or `admin`.
    pub role: &'static str,
    /// The session's CSRF token, for the forms of the page.
    pub csrf: String,
    /// The current page (`sources`, `tools`, `calls`, `pinning`, `config`).
    pub page: &'static str,
}

impl Chrome {
    pub(crate) fn new(session: &Session, page: &'static str) -> Self {
        Self {
            who: session
                .caller
                .name
                .clone()
                .unwrap_or_else(|| "anonymous".to_string()),
            role: session.role.as_str(),
            csrf: session.csrf.clone(),
            page,
        }
    }

    /// `aria-current="page"` for the current page's link.
    pub fn current(&self, page: &str) -> &'static str {
        if self.page == page { "page" } else { "false" }
    }
}

/// `template` rendered, answered with `status`; a template that fails to render (it cannot,
/// short of a bug) is a 500 saying so.
pub(crate) fn page(template: &impl Template, status: StatusCode) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the console page could not be rendered: {e}"),
        )
            .into_response(),
    }
}

/// A page with a title and one message.
#[derive(Template)]
#[template(path = "message.html", config = "src/gateway/console/askama.toml")]
pub(crate) struct Message {
    chrome: Option<Chrome>,
    title: String,
    message: String,
}

impl Message {
    pub(crate) fn page(
        chrome: Option<Chrome>,
        status: StatusCode,
        title: &str,
        message: &str,
    ) -> Response {
        page(
            &Self {
                chrome,
                title: title.to_string(),
                message: message.to_string(),
            },
            status,
        )
    }
}

/// The sign-in page.
#[derive(Template)]
#[template(path = "login.html", config = "src/gateway/console/askama.toml")]
struct Login {
    chrome: Option<Chrome>,
    /// The gateway takes no credential.
    open: bool,
    /// It takes access tokens (`gateway.auth.oauth`).
    oauth: bool,
    /// It takes API keys.
    keys: bool,
    next: String,
    error: Option<String>,
}

pub(crate) fn login(
    gateway: &Gateway,
    next: Option<&str>,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    let settings = gateway.settings();
    page(
        &Login {
            chrome: None,
            open: !settings.authenticates(),
            oauth: settings.oauth.is_some(),
            keys: !settings.api_keys.load().is_empty(),
            next: next.unwrap_or("/console/tools").to_string(),
            error: error.map(str::to_string),
        },
        status,
    )
}

/// `GET /console/assets/{file}`: the embedded stylesheet or script.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such console asset").into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// Every console answer: a content security policy that allows only the console's own
/// script and stylesheet (and `data:` images, for image results), no framing, no caching,
/// no content sniffing, and no referrer to other sites.
pub(crate) async fn headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}
