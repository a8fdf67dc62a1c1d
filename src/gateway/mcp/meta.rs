//! `gateway.tool_search` over MCP: the meta tools `search_tools`, `describe_tools` and
//! `call_tool`, which let a client find, read and call the tools of a big toolset without
//! listing every definition (docs/search.md, "MCP meta mode").
//!
//! In `meta` mode `tools/list` shows the three (and the configured `always` tools the caller
//! may call); in `both` mode the first page shows them before the usual pages of every tool.
//! Whatever the mode, a direct `tools/call` of any tool works as before. The meta tools see
//! what the caller may see: `search_tools` and `describe_tools` use the listing's check
//! (`Toolset::shows`), and `call_tool` is a direct call of the named tool by the same caller,
//! through [`Gateway::call_cancellable`](crate::gateway::Gateway) like every call.
//! A toolset tool named like a meta tool is shadowed by it while the mode is not `off`.
//!
//! On a virtual server (`/mcp/{id}`) the meta tools are the server's: `search_tools` ranks
//! only the tools it selects (the best `k` of those) and names them as the server shows them
//! (its prefix), `describe_tools` and `call_tool` take those names and find nothing else, and
//! the `always` tools are listed only when the server selects them.

use rmcp::model::{CallToolResult, Tool};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolgate_model::config::ToolSearchMode;
use toolgate_runtime::{ErrorKind, Identity, SearchOptions, ToolError, ToolOutput};

use super::convert;
use crate::gateway::Gateway;
use crate::gateway::servers::VirtualServer;

/// The meta tool that searches.
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
/// The meta tool that gives full definitions.
pub(crate) const DESCRIBE_TOOLS: &str = "describe_tools";
/// The meta tool that calls a tool by name.
pub(crate) const CALL_TOOL: &str = "call_tool";

/// The most hits `search_tools` returns, and the most names `describe_tools` takes.
const MAX_ITEMS: usize = 50;

/// One of the meta tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meta {
    Search,
    Describe,
    Call,
}

/// Which meta tool `name` is, when the gateway offers them (`tool_search.mode` not `off`).
pub(super) fn meta(gateway: &Gateway, name: &str) -> Option<Meta> {
    if gateway.settings().tool_search.mode == ToolSearchMode::Off {
        return None;
    }
    match name {
        SEARCH_TOOLS => Some(Meta::Search),
        DESCRIBE_TOOLS => Some(Meta::Describe),
        CALL_TOOL => Some(Meta::Call),
        _ => None,
    }
}

/// The meta tools' MCP definitions, in listing order.
pub(super) fn definitions() -> Vec<Tool> {
    [SEARCH_TOOLS, DESCRIBE_TOOLS, CALL_TOOL]
        .into_iter()
        .filter_map(definition)
        .collect()
}

/// The MCP definition of meta tool `name`.
pub(super) fn definition(name: &str) -> Option<Tool> {
    let max = MAX_ITEMS;
    let value = match name {
        SEARCH_TOOLS => json!({
            "name": SEARCH_TOOLS,
            "title": "Search tools",
            "description": "Find the tools of this gateway that fit a task, best first. Each hit has the tool's `name` (give it to describe_tools for the tool's full definition, then to call_tool to call it), a `score`, the fields that `matched` and the first line of its `description`. The query is words, in the language the tools are described in, e.g. \"create a github issue\".",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in words."},
                    "k": {"type": "integer", "minimum": 1, "maximum": max, "description": "The most tools to return (default 10)."}
                },
                "required": ["query"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        DESCRIBE_TOOLS => json!({
            "name": DESCRIBE_TOOLS,
            "title": "Describe tools",
            "description": "The full MCP definitions (description, input schema, output schema, annotations) of the named tools, as tools/list would give them. Names you may not call or that do not exist are listed in `not_found`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": max, "description": "Tool names, as search_tools gives them."}
                },
                "required": ["names"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        CALL_TOOL => json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": "Call the named tool with its arguments (an object that fits the input schema describe_tools gave). The result is the tool's own, as if it had been called directly.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as search_tools gives it."},
                    "arguments": {"type": "object", "description": "The tool's arguments (default: none)."}
                },
                "required": ["name"],
                "additionalProperties": false
            }
        }),
        _ => return None,
    };
    serde_json::from_value(value).ok()
}

/// `tools/list` in `meta` mode: the meta tools, then each `always` tool `identity` may call
/// (on a virtual server, those it selects, under its names).
pub(super) fn listed(
    gateway: &Gateway,
    identity: &Identity,
    on: Option<&VirtualServer>,
) -> Vec<Tool> {
    let toolset = gateway.toolset();
    let mut tools = definitions();
    for name in &gateway.settings().tool_search.always {
        let Some(entry) = toolset.entry(name) else {
            continue;
        };
        if !toolset.shows(&entry, identity)
            || meta(gateway, entry.exported_name()).is_some()
            || on.is_some_and(|s| !s.selects(&entry))
        {
            continue;
        }
        if let Some(tool) = definition_on(gateway, on, &entry)
            && !tools.iter().any(|t| t.name == tool.name)
        {
            tools.push(tool);
        }
    }
    tools
}

/// The MCP definition of `entry`'s tool as the session's server shows it: under the server's
/// name for it on a virtual server.
fn definition_on(
    gateway: &Gateway,
    on: Option<&VirtualServer>,
    entry: &toolgate_runtime::catalog::ToolEntry,
) -> Option<Tool> {
    let toolset = gateway.toolset();
    match on {
        None => gateway.listing().tool(toolset, entry.name()),
        Some(server) => {
            let mut tool = server.listing().tool(toolset, entry.name())?;
            tool.name = server.shown_name(entry.exported_name()).into();
            Some(tool)
        }
    }
}

/// A `tools/call` of `name` with `args` when the gateway may offer the meta tools: `Ok` with
/// the call to make (the call itself, or `call_tool`'s target), or `Err` with the answer of
/// `search_tools`, `describe_tools` or a `call_tool` whose arguments do not fit. `identity`
/// gives the caller's identity (asked only for a meta tool).
pub(super) fn dispatch(
    gateway: &Gateway,
    identity: impl FnOnce() -> Identity,
    on: Option<&VirtualServer>,
    name: String,
    args: Value,
) -> Result<(String, Value), Box<CallToolResult>> {
    let Some(which) = meta(gateway, &name) else {
        return Ok((name, args));
    };
    // The meta tools read an object: a string holding one is theirs too.
    let args = match args {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        args => args,
    };
    match which {
        Meta::Search => Err(Box::new(search(gateway, &identity(), on, args))),
        Meta::Describe => Err(Box::new(describe(gateway, &identity(), on, args))),
        Meta::Call => call_target(args).map_err(|e| Box::new(failed(e))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    k: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DescribeArgs {
    names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
}

/// `search_tools`: the hits for `identity` (among the tools of server `on`), as a result.
fn search(
    gateway: &Gateway,
    identity: &Identity,
    on: Option<&VirtualServer>,
    args: Value,
) -> CallToolResult {
    finish(parse::<SearchArgs>(SEARCH_TOOLS, args).and_then(|a| {
        let k = a.k.unwrap_or(toolgate_runtime::search::DEFAULT_K);
        if !(1..=MAX_ITEMS).contains(&k) {
            return Err(invalid(format!(
                "{SEARCH_TOOLS}: `k` must be between 1 and {MAX_ITEMS}, not {k}"
            )));
        }
        let options = SearchOptions::new().k(k);
        let toolset = gateway.toolset();
        let hits = match on {
            None => toolset.search(identity, &a.query, &options)?,
            Some(server) => {
                toolset.search_within(identity, &a.query, &options, |e| server.selects(e))?
            }
        };
        let tools: Vec<Value> = hits
            .iter()
            .map(|h| {
                let description = h.entry.descriptor().description.lines().next();
                let name = match on {
                    None => h.exported_name.clone(),
                    Some(server) => server.shown_name(&h.exported_name),
                };
                json!({
                    "name": name,
                    "score": h.score,
                    "matched": h.matched,
                    "description": description.unwrap_or_default(),
                })
            })
            .collect();
        Ok(ToolOutput::structured(json!({ "tools": tools })))
    }))
}

/// `describe_tools`: the MCP definitions of the named tools `identity` may call (those of
/// server `on`, by its names).
fn describe(
    gateway: &Gateway,
    identity: &Identity,
    on: Option<&VirtualServer>,
    args: Value,
) -> CallToolResult {
    finish(parse::<DescribeArgs>(DESCRIBE_TOOLS, args).and_then(|a| {
        if a.names.is_empty() || a.names.len() > MAX_ITEMS {
            return Err(invalid(format!(
                "{DESCRIBE_TOOLS}: give between 1 and {MAX_ITEMS} names, not {}",
                a.names.len()
            )));
        }
        let toolset = gateway.toolset();
        let mut tools = Vec::new();
        let mut not_found = Vec::new();
        for name in a.names {
            let entry = match on {
                None => toolset.entry(&name),
                Some(server) => server.entry(toolset, &name),
            };
            let tool = entry
                .filter(|e| toolset.shows(e, identity))
                .and_then(|e| definition_on(gateway, on, &e));
            match tool.and_then(|t| serde_json::to_value(t).ok()) {
                Some(t) => tools.push(t),
                None => not_found.push(name),
            }
        }
        Ok(ToolOutput::structured(
            json!({ "tools": tools, "not_found": not_found }),
        ))
    }))
}

/// `call_tool`'s arguments: the tool to call and its arguments (`null` for none).
///
/// # Errors
/// `invalid_arguments` for arguments that do not fit, or a meta tool as the tool.
fn call_target(args: Value) -> Result<(String, Value), ToolError> {
    let a = parse::<CallArgs>(CALL_TOOL, args)?;
    if [SEARCH_TOOLS, DESCRIBE_TOOLS, CALL_TOOL].contains(&a.name.as_str()) {
        return Err(invalid(format!(
            "{CALL_TOOL} calls a tool of the toolset; call `{}` directly",
            a.name
        )));
    }
    Ok((a.name, a.arguments.map_or(Value::Null, Value::Object)))
}

/// A failed meta call as the result a client gets (`isError: true`).
fn failed(e: ToolError) -> CallToolResult {
    convert::result(convert::error_output(e), None)
}

fn finish(out: Result<ToolOutput, ToolError>) -> CallToolResult {
    match out {
        Ok(out) => convert::result(out, None),
        Err(e) => failed(e),
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    let args = if args.is_null() { json!({}) } else { args };
    serde_json::from_value(args).map_err(|e| invalid(format!("{tool}: {e}")))
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorKind::InvalidArguments, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_tools_have_object_schemas_and_parse_as_mcp_tools() {
        let tools = definitions();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [SEARCH_TOOLS, DESCRIBE_TOOLS, CALL_TOOL]);
        for t in &tools {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn call_tool_takes_a_name_and_arguments_and_refuses_a_meta_tool() {
        let (name, args) =
            call_target(json!({"name": "calc", "arguments": {"expression": "1+1"}})).unwrap();
        assert_eq!(
            (name.as_str(), args),
            ("calc", json!({"expression": "1+1"}))
        );
        let (_, args) = call_target(json!({"name": "current_time"})).unwrap();
        assert!(args.is_null());
        for bad in [
            json!({"name": "call_tool", "arguments": {}}),
            json!({"arguments": {}}),
            json!({"name": "calc", "args": {}}),
            json!({"name": "calc", "arguments": [1]}),
            json!([]),
        ] {
            let e = call_target(bad.clone()).expect_err(&bad.to_string());
            assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{bad}: {e}");
        }
    }
}
