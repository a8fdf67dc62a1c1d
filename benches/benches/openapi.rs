//! OpenAPI conversion: toolgate's `toolgate_model::openapi` side by side with FastMCP's
//! `FastMCP.from_openapi` (PyPI `fastmcp` 4.x), in one run, on the two big vendored documents
//! (GitHub, JSON, 13 MB; Stripe, YAML, 4 MB).
//!
//! toolgate, in this process:
//!
//! * **parse**: `Document::from_file` (read, JSON or YAML into a `serde_json::Value`, the
//!   version check);
//! * **convert**: `convert(&doc, &ConvertOptions::default())` (every path × method to a tool:
//!   parameters and bodies merged into one input schema, `$ref`s resolved into per-tool `$defs`,
//!   schemas normalised to JSON Schema 2020-12, output schemas, names, servers, security);
//! * **convert, build's name length**: the same with `max_name_len` = 64 − `{id}__`, what
//!   `ConvertOptions::for_source` gives a prefixed source (`toolgate_codegen` and the runtime
//!   loader call it so);
//! * **convert + export check**: the conversion, then what the build also checks for every tool
//!   (`toolgate_codegen`'s `check_exports`): the tool exported as MCP, OpenAI and Anthropic
//!   definitions and each definition checked against its dialect's rules;
//! * **total**: parse + convert + export check (the sum of the repetition's parse and convert +
//!   export check).
//!
//! FastMCP, by `benches/peers/fastmcp_openapi.py` run once per round (a fresh interpreter, its
//! import not timed): the parse (`json.loads` / PyYAML's `CSafeLoader`),
//! `FastMCP.from_openapi(spec, client)` and `list_tools()` (FastMCP builds its tools lazily: the
//! listing is where the MCP definitions are made).
//!
//! A round: one FastMCP run, then two repetitions of each toolgate measurement (their mean is
//! the round's toolgate time), so that drift on a shared machine hits both alike; 3 rounds for
//! GitHub, 2 for Stripe. Table `openapi`: the median over the rounds [min–max], and FastMCP ÷
//! toolgate round by round. Criterion also times toolgate's four measurements first (group
//! `openapi/<doc>`, 10 flat samples): table `openapi-criterion`.
//!
//! Quick mode (`TOOLGATE_BENCH_QUICK=1`, `scripts/bench.sh --quick`): GitHub only, one round,
//! criterion without the export check row (about 25 s, against about 4 minutes).
//!
//! Under `cargo test` (criterion's test mode) each criterion benchmark runs once on both
//! documents, FastMCP and the rounds are skipped and the tables are rendered empty, not written
//! (about 8 s).
//! Without the venv (`.peers/venv-fastmcp`, made by `scripts/install-peers.sh`) the FastMCP part
//! is skipped with a message and a note; toolgate's rows run.
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench openapi`.
//! Results: BENCHMARKS.md, "OpenAPI conversion: toolgate vs FastMCP from_openapi".

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use serde_json::Value;
use toolgate::model::dialect::{Dialect, ToolSchema, check::check, export};
use toolgate::model::names::exported_name;
use toolgate::model::openapi::{Conversion, ConvertOptions, Document, convert};
use toolgate_benches::harness::{self, Samples, by_mode, fmt_ratio, fmt_seconds, fmt_spread};
use toolgate_benches::report::{Estimate, Table, criterion_estimate};

const COMMAND: &str = "cargo bench -p toolgate-benches --bench openapi";

/// One vendored document.
struct Doc {
    /// The source id a tools.yaml would give it (the build's prefix).
    id: &'static str,
    label: &'static str,
    /// Relative to the repository root.
    path: &'static str,
    /// Rounds (FastMCP runs) in a full run; quick mode runs GitHub only, one round.
    rounds: usize,
}

const DOCS: [Doc; 2] = [
    Doc {
        id: "github",
        label: "GitHub",
        path: "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json",
        rounds: 3,
    },
    Doc {
        id: "stripe",
        label: "Stripe",
        path: "tests/specs/stripe/stripe-spec3-2023-09-12.yaml",
        // FastMCP takes ~40 s a run on Stripe: two rounds keep the suite within 30 minutes.
        rounds: 2,
    },
];

/// The documents of this run and their rounds: GitHub only, one round, in quick mode; GitHub
/// only, no round (the tables rendered empty) in test mode.
fn plan(test: bool) -> Vec<(&'static Doc, usize)> {
    if test {
        vec![(&DOCS[0], 0)]
    } else if harness::quick_mode() {
        vec![(&DOCS[0], 1)]
    } else {
        DOCS.iter().map(|d| (d, d.rounds)).collect()
    }
}

/// toolgate repetitions of each measurement per round (their mean is the round's value).
const TOOLGATE_PER_ROUND: usize = 2;
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ is inside the repository")
        .to_path_buf()
}

// ------------------------------------------------------------------------------------------------
// toolgate's side
// ------------------------------------------------------------------------------------------------

/// The options a prefixed source `id` gets (`ConvertOptions::for_source`): the name length left
/// by `{id}__`.
fn build_options(id: &str) -> ConvertOptions {
    ConvertOptions {
        max_name_len: 64usize.saturating_sub(id.len() + 2),
        ..ConvertOptions::default()
    }
}

/// What the build checks for every tool besides the conversion (`toolgate_codegen`'s
/// `check_exports`): exported as MCP, OpenAI and Anthropic, each definition checked. Returns
/// the number of tools that fail (0 for both documents).
fn export_check(conversion: &Conversion, id: &str) -> usize {
    let mut failures = 0;
    for op in &conversion.tools {
        let full = format!("{id}.{}", op.name);
        let name = exported_name(&full);
        let view = ToolSchema {
            name: &name,
            description: &op.description,
            input_schema: &op.input_schema,
            output_schema: op.output_schema.as_ref(),
            annotations: None,
        };
        let ok = [Dialect::Mcp, Dialect::OpenAi, Dialect::Anthropic]
            .into_iter()
            .all(|dialect| export(dialect, &view).is_ok_and(|def| check(dialect, &def).is_empty()));
        if !ok {
            failures += 1;
        }
    }
    failures
}

/// The toolgate measurements of the table, in order; the first four are criterion's rows too.
const MEASURES: [&str; 5] = [
    "parse",
    "convert",
    "convert, build's name length",
    "convert + export check",
    "total: parse + convert + export check",
];

/// One repetition of every toolgate measurement of `doc`: seconds, in [`MEASURES`] order.
fn toolgate_once(path: &Path, id: &str, doc: &Document) -> [f64; 5] {
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let parse = time(&mut || {
        black_box(Document::from_file(path).expect("parse"));
    });
    let conv = time(&mut || {
        black_box(convert(doc, &ConvertOptions::default()).expect("convert"));
    });
    let conv_build = time(&mut || {
        black_box(convert(doc, &build_options(id)).expect("convert"));
    });
    let conv_check = time(&mut || {
        let c = convert(doc, &build_options(id)).expect("convert");
        black_box(export_check(&c, id));
    });
    [parse, conv, conv_build, conv_check, parse + conv_check]
}

/// How many of [`MEASURES`] criterion times: the first three in quick mode (the export check's
/// 10 samples take 10–20 s), else four.
fn criterion_measures() -> usize {
    by_mode(3, 4)
}

fn criterion_rows(c: &mut Criterion, root: &Path, docs: &[(&Doc, usize)]) {
    // 0.1–1 s an iteration: flat sampling, 10 samples (criterion's least), one iteration each.
    let (warmup, measurement) = by_mode(
        (Duration::from_millis(300), Duration::from_secs(1)),
        (Duration::from_millis(500), Duration::from_secs(1)),
    );
    for (d, _) in docs {
        let path = root.join(d.path);
        let doc = Document::from_file(&path).expect("parse");
        let mut g = c.benchmark_group(format!("openapi/{}", d.label));
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(warmup)
            .measurement_time(measurement);
        g.bench_function(MEASURES[0], |b| {
            b.iter(|| Document::from_file(&path).expect("parse"));
        });
        g.bench_function(MEASURES[1], |b| {
            b.iter(|| convert(&doc, &ConvertOptions::default()).expect("convert"));
        });
        let options = build_options(d.id);
        g.bench_function(MEASURES[2], |b| {
            b.iter(|| convert(&doc, &options).expect("convert"));
        });
        if criterion_measures() > 3 {
            g.bench_function(MEASURES[3], |b| {
                b.iter(|| {
                    let conversion = convert(&doc, &options).expect("convert");
                    export_check(&conversion, d.id)
                });
            });
        }
        g.finish();
    }
}

// ------------------------------------------------------------------------------------------------
// FastMCP's side
// ------------------------------------------------------------------------------------------------

/// One run of `fastmcp_openapi.py` on one document (seconds).
#[derive(Debug, Clone)]
struct PeerRun {
    parse: f64,
    from_openapi: f64,
    list_tools: f64,
    tools: u64,
    operations: u64,
}

impl PeerRun {
    /// FastMCP's measurements matching [`MEASURES`] (`None`: no counterpart).
    fn measures(&self) -> [Option<f64>; 5] {
        [
            Some(self.parse),
            Some(self.from_openapi),
            None,
            Some(self.from_openapi + self.list_tools),
            Some(self.parse + self.from_openapi + self.list_tools),
        ]
    }
}

const PEER_LABELS: [&str; 5] = [
    "parse (json.loads / yaml CSafeLoader)",
    "from_openapi",
    "–",
    "from_openapi + list_tools",
    "total: parse + from_openapi + list_tools",
];

fn fastmcp_python(root: &Path) -> Option<PathBuf> {
    let python = root.join(".peers/venv-fastmcp/bin/python");
    python.is_file().then_some(python)
}

/// Runs the peer script on `doc` in a fresh interpreter; `Err` with FastMCP's error when it
/// refuses the document (recorded, not fatal).
fn fastmcp_once(python: &Path, root: &Path, doc: &str) -> Result<PeerRun, String> {
    let script = root.join("benches/peers/fastmcp_openapi.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(doc)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(line).map_err(|e| {
        format!(
            "fastmcp_openapi.py printed no JSON line ({e}; status {}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        return Err(err.to_string());
    }
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    Ok(PeerRun {
        parse: f("parse_s"),
        from_openapi: f("from_openapi_s"),
        list_tools: f("list_tools_s"),
        tools: n("tools"),
        operations: n("operations"),
    })
}

fn versions(python: Option<&Path>) -> String {
    let Some(python) = python else {
        return "FastMCP not installed".into();
    };
    Command::new(python)
        .args([
            "-c",
            "import sys, importlib.metadata as m; print(f\"Python {sys.version.split()[0]}, fastmcp {m.version('fastmcp')}, PyYAML {m.version('pyyaml')}\")",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "?".into(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_string(),
        )
}

// ------------------------------------------------------------------------------------------------
// Side by side
// ------------------------------------------------------------------------------------------------

/// What was measured for one document: per round, in [`MEASURES`] order.
struct DocResult {
    doc: &'static Doc,
    tools: usize,
    skipped: usize,
    operations: usize,
    /// toolgate: the mean of the round's repetitions.
    toolgate: Vec<Samples>,
    /// FastMCP's runs, or why there are none.
    peer: Result<Vec<PeerRun>, String>,
}

impl DocResult {
    /// FastMCP's samples of measurement `i` (one per round), if it has a counterpart.
    fn peer_samples(&self, i: usize) -> Option<Samples> {
        let runs = self.peer.as_ref().ok()?;
        let s = Samples::new(runs.iter().filter_map(|r| r.measures()[i]));
        (!s.is_empty()).then_some(s)
    }
}

fn measure(root: &Path, python: Option<&Path>, docs: &[(&'static Doc, usize)]) -> Vec<DocResult> {
    let mut out = Vec::new();
    for &(d, rounds) in docs {
        let path = root.join(d.path);
        let doc = Document::from_file(&path).expect("parse");
        let conversion = convert(&doc, &build_options(d.id)).expect("convert");
        let failures = export_check(&conversion, d.id);
        assert_eq!(failures, 0, "{}: tools failing the export check", d.label);
        let mut toolgate = vec![Samples::default(); MEASURES.len()];
        let mut runs = Vec::new();
        let mut error = python
            .is_none()
            .then(|| "FastMCP not measured: .peers/venv-fastmcp is missing".to_string());
        for round in 0..rounds {
            if let (Some(python), None) = (python, &error) {
                eprintln!(
                    "openapi bench: FastMCP on {} ({}/{rounds})",
                    d.label,
                    round + 1
                );
                match fastmcp_once(python, root, d.path) {
                    Ok(r) => runs.push(r),
                    // Without its run the round would not pair: toolgate's rounds go on alone.
                    Err(e) => error = Some(e),
                }
            }
            let reps: Vec<[f64; 5]> = (0..TOOLGATE_PER_ROUND)
                .map(|_| toolgate_once(&path, d.id, &doc))
                .collect();
            for (i, samples) in toolgate.iter_mut().enumerate() {
                samples.push(reps.iter().map(|r| r[i]).sum::<f64>() / reps.len() as f64);
            }
        }
        out.push(DocResult {
            doc: d,
            tools: conversion.tools.len(),
            skipped: conversion.skipped.len(),
            operations: conversion.operations,
            toolgate,
            peer: match error {
                Some(e) if runs.is_empty() => Err(e),
                _ => Ok(runs),
            },
        });
    }
    out
}

const COMPARED: &str = "Turning an OpenAPI document into tools, on the two big vendored \
documents (GitHub `api.github.com` 23.0.2, JSON, 13 MB; Stripe 2023-09-12, YAML, 4 MB): \
**toolgate**'s `toolgate_model::openapi` in the benchmark's process (release) against \
**FastMCP**'s `FastMCP.from_openapi` (`benches/peers/fastmcp_openapi.py`, a fresh interpreter per \
run, its import not timed). The \"convert + export check\" row does more on toolgate's side \
(three dialects exported and checked per tool, what the build does) than on FastMCP's (MCP \
definitions made by `list_tools`, unchecked).";

fn table(results: &[DocResult], versions: &str) -> Table {
    let mut t = Table::new("openapi", COMPARED, COMMAND).columns([
        "document",
        "toolgate",
        "toolgate time",
        "FastMCP",
        "FastMCP time",
        "FastMCP ÷ toolgate (higher = toolgate faster)",
    ]);
    for r in results {
        for (i, measure) in MEASURES.iter().enumerate() {
            let ours = &r.toolgate[i];
            let theirs = r.peer_samples(i);
            t.row([
                r.doc.label.to_string(),
                measure.to_string(),
                fmt_spread(ours, fmt_seconds),
                theirs.as_ref().map_or("–", |_| PEER_LABELS[i]).to_string(),
                theirs
                    .as_ref()
                    .map_or_else(|| "–".into(), |s| fmt_spread(s, fmt_seconds)),
                theirs
                    .as_ref()
                    .map_or_else(|| "–".into(), |s| fmt_spread(&s.ratio_to(ours), fmt_ratio)),
            ]);
        }
    }
    let rounds: Vec<String> = results
        .iter()
        .map(|r| format!("{} {}", r.doc.label, r.toolgate[0].len()))
        .collect();
    t.note(format!(
        "A round: one FastMCP run, then {TOOLGATE_PER_ROUND} repetitions of each toolgate \
         measurement (their mean is the round's toolgate time); rounds: {}. Each cell is the \
         median over the rounds [min–max]; the ratio is taken round by round (FastMCP's run ÷ the \
         toolgate repetitions right after it).",
        rounds.join(", ")
    ));
    for r in results {
        let peer = match &r.peer {
            Ok(runs) => runs.first().map_or_else(
                || "FastMCP: no run".into(),
                |p| format!("FastMCP {} tools of {} operations", p.tools, p.operations),
            ),
            Err(e) => format!("FastMCP: {e}"),
        };
        t.note(format!(
            "{}: toolgate {} tools of {} operations ({} skipped); {peer}.",
            r.doc.label, r.tools, r.operations, r.skipped
        ));
    }
    t.note(format!("Versions: {versions}."));
    t.note(if harness::quick_mode() {
        "Quick run: GitHub only (Stripe skipped: FastMCP takes ~40 s a run on it), one round."
    } else {
        "`--quick` runs GitHub only, one round."
    });
    t
}

/// toolgate's criterion rows, with FastMCP's rounds (median [min–max]) for the ratio.
fn criterion_table(results: &[DocResult]) -> Table {
    let compared = "toolgate's OpenAPI measurements (the table above's first four rows) timed by \
                    criterion (group `openapi/<document>`), each against FastMCP's counterpart \
                    of the side-by-side rounds.";
    let mut t = Table::new("openapi-criterion", compared, COMMAND).columns([
        "document",
        "toolgate",
        "time: median [95% CI]",
        "FastMCP ÷ toolgate (higher = toolgate faster)",
    ]);
    for r in results {
        for (i, measure) in MEASURES.iter().enumerate().take(criterion_measures()) {
            let e = criterion_estimate(&format!("openapi/{}/{measure}", r.doc.label));
            let ratio = match (e, r.peer_samples(i)) {
                (Some(e), Some(s)) => Estimate {
                    low: s.min(),
                    point: s.median(),
                    high: s.max(),
                }
                .ratio_to(&e)
                .fmt(fmt_ratio),
                _ => "–".into(),
            };
            t.row([
                r.doc.label.to_string(),
                measure.to_string(),
                e.map_or_else(|| "not run".into(), |e| e.fmt(fmt_seconds)),
                ratio,
            ]);
        }
    }
    t.note(
        "Criterion: 10 flat samples per row, run before the side-by-side rounds (not interleaved \
         with FastMCP: the table above has the ratios measured side by side). The ratio's spread \
         is conservative: FastMCP's fastest round ÷ criterion's upper bound to its slowest round \
         ÷ the lower bound. Criterion's toolgate times and the rounds' differ by up to ~30%, in \
         either direction from run to run on this shared machine (another moment, another heap \
         state).",
    );
    if harness::quick_mode() {
        t.note(
            "Quick run: GitHub only, without the export check row (its 10 samples take 10–20 s).",
        );
    }
    t
}

fn main() {
    let whole = Instant::now();
    let test = harness::test_mode();
    let root = repo_root();
    let docs = plan(test);
    // No plots unless asked for (`--plotting-backend plotters`): with the plotters backend they
    // cost seconds per row, more than a quick run's measurement.
    let mut c = Criterion::default().without_plots().configure_from_args();
    // Test mode runs each criterion row once, on both documents (the YAML path too).
    let all: Vec<(&Doc, usize)> = DOCS.iter().map(|d| (d, 1)).collect();
    criterion_rows(&mut c, &root, if test { &all } else { &docs });
    c.final_summary();

    let python = if test { None } else { fastmcp_python(&root) };
    if python.is_none() && !test {
        eprintln!(
            "openapi bench: {} is missing (run scripts/install-peers.sh): FastMCP's side is skipped, toolgate's is measured alone",
            root.join(".peers/venv-fastmcp/bin/python").display()
        );
    }
    let started = Instant::now();
    let results = measure(&root, python.as_deref(), &docs);
    eprintln!(
        "openapi bench: side by side in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let versions = versions(python.as_deref());
    table(&results, &versions)
        .write()
        .expect("write the openapi table");
    criterion_table(&results)
        .write()
        .expect("write the openapi-criterion table");
    eprintln!(
        "openapi bench: {:.0} s in all",
        whole.elapsed().as_secs_f64()
    );
}
