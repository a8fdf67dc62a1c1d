//! [`RemoteSourceBuilder`]: a remote source's settings (discovery, health checks, call timeout,
//! result size, filters, prefix).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Inner, Listing, RemoteBackend, RemoteSource, ToolFilter};

/// Settings of a [`RemoteSource`], built with [`RemoteSource::builder`].
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) lazy: bool,
    pub(super) discovery_timeout: Duration,
    pub(super) retry_interval: Duration,
    pub(super) health_interval: Option<Duration>,
    pub(super) call_timeout: Option<Duration>,
    pub(super) max_result_bytes: Option<usize>,
    pub(super) filter: ToolFilter,
    pub(super) global: ToolFilter,
    pub(super) prefix: bool,
    pub(super) require: Option<toolgate_model::config::Require>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            lazy: false,
            discovery_timeout: Duration::from_secs(30),
            retry_interval: Duration::from_secs(30),
            health_interval: Some(Duration::from_secs(30)),
            call_timeout: None,
            max_result_bytes: Some(RemoteSourceBuilder::DEFAULT_MAX_RESULT_BYTES),
            filter: ToolFilter::all(),
            global: ToolFilter::all(),
            prefix: true,
            require: None,
        }
    }
}

/// Builds a [`RemoteSource`] around a [`RemoteBackend`].
pub struct RemoteSourceBuilder {
    id: String,
    backend: Arc<dyn RemoteBackend>,
    settings: Settings,
}

impl RemoteSourceBuilder {
    pub(super) fn new(id: String, backend: Arc<dyn RemoteBackend>) -> Self {
        Self {
            id,
            backend,
            settings: Settings::default(),
        }
    }

    /// The longest a call may take when neither the caller, the tool, the source nor the
    /// toolset sets a deadline (120 s): a remote call never waits forever.
    pub const FALLBACK_CALL_TIMEOUT: Duration = Duration::from_secs(120);

    /// The default result size limit: 64 KiB.
    pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024;

    /// `true`: contact the remote end on first use of the `{id}.` prefix, not at start-up.
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.settings.lazy = lazy;
        self
    }

    /// The longest a listing (connect + `tools/list` with every page) may take (default 30 s).
    pub fn discovery_timeout(mut self, timeout: Duration) -> Self {
        self.settings.discovery_timeout = timeout;
        self
    }

    /// How long a failed listing is remembered before a lookup may contact the remote end again
    /// (default 30 s); [`SourceLifecycle::refresh`](crate::SourceLifecycle::refresh) always contacts it.
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.settings.retry_interval = interval;
        self
    }

    /// How often the connection is health-checked once the tools are listed (default 30 s;
    /// `None`: never).
    pub fn health_interval(mut self, interval: Option<Duration>) -> Self {
        self.settings.health_interval = interval;
        self
    }

    /// The timeout of each call to this source's tools (a tool's descriptor carries it; the
    /// toolset's default applies when `None`).
    pub fn call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.call_timeout = timeout;
        self
    }

    /// The most bytes a result may have (default
    /// [`DEFAULT_MAX_RESULT_BYTES`](Self::DEFAULT_MAX_RESULT_BYTES); `None`: no limit). Parts
    /// are kept in order while they fit; the text part that crosses the limit is cut head +
    /// tail with a marker naming a `toolgate://results/...` URI where the full result can be
    /// read ([`SourceLifecycle::stored_result`](crate::SourceLifecycle::stored_result)); later parts become notes; `structuredContent` over
    /// the limit is left out whole, with a note. The content an `isError` result carries is
    /// limited the same way.
    pub fn max_result_bytes(mut self, max: Option<usize>) -> Self {
        self.settings.max_result_bytes = max;
        self
    }

    /// Allow/deny lists of tool names as the remote end names them; a tool renamed to a
    /// provider-safe name (`admin.tools.list` → `admin_tools_list`) is matched under both.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.settings.filter = filter;
        self
    }

    /// Allow/deny lists of tool names as the toolset names them (`{id}.{tool}`), shared by all
    /// remote sources; a renamed tool is matched under `{id}.{remote name}` and
    /// `{id}.{provider-safe name}`.
    pub fn global_filter(mut self, filter: ToolFilter) -> Self {
        self.settings.global = filter;
        self
    }

    /// `false`: the tools are named as the remote end names them (`echo`, made provider-safe
    /// the same way), not `{id}.{tool}` (default `true`). A name another source also offers is then a conflict
    /// ([`Toolset::name_conflicts`](crate::Toolset::name_conflicts)); the source listed
    /// first keeps it. The global filter still matches `{id}.{tool}`.
    pub fn prefix(mut self, prefix: bool) -> Self {
        self.settings.prefix = prefix;
        self
    }

    /// Semver constraints the tools must meet (tools.yaml `require:`), matched against the
    /// tool's name as the remote end names it: a tool whose version does not meet its
    /// constraint, or that declares none, is left out at each listing with the reason
    /// (reported as the other rejected tools are); the source's other tools stay.
    pub fn require(mut self, require: Option<toolgate_model::config::Require>) -> Self {
        self.settings.require = require;
        self
    }

    /// Builds the source. Nothing is contacted yet.
    pub fn build(self) -> RemoteSource {
        RemoteSource {
            inner: Arc::new(Inner {
                id: self.id,
                backend: self.backend,
                settings: self.settings,
                listing: RwLock::new(Listing::default()),
                discovery: tokio::sync::Mutex::new(()),
                closed: CancellationToken::new(),
                watcher: Mutex::new(false),
                results: super::limit::ResultStore::new(),
                results_sink: std::sync::OnceLock::new(),
                changed: watch::channel(0).0,
            }),
        }
    }
}
