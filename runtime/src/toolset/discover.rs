//! What reaches the sources rather than the catalog: start-up discovery, lazy sources, each
//! source's status, refresh, stored results, change watches, and closing.

use std::sync::Arc;

use super::Toolset;
use crate::catalog::ToolEntry;
use crate::{SourceLifecycle, SourceStatus, ToolDescriptor, ToolError, ToolOutput, ToolSource};

/// Changes to a toolset's tools, from [`Toolset::watch_tools`]: a source's tools changed, or
/// a reload changed the policy or the sources (after a reload of the sources, the sources
/// watched are the new ones).
pub struct ToolsWatch {
    /// The toolset's reload counter.
    config: tokio::sync::watch::Receiver<u64>,
    /// The change counters of the sources whose tools can change.
    sources: Vec<tokio::sync::watch::Receiver<u64>>,
    /// The toolset, to watch its new sources after a reload (weak: a watch does not keep a
    /// toolset alive).
    toolset: std::sync::Weak<super::Inner>,
}

impl ToolsWatch {
    /// How many change counters are watched: one per source whose tools can change, and one
    /// for reloads.
    pub fn len(&self) -> usize {
        self.sources.len() + 1
    }

    /// Whether nothing is watched (never, for a toolset: it can always be reloaded).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Waits until some source's tools change or the toolset is reloaded. Returns `false`
    /// when nothing can change any more (the toolset dropped).
    pub async fn changed(&mut self) -> bool {
        loop {
            let any_source = async {
                if self.sources.is_empty() {
                    return std::future::pending().await;
                }
                let waits = self.sources.iter_mut().map(|r| Box::pin(r.changed()));
                let (result, index, _) = futures::future::select_all(waits).await;
                (result.is_ok(), index)
            };
            tokio::select! {
                reloaded = self.config.changed() => {
                    if reloaded.is_err() {
                        return false;
                    }
                    if let Some(inner) = self.toolset.upgrade() {
                        self.sources = super::fresh_changes(&inner.sources.load().watches);
                    }
                    return true;
                }
                (changed, index) = any_source => {
                    if changed {
                        return true;
                    }
                    // That source is gone (closed or dropped): watch the others.
                    self.sources.swap_remove(index);
                }
            }
        }
    }
}

/// `source`'s status: its lifecycle's (marked `lazy` when it is not discovered at start-up),
/// or ready with its tools counted.
fn status_of(source: &Arc<dyn ToolSource>) -> SourceStatus {
    match source.lifecycle() {
        Some(life) => SourceStatus {
            lazy: !life.discover_at_startup(),
            ..life.status()
        },
        None => SourceStatus::ready(source.id(), source.kind(), source.tools().len()),
    }
}

impl Toolset {
    /// A watch on the toolset's tools: [`ToolsWatch::changed`] resolves whenever any source's
    /// tools change (a remote end listed again with different tools, a lazy source's first
    /// listing) or the policy is reloaded ([`Toolset::reload_policy`]: who may see which tool
    /// can change). The gateway sends MCP `notifications/tools/list_changed` on it.
    pub fn watch_tools(&self) -> ToolsWatch {
        let mut config = self.inner.config_changes.clone();
        config.borrow_and_update();
        ToolsWatch {
            // Changes from now on: each clone marked as having seen the current value.
            sources: super::fresh_changes(&self.inner.sources.load().watches),
            config,
            toolset: Arc::downgrade(&self.inner),
        }
    }

    /// Lists the tools of every source that is contacted at start-up (remote sources not marked
    /// `lazy`), all at once with at most `concurrency` at a time (each bounded by its own
    /// discovery timeout), and returns every source's status afterwards, in source order. A
    /// failing source is reported in its status; it never keeps the others from being listed.
    pub async fn discover(&self, concurrency: usize) -> Vec<SourceStatus> {
        self.discover_with(concurrency, |_| {}).await
    }

    /// [`discover`](Self::discover), calling `done` with each source's status as soon as its
    /// listing ends (for a progress bar).
    pub async fn discover_with(
        &self,
        concurrency: usize,
        done: impl FnMut(&SourceStatus),
    ) -> Vec<SourceStatus> {
        self.discover_sources(concurrency, false, done).await
    }

    /// [`discover_with`](Self::discover_with) for every source, the `lazy` ones included
    /// (`toolgate discover`).
    pub async fn discover_all(
        &self,
        concurrency: usize,
        done: impl FnMut(&SourceStatus),
    ) -> Vec<SourceStatus> {
        self.discover_sources(concurrency, true, done).await
    }

    async fn discover_sources(
        &self,
        concurrency: usize,
        lazy_too: bool,
        mut done: impl FnMut(&SourceStatus),
    ) -> Vec<SourceStatus> {
        use futures::StreamExt;
        #[cfg(feature = "redis")]
        self.start_notices();
        // Owned sources and boxed futures: the future stays `Send` for any lifetime, so it can
        // be spawned (a borrowing closure here trips rustc's higher-ranked `Send` inference).
        let listings: Vec<crate::BoxFuture<'static, SourceStatus>> = self
            .inner
            .sources
            .load()
            .list
            .iter()
            .filter(|s| {
                s.lifecycle()
                    .is_some_and(|l| lazy_too || l.discover_at_startup())
            })
            .map(|s| {
                let s = Arc::clone(s);
                Box::pin(async move {
                    if let Some(life) = s.lifecycle() {
                        let _ = life.discover().await;
                    }
                    status_of(&s)
                }) as crate::BoxFuture<'static, SourceStatus>
            })
            .collect();
        let mut pending = futures::stream::iter(listings).buffer_unordered(concurrency.max(1));
        while let Some(status) = pending.next().await {
            done(&status);
        }
        self.statuses()
    }

    /// The tool called `name` (as [`describe`](Self::describe)), first asking the source its
    /// prefix names to discover its tools when it has not yet (a lazy remote source).
    ///
    /// # Errors
    /// `not_found` for an unknown name; the source's error when it cannot list its tools.
    pub async fn lookup(&self, name: &str) -> Result<Arc<ToolDescriptor>, ToolError> {
        let entry = match self.entry(name) {
            Some(found) => found,
            None => self.resolve_remote(name).await?,
        };
        // A tool withheld by pinning is not shown.
        match self.pin_state(&entry) {
            None => Ok(Arc::clone(entry.descriptor())),
            Some(_) => Err(ToolError::not_found(name)),
        }
    }

    /// The prefixed source whose id is `name`'s prefix (`everything.echo`, or the exported
    /// `everything__echo`).
    pub(super) fn prefixed_source(&self, name: &str) -> Option<Arc<dyn ToolSource>> {
        let internal = toolgate_model::names::internal_name(name);
        let (prefix, _) = internal.split_once('.')?;
        self.inner
            .sources
            .load()
            .list
            .iter()
            .find(|s| s.id() == prefix && s.prefixed())
            .cloned()
    }

    /// The bound of a call to `name` that waits for its source's listing, when the caller set
    /// none: the timeout the call would get ([`Pipeline::unlisted_timeout`]).
    ///
    /// [`Pipeline::unlisted_timeout`]: crate::policy::Pipeline
    pub(super) fn unlisted_timeout(&self, name: &str) -> Option<std::time::Duration> {
        let source = self.prefixed_source(name)?;
        let own = source.lifecycle().and_then(|l| l.call_timeout());
        self.inner.pipeline.load().unlisted_timeout(
            toolgate_model::names::internal_name(name).as_ref(),
            source.id(),
            own,
        )
    }

    /// The error of a call to `name` whose deadline (`left` after it started) passed while
    /// its source was still listing: the timeout, and what the source is waiting on.
    pub(super) fn listing_timeout(&self, name: &str, left: std::time::Duration) -> ToolError {
        let mut message = ToolError::timeout(name, left).message().to_string();
        if let Some(source) = self.prefixed_source(name) {
            message.push_str(&format!(
                ": source `{}` has not listed its tools yet",
                source.id()
            ));
            if let Some(error) = status_of(&source).error {
                message.push_str(&format!(" (its last listing failed: {error})"));
            }
        }
        ToolError::new(crate::ErrorKind::Timeout, message)
    }

    /// For a name not found: when its prefix is a source's id, that source is asked to
    /// [discover](SourceLifecycle::discover) its tools (a lazy source's first use; a failed
    /// source after its retry interval), then the name is looked up again. A source that cannot
    /// list its tools gives its error, not `not_found`.
    pub(super) async fn resolve_remote(&self, name: &str) -> Result<Arc<ToolEntry>, ToolError> {
        if let Some(source) = self.prefixed_source(name) {
            if let Some(life) = source.lifecycle() {
                life.discover().await?;
            }
            return self.entry(name).ok_or_else(|| ToolError::not_found(name));
        }
        // Sources mounted without prefix may offer any name: each is asked in turn (cheap
        // once listed), and the first that has it answers.
        let set = self.inner.sources.load_full();
        let unprefixed = set.list.iter().filter(|s| !s.prefixed());
        for life in unprefixed.filter_map(|s| s.lifecycle()) {
            if life.discover().await.is_ok()
                && let Some(found) = self.entry(name)
            {
                return Ok(found);
            }
        }
        Err(ToolError::not_found(name))
    }

    /// The status of source `id`, if the toolset has one of that id.
    pub fn source_status(&self, id: &str) -> Option<SourceStatus> {
        self.inner
            .sources
            .load()
            .list
            .iter()
            .find(|s| s.id() == id)
            .map(status_of)
    }

    /// Every source's status, in source order.
    pub fn statuses(&self) -> Vec<SourceStatus> {
        self.inner
            .sources
            .load()
            .list
            .iter()
            .map(status_of)
            .collect()
    }

    /// Lists source `id`'s tools again now.
    ///
    /// # Errors
    /// `not_found` when no source has that id; otherwise the source's listing error.
    pub async fn refresh(&self, id: &str) -> Result<(), ToolError> {
        let source = self
            .inner
            .sources
            .load()
            .list
            .iter()
            .find(|s| s.id() == id)
            .cloned()
            .ok_or_else(|| {
                ToolError::new(
                    crate::ErrorKind::NotFound,
                    format!("no source named `{id}`"),
                )
            })?;
        match source.lifecycle() {
            Some(life) => life.refresh().await,
            None => Ok(()),
        }
    }

    /// A result kept in full after it was cut to a size limit, by the `toolgate://results/...`
    /// URI named in the cut result; without any configured secret, as the call's result, and
    /// through the result guardrails of the tool that gave it (masked as the cut result was).
    /// Looked for in this toolset's sources first, then, with a
    /// [shared store](crate::ToolsetBuilder::shared_store), in Redis (a result cut on another
    /// replica, kept there for [`RESULT_TTL`](crate::store::RESULT_TTL)). `None` when neither
    /// holds it, the store did not answer (logged), or a guardrail refuses it (logged).
    pub async fn stored_result(&self, uri: &str) -> Option<ToolOutput> {
        self.stored_result_guarded(uri, &crate::ToolContext::default(), None)
            .await
    }

    /// [`stored_result`](Self::stored_result) read through a way in with guardrails of its own
    /// (a virtual server's `set`) as `ctx`'s caller: the tool's result guardrails, then the
    /// set's. A result whose tool is no longer in the toolset (or that names none) is withheld
    /// (`None`, logged) when any guardrail is configured: it cannot be checked.
    pub async fn stored_result_guarded(
        &self,
        uri: &str,
        ctx: &crate::ToolContext,
        set: Option<&crate::policy::guardrails::GuardrailSet>,
    ) -> Option<ToolOutput> {
        let mut out = self.stored_unguarded(uri).await?;
        let tool = out
            .meta
            .as_mut()
            .and_then(|m| m.remove(crate::remote::STORED_TOOL_META_KEY))
            .and_then(|v| v.as_str().map(str::to_owned));
        if out.meta.as_ref().is_some_and(|m| m.is_empty()) {
            out.meta = None;
        }
        let pipeline = self.inner.pipeline.load_full();
        let entry = tool.as_deref().and_then(|name| {
            self.entries()
                .into_iter()
                .find(|e| e.source_tool().descriptor.name == name || e.name() == name)
        });
        let Some(entry) = entry else {
            if pipeline.guardrails.is_empty() && set.is_none_or(|s| s.is_empty()) {
                return Some(out);
            }
            tracing::warn!(%uri, tool = ?tool, "stored result withheld: the tool that gave it is not in the toolset, so its guardrails cannot be run");
            return None;
        };
        let guards = match crate::policy::guardrails::stored_result_guards(
            &pipeline,
            entry.descriptor(),
            set,
        ) {
            Ok(guards) => guards,
            Err(error) => {
                tracing::warn!(%uri, %error, "stored result withheld");
                return None;
            }
        };
        for guard in &guards {
            if let Err(error) = guard.check_result(ctx, &mut out).await {
                tracing::warn!(%uri, %error, "stored result withheld by a guardrail");
                return None;
            }
        }
        Some(out)
    }

    /// The stored result `uri` as kept (secrets redacted, no guardrail run).
    async fn stored_unguarded(&self, uri: &str) -> Option<ToolOutput> {
        let local = self
            .inner
            .sources
            .load()
            .list
            .iter()
            .filter_map(|s| s.lifecycle())
            .find_map(|l| l.stored_result(uri));
        #[cfg(feature = "redis")]
        let local = match (local, self.shared_store()) {
            (None, Some(store)) => match store.shared_result(uri).await {
                Ok(shared) => shared,
                Err(failure) => {
                    tracing::warn!(%uri, "shared store (Redis) {failure}; a result cut on another replica cannot be read");
                    None
                }
            },
            (local, _) => local,
        };
        let mut out = local?;
        crate::redact::output(&mut out);
        Some(out)
    }

    /// Closes every source: remote sessions end, child processes are asked to exit (stdin
    /// closed, then SIGTERM, then killed), background tasks stop. Later calls to remote tools
    /// fail with `network`.
    pub async fn close(&self) {
        #[cfg(feature = "redis")]
        if let Some(relay) = self.inner.notices.get() {
            relay.0.cancel();
        }
        let set = self.inner.sources.load_full();
        let lives: Vec<&dyn SourceLifecycle> =
            set.list.iter().filter_map(|s| s.lifecycle()).collect();
        futures::future::join_all(lives.into_iter().map(|l| l.close())).await;
    }
}
