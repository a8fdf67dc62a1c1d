//! A toolset's sources as one replaceable set, and [`Toolset::reload_sources`]: the hot reload
//! of `tools.mcp`, `tools.a2a`, `tools.openapi` and `tools.overrides` that `toolgate serve`
//! does on SIGHUP.

use std::sync::Arc;
use std::time::Duration;

use super::Toolset;
use crate::ToolSource;

/// How long a source a reload removed or replaced is kept open for the calls still running
/// on it, at most, before it is closed (its session ended, its process stopped).
pub const RETIRED_SOURCE_GRACE: Duration = Duration::from_secs(60);

/// The sources of a toolset, their change counters and the overrides applied to their tools:
/// what [`Toolset::reload_sources`] replaces in one swap.
pub(super) struct SourceSet {
    /// In resolution order.
    pub list: Vec<Arc<dyn ToolSource>>,
    /// The change counters of the sources whose tools can change.
    pub watches: Vec<tokio::sync::watch::Receiver<u64>>,
    /// `tools.overrides`, applied by every catalog snapshot.
    pub overrides: crate::catalog::overrides::Overrides,
    /// The MCP servers among the sources.
    #[cfg(feature = "mcp")]
    pub mcp_servers: Vec<crate::mcp::McpServerHandle>,
}

impl SourceSet {
    pub(super) fn new(
        list: Vec<Arc<dyn ToolSource>>,
        overrides: crate::catalog::overrides::Overrides,
        #[cfg(feature = "mcp")] mcp_servers: Vec<crate::mcp::McpServerHandle>,
    ) -> Self {
        let watches = list
            .iter()
            .filter_map(|s| s.lifecycle().and_then(|l| l.tool_changes()))
            .collect();
        Self {
            list,
            watches,
            overrides,
            #[cfg(feature = "mcp")]
            mcp_servers,
        }
    }
}

/// What [`Toolset::reload_sources`] did, each list of source ids in the new order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcesReload {
    /// The toolset's [configuration generation](Toolset::config_generation) after the reload.
    pub generation: u64,
    /// Sources the new configuration adds.
    pub added: Vec<String>,
    /// Sources whose entry changed: a new source (a new session, a new process) replaces the
    /// running one.
    pub replaced: Vec<String>,
    /// Sources kept as they run (their sessions and processes untouched).
    pub kept: Vec<String>,
    /// Sources the new configuration no longer has.
    pub removed: Vec<String>,
}

impl SourcesReload {
    /// Whether the reload changed no source (the overrides may still have changed).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty()
    }
}

impl Toolset {
    /// Replaces this toolset's sources and `tools.overrides` with those of `next` (a toolset
    /// built, not discovered, from the new configuration), while calls run: a source of
    /// `next` whose id this toolset has and `unchanged(id)` says is configured as before is
    /// not taken, the running one stays (with its session, its process and its tools); every
    /// other source of `next` is taken as it is (discover it with [`discover`](Self::discover),
    /// as at start-up: a new remote source lists its tools on its first use otherwise).
    ///
    /// Sources this toolset has and the new set does not (removed, or replaced by a changed
    /// entry) leave the catalog at once (their tools are `not_found` from the next call on);
    /// the calls already running on them finish, and each is closed once its last call ended,
    /// or after [`RETIRED_SOURCE_GRACE`] at the latest (needs a tokio runtime; without one it
    /// is closed when dropped).
    ///
    /// The policy is not taken from `next`: reload it with [`reload_policy`](Self::reload_policy).
    /// Neither are the state, the shared store, pinning (the approvals file stays; the new
    /// remote tools are pinned by it), semantic search, nor code guardrails. Every
    /// [`watch_tools`](Self::watch_tools) hears the reload and watches the new sources.
    ///
    /// With a [shared store](crate::ToolsetBuilder::shared_store), the new sources keep their
    /// cut results in it as the others do; tool-list changes of sources added by a reload are
    /// not relayed to other replicas (a restart does that).
    pub fn reload_sources(
        &self,
        next: &Toolset,
        unchanged: impl Fn(&str) -> bool,
    ) -> SourcesReload {
        let _one_at_a_time = self.inner.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let (mut report, retired) = self.swap_sources(next, unchanged);
        report.generation = self.reloaded();
        after_swap(&report, retired);
        report
    }

    /// Puts the new set in place (the rebuild lock held; the catalog is rebuilt by the
    /// caller): what changed, and the sources to close once their calls ended.
    pub(super) fn swap_sources(
        &self,
        next: &Toolset,
        unchanged: impl Fn(&str) -> bool,
    ) -> (SourcesReload, Vec<Arc<dyn ToolSource>>) {
        let current = self.inner.sources.load_full();
        let offered = next.inner.sources.load_full();
        let running = |id: &str| current.list.iter().find(|s| s.id() == id);
        let mut report = SourcesReload::default();
        let mut list = Vec::with_capacity(offered.list.len());
        for source in &offered.list {
            let id = source.id();
            match running(id) {
                Some(old) if unchanged(id) => {
                    report.kept.push(id.to_string());
                    list.push(Arc::clone(old));
                }
                Some(_) => {
                    report.replaced.push(id.to_string());
                    list.push(Arc::clone(source));
                }
                None => {
                    report.added.push(id.to_string());
                    list.push(Arc::clone(source));
                }
            }
        }
        let retired: Vec<Arc<dyn ToolSource>> = current
            .list
            .iter()
            .filter(|old| !list.iter().any(|s| Arc::ptr_eq(s, old)))
            .cloned()
            .collect();
        report.removed = current
            .list
            .iter()
            .map(|s| s.id())
            .filter(|id| !list.iter().any(|s| s.id() == *id))
            .map(str::to_string)
            .collect();
        #[cfg(feature = "mcp")]
        let mcp_servers = offered
            .mcp_servers
            .iter()
            .map(|handle| {
                let keep = report.kept.contains(&handle.id);
                match current.mcp_servers.iter().find(|h| h.id == handle.id) {
                    Some(old) if keep => old.clone(),
                    _ => handle.clone(),
                }
            })
            .collect();
        #[cfg(feature = "redis")]
        if let Some(store) = &self.inner.shared.store {
            let sink = store.result_sink();
            let taken = list
                .iter()
                .filter(|s| !current.list.iter().any(|o| Arc::ptr_eq(o, s)));
            for lifecycle in taken.filter_map(|s| s.lifecycle()) {
                lifecycle.keep_results_in(sink.clone());
            }
        }
        let set = SourceSet::new(
            list,
            offered.overrides.clone(),
            #[cfg(feature = "mcp")]
            mcp_servers,
        );
        self.inner.sources.store(Arc::new(set));
        (report, retired)
    }
}

/// What follows a swap of the sources: the log line, the metric, the retired sources closed.
pub(super) fn after_swap(report: &SourcesReload, retired: Vec<Arc<dyn ToolSource>>) {
    tracing::info!(
        generation = report.generation,
        added = ?report.added,
        replaced = ?report.replaced,
        removed = ?report.removed,
        "sources reloaded"
    );
    metrics::counter!("toolgate_source_reloads_total").increment(1);
    retire(retired);
}

/// Closes each of `retired` once no call holds it any more (this task's is the last
/// reference), or after [`RETIRED_SOURCE_GRACE`].
fn retire(retired: Vec<Arc<dyn ToolSource>>) {
    if retired.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return; // closed when dropped
    };
    for source in retired {
        runtime.spawn(async move {
            let deadline = tokio::time::Instant::now() + RETIRED_SOURCE_GRACE;
            // Polled: a call in flight holds the source through its catalog entry, and there is
            // nothing to await on its end. Bounded by the grace period.
            while Arc::strong_count(&source) > 1 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tracing::debug!(source = source.id(), "source retired by a reload: closing");
            if let Some(life) = source.lifecycle() {
                life.close().await;
            }
        });
    }
}
