//! Virtual servers (`gateway.servers`): curated parts of the toolset, each served at its own
//! MCP endpoint (`/mcp/{id}` streamable HTTP, `/servers/{id}/sse` legacy HTTP+SSE) and REST
//! prefix (`/servers/{id}/tools…`).
//!
//! A [`VirtualServer`] selects tools by source, name glob, tag, category and annotation
//! hints; shows them under its `prefix`; lets in only callers with one of its roles (or a
//! token scope of that name): others get 403 on every route of the server, before the
//! request reaches MCP or REST. A tool it does not select is `not_found` on it, for a call
//! as for a description. Each server has its own `tools/list` cache (and cursor key), its own
//! `initialize` title and instructions, and its own list-changed notifications: a session is
//! told only when the tools its server selects changed ([`VirtualServer::fingerprint`]).
//! Its MCP endpoint passes through only the resources, resource templates and prompts of the
//! MCP sources it includes ([`VirtualServer::includes_source`]), and their notifications.
//! Calls made through a server are counted in `toolgate_server_calls_total{server,tool,outcome}`
//! besides the pipeline's own metrics, and pass the server's `guardrails` besides the tool's
//! own ([`toolgate_runtime::Toolset::call_guarded`]: on the arguments before the tool's, on
//! the result after them). The server is the [`CallScope`] of such a call: the calls made on
//! its behalf (code run by `run_python`, a tool calling tools) reach only the tools the
//! server selects and pass its guardrails too.

mod rest;

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use toolgate_model::config::{AnnotationHints, ToolSelector, VirtualServerConfig};
use toolgate_runtime::catalog::ToolEntry;
use toolgate_runtime::policy::guardrails::GuardrailSet;
use toolgate_runtime::{CallScope, ErrorKind, ToolDescriptor, ToolError, Toolset};

use super::rest::error::RestError;
use super::{Caller, Gateway, GatewayError};
use crate::gateway::mcp::listing::ToolListing;

/// `toolgate_server_calls_total{server,tool,outcome}`: calls made through a virtual server.
pub const SERVER_CALLS_TOTAL: &str = "toolgate_server_calls_total";

/// One virtual server of the gateway (see the [module docs](self)).
pub struct VirtualServer {
    id: String,
    title: Option<String>,
    instructions: Option<String>,
    roles: Vec<String>,
    prefix: String,
    include: Vec<Selector>,
    exclude: Vec<Selector>,
    /// The server's own `tools/list` cache.
    listing: ToolListing,
    /// `guardrails`: run on every call made through the server, besides the tool's own
    /// (`None`: none named).
    guardrails: Option<GuardrailSet>,
}

/// A compiled [`ToolSelector`].
struct Selector {
    source: Option<String>,
    name: Option<glob::Pattern>,
    tag: Option<String>,
    category: Option<String>,
    annotations: Option<AnnotationHints>,
}

impl Selector {
    fn new(config: &ToolSelector, server: &str) -> Result<Self, GatewayError> {
        let name = config
            .name
            .as_deref()
            .map(glob::Pattern::new)
            .transpose()
            .map_err(|e| {
                GatewayError::Config(format!(
                    "gateway.servers `{server}`: `{}` is not a glob: {e}",
                    config.name.as_deref().unwrap_or_default()
                ))
            })?;
        Ok(Self {
            source: config.source.clone(),
            name,
            tag: config.tag.clone(),
            category: config.category.clone(),
            annotations: config.annotations.clone(),
        })
    }

    /// Whether it names source `source` and nothing else (so it matches all of its tools).
    fn is_whole_source(&self, source: &str) -> bool {
        self.source.as_deref() == Some(source)
            && self.name.is_none()
            && self.tag.is_none()
            && self.category.is_none()
            && self.annotations.is_none()
    }

    fn matches(&self, tool: &ToolDescriptor, exported: &str) -> bool {
        let hint = |wanted: Option<bool>, has: Option<bool>| wanted.is_none() || wanted == has;
        self.source.as_ref().is_none_or(|s| *s == tool.source)
            && self
                .name
                .as_ref()
                .is_none_or(|p| p.matches(&tool.name) || p.matches(exported))
            && self.tag.as_ref().is_none_or(|t| tool.tags.contains(t))
            && self
                .category
                .as_ref()
                .is_none_or(|c| tool.category.as_ref() == Some(c))
            && self.annotations.as_ref().is_none_or(|a| {
                let has = &tool.annotations;
                hint(a.read_only_hint, has.read_only_hint)
                    && hint(a.destructive_hint, has.destructive_hint)
                    && hint(a.idempotent_hint, has.idempotent_hint)
                    && hint(a.open_world_hint, has.open_world_hint)
            })
    }
}

impl VirtualServer {
    /// The server `config` describes, over `toolset` (whose guardrails its `guardrails` name);
    /// its listing's cursors are tagged with `cursor_key` (derived from
    /// `gateway.session_key`) when given, else with a key of its own.
    ///
    /// # Errors
    /// [`GatewayError::Config`] for an id that is not one URL path segment, a name that is
    /// not a glob, or a guardrail the toolset does not have.
    pub(crate) fn new(
        config: &VirtualServerConfig,
        cursor_key: Option<[u8; 32]>,
        toolset: &Toolset,
    ) -> Result<Self, GatewayError> {
        let id = &config.id;
        if !toolgate_model::config::is_server_id(id) {
            return Err(GatewayError::Config(format!(
                "gateway.servers: id `{id}` is not one URL path segment (1 to 64 letters, digits, `-`, `_`)"
            )));
        }
        let compile = |list: &[ToolSelector]| {
            list.iter()
                .map(|s| Selector::new(s, id))
                .collect::<Result<Vec<_>, _>>()
        };
        let listing = match cursor_key {
            // Each server's cursors are its own: the key is the shared one bound to the id.
            Some(key) => {
                let mut bound = [0u8; 32];
                let digest = aws_lc_rs::digest::digest(
                    &aws_lc_rs::digest::SHA256,
                    &[&key[..], b"\0server\0", id.as_bytes()].concat(),
                );
                bound.copy_from_slice(digest.as_ref());
                ToolListing::keyed(bound)
            }
            None => ToolListing::default(),
        };
        let guardrails = toolset
            .guardrail_set(&config.guardrails)
            .map_err(|unknown| {
                GatewayError::Config(format!(
                    "gateway.servers `{id}`: guardrails names `{unknown}`, which is neither in policy.guardrails nor registered with ToolsetBuilder::guardrail"
                ))
            })?;
        Ok(Self {
            guardrails: (!guardrails.is_empty()).then_some(guardrails),
            id: id.clone(),
            title: config.title.clone(),
            instructions: config.instructions.clone(),
            roles: config.roles.clone(),
            prefix: config.prefix.clone().unwrap_or_default(),
            include: compile(&config.tools.include)?,
            exclude: compile(&config.tools.exclude)?,
            listing,
        })
    }

    /// The server's id (its path segment and metrics label).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The title of its `initialize` answer (default: the id).
    pub(crate) fn title(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.id)
    }

    /// The instructions of its `initialize` answer, if configured.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The guardrails of calls made through the server, besides each tool's own (`None`:
    /// none).
    pub(crate) fn guardrails(&self) -> Option<&GuardrailSet> {
        self.guardrails.as_ref()
    }

    pub(crate) fn listing(&self) -> &ToolListing {
        &self.listing
    }

    /// Whether the server selects the tool of `entry`.
    pub(crate) fn selects(&self, entry: &ToolEntry) -> bool {
        let (tool, exported) = (entry.descriptor(), entry.exported_name());
        (self.include.is_empty() || self.include.iter().any(|s| s.matches(tool, exported)))
            && !self.exclude.iter().any(|s| s.matches(tool, exported))
    }

    /// Whether the server passes through the resources, resource templates, prompts and
    /// completions of MCP source `source`: an exclude selector naming only that source keeps
    /// it out; else, without include selectors, every source is in; with them, a source an
    /// include selector names by `source`, or one of whose tools the server selects.
    pub(crate) fn includes_source(&self, source: &str, toolset: &Toolset) -> bool {
        if self.exclude.iter().any(|s| s.is_whole_source(source)) {
            return false;
        }
        self.include.is_empty()
            || self
                .include
                .iter()
                .any(|s| s.source.as_deref() == Some(source))
            || toolset
                .entries()
                .iter()
                .any(|e| e.descriptor().source == source && self.selects(e))
    }

    /// Whether `caller` may use the server: it has no roles, or the caller has one of them (as
    /// a role or a token scope).
    pub(crate) fn admits(&self, caller: &Caller) -> bool {
        self.roles.is_empty()
            || self
                .roles
                .iter()
                .any(|r| caller.roles.contains(r) || caller.scopes.contains(r))
    }

    /// The name the server shows for the tool exported as `exported`.
    pub(crate) fn shown_name(&self, exported: &str) -> String {
        format!("{}{exported}", self.prefix)
    }

    /// The catalog entry of the tool the server shows as `name` (its prefix, then either name
    /// form), if the server selects it.
    pub(crate) fn entry(&self, toolset: &Toolset, name: &str) -> Option<Arc<ToolEntry>> {
        let bare = name.strip_prefix(self.prefix.as_str())?;
        toolset.entry(bare).filter(|e| self.selects(e))
    }

    /// The toolset's name of the tool the server shows as `name`, or `not_found` naming the
    /// server.
    ///
    /// # Errors
    /// `not_found` when the server does not select such a tool.
    pub(crate) fn resolve(&self, toolset: &Toolset, name: &str) -> Result<String, ToolError> {
        self.entry(toolset, name)
            .map(|e| e.name().to_string())
            .ok_or_else(|| self.refusal(name))
    }

    /// A hash of what the server lists: the names and definitions of the tools it selects.
    /// Equal before and after a change of the toolset: the change is not this server's.
    pub(crate) fn fingerprint(&self, toolset: &Toolset) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for entry in toolset.entries().iter().filter(|e| self.selects(e)) {
            entry.exported_name().hash(&mut hasher);
            // An equal descriptor keeps its entry (and its `Arc`) across a rebuild.
            std::ptr::hash(Arc::as_ptr(entry.descriptor()), &mut hasher);
        }
        hasher.finish()
    }

    /// Counts a call made through the server.
    pub(crate) fn count_call(&self, tool: &str, outcome: &str) {
        metrics::counter!(
            SERVER_CALLS_TOTAL,
            "server" => self.id.clone(),
            "tool" => tool.to_string(),
            "outcome" => outcome.to_string()
        )
        .increment(1);
    }
}

/// The server as the scope of the calls made through it: calls made on their behalf (code run
/// by `run_python`, a tool calling tools) reach only the tools it selects (others are
/// `not_found` naming the server, as a direct call) and pass its guardrails.
impl CallScope for VirtualServer {
    fn admits(&self, entry: &ToolEntry) -> bool {
        self.selects(entry)
    }

    fn refusal(&self, name: &str) -> ToolError {
        ToolError::new(
            ErrorKind::NotFound,
            format!("no tool `{name}` on server `{}`", self.id),
        )
    }

    fn guardrails(&self) -> Option<&GuardrailSet> {
        self.guardrails.as_ref()
    }
}

impl std::fmt::Debug for VirtualServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualServer")
            .field("id", &self.id)
            .field("roles", &self.roles)
            .field("prefix", &self.prefix)
            .field("guardrails", &self.guardrails)
            .finish_non_exhaustive()
    }
}

/// Every virtual server's routes: `/mcp/{id}`, `/servers/{id}/sse` and `/servers/{id}/message`,
/// `/servers/{id}/tools…`, each behind the server's role check ([`admit`]).
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    let mut router = axum::Router::new();
    for server in &gateway.settings().servers {
        let routes = axum::Router::new()
            .merge(crate::gateway::mcp::http::router_at(
                gateway,
                &format!("/mcp/{}", server.id()),
                Some(Arc::clone(server)),
            ))
            .nest(
                &format!("/servers/{}", server.id()),
                crate::gateway::mcp::sse::router_for(gateway, Some(Arc::clone(server))),
            )
            .merge(rest::router(gateway, server))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(server),
                admit,
            ));
        router = router.merge(routes);
    }
    router
}

/// Warns about each virtual server that selects no tool once discovery is done: its
/// selectors match nothing the sources offer.
pub(crate) fn warn_empty(gateway: &Gateway) {
    let entries = gateway.toolset().entries();
    for server in &gateway.settings().servers {
        if !entries.iter().any(|e| server.selects(e)) {
            tracing::warn!(
                server = %server.id,
                "virtual server `{}` selects no tool: check its tools.include and tools.exclude",
                server.id
            );
        }
    }
}

/// Refuses with 403 a caller the server does not admit (on every route of the server), with a
/// ToolError JSON body naming the server and its roles.
pub(crate) async fn admit(
    State(server): State<Arc<VirtualServer>>,
    request: Request,
    next: Next,
) -> Response {
    let caller = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_default();
    if server.admits(&caller) {
        return next.run(request).await;
    }
    tracing::debug!(server = %server.id, caller = ?caller.name, "virtual server refused a caller without its roles");
    RestError::new(
        StatusCode::FORBIDDEN,
        ToolError::new(
            ErrorKind::PermissionDenied,
            format!(
                "server `{}` needs one of the roles {}",
                server.id,
                server
                    .roles
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    )
    .into_response()
}
