//! OpenAPI conversion: toolgate's `toolgate_spec::openapi` side by side with FastMCP's
//! `FastMCP.from_openapi` (PyPI `fastmcp` 4.x), in one run, on the two big vendored documents
//! (GitHub, JSON, 13 MB; Stripe, YAML, 4 MB).
//!
//! toolgate, in this process (criterion group `openapi/<doc>`, 10 flat samples each):
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
//!   definitions and each definition checked against its dialect's rules.
//!
//! FastMCP, by `benches/peers/fastmcp_openapi.py` run once per repetition (a fresh interpreter,
//! its import not timed; 5 repetitions for GitHub, 3 for Stripe): the parse (`json.loads` /
//! PyYAML's `CSafeLoader`), `FastMCP.from_openapi(spec, client)` and `list_tools()` (FastMCP
//! builds its tools lazily: the listing is where the MCP definitions are made). The toolgate
//! repetitions for the table are taken between the FastMCP ones (two of each measurement after
//! each FastMCP run), so that drift on a shared machine hits both alike. Printed: a markdown
//! table with medians, min–max and ratios (FastMCP ÷ toolgate), tool counts on both sides;
//! written: `<target>/criterion/openapi-vs-fastmcp.json`.
//!
//! Under `cargo test` (criterion's test mode) each criterion benchmark runs once and the
//! FastMCP part is skipped. Without the venv (`.peers/venv-fastmcp`, made by
//! `scripts/install-peers.sh`) the FastMCP part is skipped with a message; toolgate's rows run.
//!
//! Run: `scripts/install-peers.sh` once, then `cargo bench -p toolgate-benches --bench openapi`
//! (about 4 minutes, most of it FastMCP on Stripe). Results: BENCHMARKS.md, "OpenAPI conversion:
//! toolgate vs FastMCP from_openapi".

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use serde_json::{Value, json};
use toolgate::spec::dialect::{Dialect, ToolSchema, check::check, export};
use toolgate::spec::names::exported_name;
use toolgate::spec::openapi::{Conversion, ConvertOptions, Document, convert};

/// One vendored document.
struct Doc {
    /// The source id a tools.yaml would give it (the build's prefix).
    id: &'static str,
    label: &'static str,
    /// Relative to the repository root.
    path: &'static str,
    /// FastMCP runs in benchmark mode.
    fastmcp_runs: usize,
}

const DOCS: [Doc; 2] = [
    Doc {
        id: "github",
        label: "GitHub",
        path: "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json",
        fastmcp_runs: 5,
    },
    Doc {
        id: "stripe",
        label: "Stripe",
        path: "tests/specs/stripe/stripe-spec3-2023-09-12.yaml",
        fastmcp_runs: 3,
    },
];

/// toolgate repetitions of each measurement after each FastMCP run.
const TOOLGATE_PER_RUN: usize = 2;
/// toolgate repetitions when FastMCP is not measured.
const TOOLGATE_ALONE: usize = 10;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ is inside the repository")
        .to_path_buf()
}

/// Criterion's own rule: benchmark mode with `--bench` (what `cargo bench` passes) unless
/// `--test` is given too; `cargo test` passes neither.
fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    !has("--bench") || has("--test")
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

/// The toolgate measurements of the table, in order.
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
    let total = time(&mut || {
        let d = Document::from_file(path).expect("parse");
        let c = convert(&d, &build_options(id)).expect("convert");
        black_box(export_check(&c, id));
    });
    [parse, conv, conv_build, conv_check, total]
}

fn criterion_rows(c: &mut Criterion, root: &Path) {
    for d in &DOCS {
        let path = root.join(d.path);
        let doc = Document::from_file(&path).expect("parse");
        let mut g = c.benchmark_group(format!("openapi/{}", d.label));
        // 0.1–0.5 s an iteration: flat sampling, 10 samples.
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        g.bench_function("parse", |b| {
            b.iter(|| Document::from_file(&path).expect("parse"));
        });
        g.bench_function("convert", |b| {
            b.iter(|| convert(&doc, &ConvertOptions::default()).expect("convert"));
        });
        let options = build_options(d.id);
        g.bench_function("convert, build's name length", |b| {
            b.iter(|| convert(&doc, &options).expect("convert"));
        });
        g.bench_function("convert + export check", |b| {
            b.iter(|| {
                let conversion = convert(&doc, &options).expect("convert");
                export_check(&conversion, d.id)
            });
        });
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

/// FastMCP's measurements matching [`MEASURES`] (`None`: no counterpart).
fn peer_measures(r: &PeerRun) -> [Option<f64>; 5] {
    [
        Some(r.parse),
        Some(r.from_openapi),
        None,
        Some(r.from_openapi + r.list_tools),
        Some(r.parse + r.from_openapi + r.list_tools),
    ]
}

const PEER_LABELS: [&str; 5] = [
    "parse (json.loads / yaml CSafeLoader)",
    "from_openapi",
    "–",
    "from_openapi + list_tools",
    "total: parse + from_openapi + list_tools",
];

// ------------------------------------------------------------------------------------------------
// Statistics and report
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Summary {
    median: f64,
    min: f64,
    max: f64,
    n: usize,
}

fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[mid]
    } else {
        f64::midpoint(v[mid - 1], v[mid])
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[v.len() - 1],
        n: v.len(),
    })
}

fn fmt_s(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.2} s")
    }
}

fn fmt_summary(s: Option<Summary>) -> String {
    s.map_or_else(
        || "–".into(),
        |s| {
            format!(
                "**{}** ({}–{}, n={})",
                fmt_s(s.median),
                fmt_s(s.min),
                fmt_s(s.max),
                s.n
            )
        },
    )
}

fn fmt_ratio(x: f64) -> String {
    if x < 10.0 {
        format!("**{x:.1}×**")
    } else {
        format!("**{x:.0}×**")
    }
}

fn summary_json(s: Option<Summary>) -> Value {
    s.map_or(
        Value::Null,
        |s| json!({"median_s": s.median, "min_s": s.min, "max_s": s.max, "n": s.n}),
    )
}

fn command_output(program: &Path, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

fn machine(python: Option<&Path>) -> Value {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let loadavg = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let versions = python.map(|p| {
        command_output(
            p,
            &[
                "-c",
                "import sys, importlib.metadata as m; print(sys.version.split()[0], m.version('fastmcp'), m.version('pyyaml'))",
            ],
        )
    });
    let mut v = versions.as_deref().unwrap_or("").split_whitespace();
    json!({
        "cores": cores,
        "cpu": cpu,
        "loadavg_at_end": loadavg,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "python": v.next(),
        "fastmcp": v.next(),
        "pyyaml": v.next(),
    })
}

/// Where criterion writes: `<target>/criterion` (this executable is `<target>/<profile>/deps/…`).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    let exe = std::env::current_exe().expect("this benchmark's path");
    exe.ancestors()
        .nth(3)
        .expect("the benchmark runs from <target>/<profile>/deps")
        .join("criterion")
}

/// What was measured for one document.
struct DocResult<'a> {
    doc: &'a Doc,
    tools: usize,
    skipped: usize,
    operations: usize,
    toolgate: Vec<Vec<f64>>,
    peer: Result<Vec<PeerRun>, String>,
}

fn measure(root: &Path, python: Option<&Path>) -> Vec<DocResult<'static>> {
    let mut out = Vec::new();
    for d in &DOCS {
        let path = root.join(d.path);
        let doc = Document::from_file(&path).expect("parse");
        let conversion = convert(&doc, &build_options(d.id)).expect("convert");
        let failures = export_check(&conversion, d.id);
        assert_eq!(failures, 0, "{}: tools failing the export check", d.label);
        let mut toolgate: Vec<Vec<f64>> = vec![Vec::new(); MEASURES.len()];
        let push = |toolgate: &mut Vec<Vec<f64>>, r: [f64; 5]| {
            for (all, x) in toolgate.iter_mut().zip(r) {
                all.push(x);
            }
        };
        let peer = if let Some(python) = python {
            let mut runs = Vec::new();
            let mut error = None;
            for i in 0..d.fastmcp_runs {
                eprintln!(
                    "openapi bench: FastMCP on {} ({}/{})",
                    d.label,
                    i + 1,
                    d.fastmcp_runs
                );
                match fastmcp_once(python, root, d.path) {
                    Ok(r) => runs.push(r),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
                for _ in 0..TOOLGATE_PER_RUN {
                    push(&mut toolgate, toolgate_once(&path, d.id, &doc));
                }
            }
            match error {
                Some(e) if runs.is_empty() => Err(e),
                _ => Ok(runs),
            }
        } else {
            Err("FastMCP not measured: .peers/venv-fastmcp is missing".into())
        };
        while toolgate[0].len() < TOOLGATE_ALONE.min(TOOLGATE_PER_RUN * d.fastmcp_runs) {
            push(&mut toolgate, toolgate_once(&path, d.id, &doc));
        }
        out.push(DocResult {
            doc: d,
            tools: conversion.tools.len(),
            skipped: conversion.skipped.len(),
            operations: conversion.operations,
            toolgate,
            peer,
        });
    }
    out
}

fn report(results: &[DocResult<'_>], machine: &Value) -> Value {
    println!();
    println!(
        "## OpenAPI conversion: toolgate vs FastMCP from_openapi ({} cores, {}; {} profile; Python {}, fastmcp {}, PyYAML {}; load average at the end {})",
        machine["cores"],
        machine["cpu"].as_str().unwrap_or("?"),
        machine["profile"].as_str().unwrap_or("?"),
        machine["python"].as_str().unwrap_or("?"),
        machine["fastmcp"].as_str().unwrap_or("?"),
        machine["pyyaml"].as_str().unwrap_or("?"),
        machine["loadavg_at_end"].as_str().unwrap_or("?"),
    );
    println!();
    println!(
        "| document | toolgate | median (min–max) | FastMCP | median (min–max) | FastMCP ÷ toolgate |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut docs_json = Vec::new();
    for r in results {
        let runs = r.peer.as_ref().ok();
        let mut rows = Vec::new();
        for (i, measure) in MEASURES.iter().enumerate() {
            let ours = summarize(&r.toolgate[i]);
            let theirs = runs.and_then(|runs| {
                let xs: Vec<f64> = runs.iter().filter_map(|p| peer_measures(p)[i]).collect();
                summarize(&xs)
            });
            let ratio = ours.zip(theirs).map(|(a, b)| b.median / a.median);
            let theirs_label = if theirs.is_some() {
                PEER_LABELS[i]
            } else {
                "–"
            };
            println!(
                "| {} | {measure} | {} | {theirs_label} | {} | {} |",
                r.doc.label,
                fmt_summary(ours),
                fmt_summary(theirs),
                ratio.map_or_else(|| "–".into(), fmt_ratio),
            );
            rows.push(json!({
                "toolgate": measure,
                "toolgate_s": summary_json(ours),
                "fastmcp": theirs.map(|_| PEER_LABELS[i]),
                "fastmcp_s": summary_json(theirs),
                "ratio_fastmcp_over_toolgate": ratio,
            }));
        }
        let (peer_tools, peer_ops, peer_error) = match &r.peer {
            Ok(runs) => (
                runs.first().map(|p| p.tools),
                runs.first().map(|p| p.operations),
                None,
            ),
            Err(e) => (None, None, Some(e.clone())),
        };
        docs_json.push(json!({
            "doc": r.doc.path,
            "label": r.doc.label,
            "toolgate": {"tools": r.tools, "skipped": r.skipped, "operations": r.operations},
            "fastmcp": {"tools": peer_tools, "operations": peer_ops, "runs": runs.map(Vec::len), "error": peer_error},
            "rows": rows,
        }));
    }
    println!();
    for (r, j) in results.iter().zip(&docs_json) {
        println!(
            "{}: toolgate {} tools of {} operations ({} skipped); FastMCP {} tools of {} operations{}",
            r.doc.label,
            r.tools,
            r.operations,
            r.skipped,
            j["fastmcp"]["tools"],
            j["fastmcp"]["operations"],
            match &r.peer {
                Err(e) => format!(" ({e})"),
                Ok(_) => String::new(),
            }
        );
    }
    json!({"machine": machine, "documents": docs_json})
}

fn main() {
    let test = test_mode();
    let root = repo_root();
    let mut c = Criterion::default().configure_from_args();
    criterion_rows(&mut c, &root);
    c.final_summary();
    if test {
        eprintln!("openapi bench: test mode, FastMCP and the comparison table skipped");
        return;
    }

    let python = fastmcp_python(&root);
    if python.is_none() {
        eprintln!(
            "openapi bench: {} is missing (run scripts/install-peers.sh): FastMCP's side is skipped, toolgate's is measured alone",
            root.join(".peers/venv-fastmcp/bin/python").display()
        );
    }
    let started = Instant::now();
    let results = measure(&root, python.as_deref());
    eprintln!(
        "openapi bench: side by side in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let report = report(&results, &machine(python.as_deref()));
    let dir = criterion_dir();
    let file = dir.join("openapi-vs-fastmcp.json");
    std::fs::create_dir_all(&dir)
        .and_then(|()| {
            std::fs::write(
                &file,
                serde_json::to_string_pretty(&report).expect("JSON") + "\n",
            )
        })
        .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    eprintln!("openapi bench: written {}", file.display());
}
