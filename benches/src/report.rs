//! Benchmark results as tables: each benchmark writes its tables as JSON to
//! `target/bench-results/<id>.json` ([`Table::write`]), and `bench-report` (run by
//! `scripts/bench.sh`) puts each into `BENCHMARKS.md` between `<!-- bench:<id> -->` and
//! `<!-- /bench:<id> -->`, with what was compared, the command, and the machine it ran on.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::harness;

/// One results table of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The marker it replaces in BENCHMARKS.md (`dispatch-local`, `mcp-sequential`…).
    pub id: String,
    /// What was compared (Markdown, one paragraph).
    pub compared: String,
    /// The command that produced it.
    pub command: String,
    /// Column headings.
    pub columns: Vec<String>,
    /// The rows, one cell per column, already formatted.
    pub rows: Vec<Vec<String>>,
    /// Lines under the table: how to read it, goals met or not and why.
    pub notes: Vec<String>,
    /// Where and when it ran.
    pub machine: Machine,
}

impl Table {
    /// An empty table with the marker `id`, what it compares, and the command that runs it.
    pub fn new(id: &str, compared: &str, command: &str) -> Self {
        Self {
            id: id.to_string(),
            compared: compared.to_string(),
            command: command.to_string(),
            columns: Vec::new(),
            rows: Vec::new(),
            notes: Vec::new(),
            machine: Machine::capture(),
        }
    }

    /// Sets the column headings.
    pub fn columns<S: ToString>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = columns.into_iter().map(|c| c.to_string()).collect();
        self
    }

    /// Adds a row (one cell per column).
    pub fn row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows
            .push(cells.into_iter().map(|c| c.to_string()).collect());
    }

    /// Adds one row per criterion benchmark `group/<row>` of this run: `` `row` ``, its median
    /// [95% CI] ([`criterion_estimate`]), and its ratio to the row at index `base` (conservative
    /// spread, [`Estimate::ratio_to`]); the base row's ratio cell is `base_label`, a row that did
    /// not run shows `–`.
    pub fn criterion_rows(&mut self, group: &str, rows: &[&str], base: usize, base_label: &str) {
        let estimates: Vec<_> = rows
            .iter()
            .map(|row| criterion_estimate(&format!("{group}/{row}")))
            .collect();
        let base_estimate = estimates.get(base).copied().flatten();
        for (i, (row, e)) in rows.iter().zip(&estimates).enumerate() {
            let ratio = match (e, base_estimate) {
                _ if i == base => base_label.to_string(),
                (Some(e), Some(b)) => e.ratio_to(&b).fmt(harness::fmt_ratio),
                _ => "–".into(),
            };
            self.row([
                format!("`{row}`"),
                e.map_or("–".into(), |e| e.fmt(harness::fmt_seconds)),
                ratio,
            ]);
        }
    }

    /// Adds a line under the table.
    pub fn note(&mut self, line: impl Into<String>) {
        self.notes.push(line.into());
    }

    /// The table as Markdown: what was compared, the command, the machine, the table, notes.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        md.push_str(&format!("Compared: {}\n\n", self.compared.trim()));
        md.push_str(&format!("Command: `{}`\n\n", self.command));
        md.push_str(&format!("Machine: {}\n\n", self.machine.describe()));
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        md.push_str(&format!(
            "| {} |\n",
            self.columns
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        md.push_str(&format!(
            "|{}\n",
            " --- |".repeat(self.columns.len().max(1))
        ));
        for row in &self.rows {
            md.push_str(&format!(
                "| {} |\n",
                row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        if !self.notes.is_empty() {
            md.push('\n');
            for n in &self.notes {
                md.push_str(&format!("- {}\n", n.trim()));
            }
        }
        md
    }

    /// Prints the table and writes it to `<results dir>/<id>.json` (see [`results_dir`]); in
    /// test mode ([`harness::test_mode`]) it only renders it (proving it renders).
    ///
    /// # Errors
    ///
    /// The directory cannot be created or the file written.
    pub fn write(&self) -> std::io::Result<Option<PathBuf>> {
        let md = self.to_markdown();
        if harness::test_mode() {
            return Ok(None);
        }
        println!("\n{md}");
        let dir = results_dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}.json", self.id));
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&path, json)?;
        eprintln!("wrote {}", path.display());
        Ok(Some(path))
    }
}

/// Where tables are written: `$TOOLGATE_BENCH_OUT`, else `target/bench-results` of the
/// workspace (`$CARGO_TARGET_DIR/bench-results` when that is set).
pub fn results_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOLGATE_BENCH_OUT") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("bench-results")
}

/// Facts about the machine and the run, recorded with every table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs available to the process.
    pub cores: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu: String,
    /// `uname -sr`.
    pub os: String,
    /// The rustc that built the benchmark (`rustc -V`).
    pub rustc: String,
    /// The 1-minute load average when the table was made (other work on the machine).
    pub load: f64,
    /// `full` or `quick` ([`harness::quick_mode`]).
    pub mode: String,
    /// The commit measured (`$TOOLGATE_BENCH_COMMIT`, set by `scripts/bench.sh`), else empty.
    pub commit: String,
    /// The UTC date of the run (`$TOOLGATE_BENCH_DATE`, else `date -u +%F`).
    pub date: String,
}

fn command(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

impl Machine {
    /// Reads the facts now.
    pub fn capture() -> Self {
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
            .ok()
            .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
            .unwrap_or(f64::NAN);
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            cores,
            cpu,
            os: command("uname", &["-sr"]),
            rustc: env!("TOOLGATE_BENCH_RUSTC").to_string(),
            load,
            mode: if harness::quick_mode() {
                "quick"
            } else {
                "full"
            }
            .to_string(),
            commit: env("TOOLGATE_BENCH_COMMIT").unwrap_or_default(),
            date: env("TOOLGATE_BENCH_DATE").unwrap_or_else(|| command("date", &["-u", "+%F"])),
        }
    }

    /// One line: `2 cores, Intel(R) Xeon(R) Processor; Linux 6.18; rustc 1.95.0; load 1.2;
    /// full run of 2026-11-30 at 1a2b3c4`.
    pub fn describe(&self) -> String {
        let at = if self.commit.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", self.commit)
        };
        format!(
            "{} cores, {}; {}; {}; load average {:.1} when written; {} run of {}{at}.",
            self.cores, self.cpu, self.os, self.rustc, self.load, self.mode, self.date
        )
    }
}

/// Replaces every `<!-- bench:<id> -->` … `<!-- /bench:<id> -->` block of `doc` whose table is
/// in `tables` by that table's Markdown. Returns the new document, the ids replaced, and the ids
/// of blocks with no table (left as they were).
pub fn splice(doc: &str, tables: &[Table]) -> (String, Vec<String>, Vec<String>) {
    let mut out = String::with_capacity(doc.len());
    let mut replaced = Vec::new();
    let mut kept = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find("<!-- bench:") {
        let after_open = &rest[start + "<!-- bench:".len()..];
        let Some(close) = after_open.find(" -->") else {
            break;
        };
        let id = after_open[..close].trim().to_string();
        let end_marker = format!("<!-- /bench:{id} -->");
        let body_start = start + "<!-- bench:".len() + close + " -->".len();
        let Some(end) = rest[body_start..].find(&end_marker) else {
            // An opening marker with no end (one quoted in prose): left as it is.
            out.push_str(&rest[..body_start]);
            rest = &rest[body_start..];
            continue;
        };
        out.push_str(&rest[..body_start]);
        match tables.iter().find(|t| t.id == id) {
            Some(t) => {
                out.push('\n');
                out.push_str(&t.to_markdown());
                replaced.push(id);
            }
            None => {
                out.push_str(&rest[body_start..body_start + end]);
                kept.push(id);
            }
        }
        out.push_str(&end_marker);
        rest = &rest[body_start + end + end_marker.len()..];
    }
    out.push_str(rest);
    (out, replaced, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(id: &str) -> Table {
        let mut t = Table::new(id, "a with b", "cargo bench").columns(["row", "ratio"]);
        t.row(["a", "1.00×"]);
        t.note("goal met");
        t
    }

    #[test]
    fn splice_replaces_known_blocks_and_keeps_the_rest() {
        let doc = "# B\n<!-- bench:x -->\nold\n<!-- /bench:x -->\ntext\n<!-- bench:y -->\nkeep\n<!-- /bench:y -->\n";
        let (out, replaced, kept) = splice(doc, &[table("x")]);
        assert_eq!(replaced, ["x"]);
        assert_eq!(kept, ["y"]);
        assert!(out.contains("| a | 1.00× |"), "{out}");
        assert!(!out.contains("old"), "{out}");
        assert!(
            out.contains("<!-- bench:y -->\nkeep\n<!-- /bench:y -->"),
            "{out}"
        );
        assert!(out.ends_with("<!-- /bench:y -->\n"), "{out}");
        // Splicing again is stable.
        let (again, _, _) = splice(&out, &[table("x")]);
        assert_eq!(again, out);
    }

    #[test]
    fn splice_skips_a_marker_quoted_in_prose() {
        let doc =
            "between `<!-- bench:<id> -->` markers\n<!-- bench:x -->\nold\n<!-- /bench:x -->\n";
        let (out, replaced, _) = splice(doc, &[table("x")]);
        assert_eq!(replaced, ["x"]);
        assert!(
            out.starts_with("between `<!-- bench:<id> -->` markers\n"),
            "{out}"
        );
        assert!(!out.contains("old"), "{out}");
    }
}

/// Criterion's estimate of one benchmark's time per iteration, in seconds: the median with the
/// bounds of its confidence interval (criterion's `estimates.json`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Lower bound of the confidence interval.
    pub low: f64,
    /// The point estimate.
    pub point: f64,
    /// Upper bound of the confidence interval.
    pub high: f64,
}

impl Estimate {
    /// `self ÷ base` with a conservative spread: `[low ÷ base.high, high ÷ base.low]`.
    pub fn ratio_to(&self, base: &Estimate) -> Estimate {
        Estimate {
            low: self.low / base.high,
            point: self.point / base.point,
            high: self.high / base.low,
        }
    }

    /// `point [low–high]`, each formatted by `fmt`.
    pub fn fmt(&self, fmt: impl Fn(f64) -> String) -> String {
        format!("{} [{}–{}]", fmt(self.point), fmt(self.low), fmt(self.high))
    }
}

/// The median estimate criterion saved for the benchmark whose full id (`group/function` or
/// `group/function/parameter`) is `full_id`, from this run (`<target>/criterion/**/new/`).
/// `None` when it did not run (test mode, a filter) or its files cannot be read.
pub fn criterion_estimate(full_id: &str) -> Option<Estimate> {
    let root = results_dir().parent()?.join("criterion");
    find_estimate(&root, full_id, 0)
}

fn find_estimate(dir: &Path, full_id: &str, depth: usize) -> Option<Estimate> {
    if depth > 5 {
        return None;
    }
    let new = dir.join("new");
    if let Ok(text) = std::fs::read_to_string(new.join("benchmark.json")) {
        let id: serde_json::Value = serde_json::from_str(&text).ok()?;
        if id["full_id"] == full_id {
            let text = std::fs::read_to_string(new.join("estimates.json")).ok()?;
            let e: serde_json::Value = serde_json::from_str(&text).ok()?;
            let m = &e["median"];
            let ns = |v: &serde_json::Value| v.as_f64().map(|x| x * 1e-9);
            return Some(Estimate {
                low: ns(&m["confidence_interval"]["lower_bound"])?,
                point: ns(&m["point_estimate"])?,
                high: ns(&m["confidence_interval"]["upper_bound"])?,
            });
        }
        // Another benchmark's folder; a parameterised one (`floor/10`) may sit below it.
    }
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir()
            && path
                .file_name()
                .is_some_and(|n| n != "report" && n != "base")
            && let Some(found) = find_estimate(&path, full_id, depth + 1)
        {
            return Some(found);
        }
    }
    None
}
