//! The `toolgate` command line: parsing (clap, in [`args`]), loading the configuration, and one
//! function per subcommand. Errors print the `ToolError` kind and message, never a backtrace.

mod args;
mod call;
mod check;
mod config;
mod openapi;
#[cfg(feature = "otel")]
mod otel;
mod output;
mod probe;
mod redacted_log;
mod reload;
mod serve;
mod setup;
mod skills;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::Value;
use toolgate::model::config::ToolsConfig;
use toolgate::{ErrorKind, Toolset};

use args::{Cli, Command, OpenapiCommand, exit};
use call::{call, read_args};
use config::{toolset, toolset_and_config};

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

    /// The same failure, its `toolgate approve` hint naming `--config` when one was given.
    fn with_config_hint(mut self, config: Option<&Path>) -> Self {
        self.message = approve_hint(&self.message, config);
        self
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
    init_log(
        cli.log_level
            .or_else(|| args::LogLevel::from_verbosity(cli.verbose)),
    );
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            output::write_err(&f.message);
            ExitCode::from(f.code)
        }
    }
}

/// The log goes to stderr, at the level `RUST_LOG` gives, else `--log-level` / `-v`, else
/// `warn` (a stripped argument is a warning; `info` adds every coercion made to a call's
/// arguments). Every line is scrubbed of secrets first (`redacted_log`).
fn init_log(level: Option<args::LogLevel>) {
    let level = level.unwrap_or(args::LogLevel::Warn);
    // rmcp's own log lines repeat, in its terms, what toolgate reports as errors: shown from
    // `debug` on only.
    let rmcp = match level {
        args::LogLevel::Debug | args::LogLevel::Trace => level.directive(),
        _ => "off",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{},rmcp={rmcp}", level.directive()))
    });
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let log = tracing_subscriber::fmt::layer()
        .with_writer(redacted_log::RedactedStderr)
        .with_target(false)
        .without_time()
        // Plain text always: the log is redacted as text (an escape code inside a secret would
        // hide it from the redaction), and tests and operators grep it. (ANSI is on by default
        // when any crate of the build turns on tracing-subscriber's `ansi` feature.)
        .with_ansi(false)
        .with_filter(filter);
    // The OTLP export's layer (filled in by `serve` when tools.yaml asks for it) has its own
    // filter: the `tool_call` spans, whatever the log level.
    let registry = tracing_subscriber::registry();
    #[cfg(feature = "otel")]
    let registry = registry.with(otel::layer());
    let _ = registry.with(log).try_init();
}

fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Check { file } => check::check(file.or(cli.config)),
        Command::Init { file, force } => setup::init(&file, force),
        Command::Install {
            client,
            print,
            file,
            name,
        } => setup::Install {
            client,
            name: &name,
            print,
            file,
            config: cli.config.as_deref(),
        }
        .run(),
        Command::SchemaConfig => {
            output::print_json(&ToolsConfig::json_schema());
            Ok(exit::OK)
        }
        Command::ImportMcp { file } => import_mcp(&file),
        Command::Skills { command } => skills::run(command, cli.config.as_deref()),
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
            json,
            target,
        } => {
            let runtime = runtime()?;
            let args = read_args(&args, call.as_deref().unwrap_or("the probe call"))?;
            let probe = probe::Probe {
                call,
                headers,
                args,
                timeout_ms,
                json,
            };
            let result = runtime.block_on(async {
                tokio::select! {
                    r = probe.run(target) => r,
                    () = interrupted() => Err(Failure::new(exit::INTERRUPTED, "error: interrupted")),
                }
            });
            // Stdio servers still starting (not in any source set yet) go too.
            toolgate::mcp::kill_stdio_servers();
            runtime.shutdown_background();
            result
        }
        Command::Serve {
            stdio,
            http,
            port,
            watch,
        } => {
            let runtime = runtime()?;
            let (tools, loaded, settings) = toolset_and_config(cli.config.as_deref())?;
            config::server_guardrails(&loaded, |n| tools.has_guardrail(n))?;
            serve::say_files_root(settings.files.root.as_deref());
            let http = match port {
                Some(port) => Some(serve::with_port(
                    loaded.config.gateway.listen.as_deref(),
                    port,
                )),
                None => http,
            };
            let file = config::config_path(cli.config.as_deref());
            #[cfg(feature = "otel")]
            let exporter = otel::start(&loaded.config.gateway.telemetry)
                .map_err(|e| Failure::new(exit::CONFIG, format!("error: {e}")))?;
            let result =
                runtime.block_on(serve::run(tools, &loaded.config, file, stdio, http, watch));
            // Stdio servers still starting (not in any source set yet) go too.
            toolgate::mcp::kill_stdio_servers();
            runtime.shutdown_background();
            // The spans still queued go out, within the export timeout.
            #[cfg(feature = "otel")]
            if let Some(exporter) = exporter {
                exporter.shutdown();
            }
            result
        }
        command => {
            let runtime = runtime()?;
            let tools = toolset(cli.config.as_deref())?;
            let config = cli.config.clone();
            let result = runtime.block_on(async {
                let result = tokio::select! {
                    r = run_with(&tools, command, config.as_deref()) => r,
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
            // Stdio servers still starting (not in any source set yet) go too.
            toolgate::mcp::kill_stdio_servers();
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

/// Resolves on Ctrl-C (SIGINT) or SIGTERM received once it is first polled.
pub(crate) async fn interrupted() {
    Interrupts::catch().recv().await;
}

/// SIGINT and SIGTERM, caught from the moment this is made: before, their default action ends
/// the process at once, without closing the sessions of the MCP servers it started (a stdio
/// server in its handshake would be left running). `serve` makes it before it starts anything.
pub(crate) struct Interrupts {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    /// Catches both signals from now on (one that cannot be caught is never received).
    pub(crate) fn catch() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    /// Resolves when either signal arrived since [`catch`](Self::catch).
    pub(crate) async fn recv(mut self) {
        async fn one(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = one(self.term.as_mut()) => {}
            () = one(self.int.as_mut()) => {}
        }
    }
}

/// The commands that use the toolset, inside the async runtime.
async fn run_with(tools: &Toolset, command: Command, config: Option<&Path>) -> CmdResult {
    match command {
        Command::List {
            json,
            category,
            source,
            tag,
        } => {
            let statuses = discover(tools, false).await;
            let filter = output::ListFilter {
                category: category.as_deref(),
                sources: &source,
                tags: &tag,
            };
            output::list(tools, json, &filter);
            output::unavailable(&statuses, json);
            report_withheld(tools, config);
            Ok(exit::OK)
        }
        Command::Search { query, k, json } => {
            let statuses = discover(tools, false).await;
            let k = usize::try_from(k).unwrap_or(usize::MAX);
            let options = toolgate::SearchOptions::new().k(k);
            let hits = tools
                .search(&output::cli_identity(), &query.join(" "), &options)
                .map_err(|e| {
                    let code = if e.kind() == ErrorKind::InvalidArguments {
                        exit::USAGE
                    } else {
                        exit::TOOL_ERROR
                    };
                    Failure::new(code, output::error_text(&e))
                })?;
            output::search_hits(&hits, json);
            output::unavailable(&statuses, json);
            report_withheld(tools, config);
            Ok(exit::OK)
        }
        Command::Discover { json } => {
            let statuses = discover(tools, true).await;
            output::statuses(&statuses, json);
            report_withheld(tools, config);
            let failed = statuses
                .iter()
                .any(|s| s.state == toolgate::SourceState::Failed);
            Ok(if failed { exit::TOOL_ERROR } else { exit::OK })
        }
        Command::Describe { name } => {
            let d = lookup(tools, &name, config).await?;
            output::describe(&d);
            Ok(exit::OK)
        }
        Command::Schema {
            all: false,
            defer_loading: true,
            ..
        } => Err(Failure::new(
            exit::USAGE,
            "error: --defer-loading exports the whole toolset: add --all".to_string(),
        )),
        Command::Schema {
            all: true,
            dialect,
            defer_loading: true,
            loaded,
            search_tool,
            ..
        } => {
            let provider = deferred_provider(dialect, search_tool)?;
            let statuses = discover(tools, false).await;
            output::unavailable(&statuses, true);
            let loaded: Vec<&str> = loaded.iter().map(String::as_str).collect();
            let export = tools.export_deferred(provider, &loaded);
            for e in &export.failed {
                output::write_err(&format!("error: {e}"));
            }
            output::print_json(&serde_json::Value::Array(export.tools));
            Ok(if export.failed.is_empty() {
                exit::OK
            } else {
                exit::TOOL_ERROR
            })
        }
        Command::Schema {
            name, all, dialect, ..
        } => {
            let chosen = if all {
                let statuses = discover(tools, false).await;
                output::unavailable(&statuses, true);
                tools.tools()
            } else {
                vec![lookup(tools, &name.unwrap_or_default(), config).await?]
            };
            schema(&chosen, all, dialect.into())
        }
        Command::Call {
            name,
            args,
            json,
            timeout_ms,
        } => {
            let args = read_args(&args, &name)?;
            call(tools, &name, args, json, timeout_ms)
                .await
                .map_err(|f| f.with_config_hint(config))
        }
        Command::Approve { tools: names, all } => {
            discover(tools, true).await;
            let names = if all { Vec::new() } else { names };
            let approved = tools
                .approve(&names)
                .await
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
        | Command::Init { .. }
        | Command::Install { .. }
        | Command::SchemaConfig
        | Command::ImportMcp { .. }
        | Command::Openapi { .. }
        | Command::Skills { .. }
        | Command::Probe { .. }
        | Command::Serve { .. } => {
            unreachable!("handled without a toolset")
        }
    }
}

/// Remote tools withheld by tool pinning, one `withheld:` line each on stderr (`toolgate list`
/// and `discover`); the `toolgate approve` hint names the `--config` in use.
fn report_withheld(tools: &Toolset, config: Option<&Path>) {
    for w in tools.withheld() {
        output::write_err(&approve_hint(&format!("withheld: {w}"), config));
    }
}

/// `text` with its `toolgate approve` hint naming `--config FILE`, when one was given: the
/// approvals file is the one that configuration names.
fn approve_hint(text: &str, config: Option<&Path>) -> String {
    match config {
        Some(config) => text.replace(
            "`toolgate approve ",
            &format!("`toolgate --config {} approve ", config.display()),
        ),
        None => text.to_string(),
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
async fn lookup(
    tools: &Toolset,
    name: &str,
    config: Option<&Path>,
) -> Result<Arc<toolgate::ToolDescriptor>, Failure> {
    match tools.lookup(name).await {
        Ok(d) => Ok(d),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(not_found(tools, name).await),
        Err(e) => {
            Err(Failure::new(exit::TOOL_ERROR, output::error_text(&e)).with_config_hint(config))
        }
    }
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

/// The provider whose deferred tool loading `toolgate schema --defer-loading` exports.
fn deferred_provider(
    dialect: args::DialectArg,
    search_tool: args::SearchToolArg,
) -> Result<toolgate::DeferredLoading, Failure> {
    use args::{DialectArg, SearchToolArg};
    use toolgate::DeferredLoading;
    Ok(match (dialect, search_tool) {
        (DialectArg::Anthropic, SearchToolArg::Bm25) => DeferredLoading::AnthropicBm25,
        (DialectArg::Anthropic, SearchToolArg::Regex) => DeferredLoading::AnthropicRegex,
        (DialectArg::Openai, _) => DeferredLoading::OpenAi,
        (DialectArg::OpenaiStrict, _) => DeferredLoading::OpenAiStrict,
        (DialectArg::Mcp | DialectArg::Gemini, _) => {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "error: --defer-loading: `{}` has no deferred tool loading; use --dialect anthropic, openai or openai-strict",
                    toolgate::Dialect::from(dialect)
                ),
            ));
        }
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

/// No tool `name`: the error names the tool the command line may use that was most likely
/// meant: the same tool in toolgate's form (`a.b` for `a__b`), else a remote tool of that name
/// (`server.echo` for `echo`), else the closest name (a typo; the exported form is compared
/// in toolgate's form).
///
/// The sources discovered at start-up are listed first (only on this error path), so that
/// their tools can be suggested.
async fn not_found(tools: &Toolset, name: &str) -> Failure {
    tools.discover_with(8, |_| {}).await;
    let names: Vec<String> = tools
        .tools_for(&output::cli_identity())
        .iter()
        .map(|d| d.name.clone())
        .collect();
    let internal = toolgate::model::names::internal_name(name);
    let close = names
        .iter()
        .find(|n| **n == internal)
        .or_else(|| {
            names
                .iter()
                .find(|n| n.split_once('.').is_some_and(|(_, tool)| tool == internal))
        })
        .map(String::as_str)
        .or_else(|| toolgate_codegen::closest(&internal, names.iter().map(String::as_str)));
    let hint = match close {
        Some(close) => format!("did you mean `{close}`? (see `toolgate list`)"),
        None => "see `toolgate list`".to_string(),
    };
    Failure::new(
        exit::NOT_FOUND,
        format!("error: not_found: no tool named `{name}`; {hint}"),
    )
}
