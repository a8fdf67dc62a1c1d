//! The per-call cost of policy as code: one call of the local tool `greet` under one access
//! rule ("`greet` needs `admin`") written as a built-in rule, a Rego policy and a CEL
//! expression, and under one rule reading an argument ("`name` is not `root`") in the same three
//! forms, against no rule at all; the caller has the role and the argument passes, so every
//! rule is evaluated and allows.
//!
//! One table, `policy_code` (`toolgate_benches::report`), from criterion's estimates (group
//! `policy_code/greet`), each row's time minus the no-rule row's: what the rule costs a call.
//!
//! Run: `cargo bench -p toolgate-benches --bench policy_code` (`TOOLGATE_BENCH_QUICK=1` for
//! shorter criterion times). Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use serde_json::{Value, json};
use toolgate::{ToolContext, Toolset};
use toolgate_benches::harness::{self, fmt_duration, fmt_seconds};
use toolgate_benches::report::{Table, criterion_estimate};

const GROUP: &str = "policy_code/greet";

/// The rows: criterion function name, row label, and the `policy:` section (YAML, indented
/// under `policy:`); the first is the base.
const ROWS: [(&str, &str, &str); 7] = [
    ("no rule", "**no rule** (base)", "  defaults: {}\n"),
    (
        "built-in access rule",
        "built-in access rule `{tools: [greet], roles: [admin]}`",
        "  rules:\n    - {tools: [greet], roles: [admin]}\n",
    ),
    (
        "Rego access rule",
        "Rego access rule (`allow if \"admin\" in input.caller.roles`)",
        "  rules:\n    - tools: [greet]\n      rego: |\n        package bench\n        import rego.v1\n        default allow := false\n        allow if \"admin\" in input.caller.roles\n",
    ),
    (
        "CEL access rule",
        "CEL access rule (`'admin' in caller.roles`)",
        "  rules:\n    - {tools: [greet], cel: \"'admin' in caller.roles\"}\n",
    ),
    (
        "built-in argument rule",
        "built-in argument rule `{argument: name, deny_values: [root]}`",
        "  arguments:\n    - {tools: [greet], argument: name, deny_values: [root]}\n",
    ),
    (
        "Rego argument rule",
        "Rego argument rule (`deny contains \"…\" if input.arguments.name == \"root\"`)",
        "  rules:\n    - tools: [greet]\n      rego: |\n        package bench\n        import rego.v1\n        deny contains \"no root\" if input.arguments.name == \"root\"\n",
    ),
    (
        "CEL argument rule",
        "CEL argument rule (`arguments.name != 'root'`)",
        "  rules:\n    - {tools: [greet], cel: \"arguments.name != 'root'\"}\n",
    ),
];

fn toolset(policy: &str) -> Toolset {
    let yaml = format!("version: 1\npolicy:\n{policy}");
    let policy = toolgate::model::config::ToolsConfig::from_yaml_str(&yaml, "bench.yaml".as_ref())
        .expect("the bench policy loads")
        .config
        .policy;
    toolgate_benches::toolset::toolset()
        .policy(&policy)
        .build()
        .expect("toolset builds")
}

fn admin() -> ToolContext {
    ToolContext::builder()
        .caller("bench")
        .roles(["admin"])
        .build()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args = json!({"name": "ada", "times": 2});
    let call = |tools: &Toolset, args: Value, ctx: ToolContext| {
        rt.block_on(tools.call_with("greet", args, ctx))
    };
    let toolsets: Vec<Toolset> = ROWS.iter().map(|(_, _, p)| toolset(p)).collect();
    // Every rule is on: an anonymous caller, or `root`, is refused; the bench's caller passes
    // and gets the same result as with no rule.
    let base = call(&toolsets[0], args.clone(), admin()).expect("no rule");
    for ((name, _, _), tools) in ROWS.iter().zip(&toolsets).skip(1) {
        let out = call(tools, args.clone(), admin()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.content, base.content, "{name}");
        let refused = if name.contains("access") {
            call(tools, args.clone(), ToolContext::default())
        } else {
            call(tools, json!({"name": "root", "times": 1}), admin())
        };
        assert!(refused.is_err(), "{name}: the rule refuses nobody");
    }
    let mut g = c.benchmark_group(GROUP);
    for ((name, _, _), tools) in ROWS.iter().zip(&toolsets) {
        g.bench_function(*name, |b| {
            b.iter(|| black_box(call(tools, black_box(args.clone()), admin())));
        });
    }
    g.finish();
}

fn results(warm_up: Duration, measurement: Duration) -> Table {
    let mut table = Table::new(
        "policy_code",
        "one call of the local tool `greet` by a caller with role `admin`, under one rule that \
         allows it: a built-in rule, a Rego policy (regorus) and a CEL expression (cel), for an \
         access rule and for a rule on an argument; criterion, group `policy_code/greet`.",
        "cargo bench -p toolgate-benches --bench policy_code",
    )
    .columns([
        "rule",
        "time per call: criterion median [95% CI]",
        "the rule's cost per call (− no rule)",
    ]);
    let estimates: Vec<_> = ROWS
        .iter()
        .map(|(name, _, _)| criterion_estimate(&format!("{GROUP}/{name}")))
        .collect();
    for ((_, label, _), e) in ROWS.iter().zip(&estimates) {
        let cost = match (e, &estimates[0]) {
            (Some(e), Some(base)) => fmt_seconds(e.point - base.point),
            _ => "–".into(),
        };
        table.row([
            label.to_string(),
            e.map_or("–".into(), |e| e.fmt(fmt_seconds)),
            cost,
        ]);
    }
    table.note(format!(
        "Each rule is checked to refuse (an anonymous caller, `name: root`) and to give the \
         no-rule result before timing. {} warm-up, {} of measurement per row.",
        fmt_duration(warm_up),
        fmt_duration(measurement)
    ));
    table
}

fn main() {
    let (mut c, warm_up, measurement) = harness::criterion();
    bench(&mut c);
    c.final_summary();
    results(warm_up, measurement)
        .write()
        .expect("write policy_code");
}
