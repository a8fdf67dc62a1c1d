//! The config page: the configuration in effect (as started, or as last reloaded), secrets masked, the
//! configuration generation (reloads since start) and the catalog's generation; and its Reload
//! button (`POST /console/reload`, admins only), which reloads as SIGHUP does.

use askama::Template;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::render::{Chrome, Message, page};
use super::session::{Role, Session};
use super::{checked_post, signed_in};
use crate::gateway::{Gateway, ReloadOutcome};

/// What a masked value is replaced with.
const MASK: &str = "********";

/// Keys whose values are credentials.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "key",
        "secret",
        "token",
        "password",
        "authorization",
        "credential",
        "session_key",
        "api_key",
        "client_secret",
    ]
    .iter()
    .any(|k| key == *k || key.ends_with(&format!("_{k}")))
}

/// `config` with the value of every credential-like key masked, unless it is a `${ENV}`
/// reference (which names a variable, not a secret). Every value a configured secret resolved
/// to is masked again when the page is sent (the gateway's response redaction).
pub(crate) fn masked(config: &Value) -> Value {
    match config {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if is_secret_key(k) && !is_reference(s) => {
                            Value::String(MASK.to_string())
                        }
                        other => masked(other),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(masked).collect()),
        other => other.clone(),
    }
}

/// `${NAME}` alone.
fn is_reference(s: &str) -> bool {
    s.starts_with("${") && s.ends_with('}') && !s[2..s.len() - 1].contains(['$', '{', '}'])
}

/// The `policy.tools` entry of `tool` in the configuration given to the console, as JSON.
pub(crate) fn tool_policy(gateway: &Gateway, tool: &str) -> Option<String> {
    let config = gateway.console_shown_config()?;
    let entry = config.get("policy")?.get("tools")?.get(tool)?;
    serde_json::to_string_pretty(entry).ok()
}

#[derive(Template)]
#[template(path = "config.html", config = "src/gateway/console/askama.toml")]
struct Config {
    chrome: Option<Chrome>,
    config: String,
    catalog_generation: u64,
    config_generation: u64,
    /// The signed-in caller may reload (role `admin`).
    admin: bool,
    /// The serving process can reload (it set a hook: `toolgate serve` does).
    reloadable: bool,
    /// What the last reload asked here said, and whether it applied the file.
    outcome: Option<ReloadOutcome>,
}

/// `GET /console/config`.
pub(crate) async fn page_get(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let session = match signed_in(&gateway, &headers, &uri) {
        Ok(s) => s,
        Err(to_login) => return *to_login,
    };
    config_page(&gateway, &session, None, StatusCode::OK)
}

/// The config page, with `outcome` when a reload was just asked for.
fn config_page(
    gateway: &Gateway,
    session: &Session,
    outcome: Option<ReloadOutcome>,
    status: StatusCode,
) -> Response {
    page(
        &Config {
            chrome: Some(Chrome::new(session, "config")),
            config: gateway
                .console_shown_config()
                .and_then(|c| serde_json::to_string_pretty(&*c).ok())
                .unwrap_or_default(),
            catalog_generation: gateway.toolset().catalog().generation(),
            config_generation: gateway.toolset().config_generation(),
            admin: session.role == Role::Admin,
            reloadable: gateway.can_reload(),
            outcome,
        },
        status,
    )
}

#[derive(Deserialize)]
pub(crate) struct ReloadForm {
    csrf: Option<String>,
}

/// `POST /console/reload` (role `admin`, the session's CSRF token): reloads the configuration
/// as SIGHUP does and shows what the reload said: 200 when it applied the file, 409 when it
/// refused it (the running configuration stays), 501 when the serving process cannot reload.
pub(crate) async fn reload(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<ReloadForm>,
) -> Response {
    let session = match checked_post(&gateway, &headers, &uri, form.csrf.as_deref()) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    if session.role != Role::Admin {
        return Message::page(
            Some(Chrome::new(&session, "config")),
            StatusCode::FORBIDDEN,
            "Refused",
            "Reloading the configuration needs the role `admin`; you are signed in as a viewer.",
        );
    }
    match gateway.reload().await {
        Some(outcome) => {
            let status = if outcome.applied {
                StatusCode::OK
            } else {
                StatusCode::CONFLICT
            };
            config_page(&gateway, &session, Some(outcome), status)
        }
        None => Message::page(
            Some(Chrome::new(&session, "config")),
            StatusCode::NOT_IMPLEMENTED,
            "No reload",
            "This gateway was not started by a process that can read its configuration again.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credentials_are_masked_but_references_and_other_values_are_not() {
        let config = json!({
            "gateway": {
                "api_keys": [
                    {"name": "ci", "key": "literal-key", "roles": ["admin"]},
                    {"name": "bot", "key": "${BOT_KEY}"}
                ],
                "session_key": "00ff",
                "listen": "127.0.0.1:8787"
            },
            "tools": {"mcp": [{"id": "gh", "headers": {"authorization": "Bearer x"}, "client_secret": "s"}]}
        });
        let m = masked(&config);
        assert_eq!(m["gateway"]["api_keys"][0]["key"], MASK);
        assert_eq!(m["gateway"]["api_keys"][0]["name"], "ci");
        assert_eq!(m["gateway"]["api_keys"][1]["key"], "${BOT_KEY}");
        assert_eq!(m["gateway"]["session_key"], MASK);
        assert_eq!(m["gateway"]["listen"], "127.0.0.1:8787");
        assert_eq!(m["tools"]["mcp"][0]["headers"]["authorization"], MASK);
        assert_eq!(m["tools"]["mcp"][0]["client_secret"], MASK);
    }
}
