//! The gateway benchmark's two tables: `gateway` (the timed rounds, ratios round by round) and
//! `gateway-criterion` (one call on one session, criterion).

use toolgate_benches::harness::{self, Samples, fmt_rate, fmt_ratio, fmt_seconds, fmt_spread};
use toolgate_benches::report::{Estimate, Table, criterion_estimate};

use super::servers::{Server, Tool};
use super::{COMMAND, CRITERION_GROUP, Plan, Round, Rounds};

const COMPARED: &str = "Tool calls over MCP streamable HTTP (`POST /mcp`, sessions, SSE answers), \
four servers started by the benchmark on 127.0.0.1: **`toolgate serve`** (the release binary) \
with its built-in `calc` against a **FastMCP** 4.x server with a `calc` of the same contract \
(`benches/peers/fastmcp_calc.py`); and `toolgate serve` against **FastMCP's proxy** \
(`benches/peers/fastmcp_proxy.py`), both in front of server-everything over stdio, calling its \
`echo`. N concurrent clients (rmcp's client, each its own MCP session), each calling one call \
after the other; every answer is checked.";

/// `base ÷ row` per round, as `median [min–max]`; `base` for the base row itself.
fn ratio_cell(row: &Samples, base: &Samples, is_base: bool) -> String {
    if is_base {
        "base".into()
    } else {
        fmt_spread(&row.ratio_to(base), fmt_ratio)
    }
}

/// The table: for each number of clients, the four rows; ratios against the toolgate row of the
/// same pair (calc: rows 0 and 1; echo through a gateway: rows 2 and 3), round by round.
pub(crate) fn table(
    servers: &[Server],
    plan: Plan,
    rounds: &[Vec<Vec<Round>>],
    versions: &str,
) -> Table {
    let mut t = Table::new("gateway", COMPARED, COMMAND).columns([
        "clients",
        "server",
        "calls/s",
        "p50",
        "p99",
        "server CPU / call",
        "backend CPU / call",
        "client CPU / call",
        "calls/s: toolgate ÷ row (higher = toolgate faster)",
        "p99: row ÷ toolgate (higher = toolgate faster)",
        "server CPU: row ÷ toolgate (higher = toolgate leaner)",
    ]);
    // Lowest and highest per-round ratio toolgate calls/s ÷ FastMCP calls/s, per pair.
    let mut pair_range = [(f64::INFINITY, 0.0f64); 2];
    for (level, &clients) in rounds.iter().zip(plan.clients) {
        for (i, server) in servers.iter().enumerate() {
            let is_base = i % 2 == 0;
            let row = Rounds(&level[i]);
            let base = Rounds(&level[i - i % 2]);
            let speedup = base.rate().ratio_to(&row.rate());
            if !is_base && !speedup.is_empty() {
                let r = &mut pair_range[i / 2];
                *r = (r.0.min(speedup.min()), r.1.max(speedup.max()));
            }
            let backend = if server.tool == Tool::Echo {
                fmt_seconds(row.backend_cpu().median())
            } else {
                "–".into()
            };
            t.row([
                clients.to_string(),
                server.label.to_string(),
                fmt_spread(&row.rate(), fmt_rate),
                fmt_seconds(row.p50().median()),
                fmt_spread(&row.p99(), fmt_seconds),
                fmt_spread(&row.server_cpu(), fmt_seconds),
                backend,
                fmt_seconds(row.client_cpu().median()),
                if is_base {
                    "base".into()
                } else {
                    fmt_spread(&speedup, fmt_ratio)
                },
                ratio_cell(&row.p99(), &base.p99(), is_base),
                ratio_cell(&row.server_cpu(), &base.server_cpu(), is_base),
            ]);
        }
    }
    t.note(format!(
        "Each cell is the median over {} timed rounds of {} s per server and number of clients \
         [min–max over the rounds] (p50, backend and client CPU: the median only), after {} s of \
         warm-up. The servers take turns round by round in rotating order, so each ratio is taken \
         round by round: the row's value against toolgate's of the same pair (`calc` against \
         toolgate's `calc`, the proxy against toolgate in front of the same server-everything) in \
         the same round.",
        plan.rounds,
        plan.round.as_secs_f64(),
        plan.warmup.as_secs_f64(),
    ));
    t.note(
        "calls/s counts all clients together; p50 and p99 are the latency of one call; CPU per \
         call: server = the server process (`/proc/<pid>/stat`, 10 ms ticks), backend = the \
         server-everything (node) process behind a gateway, client = this benchmark process (all \
         the clients: rmcp's client, as much CPU per call as toolgate's server, on the same two \
         cores).",
    );
    let [calc, proxy] = pair_range;
    if calc.0.is_finite() && proxy.0.is_finite() {
        let ahead = calc.0 > 1.0 && proxy.0 > 1.0;
        t.note(format!(
            "toolgate ÷ FastMCP calls/s over every round of every number of clients: `calc` \
             {}–{}, proxy {}–{}: toolgate {} (the issue sets no goal here).",
            fmt_ratio(calc.0),
            fmt_ratio(calc.1),
            fmt_ratio(proxy.0),
            fmt_ratio(proxy.1),
            if ahead {
                "ahead in every round"
            } else {
                "NOT ahead in every round"
            }
        ));
    }
    t.note(format!("Versions: {versions}."));
    t.note(if harness::quick_mode() {
        "Quick run: 1 and 16 clients only (64 skipped), 3 rounds of 0.8 s after 0.3 s of \
         warm-up; the full run has 1, 16 and 64 clients, 5 rounds of 1.2 s."
    } else {
        "`--quick` runs 1 and 16 clients only, 3 rounds of 0.8 s."
    });
    t
}

/// The criterion table: one call on one session per server, ratios within each pair.
pub(crate) fn criterion_table(servers: &[Server], plan: Plan, versions: &str) -> Table {
    let compared = format!(
        "One tool call on one MCP session over streamable HTTP, per server (the four servers of \
         the table above), timed by criterion (group `{CRITERION_GROUP}`)."
    );
    let mut t = Table::new("gateway-criterion", &compared, COMMAND).columns([
        "server",
        "time per call: median [95% CI]",
        "row ÷ toolgate of the pair (higher = toolgate faster)",
    ]);
    let estimates: Vec<Option<Estimate>> = servers
        .iter()
        .map(|s| criterion_estimate(&format!("{CRITERION_GROUP}/{}", s.short)))
        .collect();
    for (i, (s, e)) in servers.iter().zip(&estimates).enumerate() {
        let base = estimates[i - i % 2];
        t.row([
            s.label.to_string(),
            e.map_or_else(|| "not run".into(), |e| e.fmt(fmt_seconds)),
            match (e, base) {
                _ if i % 2 == 0 => "base".into(),
                (Some(e), Some(b)) => e.ratio_to(&b).fmt(fmt_ratio),
                _ => "–".into(),
            },
        ]);
    }
    let (samples, warmup, measurement) = plan.criterion;
    t.note(format!(
        "Criterion, flat sampling: {samples} samples, {} s of warm-up and {} s of measurement per \
         row; the ratio's spread is conservative (row's low ÷ base's high to row's high ÷ base's \
         low).",
        warmup.as_secs_f64(),
        measurement.as_secs_f64()
    ));
    t.note(
        "Criterion awaits each call in `block_on` on the main thread while rmcp's client runs on \
         the runtime's workers: one more cross-thread wake-up per call than the load driver's \
         clients (spawned tasks), the same for every server. Its times are above the table's p50 \
         and its ratios narrower.",
    );
    t.note(format!("Versions: {versions}."));
    t
}
