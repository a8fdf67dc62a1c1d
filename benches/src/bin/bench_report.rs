//! `bench-report [BENCHMARKS.md] [results dir]`: puts the tables the benchmarks wrote (JSON, in
//! `target/bench-results` by default) into BENCHMARKS.md, each between its
//! `<!-- bench:<id> -->` and `<!-- /bench:<id> -->` markers. Run by `scripts/bench.sh`.
//!
//! Exits 1 when a file cannot be read or written, or when a table has no marker to go to
//! (a benchmark and the document disagree).

use std::path::PathBuf;

use toolgate_benches::report::{Table, results_dir, splice};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let doc_path = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md")));
    let dir = args.next().map(PathBuf::from).unwrap_or_else(results_dir);
    if let Err(e) = run(&doc_path, &dir) {
        eprintln!("bench-report: {e}");
        std::process::exit(1);
    }
}

fn run(doc_path: &std::path::Path, dir: &std::path::Path) -> Result<(), String> {
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
