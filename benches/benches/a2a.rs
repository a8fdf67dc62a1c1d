//! Calls to a remote A2A 1.0 agent: `echo` of the echo agent `runtime/tests/peers/a2a_echo_v1.py`
//! (PyPI a2a-sdk 1.3 server, JSON-RPC binding, uvicorn), two clients in one run, against the same
//! agent process (started once):
//!
//! * **toolgate**: `Toolset::call("echo1.echo", {"text": "hello"})` on a toolset built from a
//!   tools.yaml `a2a:` entry (`ToolsetBuilder::a2a_agents_from_yaml`, `streaming: false`): the
//!   whole public path (name resolution, argument validation, a fresh `ToolContext`, the timeout
//!   and panic guards, the blocking `SendMessage` on a pooled reqwest connection, the completed
//!   task's artifact converted to a `ToolOutput`);
//! * **a2a-sdk Python client**: `benches/peers/a2a_client_bench.py`, the SDK's own client
//!   (`a2a.client.create_client`, `ClientConfig(streaming=False)`, one httpx connection pool)
//!   sending the same message (one text part `hello`, metadata `{"skill": "echo"}`, blocking).
//!
//! The agent answers both with a completed task whose artifact is `echo: hello`; every answer
//! is checked, on both sides, before and during timing. Two tables (`toolgate_benches::report`):
//! `a2a`, measured with a plain clock: sequential calls (1 caller) and 16 callers at once
//! sharing one client, in rounds whose order alternates (toolgate, Python; Python, toolgate; …)
//! so that drift on a shared machine hits both alike. The Python client is one long-lived
//! process driven over stdin (`--stdin`: one JSON command per round, one JSON line of results
//! back), so its rounds interleave with toolgate's. Reported per round: calls/s, p50, client CPU
//! per call (this process for toolgate, the Python process for the SDK), the agent's CPU per
//! call (`/proc/<pid>/stat`, 10 ms resolution), and the ratios to the Python client of the same
//! round. Then `a2a-criterion`: criterion measures one sequential call of each (group
//! `a2a/echo SendMessage (blocking)`; the Python row times itself, `iter_custom`).
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench a2a`
//! (`TOOLGATE_BENCH_QUICK=1` for fewer calls and shorter criterion times). Under `cargo test`
//! every path makes a handful of calls and nothing is written. Results: BENCHMARKS.md, "Remote
//! A2A: toolgate vs the a2a-sdk Python client".

// (peers.rs allows dead code itself: most of it is for other peers.)
#[path = "../../runtime/tests/support/peers.rs"]
mod peers;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use toolgate::{SourceState, Toolset};
use toolgate_benches::harness::{
    self, Round, RoundRow as Row, Samples, fmt_duration, fmt_rate, fmt_ratio, fmt_seconds,
    fmt_spread,
};
use toolgate_benches::report::Table;

/// The tool called, its arguments, and what it must answer.
const TOOL: &str = "echo1.echo";
const EXPECTED: &str = "echo: hello";

const COMMAND: &str = "cargo bench -p toolgate-benches --bench a2a";

/// The ratio cell of the row the others are divided by.
const BASE: &str = "1.00× (base)";

fn args() -> Value {
    json!({"text": "hello"})
}

/// How many calls each measurement makes, by mode.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Untimed calls per client before each table block (sequential, then concurrent).
    warmup: usize,
    /// Sequential calls per client, split into `rounds`.
    sequential: usize,
    /// Calls per client with `CALLERS` callers at once, split into `rounds`.
    concurrent: usize,
    /// Rounds per block, order alternating.
    rounds: usize,
    /// Criterion's warm-up and measurement time per row.
    warm_up: Duration,
    measurement: Duration,
}

/// Callers at once in the concurrent rows.
const CALLERS: usize = 16;

impl Counts {
    const FULL: Self = Self {
        warmup: 200,
        sequential: 1600,
        concurrent: 3200,
        rounds: 8,
        warm_up: Duration::from_secs(1),
        measurement: Duration::from_secs(5),
    };
    /// `TOOLGATE_BENCH_QUICK=1`: the same rows, a fifth of the calls.
    const QUICK: Self = Self {
        warmup: 30,
        sequential: 320,
        concurrent: 512,
        rounds: 4,
        warm_up: Duration::from_millis(300),
        measurement: Duration::from_secs(1),
    };
    /// `cargo test`: every path a few times (two calls per caller concurrently), answers checked.
    const TEST: Self = Self {
        warmup: 1,
        sequential: 3,
        concurrent: 2 * CALLERS,
        rounds: 1,
        warm_up: Duration::from_millis(1),
        measurement: Duration::from_millis(1),
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
// toolgate
// ------------------------------------------------------------------------------------------------

/// A toolset whose one source is the agent at `url`, as tools.yaml declares it, its card read.
async fn toolgate_connect(url: &str) -> Toolset {
    let yaml = format!(
        "# toolgate in front of the A2A 1.0 echo agent (benches/benches/a2a.rs)\n\
         version: 1\n\
         tools:\n  \
           a2a:\n    \
             - id: echo1\n      \
               url: {url}\n      \
               streaming: false\n",
        url = json!(url),
    );
    let tools = Toolset::builder()
        .a2a_agents_from_yaml(&yaml)
        .build()
        .expect("toolset builds");
    let statuses = tools.discover(1).await;
    assert!(
        statuses.iter().all(|s| s.state == SourceState::Ready),
        "the echo agent's card was not read: {statuses:?}"
    );
    assert!(
        tools.describe(TOOL).is_some(),
        "the echo agent offers no `{TOOL}`"
    );
    tools
}

async fn toolgate_echo(tools: &Toolset) {
    let text = tools
        .call(TOOL, args())
        .await
        .expect("toolgate: echo1.echo")
        .text_joined();
    assert_eq!(text, EXPECTED, "toolgate's answer");
}

// ------------------------------------------------------------------------------------------------
// The a2a-sdk Python client (benches/peers/a2a_client_bench.py --stdin)
// ------------------------------------------------------------------------------------------------

/// The Python client process: one SDK client, rounds on request.
struct PythonClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// `{"sdk": …, "python": …}` as it reported them.
    facts: Value,
}

impl PythonClient {
    fn start(url: &str) -> Self {
        let python = peers::a2a_v1_python();
        let script = peers::repo_root().join("benches/peers/a2a_client_bench.py");
        assert!(script.is_file(), "missing {}", script.display());
        let mut child = Command::new(&python)
            .arg(&script)
            .arg(url)
            .arg("--stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", python.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("read the Python client's first line");
        let facts = line
            .strip_prefix("READY ")
            .and_then(|rest| serde_json::from_str(rest).ok())
            .unwrap_or_else(|| panic!("the Python client did not start: {line:?}"));
        Self {
            child,
            stdin,
            stdout,
            facts,
        }
    }

    /// `calls` calls, `callers` at once; the script checks every answer and exits if one is
    /// wrong, which fails this read.
    fn run(&mut self, callers: usize, calls: usize) -> Round {
        writeln!(
            self.stdin,
            "{}",
            json!({"callers": callers, "calls": calls})
        )
        .and_then(|()| self.stdin.flush())
        .expect("send the Python client a round");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read the Python client's round");
        let result: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            panic!("the Python client failed a round (see its stderr above): {line:?}")
        });
        let secs = |key: &str| {
            Duration::from_secs_f64(
                result[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no {key} in {line}")),
            )
        };
        let latencies = result["latencies_us"]
            .as_array()
            .expect("latencies_us")
            .iter()
            .map(|v| Duration::from_secs_f64(v.as_f64().expect("a latency") / 1e6))
            .collect();
        Round {
            wall: secs("wall_s"),
            client_cpu: secs("cpu_s"),
            peer_cpu: Duration::ZERO,
            latencies,
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------------------------------------
// Measuring
// ------------------------------------------------------------------------------------------------

/// `total` toolgate calls made by `callers` tasks at once (each `total / callers` in a row),
/// sharing one toolset.
async fn toolgate_run(tools: &Toolset, callers: usize, total: usize) -> Round {
    let per_caller = total.div_ceil(callers);
    let start = Arc::new(tokio::sync::Barrier::new(callers + 1));
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let tools = tools.clone();
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let mut latencies = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    toolgate_echo(&tools).await;
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let cpu = harness::process_cpu();
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
    Round {
        wall,
        client_cpu: harness::process_cpu().saturating_sub(cpu),
        peer_cpu: Duration::ZERO,
        latencies,
    }
}

/// Who is measured in a round.
#[derive(Debug, Clone, Copy)]
enum Client {
    Toolgate,
    Python,
}

/// The two clients and the agent they call.
struct Clients<'a> {
    rt: &'a Runtime,
    tools: &'a Toolset,
    python: &'a mut PythonClient,
    agent_pid: u32,
}

impl Clients<'_> {
    /// One round of one client, with the agent's CPU time meanwhile.
    fn round(&mut self, client: Client, callers: usize, calls: usize) -> Round {
        let agent = harness::pid_cpu(self.agent_pid);
        let mut round = match client {
            Client::Toolgate => self.rt.block_on(toolgate_run(self.tools, callers, calls)),
            Client::Python => self.python.run(callers, calls),
        };
        round.peer_cpu = harness::pid_cpu(self.agent_pid).saturating_sub(agent);
        round
    }

    /// For `callers`: a warm-up of each client, then the rounds in alternating order. Returns
    /// (toolgate, Python).
    fn measure(&mut self, callers: usize, calls: usize, counts: Counts) -> (Row, Row) {
        let warmup = counts.warmup.max(callers);
        self.round(Client::Toolgate, callers, warmup);
        self.round(Client::Python, callers, warmup);
        let per_round = (calls / counts.rounds).max(callers);
        let (mut t, mut p) = (Row::default(), Row::default());
        for r in 0..counts.rounds {
            let order = if r % 2 == 0 {
                [Client::Toolgate, Client::Python]
            } else {
                [Client::Python, Client::Toolgate]
            };
            for client in order {
                let round = self.round(client, callers, per_round);
                match client {
                    Client::Toolgate => t.add(round),
                    Client::Python => p.add(round),
                }
            }
        }
        (t, p)
    }
}

// ------------------------------------------------------------------------------------------------
// Tables
// ------------------------------------------------------------------------------------------------

/// The versions of the Python side, for the notes.
fn versions(python: &PythonClient) -> String {
    let version = |package: &str| {
        Command::new(peers::a2a_v1_python())
            .args([
                "-c",
                &format!("import importlib.metadata as m; print(m.version('{package}'))"),
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "Python {}, a2a-sdk {}, httpx {}, uvicorn {}",
        python.facts["python"].as_str().unwrap_or("?"),
        python.facts["sdk"].as_str().unwrap_or("?"),
        version("httpx"),
        version("uvicorn"),
    )
}

/// The plain-clock table: for 1 and [`CALLERS`] callers, toolgate's row and the Python client's,
/// and the per-round ratios to the Python client.
fn table(blocks: &[(usize, Row, Row)], counts: Counts, versions: &str) -> Table {
    let mut table = Table::new(
        "a2a",
        "calls of the `echo` skill of the A2A 1.0 echo agent (a2a-sdk server, JSON-RPC, \
         uvicorn; one process shared by both clients): toolgate's `Toolset::call` vs the \
         a2a-sdk Python client's `send_message`, blocking `SendMessage`, 1 caller and 16 callers \
         at once sharing one client, in rounds whose order alternates.",
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
        "agent CPU per call [min–max]",
        "calls/s ÷ the Python client's, per round (higher = faster)",
        "client CPU ÷ the Python client's, per round (lower = leaner)",
    ]);
    for (callers, t, p) in blocks {
        for (name, row) in [
            ("toolgate `Toolset::call`", t),
            ("a2a-sdk Python client", p),
        ] {
            let ratio = |of: &dyn Fn(&Row) -> &Samples| {
                if std::ptr::eq(row, p) {
                    BASE.to_string()
                } else {
                    fmt_spread(&of(row).ratio_to(of(p)), fmt_ratio)
                }
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
                ratio(&|r| &r.rates),
                ratio(&|r| &r.client_cpu),
            ]);
        }
    }
    table.note(format!(
        "{} rounds per block, the order alternating; {} untimed warm-up calls per client before \
         each block. Client CPU: toolgate = this process (`CLOCK_PROCESS_CPUTIME_ID`), Python = \
         the client's process (`time.process_time()`); agent CPU: the echo agent's process \
         (`/proc/<pid>/stat`, 10 ms resolution).",
        counts.rounds, counts.warmup
    ));
    table.note(format!("Versions: {versions}."));
    table
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

const GROUP: &str = "a2a/echo SendMessage (blocking)";
const CRITERION_ROWS: [&str; 2] = ["toolgate: Toolset::call", "a2a-sdk Python client"];

fn criterion_rows(c: &mut Criterion, rt: &Runtime, tools: &Toolset, python: &mut PythonClient) {
    let mut g = c.benchmark_group(GROUP);
    // A call takes a few ms: flat sampling keeps every row's time bounded.
    g.sampling_mode(SamplingMode::Flat).sample_size(30);
    g.bench_function(CRITERION_ROWS[0], |b| {
        b.to_async(rt).iter(|| toolgate_echo(tools));
    });
    g.bench_function(CRITERION_ROWS[1], |b| {
        b.iter_custom(|iters| {
            let calls = usize::try_from(iters).expect("iterations fit usize");
            python.run(1, calls).wall
        });
    });
    g.finish();
}

fn criterion_table(counts: Counts) -> Table {
    let mut table = Table::new(
        "a2a-criterion",
        "one sequential blocking `SendMessage` to the A2A echo agent under criterion (group \
         `a2a/echo SendMessage (blocking)`): toolgate's `Toolset::call` vs the a2a-sdk Python \
         client (which times its own calls: `iter_custom`), one row after the other (not \
         interleaved).",
        COMMAND,
    )
    .columns([
        "row",
        "time per call: criterion median [95% CI]",
        "÷ the Python client's (lower = faster) [conservative CI]",
    ]);
    table.criterion_rows(GROUP, &CRITERION_ROWS, 1, BASE);
    table.note(format!(
        "30 flat samples per row, {} warm-up, {} of measurement.",
        fmt_duration(counts.warm_up),
        fmt_duration(counts.measurement),
    ));
    table
}

fn main() {
    let counts = Counts::for_mode();
    let started = Instant::now();
    let agent = peers::a2a_echo("v1", &[]);
    let url = agent.url("");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let tools = rt.block_on(toolgate_connect(&url));
    let mut python = PythonClient::start(&url);
    eprintln!(
        "a2a bench: agent and clients ready after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Both clients answer right before anything is timed (the Python script checks its own).
    rt.block_on(toolgate_echo(&tools));
    python.run(1, 1);

    let versions = versions(&python);
    let mut clients = Clients {
        rt: &rt,
        tools: &tools,
        python: &mut python,
        agent_pid: agent.pid(),
    };
    let mut blocks = Vec::new();
    for (callers, calls) in [(1, counts.sequential), (CALLERS, counts.concurrent)] {
        let (t, p) = clients.measure(callers, calls, counts);
        blocks.push((callers, t, p));
    }
    table(&blocks, counts, &versions)
        .write()
        .expect("write a2a");

    // No plots: the tables are the report, and plotting takes seconds per row here.
    let mut c = Criterion::default()
        .warm_up_time(counts.warm_up)
        .measurement_time(counts.measurement)
        .nresamples(harness::by_mode(20_000, 100_000))
        .without_plots()
        .configure_from_args();
    criterion_rows(&mut c, &rt, &tools, &mut python);
    c.final_summary();
    criterion_table(counts)
        .write()
        .expect("write a2a-criterion");

    // Both clients are gone before the agent stops (dropping `agent` kills its process group).
    python.stop();
    rt.block_on(tools.close());
    drop(rt);
    drop(agent);
    eprintln!("a2a bench: {:.1} s", started.elapsed().as_secs_f64());
}
