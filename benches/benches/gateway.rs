//! The gateway over MCP streamable HTTP: `toolgate serve` side by side with FastMCP (PyPI
//! `fastmcp` 4.x), in one run, with 1, 16 and 64 concurrent clients.
//!
//! Four servers, each started by this benchmark on 127.0.0.1 and stopped at its end:
//!
//! * **toolgate serve, built-in `calc`**: the `toolgate` binary (release build), `--config
//!   tools.yaml serve --http 127.0.0.1:PORT`, the repository's default toolset;
//! * **FastMCP server, `calc`**: `benches/peers/fastmcp_calc.py`, a FastMCP server exposing a
//!   `calc` tool with the same contract (`{"expression": "2+3"}` → `structuredContent`
//!   `{"expression": "2+3", "value": 5}` plus the same object as JSON text);
//! * **toolgate serve → server-everything**: the same binary with a tools.yaml whose one `mcp:`
//!   source is server-everything over stdio (`prefix: false`, so its `echo` keeps its name);
//! * **FastMCP proxy → server-everything**: `benches/peers/fastmcp_proxy.py`, FastMCP's
//!   `create_proxy` over an MCPConfig naming the same server over stdio.
//!
//! The load: N clients (1, 16, 64), each its own MCP session (rmcp's client over
//! `StreamableHttpClientTransport`, its own reqwest connection pool, the `initialize`
//! handshake), each making `tools/call`s one after the other (`calc` {"expression": "2+3"} or
//! `echo` {"message": "hi"}); every answer is checked. For each number of clients, every server
//! gets its sessions, a warm-up, then timed rounds in rotating order (so that drift on a shared
//! machine hits every server alike). Reported: calls/s (all clients together), p50 and p99
//! latency of one call, the client's CPU time per call (this process) and the server's (the
//! server process, plus, for the two gateways, the server-everything process behind it), and
//! ratios to toolgate. Then criterion measures one call on one session for each server (group
//! `gateway/one call over streamable HTTP`).
//!
//! The toolgate binary: `TOOLGATE_BIN` if set; otherwise this benchmark runs `cargo build
//! [--release] --bin toolgate` into its own target directory first (a no-op when it is up to
//! date), so the binary measured is the code checked out. Under `cargo test` (criterion's test
//! mode) it uses `target/debug/toolgate` as `cargo test --workspace --all-targets` leaves it
//! (building it only if it is missing), and the load shrinks to two calls per client with 1 and
//! 4 clients (answers still checked; 5 s, up to 17 s on a busy machine, mostly Python
//! importing FastMCP).
//!
//! Both FastMCP servers run with fastmcp's defaults (one uvicorn process, stateful sessions,
//! SSE answers) but without banner, INFO log and access log: toolgate logs nothing per call
//! either. The server-everything processes behind the gateways speak stdio and listen nowhere.
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench
//! gateway`. Results and ratios: BENCHMARKS.md, "Gateway: toolgate serve vs FastMCP".

// (peers.rs allows dead code itself: most of it is for other tests.)
#[path = "../../runtime/tests/support/peers.rs"]
mod peers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

// ------------------------------------------------------------------------------------------------
// What is called, and what it must answer
// ------------------------------------------------------------------------------------------------

/// The two tools measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// `calc` {"expression": "2+3"}: `structuredContent` {"expression": "2+3", "value": 5} and
    /// the same object as JSON text.
    Calc,
    /// server-everything's `echo` {"message": "hi"}: the text `Echo: hi`.
    Echo,
}

const CALC_EXPRESSION: &str = "2+3";
const ECHO_EXPECTED: &str = "Echo: hi";

impl Tool {
    fn name(self) -> &'static str {
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
async fn call(peer: &Peer<RoleClient>, tool: Tool) {
    let result = peer
        .call_tool(tool.params())
        .await
        .unwrap_or_else(|e| panic!("{}: tools/call failed: {e}", tool.name()));
    if let Err(why) = tool.check(&result) {
        panic!("{why}");
    }
}

// ------------------------------------------------------------------------------------------------
// Plan: how long each measurement runs
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Plan {
    /// The numbers of concurrent clients.
    clients: &'static [usize],
    /// Untimed calls before the rounds, per server and number of clients (each client calls
    /// until this has passed, at least once).
    warmup: Duration,
    /// Timed rounds per server and number of clients, in rotating order.
    rounds: usize,
    /// How long each client keeps calling in one round (it finishes the call in flight).
    round: Duration,
    /// Calls each client makes in a round at least (also in the warm-up).
    min_calls: usize,
}

impl Plan {
    const BENCH: Self = Self {
        clients: &[1, 16, 64],
        warmup: Duration::from_millis(1000),
        rounds: 6,
        round: Duration::from_millis(1500),
        min_calls: 1,
    };
    /// `cargo test`: every path twice, concurrently too, answers checked.
    const TEST: Self = Self {
        clients: &[1, 4],
        warmup: Duration::ZERO,
        rounds: 1,
        round: Duration::ZERO,
        min_calls: 2,
    };
}

/// Criterion's own rule: benchmark mode with `--bench` (what `cargo bench` passes) unless
/// `--test` is given too; `cargo test` passes neither.
fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    !has("--bench") || has("--test")
}

// ------------------------------------------------------------------------------------------------
// The servers
// ------------------------------------------------------------------------------------------------

/// One server under load: its process (group leader, on 127.0.0.1) and what it is called with.
struct Server {
    /// The row's label.
    label: &'static str,
    /// Short name (criterion's row, messages).
    short: &'static str,
    tool: Tool,
    process: peers::PeerProcess,
}

impl Server {
    fn url(&self) -> String {
        self.process.url("/mcp")
    }
}

/// The `toolgate` binary: `TOOLGATE_BIN`, else `<target>/<profile>/toolgate` next to this
/// benchmark's own executable (`<target>/<profile>/deps/gateway-…`), built by cargo first in
/// benchmark mode (a no-op when up to date) and in test mode only when it is missing (`cargo
/// test --workspace --all-targets` builds it; building it here with other features would
/// recompile half the workspace).
fn toolgate_binary(test_mode: bool) -> PathBuf {
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
fn start_servers(toolgate: &Path, config_dir: &Path) -> Vec<Server> {
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
        let descendants = descendants(pid);
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

// ------------------------------------------------------------------------------------------------
// Processes and CPU time (Linux /proc)
// ------------------------------------------------------------------------------------------------

/// `(ppid, utime + stime in ticks, state)` of a process.
fn proc_stat(pid: u32) -> Option<(u32, u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid … utime stime: fields 3, 4, 14 and 15, after a comm that may hold
    // spaces.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime, state))
}

fn alive(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(_, _, state)| state != 'Z' && state != 'X')
}

/// Every live process: pid → (ppid, CPU ticks).
fn process_table() -> HashMap<u32, (u32, u64)> {
    let mut table = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, ticks, _)) = proc_stat(pid) {
            table.insert(pid, (ppid, ticks));
        }
    }
    table
}

/// The descendants of `root` in `table` (children, their children, …).
fn descendants_in(table: &HashMap<u32, (u32, u64)>, root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (&pid, &(ppid, _)) in table {
            if ppid == parent && pid != root && !found.contains(&pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

fn descendants(root: u32) -> Vec<u32> {
    descendants_in(&process_table(), root)
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf reads a constant.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    Duration::from_nanos(ticks * 1_000_000_000 / hz.max(1))
}

/// The CPU time this process has used so far, all threads (the clients).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time so far: the clients (this process), the server process, and what it started (the
/// server-everything behind a gateway). 10 ms resolution for the servers.
#[derive(Debug, Default, Clone, Copy)]
struct Cpu {
    client: Duration,
    server: Duration,
    backend: Duration,
}

impl Cpu {
    fn now(server_pid: u32) -> Self {
        let table = process_table();
        let ticks = |pid: u32| table.get(&pid).map_or(0, |&(_, t)| t);
        let backend = descendants_in(&table, server_pid)
            .into_iter()
            .map(ticks)
            .sum();
        Self {
            client: process_cpu(),
            server: ticks_to_duration(ticks(server_pid)),
            backend: ticks_to_duration(backend),
        }
    }

    fn since(self, server_pid: u32) -> Self {
        let now = Self::now(server_pid);
        Self {
            client: now.client.saturating_sub(self.client),
            server: now.server.saturating_sub(self.server),
            backend: now.backend.saturating_sub(self.backend),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Load
// ------------------------------------------------------------------------------------------------

/// Latencies of the calls of a measurement, its wall time, and the CPU time spent meanwhile.
#[derive(Debug, Default)]
struct Stats {
    wall: Duration,
    cpu: Cpu,
    latencies: Vec<Duration>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        self.wall += other.wall;
        self.cpu.client += other.cpu.client;
        self.cpu.server += other.cpu.server;
        self.cpu.backend += other.cpu.backend;
        self.latencies.extend(other.latencies);
    }

    fn calls(&self) -> usize {
        self.latencies.len()
    }

    fn per_second(&self) -> f64 {
        self.calls() as f64 / self.wall.as_secs_f64()
    }

    fn per_call(&self, d: Duration) -> Duration {
        d / self.calls().max(1) as u32
    }

    /// Nearest-rank percentile (`p` in 0..=100).
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }
}

/// N MCP sessions with one server, each its own HTTP client.
struct Sessions {
    clients: Vec<RunningService<RoleClient, ()>>,
}

impl Sessions {
    /// Opens `n` sessions to `url` (`initialize` + `notifications/initialized`), 16 at a time.
    async fn open(url: &str, n: usize) -> Self {
        use futures::StreamExt;
        let clients = futures::stream::iter(0..n)
            .map(|_| async move {
                ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
                    .await
                    .unwrap_or_else(|e| panic!("initialize a session with {url}: {e}"))
            })
            .buffered(16)
            .collect()
            .await;
        Self { clients }
    }

    fn peers(&self) -> Vec<Peer<RoleClient>> {
        self.clients.iter().map(|c| c.peer().clone()).collect()
    }

    /// Closes every session (rmcp's client sends `DELETE /mcp`).
    async fn close(self) {
        futures::future::join_all(self.clients.into_iter().map(|c| async move {
            let _ = c.cancel().await;
        }))
        .await;
    }
}

/// Every client calls `tool` one call after the other until `duration` has passed since they
/// all started (and at least `min_calls` times); the call in flight at the deadline finishes.
async fn load(
    peers: &[Peer<RoleClient>],
    tool: Tool,
    server_pid: u32,
    duration: Duration,
    min_calls: usize,
) -> Stats {
    let start = Arc::new(tokio::sync::Barrier::new(peers.len() + 1));
    let tasks: Vec<_> = peers
        .iter()
        .map(|peer| {
            let peer = peer.clone();
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let started = Instant::now();
                let mut latencies = Vec::with_capacity(1024);
                while latencies.len() < min_calls || started.elapsed() < duration {
                    let t = Instant::now();
                    call(&peer, tool).await;
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let cpu = Cpu::now(server_pid);
    start.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::new();
    for task in tasks {
        match task.await {
            Ok(l) => latencies.extend(l),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("client task: {e}"),
        }
    }
    let wall = started.elapsed();
    Stats {
        wall,
        cpu: cpu.since(server_pid),
        latencies,
    }
}

/// For each number of clients: sessions with every server, a warm-up, then the rounds in
/// rotating order. Returns `stats[level][server]`.
fn measure(rt: &Runtime, servers: &[Server], plan: Plan) -> Vec<Vec<Stats>> {
    let mut all = Vec::new();
    for &clients in plan.clients {
        let stats = rt.block_on(async {
            let mut sessions = Vec::new();
            for s in servers {
                sessions.push(Sessions::open(&s.url(), clients).await);
            }
            let peers: Vec<Vec<Peer<RoleClient>>> = sessions.iter().map(Sessions::peers).collect();
            for (s, p) in servers.iter().zip(&peers) {
                load(p, s.tool, s.process.pid(), plan.warmup, plan.min_calls).await;
            }
            let mut stats: Vec<Stats> = servers.iter().map(|_| Stats::default()).collect();
            for round in 0..plan.rounds {
                for k in 0..servers.len() {
                    let i = (round + k) % servers.len();
                    let s = &servers[i];
                    stats[i].merge(
                        load(
                            &peers[i],
                            s.tool,
                            s.process.pid(),
                            plan.round,
                            plan.min_calls,
                        )
                        .await,
                    );
                }
            }
            for s in sessions {
                s.close().await;
            }
            stats
        });
        all.push(stats);
    }
    all
}

// ------------------------------------------------------------------------------------------------
// Report
// ------------------------------------------------------------------------------------------------

fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.2}")
    }
}

fn command_output(program: &Path, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine(toolgate: &Path) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let node = command_output(&peers::node(), &["--version"]);
    let python = fastmcp_python();
    let versions = command_output(
        &python,
        &[
            "-c",
            "import sys, importlib.metadata as m; print(sys.version.split()[0], m.version('fastmcp'), m.version('uvicorn'))",
        ],
    );
    let mut v = versions.split_whitespace();
    format!(
        "{cores} cores, {cpu}; toolgate binary {}; node {node}; Python {}, fastmcp {}, uvicorn {}",
        toolgate.display(),
        v.next().unwrap_or("?"),
        v.next().unwrap_or("?"),
        v.next().unwrap_or("?"),
    )
}

/// The markdown table: for each number of clients, the four rows; ratios against the toolgate
/// row of the same pair (calc: rows 0 and 1; echo through a gateway: rows 2 and 3).
fn report(servers: &[Server], plan: Plan, stats: &[Vec<Stats>], toolgate: &Path) {
    println!();
    println!(
        "## gateway over streamable HTTP: toolgate serve vs FastMCP ({})",
        machine(toolgate)
    );
    println!();
    println!(
        "| clients | server | calls | calls/s | p50 | p99 | client CPU / call | server CPU / call | backend CPU / call | calls/s vs toolgate (higher = faster) | p99 vs toolgate (lower = faster) | server CPU vs toolgate |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (level, &clients) in stats.iter().zip(plan.clients) {
        for (i, (s, server)) in level.iter().zip(servers).enumerate() {
            let base = &level[i - i % 2];
            let backend = if server.tool == Tool::Echo {
                fmt_duration(s.per_call(s.cpu.backend))
            } else {
                "–".into()
            };
            println!(
                "| {clients} | {} | {} | {} | {} | {} | {} | {} | {backend} | {} | {} | {} |",
                server.label,
                s.calls(),
                fmt_rate(s.per_second()),
                fmt_duration(s.percentile(50.0)),
                fmt_duration(s.percentile(99.0)),
                fmt_duration(s.per_call(s.cpu.client)),
                fmt_duration(s.per_call(s.cpu.server)),
                fmt_ratio(s.per_second() / base.per_second()),
                fmt_ratio(s.percentile(99.0).as_secs_f64() / base.percentile(99.0).as_secs_f64()),
                if base.cpu.server.is_zero() {
                    "–".into()
                } else {
                    fmt_ratio(
                        s.per_call(s.cpu.server).as_secs_f64()
                            / base.per_call(base.cpu.server).as_secs_f64(),
                    )
                },
            );
        }
    }
    println!();
    println!(
        "({} timed rounds of {:?} per server and number of clients, rotating order; server CPU = the server process, backend CPU = the server-everything process behind a gateway)",
        plan.rounds, plan.round
    );
    println!();
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

fn criterion_rows(c: &mut Criterion, rt: &Runtime, servers: &[Server]) {
    let sessions: Vec<Sessions> = rt.block_on(async {
        let mut all = Vec::new();
        for s in servers {
            all.push(Sessions::open(&s.url(), 1).await);
        }
        all
    });
    let mut g = c.benchmark_group("gateway/one call over streamable HTTP");
    // A call takes from a few hundred µs to several ms: flat sampling keeps the slow rows'
    // time bounded.
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(40)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    for (s, session) in servers.iter().zip(&sessions) {
        let peer = session.peers().remove(0);
        g.bench_function(s.short, |b| {
            b.to_async(rt).iter(|| call(&peer, s.tool));
        });
    }
    g.finish();
    rt.block_on(async {
        for s in sessions {
            s.close().await;
        }
    });
}

fn main() {
    let test = test_mode();
    let plan = if test { Plan::TEST } else { Plan::BENCH };
    let toolgate = toolgate_binary(test);
    let config_dir =
        std::env::temp_dir().join(format!("toolgate-bench-gateway-{}", std::process::id()));
    let started = Instant::now();
    let servers = start_servers(&toolgate, &config_dir);
    eprintln!(
        "gateway bench: 4 servers listening after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    // Every server answers right before anything is timed.
    rt.block_on(async {
        for s in &servers {
            let sessions = Sessions::open(&s.url(), 1).await;
            call(&sessions.peers()[0], s.tool).await;
            sessions.close().await;
        }
    });

    let started = Instant::now();
    let stats = measure(&rt, &servers, plan);
    eprintln!(
        "gateway bench: measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    report(&servers, plan, &stats, &toolgate);

    let mut c = Criterion::default().configure_from_args();
    criterion_rows(&mut c, &rt, &servers);
    c.final_summary();

    // The clients are gone before the servers stop; every server (and the server-everything
    // processes behind the gateways) is stopped before the process exits.
    drop(rt);
    let started = Instant::now();
    std::thread::scope(|s| {
        for server in servers {
            s.spawn(move || drop(server));
        }
    });
    eprintln!(
        "gateway bench: servers stopped in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&config_dir);
}
