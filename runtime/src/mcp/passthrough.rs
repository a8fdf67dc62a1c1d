//! An MCP server's features besides tools — resources, resource templates, prompts,
//! completions, resource subscriptions, and what it sends unasked (resource updates, list
//! changes, log messages) — reached through the same persistent session as its tools.
//!
//! This is what a gateway needs to pass them through to its own clients: [`servers`] finds the
//! MCP servers of a [`Toolset`], each [`McpBackend`] offers the requests (rmcp's model types
//! in and out: they are the MCP model) and a stream of [`McpEvent`]s.
//!
//! Every request connects first when there is no session, and waits at most
//! [`McpOptions::request_timeout`](super::McpOptions::request_timeout) for its answer (per page
//! of a listing). A server that lacks the feature's capability is not asked: a listing is
//! then empty, any other request fails with `protocol` (its details carry JSON-RPC code
//! -32601, as a server would answer). A JSON-RPC error from the server fails with `protocol`
//! and the error's `code`, `message` and `data` in the details, so that it can be passed on
//! unchanged. Errors never carry a configured secret.

#[allow(deprecated)]
use rmcp::model::LoggingLevel;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Resource, ResourceTemplate,
    ServerCapabilities,
};
use serde_json::Value;
use tokio::sync::broadcast;

use super::McpBackend;
use crate::{ToolError, Toolset};

/// What an MCP server sent unasked, as [`McpBackend::events`] delivers it.
#[allow(deprecated)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpEvent {
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/message` (MCP 2025-11-25 "Logging"; deprecated by SEP-2577, still sent).
    Log {
        /// Its severity.
        level: LoggingLevel,
        /// The server's name for the part that logged it, if it gave one.
        logger: Option<String>,
        /// The message: any JSON, usually a string.
        data: Value,
    },
}

/// One MCP server of a toolset, as [`servers`] finds it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpServerHandle {
    /// The source id (tools.yaml `id`).
    pub id: String,
    /// Whether the source's names are prefixed (`{id}.{tool}`, the default) or the server's
    /// own (`prefix: false`).
    pub prefixed: bool,
    /// The server's client (shared with the source: same session).
    pub backend: McpBackend,
}

/// The MCP servers among `toolset`'s sources, in source order (as the builder registered
/// them: [`Toolset::mcp_servers`]).
pub fn servers(toolset: &Toolset) -> Vec<McpServerHandle> {
    toolset.mcp_servers().to_vec()
}

/// `answer` without any configured secret: an answer quoting one (a resource echoing a
/// header) is masked like a tool's result, through its JSON form, only when a secret is
/// remembered (errors are masked when they are made).
fn masked<T>(answer: T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    if !toolgate_model::secrets::any() {
        return answer;
    }
    let Ok(mut json) = serde_json::to_value(&answer) else {
        return answer;
    };
    if !crate::redact::value(&mut json) {
        return answer;
    }
    serde_json::from_value(json).unwrap_or(answer)
}

/// Whether `uri` is one of the URIs `template` (RFC 6570) describes, for routing: literal
/// parts must match exactly and in order; a simple `{var}` (level 1) matches one or more
/// characters other than `/`, `?` and `#`; `{+var}` and `{#var}` match any characters; the
/// query and fragment forms (`{?x}`, `{&x}`, `{#x}` at the end) match whatever follows,
/// including nothing. An unterminated `{` matches nothing.
pub fn uri_template_matches(template: &str, uri: &str) -> bool {
    enum Part<'a> {
        Literal(&'a str),
        /// `any`: may contain `/`; `optional`: may be empty.
        Var {
            any: bool,
            optional: bool,
        },
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let expr = &rest[open + 1..open + close];
        let (any, optional) = match expr.chars().next() {
            Some('+' | '#') => (true, expr.starts_with('#')),
            Some('?' | '&') => (true, true),
            Some('/' | '.' | ';') => (true, true),
            _ => (false, false),
        };
        parts.push(Part::Var { any, optional });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }

    fn matches(parts: &[Part<'_>], uri: &str) -> bool {
        match parts.split_first() {
            None => uri.is_empty(),
            Some((Part::Literal(l), rest)) => {
                uri.strip_prefix(l).is_some_and(|tail| matches(rest, tail))
            }
            Some((Part::Var { any, optional }, rest)) => {
                let stop = if *any {
                    uri.len()
                } else {
                    uri.find(['/', '?', '#']).unwrap_or(uri.len())
                };
                let first = usize::from(!*optional);
                (first..=stop)
                    .filter(|&i| uri.is_char_boundary(i))
                    .any(|i| matches(rest, &uri[i..]))
            }
        }
    }
    matches(&parts, uri)
}

impl McpBackend {
    /// The server's capabilities (MCP `initialize` result or `server/discover`), connecting
    /// first if needed.
    ///
    /// # Errors
    /// `network` / `timeout` / `protocol` when no session can be started, naming the server.
    pub async fn capabilities(&self) -> Result<ServerCapabilities, ToolError> {
        self.client.capabilities().await.map(masked)
    }

    /// Every resource the server lists (`resources/list`, every page up to
    /// [`max_list_pages`](super::McpOptions::max_list_pages)); empty when the server has no
    /// `resources` capability. The URIs are remembered for
    /// [`listed_resource`](Self::listed_resource).
    ///
    /// # Errors
    /// As [`capabilities`](Self::capabilities); `protocol` for a JSON-RPC error (details:
    /// `code`, `message`, `data`), `timeout` when a page takes longer than the request timeout.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ToolError> {
        self.client.list_resources().await.map(masked)
    }

    /// Every resource template (`resources/templates/list`, all pages); empty without the
    /// `resources` capability. Remembered for [`listed_template`](Self::listed_template).
    ///
    /// # Errors
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ToolError> {
        self.client.list_resource_templates().await.map(masked)
    }

    /// `resources/read` with `params` as given (its `_meta`, and the `inputResponses` /
    /// `requestState` of a 2026-07-28 retry, included): the contents, or the input a
    /// 2026-07-28 server needs first.
    ///
    /// # Errors
    /// `protocol` without the `resources` capability, or for the server's JSON-RPC error
    /// (e.g. code -32002, resource not found); as [`list_resources`](Self::list_resources)
    /// otherwise.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ToolError> {
        Ok(match self.client.read_resource(params).await? {
            ReadResourceResponse::Complete(r) => ReadResourceResponse::Complete(masked(r)),
            ReadResourceResponse::InputRequired(r) => {
                ReadResourceResponse::InputRequired(masked(r))
            }
            other => other,
        })
    }

    /// Subscribes to updates of resource `uri`: they arrive as
    /// [`McpEvent::ResourceUpdated`]. Subscriptions are counted: the first one for a URI is
    /// sent to the server (`resources/subscribe`, or the URI added to the session's
    /// `subscriptions/listen` stream on 2026-07-28), later ones only counted; they are sent
    /// again on a new session after a drop.
    ///
    /// # Errors
    /// `protocol` without the `resources.subscribe` capability or when the server refuses;
    /// `network` / `timeout` when it cannot be reached or does not answer in time. A failed
    /// subscription is not counted.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ToolError> {
        self.client.subscribe(uri).await
    }

    /// Takes back one [`subscribe`](Self::subscribe) of `uri`; the last one is sent to the
    /// server (`resources/unsubscribe`). A URI not subscribed is no error.
    ///
    /// # Errors
    /// As [`subscribe`](Self::subscribe); the subscription is dropped here either way.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ToolError> {
        self.client.unsubscribe(uri).await
    }

    /// Every prompt (`prompts/list`, all pages); empty without the `prompts` capability.
    /// Remembered for [`listed_prompt`](Self::listed_prompt).
    ///
    /// # Errors
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ToolError> {
        self.client.list_prompts().await.map(masked)
    }

    /// `prompts/get` with `params` as given (the prompt's name as the server names it).
    ///
    /// # Errors
    /// `protocol` without the `prompts` capability, or for the server's JSON-RPC error (an
    /// unknown prompt or a missing argument: code -32602); as
    /// [`list_resources`](Self::list_resources) otherwise.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ToolError> {
        Ok(match self.client.get_prompt(params).await? {
            GetPromptResponse::Complete(r) => GetPromptResponse::Complete(masked(r)),
            GetPromptResponse::InputRequired(r) => GetPromptResponse::InputRequired(masked(r)),
            other => other,
        })
    }

    /// `completion/complete` with `params` as given.
    ///
    /// # Errors
    /// `protocol` without the `completions` capability or for the server's JSON-RPC error; as
    /// [`list_resources`](Self::list_resources) otherwise.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ToolError> {
        self.client.complete(params).await.map(masked)
    }

    /// What the server sends unasked from now on, over every session it will have: resource
    /// updates (for subscribed URIs), resource and prompt list changes, log messages. A
    /// receiver that falls more than 256 events behind misses the oldest (`Lagged`).
    pub fn events(&self) -> broadcast::Receiver<McpEvent> {
        self.client.events()
    }

    /// Whether the last [`list_resources`](Self::list_resources) had `uri`.
    pub fn listed_resource(&self, uri: &str) -> bool {
        self.client.known().resources.contains(uri)
    }

    /// Whether the last [`list_resource_templates`](Self::list_resource_templates) had
    /// exactly `template`.
    pub fn listed_template(&self, template: &str) -> bool {
        self.client.known().templates.iter().any(|t| t == template)
    }

    /// Whether a template of the last
    /// [`list_resource_templates`](Self::list_resource_templates) describes `uri`
    /// ([`uri_template_matches`]).
    pub fn listed_template_for(&self, uri: &str) -> bool {
        self.client
            .known()
            .templates
            .iter()
            .any(|t| uri_template_matches(t, uri))
    }

    /// Whether the last [`list_prompts`](Self::list_prompts) had prompt `name` (as the server
    /// names it).
    pub fn listed_prompt(&self, name: &str) -> bool {
        self.client.known().prompts.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::uri_template_matches as m;

    #[test]
    fn level_one_templates_match_one_segment() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(m(t, "demo://resource/dynamic/text/12"));
        assert!(!m(t, "demo://resource/dynamic/text/"));
        assert!(!m(t, "demo://resource/dynamic/text/1/2"));
        assert!(!m(t, "demo://resource/dynamic/blob/12"));
        assert!(m("file:///{a}/x/{b}.txt", "file:///dir/x/name.txt"));
        assert!(!m("file:///{a}/x/{b}.txt", "file:///dir/y/name.txt"));
    }

    #[test]
    fn reserved_and_query_forms() {
        assert!(m("file:///{+path}", "file:///a/b/c"));
        assert!(m("https://x/search{?q,lang}", "https://x/search"));
        assert!(m("https://x/search{?q,lang}", "https://x/search?q=1"));
        assert!(m("test://exact", "test://exact"));
        assert!(!m("test://exact", "test://exact/more"));
        assert!(!m("test://{broken", "test://x"));
        assert!(m("x://{a}é", "x://béé"));
    }
}
