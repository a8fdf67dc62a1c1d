//! `toolgate openapi inspect SPEC`: an OpenAPI document converted into tools, without a
//! config: each tool (name, method and path, arguments and where each goes), every warning and
//! skipped operation; `toolgate check`'s report of the OpenAPI sources of a tools.yaml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::model::dialect::{Dialect, ToolSchema, export_with_notes};
use toolgate::model::openapi::{
    BodyLayout, Conversion, ConvertOptions, Document, OpenApiError, Operation, Skipped, Warning,
    convert,
};

use crate::cli::args::exit;
use crate::cli::{CmdResult, Failure, output};

/// How long fetching a document by URL may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// `toolgate openapi inspect`.
pub(crate) fn inspect(spec: &str, json: bool, dialect: Option<Dialect>) -> CmdResult {
    let unreadable = |e: String| Failure::new(exit::USAGE, format!("error: {e}"));
    let doc = if spec.starts_with("http://") || spec.starts_with("https://") {
        let text = fetch(spec).map_err(unreadable)?;
        Document::from_text(&text, spec).map_err(|e| unreadable(e.to_string()))?
    } else {
        Document::from_file(spec).map_err(|e| unreadable(e.to_string()))?
    };
    let conversion =
        convert(&doc, &ConvertOptions::default()).map_err(|e| unreadable(e.to_string()))?;
    if json {
        output::print_json(&inspect_json(&conversion, dialect.unwrap_or(Dialect::Mcp)));
    } else {
        print_inspect(&conversion, dialect);
    }
    Ok(exit::OK)
}

/// The document at `url`, with a 30 s timeout.
fn fetch(url: &str) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot fetch `{url}`: {e}"))?;
        let response = client
            .get(url)
            .header(
                "Accept",
                "application/json, application/yaml;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| format!("cannot fetch `{url}`: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("cannot fetch `{url}`: HTTP {status}"));
        }
        response
            .text()
            .await
            .map_err(|e| format!("cannot fetch `{url}`: {e}"))
    })
}

/// One argument of a tool: its name in the input schema, where it is sent, whether it is
/// required, and its name on the wire when that differs.
struct Argument {
    name: String,
    location: &'static str,
    wire: Option<String>,
    required: bool,
    description: Option<String>,
}

fn arguments(op: &Operation) -> Vec<Argument> {
    let props = op
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = op
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, schema)| {
            let (location, wire) = if let Some(p) = op.parameters.iter().find(|p| &p.arg == name) {
                let loc = match p.location {
                    toolgate::model::openapi::ParamLocation::Path => "path",
                    toolgate::model::openapi::ParamLocation::Query => "query",
                    toolgate::model::openapi::ParamLocation::Header => "header",
                    toolgate::model::openapi::ParamLocation::Cookie => "cookie",
                };
                (loc, (p.name != *name).then(|| p.name.clone()))
            } else {
                match op.body.as_ref().map(|b| &b.layout) {
                    Some(BodyLayout::Flattened { fields }) => {
                        let wire = fields
                            .iter()
                            .find(|f| &f.arg == name)
                            .and_then(|f| (f.name != *name).then(|| f.name.clone()));
                        ("body", wire)
                    }
                    Some(BodyLayout::Property { .. }) => ("body", None),
                    None => ("unknown", None),
                }
            };
            Argument {
                name: name.clone(),
                location,
                wire,
                required: required.contains(&name.as_str()),
                description: schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
        })
        .collect()
}

/// The input schema as `dialect` exports it (`inputSchema` for MCP, `parameters` for OpenAI
/// and Gemini, `input_schema` for Anthropic) with the export's notes (what the dialect could
/// not say as is, e.g. a recursive type unrolled for Gemini), or the export error.
fn exported_input(op: &Operation, dialect: Dialect) -> Result<(Value, Vec<String>), String> {
    let view = ToolSchema {
        name: &op.name,
        description: &op.description,
        input_schema: &op.input_schema,
        output_schema: op.output_schema.as_ref(),
        annotations: None,
    };
    let (def, notes) = export_with_notes(dialect, &view).map_err(|e| e.to_string())?;
    let key = ["inputSchema", "parameters", "input_schema"]
        .into_iter()
        .find(|k| def.get(k).is_some());
    let input = match key {
        Some(k) => def[k].clone(),
        None => def
            .get("function")
            .and_then(|f| f.get("parameters"))
            .cloned()
            .unwrap_or(def),
    };
    Ok((input, notes))
}

fn inspect_json(c: &Conversion, dialect: Dialect) -> Value {
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|op| {
            let args: Vec<Value> = arguments(op)
                .into_iter()
                .map(|a| {
                    let mut v = json!({"name": a.name, "in": a.location, "required": a.required});
                    if let Some(w) = a.wire {
                        v["wire_name"] = w.into();
                    }
                    if let Some(d) = a.description {
                        v["description"] = d.into();
                    }
                    v
                })
                .collect();
            let (input, notes) = match exported_input(op, dialect) {
                Ok((input, notes)) => (input, notes),
                Err(e) => (json!({"error": e}), Vec::new()),
            };
            json!({
                "name": op.name,
                "method": op.method,
                "path": op.path,
                "operation_id": op.operation_id,
                "pointer": op.pointer,
                "description": op.description,
                "deprecated": op.deprecated,
                "arguments": args,
                "input_schema": input,
                "export_notes": notes,
                "output_schema": op.output_schema,
            })
        })
        .collect();
    json!({
        "document": {
            "title": c.title,
            "version": c.version,
            "openapi": c.openapi,
            "operations": c.operations,
            "tools": c.tools.len(),
            "excluded": c.excluded,
            "skipped": c.skipped.len(),
            "servers": c.servers,
        },
        "dialect": dialect.as_str(),
        "tools": tools,
        "warnings": c.warnings,
        "skipped": c.skipped,
    })
}

fn print_inspect(c: &Conversion, dialect: Option<Dialect>) {
    output::print_text(&format!(
        "{} {} (OpenAPI {}): {} operation(s), {} tool(s), {} skipped",
        c.title,
        c.version,
        c.openapi,
        c.operations,
        c.tools.len(),
        c.skipped.len()
    ));
    let width = c.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for op in &c.tools {
        output::print_text(&format!("\n{:width$}  {} {}", op.name, op.method, op.path));
        let summary = op.description.lines().next().unwrap_or("");
        if !summary.is_empty() {
            output::print_text(&format!("  {summary}"));
        }
        for a in arguments(op) {
            let mut line = format!(
                "    {} ({}{})",
                a.name,
                a.location,
                if a.required { ", required" } else { "" }
            );
            if let Some(w) = &a.wire {
                line.push_str(&format!(" sent as `{w}`"));
            }
            if let Some(d) = &a.description {
                let d = d.lines().next().unwrap_or("");
                let d = toolgate::model::text::cut(d, 100);
                line.push_str(&format!(": {d}"));
            }
            output::print_text(&line);
        }
        if let Some(d) = dialect {
            match exported_input(op, d) {
                Ok((schema, notes)) => {
                    output::print_text(&format!(
                        "  input schema ({d}):\n{}",
                        indent(&serde_json::to_string_pretty(&schema).unwrap_or_default())
                    ));
                    for n in notes {
                        output::print_text(&format!("  note: {n}"));
                    }
                }
                Err(e) => output::print_text(&format!("  error: {e}")),
            }
        }
    }
    print_remarks(c, "", false);
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every skipped operation and every warning, one per line (after a blank line when any).
fn print_remarks(c: &Conversion, prefix: &str, grouped: bool) {
    if (!c.skipped.is_empty() || !c.warnings.is_empty()) && prefix.is_empty() {
        output::print_text("");
    }
    for s in &c.skipped {
        output::print_text(&skipped_line(prefix, s));
    }
    if grouped {
        let mut by_code: BTreeMap<&str, Vec<&Warning>> = BTreeMap::new();
        for w in &c.warnings {
            by_code.entry(&w.code).or_default().push(w);
        }
        for (code, ws) in by_code {
            output::print_text(&format!("{prefix}warnings {code}: {}", ws.len()));
            for w in ws {
                output::print_text(&format!("{prefix}  {}: {}", w.pointer, w.message));
            }
        }
    } else {
        for w in &c.warnings {
            output::print_text(&format!(
                "{prefix}warning: {} at {}: {}",
                w.code, w.pointer, w.message
            ));
        }
    }
}

fn skipped_line(prefix: &str, s: &Skipped) -> String {
    format!(
        "{prefix}skipped: {} {}{}: {} at {}: {}",
        s.method,
        s.path,
        s.operation_id
            .as_ref()
            .map(|id| format!(" ({id})"))
            .unwrap_or_default(),
        s.reason.code,
        s.reason.pointer,
        s.reason.message
    )
}

/// `toolgate check`: the conversion report of one OpenAPI source.
pub(crate) fn print_source_report(id: &str, spec: &str, load: &str, c: &Conversion) {
    output::print_text(&format!(
        "  openapi {id} ({spec}, load: {load}): {} {} (OpenAPI {}): {} operation(s): {} tool(s), {} excluded, {} skipped; {} warning(s)",
        c.title,
        c.version,
        c.openapi,
        c.operations,
        c.tools.len(),
        c.excluded,
        c.skipped.len(),
        c.warnings.len(),
    ));
    print_remarks(c, "    ", true);
}

/// The conversion of a `load: runtime` entry whose `spec` is a file, for `toolgate check`
/// (relative to the folder of tools.yaml); URLs are not fetched by `check`.
pub(crate) fn convert_runtime_entry(
    entry: &toolgate::model::config::OpenApiSource,
    base: &Path,
) -> Option<Result<Conversion, OpenApiError>> {
    if entry.spec_is_url() {
        return None;
    }
    let path: PathBuf = base.join(&entry.spec);
    Some(Document::from_file(path).and_then(|d| convert(&d, &ConvertOptions::for_source(entry))))
}
