//! What every benchmark needs around its measurement: the mode it runs in (test, quick, full),
//! CPU clocks for this process and for peer processes, and plain-clock samples summarised as a
//! median with its spread.

use std::collections::HashMap;
use std::time::Duration;

/// Criterion's own rule: benchmark mode with `--bench` (what `cargo bench` passes) unless
/// `--test` is given too; `cargo test` passes neither. In test mode a benchmark makes a handful
/// of calls to prove its rows still work, and reports nothing.
pub fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    !has("--bench") || has("--test")
}

/// `scripts/bench.sh --quick` sets `TOOLGATE_BENCH_QUICK=1`: fewer rounds, fewer sizes, the
/// same rows (the whole suite in about 5 minutes once built, against about 30).
pub fn quick_mode() -> bool {
    std::env::var_os("TOOLGATE_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Picks the value for the mode: `quick` under [`quick_mode`], else `full`.
pub fn by_mode<T>(quick: T, full: T) -> T {
    if quick_mode() { quick } else { full }
}

/// The CPU time this process has used so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`, ns
/// resolution).
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `(ppid, utime + stime in clock ticks, state)` of a live process, from `/proc/<pid>/stat`.
pub fn proc_stat(pid: u32) -> Option<(u32, u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid … utime stime: fields 3, 4, 14 and 15, after a comm that may hold
    // spaces.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime, state))
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(_, _, state)| state != 'Z' && state != 'X')
}

/// Clock ticks (`_SC_CLK_TCK`, usually 100 per second) as a duration.
pub fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf reads a constant.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    Duration::from_nanos(ticks * 1_000_000_000 / hz.max(1))
}

/// The CPU time `pid` has used so far (10 ms resolution); zero once it is gone.
pub fn pid_cpu(pid: u32) -> Duration {
    ticks_to_duration(proc_stat(pid).map_or(0, |(_, ticks, _)| ticks))
}

/// Every live process: pid → (ppid, CPU ticks).
pub fn process_table() -> HashMap<u32, (u32, u64)> {
    let mut table = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, ticks, _)) = proc_stat(pid) {
            table.insert(pid, (ppid, ticks));
        }
    }
    table
}

/// The descendants of `root` in `table` (children, their children, …).
pub fn descendants_in(table: &HashMap<u32, (u32, u64)>, root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (&pid, &(ppid, _)) in table {
            if ppid == parent && pid != root && !found.contains(&pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

/// The CPU time of `root` and every live descendant (10 ms resolution per process).
pub fn tree_cpu(root: u32) -> Duration {
    let table = process_table();
    let ticks: u64 = std::iter::once(root)
        .chain(descendants_in(&table, root))
        .filter_map(|pid| table.get(&pid).map(|&(_, t)| t))
        .sum();
    ticks_to_duration(ticks)
}

/// The CPU time of this process's children that have exited and been waited for
/// (`getrusage(RUSAGE_CHILDREN)`, µs resolution; it includes their own reaped descendants). A
/// child's time moves here from `/proc` when it is reaped: [`children_cpu`] counts both.
pub fn reaped_children_cpu() -> Duration {
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills one rusage struct, which `usage` is.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_CHILDREN)");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The CPU time used so far by this process's children (servers it spawned): the live ones
/// from `/proc/<pid>/stat` (10 ms resolution per process), the exited and reaped ones from
/// [`reaped_children_cpu`]. The difference of two readings is the children's CPU time in
/// between, also across children that exited meanwhile.
pub fn children_cpu() -> Duration {
    let me = std::process::id();
    let live: u64 = process_table()
        .values()
        .filter(|&&(ppid, _)| ppid == me)
        .map(|&(_, ticks)| ticks)
        .sum();
    ticks_to_duration(live) + reaped_children_cpu()
}

/// Samples of one quantity (seconds, calls per second, ratios…): the rounds of one row, in the
/// order they were taken.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// The samples, in the order they were taken (non-finite values are dropped).
    pub fn new(values: impl IntoIterator<Item = f64>) -> Self {
        Self(values.into_iter().filter(|x| x.is_finite()).collect())
    }

    /// Adds one sample.
    pub fn push(&mut self, value: f64) {
        if value.is_finite() {
            self.0.push(value);
        }
    }

    /// The samples, in the order they were taken.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The `p`-th percentile (0–100, nearest rank); NaN when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        let v = self.sorted();
        if v.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[rank.min(v.len() - 1)]
    }

    /// The median (the mean of the two middle samples for an even count); NaN when empty.
    pub fn median(&self) -> f64 {
        let v = self.sorted();
        let n = v.len();
        match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    /// The smallest sample; NaN when empty.
    pub fn min(&self) -> f64 {
        self.0.iter().copied().reduce(f64::min).unwrap_or(f64::NAN)
    }

    /// The largest sample; NaN when empty.
    pub fn max(&self) -> f64 {
        self.0.iter().copied().reduce(f64::max).unwrap_or(f64::NAN)
    }

    /// The ratio of each of `self`'s samples to the one of `base` taken in the same round
    /// (index by index: the rounds interleave, so drift hits both alike).
    pub fn ratio_to(&self, base: &Samples) -> Samples {
        Samples::new(self.0.iter().zip(&base.0).map(|(a, b)| a / b))
    }
}

/// One round of a load driver: the wall time, every call's latency, and the CPU time the client
/// and the peer process (an MCP server, an A2A agent) spent meanwhile.
#[derive(Debug, Clone, Default)]
pub struct Round {
    /// From the first call's start to the last call's end.
    pub wall: Duration,
    /// Every call's latency.
    pub latencies: Vec<Duration>,
    /// CPU time of the client making the calls.
    pub client_cpu: Duration,
    /// CPU time of the peer answering them.
    pub peer_cpu: Duration,
}

/// The rounds of one row, each summarised (calls/s, p50, CPU per call, one sample per round),
/// and every call's latency (for p99 over the whole row).
#[derive(Debug, Default)]
pub struct RoundRow {
    /// Calls made, over all rounds.
    pub calls: usize,
    /// Calls per second, one per round.
    pub rates: Samples,
    /// Median latency in seconds, one per round.
    pub p50s: Samples,
    /// Client CPU seconds per call, one per round.
    pub client_cpu: Samples,
    /// Peer CPU seconds per call, one per round.
    pub peer_cpu: Samples,
    /// Every latency in seconds.
    pub latencies: Samples,
}

impl RoundRow {
    /// Adds one round.
    pub fn add(&mut self, round: Round) {
        let n = round.latencies.len();
        self.calls += n;
        self.rates.push(n as f64 / round.wall.as_secs_f64());
        let latencies = Samples::new(round.latencies.iter().map(Duration::as_secs_f64));
        self.p50s.push(latencies.median());
        let per_call = |d: Duration| d.as_secs_f64() / n.max(1) as f64;
        self.client_cpu.push(per_call(round.client_cpu));
        self.peer_cpu.push(per_call(round.peer_cpu));
        for &l in latencies.values() {
            self.latencies.push(l);
        }
    }
}

/// `median [min–max]` of `samples`, each formatted by `fmt`; the median alone for one sample.
pub fn fmt_spread(samples: &Samples, fmt: impl Fn(f64) -> String) -> String {
    if samples.len() <= 1 {
        return fmt(samples.median());
    }
    format!(
        "{} [{}–{}]",
        fmt(samples.median()),
        fmt(samples.min()),
        fmt(samples.max())
    )
}

/// A duration in seconds for a table: `850 ns`, `12.3 µs`, `245 µs`, `3.13 ms`, `12 ms`, `1.14 s`.
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "–".into();
    }
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "µs")
    } else {
        (s * 1e9, "ns")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A [`Duration`] for a table (see [`fmt_seconds`]).
pub fn fmt_duration(d: Duration) -> String {
    fmt_seconds(d.as_secs_f64())
}

/// A rate (calls per second) for a table: thousands separated, two decimals under 100.
pub fn fmt_rate(r: f64) -> String {
    if !r.is_finite() {
        return "–".into();
    }
    if r >= 100.0 {
        fmt_count(r.round() as u64)
    } else {
        format!("{r:.2}")
    }
}

/// A count for a table, thousands separated: `10,000`.
pub fn fmt_count(n: impl Into<u64>) -> String {
    let s = n.into().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A ratio for a table: `1.32×`, `19×`, `3,042×`, `0.0004×`.
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        return "–".into();
    }
    if r >= 100.0 {
        format!("{}×", fmt_rate(r))
    } else if r >= 10.0 {
        format!("{r:.0}×")
    } else if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        format!("{r:.4}×")
    }
}

/// A byte count for a table: `512 B`, `3.4 KiB`, `12 MiB`.
pub fn fmt_bytes(b: f64) -> String {
    if !b.is_finite() {
        return "–".into();
    }
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// The criterion settings of the in-process benchmarks, with the warm-up and measurement times
/// they used (for the table's note): 0.5 s + 2 s per row in [`quick_mode`], else 1 s + 5 s;
/// 20,000 / 100,000 bootstrap resamples; no plots (the tables are the report, and plotting
/// takes seconds per row here); then whatever the command line says.
pub fn criterion() -> (criterion::Criterion, Duration, Duration) {
    let (warm_up, measurement) = by_mode(
        (Duration::from_millis(500), Duration::from_secs(2)),
        (Duration::from_secs(1), Duration::from_secs(5)),
    );
    let c = criterion::Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .nresamples(by_mode(20_000, 100_000))
        .without_plots()
        .configure_from_args();
    (c, warm_up, measurement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_and_round_ratios() {
        let s = Samples::new([3.0, 1.0, 2.0, 10.0]);
        assert_eq!(s.median(), 2.5);
        assert_eq!((s.min(), s.max()), (1.0, 10.0));
        // Round by round: 3/1.5, 1/1, 2/2, 10/5.
        let base = Samples::new([1.5, 1.0, 2.0, 5.0]);
        let r = s.ratio_to(&base);
        assert_eq!(r.values(), [2.0, 1.0, 1.0, 2.0]);
        assert_eq!(r.median(), 1.5);
        assert_eq!(fmt_spread(&r, fmt_ratio), "1.50× [1.00×–2.00×]");
    }

    #[test]
    fn units() {
        assert_eq!(fmt_seconds(850e-9), "850 ns");
        assert_eq!(fmt_seconds(12.34e-6), "12.3 µs");
        assert_eq!(fmt_seconds(3.134e-3), "3.13 ms");
        assert_eq!(fmt_rate(18139.4), "18,139");
        assert_eq!(fmt_ratio(3042.0), "3,042×");
        assert_eq!(fmt_bytes(3481.6), "3.4 KiB");
    }
}
