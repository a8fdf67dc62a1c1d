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
//! is checked, on both sides, before and during timing. `main` first prints a markdown table
//! measured with a plain clock: sequential calls (1 caller) and 16 callers at once sharing one
//! client, in rounds whose order rotates (toolgate, Python; Python, toolgate; …) so that drift on
//! a shared machine hits both alike. The Python client is one long-lived process driven over
//! stdin (`--stdin`: one JSON command per round, one JSON line of results back), so its rounds
//! interleave with toolgate's. Reported: calls/s (median of the rounds and their range), p50 and
//! p99 latency, client CPU per call (this process for toolgate, the Python process for the
//! SDK), the agent's CPU per call (`/proc/<pid>/stat`, 10 ms resolution), and the ratio
//! toolgate ÷ Python client. Then criterion measures one sequential call of each (group
//! `a2a/echo SendMessage (blocking)`; the Python row times itself, `iter_custom`).
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench a2a`.
//! Under `cargo test` (criterion's test mode: no `--bench`, or `--test`) every path makes a
//! handful of calls. Results and ratios: BENCHMARKS.md, "Remote A2A: toolgate vs the a2a-sdk
//! Python client".

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

/// The tool called, its arguments, and what it must answer.
const TOOL: &str = "echo1.echo";
const EXPECTED: &str = "echo: hello";

fn args() -> Value {
    json!({"text": "hello"})
}

/// How many calls each measurement makes.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Untimed calls per client before each table block (sequential, then concurrent).
    warmup: usize,
    /// Sequential calls per client, split into `rounds`.
    sequential: usize,
    /// Calls per client with `CALLERS` callers at once, split into `rounds`.
    concurrent: usize,
    /// Rounds per block, order rotating.
    rounds: usize,
}

/// Callers at once in the concurrent rows.
const CALLERS: usize = 16;

impl Counts {
    const BENCH: Self = Self {
        warmup: 200,
        sequential: 2000,
        concurrent: 4096,
        rounds: 8,
    };
    /// `cargo test`: every path a few times (two calls per caller concurrently), answers checked.
    const TEST: Self = Self {
        warmup: 1,
        sequential: 3,
        concurrent: 2 * CALLERS,
        rounds: 1,
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
    fn run(&mut self, callers: usize, calls: usize) -> Stats {
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
        Stats {
            wall: secs("wall_s"),
            client_cpu: secs("cpu_s"),
            agent_cpu: Duration::ZERO,
            latencies,
            rates: Vec::new(),
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

/// The CPU time this process has used so far, all threads (toolgate's side of every call).
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

/// The CPU time process `pid` has used so far (`/proc/<pid>/stat`, utime + stime; 10 ms
/// resolution).
fn pid_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // pid (comm) state … utime stime: fields 14 and 15, after a comm that may hold spaces.
    let ticks: u64 = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            let fields: Vec<&str> = rest.split_whitespace().collect();
            [11, 12]
                .iter()
                .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
                .sum()
        })
        .unwrap_or(0);
    // SAFETY: sysconf reads a constant.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    Duration::from_nanos(ticks * 1_000_000_000 / hz.max(1))
}

/// Latencies of a series of calls, the wall time they took, the CPU time the client and the
/// agent spent meanwhile, and the calls/s of every round merged in.
#[derive(Debug, Default)]
struct Stats {
    wall: Duration,
    client_cpu: Duration,
    agent_cpu: Duration,
    latencies: Vec<Duration>,
    rates: Vec<f64>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        self.rates.push(other.per_second());
        self.wall += other.wall;
        self.client_cpu += other.client_cpu;
        self.agent_cpu += other.agent_cpu;
        self.latencies.extend(other.latencies);
    }

    fn calls(&self) -> usize {
        self.latencies.len()
    }

    /// All calls over all wall time.
    fn per_second(&self) -> f64 {
        self.calls() as f64 / self.wall.as_secs_f64()
    }

    fn per_call(&self, d: Duration) -> Duration {
        d / self.calls().max(1) as u32
    }

    /// The median of the rounds' calls/s, and their minimum and maximum.
    fn rate_spread(&self) -> (f64, f64, f64) {
        let mut r = self.rates.clone();
        r.sort_by(f64::total_cmp);
        let n = r.len();
        let median = if n % 2 == 1 {
            r[n / 2]
        } else {
            (r[n / 2 - 1] + r[n / 2]) / 2.0
        };
        (median, r[0], r[n - 1])
    }

    /// Nearest-rank percentile (`p` in 0..=100).
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }
}

/// `total` toolgate calls made by `callers` tasks at once (each `total / callers` in a row),
/// sharing one toolset.
async fn toolgate_run(tools: &Toolset, callers: usize, total: usize) -> Stats {
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
    let cpu = process_cpu();
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
    Stats {
        wall,
        client_cpu: process_cpu().saturating_sub(cpu),
        latencies,
        ..Stats::default()
    }
}

/// Who is measured in a round.
#[derive(Debug, Clone, Copy)]
enum Client {
    Toolgate,
    Python,
}

/// One round of one client, with the agent's CPU time meanwhile.
fn round(
    rt: &Runtime,
    tools: &Toolset,
    python: &mut PythonClient,
    agent_pid: u32,
    client: Client,
    callers: usize,
    calls: usize,
) -> Stats {
    let agent = pid_cpu(agent_pid);
    let mut stats = match client {
        Client::Toolgate => rt.block_on(toolgate_run(tools, callers, calls)),
        Client::Python => python.run(callers, calls),
    };
    stats.agent_cpu = pid_cpu(agent_pid).saturating_sub(agent);
    stats
}

/// For `callers`: a warm-up of each client, then the rounds in rotating order. Returns
/// (toolgate, Python).
fn measure(
    rt: &Runtime,
    tools: &Toolset,
    python: &mut PythonClient,
    agent_pid: u32,
    callers: usize,
    calls: usize,
    counts: Counts,
) -> (Stats, Stats) {
    let warmup = counts.warmup.max(callers);
    round(
        rt,
        tools,
        python,
        agent_pid,
        Client::Toolgate,
        callers,
        warmup,
    );
    round(
        rt,
        tools,
        python,
        agent_pid,
        Client::Python,
        callers,
        warmup,
    );
    let per_round = calls / counts.rounds;
    let (mut t, mut p) = (Stats::default(), Stats::default());
    for r in 0..counts.rounds {
        let order = if r % 2 == 0 {
            [Client::Toolgate, Client::Python]
        } else {
            [Client::Python, Client::Toolgate]
        };
        for client in order {
            let s = round(rt, tools, python, agent_pid, client, callers, per_round);
            match client {
                Client::Toolgate => t.merge(s),
                Client::Python => p.merge(s),
            }
        }
    }
    (t, p)
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

fn machine(python: &PythonClient) -> String {
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
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let uvicorn = Command::new(peers::a2a_v1_python())
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('uvicorn'))",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "{cores} cores, {cpu}; load average {load}; Python {}, a2a-sdk {}, uvicorn {uvicorn}",
        python.facts["python"].as_str().unwrap_or("?"),
        python.facts["sdk"].as_str().unwrap_or("?"),
    )
}

/// The markdown table: for 1 and [`CALLERS`] callers, toolgate's row and the Python client's,
/// and the ratio toolgate ÷ Python.
fn report(blocks: &[(usize, Stats, Stats)], counts: Counts, machine: &str) {
    println!();
    println!(
        "## a2a/echo SendMessage (blocking): toolgate vs the a2a-sdk Python client ({machine})"
    );
    println!();
    println!(
        "| callers | client | calls | calls/s (all) | calls/s: median of rounds [min–max] | p50 | p99 | client CPU / call | agent CPU / call | calls/s toolgate ÷ Python (median of rounds) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (callers, t, p) in blocks {
        let (tm, _, _) = t.rate_spread();
        let (pm, _, _) = p.rate_spread();
        for (name, s) in [
            ("toolgate `Toolset::call`", t),
            ("a2a-sdk Python client", p),
        ] {
            let (median, min, max) = s.rate_spread();
            let ratio = if std::ptr::eq(s, t) {
                format!("**{:.2}**", tm / pm)
            } else {
                "–".into()
            };
            println!(
                "| {callers} | {name} | {} | {} | {} [{}–{}] | {} | {} | {} | {} | {ratio} |",
                s.calls(),
                fmt_rate(s.per_second()),
                fmt_rate(median),
                fmt_rate(min),
                fmt_rate(max),
                fmt_duration(s.percentile(50.0)),
                fmt_duration(s.percentile(99.0)),
                fmt_duration(s.per_call(s.client_cpu)),
                fmt_duration(s.per_call(s.agent_cpu)),
            );
        }
    }
    println!();
    println!(
        "({} rounds per row, order alternating; {} warm-up calls per client before each block; client CPU: toolgate = this process, Python = the client's process; agent CPU: the echo agent's process)",
        counts.rounds, counts.warmup
    );
    println!();
}

// ------------------------------------------------------------------------------------------------
// Criterion
// ------------------------------------------------------------------------------------------------

fn criterion_rows(c: &mut Criterion, rt: &Runtime, tools: &Toolset, python: &mut PythonClient) {
    let mut g = c.benchmark_group("a2a/echo SendMessage (blocking)");
    // A call takes a few ms: flat sampling keeps every row's time bounded.
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("toolgate: Toolset::call", |b| {
        b.to_async(rt).iter(|| toolgate_echo(tools));
    });
    g.bench_function("a2a-sdk Python client", |b| {
        b.iter_custom(|iters| {
            let calls = usize::try_from(iters).expect("iterations fit usize");
            python.run(1, calls).wall
        });
    });
    g.finish();
}

fn main() {
    let counts = if test_mode() {
        Counts::TEST
    } else {
        Counts::BENCH
    };
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

    let machine = machine(&python);
    let mut blocks = Vec::new();
    for (callers, calls) in [(1, counts.sequential), (CALLERS, counts.concurrent)] {
        let (t, p) = measure(
            &rt,
            &tools,
            &mut python,
            agent.pid(),
            callers,
            calls,
            counts,
        );
        blocks.push((callers, t, p));
    }
    report(&blocks, counts, &machine);

    let mut c = Criterion::default().configure_from_args();
    criterion_rows(&mut c, &rt, &tools, &mut python);
    c.final_summary();

    // Both clients are gone before the agent stops (dropping `agent` kills its process group).
    python.stop();
    rt.block_on(tools.close());
    drop(rt);
    drop(agent);
}
