//! The [`ToolHost`] of a run: the code's tool calls, made as the caller who ran the code.

use std::future::Future;

use serde_json::Value;
use toolgate_sandbox::{BoxFuture, ToolCallError, ToolHost};

use super::RUN_PYTHON;
use crate::{ToolContext, ToolOutput};

tokio::task_local! {
    /// Set while a run's code executes: a `run_python` reached from inside it (through a tool
    /// that calls tools) is refused.
    static IN_CODE: ();
}

/// Whether the current task is running code (a `run_python` inside a `run_python`).
pub(super) fn inside_code() -> bool {
    IN_CODE.try_with(|()| ()).is_ok()
}

/// Runs `run` marked as code running (see [`inside_code`]).
pub(super) async fn as_code<F: Future>(run: F) -> F::Output {
    IN_CODE.scope((), run).await
}

/// The calls of one run, each through [`ToolContext::call_tool`] with the context of the
/// `run_python` call: the same identity (roles, claims, agent, task), deadline and trace, a
/// child of its cancellation, its scope (the virtual server it came through: only the tools
/// the server selects, with the server's guardrails); and the whole pipeline of the called tool
/// (authorization, validation, budgets, rate limits, guardrails, telemetry).
pub(super) struct ContextHost {
    pub(super) ctx: ToolContext,
}

impl ToolHost for ContextHost {
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<Value, ToolCallError>> {
        Box::pin(async move {
            if name == RUN_PYTHON {
                return Err(ToolCallError {
                    kind: "permission_denied".into(),
                    message: format!("{RUN_PYTHON} cannot be called from code"),
                });
            }
            match self.ctx.call_tool(name, arguments).await {
                Ok(out) if out.is_error => Err(ToolCallError {
                    kind: "upstream".into(),
                    message: out.text_joined(),
                }),
                Ok(out) => Ok(output_value(out)),
                Err(e) => Err(ToolCallError {
                    kind: e.kind().as_str().into(),
                    message: e.message().into(),
                }),
            }
        })
    }
}

/// A tool's result as the code sees it: its structured content when it has one, else its one
/// text part (parsed when it holds JSON), else the list of its parts.
pub(super) fn output_value(out: ToolOutput) -> Value {
    if let Some(value) = out.structured {
        return value;
    }
    let mut parts = out.content;
    if parts.len() == 1
        && let Some(text) = parts[0].as_text()
    {
        return serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
    }
    Value::Array(
        parts
            .drain(..)
            .map(|p| match p.as_text() {
                Some(text) => Value::String(text.to_owned()),
                None => serde_json::to_value(&p).unwrap_or(Value::Null),
            })
            .collect(),
    )
}
