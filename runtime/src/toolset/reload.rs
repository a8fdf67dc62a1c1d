//! A new `policy:` section for a running toolset ([`Toolset::reload_policy`]): the hot reload
//! `toolgate serve` does on SIGHUP.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate_model::config::PolicyConfig;

use super::Toolset;
use crate::BuildError;
use crate::catalog::Catalog;
use crate::policy::validate::Settings as Validation;

/// What a reload needs besides the new section: what the builder was given.
pub(super) struct Inputs {
    /// Where relative paths of the section start (`rego_file`, `cel_file`).
    pub config_dir: Option<PathBuf>,
    /// The builder's validation settings, folded into every policy as at `build()`.
    pub validation: Option<Validation>,
    /// Bumped after each reload (of the policy or of the sources): [`Toolset::watch_tools`]
    /// and the catalog hear it.
    pub config_changes: tokio::sync::watch::Sender<u64>,
}

/// What [`Toolset::reload_policy`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyReload {
    /// The toolset's [configuration generation](Toolset::config_generation) after this
    /// reload: how many reloads (of the policy or of the sources) there were, this one included.
    pub generation: u64,
    /// Parts of the new section that a reload does not apply, each saying why (today:
    /// `pinning`, whose approvals file is opened once at start-up).
    pub not_applied: Vec<String>,
}

impl Toolset {
    /// Replaces the toolset's `policy:` section while it runs: access rules, Rego and CEL
    /// rules, guardrails, argument rules, limits, budgets, timeouts, retries, breakers,
    /// caching and validation settings. Everything is compiled first; on any error the running
    /// policy stays as it was and the error says what is wrong (`BuildError::Policy` with the
    /// rule's position, `BuildError::Source` naming `policy.guardrails`).
    ///
    /// What the layers have counted carries over: rate-limit buckets, budgets spent, breaker
    /// states and cached results (a changed limit applies to the buckets from now on). Calls
    /// already running finish under the policy they started with; the next call of every tool
    /// uses the new one. Every [`watch_tools`](Self::watch_tools) hears the change (a caller may
    /// now see more or fewer tools), so the gateway tells its MCP clients `tools/list_changed`.
    ///
    /// Guardrails registered in code ([`ToolsetBuilder::guardrail`](crate::ToolsetBuilder::guardrail))
    /// are kept. `policy.pinning` is read at build time only: a changed one is reported in
    /// [`PolicyReload::not_applied`].
    ///
    /// # Errors
    /// [`BuildError::Policy`] for a Rego / CEL rule that does not compile,
    /// [`BuildError::Source`] for a guardrail that does not compile or an unknown guardrail name.
    pub fn reload_policy(&self, policy: PolicyConfig) -> Result<PolicyReload, BuildError> {
        let (pipeline, not_applied) = self.compile_policy(policy)?;
        // One rebuild at a time: a catalog rebuilt meanwhile from stale entries would keep the
        // old policies they settled.
        let _one_at_a_time = self.inner.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        self.inner.pipeline.store(Arc::new(pipeline));
        let generation = self.reloaded();
        tracing::info!(generation, "policy reloaded");
        metrics::counter!("toolgate_policy_reloads_total").increment(1);
        Ok(PolicyReload {
            generation,
            not_applied,
        })
    }

    /// [`reload_policy`](Self::reload_policy) and [`reload_sources`](Self::reload_sources) as
    /// one reload (one [generation](Self::config_generation), one `tools/list_changed`): the
    /// policy is compiled first, and on an error nothing changes.
    ///
    /// # Errors
    /// As [`reload_policy`](Self::reload_policy).
    pub fn reload(
        &self,
        policy: PolicyConfig,
        next: &Toolset,
        unchanged: impl Fn(&str) -> bool,
    ) -> Result<(PolicyReload, crate::SourcesReload), BuildError> {
        let (pipeline, not_applied) = self.compile_policy(policy)?;
        let _one_at_a_time = self.inner.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        self.inner.pipeline.store(Arc::new(pipeline));
        let (mut sources, retired) = self.swap_sources(next, unchanged);
        let generation = self.reloaded();
        sources.generation = generation;
        metrics::counter!("toolgate_policy_reloads_total").increment(1);
        super::sources::after_swap(&sources, retired);
        Ok((
            PolicyReload {
                generation,
                not_applied,
            },
            sources,
        ))
    }

    /// The pipeline of `policy` (sharing this toolset's counted state) and the parts of it a
    /// reload does not apply.
    fn compile_policy(
        &self,
        policy: PolicyConfig,
    ) -> Result<(crate::policy::Pipeline, Vec<String>), BuildError> {
        let inputs = &self.inner.reload;
        let current = self.inner.pipeline.load_full();
        let mut not_applied = Vec::new();
        if policy.pinning != current.config.pinning {
            not_applied.push(
                "policy.pinning: the approvals file is opened at start-up; restart to change it"
                    .to_string(),
            );
        }
        let mut policy = policy;
        if let Some(validation) = &inputs.validation {
            validation.fold_into(&mut policy);
        }
        let guardrails =
            current
                .guardrails
                .rebuild(&policy)
                .map_err(|message| BuildError::Source {
                    source_id: "policy.guardrails".into(),
                    message,
                })?;
        let base = inputs
            .config_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        let code =
            crate::policy::code::CodeRules::compile(&policy, &base).map_err(BuildError::Policy)?;
        let mut next =
            crate::policy::Pipeline::new(current.validate, current.default_timeout, policy);
        next.guardrails = guardrails;
        next.code = code;
        next.shared = Arc::clone(&current.shared);
        Ok((next, not_applied))
    }

    /// After a swap (the rebuild lock held): the reload counter bumped and a catalog of fresh
    /// entries (no entry's settled policy survives), the generation going on. Returns the
    /// new configuration generation.
    pub(super) fn reloaded(&self) -> u64 {
        let mut generation = 0;
        self.inner.reload.config_changes.send_modify(|n| {
            *n += 1;
            generation = *n;
        });
        let previous = self.inner.catalog.load_full();
        let set = self.inner.sources.load();
        let catalog =
            Catalog::rebuild_fresh(&set.list, &previous, self.changes(&set), &set.overrides);
        self.inner.catalog.store(Arc::new(catalog));
        generation
    }
}
