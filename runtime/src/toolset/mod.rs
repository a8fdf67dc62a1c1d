//! [`Toolset`]: one agent's whole action space, and its builder.
//!
//! Files: this one holds the toolset, its catalog and what reads it (listing, describing,
//! exporting, pinning); `call.rs` the call path (`call`, `call_with`, `call_many`,
//! `call_blocking`); `discover.rs` what reaches the sources (discovery, lazy sources, status,
//! refresh, close); `builder.rs` the builder.

mod builder;
mod call;
mod deferred;
mod discover;
#[cfg(feature = "redis")]
mod notices;
mod reload;
#[cfg(test)]
mod reload_tests;
#[cfg(test)]
mod report_tests;
mod sources;
#[cfg(test)]
mod sources_tests;

pub use builder::ToolsetBuilder;
pub use deferred::{DeferredExport, DeferredLoading};
pub use discover::ToolsWatch;
pub use reload::PolicyReload;
pub use sources::{RETIRED_SOURCE_GRACE, SourcesReload};

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;
use toolgate_model::dialect::{Dialect, ExportError};

use crate::catalog::{Catalog, ToolEntry};
use crate::validate::ArgumentPolicy;
use crate::{StateMap, ToolDescriptor, ToolError, ToolSource, Validated};

/// The `_meta` key of a result under which the changes made to the arguments are listed.
pub const COERCIONS_META_KEY: &str = "toolgate/coercions";

/// One agent's toolset: the compiled static table plus any other [`ToolSource`]s, the
/// application state, and the defaults every call runs under.
///
/// Cheap to clone (an `Arc`); clones share everything. Each *built* toolset has its own state, so
/// two agents built from the same generated code are isolated.
///
/// Every tool is one [`ToolEntry`] of the toolset's [`Catalog`]: a call looks its name up once,
/// then runs the entry's policy stack (built on the tool's first call) over its source.
///
/// ```ignore
/// mod toolset { toolgate::include_toolset!(); }
/// let tools = toolset::toolset().state(MyDb::connect()?).build()?;
/// let out = tools.call("search", serde_json::json!({"query": "rust"})).await?;
/// ```
#[derive(Clone)]
pub struct Toolset {
    inner: Arc<Inner>,
}

struct Inner {
    /// The sources, their change counters and `tools.overrides`; replaced as one by
    /// [`Toolset::reload_sources`].
    sources: ArcSwap<sources::SourceSet>,
    /// Bumped by every reload (policy or sources): the catalog and every
    /// [`ToolsWatch`] hear it.
    config_changes: tokio::sync::watch::Receiver<u64>,
    /// The current catalog; replaced (under `rebuild`) when a watched source's tools changed.
    catalog: ArcSwap<Catalog>,
    rebuild: Mutex<()>,
    states: StateMap,
    default_timeout: Option<Duration>,
    blocking_runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    /// The policy layers every call goes through, and the state they share; replaced by
    /// [`Toolset::reload_policy`].
    pipeline: ArcSwap<crate::policy::Pipeline>,
    /// What a policy reload needs besides the new `policy:` section.
    reload: reload::Inputs,
    /// The state every pipeline of this toolset shares (the same `Arc` as `pipeline`'s): its
    /// shared store is read without loading the pipeline.
    #[cfg(feature = "redis")]
    shared: Arc<crate::policy::pipeline::Shared>,
    /// Tool pinning of remote tools (`policy.pinning`), when configured.
    pins: Option<crate::policy::pinning::Pins>,
    /// The model of semantic search, when the builder was given one.
    semantic: Option<Arc<crate::search::semantic::Ranker>>,
    /// The relay of tool-list changes between replicas, once started (see `notices`).
    #[cfg(feature = "redis")]
    notices: OnceLock<notices::Relay>,
}

/// A tool name offered by two sources: see [`Toolset::name_conflicts`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NameConflict {
    /// The name (as the toolset names it).
    pub name: String,
    /// The source that keeps the name (listed first).
    pub kept_by: String,
    /// The source whose tool of that name cannot be reached.
    pub shadowed: String,
}

impl fmt::Display for NameConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool `{}` is offered by source `{}` and by source `{}` (mounted without prefix); set `prefix: true` on one of them or deny the tool there",
            self.name, self.kept_by, self.shadowed
        )
    }
}

impl Toolset {
    /// A builder for an empty toolset.
    pub fn builder() -> ToolsetBuilder {
        ToolsetBuilder::default()
    }

    /// The current catalog: one entry per tool, as of the sources' latest listings (a source
    /// whose tools changed since the last snapshot is listed again first).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current().clone()
    }

    /// The current catalog without a reference count (the call path's).
    fn current(&self) -> arc_swap::Guard<Arc<Catalog>> {
        let catalog = self.inner.catalog.load();
        if !catalog.is_stale() {
            return catalog;
        }
        drop(catalog);
        self.rebuild_catalog();
        self.inner.catalog.load()
    }

    /// Lists every source again into a new catalog, keeping the entries that still serve.
    fn rebuild_catalog(&self) {
        let _one_at_a_time = self.inner.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.inner.catalog.load_full();
        if !current.is_stale() {
            return; // another caller rebuilt it meanwhile
        }
        let set = self.inner.sources.load();
        let next = Catalog::build(
            &set.list,
            Some(&current),
            self.changes(&set),
            &set.overrides,
        );
        tracing::debug!(
            tools = next.len(),
            generation = next.generation(),
            "tool catalog rebuilt"
        );
        self.inner.catalog.store(Arc::new(next));
    }

    /// The catalog entry of tool `name` (its name inside toolgate, or the name a model sees:
    /// `{source}__{tool}` for `{source}.{tool}`), whether or not pinning withholds it.
    pub fn entry(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.current().get(name).cloned()
    }

    /// Whether some source offers a tool called `name` (either name form), whether or not
    /// pinning withholds it. Touches nothing but the name index.
    pub fn contains(&self, name: &str) -> bool {
        self.current().contains(name)
    }

    /// Every tool of every source, in source order then each source's order (a tool shadowed by
    /// an [overlay](ToolsetBuilder::overlay) is listed once, as the overlay's).
    ///
    /// A remote tool withheld by [pinning](crate::policy::pinning) is left out (see
    /// [`withheld`](Self::withheld)).
    pub fn tools(&self) -> Vec<Arc<ToolDescriptor>> {
        self.current()
            .entries()
            .iter()
            .filter(|e| self.pin_state(e).is_none())
            .map(|e| Arc::clone(e.descriptor()))
            .collect()
    }

    /// The entries [`tools`](Self::tools) lists, for what needs more than the descriptor
    /// (cached exports).
    pub fn entries(&self) -> Vec<Arc<ToolEntry>> {
        self.current()
            .entries()
            .iter()
            .filter(|e| self.pin_state(e).is_none())
            .cloned()
            .collect()
    }

    /// The tools `identity` may call ([`tools`](Self::tools) less those its roles, the
    /// `policy.rules` or `requires_auth` refuse it): what a caller is shown.
    pub fn tools_for(&self, identity: &crate::Identity) -> Vec<Arc<ToolDescriptor>> {
        self.entries_for(identity)
            .iter()
            .map(|e| Arc::clone(e.descriptor()))
            .collect()
    }

    /// The entries [`tools_for`](Self::tools_for) lists, for what needs more than the
    /// descriptor (cached exports).
    pub fn entries_for(&self, identity: &crate::Identity) -> Vec<Arc<ToolEntry>> {
        self.current()
            .entries()
            .iter()
            .filter(|e| self.shows(e, identity))
            .cloned()
            .collect()
    }

    /// Whether a listing for `identity` shows `entry` (an entry of [`catalog`](Self::catalog)):
    /// pinning does not withhold it and `identity` may call it. What
    /// [`tools_for`](Self::tools_for) checks of each entry, for a listing that walks the catalog
    /// itself (one page of an MCP `tools/list`).
    pub fn shows(&self, entry: &ToolEntry, identity: &crate::Identity) -> bool {
        self.pin_state(entry).is_none()
            && entry.access(&self.inner.pipeline.load()).permits(identity)
    }

    /// The tools that best fit `query`, best first: at most `options.k`, each with its score
    /// and the fields that matched (see [`crate::search`] for what is indexed and how it is
    /// ranked). Only tools a listing for `identity` shows are found ([`shows`](Self::shows),
    /// the check [`tools_for`](Self::tools_for) makes), and only those `options`' filters
    /// admit. The index is built on the first search after the catalog changed; calls never
    /// wait for it. With [semantic ranking](crate::ToolsetBuilder::semantic_search), that first
    /// search also embeds the tools that have no vector yet (about 20 ms a tool on 2 cores with
    /// all-MiniLM-L6-v2), and every search runs the model once on the query.
    ///
    /// # Errors
    /// `invalid_arguments` for a query with nothing to search for (empty, or only stop words
    /// or punctuation), one longer than [`MAX_QUERY_CHARS`](crate::search::MAX_QUERY_CHARS)
    /// characters, or `options.k == 0`.
    pub fn search(
        &self,
        identity: &crate::Identity,
        query: &str,
        options: &crate::SearchOptions,
    ) -> Result<Vec<crate::SearchHit>, ToolError> {
        let catalog = self.current();
        crate::search::search(
            &catalog,
            query,
            options,
            |entry| self.shows(entry, identity),
            self.inner.semantic.as_deref(),
        )
    }

    /// [`search`](Self::search) among the tools `within` admits only (a gateway's virtual
    /// server): the best `options.k` of those, not the best of all then filtered.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub fn search_within(
        &self,
        identity: &crate::Identity,
        query: &str,
        options: &crate::SearchOptions,
        within: impl Fn(&ToolEntry) -> bool,
    ) -> Result<Vec<crate::SearchHit>, ToolError> {
        let catalog = self.current();
        crate::search::search(
            &catalog,
            query,
            options,
            |entry| within(entry) && self.shows(entry, identity),
            self.inner.semantic.as_deref(),
        )
    }

    /// Whether `identity` may call `tool` (its roles, the `policy.rules`, `requires_auth`).
    pub fn may_call(&self, tool: &ToolDescriptor, identity: &crate::Identity) -> bool {
        crate::policy::authorize::allowed(&self.inner.pipeline.load(), tool, identity).is_ok()
    }

    /// The tool called `name`, if any source offers it (and pinning does not withhold it).
    pub fn describe(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        let catalog = self.current();
        let entry = catalog.get(name)?;
        self.pin_state(entry)
            .is_none()
            .then(|| Arc::clone(entry.descriptor()))
    }

    /// Why pinning withholds `entry`'s tool, if it does.
    fn pin_state(&self, entry: &ToolEntry) -> Option<crate::policy::pinning::PinState> {
        let pins = self.inner.pins.as_ref()?;
        if !entry.is_remote() {
            return None;
        }
        pins.verdict(entry.descriptor())
    }

    /// The remote tools pinning withholds now (new and not approved, or changed since approved),
    /// in source order; empty without `policy.pinning`.
    pub fn withheld(&self) -> Vec<crate::policy::pinning::Withheld> {
        self.current()
            .entries()
            .iter()
            .filter_map(|e| {
                self.pin_state(e)
                    .map(|state| crate::policy::pinning::Withheld {
                        name: e.name().to_string(),
                        source: e.source().id().to_string(),
                        state,
                    })
            })
            .collect()
    }

    /// Approves remote tools as they are now (`toolgate approve`): records the current hash of
    /// each tool named (either name form), or of every [withheld](Self::withheld) tool when
    /// `names` is empty, in the approvals file — and, with a
    /// [shared store](ToolsetBuilder::shared_store), in Redis first (whose approvals are read
    /// before choosing the withheld tools), which tells every replica. Returns the names
    /// approved.
    ///
    /// # Errors
    /// `invalid_arguments` without `policy.pinning`, or for a tool that is not remote (only MCP
    /// and A2A tools are pinned); `not_found` for an unknown name; retryable `network` when the
    /// shared store did not answer (nothing is approved then); `internal` when the file cannot
    /// be written.
    pub async fn approve(&self, names: &[String]) -> Result<Vec<String>, ToolError> {
        let Some(pins) = &self.inner.pins else {
            return Err(ToolError::new(
                crate::ErrorKind::InvalidArguments,
                "tool pinning is off: set policy.pinning in tools.yaml",
            ));
        };
        let tools = pins.approve_with(|| self.to_approve(names)).await?;
        Ok(tools.iter().map(|d| d.name.clone()).collect())
    }

    /// The tools [`approve`](Self::approve) records for `names`.
    fn to_approve(&self, names: &[String]) -> Result<Vec<Arc<ToolDescriptor>>, ToolError> {
        let catalog = self.current();
        let mut tools = Vec::new();
        if names.is_empty() {
            tools.extend(
                catalog
                    .entries()
                    .iter()
                    .filter(|e| self.pin_state(e).is_some())
                    .map(|e| Arc::clone(e.descriptor())),
            );
        }
        for name in names {
            let entry = catalog
                .get(name)
                .ok_or_else(|| ToolError::not_found(name))?;
            if !entry.is_remote() {
                let source = entry.source();
                return Err(ToolError::new(
                    crate::ErrorKind::InvalidArguments,
                    format!(
                        "tool `{}` is not a remote tool (source `{}` is {}); only MCP and A2A tools are pinned",
                        entry.name(),
                        source.id(),
                        source.kind()
                    ),
                ));
            }
            tools.push(Arc::clone(entry.descriptor()));
        }
        Ok(tools)
    }

    /// Sets the policy gauges that are read, not counted (each source's circuit breaker state,
    /// `toolgate_circuit_breaker_state`), on the installed `metrics` recorder: call it before
    /// rendering the metrics (the gateway's `/metrics` does).
    pub fn record_policy_gauges(&self) {
        crate::policy::record_gauges(&self.inner.pipeline.load());
    }

    /// The sources, in resolution order (as of now: a [reload](Self::reload_sources) may
    /// add, remove or replace some).
    pub fn sources(&self) -> Vec<Arc<dyn ToolSource>> {
        self.inner.sources.load().list.clone()
    }

    /// The MCP servers among the sources, in source order (for the gateway's passthrough of
    /// resources, prompts and completions), as of now.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Vec<crate::mcp::McpServerHandle> {
        self.inner.sources.load().mcp_servers.clone()
    }

    /// How many times the configuration was reloaded ([`reload_policy`](Self::reload_policy),
    /// [`reload_sources`](Self::reload_sources)): 0 as built.
    pub fn config_generation(&self) -> u64 {
        *self.inner.config_changes.borrow()
    }

    /// The [configuration generation](Self::config_generation), watched: `changed()` returns
    /// after each reload (of the policy or the sources), and an error once the toolset is gone.
    pub fn watch_reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        let mut reloads = self.inner.config_changes.clone();
        reloads.borrow_and_update();
        reloads
    }

    /// The state of type `T` given to the builder, if any.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.inner.states.get::<T>()
    }

    /// The timeout applied to tools that declare none.
    pub fn default_timeout(&self) -> Option<Duration> {
        self.inner.default_timeout
    }

    /// The store the rate limits and budgets are shared through, if the toolset was built with
    /// one ([`ToolsetBuilder::shared_store`]): its [`health`](crate::store::SharedStore::health)
    /// is what a readiness check shows.
    #[cfg(feature = "redis")]
    pub fn shared_store(&self) -> Option<&crate::store::SharedStore> {
        self.inner.shared.store.as_ref()
    }

    /// Names offered by more than one source (as a model sees them: `a.b` and `a__b` are one
    /// name), in source order. The source listed first keeps such a name; the others' tools of
    /// that name cannot be called. Only sources mounted without prefix (or local tools named
    /// like a prefixed remote tool) can conflict. `toolgate serve` refuses to start with any.
    pub fn name_conflicts(&self) -> Vec<NameConflict> {
        let mut owner: HashMap<String, &str> = HashMap::new();
        let mut conflicts = Vec::new();
        let set = self.inner.sources.load();
        for source in &set.list {
            for tool in source.tools() {
                let d = &tool.descriptor;
                let exported = toolgate_model::names::exported_name(&d.name).into_owned();
                match owner.get(&exported) {
                    Some(first) if *first != source.id() => conflicts.push(NameConflict {
                        name: d.name.clone(),
                        kept_by: (*first).to_string(),
                        shadowed: source.id().to_string(),
                    }),
                    Some(_) => {}
                    None => {
                        owner.insert(exported, source.id());
                    }
                }
            }
        }
        conflicts
    }

    /// Checks `args` against tool `name`'s input schema under `policy` (a [`ValidationMode`](crate::ValidationMode)
    /// converts into one), without calling it and whether or not the builder turned validation
    /// on for calls: the arguments as they would be forwarded and every change made to them.
    /// Uses the same compiled validator as calls.
    ///
    /// # Errors
    /// `not_found` for an unknown name; `invalid_arguments` listing every violation with its JSON
    /// pointer; `internal` when the tool's schema cannot be compiled.
    pub fn check_arguments(
        &self,
        name: &str,
        args: Value,
        policy: impl Into<ArgumentPolicy>,
    ) -> Result<Validated, ToolError> {
        let entry = self
            .entry(name)
            .filter(|e| self.pin_state(e).is_none())
            .ok_or_else(|| ToolError::not_found(name))?;
        entry.validator()?.check(entry.name(), args, policy)
    }

    /// How tool `name`'s arguments are checked in calls (`None` for an unknown tool or when
    /// validation is off).
    pub fn argument_policy(&self, name: &str) -> Option<ArgumentPolicy> {
        let descriptor = self.describe(name)?;
        let pipeline = self.inner.pipeline.load();
        pipeline.validate.then(|| pipeline.arguments(&descriptor))
    }

    /// Every tool's definition in `dialect` (each computed once per tool, then shared).
    ///
    /// # Errors
    /// The first tool whose schema the dialect cannot express (the error names it).
    pub fn export(&self, dialect: Dialect) -> Result<Vec<Value>, ExportError> {
        self.entries()
            .iter()
            .map(|e| e.export(dialect).map(Arc::unwrap_or_clone))
            .collect()
    }

    /// Every tool's definition in `dialect` that the dialect can express, and the errors of
    /// the tools it cannot (for Gemini, a schema too large once its `$ref`s are inlined): one such tool does not keep the
    /// others from a model.
    pub fn export_available(&self, dialect: Dialect) -> (Vec<Value>, Vec<ExportError>) {
        let mut ok = Vec::new();
        let mut failed = Vec::new();
        for e in self.entries() {
            match e.export(dialect) {
                Ok(v) => ok.push(Arc::unwrap_or_clone(v)),
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    }
}

impl Toolset {
    /// What makes a catalog of `set` stale: its sources' change counters and the reload
    /// counter, each marked as seen now.
    fn changes(&self, set: &sources::SourceSet) -> Vec<tokio::sync::watch::Receiver<u64>> {
        let mut changes = fresh_changes(&set.watches);
        let mut config = self.inner.config_changes.clone();
        config.borrow_and_update();
        changes.push(config);
        changes
    }
}

/// Clones of `watches`, each marked as having seen the counter's current value (before the
/// sources are listed, so that a change during the listing makes the new catalog stale).
fn fresh_changes(
    watches: &[tokio::sync::watch::Receiver<u64>],
) -> Vec<tokio::sync::watch::Receiver<u64>> {
    watches
        .iter()
        .map(|rx| {
            let mut rx = rx.clone();
            rx.borrow_and_update();
            rx
        })
        .collect()
}

/// `internal: tool `x` panicked: <the panic message>`.
pub(crate) fn panic_error(tool: &str, panic: &(dyn Any + Send)) -> ToolError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_string());
    ToolError::internal(format!("tool `{tool}` panicked: {what}"))
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field(
                "sources",
                &self
                    .inner
                    .sources
                    .load()
                    .list
                    .iter()
                    .map(|s| s.id())
                    .collect::<Vec<_>>(),
            )
            .field("states", &self.inner.states)
            .field("default_timeout", &self.inner.default_timeout)
            .finish()
    }
}
