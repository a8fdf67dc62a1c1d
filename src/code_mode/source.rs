//! [`CodeModeSource`]: the tools `run_python` and `describe_code_api`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_sandbox::{RunRequest, SandboxError, ToolHost};

use super::host::{ContextHost, as_code, inside_code};
use super::{CodeModeSettings, DESCRIBE_CODE_API, RUN_PYTHON, python_stubs};
use crate::{
    ErrorKind, SearchOptions, SourceTool, ToolAnnotations, ToolContext, ToolDescriptor, ToolError,
    ToolFuture, ToolOutput, ToolSource,
};

/// The most tools `describe_code_api` describes for a query when no `limit` is given.
const DEFAULT_QUERY_LIMIT: usize = 10;

/// The source (id `code_mode`, kind `code_mode`, names not prefixed) of `run_python` and
/// `describe_code_api`.
#[derive(Debug)]
pub struct CodeModeSource {
    settings: CodeModeSettings,
    tools: Vec<SourceTool>,
}

/// Arguments of `run_python`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    code: String,
}

/// Arguments of `describe_code_api`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DescribeArgs {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

impl CodeModeSource {
    /// The two tools, running code with `settings`.
    pub fn new(settings: CodeModeSettings) -> Self {
        let limits = &settings.limits;
        let run = ToolDescriptor {
            name: RUN_PYTHON.into(),
            description: format!(
                "Run a Python snippet in a sandbox and get what it printed and the value of its \
                 last expression. Inside it the tools you may call are functions: \
                 tools.<source>.<tool>(**arguments) (tools.<tool>(...) for a tool without \
                 source) and call_tool(name, args); {DESCRIBE_CODE_API} gives their typed \
                 stubs. Use it to call several tools and filter or combine their results in \
                 one step. A subset of Python 3 (no third-party packages; json, re, math, \
                 datetime, dataclasses, typing are there); no network, no files, no \
                 environment. Limits per run: {} ms, {} bytes of memory, {} bytes of output, \
                 {} tool calls.",
                limits.time.as_millis(),
                limits.memory_bytes,
                limits.output_bytes,
                limits.tool_calls
            ),
            input_schema: json!({
                "type": "object",
                "properties": {"code": {
                    "type": "string",
                    "description": "The Python source. Its last expression is the run's `result`."
                }},
                "required": ["code"],
                "additionalProperties": false
            }),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "stdout": {"type": "string", "description": "What the code printed."},
                    "stderr": {"type": "string", "description": "What the code wrote to stderr."},
                    "result": {"description": "The value of the last expression, as JSON (null for none)."},
                    "duration_ms": {"type": "integer", "description": "Wall-clock time of the run, in milliseconds."},
                    "tool_calls": {"type": "integer", "description": "Tool calls the code made."}
                },
                "required": ["stdout", "stderr", "result", "duration_ms", "tool_calls"]
            })),
            annotations: ToolAnnotations {
                read_only_hint: Some(false),
                open_world_hint: Some(true),
                ..ToolAnnotations::default()
            },
            source: "code_mode".into(),
            category: Some("code".into()),
            ..ToolDescriptor::default()
        };
        let describe = ToolDescriptor {
            name: DESCRIBE_CODE_API.into(),
            description: format!(
                "Typed Python stubs of the functions code run by {RUN_PYTHON} may call: one per \
                 tool you may call, with its arguments as keyword parameters and its \
                 description as docstring. Give `query` to describe only the tools that best \
                 fit it (tool search)."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Describe only the tools that best fit this (words of what you want to do)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "The most tools described for a query (default 10)."}
                },
                "additionalProperties": false
            }),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "stubs": {"type": "string", "description": "The Python stubs."},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "The tools described."}
                },
                "required": ["stubs", "tools"]
            })),
            annotations: ToolAnnotations {
                read_only_hint: Some(true),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
                destructive_hint: Some(false),
                ..ToolAnnotations::default()
            },
            source: "code_mode".into(),
            category: Some("code".into()),
            ..ToolDescriptor::default()
        };
        Self {
            settings,
            tools: vec![
                SourceTool::indexed(Arc::new(run), 0),
                SourceTool::indexed(Arc::new(describe), 1),
            ],
        }
    }

    /// The tools `ctx`'s caller may call from code, by name (the listing's filter, less the
    /// code-mode tools themselves; on a virtual server, less the tools it does not select:
    /// the call's [`scope`](ToolContext::scope) refuses them).
    fn callable(ctx: &ToolContext) -> Vec<Arc<ToolDescriptor>> {
        let Some(toolset) = ctx.toolset() else {
            return Vec::new();
        };
        let in_scope = |d: &ToolDescriptor| {
            ctx.scope()
                .is_none_or(|s| toolset.entry(&d.name).is_some_and(|e| s.admits(&e)))
        };
        toolset
            .tools_for(ctx.identity())
            .into_iter()
            .filter(|d| d.name != RUN_PYTHON && d.name != DESCRIBE_CODE_API && in_scope(d))
            .collect()
    }

    async fn run_python(
        self: Arc<Self>,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if inside_code() {
            return Err(ToolError::new(
                ErrorKind::PermissionDenied,
                format!("{RUN_PYTHON} cannot be called from code"),
            ));
        }
        let args: RunArgs = serde_json::from_value(args).map_err(|e| {
            ToolError::new(ErrorKind::InvalidArguments, format!("{RUN_PYTHON}: {e}"))
        })?;
        let tools = Self::callable(&ctx)
            .into_iter()
            .map(|d| d.name.clone())
            .collect();
        let request = RunRequest {
            code: args.code,
            limits: self.settings.limits.clone(),
            mounts: self.settings.mounts.clone(),
            tools,
        };
        let host: Arc<dyn ToolHost> = Arc::new(ContextHost { ctx });
        let run = self.settings.engine.run(request, Some(host));
        match as_code(run).await {
            Ok(out) => Ok(ToolOutput::structured(json!({
                "stdout": out.stdout,
                "stderr": out.stderr,
                "result": out.result,
                "duration_ms": out.duration_ms,
                "tool_calls": out.tool_calls,
            }))),
            Err(e) => Err(sandbox_error(e)),
        }
    }

    fn describe(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: DescribeArgs = if args.is_null() {
            DescribeArgs::default()
        } else {
            serde_json::from_value(args).map_err(|e| {
                ToolError::new(
                    ErrorKind::InvalidArguments,
                    format!("{DESCRIBE_CODE_API}: {e}"),
                )
            })?
        };
        let callable = Self::callable(ctx);
        let chosen = match (&args.query, ctx.toolset()) {
            (Some(query), Some(toolset)) => {
                let options = SearchOptions {
                    k: args.limit.unwrap_or(DEFAULT_QUERY_LIMIT).clamp(1, 100),
                    ..SearchOptions::default()
                };
                let hits = toolset.search(ctx.identity(), query, &options)?;
                hits.iter()
                    .filter_map(|h| callable.iter().find(|d| d.name == h.name).cloned())
                    .collect()
            }
            _ => callable,
        };
        let names: Vec<&str> = chosen.iter().map(|d| d.name.as_str()).collect();
        Ok(ToolOutput::structured(json!({
            "stubs": python_stubs(&chosen),
            "tools": names,
        })))
    }
}

/// A run's failure as the tool's error: the code's own failures (syntax, exception, memory,
/// output) are `invalid_arguments` (rewrite the code), the time limit `timeout` (not worth
/// retrying as is), the tool-call limit `budget_exceeded`, the engine's failure `internal`.
/// The details carry the [`SandboxError`] as JSON (`kind`: `syntax` with its `line`,
/// `exception` with its `traceback` and the `stdout` before it, ...).
fn sandbox_error(e: SandboxError) -> ToolError {
    let kind = match &e {
        SandboxError::Syntax { .. }
        | SandboxError::Exception { .. }
        | SandboxError::Memory { .. }
        | SandboxError::Output { .. } => ErrorKind::InvalidArguments,
        SandboxError::Timeout { .. } => ErrorKind::Timeout,
        SandboxError::ToolCalls { .. } => ErrorKind::BudgetExceeded,
        SandboxError::Busy { .. } => ErrorKind::RateLimited,
        // `SandboxError` may grow: an engine's own failure is ours, not the caller's.
        _ => ErrorKind::Internal,
    };
    let details = serde_json::to_value(&e).unwrap_or(Value::Null);
    let busy = matches!(e, SandboxError::Busy { .. });
    ToolError::new(kind, format!("{RUN_PYTHON}: {e}"))
        .with_retryable(busy)
        .with_details(json!({"sandbox": details}))
}

impl ToolSource for CodeModeSource {
    fn id(&self) -> &str {
        "code_mode"
    }

    fn kind(&self) -> &str {
        "code_mode"
    }

    fn prefixed(&self) -> bool {
        false
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.tools.clone()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        match tool.key.index() {
            Some(0) => ToolFuture::new(self.run_python(args, ctx)),
            Some(1) => ToolFuture::ready(self.describe(args, &ctx)),
            _ => ToolFuture::err(ToolError::not_found("code_mode tool")),
        }
    }
}
