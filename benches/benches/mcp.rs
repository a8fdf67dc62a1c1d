//! Remote MCP calls over stdio: `echo` of the reference server `server-everything` (npm
//! `@modelcontextprotocol/server-everything`, run with `node … stdio`), three ways, in one run:
//!
//! * **toolgate**: `Toolset::call("everything.echo", …)` over toolgate's persistent session (the
//!   whole public path: name resolution, argument validation against the server's input schema,
//!   a fresh `ToolContext`, the timeout and panic guards, rmcp's client underneath, the result
//!   converted to a `ToolOutput`);
//! * **bare rmcp**: rmcp's client over `TokioChildProcess`, also one persistent session,
//!   `peer.call_tool(…)` and nothing else (the floor for a Rust MCP client);
//! * **connect-per-call**: for every call, spawn the server, `initialize`, call `echo`, close
//!   (with rmcp): the pattern of tool managers that open an MCP session per tool call
//!   (MiroFlow, DataAgent).
//!
//! `main` first prints two markdown tables measured with a plain clock (N sequential calls per
//! client, in rounds of rotating order: calls/s, p50, p99, client and server CPU per call, and
//! ratios to toolgate, plus toolgate with argument validation off; then 1/16/64 concurrent
//! callers sharing one session), then runs the same three rows under criterion (group
//! `mcp/echo over stdio`). Every client's answer is checked (`Echo: hi`) before and during
//! timing, so a broken row fails instead of measuring nothing. Every server is stopped before
//! the process exits.
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench mcp`.
//! Under `cargo test` (criterion's test mode: no `--bench`, or `--test`) the counts shrink to a
//! handful of calls. Results and ratios: BENCHMARKS.md.

// (peers.rs allows dead code itself: most of it is for HTTP peers.)
#[path = "../../runtime/tests/support/peers.rs"]
mod peers;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{SourceState, Toolset};

/// What `echo` must answer to `{"message": "hi"}`.
const EXPECTED: &str = "Echo: hi";

fn args() -> Value {
    json!({"message": "hi"})
}

/// How many calls each measurement makes.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Sequential calls per persistent client, after `warmup` untimed ones.
    persistent: usize,
    warmup: usize,
    /// Rounds the persistent calls are split into, rotating which client goes first.
    rounds: usize,
    /// Sequential connect-per-call calls.
    connect: usize,
    /// Calls in each concurrency row (for each number of callers and each client).
    concurrent: usize,
}

impl Counts {
    const BENCH: Self = Self {
        persistent: 6000,
        warmup: 300,
        rounds: 20,
        connect: 20,
        concurrent: 4096,
    };
    /// `cargo test`: enough to prove every path works, fast.
    const TEST: Self = Self {
        persistent: 5,
        warmup: 1,
        rounds: 1,
        connect: 1,
        concurrent: 128,
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
// The three clients
// ------------------------------------------------------------------------------------------------

fn server_program() -> String {
    peers::node().display().to_string()
}

fn server_args() -> Vec<String> {
    vec![peers::everything_js().display().to_string(), "stdio".into()]
}

/// toolgate: one `RemoteSource` over stdio, its tools listed, health checks off (so that no
/// `ping` lands in the measurements). Two toolsets share it (and its one session): the default
/// one, and one with argument validation turned off.
async fn toolgate_connect() -> (Toolset, Toolset) {
    let connection = McpConnection::Stdio {
        program: server_program(),
        args: server_args(),
        env: Default::default(),
        cwd: None,
    };
    let backend = McpBackend::new("everything", connection, McpOptions::default());
    let source = RemoteSource::builder("everything", backend)
        .health_interval(None)
        .build();
    let tools = Toolset::builder()
        .source(source.clone())
        .build()
        .expect("toolset builds");
    let unvalidated = Toolset::builder()
        .source(source)
        .validate_arguments(false)
        .build()
        .expect("toolset builds");
    for toolset in [&tools, &unvalidated] {
        let statuses = toolset.discover(1).await;
        assert!(
            statuses.iter().all(|s| s.state == SourceState::Ready),
            "server-everything did not list its tools: {statuses:?}"
        );
        assert!(
            toolset.describe("everything.echo").is_some(),
            "server-everything lists no `echo`"
        );
    }
    (tools, unvalidated)
}

/// rmcp: spawn the server (stderr discarded, killed if dropped) and `initialize`.
async fn rmcp_connect() -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(server_program());
    command.args(server_args()).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server-everything");
    ().serve(transport)
        .await
        .expect("initialize server-everything")
}

async fn rmcp_echo(peer: &Peer<RoleClient>) -> String {
    let Value::Object(arguments) = args() else {
        unreachable!("the arguments are an object")
    };
    let result = peer
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("rmcp: echo");
    rmcp_text(&result)
}

fn rmcp_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The whole life of one connect-per-call call: spawn, initialize, call, close. Returns the
/// answer and when it arrived (the rest of the time is the close).
async fn connect_per_call() -> (String, Duration) {
    let started = Instant::now();
    let client = rmcp_connect().await;
    let text = rmcp_echo(client.peer()).await;
    let answered = started.elapsed();
    client.cancel().await.expect("close the session");
    (text, answered)
}

/// A persistent client: toolgate's `Toolset` or a bare rmcp peer. Cheap to clone.
#[derive(Clone)]
enum Persistent {
    Toolgate(Toolset),
    Rmcp(Peer<RoleClient>),
}

impl Persistent {
    async fn echo(&self) -> String {
        match self {
            Self::Toolgate(tools) => tools
                .call("everything.echo", args())
                .await
                .expect("toolgate: echo")
                .text_joined(),
            Self::Rmcp(peer) => rmcp_echo(peer).await,
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Measuring
// ------------------------------------------------------------------------------------------------

/// The CPU time this process has used so far, all threads (the client side of every call: the
/// server is another process).
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

/// The CPU time used so far by this process's children (the servers), live ones from
/// `/proc/<pid>/stat`, exited and reaped ones from `getrusage(RUSAGE_CHILDREN)`. 10 ms
/// resolution per live process.
fn servers_cpu() -> Duration {
    let me = std::process::id();
    // SAFETY: sysconf reads a constant.
    let tick = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    let mut ticks = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid … utime stime: fields 4, 14 and 15, after a comm that may
        // hold spaces.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|f| f.parse::<u32>().ok()) != Some(me) {
            continue;
        }
        for i in [11, 12] {
            ticks += fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    let live = Duration::from_nanos(ticks * 1_000_000_000 / tick.max(1));
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills one rusage struct, which `usage` is.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_CHILDREN)");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    live + tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time: this process's (the client side of every call) and its children's (the servers).
#[derive(Debug, Default, Clone, Copy)]
struct Cpu {
    client: Duration,
    servers: Duration,
}

impl Cpu {
    /// A snapshot; [`since`](Self::since) takes the difference. The scan of `/proc` for the
    /// servers is kept out of the client's time.
    fn now() -> Self {
        let servers = servers_cpu();
        Self {
            client: process_cpu(),
            servers,
        }
    }

    fn since(self) -> Self {
        let client = process_cpu();
        let servers = servers_cpu();
        Self {
            client: client.saturating_sub(self.client),
            servers: servers.saturating_sub(self.servers),
        }
    }
}

/// Latencies of a series of calls, the wall time they took, and the CPU time the client and the
/// servers spent meanwhile.
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
        self.cpu.servers += other.cpu.servers;
        self.latencies.extend(other.latencies);
    }

    /// Client CPU time per call.
    fn cpu_per_call(&self) -> Duration {
        self.cpu.client / self.calls().max(1) as u32
    }

    /// Server CPU time per call.
    fn server_cpu_per_call(&self) -> Duration {
        self.cpu.servers / self.calls().max(1) as u32
    }

    fn calls(&self) -> usize {
        self.latencies.len()
    }

    fn per_second(&self) -> f64 {
        self.calls() as f64 / self.wall.as_secs_f64()
    }

    /// Nearest-rank percentile (`p` in 0..=100).
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }
}

/// `n` sequential calls, each timed.
async fn sequential(client: &Persistent, n: usize) -> Stats {
    let mut latencies = Vec::with_capacity(n);
    let cpu = Cpu::now();
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        let text = client.echo().await;
        latencies.push(t.elapsed());
        assert_eq!(text, EXPECTED);
    }
    let wall = started.elapsed();
    Stats {
        wall,
        cpu: cpu.since(),
        latencies,
    }
}

/// `total` calls made by `callers` tasks at once (each `total / callers` in a row), sharing one
/// session.
async fn concurrent(client: &Persistent, callers: usize, total: usize) -> Stats {
    let per_caller = total.div_ceil(callers);
    let start = Arc::new(tokio::sync::Barrier::new(callers + 1));
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let client = client.clone();
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let mut latencies = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    let text = client.echo().await;
                    latencies.push(t.elapsed());
                    assert_eq!(text, EXPECTED);
                }
                latencies
            })
        })
        .collect();
    let cpu = Cpu::now();
    start.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(per_caller * callers);
    for task in tasks {
        latencies.extend(task.await.expect("caller task"));
    }
    let wall = started.elapsed();
    Stats {
        wall,
        cpu: cpu.since(),
        latencies,
    }
}

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
        format!("{r:.2}")
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 0.1 {
        format!("{r:.2}")
    } else {
        format!("{r:.4}")
    }
}

fn machine() -> String {
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
    let node = std::process::Command::new(server_program())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{cores} cores, {cpu}; node {node}")
}

/// The two markdown tables.
fn report(
    rt: &Runtime,
    toolgate: &Persistent,
    unvalidated: &Persistent,
    rmcp: &Persistent,
    counts: Counts,
) {
    // Both persistent clients answer correctly before anything is timed; so does one
    // connect-per-call cycle.
    rt.block_on(async {
        assert_eq!(toolgate.echo().await, EXPECTED, "toolgate");
        assert_eq!(
            unvalidated.echo().await,
            EXPECTED,
            "toolgate, validation off"
        );
        assert_eq!(rmcp.echo().await, EXPECTED, "bare rmcp");
        assert_eq!(connect_per_call().await.0, EXPECTED, "connect-per-call");
    });

    let persistent = [toolgate, unvalidated, rmcp];
    let (persistent_stats, connect_stats, answered) = rt.block_on(async {
        for client in persistent {
            sequential(client, counts.warmup).await;
        }
        // Rounds in rotating order, so that drift on a shared machine hits every client alike.
        let mut stats: [Stats; 3] = Default::default();
        let per_round = counts.persistent / counts.rounds;
        for round in 0..counts.rounds {
            for k in 0..persistent.len() {
                let i = (round + k) % persistent.len();
                stats[i].merge(sequential(persistent[i], per_round).await);
            }
        }
        let mut c = Stats::default();
        let mut answered = Vec::new();
        let cpu = Cpu::now();
        let started = Instant::now();
        for _ in 0..counts.connect {
            let t0 = Instant::now();
            let (text, to_answer) = connect_per_call().await;
            c.latencies.push(t0.elapsed());
            answered.push(to_answer);
            assert_eq!(text, EXPECTED);
        }
        c.wall = started.elapsed();
        c.cpu = cpu.since();
        (stats, c, answered)
    });
    let [toolgate_stats, unvalidated_stats, rmcp_stats] = persistent_stats;

    println!();
    println!("## mcp/echo over stdio: sequential calls ({})", machine());
    println!();
    println!(
        "| client | calls | calls/s | p50 | p99 | client CPU per call | server CPU per call | calls/s vs toolgate (higher = faster) | p50 vs toolgate (lower = faster) | p99 vs toolgate | client CPU vs toolgate |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let base = &toolgate_stats;
    for (name, s) in [
        (
            "toolgate: persistent session (`Toolset::call`)",
            &toolgate_stats,
        ),
        ("toolgate, argument validation off", &unvalidated_stats),
        (
            "bare rmcp client: persistent session (`peer.call_tool`)",
            &rmcp_stats,
        ),
        (
            "connect-per-call: spawn, initialize, call, close (rmcp)",
            &connect_stats,
        ),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.calls(),
            fmt_rate(s.per_second()),
            fmt_duration(s.percentile(50.0)),
            fmt_duration(s.percentile(99.0)),
            fmt_duration(s.cpu_per_call()),
            fmt_duration(s.server_cpu_per_call()),
            fmt_ratio(s.per_second() / base.per_second()),
            fmt_ratio(s.percentile(50.0).as_secs_f64() / base.percentile(50.0).as_secs_f64()),
            fmt_ratio(s.percentile(99.0).as_secs_f64() / base.percentile(99.0).as_secs_f64()),
            fmt_ratio(s.cpu_per_call().as_secs_f64() / base.cpu_per_call().as_secs_f64()),
        );
    }
    let answered = Stats {
        latencies: answered,
        ..Stats::default()
    };
    println!();
    println!(
        "connect-per-call: the answer arrives after p50 {} (spawn + initialize + call); the rest of the cycle is the close (stdin closed, the server's exit awaited).",
        fmt_duration(answered.percentile(50.0))
    );

    println!();
    println!("## mcp/echo over stdio: concurrent callers sharing one session");
    println!();
    println!(
        "| callers | client | calls | calls/s | p50 | p99 | client CPU per call | server CPU per call | calls/s vs toolgate, same callers |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for callers in [1, 16, 64] {
        // Two halves in the order toolgate, rmcp, rmcp, toolgate.
        let (t, r) = rt.block_on(async {
            let half = counts.concurrent / 2;
            sequential(toolgate, counts.warmup).await;
            let mut t = concurrent(toolgate, callers, half).await;
            sequential(rmcp, counts.warmup).await;
            let mut r = concurrent(rmcp, callers, half).await;
            r.merge(concurrent(rmcp, callers, half).await);
            sequential(toolgate, counts.warmup).await;
            t.merge(concurrent(toolgate, callers, half).await);
            (t, r)
        });
        for (name, s) in [("toolgate", &t), ("bare rmcp", &r)] {
            println!(
                "| {callers} | {name} | {} | {} | {} | {} | {} | {} | {} |",
                s.calls(),
                fmt_rate(s.per_second()),
                fmt_duration(s.percentile(50.0)),
                fmt_duration(s.percentile(99.0)),
                fmt_duration(s.cpu_per_call()),
                fmt_duration(s.server_cpu_per_call()),
                fmt_ratio(s.per_second() / t.per_second()),
            );
        }
    }
    println!();
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

fn criterion_rows(c: &mut Criterion, rt: &Runtime, toolgate: &Persistent, rmcp: &Persistent) {
    let mut g = c.benchmark_group("mcp/echo over stdio");
    g.bench_function("toolgate: persistent session (Toolset::call)", |b| {
        b.to_async(rt).iter(|| async {
            let text = toolgate.echo().await;
            assert_eq!(text, EXPECTED);
        });
    });
    g.bench_function("bare rmcp client: persistent session", |b| {
        b.to_async(rt).iter(|| async {
            let text = rmcp.echo().await;
            assert_eq!(text, EXPECTED);
        });
    });
    // Most of a second a call: ten samples of one call each.
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(12));
    g.bench_function(
        "connect-per-call: spawn, initialize, call, close (rmcp)",
        |b| {
            b.to_async(rt).iter(|| async {
                let (text, _) = connect_per_call().await;
                assert_eq!(text, EXPECTED);
            });
        },
    );
    g.finish();
}

fn main() {
    let counts = if test_mode() {
        Counts::TEST
    } else {
        Counts::BENCH
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let ((tools, unvalidated), rmcp_client) =
        rt.block_on(async { tokio::join!(toolgate_connect(), rmcp_connect()) });
    let toolgate = Persistent::Toolgate(tools.clone());
    let unvalidated = Persistent::Toolgate(unvalidated);
    let rmcp = Persistent::Rmcp(rmcp_client.peer().clone());

    report(&rt, &toolgate, &unvalidated, &rmcp, counts);

    let mut c = Criterion::default().configure_from_args();
    criterion_rows(&mut c, &rt, &toolgate, &rmcp);
    c.final_summary();

    // Both servers are stopped before the process exits (stdin closed, then the exit awaited).
    rt.block_on(async {
        tools.close().await;
        rmcp_client.cancel().await.expect("close the rmcp session");
    });
}
