//! Remote A2A agents as tool sources: each skill on an agent's card is a tool
//! `{source}.{skill_id}`.
//!
//! [`A2aBackend`] is the protocol half of a [`RemoteSource`]; the source itself (lazy or
//! start-up discovery, the attempted record and retry interval, allow/deny lists, naming, status,
//! result size limits) is the same registry MCP servers use.
//!
//! * **Versions**: A2A 1.0 (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
//!   header `A2A-Version: 1.0`) and 0.3 (`message/send`, `message/stream`, `tasks/get`,
//!   `tasks/cancel`), chosen from the card ([`card`]).
//! * **Discovery**: [`card`]: `agent-card.json`, then `agent.json`, `ETag` /
//!   `max-age`, the authenticated extended card when credentials are configured and the card
//!   offers one.
//! * **Tools**: a skill's description (with its examples), tags and name (as title); input
//!   schema `{"text": string}` sent as a text part, or the schema tools.yaml gives the skill, sent
//!   as one data part; both also take `taskId` / `contextId` to continue a task. The message's
//!   `metadata` is `{"skill": <skill id>}`, as A2A has no field addressing a skill.
//! * **Calls**: [`call`]: the task is followed to its end by streaming or polling; artifacts
//!   become content; `input-required` / `auth-required` end in
//!   [`ErrorKind::InputRequired`](crate::ErrorKind::InputRequired); `failed`,
//!   `rejected`, `canceled` in `upstream`; a call that runs out of time cancels its task.
//! * **Auth**: [`auth`]: bearer, API key, basic, headers, or by the card's security scheme
//!   names; no error, result or log line shows a credential.
//! * **Errors**: JSON-RPC errors by code ([`rpc`]).
//! * **Health**: the periodic check re-fetches the card (conditionally); a card whose skills
//!   changed makes the source list them again.

mod auth;
pub mod call;
pub mod card;
#[doc(hidden)]
pub mod fuzzing;
pub mod rpc;
#[cfg(test)]
mod tests;
pub mod tools;
pub mod wire;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;
use toolgate_model::config::A2aAgent;

use crate::remote::{PeerInfo, RemoteBackend, RemoteSource, ToolFilter};
use crate::{BoxFuture, BuildError, ErrorKind, ToolContext, ToolDescriptor, ToolError, ToolOutput};
use card::{AgentCard, CardFetcher};

/// Settings of an [`A2aBackend`].
#[derive(Debug, Clone)]
pub struct A2aOptions {
    /// Whether calls stream; `None`: when the card says `capabilities.streaming`.
    pub streaming: Option<bool>,
    /// Whether a non-streaming send asks the agent to answer only once the task ended or
    /// waits for input (default `true`); `false`: the task is polled from the start.
    pub blocking: bool,
    /// The first wait between two `GetTask` polls (default 200 ms; doubled up to 5 s).
    pub poll_interval: Duration,
    /// Per skill id: the input schema (an object schema); its arguments go as a data part.
    pub skill_schemas: BTreeMap<String, Value>,
    /// The largest card or JSON-RPC answer read, in bytes (default 16 MiB; a whole event
    /// stream counts as one).
    pub max_response_bytes: usize,
    /// The longest a TCP/TLS connect may take, and fetching the agent card with it (default
    /// 10 s; tools.yaml: `connect_timeout_ms`). A call that has to fetch the card is bounded by
    /// its own deadline too.
    pub connect_timeout: Duration,
    /// Hosts (exact, or `*.example.com`) that may receive credentials besides the card's own;
    /// with credentials, a card naming an endpoint elsewhere is refused.
    pub allow_hosts: Vec<String>,
}

impl Default for A2aOptions {
    fn default() -> Self {
        Self {
            streaming: None,
            blocking: true,
            poll_interval: Duration::from_millis(200),
            skill_schemas: BTreeMap::new(),
            max_response_bytes: 16 << 20,
            connect_timeout: Duration::from_secs(10),
            allow_hosts: Vec::new(),
        }
    }
}

/// The A2A client of one agent, as a [`RemoteBackend`]. Cheap to clone; clones share the card
/// and connection pool.
#[derive(Clone)]
pub struct A2aBackend {
    inner: Arc<Agent>,
}

struct Agent {
    id: String,
    options: A2aOptions,
    client: reqwest::Client,
    fetcher: CardFetcher,
    auth: auth::Auth,
    connected: RwLock<Option<Connected>>,
    changes: watch::Sender<u64>,
    /// Cancel requests of calls that ended before their task (awaited on close).
    pending: call::Pending,
    /// `options.allow_hosts`, read once (the net guard's host matching).
    allow_hosts: crate::net::HostRules,
}

#[derive(Clone)]
struct Connected {
    card: AgentCard,
    card_url: String,
    rpc: Arc<rpc::Rpc>,
}

impl A2aBackend {
    /// A client of the agent `id` (its source id) whose card is at `card_url`, or under `url`
    /// (see [`card`]). Nothing is contacted until the first listing.
    ///
    /// # Errors
    /// [`BuildError::Source`] for a URL that does not parse, an unset variable in `auth`, or
    /// OAuth2 credentials without a token endpoint.
    pub fn new(
        id: impl Into<String>,
        url: Option<&str>,
        card_url: Option<&str>,
        auth: Option<&toolgate_model::config::AuthConfig>,
        options: A2aOptions,
    ) -> Result<Self, BuildError> {
        let id = id.into();
        let fail = |message: String| BuildError::Source {
            source_id: id.clone(),
            message,
        };
        let fetcher = CardFetcher::new(&id, url, card_url).map_err(fail)?;
        let auth = auth::Auth::new(&id, auth).map_err(fail)?;
        let same_origin_only = auth.fixed.custom_headers || !auth.schemes.is_empty();
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > crate::net::MAX_REDIRECTS {
                    return attempt.error(crate::net::TooManyRedirects);
                }
                if let Some(from) = attempt.previous().last()
                    && let Some(blocked) = crate::net::credential_redirect_refusal(
                        from,
                        attempt.url(),
                        same_origin_only,
                    )
                {
                    return attempt.error(blocked);
                }
                attempt.follow()
            }))
            .referer(false)
            .build()
            .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            inner: Arc::new(Agent {
                id,
                client,
                fetcher,
                auth,
                connected: RwLock::new(None),
                changes: watch::channel(0).0,
                pending: call::Pending::default(),
                allow_hosts: crate::net::HostRules::new(&options.allow_hosts, true),
                options,
            }),
        })
    }

    /// A client for one tools.yaml `a2a` entry.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_config(agent: &A2aAgent) -> Result<Self, BuildError> {
        let options = A2aOptions {
            streaming: agent.streaming,
            blocking: agent.blocking,
            poll_interval: agent
                .poll_interval_ms
                .map_or(A2aOptions::default().poll_interval, Duration::from_millis),
            skill_schemas: agent
                .skills
                .iter()
                .map(|(k, v)| (k.clone(), v.input_schema.clone()))
                .collect(),
            allow_hosts: agent.allow_hosts.clone(),
            connect_timeout: agent
                .connect_timeout_ms
                .map_or(A2aOptions::default().connect_timeout, Duration::from_millis),
            ..A2aOptions::default()
        };
        Self::new(
            &agent.id,
            agent.url.as_deref(),
            agent.card_url.as_deref(),
            agent.auth.as_ref(),
            options,
        )
    }

    /// The card as last read (the extended card when one was fetched); `None` before the first
    /// listing.
    pub fn card(&self) -> Option<AgentCard> {
        self.connected().map(|c| c.card)
    }

    /// Where the card was found (the path that worked).
    pub fn card_url(&self) -> Option<String> {
        self.connected().map(|c| c.card_url)
    }

    fn connected(&self) -> Option<Connected> {
        self.inner
            .connected
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// [`fetch_card`](Self::fetch_card) within `connect_timeout`, or by `deadline` (a call's)
    /// when that comes first; the error says which bound ended it.
    async fn discover(&self, deadline: Option<Instant>) -> Result<Connected, ToolError> {
        let crate::remote::ConnectBound {
            limit,
            by_call,
            until,
        } = crate::remote::ConnectBound::new(self.inner.options.connect_timeout, deadline);
        match tokio::time::timeout_at(until, self.fetch_card()).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::new(
                ErrorKind::Timeout,
                format!(
                    "agent `{}`: no agent card within {} ms ({}; tried {})",
                    self.inner.id,
                    limit.as_micros().div_ceil(1000),
                    if by_call {
                        "the call's deadline"
                    } else {
                        "its `connect_timeout_ms`"
                    },
                    self.inner
                        .fetcher
                        .candidates()
                        .iter()
                        .map(reqwest::Url::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Fetches (or revalidates) the card, reads it, fetches the extended card when it should,
    /// and stores the result.
    async fn fetch_card(&self) -> Result<Connected, ToolError> {
        let a = &self.inner;
        let fetched = a
            .fetcher
            .fetch(
                &a.client,
                &a.auth.fixed.headers,
                &a.auth.fixed.query,
                a.options.max_response_bytes,
            )
            .await?;
        let card_url = fetched.url.to_string();
        let mut card = AgentCard::parse(&fetched.body, &card_url)
            .map_err(|m| ToolError::new(ErrorKind::Protocol, format!("agent `{}`: {m}", a.id)))?;
        let creds = a
            .auth
            .for_card(&a.id, &card.security_schemes)
            .map_err(|m| ToolError::new(ErrorKind::PermissionDenied, m))?;
        let rpc_url = reqwest::Url::parse(&card.rpc_url)
            .or_else(|_| fetched.url.join(&card.rpc_url))
            .map_err(|e| {
                ToolError::new(
                    ErrorKind::Protocol,
                    format!(
                        "agent `{}`: the endpoint `{}` its card names is not a URL: {e}",
                        a.id, card.rpc_url
                    ),
                )
            })?;
        let has_creds = creds.any();
        if has_creds {
            check_endpoint_host(&a.id, &fetched.url, &rpc_url, &a.allow_hosts)?;
        }
        let rpc = Arc::new(rpc::Rpc::new(
            a.id.clone(),
            a.client.clone(),
            rpc_url,
            card.version,
            creds.headers,
            creds.query,
            a.options.max_response_bytes,
            creds.oauth,
        ));
        if has_creds && card.extended_card {
            let method = card.version.extended_card_method();
            match rpc.call(method, serde_json::json!({})).await {
                Ok(extended) => {
                    match AgentCard::parse(&extended, &format!("{card_url} (extended)")) {
                        Ok(mut ext) => {
                            // The endpoint stays the one the public card named and is in use.
                            ext.rpc_url.clone_from(&card.rpc_url);
                            ext.version = card.version;
                            tracing::info!(source = %a.id, skills = ext.skills.len(), "authenticated extended agent card read");
                            card = ext;
                        }
                        Err(m) => {
                            tracing::warn!(source = %a.id, "the extended agent card is unreadable, the public one is used: {m}")
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(source = %a.id, error = %e, "no authenticated extended agent card, the public one is used")
                }
            }
        }
        for configured in a.options.skill_schemas.keys() {
            if !card.skills.iter().any(|s| &s.id == configured) {
                tracing::warn!(source = %a.id, skill = %configured, "tools.yaml gives an input schema for a skill the agent card does not list");
            }
        }
        tracing::debug!(source = %a.id, card = %card_url, endpoint = %card.rpc_url, version = card.version.as_str(), "A2A agent discovered");
        let connected = Connected {
            card,
            card_url,
            rpc,
        };
        *a.connected.write().unwrap_or_else(|p| p.into_inner()) = Some(connected.clone());
        Ok(connected)
    }
}

/// With credentials, the JSON-RPC endpoint must be on the card's own host (scheme, host and
/// port) or on one of `allow_hosts`: a card must not be able to send the token elsewhere.
fn check_endpoint_host(
    id: &str,
    card: &reqwest::Url,
    endpoint: &reqwest::Url,
    allow_hosts: &crate::net::HostRules,
) -> Result<(), ToolError> {
    let same_origin = card.scheme() == endpoint.scheme()
        && card.host_str() == endpoint.host_str()
        && card.port_or_known_default() == endpoint.port_or_known_default();
    let host = endpoint.host_str().unwrap_or_default().to_ascii_lowercase();
    if same_origin || allow_hosts.matches(&host).is_some() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorKind::PermissionDenied,
        format!(
            "agent `{id}`: its card (at {}) names the endpoint {}://{}{} on another host; its credentials are not sent there. If that host is the agent's, add it to `allow_hosts` on the a2a entry",
            card.origin().ascii_serialization(),
            endpoint.scheme(),
            host,
            endpoint.port().map(|p| format!(":{p}")).unwrap_or_default(),
        ),
    ))
}

impl RemoteBackend for A2aBackend {
    fn protocol(&self) -> &'static str {
        "a2a"
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, ToolError>> {
        Box::pin(async move {
            // A listing asked for (start-up, refresh, retry) always revalidates the card.
            self.inner.fetcher.expire();
            let connected = self.discover(None).await?;
            Ok(tools::descriptors(
                &connected.card,
                &self.inner.options.skill_schemas,
            ))
        })
    }

    fn call<'a>(
        &'a self,
        tool: &'a ToolDescriptor,
        remote_name: &'a str,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let connected = match self.connected() {
                Some(c) => c,
                None => self.discover(ctx.deadline()).await?,
            };
            let options = &self.inner.options;
            let structured = options.skill_schemas.contains_key(remote_name);
            let message = tools::message(remote_name, args, structured);
            let mode = call::Mode {
                streaming: options.streaming.unwrap_or(connected.card.streaming),
                blocking: options.blocking,
                poll_interval: options.poll_interval,
            };
            call::call(
                connected.rpc,
                &tool.name,
                message,
                mode,
                ctx,
                self.inner.pending.clone(),
            )
            .await
        })
    }

    fn ping(&self) -> BoxFuture<'_, Result<Duration, ToolError>> {
        Box::pin(async move {
            let started = Instant::now();
            let before = self.connected().map(|c| c.card);
            let now = self.discover(None).await?.card;
            if before.is_some_and(|b| b.skills != now.skills) {
                tracing::info!(source = %self.inner.id, "the agent card's skills changed");
                self.inner.changes.send_modify(|n| *n += 1);
            }
            Ok(started.elapsed())
        })
    }

    /// Waits (at most 5 s) for the cancel requests of calls that ended before their task, so
    /// that a process exiting right after a timed-out call still cancels the task.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let pending: Vec<_> =
                std::mem::take(&mut *self.inner.pending.lock().unwrap_or_else(|p| p.into_inner()));
            if pending.is_empty() {
                return;
            }
            let all = futures::future::join_all(pending);
            if tokio::time::timeout(Duration::from_secs(5), all)
                .await
                .is_err()
            {
                tracing::warn!(source = %self.inner.id, "cancel requests still pending at close");
            }
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn peer(&self) -> PeerInfo {
        match self.connected() {
            Some(c) => PeerInfo {
                protocol_version: Some(c.card.protocol_version.clone()),
                server: Some(format!(
                    "{}{} (card: {})",
                    c.card.name,
                    c.card
                        .agent_version
                        .as_ref()
                        .map(|v| format!(" {v}"))
                        .unwrap_or_default(),
                    c.card_url
                )),
            },
            None => PeerInfo::default(),
        }
    }
}

impl std::fmt::Debug for A2aBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aBackend")
            .field("id", &self.inner.id)
            .field("card_candidates", &self.inner.fetcher.candidates())
            .finish()
    }
}

/// The tool source of one tools.yaml `a2a` entry: its allow/deny lists, `lazy`, `timeout_ms`,
/// `max_result_bytes`, `prefix`, plus `global`, the allow/deny lists of every remote source.
///
/// # Errors
/// [`BuildError::Source`] as [`A2aBackend::new`], or for an invalid glob.
pub fn source(agent: &A2aAgent, global: ToolFilter) -> Result<RemoteSource, BuildError> {
    let backend = A2aBackend::from_config(agent)?;
    let filter = ToolFilter::new(&agent.id, &agent.allow, &agent.deny)?;
    let mut builder = RemoteSource::builder(&agent.id, backend)
        .lazy(agent.lazy)
        .prefix(agent.prefix)
        .filter(filter)
        .global_filter(global)
        .require(agent.require.clone())
        .call_timeout(agent.timeout_ms.map(Duration::from_millis));
    if let Some(max) = agent.max_result_bytes {
        builder =
            builder.max_result_bytes((max > 0).then(|| usize::try_from(max).unwrap_or(usize::MAX)));
    }
    Ok(builder.build())
}

impl crate::ToolsetBuilder {
    /// Adds one source per `a2a` entry of a tools.yaml `tools:` section (see [`source`]), with
    /// the section's `allow`/`deny` applied to every one. Nothing is contacted until
    /// [`Toolset::discover`](crate::Toolset::discover) or the first call.
    ///
    /// # Errors
    /// At [`build`](crate::ToolsetBuilder::build): [`BuildError::Source`] for an unset
    /// environment variable, a bad URL or an invalid glob.
    pub fn a2a_agents(mut self, tools: &toolgate_model::config::ToolsSection) -> Self {
        let global = ToolFilter::new("tools", &tools.allow, &tools.deny);
        for agent in &tools.a2a {
            let agent = agent.clone();
            let global = global.clone();
            self = self.source_with(move |_| {
                let source = source(&agent, global?)?;
                Ok(Arc::new(source) as Arc<dyn crate::ToolSource>)
            });
        }
        self
    }

    /// [`a2a_agents`](Self::a2a_agents) from the text of a tools.yaml (generated code passes the
    /// `TOOLS_YAML` it was built from).
    ///
    /// # Errors
    /// At [`build`](crate::ToolsetBuilder::build): [`BuildError::Source`] when the text does
    /// not load, and as [`a2a_agents`](Self::a2a_agents).
    pub fn a2a_agents_from_yaml(self, yaml: &str) -> Self {
        match toolgate_model::config::ToolsConfig::from_yaml_str(yaml, Path::new("tools.yaml")) {
            Ok(loaded) => self.a2a_agents(&loaded.config.tools),
            Err(e) => {
                let message = e.to_string();
                self.source_with(move |_| {
                    Err(BuildError::Source {
                        source_id: "a2a".to_string(),
                        message,
                    })
                })
            }
        }
    }
}
