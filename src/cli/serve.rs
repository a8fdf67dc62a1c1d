//! `toolgate serve`: the gateway on HTTP and/or stdio until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use toolgate::Toolset;
use toolgate::gateway::{DEFAULT_LISTEN, Gateway, GatewayError, mcp};
use toolgate::model::config::{GatewayConfig, ToolsConfig};

use super::args::exit;
use super::{CmdResult, Failure, output};

pub(super) async fn run(
    tools: Toolset,
    started: &ToolsConfig,
    file: Option<PathBuf>,
    stdio: bool,
    http: Option<String>,
    watch: bool,
) -> CmdResult {
    // From here on SIGHUP reloads (src/cli/reload.rs) instead of ending the process, and SIGTERM
    // or Ctrl-C shut the gateway down (closing the sessions of the servers it starts below).
    let hangups = super::reload::catch_hangups();
    let interrupts = super::Interrupts::catch();
    let config = &started.gateway;
    let builder = Gateway::builder(tools)
        .config(config)
        .map_err(|e| Failure::new(exit::CONFIG, format!("error: {e}")))?;
    #[cfg(feature = "console")]
    let builder = builder.console_config(started, file.as_deref());
    let gateway = builder.build();
    // --http is the default; `--http` without a value takes gateway.listen, then the default.
    let http = match (http, stdio) {
        (Some(addr), _) if !addr.is_empty() => Some(addr),
        (Some(_), _) | (None, false) => Some(
            config
                .listen
                .clone()
                .unwrap_or_else(|| DEFAULT_LISTEN.into()),
        ),
        (None, true) => None,
    };
    let listener = match &http {
        Some(addr) => Some(bind(addr, config).await?),
        None => None,
    };

    // Discovery runs while the gateway already answers (/healthz; /readyz says 503 until it is
    // done; tools/list waits for it).
    let discovery = {
        let listing = gateway.start_discovery();
        tokio::spawn(async move {
            match listing.await {
                Ok(Ok(statuses)) => {
                    for s in statuses.iter().filter(|s| s.error.is_some()) {
                        output::write_err(&format!(
                            "warning: source `{}` is unavailable: {}",
                            s.id,
                            s.error.as_deref().unwrap_or_default()
                        ));
                    }
                    output::write_err(&summary(&statuses));
                    true
                }
                Ok(Err(GatewayError::NameConflicts(conflicts))) => {
                    for c in &conflicts {
                        output::write_err(&format!("error: {c}"));
                    }
                    false
                }
                Ok(Err(e)) => {
                    output::write_err(&format!("error: {e}"));
                    false
                }
                Err(_) => true,
            }
        })
    };

    // Names that collide later (a server mounted without prefix adds a tool another source has)
    // are not refused mid-flight: the first source keeps the name; say so.
    let conflicts_watch = {
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let mut watch = gateway.toolset().watch_tools();
            while watch.changed().await {
                for c in gateway.toolset().name_conflicts() {
                    output::write_err(&format!("warning: {c}; `{}` keeps it", c.kept_by));
                }
            }
        })
    };
    // SIGHUP (and a change of the file with --watch): the tools.yaml is applied again
    // (src/cli/reload.rs); it no longer ends the process.
    let reloader = super::reload::Reloader::new(gateway.clone(), file, started.clone());
    reloader.hook_into(&gateway);
    let reloads = tokio::spawn(super::reload::on_hangup(reloader, hangups, watch));
    if config.api_keys.is_empty() && http.is_some() {
        output::write_err(
            "toolgate serve: no gateway.api_keys: every process that can connect may call every tool",
        );
    }

    let http_server = {
        let gateway = gateway.clone();
        async move {
            match listener {
                Some(l) => gateway.serve(l).await.map_err(|e| e.to_string()),
                None => {
                    gateway.shutdown_token().cancelled().await;
                    Ok(())
                }
            }
        }
    };
    let stdio_server = {
        let gateway = gateway.clone();
        async move {
            if stdio {
                let r = mcp::stdio::serve(&gateway).await.map_err(|e| e.to_string());
                // stdin closed: the client is gone, so is the gateway.
                gateway.shutdown();
                r
            } else {
                Ok(())
            }
        }
    };
    let signals = {
        let gateway = gateway.clone();
        async move {
            let stop = gateway.shutdown_token();
            tokio::select! {
                () = interrupts.recv() => {
                    output::write_err("toolgate serve: shutting down (calls in flight get the grace period)");
                    gateway.shutdown();
                }
                () = stop.cancelled() => {}
            }
        }
    };
    let (http_result, stdio_result, ()) = tokio::join!(http_server, stdio_server, signals);
    if http.is_none() {
        // Without HTTP nobody else finishes the calls and closes the sessions.
        gateway.drain().await;
    }
    conflicts_watch.abort();
    reloads.abort();
    let discovered = if discovery.is_finished() {
        discovery.await.unwrap_or(true)
    } else {
        discovery.abort();
        true
    };
    if let Err(e) = http_result.and(stdio_result) {
        return Err(Failure::new(exit::TOOL_ERROR, format!("error: {e}")));
    }
    if !discovered {
        return Err(Failure::new(
            exit::CONFIG,
            "error: two sources offer the same tool name (see above); the gateway stopped",
        ));
    }
    Ok(exit::OK)
}

/// The start-up summary, once discovery is done: "ready: N tools from M sources (K failed, L
/// lazy, not contacted yet)".
fn summary(statuses: &[toolgate::SourceStatus]) -> String {
    use toolgate::SourceState;
    let tools: usize = statuses.iter().map(|s| s.tools).sum();
    let failed = statuses
        .iter()
        .filter(|s| s.state == SourceState::Failed)
        .count();
    let lazy = statuses
        .iter()
        .filter(|s| s.lazy && s.state == SourceState::Pending)
        .count();
    let mut notes = Vec::new();
    if failed > 0 {
        notes.push(format!("{failed} failed"));
    }
    if lazy > 0 {
        notes.push(format!("{lazy} not contacted yet"));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    format!(
        "toolgate serve: ready: {tools} tool(s) from {} source(s){notes}",
        statuses.len()
    )
}

/// The address `--port PORT` listens on: gateway.listen's host (default 127.0.0.1) with `port`.
pub(super) fn with_port(listen: Option<&str>, port: u16) -> String {
    let host = listen
        .and_then(|l| l.parse::<SocketAddr>().ok())
        .map_or_else(|| std::net::IpAddr::from([127, 0, 0, 1]), |a| a.ip());
    SocketAddr::new(host, port).to_string()
}

/// Says on stderr which directory `read_file` and `list_dir` serve, or that they serve none:
/// whoever starts the gateway (a desktop client too) sees what it shares.
pub(super) fn say_files_root(root: Option<&Path>) {
    match root {
        Some(root) => {
            let shown = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
            output::write_err(&format!(
                "toolgate serve: read_file and list_dir serve {} (settings.files.root)",
                shown.display()
            ));
        }
        None => output::write_err(
            "toolgate serve: read_file and list_dir are off: no settings.files.root (set one in a tools.yaml, here or with --config, to share a directory)",
        ),
    }
}

/// File descriptors kept for what is not a client connection (remote sessions, stdio servers,
/// files, the log).
const RESERVED_FDS: u64 = 256;

/// Makes room for `max` connections under the process's open-file limit (`RLIMIT_NOFILE`):
/// raises the soft limit towards the hard one when it is too low (as Go's runtime does for
/// every program), and says so when even that is not enough.
#[cfg(unix)]
fn make_room_for_connections(max: usize) {
    let wanted = (max as u64).saturating_add(RESERVED_FDS);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let current = limit.rlim_cur;
    if current >= wanted {
        return;
    }
    let raised = wanted.min(limit.rlim_max);
    if raised > current {
        let new = libc::rlimit {
            rlim_cur: raised as libc::rlim_t,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 && raised >= wanted {
            return;
        }
    }
    output::write_err(&format!(
        "warning: gateway.max_connections is {max}, but this process may open only {} files (ulimit -n; hard limit {}): connections beyond that fail to be accepted; lower max_connections or raise the limit",
        raised.max(current),
        limit.rlim_max
    ));
}

#[cfg(not(unix))]
fn make_room_for_connections(_max: usize) {}

async fn bind(addr: &str, config: &GatewayConfig) -> Result<tokio::net::TcpListener, Failure> {
    make_room_for_connections(
        config
            .max_connections
            .unwrap_or(toolgate::gateway::DEFAULT_MAX_CONNECTIONS),
    );
    let parsed: SocketAddr = addr.parse().map_err(|_| {
        Failure::new(
            exit::USAGE,
            format!(
                "error: --http `{addr}` is not an address: give host:port, e.g. 127.0.0.1:8787"
            ),
        )
    })?;
    let listener = tokio::net::TcpListener::bind(parsed).await.map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            " (another process listens there: stop it, or pick another port with --port or --http)"
        } else {
            ""
        };
        Failure::new(
            exit::CANNOT_SERVE,
            format!("error: cannot listen on {addr}: {e}{hint}"),
        )
    })?;
    let local = listener.local_addr().unwrap_or(parsed);
    if !parsed.ip().is_loopback() && config.allowed_hosts.is_empty() {
        output::write_err(&format!(
            "warning: listening on {local}, but only loopback Host headers are accepted; list the names clients use in gateway.allowed_hosts"
        ));
    }
    output::write_err(&format!(
        "toolgate serve: http://{local} (MCP at /mcp, legacy SSE at /sse, REST at /tools, OpenAPI at /openapi.json)"
    ));
    Ok(listener)
}
