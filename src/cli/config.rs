//! The configuration a command runs on: `--config`, ./tools.yaml or the built-in one, the
//! toolset built from it, and the warnings about entries that name nothing.

use std::path::{Path, PathBuf};

use toolgate::Toolset;
use toolgate::builtin::BuiltinSettings;
use toolgate::model::config::{LoadedConfig, ToolsConfig};

use super::args::exit;
use super::{Failure, output};

/// Loads the configuration: `--config`, else ./tools.yaml, else the one built into the binary.
/// Relative paths in its settings are relative to the file's folder; the built-in one has no
/// folder (the file it was built from is not there at run time), so it shares no directory
/// with `read_file` and `list_dir` (its `files.root` is dropped).
pub(super) fn load_config(path: Option<&Path>) -> Result<(LoadedConfig, PathBuf), Failure> {
    let config_error =
        |e: toolgate::model::config::ConfigError| Failure::new(exit::CONFIG, e.to_string());
    match config_path(path) {
        Some(p) => {
            let loaded = ToolsConfig::load(&p).map_err(config_error)?;
            Ok((loaded, folder_of(&p)))
        }
        None => {
            let mut loaded = ToolsConfig::from_yaml_str(
                toolgate::builtin::toolset::TOOLS_YAML,
                Path::new("<built-in tools.yaml>"),
            )
            .map_err(config_error)?;
            // `root: .` means the built-in file's folder, which is not there: never the
            // directory the binary happens to run in (a desktop client may start it in `/`).
            if let Some(files) = loaded
                .config
                .settings
                .get_mut("files")
                .and_then(serde_json::Value::as_object_mut)
            {
                files.remove("root");
            }
            Ok((loaded, PathBuf::from(".")))
        }
    }
}

/// The tools.yaml a command reads: `--config`, else ./tools.yaml if there is one, else none
/// (the built-in one).
pub(super) fn config_path(given: Option<&Path>) -> Option<PathBuf> {
    let local = Path::new("tools.yaml");
    match given {
        Some(p) => Some(p.to_path_buf()),
        None if local.is_file() => Some(local.to_path_buf()),
        None => None,
    }
}

/// The folder of a tools.yaml, which its relative paths start from (`.` for a bare file name).
pub(super) fn folder_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The built-in tools' settings (`settings:`), paths relative to `base`; an error at the
/// setting's line.
pub(super) fn builtin_settings(
    loaded: &LoadedConfig,
    base: &Path,
) -> Result<BuiltinSettings, Failure> {
    BuiltinSettings::from_config(&loaded.config.settings, base).map_err(|e| {
        Failure::new(
            exit::CONFIG,
            loaded.error_at(&e.pointer, e.message).to_string(),
        )
    })
}

pub(super) fn toolset(config: Option<&Path>) -> Result<Toolset, Failure> {
    toolset_and_config(config).map(|(tools, _, _)| tools)
}

/// The toolset, the configuration it was built from and its built-in tools' settings.
pub(super) fn toolset_and_config(
    config: Option<&Path>,
) -> Result<(Toolset, LoadedConfig, BuiltinSettings), Failure> {
    let (loaded, base) = load_config(config)?;
    for warning in &loaded.warnings {
        output::write_err(&warning.to_string());
    }
    warn_uncompiled_tools(&loaded);
    let (tools, settings) = build(
        &loaded,
        &base,
        config_path(config).is_some(),
        Purpose::Start,
    )?;
    warn_unknown_policy_tools(&loaded, &tools);
    Ok((tools, loaded, settings))
}

/// What a toolset is built for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// A command's toolset.
    Start,
    /// The sources and policy a reload of a running gateway takes: without the semantic
    /// model and the shared store, which a reload keeps as they run.
    Reload,
}

/// The toolset `loaded` describes (relative paths from `base`; `from_file` false for the
/// built-in tools.yaml) and its built-in tools' settings. Errors at the setting's line.
pub(super) fn build(
    loaded: &LoadedConfig,
    base: &Path,
    from_file: bool,
    purpose: Purpose,
) -> Result<(Toolset, BuiltinSettings), Failure> {
    let settings = builtin_settings(loaded, base)?;
    // OpenAPI entries not compiled into this binary are read and converted at run time (the
    // binary's compiled ones come from the tools.yaml it was built from).
    let compiled = compiled_openapi_ids();
    let builder = toolgate::builtin::toolset(settings.clone())
        .policy(&loaded.config.policy)
        .tool_overrides(&loaded.config.tools.overrides)
        .config_dir(base)
        .openapi_sources(
            &loaded.config.tools,
            base,
            toolgate::openapi::LoadFilter::AllExcept(compiled),
        )
        .mcp_servers(&loaded.config.tools, base)
        .a2a_agents(&loaded.config.tools);
    let builder = match skills(loaded, base, from_file)? {
        Some(skills) => toolgate::skills::SkillsExt::skills(builder, skills),
        None => builder,
    };
    let builder = code_mode(loaded, base, builder)?;
    let builder = match semantic_settings(loaded, base) {
        Some(settings) if purpose == Purpose::Start => builder.semantic_search(settings),
        _ => builder,
    };
    let builder = match shared_store(loaded)? {
        Some(store) if purpose == Purpose::Start => builder.shared_store(store),
        _ => builder,
    };
    let config_error = |e: toolgate::BuildError| match e {
        // Located at the setting: the model folder is what to fix.
        toolgate::BuildError::Semantic(_) => Failure::new(
            exit::CONFIG,
            loaded.error_at(SEMANTIC_POINTER, e.to_string()).to_string(),
        ),
        // At the override's line.
        toolgate::BuildError::Override { ref tool, .. } => Failure::new(
            exit::CONFIG,
            loaded
                .error_at(&overrides_pointer(tool), e.to_string())
                .to_string(),
        ),
        e => Failure::new(exit::CONFIG, format!("error: {e}")),
    };
    let tools = builder.build().map_err(config_error)?;
    Ok((tools, settings))
}

/// The skills of `tools.skills`, folders relative to `base`, found and checked now; `None`
/// without any, or for the built-in tools.yaml (`from_file` false: its folders are not
/// there at run time).
pub(super) fn skills(
    loaded: &LoadedConfig,
    base: &Path,
    from_file: bool,
) -> Result<Option<toolgate::skills::Skills>, Failure> {
    if loaded.config.tools.skills.is_empty() || !from_file {
        return Ok(None);
    }
    let dirs = loaded.config.tools.skills.iter().map(|s| base.join(&s.dir));
    toolgate::skills::Skills::discover(dirs)
        .map(Some)
        .map_err(|e| Failure::new(exit::CONFIG, e.to_string()))
}

/// `builder` with code mode's tools when `gateway.code_mode.enabled` (relative mount folders
/// from `base`); an error at the setting's line for one this build cannot honour.
#[cfg(feature = "code-mode")]
fn code_mode(
    loaded: &LoadedConfig,
    base: &Path,
    builder: toolgate::ToolsetBuilder,
) -> Result<toolgate::ToolsetBuilder, Failure> {
    let config = &loaded.config.gateway.code_mode;
    if !config.enabled {
        return Ok(builder);
    }
    // Each snippet in a worker process: this binary again (src/main.rs serves it).
    let worker = toolgate::code_mode::WorkerCommand::current_exe();
    let settings =
        toolgate::code_mode::engine_from_config(config, base, Some(worker)).map_err(|e| {
            Failure::new(
                exit::CONFIG,
                loaded.error_at(&e.pointer, e.message).to_string(),
            )
        })?;
    Ok(toolgate::code_mode::CodeModeExt::code_mode(
        builder, settings,
    ))
}

/// Without the `code-mode` feature, `gateway.code_mode.enabled` is an error at its line.
#[cfg(not(feature = "code-mode"))]
fn code_mode(
    loaded: &LoadedConfig,
    _base: &Path,
    builder: toolgate::ToolsetBuilder,
) -> Result<toolgate::ToolsetBuilder, Failure> {
    if !loaded.config.gateway.code_mode.enabled {
        return Ok(builder);
    }
    let message =
        "`gateway.code_mode.enabled`: this toolgate was built without the code-mode feature";
    Err(Failure::new(
        exit::CONFIG,
        loaded
            .error_at("/gateway/code_mode/enabled", message)
            .to_string(),
    ))
}

/// Where the override of `tool` is in tools.yaml.
pub(super) fn overrides_pointer(tool: &str) -> String {
    format!(
        "/tools/overrides/{}",
        toolgate::model::config::location::escape(tool)
    )
}

/// Where `store.redis.url` is in tools.yaml (for messages).
const STORE_URL_POINTER: &str = "/store/redis/url";

/// The store rate limits and budgets are shared through (`store.redis`), if set. Nothing is
/// sent to Redis yet: a server that is down at start-up is no error (the fail modes cover the
/// calls until it answers); a URL that is no Redis URL, or names an unset variable, is.
pub(super) fn shared_store(
    loaded: &LoadedConfig,
) -> Result<Option<toolgate_runtime::store::SharedStore>, Failure> {
    let Some(redis) = &loaded.config.store.redis else {
        return Ok(None);
    };
    toolgate_runtime::store::SharedStore::connect(redis)
        .map(Some)
        .map_err(|e| {
            Failure::new(
                exit::CONFIG,
                loaded
                    .error_at(STORE_URL_POINTER, e.to_string())
                    .to_string(),
            )
        })
}

/// Where `gateway.tool_search.semantic.model` is in tools.yaml (for messages).
pub(super) const SEMANTIC_POINTER: &str = "/gateway/tool_search/semantic/model";

/// The settings of semantic tool search from `gateway.tool_search.semantic`, if set: the model
/// folder relative to `base` (the tools.yaml's folder).
pub(super) fn semantic_settings(
    loaded: &LoadedConfig,
    base: &Path,
) -> Option<toolgate::SemanticSearch> {
    let semantic = loaded.config.gateway.tool_search.semantic.as_ref()?;
    Some(toolgate::SemanticSearch::new(base.join(&semantic.model)))
}

/// The ids of the OpenAPI sources compiled into this binary: the `load: build` entries of the
/// tools.yaml it was built from.
pub(super) fn compiled_openapi_ids() -> std::collections::BTreeSet<String> {
    ToolsConfig::from_yaml_str(
        toolgate::builtin::toolset::TOOLS_YAML,
        Path::new("<built-in tools.yaml>"),
    )
    .map(|loaded| {
        loaded
            .config
            .tools
            .openapi
            .iter()
            .filter(|e| e.load == toolgate::model::config::LoadMode::Build)
            .map(|e| e.id.clone())
            .collect()
    })
    .unwrap_or_default()
}

/// A `policy.tools` entry naming no tool of the toolset would silently apply to nothing (a typo,
/// or the exported `a__b` form of `a.b`): said on stderr, with the line.
pub(super) fn warn_unknown_policy_tools(loaded: &LoadedConfig, tools: &Toolset) {
    let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
    // A remote source's tools are known only after discovery: `{id}.` names are not checked.
    let remote = |name: &str| {
        let internal = toolgate::model::names::internal_name(name);
        internal.split_once('.').is_some_and(|(prefix, _)| {
            tools
                .sources()
                .iter()
                .any(|s| s.id() == prefix && !matches!(s.kind(), "local" | "json_schema"))
        })
    };
    // A renamed tool's old name has a warning of its own (loading the config gives it).
    let renamed = |name: &str| {
        loaded
            .config
            .tools
            .overrides
            .get(name)
            .is_some_and(|o| o.name.as_deref().is_some_and(|n| n != name))
    };
    for name in loaded.config.policy.tools.keys() {
        if names.contains(name) || remote(name) || renamed(name) {
            continue;
        }
        let pointer = format!(
            "/policy/tools/{}",
            toolgate::model::config::location::escape(name)
        );
        let mut warning = loaded.warning_at(
            &pointer,
            format!("policy for `{name}`, which is not a tool of this toolset"),
        );
        let internal = toolgate::model::names::internal_name(name);
        if names.iter().any(|n| *n == internal) {
            warning = warning.with_hint(format!(
                "policies name tools as toolgate does: `{internal}`"
            ));
        } else if let Some(close) =
            toolgate_codegen::closest(name, names.iter().map(String::as_str))
        {
            warning = warning.with_hint(format!("did you mean `{close}`?"));
        }
        output::write_err(&warning.to_string());
    }
}

/// The binary's tools are compiled from the tools.yaml it was built with; a `--config` that
/// lists other local tools gets a warning instead of silent disagreement.
pub(super) fn warn_uncompiled_tools(loaded: &LoadedConfig) {
    let compiled = toolgate::builtin::toolset::Tool::ALL;
    for (i, entry) in loaded.config.tools.local.iter().enumerate() {
        let Some(f) = entry.as_function() else {
            continue;
        };
        let name = f
            .name
            .clone()
            .unwrap_or_else(|| f.path.rsplit("::").next().unwrap_or_default().to_string());
        if !compiled.iter().any(|t| t.name() == name) {
            output::write_err(
                &loaded
                    .warning_at(
                        &format!("/tools/local/{i}/fn"),
                        format!(
                            "`{}` is not compiled into this binary and is ignored; the binary's local tools come from the tools.yaml it was built with (see `toolgate list`)",
                            f.path
                        ),
                    )
                    .to_string(),
            );
        }
    }
}

/// `gateway.servers[].guardrails` of a run-time config: every name must be a guardrail `has`
/// knows (this binary registers none in code, so a name must be in `policy.guardrails`); the
/// first one that is not is an error at its line, as `serve` would refuse to start.
pub(super) fn server_guardrails(
    loaded: &LoadedConfig,
    has: impl Fn(&str) -> bool,
) -> Result<(), Failure> {
    for (i, server) in loaded.config.gateway.servers.iter().enumerate() {
        if let Some((j, name)) = server.guardrails.iter().enumerate().find(|(_, n)| !has(n)) {
            let defined: Vec<&str> = loaded
                .config
                .policy
                .guardrails
                .keys()
                .map(String::as_str)
                .collect();
            let hint = if defined.is_empty() {
                "define it under policy.guardrails".to_string()
            } else {
                format!("guardrails defined: `{}`", defined.join("`, `"))
            };
            let error = loaded
                .error_at(
                    &format!("/gateway/servers/{i}/guardrails/{j}"),
                    format!(
                        "virtual server `{}` names guardrail `{name}`, which is not in policy.guardrails",
                        server.id
                    ),
                )
                .with_hint(hint);
            return Err(Failure::new(exit::CONFIG, error.to_string()));
        }
    }
    Ok(())
}

/// `toolgate check` of a run-time config: its `tools.overrides` of the tools this binary offers
/// itself (the built-in tools and its compiled OpenAPI sources), applied as `serve` applies
/// them, so that an override of a tool the binary lacks, of an argument its schema lacks, or
/// one giving another tool's name fails here, at the override's line, and not at start-up.
/// Overrides of the config's own remote sources (MCP, A2A, `load: runtime` OpenAPI) are
/// checked when those list their tools.
pub(super) fn builtin_overrides(
    loaded: &LoadedConfig,
    settings: BuiltinSettings,
) -> Result<(), Failure> {
    let tools = &loaded.config.tools;
    let compiled = compiled_openapi_ids();
    let remote: Vec<&str> = tools
        .mcp
        .iter()
        .map(|s| s.id.as_str())
        .chain(tools.a2a.iter().map(|a| a.id.as_str()))
        .chain(
            tools
                .openapi
                .iter()
                .map(|o| o.id.as_str())
                .filter(|id| !compiled.contains(*id)),
        )
        .collect();
    let of_remote = |name: &str| {
        remote.iter().any(|id| {
            name.strip_prefix(id)
                .is_some_and(|rest| rest.starts_with('.'))
        })
    };
    let own: std::collections::BTreeMap<_, _> = tools
        .overrides
        .iter()
        .filter(|(name, _)| !of_remote(name))
        .map(|(name, o)| (name.clone(), o.clone()))
        .collect();
    if own.is_empty() {
        return Ok(());
    }
    let built = toolgate::builtin::toolset(settings)
        .tool_overrides(&own)
        .build();
    let Err(e) = built else {
        return Ok(());
    };
    let message = e.to_string();
    let at = |pointer: String| {
        Failure::new(
            exit::CONFIG,
            loaded.error_at(&pointer, message.clone()).to_string(),
        )
    };
    Err(match e {
        toolgate::BuildError::Override { tool, .. } => at(overrides_pointer(&tool)),
        // At the override that gives the clashing name.
        toolgate::BuildError::DuplicateTool { name, .. } => {
            match own
                .iter()
                .find(|(_, o)| o.name.as_deref() == Some(name.as_str()))
            {
                Some((tool, _)) => at(format!("{}/name", overrides_pointer(tool))),
                None => Failure::new(exit::CONFIG, format!("error: {message}")),
            }
        }
        _ => Failure::new(exit::CONFIG, format!("error: {message}")),
    })
}
