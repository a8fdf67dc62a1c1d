//! Search at scale: the corpus (about 5,000 tools) and 100,000 tools (the corpus plus
//! synthetic tools made from its vocabulary), each measured for search latency, index build
//! time (the first search of a fresh catalog snapshot: every tool's fields normalized, then the
//! BM25 indexes built) and index memory (heap bytes the first search leaves live, counted by
//! this binary's global allocator while the counter is on).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

use toolgate::testing::StubSource;
use toolgate::{Identity, SearchOptions, ToolDescriptor, ToolOutput, Toolset, ToolsetBuilder};
use toolgate_benches::harness::{self, Samples};

/// The system allocator, counting live and peak bytes while [`ON`] is set.
pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grow(bytes: usize) {
    let now = LIVE.fetch_add(bytes as isize, Relaxed) + bytes as isize;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && ON.load(Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && ON.load(Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) };
        if ON.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && ON.load(Relaxed) {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                LIVE.fetch_sub((layout.size() - new_size) as isize, Relaxed);
            }
        }
        p
    }
}

/// The source id of the synthetic tools.
pub const SYNTHETIC: &str = "synth";

/// A fixed xorshift sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() % v.len() as u64) as usize]
    }
}

/// The first sentence of `text` (up to the first `. `), or all of it.
fn first_sentence(text: &str) -> &str {
    text.split_once(". ").map_or(text, |(s, _)| s).trim()
}

/// `n` synthetic tools recombined from `corpus` (deterministic): the name's first word from one
/// corpus tool and the rest from another, plus a number that keeps names distinct; the
/// description the first sentence of a third and of a fourth; the input schema of a fifth.
pub fn synthetic(corpus: &[Arc<ToolDescriptor>], n: usize) -> Vec<ToolDescriptor> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let words: Vec<Vec<String>> = corpus
        .iter()
        .map(|d| {
            let own = d.name.rsplit('.').next().unwrap_or(&d.name);
            own.split(['_', '-'])
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        })
        .filter(|w: &Vec<String>| !w.is_empty())
        .collect();
    (0..n)
        .map(|i| {
            let head = &rng.pick(&words)[0];
            let tail = rng.pick(&words);
            let rest = if tail.len() > 1 {
                &tail[1..]
            } else {
                &tail[..]
            };
            let name = format!("{head}_{}_{i}", rest.join("_"));
            let a = first_sentence(&rng.pick(corpus).description).to_string();
            let b = first_sentence(&rng.pick(corpus).description).to_string();
            ToolDescriptor {
                name,
                description: format!("{a}. {b}."),
                input_schema: rng.pick(corpus).input_schema.clone(),
                source: SYNTHETIC.into(),
                ..ToolDescriptor::default()
            }
        })
        .collect()
}

/// `builder` with a stub source of `tools` added.
pub fn with_stubs(builder: ToolsetBuilder, id: &str, tools: &[ToolDescriptor]) -> ToolsetBuilder {
    let mut source = StubSource::new(id);
    for d in tools {
        source = source.stub_with(d.clone(), |_| Ok(ToolOutput::text("not called")));
    }
    builder.source(source)
}

/// One catalog size's build measurements.
#[derive(Debug, Clone, Default)]
pub struct Build {
    /// Tools in the toolset.
    pub tools: usize,
    /// The first search's CPU seconds, one per round (a fresh toolset each).
    pub first_search: Samples,
    /// Heap bytes live after the first search minus before (the index and each tool's
    /// normalized fields), one per round.
    pub heap: Samples,
    /// The most heap bytes live at once during the first search, above the start.
    pub peak: Samples,
}

/// Builds a fresh toolset with `make` `rounds` times and measures its first search of `query`.
pub fn measure_build(make: impl Fn() -> Toolset, query: &str, rounds: usize) -> Build {
    let mut b = Build::default();
    let options = SearchOptions::new().k(crate::metrics::DEPTH);
    for _ in 0..rounds {
        let toolset = make();
        b.tools = toolset.tools().len();
        let identity = Identity::default();
        let live0 = LIVE.load(Relaxed);
        PEAK.store(live0, Relaxed);
        ON.store(true, Relaxed);
        let t = harness::process_cpu();
        let hits = toolset
            .search(&identity, query, &options)
            .expect("searches");
        let secs = (harness::process_cpu() - t).as_secs_f64();
        drop(hits);
        ON.store(false, Relaxed);
        b.first_search.push(secs);
        b.heap.push((LIVE.load(Relaxed) - live0) as f64);
        b.peak.push((PEAK.load(Relaxed) - live0) as f64);
        drop(toolset);
    }
    b
}
