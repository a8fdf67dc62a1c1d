//! Remote MCP calls over stdio: `echo` of the reference server `server-everything` (npm
//! `@modelcontextprotocol/server-everything`, run with `node … stdio`), three ways, in one run:
//!
//! * **toolgate**: `Toolset::call("everything.echo", …)` over toolgate's persistent session (the
//!   whole public path: name resolution, argument validation against the server's input schema,
//!   a fresh `ToolContext`, the timeout and panic guards, rmcp's client underneath, the result
//!   converted to a `ToolOutput`); also with argument validation off;
//! * **bare rmcp**: rmcp's client over `TokioChildProcess`, also one persistent session,
//!   `peer.call_tool(…)` and nothing else (the floor for a Rust MCP client);
//! * **connect-per-call**: for every call, spawn the server, `initialize`, call `echo`, close
//!   (with rmcp): the pattern of tool managers that open an MCP session per tool call
//!   (MiroFlow, DataAgent).
//!
//! Three tables (`toolgate_benches::report`): `mcp-sequential` (plain clock: sequential calls in
//! rounds whose order rotates, one connect-per-call cycle per round; per-round calls/s, p50 and
//! CPU per call with their spread, and per-round ratios to toolgate), `mcp-concurrent` (1/16/64
//! callers sharing one session, toolgate vs bare rmcp, rounds alternating), and `mcp-criterion`
//! (the three rows under criterion, group `mcp/echo over stdio`). Every client's answer is
//! checked (`Echo: hi`) before and during timing, so a broken row fails instead of measuring
//! nothing. Every server is stopped before the process exits.
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench mcp`
//! (`TOOLGATE_BENCH_QUICK=1` for fewer rounds and shorter criterion times). Under `cargo test`
//! the counts shrink to a handful of calls and nothing is written. Results: BENCHMARKS.md.

// (peers.rs allows dead code itself: most of it is for HTTP peers.)
#[path = "../../runtime/tests/support/peers.rs"]
mod peers;

#[path = "mcp/clients.rs"]
mod clients;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clients::{EXPECTED, Persistent, connect_per_call, rmcp_connect, toolgate_connect};
use criterion::{Criterion, SamplingMode};
use serde_json::Value;
use tokio::runtime::Runtime;
use toolgate_benches::harness::{
    self, Round, RoundRow as Row, Samples, fmt_duration, fmt_rate, fmt_ratio, fmt_seconds,
    fmt_spread,
};
use toolgate_benches::report::Table;

const COMMAND: &str = "cargo bench -p toolgate-benches --bench mcp";

/// The ratio cell of the row the others are divided by.
const BASE: &str = "1.00× (base)";

/// How many calls each measurement makes, by mode.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Sequential calls per persistent client, after `warmup` untimed ones.
    persistent: usize,
    warmup: usize,
    /// Rounds the sequential calls are split into, rotating which client goes first; each
    /// round also makes one connect-per-call cycle.
    rounds: usize,
    /// Calls per client in each concurrency row, split into `concurrent_rounds`.
    concurrent: usize,
    concurrent_rounds: usize,
    /// Criterion's warm-up and measurement time for the persistent rows.
    warm_up: Duration,
    measurement: Duration,
    /// Criterion's measurement time for connect-per-call (10 flat samples, about 0.8 s each).
    connect_measurement: Duration,
}

/// Callers sharing one session in the concurrent table.
const CALLERS: [usize; 3] = [1, 16, 64];

impl Counts {
    const FULL: Self = Self {
        persistent: 6000,
        warmup: 300,
        rounds: 20,
        concurrent: 8192,
        concurrent_rounds: 8,
        warm_up: Duration::from_secs(1),
        measurement: Duration::from_secs(5),
        connect_measurement: Duration::from_secs(9),
    };
    /// `TOOLGATE_BENCH_QUICK=1`: the same rows, about a fifth of the calls.
    const QUICK: Self = Self {
        persistent: 1000,
        warmup: 100,
        rounds: 5,
        concurrent: 1536,
        concurrent_rounds: 4,
        warm_up: Duration::from_millis(300),
        measurement: Duration::from_secs(1),
        connect_measurement: Duration::from_secs(8),
    };
    /// `cargo test`: enough to prove every path works, fast.
    const TEST: Self = Self {
        persistent: 5,
        warmup: 1,
        rounds: 1,
        concurrent: 128,
        concurrent_rounds: 1,
        warm_up: Duration::from_millis(1),
        measurement: Duration::from_millis(1),
        connect_measurement: Duration::from_millis(1),
    };

    fn for_mode() -> Self {
        if harness::test_mode() {
            Self::TEST
        } else {
            harness::by_mode(Self::QUICK, Self::FULL)
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Measuring
// ------------------------------------------------------------------------------------------------

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
        let servers = harness::children_cpu();
        Self {
            client: harness::process_cpu(),
            servers,
        }
    }

    fn since(self) -> Self {
        let client = harness::process_cpu();
        let servers = harness::children_cpu();
        Self {
            client: client.saturating_sub(self.client),
            servers: servers.saturating_sub(self.servers),
        }
    }

    /// A round of `latencies` over `wall`, with this CPU time (taken by [`since`](Self::since)).
    fn round(self, wall: Duration, latencies: Vec<Duration>) -> Round {
        Round {
            wall,
            latencies,
            client_cpu: self.client,
            peer_cpu: self.servers,
        }
    }
}

/// `n` sequential calls, each timed.
async fn sequential(client: &Persistent, n: usize) -> Round {
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
    cpu.since().round(wall, latencies)
}

/// One connect-per-call cycle as a round of one call; also when the answer arrived.
async fn connect_round() -> (Round, Duration) {
    let cpu = Cpu::now();
    let started = Instant::now();
    let (text, answered) = connect_per_call().await;
    let wall = started.elapsed();
    assert_eq!(text, EXPECTED);
    let round = cpu.since().round(wall, vec![wall]);
    (round, answered)
}

/// `total` calls made by `callers` tasks at once (each `total / callers` in a row), sharing one
/// session.
async fn concurrent(client: &Persistent, callers: usize, total: usize) -> Round {
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
        match task.await {
            Ok(l) => latencies.extend(l),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("caller task: {e}"),
        }
    }
    let wall = started.elapsed();
    cpu.since().round(wall, latencies)
}

// ------------------------------------------------------------------------------------------------
// Tables
// ------------------------------------------------------------------------------------------------

/// `node --version` and server-everything's version, for the notes.
fn versions() -> String {
    let node = std::process::Command::new(clients::server_program())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let everything = std::fs::read_to_string(
        peers::peers_root()
            .join("node_modules/@modelcontextprotocol/server-everything/package.json"),
    )
    .ok()
    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    .and_then(|p| p["version"].as_str().map(str::to_string))
    .unwrap_or_else(|| "?".into());
    let rmcp = std::fs::read_to_string(peers::repo_root().join("Cargo.lock"))
        .ok()
        .and_then(|lock| {
            let at = lock.find("name = \"rmcp\"\nversion = \"")?;
            let rest = &lock[at + "name = \"rmcp\"\nversion = \"".len()..];
            rest.split('"').next().map(str::to_string)
        })
        .unwrap_or_else(|| "?".into());
    format!("node {node}, server-everything {everything}, rmcp {rmcp}")
}

/// The sequential table: the three persistent rows and connect-per-call, in the same rounds.
fn sequential_table(
    rt: &Runtime,
    toolgate: &Persistent,
    unvalidated: &Persistent,
    rmcp: &Persistent,
    counts: Counts,
) -> Table {
    let persistent = [toolgate, unvalidated, rmcp];
    let (rows, answered) = rt.block_on(async {
        for client in persistent {
            sequential(client, counts.warmup).await;
        }
        // Rounds in rotating order (connect-per-call takes its turn as the fourth client), so
        // that drift on a shared machine hits every row alike.
        let mut rows: [Row; 4] = Default::default();
        let mut answered = Samples::default();
        let per_round = (counts.persistent / counts.rounds).max(1);
        for round in 0..counts.rounds {
            for k in 0..rows.len() {
                let i = (round + k) % rows.len();
                if i < persistent.len() {
                    rows[i].add(sequential(persistent[i], per_round).await);
                } else {
                    let (r, to_answer) = connect_round().await;
                    rows[i].add(r);
                    answered.push(to_answer.as_secs_f64());
                }
            }
        }
        (rows, answered)
    });

    let mut table = Table::new(
        "mcp-sequential",
        "sequential calls of `echo` on server-everything over stdio: toolgate's persistent session \
         (`Toolset::call`, validation on and off), a bare rmcp client's persistent session, and \
         connect-per-call (spawn, initialize, call, close with rmcp); one call at a time in \
         `block_on`, in rounds whose order rotates.",
        COMMAND,
    )
    .columns([
        "client",
        "calls",
        "calls/s: median of rounds [min–max]",
        "p50 latency: median of rounds [min–max]",
        "p99 latency (all calls)",
        "client CPU per call [min–max]",
        "server CPU per call [min–max]",
        "calls/s ÷ toolgate's, per round (higher = faster)",
        "client CPU ÷ toolgate's, per round (lower = leaner)",
    ]);
    let names = [
        "toolgate: persistent session (`Toolset::call`)",
        "toolgate, argument validation off",
        "bare rmcp client: persistent session (`peer.call_tool`)",
        "connect-per-call: spawn, initialize, call, close (rmcp)",
    ];
    let base = &rows[0];
    for (i, (name, row)) in names.iter().zip(&rows).enumerate() {
        let ratio = |of: &dyn Fn(&Row) -> &Samples| match i {
            0 => BASE.to_string(),
            _ => fmt_spread(&of(row).ratio_to(of(base)), fmt_ratio),
        };
        table.row([
            name.to_string(),
            row.calls.to_string(),
            fmt_spread(&row.rates, fmt_rate),
            fmt_spread(&row.p50s, fmt_seconds),
            fmt_seconds(row.latencies.percentile(99.0)),
            fmt_spread(&row.client_cpu, fmt_seconds),
            fmt_spread(&row.peer_cpu, fmt_seconds),
            ratio(&|r| &r.rates),
            ratio(&|r| &r.client_cpu),
        ]);
    }
    let per_round = (counts.persistent / counts.rounds).max(1);
    table.note(format!(
        "{} rounds; in each, {per_round} calls per persistent client and one connect-per-call \
         cycle, the order rotating; {} untimed warm-up calls per client first. Client CPU: this \
         process (`CLOCK_PROCESS_CPUTIME_ID`); server CPU: the node children (`/proc` and \
         `RUSAGE_CHILDREN`, 10 ms resolution per process, so a round's server figure is ±10 ms \
         over its calls).",
        counts.rounds, counts.warmup
    ));
    table.note(format!(
        "Connect-per-call: the answer arrives after {} (median [min–max]: spawn + initialize + \
         call); the rest of the cycle is the close (stdin closed, the server's exit awaited). \
         toolgate's session makes {} as many calls per second (per round).",
        fmt_spread(&answered, fmt_seconds),
        fmt_spread(&base.rates.ratio_to(&rows[3].rates), fmt_ratio),
    ));
    table.note(format!("Versions: {}.", versions()));
    table
}

/// The concurrent table: for each number of callers, toolgate and bare rmcp sharing one session.
fn concurrent_table(
    rt: &Runtime,
    toolgate: &Persistent,
    rmcp: &Persistent,
    counts: Counts,
) -> Table {
    let mut table = Table::new(
        "mcp-concurrent",
        "calls of `echo` on server-everything over stdio by 1, 16 and 64 callers at once (spawned \
         tokio tasks) sharing one persistent session: toolgate (`Toolset::call`) vs a bare rmcp \
         client (`peer.call_tool`), in rounds whose order alternates.",
        COMMAND,
    )
    .columns([
        "callers",
        "client",
        "calls",
        "calls/s: median of rounds [min–max]",
        "p50 latency: median of rounds [min–max]",
        "p99 latency (all calls)",
        "client CPU per call [min–max]",
        "server CPU per call [min–max]",
        "calls/s ÷ toolgate's, same callers, per round (higher = faster)",
    ]);
    let per_round = (counts.concurrent / counts.concurrent_rounds).max(1);
    for callers in CALLERS {
        let (t, r) = rt.block_on(async {
            sequential(toolgate, counts.warmup).await;
            sequential(rmcp, counts.warmup).await;
            let (mut t, mut r) = (Row::default(), Row::default());
            for round in 0..counts.concurrent_rounds {
                if round % 2 == 0 {
                    t.add(concurrent(toolgate, callers, per_round).await);
                    r.add(concurrent(rmcp, callers, per_round).await);
                } else {
                    r.add(concurrent(rmcp, callers, per_round).await);
                    t.add(concurrent(toolgate, callers, per_round).await);
                }
            }
            (t, r)
        });
        for (name, row) in [("toolgate", &t), ("bare rmcp", &r)] {
            let ratio = if std::ptr::eq(row, &t) {
                BASE.to_string()
            } else {
                fmt_spread(&row.rates.ratio_to(&t.rates), fmt_ratio)
            };
            table.row([
                callers.to_string(),
                name.to_string(),
                row.calls.to_string(),
                fmt_spread(&row.rates, fmt_rate),
                fmt_spread(&row.p50s, fmt_seconds),
                fmt_seconds(row.latencies.percentile(99.0)),
                fmt_spread(&row.client_cpu, fmt_seconds),
                fmt_spread(&row.peer_cpu, fmt_seconds),
                ratio,
            ]);
        }
    }
    table.note(format!(
        "{} rounds of {per_round} calls per client and number of callers (each caller makes its \
         share in a row), the order alternating (toolgate first, then rmcp first, …), after {} \
         untimed warm-up calls each; CPU as in the sequential table.",
        counts.concurrent_rounds, counts.warmup
    ));
    table
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

const GROUP: &str = "mcp/echo over stdio";
const CRITERION_ROWS: [&str; 3] = [
    "toolgate: persistent session (Toolset::call)",
    "bare rmcp client: persistent session",
    "connect-per-call: spawn, initialize, call, close (rmcp)",
];

fn criterion_rows(
    c: &mut Criterion,
    rt: &Runtime,
    toolgate: &Persistent,
    rmcp: &Persistent,
    counts: Counts,
) {
    let mut g = c.benchmark_group(GROUP);
    g.bench_function(CRITERION_ROWS[0], |b| {
        b.to_async(rt).iter(|| async {
            let text = toolgate.echo().await;
            assert_eq!(text, EXPECTED);
        });
    });
    g.bench_function(CRITERION_ROWS[1], |b| {
        b.to_async(rt).iter(|| async {
            let text = rmcp.echo().await;
            assert_eq!(text, EXPECTED);
        });
    });
    // Most of a second a call: ten flat samples of one call each.
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(counts.warm_up)
        .measurement_time(counts.connect_measurement);
    g.bench_function(CRITERION_ROWS[2], |b| {
        b.to_async(rt).iter(|| async {
            let (text, _) = connect_per_call().await;
            assert_eq!(text, EXPECTED);
        });
    });
    g.finish();
}

fn criterion_table(counts: Counts) -> Table {
    let mut table = Table::new(
        "mcp-criterion",
        "the three ways of calling `echo` on server-everything over stdio of the sequential \
         table, one call at a time under criterion (group `mcp/echo over stdio`), one row after \
         the other (not interleaved).",
        COMMAND,
    )
    .columns([
        "row",
        "time per call: criterion median [95% CI]",
        "÷ toolgate's (lower = faster) [conservative CI]",
    ]);
    table.criterion_rows(GROUP, &CRITERION_ROWS, 0, BASE);
    table.note(format!(
        "Persistent rows: {} warm-up, {} of measurement each; connect-per-call: 10 flat samples \
         of one cycle, {} of measurement.",
        fmt_duration(counts.warm_up),
        fmt_duration(counts.measurement),
        fmt_duration(counts.connect_measurement),
    ));
    table
}

fn main() {
    let counts = Counts::for_mode();
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let ((tools, unvalidated), rmcp_client) =
        rt.block_on(async { tokio::join!(toolgate_connect(), rmcp_connect()) });
    let toolgate = Persistent::Toolgate(tools.clone());
    let unvalidated = Persistent::Toolgate(unvalidated);
    let rmcp = Persistent::Rmcp(rmcp_client.peer().clone());

    // Every client answers correctly before anything is timed; so does one connect-per-call
    // cycle.
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

    let sequential = sequential_table(&rt, &toolgate, &unvalidated, &rmcp, counts);
    sequential.write().expect("write mcp-sequential");
    let concurrent = concurrent_table(&rt, &toolgate, &rmcp, counts);
    concurrent.write().expect("write mcp-concurrent");

    // No plots: the tables are the report, and plotting takes seconds per row here.
    let mut c = Criterion::default()
        .warm_up_time(counts.warm_up)
        .measurement_time(counts.measurement)
        .nresamples(harness::by_mode(20_000, 100_000))
        .without_plots()
        .configure_from_args();
    criterion_rows(&mut c, &rt, &toolgate, &rmcp, counts);
    c.final_summary();
    criterion_table(counts)
        .write()
        .expect("write mcp-criterion");

    // Both servers are stopped before the process exits (stdin closed, then the exit awaited).
    rt.block_on(async {
        tools.close().await;
        rmcp_client.cancel().await.expect("close the rmcp session");
    });
    eprintln!("mcp bench: {:.1} s", started.elapsed().as_secs_f64());
}
