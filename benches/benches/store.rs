//! What sharing rate limits and budgets through Redis costs per call: one call of the local tool
//! `greet` under a caller rate limit and a per-caller budget kept in the process, against the
//! same limits kept in a real `redis-server` on 127.0.0.1 (tools.yaml `store.redis`), and
//! against no limit at all, in the same run.
//!
//! Rows (group `store/greet`): no limits; caller limit + budget in the process; the same in
//! Redis (one GCRA script and one budget script per call, two round trips over loopback). The
//! limits are far above what the benchmark reaches, so nothing is refused; every row's result is
//! checked equal to the first row's before timing.
//!
//! Needs `redis-server` on `PATH` (scripts/install-peers.sh installs it); without it the Redis
//! row is left out and says why.
//!
//! Run: `cargo bench -p toolgate-benches --bench store` (`TOOLGATE_BENCH_QUICK=1` for shorter
//! criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{Value, json};
use toolgate::model::config::{RedisStore, ToolsConfig};
use toolgate::store::SharedStore;
use toolgate::{ToolContext, ToolOutput, Toolset};
use toolgate_benches::harness::{self, fmt_duration, fmt_ratio, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};

const GROUP: &str = "store/greet";

/// The rows: criterion function name and row label; the first is the base.
const ROWS: [(&str, &str); 3] = [
    (
        "no limits",
        "**no limits** (`Toolset::call_with`, default layers)",
    ),
    (
        "caller limit + budget, in the process",
        "caller rate limit + per-caller budget, in the process",
    ),
    (
        "caller limit + budget, in Redis",
        "caller rate limit + per-caller budget, in Redis (`store.redis`, loopback)",
    ),
];

/// A caller limit and a budget that a benchmark run never reaches.
const LIMITED: &str = r#"
version: 1
policy:
  tools:
    greet:
      caller_rate_limit: 1000000000/s
      cost_per_call: 0.000001
  budgets: {per_caller: 1000000000000}
"#;

/// redis-server on a free loopback port, in memory only; killed on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start() -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("redis-server: {e} (scripts/install-peers.sh installs it)"))?;
        let redis = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-server did not listen on 127.0.0.1:{port} within 10 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(redis)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    plain: Toolset,
    local: Toolset,
    /// The Redis-backed toolset and its server, or why there is none.
    shared: Result<(Toolset, Redis), String>,
    args: Value,
}

fn limited() -> toolgate::ToolsetBuilder {
    let policy = ToolsConfig::from_yaml_str(LIMITED, std::path::Path::new("bench.yaml"))
        .expect("the bench policy loads")
        .config
        .policy;
    toolgate_benches::toolset::toolset().policy(&policy)
}

fn caller() -> ToolContext {
    ToolContext::builder().caller("bench").build()
}

impl Fixture {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let shared = Redis::start().map(|redis| {
            let config: RedisStore = serde_json::from_value(
                json!({"url": format!("redis://127.0.0.1:{}", redis.port), "timeout_ms": 2000}),
            )
            .expect("store config");
            let store = SharedStore::connect(&config).expect("store");
            let tools = limited()
                .shared_store(store)
                .build()
                .expect("toolset builds");
            (tools, redis)
        });
        let f = Self {
            rt,
            plain: toolgate_benches::toolset::toolset()
                .build()
                .expect("toolset builds"),
            local: limited().build().expect("toolset builds"),
            shared,
            args: json!({"name": "ada", "times": 2}),
        };
        let base = f.call(&f.plain).expect("no limits");
        assert_eq!(f.call(&f.local).expect("in the process"), base);
        if let Ok((tools, _)) = &f.shared {
            assert_eq!(f.call(tools).expect("in Redis"), base);
        }
        f
    }

    fn call(&self, tools: &Toolset) -> Result<ToolOutput, toolgate::ToolError> {
        let mut out =
            self.rt
                .block_on(tools.call_with("greet", black_box(self.args.clone()), caller()))?;
        out.meta = None;
        Ok(out)
    }
}

fn bench(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group(GROUP);
    g.bench_function(ROWS[0].0, |b| b.iter(|| black_box(f.call(&f.plain))));
    g.bench_function(ROWS[1].0, |b| b.iter(|| black_box(f.call(&f.local))));
    if let Ok((tools, _)) = &f.shared {
        g.bench_function(ROWS[2].0, |b| b.iter(|| black_box(f.call(tools))));
    }
    g.finish();
}

fn results(f: &Fixture, warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "store",
        "one call of the local tool `greet` (same arguments, inside one current-thread \
         `block_on`) as caller `bench`, with no limit, with a caller rate limit and a per-caller \
         budget kept in the process, and with the same kept in redis-server on 127.0.0.1 \
         (`store.redis`); criterion, group `store/greet`.",
        "cargo bench -p toolgate-benches --bench store",
    )
    .columns([
        "variant",
        "time per call: criterion median [95% CI]",
        "÷ no limits (lower = cheaper) [conservative CI]",
    ]);
    let estimates: Vec<_> = ROWS
        .iter()
        .map(|(name, _)| criterion_estimate(&format!("{GROUP}/{name}")))
        .collect();
    for (i, ((_, label), e)) in ROWS.iter().zip(&estimates).enumerate() {
        let ratio = match (e, &estimates[0]) {
            _ if i == 0 => "1.00× (base)".to_string(),
            (Some(e), Some(base)) => e.ratio_to(base).fmt(fmt_ratio),
            _ => "–".into(),
        };
        table.row([
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            ratio,
        ]);
    }
    if let (Some(local), Some(shared)) = (estimates[1], estimates[2]) {
        table.note(format!(
            "Redis adds {} per call to limits kept in the process ({} their time): two \
             loopback round trips (the GCRA script, then the budget script), each bounded by \
             `store.redis.timeout_ms`.",
            fmt_seconds(shared.point - local.point),
            fmt_ratio(shared.point / local.point),
        ));
    }
    if let Err(why) = &f.shared {
        table.note(format!("No Redis row: {why}."));
    }
    table.note(format!(
        "The limits are never reached (nothing refused). {} warm-up, {} of measurement per row.",
        fmt_duration(warm_up),
        fmt_duration(measurement)
    ));
    table
}

fn main() {
    let (warm_up, measurement) = harness::by_mode(
        (Duration::from_millis(500), Duration::from_secs(2)),
        (Duration::from_secs(1), Duration::from_secs(5)),
    );
    let f = Fixture::new();
    let mut c = Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .nresamples(harness::by_mode(20_000, 100_000))
        .without_plots()
        .configure_from_args();
    bench(&mut c, &f);
    c.final_summary();
    results(&f, warm_up, measurement)
        .write()
        .expect("write store");
}
