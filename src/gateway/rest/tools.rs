//! `GET /tools`, `GET /tools/{name}`, `GET /tools/{name}/schema`, `GET /tools/{name}/metadata`.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_model::names::exported_name;
use toolgate_runtime::search::{DEFAULT_K, MAX_QUERY_CHARS, query_terms};
use toolgate_runtime::{
    Dialect, ErrorKind, SourceStatus, ToolAnnotations, ToolDescriptor, ToolError,
};
use utoipa::{IntoParams, ToSchema};

use super::api_doc::{
    DialectName, SourceStatusSchema, ToolAnnotationsSchema, ToolDescriptorSchema, ToolErrorBody,
};
use super::error::RestError;
use super::{ApiQuery, ToolName};
use crate::gateway::{Caller, Gateway};

/// Tool `name` as `caller` may see it: `not_found` (404) for a tool it may not call, as for
/// one that does not exist (a caller never sees a tool it may not call).
async fn visible(
    gateway: &Gateway,
    name: &str,
    caller: Option<Extension<Caller>>,
) -> Result<std::sync::Arc<ToolDescriptor>, RestError> {
    let d = gateway.toolset().lookup(name).await?;
    let identity = caller.map(|Extension(c)| c).unwrap_or_default().identity();
    if gateway.toolset().may_call(&d, &identity) {
        Ok(d)
    } else {
        Err(ToolError::not_found(name).into())
    }
}

/// How long `GET /tools` waits for start-up discovery before answering with what is known (as
/// MCP `tools/list` does): an early client sees the whole toolset.
pub(crate) const LIST_WAITS_FOR_DISCOVERY: Duration = Duration::from_secs(35);

/// The query of `GET /tools`. Filters combine with AND; an unknown parameter is a 400.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only tools of this category (exact match).
    pub category: Option<String>,
    /// Only tools of this source id (`local` for the compiled tools; exact match).
    pub source: Option<String>,
    /// Only tools with this tag (exact match).
    pub tag: Option<String>,
    /// A search query: the tools that fit it, best first (BM25 over each tool's name, title,
    /// description, arguments, tags, category and source; accents folded, English stop words
    /// dropped, Chinese and Japanese in character bigrams; see docs/search.md), at most `k`,
    /// each with its `score` and `matched` fields. A query with nothing to search for (empty,
    /// only stop words or punctuation) finds no tool, and `note` says why.
    #[param(max_length = 1000)]
    pub q: Option<String>,
    /// The most tools to return (at least 1): with `q` the best `k` (default 10), without it
    /// the first `k` in toolset order (default all).
    #[serde(default, deserialize_with = "super::integer::whole_in_query")]
    #[param(value_type = Option<u64>, minimum = 1)]
    pub k: Option<u64>,
    /// Also give each listed tool's definition in this dialect (`definitions`).
    #[param(value_type = Option<DialectName>)]
    pub dialect: Option<String>,
}

/// One tool in `GET /tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSummary {
    /// The tool's name inside toolgate: `calc`, or `{source}.{tool}` for a remote tool.
    pub name: String,
    /// The name a model sees and calls (`{source}__{tool}`; `^[a-zA-Z0-9_-]{1,64}$`). Either
    /// name works in `/tools/{name}` routes.
    pub exported_name: String,
    /// What the tool does, written for a model.
    pub description: String,
    /// The tool's category, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Its tags (possibly none).
    pub tags: Vec<String>,
    /// The id of the source that offers it (`local` for compiled tools).
    pub source: String,
    /// The kind of that source: `local`, `mcp`, `a2a`, `openapi`, `json_schema`, ...
    pub source_kind: String,
    /// MCP tool annotations (hints; `{}` when none).
    #[schema(value_type = ToolAnnotationsSchema)]
    pub annotations: ToolAnnotations,
    /// With `q`: how well the tool fits the query (the sum of its fields' BM25 scores times the
    /// fields' weights; above zero, comparable only within one answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// With `q`: the fields in which a query term was found (`name`, `title`, `description`,
    /// `arguments`, `tags`, `category`, `source`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
}

/// A listed tool the requested dialect cannot express (`GET /tools?dialect=`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NotExported {
    /// The tool's name inside toolgate.
    pub tool: String,
    /// Why the dialect cannot express it (e.g. a schema too large for Gemini once its `$ref`s are inlined).
    pub message: String,
}

/// The body of `GET /tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolList {
    /// The tools that pass every filter, in toolset order (with `q`: best first).
    pub tools: Vec<ToolSummary>,
    /// With `?dialect=`: the dialect of `definitions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<DialectName>)]
    pub dialect: Option<String>,
    /// With `?dialect=`: the listed tools' definitions in that dialect, in the same order (a
    /// tool the dialect cannot express is left out and named in `not_exported`), ready to be
    /// passed to the provider as its list of tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub definitions: Option<Vec<Value>>,
    /// With `?dialect=`: the listed tools the dialect cannot express, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_exported: Vec<NotExported>,
    /// Why no tool is listed, when the answer is empty for a reason other than the filters:
    /// a `q` with nothing to search for (empty, only stop words such as `the`, or punctuation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The query of `GET /tools/{name}/schema`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SchemaQuery {
    /// The dialect (default `mcp`).
    #[param(value_type = Option<DialectName>)]
    pub dialect: Option<String>,
}

/// The body of `GET /tools/{name}/schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSchemaExport {
    /// The tool's name inside toolgate (the definition carries the exported name).
    pub name: String,
    /// The dialect of `definition`.
    #[schema(value_type = DialectName)]
    pub dialect: String,
    /// The tool's definition in that dialect: an MCP `Tool`, an OpenAI function tool, an
    /// Anthropic tool, a Gemini function declaration.
    #[schema(value_type = Object)]
    pub definition: Value,
    /// Every change the export made to what the schema accepts (`"<pointer>: <what and why>"`).
    /// Arguments are still validated against the tool's own schema.
    pub notes: Vec<String>,
}

/// The body of `GET /tools/{name}/metadata`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolMetadata {
    /// The tool's name inside toolgate.
    pub name: String,
    /// The name a model sees and calls.
    pub exported_name: String,
    /// MCP tool annotations (`{}` when none).
    #[schema(value_type = ToolAnnotationsSchema)]
    pub annotations: ToolAnnotations,
    /// The longest a call may take, in milliseconds: the tool's own timeout, else the
    /// toolset's default (tools.yaml `policy.defaults.timeout_ms`); absent when neither is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tool's version, if it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The tool's category, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Its tags (possibly none).
    pub tags: Vec<String>,
    /// The tool can do harm (delete, pay, send); policies may require a role to call it.
    pub dangerous: bool,
    /// Callers must be authenticated to call it.
    pub requires_auth: bool,
    /// The id of the source that offers it.
    pub source: String,
    /// That source's status now.
    #[schema(value_type = SourceStatusSchema)]
    pub source_status: SourceStatus,
}

/// Lists the tools, filtered, or searches them.
///
/// Waits (at most 35 s) for start-up discovery to finish, as MCP `tools/list` does. Filters
/// combine with AND. With `q`, the tools that fit the query, best first, at most `k`, each with
/// its score and the fields that matched.
#[utoipa::path(
    get,
    path = "/tools",
    operation_id = "listTools",
    tag = "tools",
    params(ListQuery),
    responses(
        (status = 200, description = "The tools that pass every filter.", body = ToolList),
        (status = 400, description = "An unknown query parameter, an unknown dialect, `k` below 1 or not a whole number, or a `q` longer than 1000 characters.", body = ToolErrorBody),
    )
)]
pub(super) async fn list_tools(
    State(gateway): State<Gateway>,
    caller: Option<Extension<Caller>>,
    server: Option<Extension<std::sync::Arc<crate::gateway::servers::VirtualServer>>>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ToolList>, RestError> {
    // On a virtual server (`/servers/{id}/tools`): its tools only, under its names.
    let server = server.map(|Extension(s)| s);
    let identity = caller.map(|Extension(c)| c).unwrap_or_default().identity();
    let dialect = query.dialect.as_deref().map(parse_dialect).transpose()?;
    gateway.wait_ready(LIST_WAITS_FOR_DISCOVERY).await;
    let kinds: HashMap<String, String> = gateway
        .toolset()
        .sources()
        .iter()
        .map(|s| (s.id().to_string(), s.kind().to_string()))
        .collect();
    let toolset = gateway.toolset();
    let k = match query.k {
        Some(0) => {
            return Err(RestError::bad_request(
                "query parameter `k`: the number of tools must be at least 1",
            ));
        }
        k => k.map(|k| usize::try_from(k).unwrap_or(usize::MAX)),
    };
    let mut note = None;
    let (listed, scores): (Vec<_>, Vec<_>) = match query.q.as_deref() {
        Some(q) => match nothing_to_search_for(q) {
            Some(why) => {
                note = Some(why);
                (Vec::new(), Vec::new())
            }
            None => search(toolset, &identity, q, k, &query, server.as_deref())?
                .into_iter()
                .map(|hit| {
                    let matched = hit.matched.iter().map(|f| f.as_str().to_string()).collect();
                    (hit.entry, Some((hit.score, matched)))
                })
                .unzip(),
        },
        None => toolset
            .entries_for(&identity)
            .into_iter()
            .filter(|e| server.as_ref().is_none_or(|s| s.selects(e)))
            .filter(|e| {
                let d = e.descriptor();
                query
                    .category
                    .as_ref()
                    .is_none_or(|c| d.category.as_ref() == Some(c))
                    && query.source.as_ref().is_none_or(|s| &d.source == s)
                    && query.tag.as_ref().is_none_or(|t| d.tags.contains(t))
            })
            .take(k.unwrap_or(usize::MAX))
            .map(|e| (e, None))
            .unzip(),
    };
    let mut list = ToolList {
        tools: Vec::with_capacity(listed.len()),
        dialect: dialect.map(|d| d.as_str().to_string()),
        definitions: dialect.map(|_| Vec::with_capacity(listed.len())),
        not_exported: Vec::new(),
        note,
    };
    for (entry, score) in listed.iter().zip(scores) {
        let d = entry.descriptor();
        let (score, matched) = score.map_or((None, Vec::new()), |(s, m)| (Some(s), m));
        if let (Some(dialect), Some(definitions)) = (dialect, list.definitions.as_mut()) {
            // The entry's export is computed once and shared (a `Value` clone per listing).
            match entry.export(dialect) {
                Ok(v) => definitions.push(Value::clone(&v)),
                Err(e) => list.not_exported.push(NotExported {
                    tool: d.name.clone(),
                    message: e.to_string(),
                }),
            }
        }
        list.tools.push(ToolSummary {
            name: d.name.clone(),
            exported_name: match &server {
                Some(server) => server.shown_name(&exported_name(&d.name)),
                None => exported_name(&d.name).into_owned(),
            },
            description: d.description.clone(),
            category: d.category.clone(),
            tags: d.tags.clone(),
            source: d.source.clone(),
            source_kind: kinds.get(&d.source).cloned().unwrap_or_default(),
            annotations: d.annotations.clone(),
            score,
            matched,
        });
    }
    Ok(Json(list))
}

/// `GET /tools?q=`: the toolset's search for `identity` with the listing's other filters, or a
/// 400 naming `q` or `k`.
fn search(
    toolset: &toolgate_runtime::Toolset,
    identity: &toolgate_runtime::Identity,
    q: &str,
    k: Option<usize>,
    query: &ListQuery,
    server: Option<&crate::gateway::servers::VirtualServer>,
) -> Result<Vec<toolgate_runtime::SearchHit>, RestError> {
    let mut options = toolgate_runtime::SearchOptions::new().k(k.unwrap_or(DEFAULT_K));
    options.source.clone_from(&query.source);
    options.category.clone_from(&query.category);
    options.tags.extend(query.tag.iter().cloned());
    // On a virtual server: the best of its tools, not the best of all that it happens to have.
    let found = match server {
        Some(server) => toolset.search_within(identity, q, &options, |e| server.selects(e)),
        None => toolset.search(identity, q, &options),
    };
    found.map_err(|e| {
        let what = if query.k == Some(0) { "k" } else { "q" };
        RestError::new(
            StatusCode::BAD_REQUEST,
            ToolError::new(
                ErrorKind::InvalidArguments,
                format!("query parameter `{what}`: {}", e.message()),
            ),
        )
    })
}

/// Why `q` can find no tool (it is empty, or only stop words or punctuation), or `None` when
/// it has words to search for. A `q` over the length limit is not looked at here: [`search`]
/// refuses it with a 400.
fn nothing_to_search_for(q: &str) -> Option<String> {
    if q.chars().count() > MAX_QUERY_CHARS {
        return None;
    }
    query_terms(q)
        .err()
        .map(|e| format!("query parameter `q`: {}", e.message()))
}

/// `dialect` as a [`Dialect`], or a 400 naming the accepted ones.
fn parse_dialect(dialect: &str) -> Result<Dialect, RestError> {
    dialect
        .parse::<Dialect>()
        .map_err(|e| RestError::bad_request(format!("query parameter `dialect`: {e}")))
}

/// One tool's full descriptor.
///
/// A name whose prefix is a lazy source's id makes that source list its tools first.
#[utoipa::path(
    get,
    path = "/tools/{name}",
    operation_id = "getTool",
    tag = "tools",
    params(("name" = String, Path, description = "The tool's name inside toolgate (`everything.echo`) or as a model sees it (`everything__echo`).")),
    responses(
        (status = 200, description = "The tool's descriptor: name, description, input and output schema (JSON Schema 2020-12), annotations, source, category, tags, version, timeout.", body = ToolDescriptorSchema),
        (status = 404, description = "No tool of that name (kind `not_found`).", body = ToolErrorBody),
        (status = 502, description = "The source the name's prefix names cannot list its tools.", body = ToolErrorBody),
    )
)]
pub(super) async fn get_tool(
    State(gateway): State<Gateway>,
    ToolName(name): ToolName,
    caller: Option<Extension<Caller>>,
) -> Result<Json<ToolDescriptor>, RestError> {
    let d = visible(&gateway, &name, caller).await?;
    Ok(Json(ToolDescriptor::clone(&d)))
}

/// One tool's definition in a provider dialect.
///
/// With the export's notes: every change the dialect forced on what the schema accepts.
#[utoipa::path(
    get,
    path = "/tools/{name}/schema",
    operation_id = "getToolSchema",
    tag = "tools",
    params(
        ("name" = String, Path, description = "The tool's name (either form)."),
        SchemaQuery,
    ),
    responses(
        (status = 200, description = "The definition in the dialect, and the export's notes.", body = ToolSchemaExport),
        (status = 400, description = "An unknown dialect (the message lists the accepted ones) or query parameter.", body = ToolErrorBody),
        (status = 404, description = "No tool of that name.", body = ToolErrorBody),
        (status = 500, description = "The tool's input schema cannot be given in that dialect (a dangling `$ref`, a definition that is no schema, too large once inlined); kind `internal`, since the tool, not the request, is at fault; `details` names the tool and dialect.", body = ToolErrorBody),
    )
)]
pub(super) async fn get_tool_schema(
    State(gateway): State<Gateway>,
    ToolName(name): ToolName,
    caller: Option<Extension<Caller>>,
    ApiQuery(query): ApiQuery<SchemaQuery>,
) -> Result<Json<ToolSchemaExport>, RestError> {
    let dialect = match query.dialect.as_deref() {
        Some(d) => parse_dialect(d)?,
        None => Dialect::Mcp,
    };
    let d = visible(&gateway, &name, caller).await?;
    match d.export_with_notes(dialect) {
        Ok((definition, notes)) => Ok(Json(ToolSchemaExport {
            name: d.name.clone(),
            dialect: dialect.as_str().to_string(),
            definition,
            notes,
        })),
        // Not the caller's arguments, nor the request: the tool's own schema.
        Err(e) => Err(RestError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ToolError::new(ErrorKind::Internal, e.to_string())
                .with_details(serde_json::json!({ "tool": e.tool, "dialect": e.dialect.as_str() })),
        )),
    }
}

/// One tool's metadata and its source's status.
///
/// Annotations, effective timeout, version, category, tags, and the status of the source
/// that offers it.
#[utoipa::path(
    get,
    path = "/tools/{name}/metadata",
    operation_id = "getToolMetadata",
    tag = "tools",
    params(("name" = String, Path, description = "The tool's name (either form).")),
    responses(
        (status = 200, description = "Annotations, timeout, version, category, tags, source and its status.", body = ToolMetadata),
        (status = 404, description = "No tool of that name.", body = ToolErrorBody),
    )
)]
pub(super) async fn get_tool_metadata(
    State(gateway): State<Gateway>,
    ToolName(name): ToolName,
    caller: Option<Extension<Caller>>,
) -> Result<Json<ToolMetadata>, RestError> {
    let toolset = gateway.toolset();
    let d = visible(&gateway, &name, caller).await?;
    let source_status = toolset
        .entry(&d.name)
        .and_then(|e| toolset.source_status(e.source().id()))
        .ok_or_else(|| {
            ToolError::internal(format!(
                "tool `{}` names source `{}`, which the toolset does not have",
                d.name, d.source
            ))
        })?;
    let timeout = d.timeout.or(toolset.default_timeout());
    Ok(Json(ToolMetadata {
        name: d.name.clone(),
        exported_name: exported_name(&d.name).into_owned(),
        annotations: d.annotations.clone(),
        timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        version: d.version.clone(),
        category: d.category.clone(),
        tags: d.tags.clone(),
        dangerous: d.dangerous,
        requires_auth: d.requires_auth,
        source: d.source.clone(),
        source_status,
    }))
}
