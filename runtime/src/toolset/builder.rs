//! [`ToolsetBuilder`]: sources, state, defaults and argument policies, checked once at `build`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolgate_model::config::PolicyConfig;

use super::{Inner, Toolset};
use crate::policy::validate::{Overrides, Settings as Validation};
use crate::{BuildError, ExtraArguments, StateMap, ToolSource, ValidationMode};

/// A source made when the toolset is built, from the application state given so far.
pub(crate) type StaticFactory =
    Box<dyn FnOnce(&StateMap) -> Result<Arc<dyn ToolSource>, BuildError> + Send>;

/// Builds a [`Toolset`]: the compiled static table (from generated code), extra sources,
/// application state and defaults. [`build`](Self::build) checks, once, that every `State<T>` a
/// compiled tool takes was given, and that no two sources offer the same tool name.
pub struct ToolsetBuilder {
    static_source: Option<StaticFactory>,
    /// Sources built from the application state at `build()`, after `sources` of the same call.
    factories: Vec<StaticFactory>,
    overlays: Vec<Arc<dyn ToolSource>>,
    sources: Vec<Arc<dyn ToolSource>>,
    states: StateMap,
    default_timeout: Option<Duration>,
    /// `None`: validation off.
    validation: Option<Validation>,
    /// The `policy:` section the pipeline's layers read.
    policy: PolicyConfig,
    /// `tools.overrides`.
    overrides: crate::catalog::overrides::Overrides,
    /// The directory relative paths of the `policy:` section (the approvals file) start from.
    config_dir: Option<std::path::PathBuf>,
    /// Semantic ranking of searches: the model is loaded at `build()`.
    semantic: Option<crate::search::semantic::SemanticSearch>,
    /// Guardrails registered in code.
    guardrails: Vec<crate::policy::guardrails::CustomGuardrail>,
    /// MCP servers, built at `build()` (each a source and its handle for the passthrough).
    #[cfg(feature = "mcp")]
    mcp: Vec<crate::mcp::McpFactory>,
    /// Where rate limits and budgets are shared with other replicas (`None`: in memory).
    #[cfg(feature = "redis")]
    store: Option<crate::store::SharedStore>,
}

impl Default for ToolsetBuilder {
    fn default() -> Self {
        Self {
            static_source: None,
            factories: Vec::new(),
            overlays: Vec::new(),
            sources: Vec::new(),
            states: StateMap::default(),
            default_timeout: None,
            validation: Some(Validation::default()),
            policy: PolicyConfig::default(),
            overrides: Default::default(),
            config_dir: None,
            semantic: None,
            guardrails: Vec::new(),
            #[cfg(feature = "mcp")]
            mcp: Vec::new(),
            #[cfg(feature = "redis")]
            store: None,
        }
    }
}

impl ToolsetBuilder {
    /// Sets the compiled static table's factory (generated code calls this).
    pub fn static_source(
        mut self,
        factory: impl FnOnce(&StateMap) -> Result<Arc<dyn ToolSource>, BuildError> + Send + 'static,
    ) -> Self {
        self.static_source = Some(Box::new(factory));
        self
    }

    /// Adds a source after the static table (and after sources added earlier).
    pub fn source(mut self, source: impl ToolSource) -> Self {
        self.sources.push(Arc::new(source));
        self
    }

    /// Adds a source *in front of* every other: its tools shadow same-named tools of the static
    /// table and of other sources (no duplicate-name error). For tests — stub the real `fetch`
    /// with a [`StubSource`](crate::testing::StubSource) — and for wrappers that replace a tool.
    pub fn overlay(mut self, source: impl ToolSource) -> Self {
        self.overlays.push(Arc::new(source));
        self
    }

    /// Adds a source built when the toolset is built (with the application state given so far):
    /// generated code adds `json_schema` sources this way, so that a failure is a
    /// [`BuildError`], not a panic. Built in the order added, after the static table.
    pub fn source_with(
        mut self,
        factory: impl FnOnce(&StateMap) -> Result<Arc<dyn ToolSource>, BuildError> + Send + 'static,
    ) -> Self {
        self.factories.push(Box::new(factory));
        self
    }

    /// Adds an MCP server made when the toolset is built: its source joins the others (after
    /// the sources added so far) and its handle is listed by
    /// [`Toolset::mcp_servers`](crate::Toolset::mcp_servers).
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_server_with(mut self, factory: crate::mcp::McpFactory) -> Self {
        self.mcp.push(factory);
        self
    }

    /// Adds a shared source.
    pub fn source_arc(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Gives tools taking `State<T>` this value.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(Arc::new(value));
        self
    }

    /// Gives tools taking `State<T>` this shared value.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.states.insert(value);
        self
    }

    /// The timeout for tools that declare none (`None`: no timeout for local tools).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Whether every call's arguments are validated against the tool's input schema (JSON
    /// Schema 2020-12, a validator compiled once per tool) before the tool runs; a mismatch is
    /// `invalid_arguments` listing every violation with its JSON pointer. On by default; turning
    /// it off forwards arguments as sent (a compiled tool still refuses what serde cannot decode)
    /// and drops the per-tool settings below.
    pub fn validate_arguments(mut self, validate: bool) -> Self {
        match (validate, self.validation.is_some()) {
            (true, false) => self.validation = Some(Validation::default()),
            (false, true) => self.validation = None,
            _ => {}
        }
        self
    }

    fn validation(&mut self) -> &mut Validation {
        self.validation.get_or_insert_with(Validation::default)
    }

    /// How arguments are checked: [`ValidationMode::Strict`] (the default) or
    /// [`ValidationMode::Lenient`], which first coerces unambiguous mistakes (numbers and
    /// booleans sent as strings, ...) on a copy and forwards the copy. Turns validation on.
    pub fn validation_mode(mut self, mode: ValidationMode) -> Self {
        self.validation().defaults.mode = Some(mode);
        self
    }

    /// The [validation mode](Self::validation_mode) of tool `tool` only (its name inside the
    /// toolset), overriding its source's and the toolset's. Turns validation on.
    pub fn validation_mode_for(mut self, tool: impl Into<String>, mode: ValidationMode) -> Self {
        self.validation()
            .per_tool
            .entry(tool.into())
            .or_default()
            .mode = Some(mode);
        self
    }

    /// The [validation mode](Self::validation_mode) of every tool of source `source` (its id),
    /// overriding the toolset's. Turns validation on.
    pub fn validation_mode_for_source(
        mut self,
        source: impl Into<String>,
        mode: ValidationMode,
    ) -> Self {
        self.validation()
            .per_source
            .entry(source.into())
            .or_default()
            .mode = Some(mode);
        self
    }

    /// What happens to argument keys a tool's schema refuses: [`ExtraArguments::Reject`] (the
    /// default: `invalid_arguments` naming them and the allowed keys) or
    /// [`ExtraArguments::Strip`] (removed, logged as a warning, listed in the result's
    /// `_meta`). A tool's own `#[tool(extra = "strip")]` wins over this. Turns validation on.
    pub fn extra_arguments(mut self, extra: ExtraArguments) -> Self {
        self.validation().defaults.extra = Some(extra);
        self
    }

    /// [`extra_arguments`](Self::extra_arguments) for tool `tool` only, overriding every other
    /// level. Turns validation on.
    pub fn extra_arguments_for(mut self, tool: impl Into<String>, extra: ExtraArguments) -> Self {
        self.validation()
            .per_tool
            .entry(tool.into())
            .or_default()
            .extra = Some(extra);
        self
    }

    /// [`extra_arguments`](Self::extra_arguments) for every tool of source `source`. Turns
    /// validation on.
    pub fn extra_arguments_for_source(
        mut self,
        source: impl Into<String>,
        extra: ExtraArguments,
    ) -> Self {
        self.validation()
            .per_source
            .entry(source.into())
            .or_default()
            .extra = Some(extra);
        self
    }

    /// Applies what the runtime enforces today of a tools.yaml `policy:` section: the default
    /// `timeout_ms`, and `validation` / `extra_arguments` at each level (`defaults`,
    /// `sources.<id>`, `tools.<name>`). Leaves settings the section does not mention as they are.
    pub fn policy(mut self, policy: &PolicyConfig) -> Self {
        self.policy = policy.clone();
        if let Some(t) = policy.defaults.timeout() {
            self.default_timeout = Some(t);
        }
        let apply = |o: &mut Overrides, p: &toolgate_model::config::ToolPolicy| {
            o.mode = p.validation.or(o.mode);
            o.extra = p.extra_arguments.or(o.extra);
        };
        let any = |p: &toolgate_model::config::ToolPolicy| {
            p.validation.is_some() || p.extra_arguments.is_some()
        };
        if any(&policy.defaults) {
            apply(&mut self.validation().defaults, &policy.defaults);
        }
        for (name, p) in policy.tools.iter().filter(|(_, p)| any(p)) {
            apply(
                self.validation().per_tool.entry(name.clone()).or_default(),
                p,
            );
        }
        for (id, p) in policy.sources.iter().filter(|(_, p)| any(p)) {
            apply(
                self.validation().per_source.entry(id.clone()).or_default(),
                p,
            );
        }
        self
    }

    /// Presents tools as `overrides` (tools.yaml `tools.overrides`, by each tool's name inside
    /// toolgate) says: new name, title, description, annotations and argument descriptions;
    /// fixed arguments hidden from the schema and filled in, defaults filled in (see
    /// [`ToolOverride`](toolgate_model::config::ToolOverride)). Replaces overrides set before.
    /// [`build`](Self::build) checks those of tools known then (compiled, OpenAPI); those of a
    /// remote source's tools apply when it lists them (one that does not fit is logged and the
    /// tool not offered).
    pub fn tool_overrides(
        mut self,
        overrides: &std::collections::BTreeMap<String, toolgate_model::config::ToolOverride>,
    ) -> Self {
        self.overrides = Arc::new(overrides.clone());
        self
    }

    /// [`tool_overrides`](Self::tool_overrides) from tools.yaml text (generated code embeds
    /// the crate's tools.yaml, checked at build time).
    pub fn tool_overrides_from_yaml(self, yaml: &str) -> Self {
        match toolgate_model::config::ToolsConfig::from_yaml_str(
            yaml,
            std::path::Path::new("tools.yaml"),
        ) {
            Ok(loaded) => self.tool_overrides(&loaded.config.tools.overrides),
            Err(e) => {
                let message = e.to_string();
                self.source_with(move |_| {
                    Err(BuildError::Source {
                        source_id: "tools.overrides".to_string(),
                        message,
                    })
                })
            }
        }
    }

    /// The directory of the tools.yaml the [`policy`](Self::policy) comes from: the
    /// `policy.pinning.file` is relative to it (default: the current directory).
    pub fn config_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config_dir = Some(dir.into());
        self
    }

    /// Semantic ranking of every [search](Toolset::search) (the `semantic` cargo feature): the
    /// sentence-embedding model `settings` names ranks the tools too, fused with BM25 by
    /// reciprocal rank fusion (see [`crate::search::semantic`]). The model is loaded by
    /// [`build`](Self::build); the tools are embedded on the first search of each catalog
    /// snapshot that has tools without a vector.
    pub fn semantic_search(mut self, settings: crate::search::semantic::SemanticSearch) -> Self {
        self.semantic = Some(settings);
        self
    }

    /// Adds a guardrail of your own (see [`Guardrail`](crate::policy::guardrails::Guardrail)):
    /// it checks the arguments and results of the tools its settings select, and of those
    /// whose `guardrails:` list (tools.yaml's `policy:`, or [`policy`](Self::policy)) names it.
    /// [`build`](Self::build) fails when its name is also a guardrail of `policy.guardrails`.
    ///
    /// ```
    /// use toolgate_runtime::policy::guardrails::{CustomGuardrail, Guardrail};
    /// struct Audit;
    /// impl Guardrail for Audit {}
    /// let builder = toolgate_runtime::Toolset::builder()
    ///     .guardrail(CustomGuardrail::new("audit", Audit).sources(["github"]));
    /// ```
    pub fn guardrail(mut self, guardrail: crate::policy::guardrails::CustomGuardrail) -> Self {
        self.guardrails.push(guardrail);
        self
    }

    /// Keeps the rate-limit buckets and budgets of the [`policy`](Self::policy) in `store`
    /// (tools.yaml `store.redis`) instead of this process' memory, so that every toolset built
    /// with the same store and key prefix (the replicas of one gateway) shares them: all of a
    /// call's buckets are checked and taken at once, all or none, and so are its budgets. While
    /// the store cannot answer, each feature's fail mode applies (see [`crate::store`]).
    ///
    /// From the first [`Toolset::discover`] on, the replicas also tell each other through it
    /// when an MCP server behind them said its tools changed, so that each lists that source
    /// again and its clients hear `tools/list_changed` (see [`crate::store::Notice`]). The
    /// approvals of `policy.pinning` are kept there too (see [`crate::policy::pinning`]).
    #[cfg(feature = "redis")]
    pub fn shared_store(mut self, store: crate::store::SharedStore) -> Self {
        self.store = Some(store);
        self
    }

    /// Builds the toolset.
    ///
    /// # Errors
    /// [`BuildError::MissingState`] when a compiled tool takes a `State<T>` that was not given;
    /// [`BuildError::DuplicateSource`] / [`BuildError::DuplicateTool`] when sources clash;
    /// [`BuildError::Source`] (source `policy.pinning`) when the approvals file cannot be read;
    /// [`BuildError::Semantic`] when [`semantic_search`](Self::semantic_search) was asked for in
    /// a build without the `semantic` feature, or its model does not load;
    /// [`BuildError::Source`] (source `policy.guardrails`) when a guardrail does not compile
    /// (a pattern, a webhook URL or header), or a `guardrails:` list names an unknown one;
    /// [`BuildError::Policy`] when a `rego` / `cel` rule of `policy.rules` does not compile
    /// (files relative to [`config_dir`](Self::config_dir)).
    pub fn build(self) -> Result<Toolset, BuildError> {
        let guardrails = crate::policy::guardrails::Registry::build(&self.policy, self.guardrails)
            .map_err(|message| BuildError::Source {
                source_id: "policy.guardrails".into(),
                message,
            })?;
        let semantic = match &self.semantic {
            Some(settings) => Some(Arc::new(
                crate::search::semantic::load(settings).map_err(BuildError::Semantic)?,
            )),
            None => None,
        };
        let pins = match &self.policy.pinning {
            Some(p) => {
                let file = match &self.config_dir {
                    Some(dir) => dir.join(&p.file),
                    None => std::path::PathBuf::from(&p.file),
                };
                Some(
                    crate::policy::pinning::Pins::load(file, p.approve_new).map_err(|message| {
                        BuildError::Source {
                            source_id: "policy.pinning".into(),
                            message,
                        }
                    })?,
                )
            }
            None => None,
        };
        #[cfg(feature = "redis")]
        let pins = match (pins, &self.store) {
            (Some(pins), Some(store)) => Some(pins.with_store(store.clone())),
            (pins, _) => pins,
        };
        let mut sources = self.overlays;
        let overlays = sources.len();
        if let Some(factory) = self.static_source {
            sources.push(factory(&self.states)?);
        }
        for factory in self.factories {
            sources.push(factory(&self.states)?);
        }
        sources.extend(self.sources);
        #[cfg(feature = "mcp")]
        let mut mcp_servers = Vec::new();
        #[cfg(feature = "mcp")]
        for factory in self.mcp {
            let (source, handle) = factory()?;
            sources.push(source);
            mcp_servers.push(handle);
        }
        let mut ids = HashMap::new();
        let mut names: HashMap<String, String> = HashMap::new();
        let mut listed = std::collections::HashSet::new();
        for (i, s) in sources.iter().enumerate() {
            if ids.insert(s.id().to_string(), ()).is_some() {
                return Err(BuildError::DuplicateSource(s.id().to_string()));
            }
            // A source id is shown in tool names and messages: never masked, even when a
            // configured secret equals it (toolgate_model::secrets).
            crate::redact::remember_public(s.id());
            if i < overlays {
                continue;
            }
            for tool in s.tools() {
                let d = &tool.descriptor;
                if let Some(o) = self.overrides.get(&d.name) {
                    crate::catalog::overrides::present(d, o).map_err(|message| {
                        BuildError::Override {
                            tool: d.name.clone(),
                            message,
                        }
                    })?;
                }
                let name = crate::catalog::overrides::presented_name(&self.overrides, &d.name);
                // Unique as named inside toolgate and as exported (`a.b` and `a__b` would be
                // one name to a model).
                let exported = toolgate_model::names::exported_name(name).into_owned();
                let first = names.get(name).or_else(|| names.get(&exported)).cloned();
                if let Some(first) = first {
                    return Err(BuildError::DuplicateTool {
                        name: name.to_string(),
                        first,
                        second: s.id().to_string(),
                    });
                }
                names.insert(name.to_string(), s.id().to_string());
                names.insert(exported, s.id().to_string());
                listed.insert(d.name.clone());
            }
        }
        // An override must name a tool: one listed now, or one of a source that lists its tools
        // later (an MCP server, an A2A agent: checked when it lists them).
        for tool in self.overrides.keys() {
            let later = sources.iter().any(|s| {
                s.lifecycle().is_some()
                    && tool
                        .strip_prefix(s.id())
                        .is_some_and(|rest| rest.starts_with('.'))
            });
            if !listed.contains(tool) && !later {
                return Err(BuildError::Override {
                    tool: tool.clone(),
                    message: format!("tools.overrides names `{tool}`, which no source offers"),
                });
            }
        }
        let mut policy = self.policy;
        if let Some(validation) = &self.validation {
            validation.fold_into(&mut policy);
        }
        let set = super::sources::SourceSet::new(
            sources,
            self.overrides,
            #[cfg(feature = "mcp")]
            mcp_servers,
        );
        let (config_changes, config_watch) = tokio::sync::watch::channel(0u64);
        let catalog = {
            let mut changes = super::fresh_changes(&set.watches);
            changes.push(config_watch.clone());
            crate::catalog::Catalog::build(&set.list, None, changes, &set.overrides)
        };
        let base = self
            .config_dir
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("."));
        let code =
            crate::policy::code::CodeRules::compile(&policy, &base).map_err(BuildError::Policy)?;
        let mut pipeline =
            crate::policy::Pipeline::new(self.validation.is_some(), self.default_timeout, policy);
        pipeline.guardrails = guardrails;
        pipeline.code = code;
        #[cfg(feature = "redis")]
        if let Some(store) = &self.store {
            let sink = store.result_sink();
            for lifecycle in set.list.iter().filter_map(|s| s.lifecycle()) {
                lifecycle.keep_results_in(sink.clone());
            }
        }
        #[cfg(feature = "redis")]
        {
            Arc::get_mut(&mut pipeline.shared)
                .expect("a new pipeline's state is not shared yet")
                .store = self.store;
        }
        Ok(Toolset {
            inner: Arc::new(Inner {
                sources: arc_swap::ArcSwap::from_pointee(set),
                config_changes: config_watch,
                catalog: arc_swap::ArcSwap::from_pointee(catalog),
                rebuild: std::sync::Mutex::new(()),
                states: self.states,
                default_timeout: self.default_timeout,
                blocking_runtime: OnceLock::new(),
                #[cfg(feature = "redis")]
                shared: Arc::clone(&pipeline.shared),
                reload: super::reload::Inputs {
                    config_dir: self.config_dir,
                    validation: self.validation,
                    config_changes,
                },
                pipeline: arc_swap::ArcSwap::from_pointee(pipeline),
                pins,
                semantic,
                #[cfg(feature = "redis")]
                notices: OnceLock::new(),
            }),
        })
    }
}
