//! The gateway's OAuth 2.0 Protected Resource Metadata (RFC 9728): what an MCP client reads,
//! from the `resource_metadata` of a `401`, to learn which authorization servers issue tokens
//! for this gateway.

use axum::Json;
use axum::extract::State;
use axum::routing::get;
use serde_json::{Value, json};
use toolgate_model::config::OAuthConfig;

use crate::gateway::Gateway;

/// The well-known path of the metadata (RFC 9728 §3); a resource URL with a path has its
/// metadata at this path followed by the resource's path (§3.1).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata document and where it is served.
#[derive(Debug)]
pub(super) struct Metadata {
    /// The metadata's absolute URL, made from the resource URL (RFC 9728 §3.1).
    url: String,
    /// The paths it is served at on this gateway: the §3.1 one, and the bare well-known path.
    paths: Vec<String>,
    document: Value,
}

impl Metadata {
    pub(super) fn new(config: &OAuthConfig) -> Result<Self, String> {
        let resource = reqwest::Url::parse(&config.resource).map_err(|e| {
            format!(
                "gateway.auth.oauth.resource: `{}` is not a URL: {e}",
                config.resource
            )
        })?;
        // RFC 9728 §3.1: the well-known part goes between the host and the resource's path
        // (its trailing slash kept); a resource without a path has the bare well-known URL.
        let path = match resource.path() {
            "/" => String::new(),
            path => path.to_string(),
        };
        let mut origin = resource.clone();
        origin.set_path("");
        origin.set_query(None);
        origin.set_fragment(None);
        let at = format!("{METADATA_PATH}{path}");
        let url = format!("{}{at}", origin.as_str().trim_end_matches('/'));
        let mut paths = vec![at];
        if !path.is_empty() {
            paths.push(METADATA_PATH.to_string());
        }
        let mut scopes = if config.scopes_supported.is_empty() {
            let mut scopes = config.required_scopes.clone();
            for issuer in &config.issuers {
                scopes.extend(issuer.scope_roles.keys().cloned());
            }
            scopes.extend(config.tool_scopes.values().flatten().cloned());
            scopes
        } else {
            config.scopes_supported.clone()
        };
        let mut seen = std::collections::HashSet::new();
        scopes.retain(|s| seen.insert(s.clone()));
        let mut document = json!({
            "resource": config.resource,
            "authorization_servers": config.issuers.iter().map(|i| &i.issuer).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &config.resource_name {
            document["resource_name"] = json!(name);
        }
        Ok(Self {
            url,
            paths,
            document,
        })
    }

    /// Whether the document is served at `path`.
    pub(super) fn serves_at(&self, path: &str) -> bool {
        self.paths.iter().any(|p| p == path)
    }

    /// The metadata's absolute URL.
    pub(super) fn url(&self) -> &str {
        &self.url
    }
}

/// `GET /.well-known/oauth-protected-resource[/path]` when OAuth is configured; nothing
/// otherwise. Answers without a credential (the check lets these paths through).
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    let mut router = axum::Router::new();
    if let Some(server) = gateway.settings().oauth.as_deref() {
        for path in &server.metadata.paths {
            router = router.route(path, get(document));
        }
    }
    router.with_state(gateway.clone())
}

async fn document(State(gateway): State<Gateway>) -> Json<Value> {
    Json(
        gateway
            .settings()
            .oauth
            .as_deref()
            .map_or(Value::Null, |s| s.metadata.document.clone()),
    )
}
