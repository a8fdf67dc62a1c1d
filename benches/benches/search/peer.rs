//! FastMCP's BM25 search transform on the same corpus and queries:
//! `benches/peers/search_fastmcp.py`, run on the JSON this benchmark writes, with a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_benches::harness::Samples;

use crate::metrics::{DEPTH, Ranked};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The venv's Python, when `scripts/install-peers.sh` made it.
pub fn python() -> Option<PathBuf> {
    let p = repo_root().join(".peers/venv-fastmcp/bin/python");
    p.is_file().then_some(p)
}

/// What FastMCP answered, and the version and index build time it reported.
pub struct FastMcp {
    /// Its rankings and latencies (`_search`, and the index query alone as the inner one).
    pub ranked: Ranked,
    /// Its first `search_tools` call (where its index is built), CPU seconds.
    pub build: f64,
    /// How many tools it registered.
    pub tools: usize,
}

/// Runs the script on `corpus` (the shared JSON), `rounds` latency rounds, killed after
/// `deadline`.
pub fn run(
    python: &Path,
    corpus: &Path,
    rounds: usize,
    deadline: Duration,
) -> Result<FastMcp, String> {
    let script = repo_root().join("benches/peers/search_fastmcp.py");
    let mut child = Command::new(python)
        .arg(&script)
        .arg(corpus)
        .arg(DEPTH.to_string())
        .arg(rounds.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    // Drain both pipes on threads, so a chatty child cannot block on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no answer within {deadline:?}: killed"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let v: Value =
        serde_json::from_str(text.trim().lines().last().unwrap_or_default()).map_err(|e| {
            format!(
                "no result ({e}, {status}); stderr: {}",
                stderr.chars().take(2000).collect::<String>()
            )
        })?;
    if let Some(e) = v["error"].as_str() {
        return Err(format!("{e} {}", v["traceback_tail"]));
    }
    let samples = |k: &str| {
        Samples::new(
            v[k].as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64),
        )
    };
    let ranked = v["ranked"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|hits| {
            hits.as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .collect();
    let version = v["fastmcp"].as_str().unwrap_or("?").to_string();
    Ok(FastMcp {
        ranked: Ranked {
            label: format!("FastMCP {version} `BM25SearchTransform`"),
            ranked,
            latencies: samples("search_s"),
            inner_latencies: Some(("its BM25 index's `query` alone".into(), samples("query_s"))),
        },
        build: v["build_s"].as_f64().unwrap_or(f64::NAN),
        tools: v["tools"].as_u64().unwrap_or(0) as usize,
    })
}
