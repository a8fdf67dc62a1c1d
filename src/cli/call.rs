//! `toolgate call NAME ARGS`: reading ARGS, one call, its output and exit code.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;
use toolgate::{ErrorKind, ToolContext, Toolset};

use super::args::exit;
use super::{CmdResult, Failure, output};

/// `ARGS` for tool `tool`: JSON text, `@file`, or `-` (stdin). An object, `null`, or a string
/// holding the object (decoded by the toolset, as on every front).
///
/// # Errors
/// Exit 2 (usage) when ARGS cannot be read, is not JSON (`arguments for `tool` are not valid
/// JSON at line L column C`), or is JSON of another type.
pub(super) fn read_args(raw: &str, tool: &str) -> Result<Value, Failure> {
    let (text, origin) = if raw == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("error: cannot read ARGS from stdin: {e}"),
            )
        })?;
        (s, "stdin".to_string())
    } else if let Some(path) = raw.strip_prefix('@') {
        let s = std::fs::read_to_string(path).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("error: cannot read ARGS from `{path}`: {e}"),
            )
        })?;
        (s, format!("`{path}`"))
    } else {
        (raw.to_string(), "the command line".to_string())
    };
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!(
                "error: {} (ARGS from {origin}; expected an object such as '{{\"path\": \"README.md\"}}')",
                toolgate::ToolError::arguments_not_json(tool, &e).message()
            ),
        )
    })
    .and_then(|v: Value| match v {
        Value::Object(_) | Value::Null | Value::String(_) => Ok(v),
        other => Err(Failure::new(
            exit::USAGE,
            format!(
                "error: ARGS from {origin} must be a JSON object of named arguments, got `{}`",
                toolgate::model::text::cut(&other.to_string(), 80)
            ),
        )),
    })
}

/// The caller `toolgate call` calls as (no roles).
pub(super) const CLI_CALLER: &str = "cli";

pub(super) async fn call(
    tools: &Toolset,
    name: &str,
    args: Value,
    json: bool,
    timeout_ms: Option<u64>,
) -> CmdResult {
    // A tool's progress reports (MCP `notifications/progress`) go to stderr as they come.
    let mut ctx =
        ToolContext::builder()
            .caller(CLI_CALLER)
            .progress(toolgate::ProgressReporter::new(|p| {
                output::write_err(&output::progress_line(&p));
            }));
    if let Some(ms) = timeout_ms {
        ctx = ctx.timeout(Duration::from_millis(ms));
    }
    match tools.call_with(name, args, ctx.build()).await {
        Ok(out) => {
            output::call_output(&out, json);
            Ok(if out.is_error {
                exit::TOOL_ERROR
            } else {
                exit::OK
            })
        }
        // The agent asked a question: shown as the result, not as a failure.
        Err(e) if e.kind() == ErrorKind::InputRequired => {
            output::call_output(&e.into_output(), json);
            Ok(exit::INPUT_REQUIRED)
        }
        Err(e) => {
            if json {
                output::print_json(&serde_json::json!({ "error": e }));
            }
            // Exit 4 means "no tool of that name"; a tool that ran and reports `not_found`
            // (e.g. read_file of a missing file) is a failed call like any other (exit 1).
            if e.kind() == ErrorKind::NotFound && tools.describe(name).is_none() {
                return Err(super::not_found(tools, name).await);
            }
            Err(Failure::new(exit::TOOL_ERROR, output::error_text(&e)))
        }
    }
}
