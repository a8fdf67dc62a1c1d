//! OpenAPI sources read at run time (`load: runtime`, or every entry for a gateway that compiled
//! none): the document is read and converted when the toolset discovers the source, which then
//! serves like a compiled one. Until then its status is `pending`; after a failure, `failed`
//! with the error, retried after [`RETRY_INTERVAL`] (or at once by `refresh`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_model::config::{LoadMode, OpenApiSource as OpenApiConfig, ToolsSection};
use toolgate_model::openapi::{ConvertOptions, Document, convert};

use super::OpenApiSource;
use crate::{
    BoxFuture, BuildError, ErrorKind, SourceLifecycle, SourceState, SourceStatus, SourceTool,
    ToolContext, ToolError, ToolFuture, ToolSource,
};

/// How long a failed load is remembered before a lookup tries again.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(30);
/// The longest fetching a document from a URL may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest document read from a URL (64 MiB): a longer body fails the load, naming the
/// limit, before more than this is held in memory.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Which tools.yaml `openapi` entries [`ToolsetBuilder::openapi_sources`](crate::ToolsetBuilder::openapi_sources)
/// loads at run time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LoadFilter {
    /// Only entries marked `load: runtime` (an application whose build compiled the others).
    #[default]
    Runtime,
    /// Every entry (a gateway binary that compiled none of them).
    All,
    /// Every entry except these ids (the ones compiled in).
    AllExcept(BTreeSet<String>),
}

impl LoadFilter {
    fn admits(&self, entry: &OpenApiConfig) -> bool {
        match self {
            Self::Runtime => entry.load == LoadMode::Runtime,
            Self::All => true,
            Self::AllExcept(ids) => !ids.contains(&entry.id),
        }
    }
}

enum State {
    Pending,
    Ready(Arc<OpenApiSource>, u64),
    Failed(String, Instant),
}

/// A source whose document is read on discovery.
pub(crate) struct RuntimeSource {
    config: OpenApiConfig,
    base_dir: PathBuf,
    state: RwLock<State>,
    loading: tokio::sync::Mutex<()>,
    /// Bumped each time a load succeeds (the tools appear or change): see
    /// [`SourceLifecycle::tool_changes`](crate::SourceLifecycle::tool_changes).
    changes: tokio::sync::watch::Sender<u64>,
}

impl RuntimeSource {
    pub(crate) fn new(config: OpenApiConfig, base_dir: PathBuf) -> Self {
        Self {
            config,
            base_dir,
            state: RwLock::new(State::Pending),
            loading: tokio::sync::Mutex::new(()),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    fn ready(&self) -> Option<Arc<OpenApiSource>> {
        match &*self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            State::Ready(s, _) => Some(s.clone()),
            _ => None,
        }
    }

    fn needs_load(&self, force: bool) -> bool {
        match &*self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            State::Pending => true,
            State::Ready(..) => force,
            State::Failed(_, when) => force || when.elapsed() >= RETRY_INTERVAL,
        }
    }

    async fn load(&self, force: bool) -> Result<(), ToolError> {
        if !self.needs_load(force) {
            return self.last_error();
        }
        let _single = self.loading.lock().await;
        if !self.needs_load(force) {
            return self.last_error();
        }
        let started = Instant::now();
        let result = load_source(&self.config, &self.base_dir).await;
        let mut state = self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match result {
            Ok(source) => {
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                *state = State::Ready(Arc::new(source), ms);
                drop(state);
                self.changes.send_modify(|n| *n += 1);
                Ok(())
            }
            Err(message) => {
                *state = State::Failed(message.clone(), Instant::now());
                Err(load_error(&self.config.id, &message))
            }
        }
    }

    fn last_error(&self) -> Result<(), ToolError> {
        match &*self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            State::Failed(message, _) => Err(load_error(&self.config.id, message)),
            _ => Ok(()),
        }
    }
}

fn load_error(id: &str, message: &str) -> ToolError {
    ToolError::new(
        ErrorKind::Upstream,
        format!("OpenAPI source `{id}` could not be loaded: {message}"),
    )
    .with_retryable(true)
}

/// The body of `response` as text (UTF-8, lossy), failing as soon as it exceeds `limit` bytes.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    spec: &str,
    host: &str,
    limit: u64,
) -> Result<String, String> {
    let too_big =
        || format!("`{spec}` is larger than the limit of {limit} bytes for an OpenAPI document");
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| super::call::network_error(&e, host).message().to_string())?
    {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Reads, converts and binds the document of `config`.
async fn load_source(config: &OpenApiConfig, base_dir: &Path) -> Result<OpenApiSource, String> {
    let (doc, url) = if config.spec_is_url() {
        let url =
            reqwest::Url::parse(&config.spec).map_err(|e| format!("`{}`: {e}", config.spec))?;
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let host = url.host_str().unwrap_or_default().to_string();
        let response = client
            .get(url.clone())
            .header(
                "Accept",
                "application/json, application/yaml, text/yaml, */*",
            )
            .send()
            .await
            .map_err(|e| super::call::network_error(&e, &host).message().to_string())?;
        if !response.status().is_success() {
            return Err(format!(
                "fetching `{}` gave {}",
                config.spec,
                super::response::status_line(response.status())
            ));
        }
        let text = read_capped(response, &config.spec, &host, MAX_DOCUMENT_BYTES).await?;
        (
            Document::from_text(&text, &config.spec).map_err(|e| e.to_string())?,
            Some(url),
        )
    } else {
        let path = base_dir.join(&config.spec);
        let doc = tokio::task::spawn_blocking(move || Document::from_file(&path))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        (doc, None)
    };
    let conversion =
        convert(&doc, &ConvertOptions::for_source(config)).map_err(|e| e.to_string())?;
    let mut builder = OpenApiSource::builder(&config.id, conversion).config(config);
    if let Some(url) = url {
        builder = builder.spec_url(url);
    }
    builder.build().map_err(|e| e.to_string())
}

impl ToolSource for RuntimeSource {
    fn id(&self) -> &str {
        &self.config.id
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.ready().map(|s| s.tools()).unwrap_or_default()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let tool = tool.clone();
        ToolFuture::new(async move {
            self.load(false).await?;
            match self.ready() {
                Some(source) => source.call(&tool, args, ctx).await,
                None => Err(ToolError::not_found(tool.name())),
            }
        })
    }

    fn kind(&self) -> &str {
        "openapi"
    }

    fn prefixed(&self) -> bool {
        self.config.prefix
    }

    fn lifecycle(&self) -> Option<&dyn SourceLifecycle> {
        Some(self)
    }
}

impl SourceLifecycle for RuntimeSource {
    fn status(&self) -> SourceStatus {
        let mut status = SourceStatus::ready(&self.config.id, "openapi", 0);
        match &*self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            State::Pending => status.state = SourceState::Pending,
            State::Ready(source, ms) => {
                status.tools = source.ops.len();
                status.discovery_ms = Some(*ms);
                status.protocol = Some("openapi".to_string());
            }
            State::Failed(message, _) => {
                status.state = SourceState::Failed;
                status.error = Some(message.clone());
            }
        }
        status
    }

    fn discover(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(self.load(false))
    }

    fn refresh(&self) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(self.load(true))
    }

    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.changes.subscribe())
    }
}

impl crate::ToolsetBuilder {
    /// Adds one source per tools.yaml `openapi` entry that `filter` admits; each reads its
    /// document (a file relative to `base_dir`, or an `http(s)` URL fetched with a
    /// [`FETCH_TIMEOUT`]) and converts it when the toolset discovers it, then serves like a
    /// compiled source. Until then its status is `pending`; a failure is `failed` with the
    /// error (a relative `servers` URL of a URL document resolves against that URL).
    pub fn openapi_sources(
        mut self,
        tools: &ToolsSection,
        base_dir: impl AsRef<Path>,
        filter: LoadFilter,
    ) -> Self {
        for entry in tools.openapi.iter().filter(|e| filter.admits(e)) {
            self = self.source_arc(Arc::new(RuntimeSource::new(
                entry.clone(),
                base_dir.as_ref().to_path_buf(),
            )));
        }
        self
    }

    /// [`openapi_sources`](Self::openapi_sources) for every entry (a gateway binary that
    /// compiled none of them in).
    pub fn openapi_sources_all(self, tools: &ToolsSection, base_dir: impl AsRef<Path>) -> Self {
        self.openapi_sources(tools, base_dir, LoadFilter::All)
    }

    /// [`openapi_sources`](Self::openapi_sources) with [`LoadFilter::Runtime`] from the text of
    /// a tools.yaml (generated code passes the `TOOLS_YAML` it was built from).
    ///
    /// # Errors
    /// At [`build`](crate::ToolsetBuilder::build): [`BuildError::Source`] when the text does not
    /// load.
    pub fn openapi_sources_from_yaml(self, yaml: &str, base_dir: impl AsRef<Path>) -> Self {
        match toolgate_model::config::ToolsConfig::from_yaml_str(yaml, Path::new("tools.yaml")) {
            Ok(loaded) => self.openapi_sources(&loaded.config.tools, base_dir, LoadFilter::Runtime),
            Err(e) => {
                let message = e.to_string();
                self.source_with(move |_| {
                    Err(BuildError::Source {
                        source_id: "openapi".to_string(),
                        message,
                    })
                })
            }
        }
    }
}
