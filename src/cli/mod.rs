//! The `toolgate` command line: parsing (clap, in [`args`]), loading the configuration, and one
//! function per subcommand. Errors print the `ToolError` kind and message, never a backtrace.

mod args;
mod openapi;
mod output;
mod probe;
mod redacted_log;
mod serve;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::Value;
use toolgate::builtin::BuiltinSettings;
use toolgate::model::config::{LoadedConfig, ToolsConfig};
use toolgate::{ErrorKind, ToolContext, Toolset};

use args::{Cli, Command, OpenapiCommand, exit};

/// A failed command: what to print on stderr and the exit code.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

type CmdResult = Result<u8, Failure>;

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    init_log();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            output::write_err(&f.message);
            ExitCode::from(f.code)
        }
    }
}

/// The log goes to stderr, at the level `RUST_LOG` gives (default `warn`: a stripped argument is
/// a warning; `RUST_LOG=info` adds every coercion made to a call's arguments). Every line is
/// scrubbed of secrets first (`redacted_log`).
fn init_log() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // rmcp's own log lines repeat, in its terms, what toolgate reports as errors.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(redacted_log::RedactedStderr)
        .with_target(false)
        .without_time()
        .try_init();
}

fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Check { file } => check(file.or(cli.config)),
        Command::SchemaConfig => {
            output::print_json(&ToolsConfig::json_schema());
            Ok(exit::OK)
        }
        Command::ImportMcp { file } => import_mcp(&file),
        Command::Openapi {
            command:
                OpenapiCommand::Inspect {
                    spec,
                    json,
                    dialect,
                },
        } => openapi::inspect(&spec, json, dialect.map(Into::into)),
        Command::Probe {
            call,
            header: headers,
            args,
            timeout_ms,
            target,
        } => {
            let runtime = runtime()?;
            let args = read_args(&args)?;
            let result = runtime.block_on(async {
                tokio::select! {
                    r = probe::run(target, call, headers, args, timeout_ms) => r,
                    () = interrupted() => Err(Failure::new(exit::INTERRUPTED, "error: interrupted")),
                }
            });
            runtime.shutdown_background();
            result
        }
        Command::Serve { stdio, http } => {
            let runtime = runtime()?;
            let (tools, loaded, settings) = toolset_and_config(cli.config.as_deref())?;
            serve::say_files_root(settings.files.root.as_deref());
            let result = runtime.block_on(serve::run(tools, &loaded.config.gateway, stdio, http));
            runtime.shutdown_background();
            result
        }
        command => {
            let runtime = runtime()?;
            let tools = toolset(cli.config.as_deref())?;
            let result = runtime.block_on(async {
                let result = tokio::select! {
                    r = run_with(&tools, command) => r,
                    () = interrupted() => Err(Failure::new(
                        exit::INTERRUPTED,
                        "error: interrupted; closing the remote sessions",
                    )),
                };
                // Remote sessions end and server processes exit before the command does (also
                // after Ctrl-C or SIGTERM: stdio servers run in their own process groups, which
                // the terminal's signal does not reach).
                tools.close().await;
                result
            });
            // A tool that timed out may leave a blocking thread running (a sync function cannot
            // be interrupted): do not wait for it before exiting.
            runtime.shutdown_background();
            result
        }
    }
}

/// The async runtime the commands that call or discover tools run on.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::new(
                exit::TOOL_ERROR,
                format!("error: internal: cannot start the async runtime: {e}"),
            )
        })
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM.
pub(crate) async fn interrupted() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

/// The commands that use the toolset, inside the async runtime.
async fn run_with(tools: &Toolset, command: Command) -> CmdResult {
    match command {
        Command::List { json, category } => {
            let statuses = discover(tools, false).await;
            output::list(tools, json, category.as_deref());
            output::unavailable(&statuses, json);
            report_withheld(tools);
            Ok(exit::OK)
        }
        Command::Discover { json } => {
            let statuses = discover(tools, true).await;
            output::statuses(&statuses, json);
            report_withheld(tools);
            let failed = statuses
                .iter()
                .any(|s| s.state == toolgate::SourceState::Failed);
            Ok(if failed { exit::TOOL_ERROR } else { exit::OK })
        }
        Command::Describe { name } => {
            let d = lookup(tools, &name).await?;
            output::describe(&d);
            Ok(exit::OK)
        }
        Command::Schema { name, all, dialect } => {
            let chosen = if all {
                let statuses = discover(tools, false).await;
                output::unavailable(&statuses, true);
                tools.tools()
            } else {
                vec![lookup(tools, &name.unwrap_or_default()).await?]
            };
            schema(&chosen, all, dialect.into())
        }
        Command::Call {
            name,
            args,
            json,
            timeout_ms,
        } => {
            let args = read_args(&args)?;
            call(tools, &name, args, json, timeout_ms).await
        }
        Command::Approve { tools: names, all } => {
            discover(tools, true).await;
            let names = if all { Vec::new() } else { names };
            let approved = tools
                .approve(&names)
                .map_err(|e| Failure::new(exit::TOOL_ERROR, output::error_text(&e)))?;
            if approved.is_empty() {
                output::print_text("nothing to approve: no remote tool is withheld\n");
            }
            for name in approved {
                output::print_text(&format!("approved {name}\n"));
            }
            Ok(exit::OK)
        }
        Command::Check { .. }
        | Command::SchemaConfig
        | Command::ImportMcp { .. }
        | Command::Openapi { .. }
        | Command::Probe { .. }
        | Command::Serve { .. } => {
            unreachable!("handled without a toolset")
        }
    }
}

/// Remote tools withheld by tool pinning, one `withheld:` line each on stderr (`toolgate list`
/// and `discover`).
fn report_withheld(tools: &Toolset) {
    for w in tools.withheld() {
        output::write_err(&format!("withheld: {w}"));
    }
}

/// Lists the tools of the remote sources (all of them at once, at most 8 at a time), with a
/// progress bar on a terminal; `lazy_too` includes sources configured `lazy`.
async fn discover(tools: &Toolset, lazy_too: bool) -> Vec<toolgate::SourceStatus> {
    let remote = tools
        .sources()
        .iter()
        .filter_map(|s| s.lifecycle())
        .filter(|l| lazy_too || l.discover_at_startup())
        .count();
    if remote == 0 {
        return tools.statuses();
    }
    let bar = indicatif::ProgressBar::new(remote as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} discovering sources {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let done = |s: &toolgate::SourceStatus| {
        if !matches!(s.kind.as_str(), "local" | "json_schema") {
            bar.inc(1);
            bar.set_message(s.id.clone());
        }
    };
    let statuses = if lazy_too {
        tools.discover_all(8, done).await
    } else {
        tools.discover_with(8, done).await
    };
    bar.finish_and_clear();
    statuses
}

/// The tool `name`, discovering its source first when needed.
async fn lookup(tools: &Toolset, name: &str) -> Result<Arc<toolgate::ToolDescriptor>, Failure> {
    tools.lookup(name).await.map_err(|e| {
        if e.kind() == ErrorKind::NotFound {
            not_found(name)
        } else {
            Failure::new(exit::TOOL_ERROR, output::error_text(&e))
        }
    })
}

/// `toolgate schema`: the definitions on stdout, notes and unexportable tools on stderr.
fn schema(
    chosen: &[Arc<toolgate::ToolDescriptor>],
    all: bool,
    dialect: toolgate::Dialect,
) -> CmdResult {
    let mut definitions = Vec::with_capacity(chosen.len());
    let mut failed = 0;
    for d in chosen {
        let (definition, notes) = match d.export_with_notes(dialect) {
            Ok(exported) => exported,
            // One tool the dialect cannot express does not hide the others.
            Err(e) if all => {
                output::write_err(&format!("error: {e}"));
                failed += 1;
                continue;
            }
            Err(e) => return Err(Failure::new(exit::TOOL_ERROR, format!("error: {e}"))),
        };
        for note in notes {
            output::write_err(&format!("note: {} ({dialect}): {note}", d.name));
        }
        definitions.push(definition);
    }
    let exported = if all {
        Value::Array(definitions)
    } else {
        definitions.pop().unwrap_or_default()
    };
    output::print_json(&exported);
    Ok(if failed > 0 {
        exit::TOOL_ERROR
    } else {
        exit::OK
    })
}

/// `toolgate import-mcp FILE`: the tools.yaml section of an `mcpServers` JSON file.
fn import_mcp(file: &Path) -> CmdResult {
    let text = std::fs::read_to_string(file).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("error: cannot read `{}`: {e}", file.display()),
        )
    })?;
    let parsed = toolgate::model::config::parse_mcp_json(&text, file)
        .map_err(|e| Failure::new(exit::CONFIG, e.to_string()))?;
    for w in &parsed.warnings {
        output::write_err(&w.to_string());
    }
    output::print_text(&toolgate::model::config::to_tools_yaml(
        &parsed.servers,
        file,
    ));
    Ok(exit::OK)
}

fn not_found(name: &str) -> Failure {
    Failure::new(
        exit::NOT_FOUND,
        format!("error: not_found: no tool named `{name}` (see `toolgate list`)"),
    )
}

/// Loads the configuration: `--config`, else ./tools.yaml, else the one built into the binary.
/// Relative paths in its settings are relative to the file's folder; the built-in one has no
/// folder (the file it was built from is not there at run time), so it shares no directory
/// with `read_file` and `list_dir` (its `files.root` is dropped).
fn load_config(path: Option<&Path>) -> Result<(LoadedConfig, PathBuf), Failure> {
    let config_error =
        |e: toolgate::model::config::ConfigError| Failure::new(exit::CONFIG, e.to_string());
    let local = Path::new("tools.yaml");
    let path = match path {
        Some(p) => Some(p.to_path_buf()),
        None if local.is_file() => Some(local.to_path_buf()),
        None => None,
    };
    match path {
        Some(p) => {
            let loaded = ToolsConfig::load(&p).map_err(config_error)?;
            let base = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            Ok((loaded, base))
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

fn toolset(config: Option<&Path>) -> Result<Toolset, Failure> {
    toolset_and_config(config).map(|(tools, _, _)| tools)
}

/// The toolset, the configuration it was built from and its built-in tools' settings.
fn toolset_and_config(
    config: Option<&Path>,
) -> Result<(Toolset, LoadedConfig, BuiltinSettings), Failure> {
    let (loaded, base) = load_config(config)?;
    let settings = BuiltinSettings::from_config(&loaded.config.settings, &base).map_err(|e| {
        Failure::new(
            exit::CONFIG,
            loaded.error_at(&e.pointer, e.message).to_string(),
        )
    })?;
    for warning in &loaded.warnings {
        output::write_err(&warning.to_string());
    }
    warn_uncompiled_tools(&loaded);
    // OpenAPI entries not compiled into this binary are read and converted at run time (the
    // binary's compiled ones come from the tools.yaml it was built from).
    let compiled = compiled_openapi_ids();
    let builder = toolgate::builtin::toolset(settings.clone())
        .policy(&loaded.config.policy)
        .config_dir(&base)
        .openapi_sources(
            &loaded.config.tools,
            &base,
            toolgate::openapi::LoadFilter::AllExcept(compiled),
        )
        .mcp_servers(&loaded.config.tools, &base)
        .a2a_agents(&loaded.config.tools);
    let config_error = |e: toolgate::BuildError| Failure::new(exit::CONFIG, format!("error: {e}"));
    let tools = builder.build().map_err(config_error)?;
    warn_unknown_policy_tools(&loaded, &tools);
    Ok((tools, loaded, settings))
}

/// The ids of the OpenAPI sources compiled into this binary: the `load: build` entries of the
/// tools.yaml it was built from.
fn compiled_openapi_ids() -> std::collections::BTreeSet<String> {
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
fn warn_unknown_policy_tools(loaded: &LoadedConfig, tools: &Toolset) {
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
    for name in loaded.config.policy.tools.keys() {
        if names.contains(name) || remote(name) {
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
fn warn_uncompiled_tools(loaded: &LoadedConfig) {
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

/// `ARGS`: JSON text, `@file`, or `-` (stdin).
fn read_args(raw: &str) -> Result<Value, Failure> {
    let (text, origin) = if raw == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("error: cannot read ARGS from stdin: {e}"),
            )
        })?;
        (s, "stdin".to_string())
    } else if let Some(path) = raw.strip_prefix('@') {
        let s = std::fs::read_to_string(path).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("error: cannot read ARGS from `{path}`: {e}"),
            )
        })?;
        (s, format!("`{path}`"))
    } else {
        (raw.to_string(), "the command line".to_string())
    };
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("error: ARGS from {origin} is not valid JSON: {e} (expected an object such as '{{\"path\": \"README.md\"}}')"),
        )
    })
    .and_then(|v: Value| match v {
        Value::Object(_) | Value::Null => Ok(v),
        other => Err(Failure::new(
            exit::USAGE,
            format!(
                "error: ARGS from {origin} must be a JSON object of named arguments, got `{}`",
                toolgate::model::text::cut(&other.to_string(), 80)
            ),
        )),
    })
}

async fn call(
    tools: &Toolset,
    name: &str,
    args: Value,
    json: bool,
    timeout_ms: Option<u64>,
) -> CmdResult {
    // A tool's progress reports (MCP `notifications/progress`) go to stderr as they come.
    let mut ctx = ToolContext::builder()
        .caller("cli")
        .progress(toolgate::ProgressReporter::new(|p| {
            output::write_err(&output::progress_line(&p));
        }));
    if let Some(ms) = timeout_ms {
        ctx = ctx.timeout(Duration::from_millis(ms));
    }
    match tools.call_with(name, args, ctx.build()).await {
        Ok(out) => {
            output::call_output(&out, json);
            Ok(if out.is_error {
                exit::TOOL_ERROR
            } else {
                exit::OK
            })
        }
        // The agent asked a question: shown as the result, not as a failure.
        Err(e) if e.kind() == ErrorKind::InputRequired => {
            output::call_output(&e.into_output(), json);
            Ok(exit::INPUT_REQUIRED)
        }
        Err(e) => {
            if json {
                output::print_json(&serde_json::json!({ "error": e }));
            }
            // Exit 4 means "no tool of that name"; a tool that ran and reports `not_found`
            // (e.g. read_file of a missing file) is a failed call like any other (exit 1).
            let code = if e.kind() == ErrorKind::NotFound && tools.describe(name).is_none() {
                exit::NOT_FOUND
            } else {
                exit::TOOL_ERROR
            };
            Err(Failure::new(code, output::error_text(&e)))
        }
    }
}

fn check(file: Option<PathBuf>) -> CmdResult {
    let path = file.unwrap_or_else(|| PathBuf::from("tools.yaml"));
    match toolgate_codegen::check(&path) {
        Ok(report) => {
            output::check_report(&report);
            check_openapi(&report);
            Ok(exit::OK)
        }
        Err(e) => Err(Failure::new(exit::CONFIG, e.to_string())),
    }
}

/// `toolgate check`: the conversion report of every OpenAPI source (compiled ones from the
/// check itself; `load: runtime` ones whose `spec` is a file converted here, URLs not fetched).
fn check_openapi(report: &toolgate_codegen::Report) {
    let base = report
        .config
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
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
