//! The scale benchmark's main table, `scale` (time as the toolset grows, with the peers), and
//! what every table is made from (`costs.rs` makes `scale-memory` and `scale-build`).

use std::time::Duration;

use toolgate::model::dialect::Dialect;
use toolgate_benches::harness::{
    Samples, fmt_bytes, fmt_duration, fmt_ratio, fmt_seconds, fmt_spread,
};
use toolgate_benches::report::{Table, criterion_estimate};
use toolgate_benches::scale::Size;

use crate::memory::{self, Measured};

use crate::peers::FastMcp;
use crate::rustc::Flags;

pub const COMMAND: &str = "cargo bench -p toolgate-benches --bench scale";

/// The memory children's results.
pub struct MemoryRuns {
    /// toolgate, per size: one measurement per round.
    pub toolgate: Vec<(usize, Vec<Measured>)>,
    /// rmcp's router, per size (deterministic: one run).
    pub rmcp: Vec<(usize, Measured)>,
    /// toolgate on GitHub + Stripe: one measurement per round.
    pub documents: Vec<Measured>,
    /// rmcp's router of GitHub + Stripe's MCP definitions (one run).
    pub documents_rmcp: Measured,
}

impl MemoryRuns {
    /// `rounds` rounds of every size and of GitHub + Stripe (in turn), and rmcp once each.
    pub fn measure(sizes: &[Size], rounds: usize) -> Self {
        let mut toolgate: Vec<(usize, Vec<Measured>)> =
            sizes.iter().map(|s| (s.tools, Vec::new())).collect();
        let mut documents = Vec::new();
        for _ in 0..rounds {
            for (n, runs) in &mut toolgate {
                runs.push(memory::measure("toolgate", *n));
            }
            documents.push(memory::measure_documents("toolgate"));
        }
        let rmcp = sizes
            .iter()
            .map(|s| (s.tools, memory::measure("rmcp", s.tools)))
            .collect();
        Self {
            toolgate,
            rmcp,
            documents,
            documents_rmcp: memory::measure_documents("rmcp"),
        }
    }
}

/// rustc's times: per flag set, the empty crate's and each size's (in `sizes` order).
pub type RustcTimes = Result<(String, Vec<(Flags, Samples, Vec<Samples>)>), String>;

/// Everything the tables are made from.
pub struct Context<'a> {
    pub sizes: &'a [Size],
    pub fastmcp: &'a [(usize, FastMcp)],
    pub memory: &'a MemoryRuns,
    pub rustc: &'a RustcTimes,
    /// (size, toolgate's `tools/list` body bytes, rmcp's).
    pub bodies: &'a [(usize, usize, usize)],
    /// The plain-clock rows: (size, id) → seconds per call, one per round.
    pub plain: &'a [((usize, String), Samples)],
    /// Criterion's warm-up and measurement per row.
    pub timing: (Duration, Duration),
    /// The plain-clock rounds and the least time of one measurement.
    pub plain_timing: (usize, Duration),
}

enum From {
    /// A plain-clock row (`plain_rounds`).
    Plain(String),
    /// A FastMCP measurement.
    FastMcp(fn(&FastMcp) -> &Samples),
}

/// One cell's measurement: rounds; `paired` when taken interleaved with toolgate's (ratios
/// round by round).
#[derive(Clone)]
struct M {
    s: Samples,
    paired: bool,
}

impl M {
    fn fmt(&self) -> String {
        fmt_spread(&self.s, fmt_seconds)
    }

    fn point(&self) -> f64 {
        self.s.median()
    }

    /// `self ÷ base × k`, with its spread: per-round ratios when both are paired, else each of
    /// `self`'s samples over `base`'s median.
    fn ratio(&self, base: &M, k: f64) -> String {
        let r = if self.paired && base.paired {
            self.s.ratio_to(&base.s)
        } else {
            let b = base.point();
            Samples::new(self.s.values().iter().map(|x| x / b))
        };
        fmt_spread(&Samples::new(r.values().iter().map(|x| x * k)), fmt_ratio)
    }
}

struct Row {
    op: &'static str,
    what: String,
    from: From,
    /// Listing, export and startup rows: compared per tool across sizes.
    per_tool: bool,
    /// The index of the toolgate row a peer row is compared with.
    vs: Option<usize>,
}

fn row(op: &'static str, what: &str, from: From, per_tool: bool, vs: Option<usize>) -> Row {
    Row {
        op,
        what: what.to_string(),
        from,
        per_tool,
        vs,
    }
}

fn plain(f: &str) -> From {
    From::Plain(f.to_string())
}

fn rows() -> Vec<Row> {
    let mut rows = vec![
        row(
            "lookup",
            "toolgate `Toolset::describe`, the same name every time",
            plain("describe: same name"),
            false,
            None,
        ),
        row(
            "lookup",
            "toolgate `Toolset::describe`, every name in turn",
            plain("describe: names in turn"),
            false,
            None,
        ),
        row(
            "lookup",
            "toolgate `Toolset::describe`, every exported name (`api__…`, as a model sends it) in turn",
            plain("describe: exported names in turn"),
            false,
            None,
        ),
        row(
            "lookup",
            "toolgate: the catalog's name index (`Catalog::contains`, no entry touched), every name in turn",
            plain("catalog index: names in turn"),
            false,
            None,
        ),
        row(
            "lookup",
            "rmcp `ToolRouter::get`, every exported name in turn",
            plain("rmcp get: names in turn"),
            false,
            Some(2),
        ),
        row(
            "lookup",
            "FastMCP `get_tool`, every name in turn",
            From::FastMcp(|f| &f.lookup),
            false,
            Some(2),
        ),
        row(
            "list",
            "toolgate `Toolset::tools()` (shared descriptors)",
            plain("tools()"),
            true,
            None,
        ),
        row(
            "list",
            "rmcp `ToolRouter::list_all()` (cloned `Tool`s, sorted)",
            plain("rmcp list_all()"),
            true,
            Some(6),
        ),
        row(
            "list",
            "FastMCP `list_tools()`, warm",
            From::FastMcp(|f| &f.list),
            true,
            Some(6),
        ),
    ];
    for d in Dialect::ALL {
        rows.push(row(
            "export",
            &format!("toolgate `Toolset::export`, `{}`", d.as_str()),
            plain(&crate::export_id(d)),
            true,
            None,
        ));
    }
    let body = rows.len();
    rows.extend([
        row(
            "`tools/list` body",
            "toolgate gateway: every page of MCP `tools/list` (100 tools a page, as `toolgate serve` answers) + `serde_json::to_string` of each",
            plain("gateway tools/list pages"),
            true,
            None,
        ),
        row(
            "`tools/list` body",
            "toolgate: MCP export + `serde_json::to_string`",
            plain("tools/list body"),
            true,
            None,
        ),
        row(
            "`tools/list` body",
            "rmcp: `list_all()` + `serde_json::to_string`",
            plain("rmcp tools/list body"),
            true,
            Some(body),
        ),
        row(
            "`tools/list` body",
            "FastMCP: `list_tools()` + `to_mcp_tool()` + `model_dump_json`",
            From::FastMcp(|f| &f.body),
            true,
            Some(body),
        ),
    ]);
    let startup = rows.len();
    rows.extend([
        row(
            "startup",
            "toolgate `toolset().build()` (embedded conversion parsed, descriptors built)",
            plain("build toolset"),
            true,
            None,
        ),
        row(
            "startup",
            "FastMCP `from_openapi` + first `list_tools()` (its tools are built lazily)",
            From::FastMcp(|f| &f.startup),
            true,
            Some(startup),
        ),
    ]);
    rows
}

pub fn thousands(n: usize) -> String {
    toolgate_benches::harness::fmt_count(n as u64)
}

/// The `scale` table.
pub fn scale(ctx: &Context<'_>) -> Table {
    let sizes: Vec<usize> = ctx.sizes.iter().map(|s| s.tools).collect();
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    let mut columns = vec!["operation".to_string(), "implementation".to_string()];
    columns.extend(sizes.iter().map(|n| format!("{} tools", thousands(*n))));
    columns.push(format!("per tool at {}", thousands(last)));
    columns.push(format!(
        "{} ÷ {} tools: per lookup, else per tool (flat = 1.00×; lower = better)",
        thousands(last),
        thousands(first)
    ));
    columns.push("peer ÷ toolgate, same size (largest measured; higher = toolgate faster)".into());
    let mut table = Table::new(
        "scale",
        &format!(
            "toolsets of {} tools generated by toolgate's codegen from a synthetic OpenAPI 3.1 \
             document (five operations per resource: list, get, create, update, delete; path, \
             query and header parameters, JSON bodies, enums, `$ref`s to shared components) \
             compiled in by a tools.yaml (`load: build`, `typed: false`): name lookup, listing, \
             export of every definition in each dialect, a `tools/list` body and startup, as the \
             toolset grows; next to rmcp's `ToolRouter` holding the same MCP definitions and \
             FastMCP `from_openapi` on the same document.",
            sizes
                .iter()
                .map(|n| thousands(*n))
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        COMMAND,
    )
    .columns(columns);
    let rows = rows();
    let measure = |r: &Row, n: usize| -> Option<M> {
        match &r.from {
            From::Plain(id) => {
                ctx.plain
                    .iter()
                    .find(|((m, i), _)| *m == n && i == id)
                    .map(|(_, s)| M {
                        s: s.clone(),
                        paired: true,
                    })
            }
            From::FastMcp(get) => ctx
                .fastmcp
                .iter()
                .find(|(m, _)| *m == n)
                .map(|(_, f)| get(f).clone())
                .filter(|s| !s.is_empty())
                .map(|s| M { s, paired: false }),
        }
    };
    let all: Vec<Vec<Option<M>>> = rows
        .iter()
        .map(|r| sizes.iter().map(|&n| measure(r, n)).collect())
        .collect();
    for (i, r) in rows.iter().enumerate() {
        let m = &all[i];
        let mut cells = vec![r.op.to_string(), r.what.clone()];
        cells.extend(m.iter().map(|c| c.as_ref().map_or("–".into(), M::fmt)));
        let at_last = m.last().cloned().flatten();
        cells.push(match (r.per_tool, &at_last) {
            (true, Some(c)) => fmt_seconds(c.point() / last as f64),
            _ => "–".into(),
        });
        let k = if r.per_tool {
            first as f64 / last as f64
        } else {
            1.0
        };
        cells.push(match (&m[0], &at_last) {
            (Some(a), Some(b)) => b.ratio(a, k),
            _ => "–".into(),
        });
        let versus = r.vs.and_then(|base| {
            (0..sizes.len()).rev().find_map(|j| {
                let (p, t) = (all[i][j].as_ref()?, all[base][j].as_ref()?);
                Some(format!(
                    "{} ({} tools)",
                    p.ratio(t, 1.0),
                    thousands(sizes[j])
                ))
            })
        });
        cells.push(versus.unwrap_or_else(|| "–".into()));
        table.row(cells);
    }
    // The goal: lookup stays flat.
    let growth = |i: usize| match (&all[i][0], &all[i][sizes.len() - 1]) {
        (Some(a), Some(b)) => Some(b.s.ratio_to(&a.s)),
        _ => None,
    };
    let criterion_growth = |f: &str| {
        let e = |n: usize| criterion_estimate(&format!("{}/{f}", crate::group(n)));
        match (e(first), e(last)) {
            (Some(a), Some(b)) => b.ratio_to(&a).fmt(fmt_ratio),
            _ => "–".into(),
        }
    };
    if let (Some(g), Some(same)) = (growth(1), growth(0)) {
        let spread = |s: Option<Samples>| s.map_or("–".into(), |s| fmt_spread(&s, fmt_ratio));
        let met = if g.median() <= 1.5 {
            "**met**"
        } else {
            "**not met**"
        };
        table.note(format!(
            "Goal: lookup stays flat, taken here as a lookup at {} tools within 1.5× of one at \
             {} (a scan would be {}× slower). {met}: `Toolset::describe` with every name in turn, \
             {} ÷ {} tools = {} (criterion's estimates, not interleaved: {}); the same name \
             every time: {}; exported names: {}; the source's index alone: {}; rmcp's \
             `HashMap` on the same names: {}.",
            thousands(last),
            thousands(first),
            thousands(last / first),
            thousands(last),
            thousands(first),
            fmt_spread(&g, fmt_ratio),
            criterion_growth("describe: names in turn"),
            fmt_spread(&same, fmt_ratio),
            spread(growth(2)),
            spread(growth(3)),
            spread(growth(4)),
        ));
        if g.median() > 1.5 {
            table.note(
                "What limits it: every lookup is one hash-map probe at any size (no scan), but a \
                 lookup touches the index's slot, the name in the catalog's shared name buffer, \
                 the entry and its descriptor (whose `Arc` count it writes), and at 10 000 tools \
                 and more these are spread over too much heap (see `scale-memory`) to stay in \
                 cache, so names taken in turn miss the caches several times per lookup; a name \
                 looked up again stays at its 10-tool cost, and rmcp's `HashMap` grows alike. \
                 What would lower it: fewer cache lines per lookup (the entry's hot fields next \
                 to its index slot, no reference-count write when the caller only needs to know \
                 the tool), smaller entries.",
            );
        }
    }
    table.note(format!(
        "Plain clock (this process's CPU time, `CLOCK_PROCESS_CPUTIME_ID`: single-threaded \
         here, and unlike the wall clock it does not count other processes' turns on the \
         shared cores): {} rounds with every size's rows interleaved (the order rotating by \
         round), each measurement repeating its call for at least {} (once when slower; \
         lookups take the names in turn, after one untimed pass over all of them), the results dropped after the clock stops; \
         a cell is the median [min–max] of the rounds, ratios are taken round by round. The \
         lookups also run under criterion (group `scale/n{{N}}`, {} warm-up, {} measurement, \
         for `--save-baseline`; the two `describe` rows only in quick mode). FastMCP (`benches/peers/scale_fastmcp.py`, a fresh interpreter \
         per size, after toolgate's rows; its CPU time too, `time.process_time()`): median \
         [min–max] of its repetitions (2 warm listings \
         and bodies below 10 000 tools in full mode, 1 at 10 000 and in quick mode; `get_tool` averaged over 2 000 calls, as \
         many times; startup once), its ratios to toolgate's median. \"Per tool\" and the growth of \
         listing, export, body and startup rows divide by the tool count: flat = linear in the \
         toolset.",
        ctx.plain_timing.0,
        fmt_duration(ctx.plain_timing.1),
        fmt_duration(ctx.timing.0),
        fmt_duration(ctx.timing.1),
    ));
    table.note(
        "Lookups take names in a fixed shuffled order across the whole toolset, so that \
         consecutive lookups touch different memory; rmcp's router holds toolgate's MCP export \
         (the same definitions, keyed by exported name). `Toolset::tools()` hands out shared \
         descriptors (an `Arc` each, and a name set against shadowing); rmcp's `list_all()` \
         clones each `Tool` and sorts; FastMCP's `list_tools()` runs its middleware and \
         transforms on every listing. Exports are computed once per catalog entry and dialect \
         and shared (a `Toolset::export` clones each); the gateway's `tools/list` pages convert \
         each definition to rmcp's `Tool` once, then clone it per page (its rows are warm: \
         converted by the check before timing; with `policy.rules` each entry's rules are \
         checked per listing too, which this toolset, without rules, does not measure).",
    );
    for &(n, tg, rm) in ctx.bodies.iter().filter(|b| b.0 == last) {
        let fm = ctx.fastmcp.iter().find(|(m, _)| *m == n).map_or_else(
            || {
                ctx.fastmcp.last().map_or("–".into(), |(m, f)| {
                    format!("{} at {} tools", fmt_bytes(f.body_bytes), thousands(*m))
                })
            },
            |(_, f)| fmt_bytes(f.body_bytes),
        );
        table.note(format!(
            "`tools/list` body at {} tools: toolgate {}, rmcp {} (the same definitions), \
             FastMCP {fm}.",
            thousands(n),
            fmt_bytes(tg as f64),
            fmt_bytes(rm as f64),
        ));
    }
    if ctx.fastmcp.is_empty() {
        table.note(
            "FastMCP rows not measured: no `.peers/venv-fastmcp` (`scripts/install-peers.sh`).",
        );
    } else if !ctx.fastmcp.iter().any(|(n, _)| *n == last) {
        table.note(format!(
            "FastMCP at {} tools is measured in full mode only (about 50 s).",
            thousands(last)
        ));
    }
    for (n, f) in ctx.fastmcp {
        if f.tools != *n {
            table.note(format!(
                "FastMCP made {} tools of the {n}-operation document.",
                f.tools
            ));
        }
    }
    table
}
