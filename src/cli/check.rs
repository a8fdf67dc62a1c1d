//! `toolgate check [FILE]`: a tools.yaml checked as `cargo build` (a crate's) or as
//! `serve --config` (a run-time config of this binary) would load it.

use std::path::{Path, PathBuf};

use super::args::exit;
use super::{CmdResult, Failure, config, openapi, output};

/// `toolgate check [FILE]`. A tools.yaml next to a `Cargo.toml` is a crate's: its local tools
/// are resolved in the crate's sources, as `cargo build` would. Anywhere else it is a run-time
/// config of this binary (`serve --config`): its local tools must be compiled in (a warning
/// otherwise, as `serve` gives), and its settings and store are checked as `serve` loads them.
pub(super) fn check(file: Option<PathBuf>) -> CmdResult {
    let path = file.unwrap_or_else(|| PathBuf::from("tools.yaml"));
    let dir = config::folder_of(&path);
    let runtime = !dir.join("Cargo.toml").is_file();
    let builder = toolgate_codegen::Builder::at(&path);
    let builder = if runtime {
        builder.runtime_config()
    } else {
        builder
    };
    let report = builder
        .check()
        .map_err(|e| Failure::new(exit::CONFIG, e.to_string()))?;
    // Before the report: an error here must not follow an "ok" line.
    if runtime {
        check_runtime(&report.config, &dir)?;
    }
    output::check_report(&report);
    check_openapi(&report);
    check_semantic(&report)?;
    Ok(exit::OK)
}

/// `toolgate check` of a run-time config: what `serve --config` checks when it loads it.
fn check_runtime(
    loaded: &toolgate::model::config::LoadedConfig,
    dir: &Path,
) -> Result<(), Failure> {
    config::warn_uncompiled_tools(loaded);
    config::server_guardrails(loaded, |n| loaded.config.policy.guardrails.contains_key(n))?;
    let settings = config::builtin_settings(loaded, dir)?;
    config::builtin_overrides(loaded, settings)?;
    config::shared_store(loaded)?;
    output::write_err(
        "checked as a run-time config of this binary (no Cargo.toml beside it): its local tools are the binary's own (`toolgate list`)",
    );
    Ok(())
}

/// `toolgate check`: the model of `gateway.tool_search.semantic`, loaded as `serve` would load
/// it (an error without the `semantic` feature, or when the folder does not hold a model).
fn check_semantic(report: &toolgate_codegen::Report) -> Result<(), Failure> {
    let base = config::folder_of(&report.config.path);
    let Some(settings) = config::semantic_settings(&report.config, &base) else {
        return Ok(());
    };
    toolgate::search::semantic::check(&settings).map_err(|e| {
        let message = toolgate::BuildError::Semantic(e).to_string();
        Failure::new(
            exit::CONFIG,
            report
                .config
                .error_at(config::SEMANTIC_POINTER, message)
                .to_string(),
        )
    })?;
    output::write_err(&format!(
        "gateway.tool_search.semantic: model {} loads",
        settings.model().display()
    ));
    Ok(())
}

/// `toolgate check`: the conversion report of every OpenAPI source (compiled ones from the
/// check itself; `load: runtime` ones whose `spec` is a file converted here, URLs not fetched).
fn check_openapi(report: &toolgate_codegen::Report) {
    let base = config::folder_of(&report.config.path);
    for entry in &report.config.tools.openapi {
        if let Some(s) = report.openapi_sources.iter().find(|s| s.id == entry.id) {
            openapi::print_source_report(&s.id, &entry.spec, "build", &s.conversion);
            continue;
        }
        match openapi::convert_runtime_entry(entry, &base) {
            Some(Ok(c)) => openapi::print_source_report(&entry.id, &entry.spec, "runtime", &c),
            Some(Err(e)) => output::print_text(&format!(
                "  openapi {} ({}, load: runtime): warning: cannot be converted now: {e}",
                entry.id, entry.spec
            )),
            None => output::print_text(&format!(
                "  openapi {} ({}, load: runtime): fetched when the toolset starts",
                entry.id, entry.spec
            )),
        }
    }
}
