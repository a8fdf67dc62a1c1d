//! The config page: the configuration in effect (as started, or as last reloaded), secrets masked, the
//! configuration generation (reloads since start) and the catalog's generation; and its Reload
//! button (`POST /console/reload`, admins only), which reloads as SIGHUP does.

use askama::Template;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::checked_post;
use super::render::{Chrome, Message, page};
use super::session::{Role, Session};
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

/// `config` with every literal credential masked, unless it is a `${ENV}` reference (which
/// names a variable, not a secret): the value of a credential-like key, every value of a
/// `headers` or `env` map (an upstream's headers and a server's environment carry credentials
/// under any name), the password of a URL (`scheme://user:password@host`), and the value of a
/// credential-like command-line flag (`--password=...`, `--token=...`). Every value a
/// configured secret resolved to is masked again when the page is sent (the gateway's
/// response redaction).
pub(crate) fn masked(config: &Value) -> Value {
    match config {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let whole_map = matches!(k.as_str(), "headers" | "env");
                    let v = match v {
                        Value::String(s) if is_secret_key(k) && !is_reference(s) => {
                            Value::String(MASK.to_string())
                        }
                        Value::Object(inner) if whole_map => Value::Object(
                            inner
                                .iter()
                                .map(|(name, value)| {
                                    let value = match value {
                                        Value::String(s) if !is_reference(s) => {
                                            Value::String(MASK.to_string())
                                        }
                                        other => masked(other),
                                    };
                                    (name.clone(), value)
                                })
                                .collect(),
                        ),
                        other => masked(other),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(masked).collect()),
        Value::String(s) => Value::String(masked_text(s)),
        other => other.clone(),
    }
}

/// `text` with a URL's password and a credential-like flag's value masked.
fn masked_text(text: &str) -> String {
    // `--password=...`, `--api-key=...`, `token=...`.
    if let Some((flag, value)) = text.split_once('=')
        && !value.is_empty()
        && !is_reference(value)
    {
        let name = flag.trim_start_matches('-').replace('-', "_");
        if !name.is_empty() && !name.contains(['/', ':', ' ']) && is_secret_key(&name) {
            return format!("{flag}={MASK}");
        }
    }
    // `scheme://user:password@host...`.
    if let Some(start) = text.find("://") {
        let rest = &text[start + 3..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        if let Some(at) = authority.rfind('@')
            && let Some(colon) = authority[..at].find(':')
        {
            let password = &authority[colon + 1..at];
            if !password.is_empty() && !is_reference(password) {
                let head = &text[..start + 3 + colon + 1];
                let tail = &text[start + 3 + at..];
                return format!("{head}{MASK}{tail}");
            }
        }
    }
    text.to_string()
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
pub(crate) async fn page_get(State(gateway): State<Gateway>, session: Session) -> Response {
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

    #[test]
    fn headers_env_url_passwords_and_secret_flags_are_masked_whatever_their_names() {
        let config = json!({
            "tools": {"mcp": [{
                "id": "db",
                "headers": {"x-honeycomb-team": "RealWorld13", "x-ref": "${HC_KEY}"},
                "stdio": {
                    "command": "server",
                    "args": ["--password=Arg-pw-123", "--verbose", "--port=8080", "a=b"],
                    "env": {"DATABASE_URL": "postgres://u:DbPass-999@h/db", "MODE": "fast"}
                },
                "url": "https://user:UrlPass@example.org/mcp",
                "spec": "https://example.org/openapi.json"
            }]}
        });
        let m = masked(&config);
        let server = &m["tools"]["mcp"][0];
        assert_eq!(server["headers"]["x-honeycomb-team"], MASK);
        assert_eq!(server["headers"]["x-ref"], "${HC_KEY}");
        assert_eq!(server["stdio"]["env"]["DATABASE_URL"], MASK);
        assert_eq!(server["stdio"]["env"]["MODE"], MASK);
        assert_eq!(server["stdio"]["args"][0], format!("--password={MASK}"));
        assert_eq!(server["stdio"]["args"][1], "--verbose");
        assert_eq!(server["stdio"]["args"][2], "--port=8080");
        assert_eq!(server["stdio"]["args"][3], "a=b");
        assert_eq!(
            server["url"],
            format!("https://user:{MASK}@example.org/mcp")
        );
        assert_eq!(server["spec"], "https://example.org/openapi.json");
        let text = m.to_string();
        for secret in ["RealWorld13", "Arg-pw-123", "DbPass-999", "UrlPass"] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
    }
}
