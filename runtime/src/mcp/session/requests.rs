//! The requests of MCP's other server features on the shared session: `resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get`,
//! `completion/complete` (subscriptions are in [`super::subscriptions`]).
//!
//! Each request waits at most `McpOptions::request_timeout` for its answer (a request given up
//! on, by the timeout or by its caller, is cancelled with `notifications/cancelled`). Listings
//! follow `nextCursor` up to `max_list_pages` pages, as `tools/list` does. Every one of these
//! requests only reads, so when the session drops under one it is sent once more on a new
//! session. A server without the feature's capability gets no request: a
//! listing is then empty, anything else a `protocol` error saying so.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, GetPromptRequest,
    GetPromptRequestParams, GetPromptResponse, PaginatedRequestParams, Prompt, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResponse, RequestOptionalParam, Resource,
    ResourceTemplate, ServerCapabilities, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use super::subscriptions::Subscriptions;
use super::{Abandoned, Client, Session};
use crate::mcp::convert;
use crate::{ErrorKind, ToolError};

/// One page of a listing: its items and the next cursor.
type Page<T> = (Vec<T>, Option<String>);

/// Takes the page out of a listing's result (the result back when it is another one).
type PageOf<T> = fn(ServerResult) -> Result<Page<T>, Box<ServerResult>>;

/// What a client remembers for these features, across sessions.
#[derive(Default)]
pub(crate) struct Passthrough {
    /// What the last listings gave.
    known: RwLock<Known>,
    /// Resource subscriptions (re-sent on each new session).
    pub(super) subscriptions: Arc<Subscriptions>,
}

/// What the last listings of a server gave: lets a caller send a request to the server that
/// offers its target.
#[derive(Debug, Default)]
pub(crate) struct Known {
    /// Resource URIs of the last `resources/list`.
    pub(crate) resources: HashSet<String>,
    /// URI templates of the last `resources/templates/list`.
    pub(crate) templates: Vec<String>,
    /// Prompt names of the last `prompts/list`.
    pub(crate) prompts: HashSet<String>,
}

/// A feature a server declares in its capabilities.
#[derive(Debug, Clone, Copy)]
pub(super) enum Feature {
    Resources,
    Subscribe,
    Prompts,
    Completions,
}

impl Feature {
    pub(super) fn offered(self, caps: &ServerCapabilities) -> bool {
        match self {
            Self::Resources => caps.resources.is_some(),
            Self::Subscribe => caps
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
            Self::Prompts => caps.prompts.is_some(),
            Self::Completions => caps.completions.is_some(),
        }
    }

    fn capability(self) -> &'static str {
        match self {
            Self::Resources => "resources",
            Self::Subscribe => "resources.subscribe",
            Self::Prompts => "prompts",
            Self::Completions => "completions",
        }
    }
}

/// The capabilities a session's server declared (none when it declared nothing).
pub(super) fn capabilities_of(session: &Session) -> ServerCapabilities {
    session
        .peer
        .peer_info()
        .map(|i| i.capabilities.clone())
        .unwrap_or_default()
}

impl Client {
    /// What the last listings gave.
    pub(crate) fn known(&self) -> RwLockReadGuard<'_, Known> {
        self.passthrough
            .known
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// What the server sends unasked, from now on.
    pub(crate) fn events(&self) -> tokio::sync::broadcast::Receiver<crate::mcp::McpEvent> {
        self.shared.events()
    }

    /// The server's capabilities, connecting first if needed.
    pub(crate) async fn capabilities(&self) -> Result<ServerCapabilities, ToolError> {
        Ok(capabilities_of(&*self.session(None).await?))
    }

    /// Every resource (`resources/list`, all pages).
    pub(crate) async fn list_resources(&self) -> Result<Vec<Resource>, ToolError> {
        let items = self
            .list_all(
                "resources/list",
                Feature::Resources,
                |p| ClientRequest::ListResourcesRequest(RequestOptionalParam::with_param(p)),
                |r| match r {
                    ServerResult::ListResourcesResult(r) => Ok((r.resources, r.next_cursor)),
                    other => Err(Box::new(other)),
                },
            )
            .await?;
        self.remember(|k| k.resources = items.iter().map(|r| r.uri.clone()).collect());
        Ok(items)
    }

    /// Every resource template (`resources/templates/list`, all pages).
    pub(crate) async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ToolError> {
        let items = self
            .list_all(
                "resources/templates/list",
                Feature::Resources,
                |p| {
                    ClientRequest::ListResourceTemplatesRequest(RequestOptionalParam::with_param(p))
                },
                |r| match r {
                    ServerResult::ListResourceTemplatesResult(r) => {
                        Ok((r.resource_templates, r.next_cursor))
                    }
                    other => Err(Box::new(other)),
                },
            )
            .await?;
        self.remember(|k| k.templates = items.iter().map(|t| t.uri_template.clone()).collect());
        Ok(items)
    }

    /// Every prompt (`prompts/list`, all pages).
    pub(crate) async fn list_prompts(&self) -> Result<Vec<Prompt>, ToolError> {
        let items = self
            .list_all(
                "prompts/list",
                Feature::Prompts,
                |p| ClientRequest::ListPromptsRequest(RequestOptionalParam::with_param(p)),
                |r| match r {
                    ServerResult::ListPromptsResult(r) => Ok((r.prompts, r.next_cursor)),
                    other => Err(Box::new(other)),
                },
            )
            .await?;
        self.remember(|k| k.prompts = items.iter().map(|p| p.name.clone()).collect());
        Ok(items)
    }

    /// `resources/read`: the contents, or (2026-07-28) the input the server needs first.
    pub(crate) async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ToolError> {
        let what = format!("resources/read {}", params.uri);
        match self
            .request(&what, Feature::Resources, || {
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params.clone()))
            })
            .await?
        {
            ServerResult::ReadResourceResult(r) => Ok(ReadResourceResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(ReadResourceResponse::InputRequired(r)),
            other => Err(self.unexpected(&what, &other)),
        }
    }

    /// `prompts/get`: the messages, or (2026-07-28) the input the server needs first.
    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ToolError> {
        let what = format!("prompts/get {}", params.name);
        match self
            .request(&what, Feature::Prompts, || {
                ClientRequest::GetPromptRequest(GetPromptRequest::new(params.clone()))
            })
            .await?
        {
            ServerResult::GetPromptResult(r) => Ok(GetPromptResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(GetPromptResponse::InputRequired(r)),
            other => Err(self.unexpected(&what, &other)),
        }
    }

    /// `completion/complete`.
    pub(crate) async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ToolError> {
        let what = "completion/complete";
        match self
            .request(what, Feature::Completions, || {
                ClientRequest::CompleteRequest(CompleteRequest::new(params.clone()))
            })
            .await?
        {
            ServerResult::CompleteResult(r) => Ok(r),
            other => Err(self.unexpected(what, &other)),
        }
    }

    fn remember(&self, update: impl FnOnce(&mut Known)) {
        update(
            &mut self
                .passthrough
                .known
                .write()
                .unwrap_or_else(|p| p.into_inner()),
        );
    }

    /// One request on the live session (connecting first), sent once more on a new session
    /// when the session drops under it.
    ///
    /// # Errors
    /// `protocol` when the server lacks `feature`; otherwise as [`send`](Self::send).
    pub(super) async fn request(
        &self,
        what: &str,
        feature: Feature,
        make: impl Fn() -> ClientRequest,
    ) -> Result<ServerResult, ToolError> {
        let mut retried = false;
        loop {
            let session = self.session(None).await?;
            self.check(&session, feature, what)?;
            match self.send(&session, what, make()).await {
                Err((e, true)) if !retried => {
                    tracing::info!(server = %self.id, error = %e, "session dropped during {what}; sending it again on a new session");
                    retried = true;
                }
                other => return other.map_err(|(e, _)| e),
            }
        }
    }

    /// An error unless the session's server declared `feature`. The error carries JSON-RPC
    /// code -32601 (method not found) in its details, as a server would answer.
    pub(super) fn check(
        &self,
        session: &Session,
        feature: Feature,
        what: &str,
    ) -> Result<(), ToolError> {
        if feature.offered(&capabilities_of(session)) {
            return Ok(());
        }
        let message = format!(
            "MCP server `{}` does not offer {what} (its capabilities have no `{}`)",
            self.id,
            feature.capability()
        );
        Err(ToolError::new(ErrorKind::Protocol, message.clone())
            .with_retryable(false)
            .with_details(json!({"server": self.id, "code": -32601, "message": message})))
    }

    /// Every item of a paginated listing; empty when the server lacks `feature`.
    async fn list_all<T>(
        &self,
        what: &str,
        feature: Feature,
        request: fn(PaginatedRequestParams) -> ClientRequest,
        page: PageOf<T>,
    ) -> Result<Vec<T>, ToolError> {
        match self.list_once(what, feature, request, page).await {
            Err((e, true)) => {
                tracing::info!(server = %self.id, error = %e, "session dropped during {what}; listing again on a new session");
                self.list_once(what, feature, request, page)
                    .await
                    .map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// One listing; the error says whether the session dropped under it.
    async fn list_once<T>(
        &self,
        what: &str,
        feature: Feature,
        request: fn(PaginatedRequestParams) -> ClientRequest,
        page: PageOf<T>,
    ) -> Result<Vec<T>, (ToolError, bool)> {
        let session = self.session(None).await.map_err(|e| (e, false))?;
        if !feature.offered(&capabilities_of(&session)) {
            return Ok(Vec::new());
        }
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for n in 0.. {
            if n == self.options.max_list_pages {
                tracing::warn!(server = %self.id, pages = n, "{what} keeps returning a nextCursor; the listing is cut off here");
                break;
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let result = self.send(&session, what, request(params)).await?;
            let (page_items, next) =
                page(result).map_err(|r| (self.unexpected(what, &r), false))?;
            items.extend(page_items);
            match next {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(_) => {
                    tracing::warn!(server = %self.id, "{what} repeated a cursor; the listing stops there");
                    break;
                }
                None => break,
            }
        }
        Ok(items)
    }

    /// Sends `request` on `session` and waits at most `request_timeout` for the answer; a
    /// request given up on (timeout, caller gone) is cancelled. The error says whether the
    /// session dropped under it (then it is forgotten: the next request starts a new one).
    pub(super) async fn send(
        &self,
        session: &Session,
        what: &str,
        request: ClientRequest,
    ) -> Result<ServerResult, (ToolError, bool)> {
        let options = PeerRequestOptions::with_timeout(self.options.request_timeout);
        let handle = session
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| self.failure(session, what, &e))?;
        let mut abandoned = Abandoned::new(session, handle.id.clone());
        let response = handle.await_response().await;
        abandoned.answered();
        response.map_err(|e| self.failure(session, what, &e))
    }

    fn failure(&self, session: &Session, what: &str, e: &rmcp::ServiceError) -> (ToolError, bool) {
        let dropped = matches!(
            e,
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
        );
        if dropped {
            self.drop_session(session);
        }
        let error = convert::service_error(&self.id, what, e, session.process.as_deref());
        (error, dropped)
    }

    fn unexpected(&self, what: &str, result: &ServerResult) -> ToolError {
        ToolError::new(
            ErrorKind::Protocol,
            format!(
                "MCP server `{}` answered {what} with a result of another request: {}",
                self.id,
                toolgate_model::text::cut(&serde_json::to_string(result).unwrap_or_default(), 200)
            ),
        )
    }
}
