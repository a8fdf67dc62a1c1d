//! `bench-report [--timings FILE] [--instructions FILE] [BENCHMARKS.md] [RESULTS DIR]`: puts the
//! tables the benchmarks wrote (JSON, in `target/bench-results` by default) into BENCHMARKS.md,
//! each between its `<!-- bench:<id> -->` and `<!-- /bench:<id> -->` markers. Run by
//! `scripts/bench.sh`, which passes `--timings`: a tab-separated file of `step, status, seconds`
//! lines that becomes the `run` table (what ran, how long each step took), and `--instructions`:
//! gungraun's JSON output of the `instructions` benchmark, which becomes its table.
//!
//! Exits 1 when a file cannot be read or written, or when a table has no marker to go to
//! (a benchmark and the document disagree).

use std::path::{Path, PathBuf};

use toolgate_benches::report::{Table, results_dir, splice};

fn main() {
    let mut timings = None;
    let mut instructions = None;
    let mut positional = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--timings" {
            timings = args.next().map(PathBuf::from);
        } else if arg == "--instructions" {
            instructions = args.next().map(PathBuf::from);
        } else {
            positional.push(PathBuf::from(arg));
        }
    }
    let mut positional = positional.into_iter();
    let doc_path = positional
        .next()
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md")));
    let dir = positional.next().unwrap_or_else(results_dir);
    if let Err(e) = run(&doc_path, &dir, timings.as_deref(), instructions.as_deref()) {
        eprintln!("bench-report: {e}");
        std::process::exit(1);
    }
}

/// The `run` table: every step of `scripts/bench.sh` with its status and duration.
fn run_table(timings: &Path) -> Result<Table, String> {
    let text = std::fs::read_to_string(timings)
        .map_err(|e| format!("cannot read {}: {e}", timings.display()))?;
    let mut table = Table::new(
        "run",
        "every step of the last `scripts/bench.sh` run that wrote this file, with its duration \
         (wall clock). Each benchmark's table below says what it compared.",
        "scripts/bench.sh",
    )
    .columns(["step", "status", "duration"]);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut cells = line.split('\t');
        let (Some(step), Some(status), Some(secs)) = (cells.next(), cells.next(), cells.next())
        else {
            return Err(format!("{}: malformed line `{line}`", timings.display()));
        };
        let secs: u64 = secs
            .trim()
            .parse()
            .map_err(|_| format!("{}: `{secs}` is not a number of seconds", timings.display()))?;
        let step = if step == "total" {
            "**total**".to_string()
        } else {
            format!("`{step}`")
        };
        table.row([
            step,
            status.to_string(),
            format!("{}m {:02}s", secs / 60, secs % 60),
        ]);
    }
    Ok(table)
}

fn run(
    doc_path: &Path,
    dir: &Path,
    timings: Option<&Path>,
    instructions: Option<&Path>,
) -> Result<(), String> {
    let doc = std::fs::read_to_string(doc_path)
        .map_err(|e| format!("cannot read {}: {e}", doc_path.display()))?;
    let mut tables = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let table: Table = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a results table: {e}", path.display()))?;
        tables.push(table);
    }
    if let Some(timings) = timings {
        tables.push(run_table(timings)?);
    }
    if let Some(path) = instructions {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        tables.push(toolgate_benches::pipeline::instructions_table(&text)?);
    }
    tables.sort_by(|a, b| a.id.cmp(&b.id));
    let (out, replaced, kept) = splice(&doc, &tables);
    let orphans: Vec<&str> = tables
        .iter()
        .map(|t| t.id.as_str())
        .filter(|id| !replaced.iter().any(|r| r == id))
        .collect();
    std::fs::write(doc_path, out)
        .map_err(|e| format!("cannot write {}: {e}", doc_path.display()))?;
    println!(
        "{}: {} table(s) updated: {}",
        doc_path.display(),
        replaced.len(),
        replaced.join(", ")
    );
    if !kept.is_empty() {
        println!(
            "not measured in this run, kept as they were: {}",
            kept.join(", ")
        );
    }
    if !orphans.is_empty() {
        return Err(format!(
            "no `<!-- bench:<id> -->` marker in {} for: {}",
            doc_path.display(),
            orphans.join(", ")
        ));
    }
    Ok(())
}
