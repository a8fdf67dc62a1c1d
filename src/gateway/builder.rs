//! [`GatewayBuilder`]: the gateway's settings, from code or from a tools.yaml `gateway:`
//! section, checked once at [`build`](GatewayBuilder::build).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_model::config::{GatewayConfig, ToolSearchConfig};
use toolgate_runtime::Toolset;

use super::{Caller, Gateway, GatewayError, Inner, Settings, auth, mcp, metrics, reload, servers};

/// Builds a [`Gateway`] (settings as a builder; [`config`](Self::config) reads them from a
/// tools.yaml `gateway:` section).
pub struct GatewayBuilder {
    pub(super) toolset: Toolset,
    pub(super) settings: Settings,
    /// What the web console is given besides the gateway ([`Self::console_config`]).
    #[cfg(feature = "console")]
    pub(super) console: super::console::ConsoleSettings,
}

impl GatewayBuilder {
    /// `Host` values accepted besides the loopback names (`localhost`, `127.0.0.1`, `[::1]`,
    /// with any port).
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.settings.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// `Origin` values (`scheme://host[:port]`) accepted besides the loopback ones.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.settings.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Networks whose addresses are accepted as `Host` (an IP literal, with any port): the
    /// pod network, say, for a Prometheus or a probe that reaches each replica by its IP. A
    /// DNS-rebinding page always sends its own name as `Host`, never an address, so this does
    /// not weaken that protection; the `Origin` check still applies.
    pub fn allowed_networks(mut self, networks: impl IntoIterator<Item = ipnet::IpNet>) -> Self {
        self.settings.allowed_networks = networks.into_iter().collect();
        self
    }

    /// Adds an API key: calls made with it run as caller `name` with `roles`. Once any key is
    /// added, every endpoint but `/healthz` and `/readyz` requires one. The key is a secret (no
    /// output of the process shows it: `toolgate_model::secrets`); the name is public (never
    /// masked).
    pub fn api_key(
        self,
        name: impl Into<String>,
        key: impl Into<String>,
        roles: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let key = key.into();
        let name = name.into();
        toolgate_model::secrets::remember(&key);
        toolgate_model::secrets::remember_public(&name);
        let key = auth::ApiKey::new(
            &toolgate_model::config::Secret::new(key),
            Caller {
                name: Some(name),
                roles: roles.into_iter().map(Into::into).collect(),
                ..Caller::default()
            },
        );
        self.settings.api_keys.rcu(|keys| {
            let mut keys = Vec::clone(keys);
            keys.push(key.clone());
            keys
        });
        self
    }

    /// Accepts OAuth 2.1 access tokens (JWTs) from `config`'s issuers beside the API keys: the
    /// gateway becomes a resource server (RFC 9728 metadata at
    /// `/.well-known/oauth-protected-resource`, `401`/`403` challenges of RFC 6750 §3). Keys
    /// are fetched from each issuer on its first token, each fetch within `jwks_timeout_ms`
    /// (default 5 s).
    ///
    /// # Errors
    /// [`GatewayError::Config`] when the resource is not a URL, there is no issuer, or an
    /// algorithm is not an accepted asymmetric one.
    pub fn oauth(
        mut self,
        config: &toolgate_model::config::OAuthConfig,
    ) -> Result<Self, GatewayError> {
        let defaults = auth::oauth::FetchLimits::default();
        let limits = auth::oauth::FetchLimits {
            timeout: config
                .jwks_timeout_ms
                .map_or(defaults.timeout, |ms| Duration::from_millis(ms.max(1))),
            min_refresh: config
                .jwks_min_refresh_s
                .map_or(defaults.min_refresh, Duration::from_secs),
        };
        let server =
            auth::oauth::ResourceServer::new(config, limits).map_err(GatewayError::Config)?;
        self.settings.oauth = Some(Arc::new(server));
        Ok(self)
    }

    /// The largest request body accepted, in bytes (default 4 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.settings.max_body_bytes = bytes;
        self
    }

    /// How long a client may take to send a whole request head (default 10 s, at least 1 ms),
    /// counted from the moment its connection waits for one (accepted, or done answering the
    /// previous request); a connection that has not sent one by then is closed.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connections.header_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take to send a request body, from the end of its head (default
    /// 30 s, at least 1 ms); a body still incomplete then is answered 408.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.settings.body_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a kept-alive connection may wait for its next request after an answer (default
    /// 10 s, at least 1 ms); then it is closed. The header timeout bounds that wait too.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connections.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most connections served at once (default 1024, at least 1); beyond it new
    /// connections wait to be accepted until one closes.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.settings.connections.max_connections = max.max(1);
        self
    }

    /// How long shutdown waits for calls in flight (default 10 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.settings.shutdown_grace = grace;
        self
    }

    /// The most tools in one MCP `tools/list` page (default 100, at least 1).
    pub fn page_size(mut self, size: usize) -> Self {
        self.settings.page_size = size.max(1);
        self
    }

    /// Tool search over MCP (`gateway.tool_search`, default off): `tools/list` shows the meta
    /// tools `search_tools`, `describe_tools` and `call_tool` instead of every tool (`meta`,
    /// with the `always` tools) or beside them (`both`).
    pub fn tool_search(mut self, config: ToolSearchConfig) -> Self {
        self.settings.tool_search = config;
        self
    }

    /// The key replicas behind one load balancer share (`gateway.session_key`, 32 bytes):
    /// `initialize`-era MCP session ids are sealed with it (AES-256-GCM), so any replica with
    /// the same key resumes a session another opened, and `tools/list` cursors are tagged with
    /// it, so a page's cursor is accepted by every replica. Without it, both are known only to
    /// the process that made them.
    pub fn session_key(mut self, key: &[u8; 32]) -> Self {
        self.settings.session_key = Some(Arc::new(mcp::http::sealed::Seal::new(key)));
        self
    }

    /// Applies a tools.yaml `gateway:` section.
    ///
    /// # Errors
    /// [`GatewayError::Config`] when an API key's `${ENV}` is not set or is empty, or the
    /// session key's is not set or is not 32 bytes (64 hex digits or base64), or an
    /// `allowed_hosts` entry with a `/` is not a network in CIDR notation.
    pub fn config(mut self, config: &GatewayConfig) -> Result<Self, GatewayError> {
        let (networks, names): (Vec<&String>, Vec<&String>) =
            config.allowed_hosts.iter().partition(|h| h.contains('/'));
        self.settings.allowed_hosts = names.into_iter().cloned().collect();
        self.settings.allowed_networks = networks
            .into_iter()
            .map(|n| {
                n.parse::<ipnet::IpNet>().map_err(|e| {
                    GatewayError::Config(format!(
                        "gateway.allowed_hosts: `{n}` is not a network in CIDR notation (`10.0.0.0/8`, `fd00::/8`): {e}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        self.settings.allowed_origins = config.allowed_origins.clone();
        let keys = reload::api_keys_of(config)?;
        self.settings.api_keys.rcu(|given| {
            let mut all = Vec::clone(given);
            all.extend(keys.iter().cloned());
            all
        });
        if let Some(oauth) = &config.auth.oauth {
            self = self.oauth(oauth)?;
        }
        if let Some(bytes) = config.max_body_bytes {
            self.settings.max_body_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(ms) = config.header_timeout_ms {
            self = self.header_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = config.body_timeout_ms {
            self = self.body_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = config.idle_timeout_ms {
            self = self.idle_timeout(Duration::from_millis(ms));
        }
        if let Some(max) = config.max_connections {
            self = self.max_connections(max);
        }
        if let Some(ms) = config.shutdown_grace_ms {
            self.settings.shutdown_grace = Duration::from_millis(ms);
        }
        if let Some(size) = config.page_size {
            self.settings.page_size = size.max(1);
        }
        self.settings.tool_search = config.tool_search.clone();
        if let Some(key) = &config.session_key {
            let secret = key
                .resolve_as(toolgate_model::secrets::Field::Credential)
                .map_err(|e| GatewayError::Config(format!("session_key: {e}")))?;
            let bytes =
                toolgate_model::config::session_key_bytes(secret.expose()).map_err(|why| {
                    GatewayError::Config(format!("session_key `{}` {why}", key.raw()))
                })?;
            self = self.session_key(&bytes);
        }
        let cursor_key = self.settings.session_key.as_ref().map(|s| s.cursor_key());
        self.settings.servers = config
            .servers
            .iter()
            .map(|s| servers::VirtualServer::new(s, cursor_key, &self.toolset).map(Arc::new))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The gateway. It is ready (`/readyz` 200) except while [`Gateway::discover`] runs.
    /// Installs the process's Prometheus recorder (`/metrics`) if none is yet.
    pub fn build(self) -> Gateway {
        metrics::install();
        let listing = match &self.settings.session_key {
            Some(seal) => mcp::listing::ToolListing::keyed(seal.cursor_key()),
            None => mcp::listing::ToolListing::default(),
        };
        Gateway {
            inner: Arc::new(Inner {
                toolset: self.toolset,
                settings: self.settings,
                ready: watch::channel(true).0,
                shutdown: CancellationToken::new(),
                calls: CancellationToken::new(),
                streams: CancellationToken::new(),
                in_flight: watch::channel(0).0,
                listing,
                #[cfg(feature = "console")]
                console: super::console::ConsoleState::new(self.console),
                reload_hook: std::sync::OnceLock::new(),
            }),
        }
    }
}
