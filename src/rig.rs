//! Every tool of a [`Toolset`] as a tool of [rig](https://docs.rs/rig-agent), the Rust agent
//! framework (cargo feature `rig`; rig-agent 0.44, which needs rustc 1.95).
//!
//! A rig agent takes its tools as [`DynamicTool`]s (a name, a description, a JSON Schema of the
//! arguments and a callback) or as a [`ToolSet`] of them. [`dynamic_tool`], [`dynamic_tools`] and
//! [`tool_set`] build them from a toolset: the definition is the tool's OpenAI function export
//! ([`Dialect::OpenAi`]: the name a model sees, `github__get_repo` for `github.get_repo`, and
//! the parameters schema with toolgate's shared export rules), and the callback is
//! [`Toolset::call_with`], so every call goes through the toolset's policy pipeline (validation,
//! authorization, limits, budgets, guardrails, retries, telemetry) exactly like a call from the
//! gateway.
//!
//! The caller is the [`Identity`] given when the tools are built, unless the rig
//! [`ToolContext`] of a dispatch carries one as a scope (`ToolContext::with_scope(Arc<Identity>)`),
//! which then wins: one tool set can serve several callers.
//!
//! Results: a toolgate [`ToolOutput`] becomes a rig [`RigOutput`] by [`rig_output`] (text parts
//! stay text, images stay images, every other part and the structured result are JSON blocks);
//! a [`ToolError`] becomes a [`ToolExecutionError`] of the matching kind by [`rig_error`], its
//! message shown to the model. A result with `isError: true` is a failure in rig's model too
//! (kind `other`, the text of the result as the message and as the model's output).
//!
//! ```ignore
//! let tools = toolset::toolset().build()?;
//! let rig_tools = toolgate::rig::tool_set(&tools, &Identity::default());
//! let result = rig_tools.execute("add", r#"{"a": 1, "b": 2}"#, &mut ToolContext::new()).await;
//! ```

use std::sync::Arc;

use rig_agent::core::completion::message::{ImageMediaType, MimeType, ToolResultContent};
use rig_agent::core::message::ToolName;
/// rig's tool result ([`rig_agent::core::tool::ToolOutput`]).
pub use rig_agent::core::tool::ToolOutput as RigOutput;
pub use rig_agent::core::tool::{DynamicTool, ToolContext, ToolExecutionError};
pub use rig_agent::tool::ToolSet;
use serde_json::Value;
use toolgate_runtime::catalog::ToolEntry;

use crate::{
    Content, Dialect, ErrorKind, Identity, ToolContext as CallContext, ToolError, ToolOutput,
    Toolset,
};

/// The rig tool for the toolset's tool `name` (its name inside the toolset, `github.get_repo`,
/// or the name a model sees, `github__get_repo`), called as `identity` unless a dispatch's
/// context carries another (see the module docs).
///
/// # Errors
/// `not_found` when the toolset has no tool of that name; `invalid_arguments` when its schema
/// cannot be exported as an OpenAI function (the export error says why).
pub fn dynamic_tool(
    toolset: &Toolset,
    name: &str,
    identity: &Identity,
) -> Result<DynamicTool, ToolError> {
    let entry = toolset
        .entry(name)
        .or_else(|| {
            toolset
                .entries()
                .into_iter()
                .find(|e| e.exported_name() == name)
        })
        .ok_or_else(|| ToolError::not_found(name))?;
    from_entry(toolset, &entry, identity)
}

/// A rig tool for every tool `identity` may see (the listing filter of
/// [`Toolset::entries_for`]), in the toolset's order. A tool whose schema cannot be exported as
/// an OpenAI function is left out (logged at `warn`), as the gateway leaves it out of an OpenAI
/// listing.
pub fn dynamic_tools(toolset: &Toolset, identity: &Identity) -> Vec<DynamicTool> {
    toolset
        .entries_for(identity)
        .iter()
        .filter_map(|entry| match from_entry(toolset, entry, identity) {
            Ok(tool) => Some(tool),
            Err(error) => {
                tracing_warn(entry.name(), &error);
                None
            }
        })
        .collect()
}

/// [`dynamic_tools`] as a rig [`ToolSet`], keyed by the names a model sees.
pub fn tool_set(toolset: &Toolset, identity: &Identity) -> ToolSet {
    ToolSet::from_dynamic_tools(dynamic_tools(toolset, identity))
}

fn from_entry(
    toolset: &Toolset,
    entry: &ToolEntry,
    identity: &Identity,
) -> Result<DynamicTool, ToolError> {
    let export = entry.export(Dialect::OpenAi).map_err(|e| {
        ToolError::new(
            ErrorKind::InvalidArguments,
            format!("tool `{}` has no OpenAI export: {e}", entry.name()),
        )
    })?;
    let description = export
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let parameters = export
        .get("parameters")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    let exported = ToolName::new(entry.exported_name())
        .map_err(|_| ToolError::new(ErrorKind::InvalidArguments, "a tool has an empty name"))?;
    let toolset = toolset.clone();
    let name: Arc<str> = entry.name().into();
    let identity = identity.clone();
    Ok(DynamicTool::new_with_context(
        exported,
        description,
        parameters,
        move |context: &mut ToolContext, arguments: Value| {
            let toolset = toolset.clone();
            let name = name.clone();
            let identity = context
                .scope::<Identity>()
                .map_or_else(|| identity.clone(), |scoped| (*scoped).clone());
            Box::pin(async move {
                let ctx = CallContext::builder().identity(identity).build();
                match toolset.call_with(&name, arguments, ctx).await {
                    Ok(output) if output.is_error => Err(failed_result(&output)),
                    Ok(output) => Ok(rig_output(&output)),
                    Err(error) => Err(rig_error(&error)),
                }
            })
        },
    ))
}

/// A toolgate result as rig's: each text part a text block, each image an image block
/// (base64, with its media type when rig knows it), every other part (audio, resources,
/// resource links) a JSON block of its MCP form, then the structured result as a JSON block.
/// An output with no part at all is one empty text block (rig refuses an empty output).
pub fn rig_output(output: &ToolOutput) -> RigOutput {
    let mut blocks: Vec<ToolResultContent> = output
        .content
        .iter()
        .map(|part| match part {
            Content::Text { text } => ToolResultContent::text(text.clone()),
            Content::Image { data, mime_type } => ToolResultContent::image_base64(
                data.clone(),
                ImageMediaType::from_mime_type(mime_type),
                None,
            ),
            other => ToolResultContent::json(serde_json::to_value(other).unwrap_or(Value::Null)),
        })
        .collect();
    if let Some(structured) = &output.structured {
        // A tool's structured result usually repeats its text part (MCP asks servers to put
        // the JSON in a text part as well); rig's model sees both, like an MCP client's would.
        blocks.push(ToolResultContent::json(structured.clone()));
    }
    RigOutput::content(blocks).unwrap_or_else(|_| RigOutput::text(""))
}

/// A toolgate error as rig's: the kind mapped to rig's nearest ([`ErrorKind::PolicyDenied`],
/// `permission_denied` and `budget_exceeded` → `permission_denied`; `circuit_open` and
/// `upstream` → `provider`; `protocol` and `input_required` → `other`), the error's code
/// (`not_found`, `policy_denied`, ...) kept as rig's error code, its message (already free of
/// secrets) shown to the model, and retryability kept.
pub fn rig_error(error: &ToolError) -> ToolExecutionError {
    let message = error.message().to_owned();
    let mapped = match error.kind() {
        ErrorKind::InvalidArguments => ToolExecutionError::invalid_args(message),
        ErrorKind::NotFound => ToolExecutionError::not_found(message),
        ErrorKind::PermissionDenied | ErrorKind::PolicyDenied | ErrorKind::BudgetExceeded => {
            ToolExecutionError::permission_denied(message)
        }
        ErrorKind::RateLimited => ToolExecutionError::rate_limited(message),
        ErrorKind::Timeout => ToolExecutionError::timeout(message),
        ErrorKind::Network => ToolExecutionError::network(message),
        ErrorKind::CircuitOpen | ErrorKind::Upstream => ToolExecutionError::provider(message),
        ErrorKind::Cancelled => ToolExecutionError::cancelled(message),
        _ => ToolExecutionError::other(message),
    };
    mapped
        .with_code(error.kind().as_str())
        .with_retryable(error.is_retryable())
}

fn failed_result(output: &ToolOutput) -> ToolExecutionError {
    let text = output.to_text();
    ToolExecutionError::other(text.clone())
        .with_code("tool_error")
        .with_model_output(rig_output(output))
}

fn tracing_warn(name: &str, error: &ToolError) {
    tracing::warn!(tool = name, %error, "left out of the rig tools");
}
