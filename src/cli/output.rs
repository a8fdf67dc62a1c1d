//! How the command line prints tools, results and errors.

use std::sync::Arc;

use serde::Serialize;
use toolgate::{Content, ToolDescriptor, ToolError, ToolOutput, Toolset};

/// `println!` for the command's output. When stdout is closed early (`toolgate list | head`),
/// the command ends quietly instead of panicking with "failed printing to stdout".
macro_rules! outln {
    () => {
        write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        write_line(format_args!($($arg)*))
    };
}

/// One line on stdout, every configured secret masked (`toolgate_model::secrets`); ends the
/// process if stdout cannot be written (status 0 for a closed pipe, as `yes | head` does; 1
/// otherwise).
fn write_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let text = args.to_string();
    let text = toolgate::model::secrets::redact(&text);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        write_err(&format!("error: cannot write to stdout: {e}"));
        std::process::exit(1);
    }
}

/// Pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => outln!("{s}"),
        Err(e) => write_err(&format!("error: internal: cannot print JSON: {e}")),
    }
}

/// `toolgate list`: the tools `toolgate call` may call (its caller, `cli`, has no roles, so
/// a tool that `policy.rules` keeps for some roles is left out, as MCP and REST listings leave
/// it out for such a caller).
/// Which tools `toolgate list` shows: every filter given must hold (within one, any value).
#[derive(Debug, Default)]
pub struct ListFilter<'a> {
    /// The tool's category.
    pub category: Option<&'a str>,
    /// The tool's source ids.
    pub sources: &'a [String],
    /// The tool's tags.
    pub tags: &'a [String],
}

impl ListFilter<'_> {
    fn admits(&self, d: &ToolDescriptor) -> bool {
        self.category
            .is_none_or(|c| d.category.as_deref() == Some(c))
            && (self.sources.is_empty() || self.sources.contains(&d.source))
            && (self.tags.is_empty() || d.tags.iter().any(|t| self.tags.contains(t)))
    }
}

pub fn list(tools: &Toolset, json: bool, filter: &ListFilter<'_>) {
    let caller = cli_identity();
    let selected: Vec<Arc<ToolDescriptor>> = tools
        .tools_for(&caller)
        .into_iter()
        .filter(|d| filter.admits(d))
        .collect();
    if json {
        let plain: Vec<&ToolDescriptor> = selected.iter().map(|d| &**d).collect();
        print_json(&plain);
        return;
    }
    let width = selected.iter().map(|d| d.name.len()).max().unwrap_or(0);
    let cat_width = selected
        .iter()
        .map(|d| d.category.as_deref().unwrap_or("-").len())
        .max()
        .unwrap_or(0);
    for d in &selected {
        let summary = d.description.lines().next().unwrap_or("");
        outln!(
            "{:width$}  {:cat_width$}  {summary}",
            d.name,
            d.category.as_deref().unwrap_or("-")
        );
    }
}

/// Who the command line lists, searches and calls as: the caller `cli`, without roles.
pub fn cli_identity() -> toolgate::Identity {
    toolgate::Identity {
        caller: Some(super::call::CLI_CALLER.to_string()),
        ..toolgate::Identity::default()
    }
}

/// One hit of `toolgate search --json`.
#[derive(Serialize)]
struct SearchHitOut<'a> {
    name: &'a str,
    exported_name: &'a str,
    score: f32,
    matched: &'a [toolgate::SearchField],
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<&'a str>,
    source: &'a str,
}

/// `toolgate search`: one line per hit, best first (score, name, matched fields, the first
/// line of the description), or the hits as a JSON array. No hit: a note on stderr.
pub fn search_hits(hits: &[toolgate::SearchHit], json: bool) {
    if json {
        let out: Vec<SearchHitOut<'_>> = hits
            .iter()
            .map(|h| {
                let d = h.entry.descriptor();
                SearchHitOut {
                    name: &h.name,
                    exported_name: &h.exported_name,
                    score: h.score,
                    matched: &h.matched,
                    description: &d.description,
                    category: d.category.as_deref(),
                    source: &d.source,
                }
            })
            .collect();
        print_json(&out);
        return;
    }
    if hits.is_empty() {
        write_err("no tool fits the query");
        return;
    }
    let width = hits.iter().map(|h| h.name.len()).max().unwrap_or(0);
    let fields: Vec<String> = hits
        .iter()
        .map(|h| {
            h.matched
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let fields_width = fields.iter().map(String::len).max().unwrap_or(0);
    for (h, matched) in hits.iter().zip(&fields) {
        let summary = h
            .entry
            .descriptor()
            .description
            .lines()
            .next()
            .unwrap_or("");
        outln!(
            "{:>7.3}  {:width$}  {matched:fields_width$}  {summary}",
            h.score,
            h.name
        );
    }
}

/// After a listing: the sources whose tools are missing from it, with their state and error
/// (on stdout after a table; on stderr next to JSON, which stays a plain array).
pub fn unavailable(statuses: &[toolgate::SourceStatus], json: bool) {
    for s in statuses {
        let line = match s.state {
            toolgate::SourceState::Ready => continue,
            toolgate::SourceState::Pending => format!(
                "source `{}` ({}): lazy, not contacted yet (its tools are listed after first use; `toolgate discover` contacts it)",
                s.id, s.kind
            ),
            state => format!(
                "source `{}` ({}): {}: {}",
                s.id,
                s.kind,
                state_name(state),
                s.error.as_deref().unwrap_or("no error recorded")
            ),
        };
        if json {
            write_err(&format!("warning: {line}"));
        } else {
            outln!("{line}");
        }
    }
}

fn state_name(state: toolgate::SourceState) -> &'static str {
    match state {
        toolgate::SourceState::Pending => "pending",
        toolgate::SourceState::Ready => "ready",
        toolgate::SourceState::Degraded => "degraded",
        toolgate::SourceState::Failed => "failed",
        toolgate::SourceState::Closed => "closed",
    }
}

/// `toolgate discover`: one line per source (or every status as JSON).
pub fn statuses(statuses: &[toolgate::SourceStatus], json: bool) {
    if json {
        print_json(&statuses);
        return;
    }
    let id_width = statuses
        .iter()
        .map(|s| s.id.len())
        .max()
        .unwrap_or(2)
        .max(6);
    outln!(
        "{:id_width$}  {:11}  {:8}  {:>5}  {:>6}  {:16}  SERVER",
        "SOURCE",
        "KIND",
        "STATE",
        "TOOLS",
        "MS",
        "PROTOCOL"
    );
    for s in statuses {
        outln!(
            "{:id_width$}  {:11}  {:8}  {:>5}  {:>6}  {:16}  {}",
            s.id,
            s.kind,
            state_name(s.state),
            s.tools,
            s.discovery_ms
                .map_or_else(|| "-".to_string(), |ms| ms.to_string()),
            s.protocol.as_deref().unwrap_or("-"),
            s.server.as_deref().unwrap_or("-"),
        );
        if let Some(e) = &s.error {
            outln!("{:id_width$}  error: {e}", "");
        }
        for r in &s.rejected {
            outln!("{:id_width$}  left out: {r}", "");
        }
    }
}

/// `progress: 3/10 step 3` (or `progress: 3` without a total).
pub fn progress_line(p: &toolgate::Progress) -> String {
    let mut line = match p.total {
        Some(total) => format!("progress: {}/{}", p.progress, total),
        None => format!("progress: {}", p.progress),
    };
    if let Some(m) = &p.message {
        line.push(' ');
        line.push_str(m);
    }
    line
}

/// Text on stdout as it is.
pub fn print_text(text: &str) {
    outln!("{}", text.trim_end());
}

/// `toolgate describe`.
pub fn describe(d: &ToolDescriptor) {
    outln!("{}", d.name);
    outln!();
    for line in d.description.lines() {
        outln!("  {line}");
    }
    outln!();
    let mut facts = vec![format!("source: {}", d.source)];
    if let Some(c) = &d.category {
        facts.push(format!("category: {c}"));
    }
    if !d.tags.is_empty() {
        facts.push(format!("tags: {}", d.tags.join(", ")));
    }
    if let Some(v) = &d.version {
        facts.push(format!("version: {v}"));
    }
    if let Some(t) = d.timeout {
        facts.push(format!("timeout: {} ms", t.as_millis()));
    }
    for (flag, on) in [
        ("dangerous", d.dangerous),
        ("requires_auth", d.requires_auth),
        ("blocking", d.blocking),
        ("read_only", d.annotations.read_only_hint == Some(true)),
        ("idempotent", d.annotations.idempotent_hint == Some(true)),
    ] {
        if on {
            facts.push(flag.to_string());
        }
    }
    outln!("{}", facts.join(" | "));
    outln!();
    outln!("input schema:");
    print_json(&d.input_schema);
    if let Some(o) = &d.output_schema {
        outln!("output schema:");
        print_json(o);
    }
}

/// The result of `toolgate call`: text parts as they are, other parts as one line each.
pub fn call_output(out: &ToolOutput, json: bool) {
    if json {
        print_json(out);
        return;
    }
    if out.content.is_empty() {
        outln!("(tool returned no content)");
    }
    for part in &out.content {
        match part {
            Content::Text { text } => outln!("{text}"),
            Content::Image { data, mime_type } => {
                outln!("[image {mime_type}, {} base64 chars]", data.len())
            }
            Content::Audio { data, mime_type } => {
                outln!("[audio {mime_type}, {} base64 chars]", data.len())
            }
            Content::ResourceLink { uri, name, .. } => outln!("[resource link {name}: {uri}]"),
            Content::Resource { resource } => match serde_json::to_string(resource) {
                Ok(s) => outln!("[embedded resource {s}]"),
                Err(_) => outln!("[embedded resource]"),
            },
        }
    }
    if out.is_error {
        write_err("error: the tool reported a failure (isError: true)");
    }
}

/// `error: <kind>: <message>`, plus one line per argument error.
pub fn error_text(e: &ToolError) -> String {
    let mut s = format!("error: {e}");
    let args = e.argument_errors();
    if args.len() > 1 {
        for a in args {
            s.push_str(&format!(
                "\n  at {}: {}",
                if a.pointer.is_empty() {
                    "/"
                } else {
                    &a.pointer
                },
                a.message
            ));
        }
    }
    if let Some(after) = e.retry_after() {
        s.push_str(&format!("\n  retry after {} ms", after.as_millis()));
    }
    s
}

/// `toolgate check`: what the toolset holds, then every warning.
pub fn check_report(report: &toolgate_codegen::Report) {
    let json_tools: usize = report.json_sources.iter().map(|s| s.tools.len()).sum();
    let openapi_tools: usize = report
        .openapi_sources
        .iter()
        .map(|s| s.conversion.tools.len())
        .sum();
    outln!(
        "{}: ok: {} local tool(s), {} json_schema tool(s), {} compiled OpenAPI tool(s), {} state type(s), {} OpenAPI / {} MCP / {} A2A source(s)",
        report.config.path.display(),
        report.tools.len(),
        json_tools,
        openapi_tools,
        report.states.len(),
        report.config.tools.openapi.len(),
        report.config.tools.mcp.len(),
        report.config.tools.a2a.len(),
    );
    for t in &report.tools {
        outln!("  tool {:24} {}", t.name, t.function);
    }
    for s in &report.json_sources {
        for t in &s.tools {
            outln!(
                "  tool {:24} {} (json_schema `{}`)",
                s.full_name(t),
                s.handler,
                s.id
            );
        }
    }
    for s in &report.states {
        if s.tools.is_empty() {
            outln!("  state {} (taken by no tool)", s.ty);
        } else {
            outln!("  state {} (taken by {})", s.ty, s.tools.join(", "));
        }
    }
    for w in &report.warnings {
        outln!("{w}");
    }
}

/// One line on stderr; a closed stderr is ignored (never a panic).
/// Control characters a remote end put in a message (ANSI escapes, NUL) are shown escaped,
/// never sent to the terminal; newlines and tabs stay.
pub fn write_err(line: &str) {
    use std::io::Write;
    let line: String = toolgate::model::secrets::redact(line)
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
