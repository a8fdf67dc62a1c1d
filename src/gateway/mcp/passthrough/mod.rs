//! Resources, resource templates, prompts, completions, resource subscriptions and log
//! messages of the MCP servers behind the gateway, passed through to the gateway's clients
//! (MCP 2025-11-25 "Server Features": resources, prompts; "Utilities": completion, logging).
//!
//! - **Virtual servers** (`/mcp/{id}`): every request and notification below involves only
//!   the MCP sources the server includes (an include selector names the source, or the server
//!   selects one of its tools; every source when it has no include selector, less those an
//!   exclude selector names alone): another source's resources are neither listed nor read,
//!   its prompts neither listed nor got. Capabilities are the gateway's.
//! - **Listings** (`resources/list`, `resources/templates/list`, `prompts/list`): every MCP
//!   source's items, in source order, each server asked at once (every page, bounded by the
//!   client's `max_list_pages` and request timeout). A server without the capability adds
//!   nothing; one that fails is logged and left out; the listing fails only when every server
//!   failed. The gateway pages the result itself (offset cursors, `gateway.page_size` items;
//!   each page lists the servers again). A `lazy` source is contacted by the first listing (or
//!   request) that needs it: listing its resources is a use of it.
//! - **Names.** Resource URIs and URI templates are global: passed unchanged (the first server
//!   listing a URI keeps it). Prompt names are those of the source's tools: `{id}__{name}` for
//!   a prefixed source (the exported form of `{id}.{name}`), the server's own name for a
//!   source mounted with `prefix: false`; requests are routed back by that name.
//! - **Routing by URI** (`resources/read`, `resources/subscribe`, completions of a template):
//!   the servers whose last listing had the URI (or the template) first, then those with a
//!   template describing it (RFC 6570), then every other server in source order; the first
//!   answer wins. When all fail, the first error that is not a "not mine" (-32002 resource
//!   not found, -32602, -32601) is returned, else the first one: with a single server, its own
//!   error, unchanged.
//! - **Errors** of a server are passed on with its JSON-RPC code, message and data; a server
//!   that cannot be reached or does not answer in time is -32603 with a message naming it.
//! - **`toolgate://results/…`** URIs (results cut to a size limit, see
//!   `RemoteSourceBuilder::max_result_bytes`) are read from the toolset's store: the text of
//!   the stored output (JSON for a structured-only result); they are not listed (they are
//!   short-lived), and subscribing to one is accepted and never notified (they never change).
//! - **Subscriptions, list changes, log messages**: see [`relay`].
//!
//! Capabilities: with at least one MCP source configured, `resources` (`subscribe`,
//! `listChanged`), `prompts` (`listChanged`) and `completions` are advertised — whether or
//! not discovery has finished when `initialize` is answered; a feature no server has answers
//! with an empty list. With no MCP source but a remote source, only `resources` (without
//! `subscribe`/`listChanged`): its stored results can be read. With neither, none of them
//! (the handler adds `resources` when the toolset has skills: `skill://` resources, listed
//! before the servers' and read by the gateway's `skills` module).

mod relay;
mod results;

use futures::future::join_all;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, PromptsCapability, ReadResourceRequestParams, ReadResourceResponse,
    Reference, Resource, ResourcesCapability, ServerCapabilities, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use toolgate_model::names::EXPORTED_SEPARATOR;
use toolgate_runtime::ToolError;
use toolgate_runtime::mcp::{McpBackend, McpServerHandle};
use toolgate_runtime::remote::RESULT_URI_PREFIX;

use crate::gateway::Gateway;
use crate::gateway::servers::VirtualServer;

pub(super) use relay::{Listener, SessionState, relay};

/// The MCP servers behind the gateway, in source order.
fn servers(gateway: &Gateway) -> Vec<McpServerHandle> {
    toolgate_runtime::mcp::servers(gateway.toolset())
}

/// The MCP servers whose resources and prompts the session's server passes through, in
/// source order: every one on the default server; on a virtual server, those of the sources
/// it includes ([`VirtualServer::includes_source`]), once start-up discovery is done (at most
/// as long as `tools/list` waits for it), so that a source it includes by its tools counts.
async fn servers_on(gateway: &Gateway, on: Option<&VirtualServer>) -> Vec<McpServerHandle> {
    let mut all = servers(gateway);
    if let Some(server) = on {
        if !all.is_empty() {
            gateway.wait_ready(super::LIST_WAITS_FOR_DISCOVERY).await;
        }
        all.retain(|s| server.includes_source(&s.id, gateway.toolset()));
    }
    all
}

/// Adds what the passthrough offers to the gateway's capabilities (see the module docs).
pub(super) fn capabilities(gateway: &Gateway, capabilities: &mut ServerCapabilities) {
    if !servers(gateway).is_empty() {
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        capabilities.resources = Some(resources);
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(true);
        capabilities.prompts = Some(prompts);
        capabilities.completions = Some(Default::default());
    } else if gateway
        .toolset()
        .sources()
        .iter()
        .any(|s| toolgate_runtime::policy::pinning::is_remote(s.kind()))
    {
        capabilities.resources = Some(ResourcesCapability::default());
    }
}

/// What a 2026-07-28 `subscriptions/listen` stream gets of the passthrough: resource and
/// prompt list changes when asked, and updates of every URI asked for (subscribed upstream
/// by the [`Listener`]). Nothing without an MCP source.
pub(super) fn accept_subscription(
    gateway: &Gateway,
    requested: &SubscriptionFilter,
    accepted: &mut SubscriptionFilter,
) {
    if servers(gateway).is_empty() {
        return;
    }
    if requested.prompts_list_changed == Some(true) {
        accepted.prompts_list_changed = Some(true);
    }
    if requested.resources_list_changed == Some(true) {
        accepted.resources_list_changed = Some(true);
    }
    if let Some(uris) = requested
        .resource_subscriptions
        .as_ref()
        .filter(|u| !u.is_empty())
    {
        accepted.resource_subscriptions = Some(uris.clone());
    }
}

/// `resources/list`: `first` (the gateway's own resources: skills), then every server's
/// resources, deduplicated by URI, paged.
pub(super) async fn list_resources(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    first: Vec<Resource>,
    request: Option<PaginatedRequestParams>,
    _context: RequestContext<RoleServer>,
) -> Result<ListResourcesResult, McpError> {
    let start = super::offset(request.as_ref())?;
    let servers = servers_on(gateway, on).await;
    let lists = join_all(servers.iter().map(|s| s.backend.list_resources())).await;
    let mut seen = std::collections::HashSet::new();
    let all: Vec<_> = first
        .into_iter()
        .chain(
            gather(&servers, "resources/list", lists)?
                .into_iter()
                .flat_map(|(_, items)| items),
        )
        .filter(|r| seen.insert(r.uri.clone()))
        .collect();
    let (items, next_cursor) = page(all, start, gateway.settings().page_size)?;
    let mut result = ListResourcesResult::with_all_items(items);
    result.next_cursor = next_cursor;
    Ok(result)
}

/// `resources/templates/list`: every server's templates, deduplicated, paged.
pub(super) async fn list_resource_templates(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    request: Option<PaginatedRequestParams>,
    _context: RequestContext<RoleServer>,
) -> Result<ListResourceTemplatesResult, McpError> {
    let start = super::offset(request.as_ref())?;
    let servers = servers_on(gateway, on).await;
    let lists = join_all(servers.iter().map(|s| s.backend.list_resource_templates())).await;
    let mut seen = std::collections::HashSet::new();
    let all: Vec<_> = gather(&servers, "resources/templates/list", lists)?
        .into_iter()
        .flat_map(|(_, items)| items)
        .filter(|t| seen.insert(t.uri_template.clone()))
        .collect();
    let (items, next_cursor) = page(all, start, gateway.settings().page_size)?;
    let mut result = ListResourceTemplatesResult::with_all_items(items);
    result.next_cursor = next_cursor;
    Ok(result)
}

/// `resources/read`: a stored result, or the first server that has the URI.
pub(super) async fn read_resource(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    request: ReadResourceRequestParams,
    _context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, McpError> {
    if request.uri.starts_with(RESULT_URI_PREFIX) {
        return results::read(gateway, on, &request.uri).await;
    }
    let servers = servers_on(gateway, on).await;
    let mut params = request.clone();
    params.meta = None;
    first_answer(by_uri(&servers, &request.uri), |b| {
        b.read_resource(params.clone())
    })
    .await
    .unwrap_or_else(|| {
        Err(McpError::resource_not_found(
            format!(
                "Resource {} not found: no MCP server behind the gateway",
                request.uri
            ),
            None,
        ))
    })
}

/// `resources/subscribe` (initialize era): forwarded to the first server that accepts it,
/// remembered for this session (see [`relay`]).
pub(super) async fn subscribe(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    session: &SessionState,
    request: SubscribeRequestParams,
    _context: RequestContext<RoleServer>,
) -> Result<(), McpError> {
    if request.uri.starts_with(RESULT_URI_PREFIX) {
        return Ok(());
    }
    session
        .subscribe(&servers_on(gateway, on).await, &request.uri)
        .await
}

/// `resources/unsubscribe`: takes back this session's subscription (nothing is sent for a
/// URI it never subscribed to).
pub(super) async fn unsubscribe(
    _gateway: &Gateway,
    session: &SessionState,
    request: UnsubscribeRequestParams,
    _context: RequestContext<RoleServer>,
) -> Result<(), McpError> {
    session.unsubscribe(&request.uri).await
}

/// `prompts/list`: every server's prompts under the names the gateway gives them, paged.
pub(super) async fn list_prompts(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    request: Option<PaginatedRequestParams>,
    _context: RequestContext<RoleServer>,
) -> Result<ListPromptsResult, McpError> {
    let start = super::offset(request.as_ref())?;
    let servers = servers_on(gateway, on).await;
    let lists = join_all(servers.iter().map(|s| s.backend.list_prompts())).await;
    let mut seen = std::collections::HashSet::new();
    let mut all = Vec::new();
    for (i, prompts) in gather(&servers, "prompts/list", lists)? {
        for mut prompt in prompts {
            prompt.name = exported_prompt(&servers[i], &prompt.name);
            if seen.insert(prompt.name.clone()) {
                all.push(prompt);
            } else {
                tracing::debug!(source = %servers[i].id, prompt = %prompt.name, "prompt listed by an earlier source too; left out");
            }
        }
    }
    let (items, next_cursor) = page(all, start, gateway.settings().page_size)?;
    let mut result = ListPromptsResult::with_all_items(items);
    result.next_cursor = next_cursor;
    Ok(result)
}

/// `prompts/get`: routed by the prompt's name (see the module docs).
pub(super) async fn get_prompt(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    request: GetPromptRequestParams,
    _context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, McpError> {
    let servers = servers_on(gateway, on).await;
    let routes = by_prompt(&servers, &request.name);
    let mut params = request.clone();
    params.meta = None;
    first_answer(routes, |(backend, name)| {
        let mut params = params.clone();
        params.name = name;
        async move { backend.get_prompt(params).await }
    })
    .await
    .unwrap_or_else(|| {
        Err(McpError::invalid_params(
            format!("Prompt {} not found", request.name),
            None,
        ))
    })
}

/// `completion/complete`: a prompt argument routed by the prompt's name, a template
/// argument by the template. No server to ask: no values.
pub(super) async fn complete(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    request: CompleteRequestParams,
    _context: RequestContext<RoleServer>,
) -> Result<CompleteResult, McpError> {
    let servers = servers_on(gateway, on).await;
    let mut params = request.clone();
    params.meta = None;
    let answer = match &request.r#ref {
        Reference::Prompt(prompt) => {
            first_answer(by_prompt(&servers, &prompt.name), |(backend, name)| {
                let mut params = params.clone();
                if let Reference::Prompt(p) = &mut params.r#ref {
                    p.name = name;
                }
                async move { backend.complete(params).await }
            })
            .await
        }
        Reference::Resource(template) => {
            first_answer(by_template(&servers, &template.uri), |b| {
                b.complete(params.clone())
            })
            .await
        }
        _ => None,
    };
    answer.unwrap_or_else(|| Ok(CompleteResult::new(CompletionInfo::default())))
}

/// The name a client sees for `server`'s prompt `name`.
fn exported_prompt(server: &McpServerHandle, name: &str) -> String {
    if server.prefixed {
        format!("{}{EXPORTED_SEPARATOR}{name}", server.id)
    } else {
        name.to_string()
    }
}

/// Where prompt `name` (as a client names it) may be, with the server's name for it: the
/// prefixed source whose id it starts with; else the unprefixed sources, those whose last
/// listing had it first.
fn by_prompt<'a>(servers: &'a [McpServerHandle], name: &str) -> Vec<(&'a McpBackend, String)> {
    if let Some((id, rest)) = name.split_once(EXPORTED_SEPARATOR)
        && let Some(s) = servers.iter().find(|s| s.prefixed && s.id == id)
    {
        return vec![(&s.backend, rest.to_string())];
    }
    let unprefixed = || servers.iter().filter(|s| !s.prefixed);
    let listed = |s: &&McpServerHandle| s.backend.listed_prompt(name);
    unprefixed()
        .filter(listed)
        .chain(unprefixed().filter(|s| !listed(s)))
        .map(|s| (&s.backend, name.to_string()))
        .collect()
}

/// The servers that may have URI template `template`: those whose last listing had it
/// first.
fn by_template<'a>(servers: &'a [McpServerHandle], template: &str) -> Vec<&'a McpBackend> {
    let mut ranked: Vec<_> = servers
        .iter()
        .map(|s| (!s.backend.listed_template(template), &s.backend))
        .collect();
    ranked.sort_by_key(|(r, _)| *r);
    ranked.into_iter().map(|(_, b)| b).collect()
}

/// The servers that may have resource `uri`, most likely first.
fn by_uri<'a>(servers: &'a [McpServerHandle], uri: &str) -> Vec<&'a McpBackend> {
    let rank = |s: &McpServerHandle| {
        if s.backend.listed_resource(uri) {
            0
        } else if s.backend.listed_template_for(uri) {
            1
        } else {
            2
        }
    };
    let mut ranked: Vec<_> = servers.iter().map(|s| (rank(s), &s.backend)).collect();
    ranked.sort_by_key(|(r, _)| *r);
    ranked.into_iter().map(|(_, b)| b).collect()
}

/// Tries `routes` in turn; the first success, else the most telling error (see the module
/// docs); `None` when there is no route.
async fn first_answer<R, T, Fut>(
    routes: impl IntoIterator<Item = R>,
    ask: impl Fn(R) -> Fut,
) -> Option<Result<T, McpError>>
where
    Fut: Future<Output = Result<T, ToolError>>,
{
    let mut errors = Vec::new();
    for route in routes {
        match ask(route).await {
            Ok(answer) => return Some(Ok(answer)),
            Err(e) => {
                tracing::debug!(error = %e, "MCP server could not answer; trying the next one");
                errors.push(mcp_error(&e));
            }
        }
    }
    let not_mine = [
        ErrorCode::RESOURCE_NOT_FOUND,
        ErrorCode::INVALID_PARAMS,
        ErrorCode::METHOD_NOT_FOUND,
    ];
    let telling = errors.iter().position(|e| !not_mine.contains(&e.code));
    let index = telling.unwrap_or(0);
    (index < errors.len()).then(|| Err(errors.swap_remove(index)))
}

/// Each server's listing, in source order (index into `servers`); a failed one is logged and
/// left out.
///
/// # Errors
/// The first server's error when every server failed.
fn gather<T>(
    servers: &[McpServerHandle],
    what: &str,
    lists: Vec<Result<Vec<T>, ToolError>>,
) -> Result<Vec<(usize, Vec<T>)>, McpError> {
    let mut out = Vec::with_capacity(lists.len());
    let mut first_error = None;
    for (i, list) in lists.into_iter().enumerate() {
        match list {
            Ok(items) => out.push((i, items)),
            Err(e) => {
                tracing::warn!(source = %servers[i].id, error = %e, "{what}: left out of the listing");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if out.is_empty() => Err(mcp_error(&e)),
        _ => Ok(out),
    }
}

/// The page of `all` starting at `start`, and the cursor of the next one.
fn page<T>(
    mut all: Vec<T>,
    start: usize,
    size: usize,
) -> Result<(Vec<T>, Option<String>), McpError> {
    if start > all.len() {
        return Err(McpError::invalid_params(
            format!("invalid cursor `{start}`: past the end of the list"),
            None,
        ));
    }
    let end = start.saturating_add(size).min(all.len());
    let next = (end < all.len()).then(|| super::cursor(end));
    all.truncate(end);
    Ok((all.split_off(start), next))
}

/// A server's error as the gateway's client gets it: the server's own JSON-RPC error when it
/// sent one (its code, message and data, from the error's details), else -32603 with the
/// message (which names the server).
fn mcp_error(e: &ToolError) -> McpError {
    let details = e.details();
    let code = details
        .and_then(|d| d.get("code"))
        .and_then(serde_json::Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let message = details
        .and_then(|d| d.get("message"))
        .and_then(serde_json::Value::as_str);
    match (code, message) {
        (Some(code), Some(message)) => McpError::new(
            ErrorCode(code),
            message.to_string(),
            details.and_then(|d| d.get("data")).cloned(),
        ),
        _ => McpError::internal_error(e.message().to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_runtime::ErrorKind;

    #[test]
    fn pages_cut_the_list_with_offset_cursors() {
        let (items, next) = page((0..5).collect(), 0, 2).unwrap();
        assert_eq!((items, next.as_deref()), (vec![0, 1], Some("2")));
        let (items, next) = page((0..5).collect(), 4, 2).unwrap();
        assert_eq!((items, next), (vec![4], None));
        let (items, next) = page((0..5).collect::<Vec<_>>(), 5, 2).unwrap();
        assert_eq!((items.len(), next), (0, None));
        assert!(page((0..5).collect::<Vec<_>>(), 6, 2).is_err());
    }

    #[test]
    fn server_errors_keep_their_code_and_message() {
        let e = ToolError::new(ErrorKind::Protocol, "server `x` answered …").with_details(
            serde_json::json!({"server": "x", "code": -32002, "message": "Resource a://b not found", "data": {"uri": "a://b"}}),
        );
        let m = mcp_error(&e);
        assert_eq!(m.code, ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(m.message, "Resource a://b not found");
        assert_eq!(m.data, Some(serde_json::json!({"uri": "a://b"})));
        let m = mcp_error(&ToolError::new(
            ErrorKind::Timeout,
            "server `x` did not answer",
        ));
        assert_eq!(m.code, ErrorCode::INTERNAL_ERROR);
        assert!(m.message.contains("server `x`"));
    }

    #[tokio::test]
    async fn the_most_telling_error_wins() {
        let not_found = || {
            ToolError::new(ErrorKind::Protocol, "nf")
                .with_details(serde_json::json!({"code": -32002, "message": "not found"}))
        };
        let broken = ToolError::new(ErrorKind::Network, "server `b` closed the connection");
        let routes = vec![Err(not_found()), Err(broken), Err(not_found())];
        let r: Option<Result<(), _>> = first_answer(routes, |r| async move { r }).await;
        assert_eq!(r.unwrap().unwrap_err().code, ErrorCode::INTERNAL_ERROR);
        let r: Option<Result<(), _>> =
            first_answer(vec![Err(not_found())], |r| async move { r }).await;
        assert_eq!(r.unwrap().unwrap_err().code, ErrorCode::RESOURCE_NOT_FOUND);
        let r: Option<Result<(), McpError>> =
            first_answer(Vec::<Result<(), ToolError>>::new(), |r| async move { r }).await;
        assert!(r.is_none());
        let r = first_answer(vec![Err(not_found()), Ok(7)], |r| async move { r }).await;
        assert_eq!(r.unwrap().unwrap(), 7);
    }
}
