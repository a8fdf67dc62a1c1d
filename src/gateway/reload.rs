//! What a reload of tools.yaml changes in a running gateway besides its toolset: the API keys
//! ([`Gateway::reload_api_keys`]); and the hook through which the gateway's own routes (the web
//! console's Reload button) ask the serving process for a reload ([`Gateway::set_reload_hook`]).

use std::sync::Arc;

use toolgate_runtime::BoxFuture;

use super::Caller;
use toolgate_model::config::GatewayConfig;

use super::{Gateway, GatewayError, auth};

/// The API keys of `config.api_keys`, each `${ENV}` resolved, the names remembered as public
/// and the keys as secrets.
///
/// # Errors
/// [`GatewayError::Config`] when a key's `${ENV}` is not set or a key is empty.
pub(super) fn api_keys_of(config: &GatewayConfig) -> Result<Vec<auth::ApiKey>, GatewayError> {
    let mut keys = Vec::with_capacity(config.api_keys.len());
    for key in &config.api_keys {
        let secret = key
            .key
            .resolve_as(toolgate_model::secrets::Field::Credential)
            .map_err(|e| GatewayError::Config(format!("API key `{}`: {e}", key.name)))?;
        toolgate_model::secrets::remember_public(&key.name);
        if secret.expose().is_empty() {
            return Err(GatewayError::Config(format!(
                "API key `{}` is empty (`{}`)",
                key.name,
                key.key.raw()
            )));
        }
        if config.auth.oauth.is_some() && auth::oauth::looks_like_jwt(secret.expose()) {
            tracing::warn!(
                key = %key.name,
                "API key `{}` has the shape of a JWT: sent as `Authorization: Bearer` it is checked as an access token; send it as `X-API-Key`",
                key.name
            );
        }
        keys.push(auth::ApiKey::new(
            &secret,
            Caller {
                name: Some(key.name.clone()),
                roles: key.roles.clone(),
                ..Caller::default()
            },
        ));
    }
    Ok(keys)
}

impl Gateway {
    /// Replaces the API keys with `config.api_keys` (a reload of tools.yaml): the next request
    /// is checked against the new keys, with their names and roles; MCP sessions opened with a
    /// key that is gone are refused from their next request on (each request is checked).
    /// Returns how many keys there are now.
    ///
    /// Only a gateway that takes keys can change them: turning authentication on or off
    /// (keys where there were none, none where there were some) needs a restart, since the
    /// routes are built for one or the other.
    ///
    /// # Errors
    /// [`GatewayError::Config`] as [`GatewayBuilder::config`](super::GatewayBuilder::config)
    /// for the keys, or when the reload would turn authentication on or off. Nothing changes
    /// then.
    pub fn reload_api_keys(&self, config: &GatewayConfig) -> Result<usize, GatewayError> {
        let keys = api_keys_of(config)?;
        let running = self.settings().api_keys.load();
        if running.is_empty() != keys.is_empty() {
            return Err(GatewayError::Config(
                "gateway.api_keys: a reload cannot turn API keys on or off (restart to do it)"
                    .into(),
            ));
        }
        let count = keys.len();
        self.settings().api_keys.store(Arc::new(keys));
        Ok(count)
    }
}

/// What a reload did: whether it applied the file, and the lines it said (what it applied,
/// why it refused, what needs a restart), as `toolgate serve` writes them on stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// Whether the new configuration is in force (`false`: refused, the running one stays).
    pub applied: bool,
    /// What the reload said, in order.
    pub lines: Vec<String>,
}

/// Reloads the configuration the gateway serves and says what it did: set by the process
/// that reads the configuration (`toolgate serve`), since the gateway itself does not know
/// where it came from.
pub type ReloadHook = Arc<dyn Fn() -> BoxFuture<'static, ReloadOutcome> + Send + Sync>;

impl Gateway {
    /// Sets what [`reload`](Self::reload) runs. Only the first hook set is kept (`false` when
    /// one was already set).
    pub fn set_reload_hook(&self, hook: ReloadHook) -> bool {
        self.inner.reload_hook.set(hook).is_ok()
    }

    /// Whether [`reload`](Self::reload) can run (a hook was set).
    pub fn can_reload(&self) -> bool {
        self.inner.reload_hook.get().is_some()
    }

    /// Reloads the configuration through the hook the serving process set, and says what it
    /// did; `None` without a hook (a gateway built in code has nothing to read again).
    pub async fn reload(&self) -> Option<ReloadOutcome> {
        let hook = self.inner.reload_hook.get()?.clone();
        Some(hook().await)
    }
}
