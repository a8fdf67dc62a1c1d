//! Memory per tool: a counting global allocator (on only in the child processes this benchmark
//! starts, one per size and measurement, so that every size is measured from the same start),
//! and the children themselves.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

use serde_json::{Value, json};
use toolgate::model::dialect::Dialect;
use toolgate_benches::scale::Size;

/// The system allocator, counting live bytes and allocations while [`ON`] is set.
pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

fn grow(bytes: usize) {
    let now = LIVE.fetch_add(bytes as isize, Relaxed) + bytes as isize;
    PEAK.fetch_max(now, Relaxed);
}

fn shrink(bytes: usize) {
    LIVE.fetch_sub(bytes as isize, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && ON.load(Relaxed) {
            grow(layout.size());
            BLOCKS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && ON.load(Relaxed) {
            grow(layout.size());
            BLOCKS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) };
        if ON.load(Relaxed) {
            shrink(layout.size());
            BLOCKS.fetch_sub(1, Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && ON.load(Relaxed) {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                shrink(layout.size() - new_size);
            }
        }
        p
    }
}

/// The environment variable that makes the benchmark binary a memory child:
/// `toolgate:<N>` or `rmcp:<N>` (a generated size), `toolgate:documents` or `rmcp:documents`
/// (GitHub + Stripe, [`crate::documents`]).
pub const CHILD_VAR: &str = "TOOLGATE_SCALE_CHILD";

/// The resident set of this process, in bytes (`/proc/self/statm`).
fn rss() -> f64 {
    // SAFETY: sysconf reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as f64;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(f64::NAN, |pages| pages * page)
}

fn snapshot() -> (isize, isize, f64) {
    (LIVE.load(Relaxed), BLOCKS.load(Relaxed), rss())
}

/// What one child measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    /// Heap bytes allocated and still live after building (requested sizes, without the
    /// allocator's own overhead).
    pub heap: f64,
    /// Heap blocks still live.
    pub blocks: f64,
    /// The most heap bytes live at once while building, above the start.
    pub peak: f64,
    /// Resident set growth (toolgate's child only).
    pub rss: f64,
    /// How many tools the toolset (or router) has.
    pub tools: f64,
    /// The embedded conversions' bytes (the documents' toolgate child only).
    pub embedded: f64,
}

/// Runs as a memory child when [`CHILD_VAR`] is set: measures, prints one JSON line, and
/// returns `true` (the caller exits).
pub fn child(sizes: &[Size]) -> bool {
    let Ok(what) = std::env::var(CHILD_VAR) else {
        return false;
    };
    ON.store(true, Relaxed);
    let (kind, n) = what.split_once(':').expect("kind:tools");
    // The documents are read and converted before anything is counted.
    let documents = (n == "documents").then(crate::documents::Prepared::new);
    let builder: Box<dyn Fn() -> toolgate::ToolsetBuilder> = match &documents {
        Some(d) => Box::new(|| d.builder()),
        None => {
            let n: usize = n.parse().expect("a size");
            let size = sizes
                .iter()
                .find(|s| s.tools == n)
                .expect("a generated size");
            Box::new(size.builder)
        }
    };
    let out = match kind {
        "toolgate" => {
            let (live0, blocks0, rss0) = snapshot();
            PEAK.store(live0, Relaxed);
            let toolset = builder().build().expect("the toolset builds");
            let (live1, blocks1, rss1) = snapshot();
            let out = json!({
                "heap": live1 - live0,
                "blocks": blocks1 - blocks0,
                "peak": PEAK.load(Relaxed) - live0,
                "rss": rss1 - rss0,
                "tools": toolset.tools().len(),
                "embedded": documents.as_ref().map(|d| d.embedded_bytes()),
            });
            drop(toolset);
            out
        }
        "rmcp" => {
            let toolset = builder().build().expect("the toolset builds");
            let definitions = toolset.export(Dialect::Mcp).expect("MCP export");
            drop(toolset);
            let (live0, blocks0, _) = snapshot();
            PEAK.store(live0, Relaxed);
            let router = crate::rmcp_router(&definitions);
            let (live1, blocks1, _) = snapshot();
            json!({
                "heap": live1 - live0,
                "blocks": blocks1 - blocks0,
                "peak": PEAK.load(Relaxed) - live0,
                "tools": router.list_all().len(),
            })
        }
        other => panic!("unknown child kind {other}"),
    };
    println!("{out}");
    true
}

/// Starts a child measuring `kind` (`toolgate` or `rmcp`) at `n` tools (a generated size);
/// asserts that the toolset has them.
pub fn measure(kind: &str, n: usize) -> Measured {
    let m = measure_what(kind, &n.to_string());
    assert_eq!(m.tools, n as f64, "{kind}:{n}: every operation is a tool");
    m
}

/// Starts a child measuring `kind` (`toolgate` or `rmcp`) on GitHub + Stripe.
pub fn measure_documents(kind: &str) -> Measured {
    measure_what(kind, "documents")
}

fn measure_what(kind: &str, n: &str) -> Measured {
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(exe)
        .env(CHILD_VAR, format!("{kind}:{n}"))
        .output()
        .expect("start the memory child");
    assert!(
        out.status.success(),
        "memory child {kind}:{n} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(line.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("memory child {kind}:{n}: {e}: {line}"));
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Measured {
        heap: f("heap"),
        blocks: f("blocks"),
        peak: f("peak"),
        rss: f("rss"),
        tools: f("tools"),
        embedded: f("embedded"),
    }
}
