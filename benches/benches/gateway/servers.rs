//! The servers of the gateway benchmark (`benches/benches/gateway.rs`): what each is called with
//! and must answer, how each is started on 127.0.0.1 and stopped, and the versions of the peers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};
use toolgate_benches::harness::{alive, descendants_in, process_table};

use crate::peers;

// ------------------------------------------------------------------------------------------------
// What is called, and what it must answer
// ------------------------------------------------------------------------------------------------

/// The two tools measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    /// `calc` {"expression": "2+3"}: `structuredContent` {"expression": "2+3", "value": 5} and
    /// the same object as JSON text.
    Calc,
    /// server-everything's `echo` {"message": "hi"}: the text `Echo: hi`.
    Echo,
}

const CALC_EXPRESSION: &str = "2+3";
const ECHO_EXPECTED: &str = "Echo: hi";

impl Tool {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Calc => "calc",
            Self::Echo => "echo",
        }
    }

    fn params(self) -> CallToolRequestParams {
        let args = match self {
            Self::Calc => json!({"expression": CALC_EXPRESSION}),
            Self::Echo => json!({"message": "hi"}),
        };
        let Value::Object(arguments) = args else {
            unreachable!("the arguments are an object")
        };
        CallToolRequestParams::new(self.name()).with_arguments(arguments)
    }

    /// Whether `result` is the right answer; the reason when it is not.
    fn check(self, result: &CallToolResult) -> Result<(), String> {
        if result.is_error == Some(true) {
            return Err(format!("{}: an error result: {result:?}", self.name()));
        }
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        match self {
            Self::Calc => {
                let expected = json!({"expression": CALC_EXPRESSION, "value": 5});
                if result.structured_content.as_ref() != Some(&expected) {
                    return Err(format!(
                        "calc: structuredContent {:?}, expected {expected}",
                        result.structured_content
                    ));
                }
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) if v == expected => Ok(()),
                    _ => Err(format!("calc: text {text:?}, expected {expected} as JSON")),
                }
            }
            Self::Echo if text == ECHO_EXPECTED => Ok(()),
            Self::Echo => Err(format!("echo: text {text:?}, expected {ECHO_EXPECTED:?}")),
        }
    }
}

/// One call, its answer checked (a wrong answer fails the benchmark).
pub(crate) async fn call(peer: &Peer<RoleClient>, tool: Tool) {
    let result = peer
        .call_tool(tool.params())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/call failed: {e}", tool.name()));
    if let Err(why) = tool.check(&result) {
        panic!("{why}");
    }
}

// ------------------------------------------------------------------------------------------------
// The servers
// ------------------------------------------------------------------------------------------------

/// One server under load: its process (group leader, on 127.0.0.1) and what it is called with.
pub(crate) struct Server {
    /// The row's label.
    pub(crate) label: &'static str,
    /// Short name (criterion's row, messages).
    pub(crate) short: &'static str,
    /// What it is called with.
    pub(crate) tool: Tool,
    /// The server process (the leader of its process group).
    pub(crate) process: peers::PeerProcess,
}

impl Server {
    /// Its MCP endpoint.
    pub(crate) fn url(&self) -> String {
        self.process.url("/mcp")
    }
}

/// The `toolgate` binary: `TOOLGATE_BIN`, else `<target>/<profile>/toolgate` next to this
/// benchmark's own executable (`<target>/<profile>/deps/gateway-…`), built by cargo first in
/// benchmark mode (a no-op when up to date) and in test mode only when it is missing (`cargo
/// test --workspace --all-targets` builds it; building it here with other features would
/// recompile half the workspace).
pub(crate) fn toolgate_binary(test_mode: bool) -> PathBuf {
    if let Some(bin) = std::env::var_os("TOOLGATE_BIN") {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "TOOLGATE_BIN={} is not a file",
            bin.display()
        );
        return bin;
    }
    let exe = std::env::current_exe().expect("this benchmark's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the benchmark runs from <target>/<profile>/deps")
        .to_path_buf();
    let bin = profile_dir.join("toolgate");
    if test_mode && bin.is_file() {
        return bin;
    }
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--bin", "toolgate", "--manifest-path"])
        .arg(peers::repo_root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    match profile {
        "debug" => {}
        "release" => {
            build.arg("--release");
        }
        other => {
            build.args(["--profile", other]);
        }
    }
    eprintln!("gateway bench: building the toolgate binary ({build:?})");
    let status = build.status().expect("run cargo build");
    assert!(
        status.success(),
        "`cargo build --bin toolgate` failed ({status}); or set TOOLGATE_BIN"
    );
    assert!(bin.is_file(), "cargo build left no {}", bin.display());
    bin
}

/// The venv with PyPI fastmcp (`scripts/install-peers.sh`).
fn fastmcp_python() -> PathBuf {
    peers::require_installed(
        peers::peers_root().join("venv-fastmcp/bin/python"),
        "the Python venv with fastmcp (.peers/venv-fastmcp)",
    )
}

fn peer_script(name: &str) -> String {
    let path = peers::repo_root().join("benches/peers").join(name);
    assert!(path.is_file(), "missing {}", path.display());
    path.display().to_string()
}

/// A tools.yaml whose one source is server-everything over stdio, mounted without prefix,
/// written to `dir`.
fn everything_config(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create the temp config directory");
    let path = dir.join("tools.yaml");
    let yaml = format!(
        "# toolgate in front of server-everything (benches/benches/gateway.rs)\n\
         version: 1\n\
         tools:\n  \
           mcp:\n    \
             - id: everything\n      \
               prefix: false\n      \
               stdio:\n        \
                 command: {node}\n        \
                 args: [{js}, stdio]\n\
         policy:\n  \
           defaults:\n    \
             timeout_ms: 30000\n",
        node = json!(peers::node().display().to_string()),
        js = json!(peers::everything_js().display().to_string()),
    );
    std::fs::write(&path, yaml).expect("write the temp tools.yaml");
    path
}

/// Starts the four servers (in parallel: the Python ones take seconds to import FastMCP) and
/// waits until each accepts connections.
pub(crate) fn start_servers(toolgate: &Path, config_dir: &Path) -> Vec<Server> {
    let toolgate = toolgate.display().to_string();
    let default_config = peers::repo_root().join("tools.yaml").display().to_string();
    let everything_config = everything_config(config_dir).display().to_string();
    let python = fastmcp_python();
    let node = peers::node().display().to_string();
    let everything = peers::everything_js().display().to_string();
    let calc_py = peer_script("fastmcp_calc.py");
    let proxy_py = peer_script("fastmcp_proxy.py");
    // toolgate's default log filter, explicit, so an inherited RUST_LOG changes nothing.
    let log = [("RUST_LOG", "warn,rmcp=off")];
    std::thread::scope(|s| {
        let tg_calc = s.spawn(|| {
            peers::spawn_http_peer_retry(
                &toolgate,
                &[
                    "--config",
                    &default_config,
                    "serve",
                    "--http",
                    "127.0.0.1:{port}",
                ],
                &log,
            )
        });
        let fm_calc =
            s.spawn(|| peers::spawn_http_peer_retry(&python, &[calc_py.as_str(), "{port}"], &[]));
        let tg_proxy = s.spawn(|| {
            peers::spawn_http_peer_retry(
                &toolgate,
                &[
                    "--config",
                    &everything_config,
                    "serve",
                    "--http",
                    "127.0.0.1:{port}",
                ],
                &log,
            )
        });
        let fm_proxy = s.spawn(|| {
            peers::spawn_http_peer_retry(
                &python,
                &[proxy_py.as_str(), "{port}", &node, &everything, "stdio"],
                &[],
            )
        });
        let join = |h: std::thread::ScopedJoinHandle<'_, peers::PeerProcess>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        vec![
            Server {
                label: "toolgate serve: built-in `calc`",
                short: "toolgate serve calc",
                tool: Tool::Calc,
                process: join(tg_calc),
            },
            Server {
                label: "FastMCP server: `calc` (Python)",
                short: "FastMCP calc",
                tool: Tool::Calc,
                process: join(fm_calc),
            },
            Server {
                label: "toolgate serve → server-everything (stdio): `echo`",
                short: "toolgate serve -> everything echo",
                tool: Tool::Echo,
                process: join(tg_proxy),
            },
            Server {
                label: "FastMCP proxy → server-everything (stdio): `echo`",
                short: "FastMCP proxy -> everything echo",
                tool: Tool::Echo,
                process: join(fm_proxy),
            },
        ]
    })
}

/// Stopping a server stops everything it started: SIGTERM (both toolgate and uvicorn shut down
/// gracefully and close their stdio children), up to 10 s for it to exit, then SIGKILL to its
/// process group (the `PeerProcess`) and to any descendant still alive after 5 more seconds
/// (toolgate starts its stdio servers in process groups of their own). Also on a panic.
impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.process.pid();
        let descendants = descendants_in(&process_table(), pid);
        if self.process.is_running() {
            // SAFETY: a signal to our own child (the group leader), alive or a zombie not yet
            // reaped (its PID cannot be reused before we wait on it).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.process.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.process.is_running() {
            eprintln!(
                "gateway bench: {} (pid {pid}) did not exit within 10 s of SIGTERM: killed",
                self.short
            );
        }
        self.process.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let alive: Vec<u32> = descendants.iter().copied().filter(|p| alive(*p)).collect();
            if alive.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                for p in alive {
                    // SAFETY: a signal to a process this benchmark started (through the
                    // server); the window for PID reuse is the seconds since we listed it.
                    unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn command_output(program: &Path, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

/// The peers' versions and the toolgate binary measured, for the table's notes.
pub(crate) fn peer_versions(toolgate: &Path) -> String {
    let node = command_output(&peers::node(), &["--version"]);
    let versions = command_output(
        &fastmcp_python(),
        &[
            "-c",
            "import sys, importlib.metadata as m; print(sys.version.split()[0], m.version('fastmcp'), m.version('uvicorn'))",
        ],
    );
    let mut v = versions.split_whitespace();
    let everything = std::fs::read_to_string(
        peers::everything_js()
            .parent()
            .and_then(Path::parent)
            .map(|p| p.join("package.json"))
            .unwrap_or_default(),
    )
    .ok()
    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    .and_then(|p| p["version"].as_str().map(str::to_string))
    .unwrap_or_else(|| "?".into());
    let toolgate = toolgate
        .strip_prefix(peers::repo_root())
        .unwrap_or(toolgate)
        .display();
    format!(
        "toolgate: `{toolgate}`; node {node}, server-everything {everything}; Python {}, fastmcp {}, uvicorn {}",
        v.next().unwrap_or("?"),
        v.next().unwrap_or("?"),
        v.next().unwrap_or("?"),
    )
}
