//! `tools.overrides` applied to the catalog: the descriptor a tool is presented with, and the
//! arguments filled in before its calls are checked and sent (see
//! [`toolgate_model::config::ToolOverride`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate_model::config::{ArgumentOverride, ToolOverride};

use crate::{ArgumentValidator, ToolDescriptor};

/// Every tool's override, by the tool's name inside toolgate (shared by every catalog of a
/// toolset).
pub type Overrides = Arc<BTreeMap<String, ToolOverride>>;

/// The descriptor `tool` is presented with under `o`: new name, description, title, hints and
/// input schema (see [`toolgate_model::config::rewrite_schema`]); the source, timeouts and
/// everything else are the tool's own.
///
/// # Errors
/// A sentence naming the tool when an overridden argument is not a property of its input
/// schema, or when a fixed value or default does not match the argument's schema.
pub fn present(tool: &ToolDescriptor, o: &ToolOverride) -> Result<ToolDescriptor, String> {
    let name = &tool.name;
    let input_schema = toolgate_model::config::rewrite_schema(&tool.input_schema, &o.arguments)
        .map_err(|e| format!("override of `{name}`: {e}"))?;
    check_values(tool, &o.arguments)?;
    let mut out = tool.clone();
    out.input_schema = input_schema;
    if let Some(n) = &o.name {
        out.name.clone_from(n);
    }
    if let Some(d) = &o.description {
        out.description.clone_from(d);
    }
    if let Some(t) = &o.title {
        out.annotations.title = Some(t.clone());
    }
    let a = &o.annotations;
    let hints = &mut out.annotations;
    hints.read_only_hint = a.read_only_hint.or(hints.read_only_hint);
    hints.destructive_hint = a.destructive_hint.or(hints.destructive_hint);
    hints.idempotent_hint = a.idempotent_hint.or(hints.idempotent_hint);
    hints.open_world_hint = a.open_world_hint.or(hints.open_world_hint);
    Ok(out)
}

/// Checks each fixed value and default against its argument's schema (in the tool's own schema,
/// so that `$ref`s into its `$defs` resolve).
fn check_values(
    tool: &ToolDescriptor,
    arguments: &BTreeMap<String, ArgumentOverride>,
) -> Result<(), String> {
    let Some((schema, values)) =
        toolgate_model::config::values_check(&tool.input_schema, arguments)
    else {
        return Ok(());
    };
    let name = &tool.name;
    ArgumentValidator::compile(name, &schema)
        .and_then(|v| v.validate(name, &values))
        .map_err(|e| {
            format!(
                "override of `{name}`: a fixed value or default does not fit the argument's schema: {}",
                e.message()
                    .strip_prefix(&format!("invalid arguments for tool `{name}`: "))
                    .unwrap_or(e.message())
            )
        })
}

/// The name `tool` is offered under with `overrides` applied.
pub fn presented_name<'a>(overrides: &'a Overrides, tool: &'a str) -> &'a str {
    overrides
        .get(tool)
        .and_then(|o| o.name.as_deref())
        .unwrap_or(tool)
}

#[cfg(test)]
mod tests;
