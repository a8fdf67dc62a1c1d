//! The per-call path of a local tool, set up once for the benchmarks that measure it: the
//! criterion one (`benches/benches/pipeline.rs`, time) and the callgrind one
//! (`benches/benches/instructions.rs`, instructions).
//!
//! Four ways to call `greet` of this crate with the same arguments, each checked to give the
//! same result before anything is measured:
//! * [`Fixture::bare`]: the generated static table's `ToolSource::call` — the bare dispatch;
//! * [`Fixture::defaults`]: `Toolset::call` with the default layers (telemetry, validate,
//!   timeout);
//! * [`Fixture::every_layer`]: `Toolset::call_with` a caller with a role, under a policy that
//!   turns on every layer — access rule, argument rule, budget, tool / source / caller rate
//!   limits, circuit breaker, tool and source concurrency limits, retries, a fallback — with
//!   limits far above what a benchmark reaches, so nothing triggers; the cache off;
//! * [`Fixture::cache_hit`]: the same with the cache on: every call after the first is a hit.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::{SourceTool, ToolContext, ToolError, ToolOutput, ToolSource, Toolset};

use crate::toolset::StaticTools;

/// Every layer on, none triggering (limits far above what a bench run reaches).
const EVERY_LAYER: &str = r#"
version: 1
policy:
  defaults: {timeout_ms: 30000}
  tools:
    greet:
      rate_limit: 1000000000/s
      caller_rate_limit: 1000000000/s
      concurrency: 1000
      cost_per_call: 0.000001
      retries: 2
      idempotent: true
      fallback: {tool: add, on: [internal]}
  sources:
    local:
      source_rate_limit: 1000000000/s
      source_concurrency: 1000
      circuit_breaker: {failures: 5}
  rules:
    - {tools: [greet], roles: [user]}
  arguments:
    - {tools: [greet], argument: name, deny_values: ["forbidden*"]}
  budgets: {per_caller: 1000000000000}
"#;

fn policy(extra: &str) -> toolgate::model::config::PolicyConfig {
    let yaml = EVERY_LAYER.replace(
        "      idempotent: true\n",
        &format!("      idempotent: true\n{extra}"),
    );
    toolgate::model::config::ToolsConfig::from_yaml_str(&yaml, std::path::Path::new("bench.yaml"))
        .expect("the bench policy loads")
        .config
        .policy
}

/// The four ways to call `greet`, on one current-thread runtime, each called once already
/// (validators compiled, stacks settled, the cache filled).
pub struct Fixture {
    rt: tokio::runtime::Runtime,
    table: Arc<StaticTools>,
    greet: SourceTool,
    defaults: Toolset,
    every: Toolset,
    cached: Toolset,
    /// The arguments of every call.
    pub args: Value,
}

impl Fixture {
    /// Builds the four, calls each once and checks they all give the bare dispatch's result.
    ///
    /// # Panics
    /// When a toolset does not build or a result differs: a comparison would mean nothing.
    pub fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let table = Arc::new(StaticTools::new(&toolgate::StateMap::new()).expect("table builds"));
        let greet = table
            .tools()
            .into_iter()
            .find(|t| t.name() == "greet")
            .expect("greet is listed");
        let fixture = Self {
            rt,
            table,
            greet,
            defaults: crate::toolset::toolset().build().expect("toolset builds"),
            every: crate::toolset::toolset()
                .policy(&policy(""))
                .build()
                .expect("toolset builds"),
            cached: crate::toolset::toolset()
                .policy(&policy("      cache_ttl_ms: 600000\n"))
                .build()
                .expect("toolset builds"),
            args: json!({"name": "ada", "times": 2}),
        };
        let bare = fixture.bare(fixture.args.clone()).expect("ok");
        for (what, out) in [
            ("defaults", fixture.defaults(fixture.args.clone())),
            ("every layer", fixture.every_layer(fixture.args.clone())),
            ("cached", fixture.cache_hit(fixture.args.clone())),
            ("cache hit", fixture.cache_hit(fixture.args.clone())),
        ] {
            let mut out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
            out.meta = None;
            assert_eq!(bare, out, "{what}");
        }
        // The anonymous caller has no role: the access rule is on, really.
        assert!(
            fixture
                .rt
                .block_on(fixture.every.call("greet", fixture.args.clone()))
                .is_err()
        );
        fixture
    }

    /// The bare static dispatch.
    pub fn bare(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.rt
            .block_on(Arc::clone(&self.table).call(&self.greet, args, ToolContext::default()))
    }

    /// `Toolset::call` with the default layers.
    pub fn defaults(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.rt.block_on(self.defaults.call("greet", args))
    }

    /// `Toolset::call_with` under every layer, none triggering, cache off.
    pub fn every_layer(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.rt
            .block_on(self.every.call_with("greet", args, caller()))
    }

    /// `Toolset::call_with` under every layer, answered by the cache.
    pub fn cache_hit(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.rt
            .block_on(self.cached.call_with("greet", args, caller()))
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

/// The caller of the every-layer rows: it has the role the access rule asks for.
fn caller() -> ToolContext {
    ToolContext::builder()
        .caller("bench")
        .roles(["user"])
        .build()
}

/// Calls per measurement in the instruction-count benchmark: its counts ÷ this = one call.
pub const CALLS_PER_MEASUREMENT: usize = 100;

/// The instruction-count benchmark's functions, in row order (the first is the base), with
/// their row labels (the same rows as the `pipeline` table).
pub const INSTRUCTION_ROWS: [(&str, &str); 4] = [
    (
        "bare_static_dispatch",
        "**bare static dispatch** (`ToolSource::call` in `block_on`)",
    ),
    (
        "default_layers",
        "`Toolset::call`, default layers (telemetry, validate, timeout)",
    ),
    (
        "every_layer",
        "`Toolset::call_with`, every layer on, none triggering (cache off)",
    ),
    (
        "every_layer_cache_hit",
        "`Toolset::call_with`, every layer on, cache hit",
    ),
];

/// The `instructions` table from gungraun's JSON output (`--output-format=json`: one summary
/// per line): per row, instructions (callgrind `Ir`), estimated cycles, heap blocks and bytes
/// allocated (DHAT `TotalBlocks`, `TotalBytes`) per call, and the ratios to the bare dispatch.
///
/// # Errors
/// A line that is not JSON, or a row of [`INSTRUCTION_ROWS`] missing from the output.
pub fn instructions_table(jsonl: &str) -> Result<crate::report::Table, String> {
    use crate::harness::fmt_ratio;
    let mut metrics: std::collections::HashMap<String, std::collections::HashMap<String, f64>> =
        std::collections::HashMap::new();
    for line in jsonl.lines().filter(|l| l.trim_start().starts_with('{')) {
        let summary: Value =
            serde_json::from_str(line).map_err(|e| format!("gungraun output: {e}: {line}"))?;
        let name = summary["function_name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let row = metrics.entry(name).or_default();
        for profile in summary["profiles"].as_array().into_iter().flatten() {
            let total = &profile["data"]["total"]["metrics"];
            for key in ["Ir", "EstimatedCycles", "TotalBlocks", "TotalBytes"] {
                if let Some(v) = total[key]["values"]["new"].as_f64() {
                    row.insert(key.to_string(), v / CALLS_PER_MEASUREMENT as f64);
                }
            }
        }
    }
    let get = |row: &str, key: &str| -> Result<f64, String> {
        metrics
            .get(row)
            .and_then(|m| m.get(key))
            .copied()
            .ok_or_else(|| format!("gungraun output: no `{key}` for `{row}`"))
    };
    let mut table = crate::report::Table::new(
        "instructions",
        &format!(
            "the four calls of the `pipeline` table, {CALLS_PER_MEASUREMENT} warm calls per \
             measurement, counted under valgrind through gungraun (callgrind: instructions and \
             its cycle estimate; DHAT: heap blocks and bytes allocated), only inside the \
             benchmark function; per call."
        ),
        "cargo bench -p toolgate-benches --features callgrind --bench instructions",
    )
    .columns([
        "variant",
        "instructions per call",
        "÷ bare (lower = cheaper)",
        "estimated cycles per call",
        "÷ bare",
        "allocations per call",
        "heap bytes per call",
    ]);
    let (base_ir, base_cycles) = (
        get(INSTRUCTION_ROWS[0].0, "Ir")?,
        get(INSTRUCTION_ROWS[0].0, "EstimatedCycles")?,
    );
    for (i, (name, label)) in INSTRUCTION_ROWS.iter().enumerate() {
        let (ir, cycles) = (get(name, "Ir")?, get(name, "EstimatedCycles")?);
        let ratio = |v: f64, base: f64| {
            if i == 0 {
                "1.00× (base)".to_string()
            } else {
                fmt_ratio(v / base)
            }
        };
        table.row([
            label.to_string(),
            crate::harness::fmt_count(ir.round() as u64),
            ratio(ir, base_ir),
            crate::harness::fmt_count(cycles.round() as u64),
            ratio(cycles, base_cycles),
            format!("{:.1}", get(name, "TotalBlocks")?),
            format!("{:.0}", get(name, "TotalBytes")?),
        ]);
    }
    table.note(
        "Counts are exact for this binary and do not flap with the machine's load; they change \
         with the code, the compiler and valgrind's version. Each call's argument clone (the \
         same in every row) is included.",
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One gungraun summary line as `--output-format=json` prints it (only the fields read).
    fn line(function: &str, ir: u64, blocks: u64) -> String {
        json!({
            "function_name": function,
            "profiles": [
                {"tool": "Callgrind", "data": {"total": {"metrics": {
                    "Ir": {"values": {"new": ir}},
                    "EstimatedCycles": {"values": {"new": ir * 2}},
                }}}},
                {"tool": "DHAT", "data": {"total": {"metrics": {
                    "TotalBlocks": {"values": {"new": blocks}},
                    "TotalBytes": {"values": {"new": blocks * 64}},
                }}}},
            ],
        })
        .to_string()
    }

    #[test]
    fn the_instructions_table_gives_counts_per_call_and_ratios_to_the_bare_dispatch() {
        let jsonl = INSTRUCTION_ROWS
            .iter()
            .enumerate()
            .map(|(i, (name, _))| line(name, 100_000 * (i as u64 + 1), 800))
            .collect::<Vec<_>>()
            .join("\n");
        let md = instructions_table(&format!("gungraun: a log line\n{jsonl}\n"))
            .unwrap()
            .to_markdown();
        assert!(
            md.contains("| 1,000 | 1.00× (base) | 2,000 | 1.00× (base) | 8.0 | 512 |"),
            "{md}"
        );
        assert!(
            md.contains("| 2,000 | 2.00× | 4,000 | 2.00× | 8.0 | 512 |"),
            "{md}"
        );
    }

    #[test]
    fn a_row_missing_from_the_output_is_an_error_naming_it() {
        let e = instructions_table(&line("bare_static_dispatch", 1, 1)).unwrap_err();
        assert!(e.contains("`default_layers`"), "{e}");
    }
}
