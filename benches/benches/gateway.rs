//! The gateway over MCP streamable HTTP: `toolgate serve` side by side with FastMCP (PyPI
//! `fastmcp` 4.x), in one run, with 1, 16 and 64 concurrent clients.
//!
//! Four servers, each started by this benchmark on 127.0.0.1 and stopped at its end
//! (`gateway/servers.rs`):
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
//! The load (the "small load driver" of the issue): N clients (1, 16, 64), each its own MCP
//! session (rmcp's client over `StreamableHttpClientTransport`, its own reqwest connection pool,
//! the `initialize` handshake), each making `tools/call`s one after the other (`calc`
//! {"expression": "2+3"} or `echo` {"message": "hi"}); every answer is checked. For each number
//! of clients, every server gets its sessions, a warm-up, then timed rounds in rotating order (so
//! that drift on a shared machine hits every server alike). Per round: calls/s (all clients
//! together), p50 and p99 latency of one call, the client's CPU time per call (this process) and
//! the server's (the server process, plus, for the two gateways, the server-everything process
//! behind it). Table `gateway`: the median over the rounds [min–max] and the per-round ratios to
//! toolgate of the same pair. Then criterion measures one call on one session for each server
//! (group `gateway/one call over streamable HTTP`): table `gateway-criterion`.
//!
//! Quick mode (`TOOLGATE_BENCH_QUICK=1`, `scripts/bench.sh --quick`): 1 and 16 clients only, 3
//! rounds of 0.8 s, and a shorter criterion measurement (about 45 s in all, against about 3
//! minutes).
//!
//! The toolgate binary: `TOOLGATE_BIN` if set; otherwise this benchmark runs `cargo build
//! [--release] --bin toolgate` into its own target directory first (a no-op when it is up to
//! date), so the binary measured is the code checked out. Under `cargo test` (criterion's test
//! mode) it uses `target/debug/toolgate` as `cargo test --workspace --all-targets` leaves it
//! (building it only if it is missing), and the load shrinks to two calls per client with 1 and
//! 4 clients (answers still checked; 5 s, up to 17 s on a busy machine, mostly Python
//! importing FastMCP); the tables are rendered, not written.
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
#[path = "gateway/servers.rs"]
mod servers;
#[path = "gateway/tables.rs"]
mod tables;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use tokio::runtime::Runtime;
use toolgate_benches::harness::{
    self, Samples, by_mode, descendants_in, process_cpu, process_table, ticks_to_duration,
};

use servers::{Server, Tool, call};

const COMMAND: &str = "cargo bench -p toolgate-benches --bench gateway";
const CRITERION_GROUP: &str = "gateway/one call over streamable HTTP";

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
    /// Criterion: samples, warm-up and measurement time of each row.
    criterion: (usize, Duration, Duration),
}

impl Plan {
    const FULL: Self = Self {
        clients: &[1, 16, 64],
        warmup: Duration::from_millis(1000),
        rounds: 5,
        round: Duration::from_millis(1200),
        min_calls: 1,
        criterion: (30, Duration::from_secs(1), Duration::from_secs(3)),
    };
    /// `scripts/bench.sh --quick`: 64 clients skipped, fewer and shorter rounds.
    const QUICK: Self = Self {
        clients: &[1, 16],
        warmup: Duration::from_millis(300),
        rounds: 3,
        round: Duration::from_millis(800),
        min_calls: 1,
        criterion: (20, Duration::from_millis(500), Duration::from_millis(1500)),
    };
    /// `cargo test`: every path twice, concurrently too, answers checked.
    const TEST: Self = Self {
        clients: &[1, 4],
        warmup: Duration::ZERO,
        rounds: 1,
        round: Duration::ZERO,
        min_calls: 2,
        criterion: (10, Duration::from_millis(1), Duration::from_millis(1)),
    };

    fn current(test: bool) -> Self {
        if test {
            Self::TEST
        } else {
            by_mode(Self::QUICK, Self::FULL)
        }
    }
}

// ------------------------------------------------------------------------------------------------
// CPU time (Linux /proc)
// ------------------------------------------------------------------------------------------------

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

/// One timed round of one server: the latencies of its calls (seconds), its wall time, and the
/// CPU time spent meanwhile.
#[derive(Debug, Default)]
struct Round {
    wall: Duration,
    cpu: Cpu,
    latencies: Vec<f64>,
}

impl Round {
    fn calls(&self) -> usize {
        self.latencies.len()
    }

    fn per_second(&self) -> f64 {
        self.calls() as f64 / self.wall.as_secs_f64()
    }

    /// `d` per call, in seconds.
    fn per_call(&self, d: Duration) -> f64 {
        d.as_secs_f64() / self.calls().max(1) as f64
    }

    fn latency(&self, p: f64) -> f64 {
        Samples::new(self.latencies.iter().copied()).percentile(p)
    }
}

/// The rounds of one server at one number of clients, as samples (one per round, in order).
struct Rounds<'a>(&'a [Round]);

impl Rounds<'_> {
    fn of(&self, f: impl Fn(&Round) -> f64) -> Samples {
        Samples::new(self.0.iter().map(f))
    }
    fn rate(&self) -> Samples {
        self.of(Round::per_second)
    }
    fn p50(&self) -> Samples {
        self.of(|r| r.latency(50.0))
    }
    fn p99(&self) -> Samples {
        self.of(|r| r.latency(99.0))
    }
    fn server_cpu(&self) -> Samples {
        self.of(|r| r.per_call(r.cpu.server))
    }
    fn backend_cpu(&self) -> Samples {
        self.of(|r| r.per_call(r.cpu.backend))
    }
    fn client_cpu(&self) -> Samples {
        self.of(|r| r.per_call(r.cpu.client))
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
) -> Round {
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
                    latencies.push(t.elapsed().as_secs_f64());
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
    Round {
        wall,
        cpu: cpu.since(server_pid),
        latencies,
    }
}

/// For each number of clients: sessions with every server, a warm-up, then the rounds in
/// rotating order. Returns `rounds[level][server][round]`.
fn measure(rt: &Runtime, servers: &[Server], plan: Plan) -> Vec<Vec<Vec<Round>>> {
    let mut all = Vec::new();
    for &clients in plan.clients {
        let rounds = rt.block_on(async {
            let mut sessions = Vec::new();
            for s in servers {
                sessions.push(Sessions::open(&s.url(), clients).await);
            }
            let peers: Vec<Vec<Peer<RoleClient>>> = sessions.iter().map(Sessions::peers).collect();
            for (s, p) in servers.iter().zip(&peers) {
                load(p, s.tool, s.process.pid(), plan.warmup, plan.min_calls).await;
            }
            let mut rounds: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
            for round in 0..plan.rounds {
                // Start each round with the next server, so no server always follows the same.
                for k in 0..servers.len() {
                    let i = (round + k) % servers.len();
                    let s = &servers[i];
                    let r = load(
                        &peers[i],
                        s.tool,
                        s.process.pid(),
                        plan.round,
                        plan.min_calls,
                    )
                    .await;
                    rounds[i].push(r);
                }
            }
            for s in sessions {
                s.close().await;
            }
            rounds
        });
        all.push(rounds);
    }
    all
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

fn criterion_rows(c: &mut Criterion, rt: &Runtime, servers: &[Server], plan: Plan) {
    let sessions: Vec<Sessions> = rt.block_on(async {
        let mut all = Vec::new();
        for s in servers {
            all.push(Sessions::open(&s.url(), 1).await);
        }
        all
    });
    let mut g = c.benchmark_group(CRITERION_GROUP);
    // A call takes from a few hundred µs to several ms: flat sampling keeps the slow rows'
    // time bounded.
    let (samples, warmup, measurement) = plan.criterion;
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(samples)
        .warm_up_time(warmup)
        .measurement_time(measurement);
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
    let whole = Instant::now();
    let test = harness::test_mode();
    let plan = Plan::current(test);
    let toolgate = servers::toolgate_binary(test);
    let built = Instant::now();
    let versions = servers::peer_versions(&toolgate);
    let config_dir =
        std::env::temp_dir().join(format!("toolgate-bench-gateway-{}", std::process::id()));
    let started = Instant::now();
    let servers = servers::start_servers(&toolgate, &config_dir);
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
    let rounds = measure(&rt, &servers, plan);
    eprintln!(
        "gateway bench: measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    tables::table(&servers, plan, &rounds, &versions)
        .write()
        .expect("write the gateway table");

    // No plots unless asked for (`--plotting-backend plotters`): with the plotters backend they
    // cost seconds per row, more than a quick run's measurement.
    let mut c = Criterion::default().without_plots().configure_from_args();
    criterion_rows(&mut c, &rt, &servers, plan);
    c.final_summary();
    tables::criterion_table(&servers, plan, &versions)
        .write()
        .expect("write the gateway-criterion table");

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
        "gateway bench: servers stopped in {:.1} s; {:.0} s in all, {:.0} s after the build",
        started.elapsed().as_secs_f64(),
        whole.elapsed().as_secs_f64(),
        built.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&config_dir);
}
