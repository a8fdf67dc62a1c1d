//! The read-only pages: sources, tools (search and filters), the call log and its stream.

use std::convert::Infallible;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde::Deserialize;
use toolgate_model::names::exported_name;
use toolgate_runtime::catalog::ToolEntry;
use toolgate_runtime::{SourceStatus, ToolAnnotations};

use super::log::CallRecord;
use super::render::{Chrome, page};
use super::session::Session;
use crate::gateway::Gateway;

/// One source row.
pub(crate) struct SourceRow {
    pub id: String,
    pub kind: String,
    pub state: String,
    pub tools: usize,
    pub protocol: String,
    pub server: String,
    pub error: String,
    pub discovery_ms: String,
    pub ping_ms: String,
}

impl From<SourceStatus> for SourceRow {
    fn from(s: SourceStatus) -> Self {
        let ms = |v: Option<u64>| v.map_or_else(|| "—".to_string(), |v| format!("{v} ms"));
        let state = serde_json::to_value(s.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Self {
            state: if s.lazy && state == "pending" {
                "lazy, not contacted yet".to_string()
            } else {
                state
            },
            id: s.id,
            kind: s.kind,
            tools: s.tools,
            protocol: s.protocol.unwrap_or_else(|| "—".into()),
            server: s.server.unwrap_or_else(|| "—".into()),
            error: s.error.unwrap_or_default(),
            discovery_ms: ms(s.discovery_ms),
            ping_ms: ms(s.ping_ms),
        }
    }
}

#[derive(Template)]
#[template(path = "sources.html", config = "src/gateway/console/askama.toml")]
struct Sources {
    chrome: Option<Chrome>,
    sources: Vec<SourceRow>,
    catalog_generation: u64,
    config_generation: u64,
}

/// `GET /console/sources`: what `GET /sources` answers, as a table.
pub(crate) async fn sources(State(gateway): State<Gateway>, session: Session) -> Response {
    super::pinning::observe(&gateway);
    page(
        &Sources {
            chrome: Some(Chrome::new(&session, "sources")),
            sources: gateway
                .toolset()
                .statuses()
                .into_iter()
                .map(SourceRow::from)
                .collect(),
            catalog_generation: gateway.toolset().catalog().generation(),
            config_generation: gateway.toolset().config_generation(),
        },
        StatusCode::OK,
    )
}

/// The filters of the tools page (all optional; empty means none).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolsQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    tag: String,
    #[serde(default)]
    category: String,
    /// `read_only`, `destructive`, `idempotent` or `open_world`: only tools with that hint.
    #[serde(default)]
    annotation: String,
}

/// One tool row.
pub(crate) struct ToolRow {
    pub name: String,
    pub exported_name: String,
    pub description: String,
    pub source: String,
    pub category: String,
    pub tags: String,
    pub hints: String,
    pub score: String,
}

/// The annotation hints set to `true`, as words.
pub(crate) fn hints(a: &ToolAnnotations) -> Vec<&'static str> {
    [
        (a.read_only_hint, "read-only"),
        (a.destructive_hint, "destructive"),
        (a.idempotent_hint, "idempotent"),
        (a.open_world_hint, "open world"),
    ]
    .into_iter()
    .filter(|(v, _)| *v == Some(true))
    .map(|(_, w)| w)
    .collect()
}

fn has_hint(a: &ToolAnnotations, which: &str) -> bool {
    let v = match which {
        "read_only" => a.read_only_hint,
        "destructive" => a.destructive_hint,
        "idempotent" => a.idempotent_hint,
        "open_world" => a.open_world_hint,
        _ => return true,
    };
    v == Some(true)
}

#[derive(Template)]
#[template(path = "tools.html", config = "src/gateway/console/askama.toml")]
struct Tools {
    chrome: Option<Chrome>,
    query: ToolsQuery,
    sources: Vec<String>,
    tools: Vec<ToolRow>,
    note: Option<String>,
    searched: bool,
}

/// `GET /console/tools`: the tools the caller may call, searched with the toolset's search
/// (the one `GET /tools?q=` and the MCP `search_tools` use) and filtered.
pub(crate) async fn tools(
    State(gateway): State<Gateway>,
    session: Session,
    Query(query): Query<ToolsQuery>,
) -> Response {
    gateway
        .wait_ready(crate::gateway::rest::tools::LIST_WAITS_FOR_DISCOVERY)
        .await;
    let toolset = gateway.toolset();
    let identity = session.caller.identity();
    let nonempty = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let mut note = None;
    let q = query.q.trim();
    let found: Vec<(Arc<ToolEntry>, Option<f32>)> = if q.is_empty() {
        toolset
            .entries_for(&identity)
            .into_iter()
            .filter(|e| {
                let d = e.descriptor();
                nonempty(&query.source).is_none_or(|s| d.source == s)
                    && nonempty(&query.category).is_none_or(|c| d.category.as_deref() == Some(&c))
                    && nonempty(&query.tag).is_none_or(|t| d.tags.contains(&t))
            })
            .map(|e| (e, None))
            .collect()
    } else {
        let mut options = toolgate_runtime::SearchOptions::new().k(50);
        options.source = nonempty(&query.source);
        options.category = nonempty(&query.category);
        options.tags.extend(nonempty(&query.tag));
        match toolset.search(&identity, q, &options) {
            Ok(hits) => hits.into_iter().map(|h| (h.entry, Some(h.score))).collect(),
            Err(e) => {
                note = Some(e.message().to_string());
                Vec::new()
            }
        }
    };
    let tools = found
        .into_iter()
        .filter(|(e, _)| has_hint(&e.descriptor().annotations, &query.annotation))
        .map(|(e, score)| {
            let d = e.descriptor();
            ToolRow {
                name: d.name.clone(),
                exported_name: exported_name(&d.name).into_owned(),
                description: d.description.clone(),
                source: d.source.clone(),
                category: d.category.clone().unwrap_or_default(),
                tags: d.tags.join(", "),
                hints: hints(&d.annotations).join(", "),
                score: score.map(|s| format!("{s:.2}")).unwrap_or_default(),
            }
        })
        .collect();
    page(
        &Tools {
            chrome: Some(Chrome::new(&session, "tools")),
            sources: toolset
                .sources()
                .iter()
                .map(|s| s.id().to_string())
                .collect(),
            searched: !q.is_empty(),
            query,
            tools,
            note,
        },
        StatusCode::OK,
    )
}

/// One row of the call log, as shown.
pub(crate) struct CallRow {
    pub time: String,
    pub caller: String,
    pub tool: String,
    pub outcome: String,
    pub latency: String,
    pub cost: String,
    pub retries: u32,
    pub cache_hit: &'static str,
}

impl From<&CallRecord> for CallRow {
    fn from(r: &CallRecord) -> Self {
        Self {
            time: r.time.clone(),
            caller: r.caller.clone(),
            tool: r.tool.clone(),
            outcome: r.outcome.clone(),
            latency: format!("{} ms", r.latency_ms),
            cost: r.cost.map(|c| c.to_string()).unwrap_or_else(|| "—".into()),
            retries: r.retries,
            cache_hit: if r.cache_hit { "yes" } else { "no" },
        }
    }
}

#[derive(Template)]
#[template(path = "calls.html", config = "src/gateway/console/askama.toml")]
struct Calls {
    chrome: Option<Chrome>,
    calls: Vec<CallRow>,
    capacity: usize,
}

/// `GET /console/calls`: the call log as it stands; the page's script adds each new call
/// from the stream.
pub(crate) async fn calls(State(gateway): State<Gateway>, session: Session) -> Response {
    page(
        &Calls {
            chrome: Some(Chrome::new(&session, "calls")),
            calls: gateway
                .console()
                .log
                .recent()
                .iter()
                .filter(|r| sees_call(&gateway, &session, r))
                .map(|r| CallRow::from(&**r))
                .collect(),
            capacity: super::log::CAPACITY,
        },
        StatusCode::OK,
    )
}

/// Whether `session` may see `record` in the log: a call of a tool its caller may call (or
/// one no longer in the catalog that the caller made), as listings show tools.
fn sees_call(gateway: &Gateway, session: &super::Session, record: &CallRecord) -> bool {
    let identity = session.caller.identity();
    match gateway.toolset().describe(&record.tool) {
        Some(tool) => gateway.toolset().may_call(&tool, &identity),
        None => session.caller.name.as_deref().unwrap_or("anonymous") == record.caller,
    }
}

/// How many call-log streams one session may hold open at once.
pub(crate) const STREAMS_PER_SESSION: usize = 4;

/// How often an open stream checks that its session still holds (signed out, expired, its
/// API key dropped by a reload: the stream ends).
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// `GET /console/calls/stream`: each call as it ends, as an SSE event `call` whose data is the
/// [`CallRecord`] as JSON, for the calls the session may see; at most
/// [`STREAMS_PER_SESSION`] per session (429 beyond). Ends when the gateway shuts down, or
/// within [`SESSION_CHECK`] of the session ending.
pub(crate) async fn calls_stream(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let Ok(session) = super::signed_in(&gateway, &headers, &uri) else {
        return (StatusCode::UNAUTHORIZED, "sign in to the console first").into_response();
    };
    let Some(slot) = gateway
        .console()
        .streams
        .open(&session.id, STREAMS_PER_SESSION)
    else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            "this session has as many call-log streams open as it may: close one first",
        )
            .into_response();
    };
    let calls = gateway.console().log.subscribe();
    let mut check = tokio::time::interval(SESSION_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = (calls, check, gateway.clone(), headers, uri, slot);
    let stream = futures::stream::unfold(state, |state| async move {
        let (mut calls, mut check, gateway, headers, uri, slot) = state;
        loop {
            let record = tokio::select! {
                _ = check.tick() => {
                    if super::signed_in(&gateway, &headers, &uri).is_err() {
                        return None;
                    }
                    continue;
                }
                received = calls.recv() => match received {
                    Ok(record) => record,
                    // A slow reader missed some: it goes on with the next.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                },
            };
            // The session as it is now (a reload may have dropped its key or changed roles).
            let Ok(session) = super::signed_in(&gateway, &headers, &uri) else {
                return None;
            };
            if !sees_call(&gateway, &session, &record) {
                continue;
            }
            let event = Event::default()
                .event("call")
                .json_data(&*record)
                .unwrap_or_else(|_| Event::default().comment("unserializable"));
            return Some((
                Ok::<_, Infallible>(event),
                (calls, check, gateway, headers, uri, slot),
            ));
        }
    })
    .take_until(gateway.streams_token().cancelled_owned());
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
