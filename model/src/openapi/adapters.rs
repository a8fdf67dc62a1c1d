//! Argument adapters (`tools.openapi[].adapters`, [`Adapter`]): applied in order to the tools
//! they select (globs over the tool name and the `operationId`; empty: every tool).
//!
//! - `value` / `from_context`: the property leaves the input schema (and `required`); a
//!   [`Fill`] with [`FillFrom::Value`] (the raw text) / [`FillFrom::Context`] is added;
//! - `default`: the property's schema gets `default`, leaves `required`; a
//!   [`FillFrom::Default`] fill is added;
//! - `rename`: the property key changes, and with it [`Parameter::arg`](super::Parameter::arg),
//!   [`BodyField::arg`](super::BodyField::arg) or the body's argument;
//! - `drop: true`: the property, its parameter or body field leave the tool. Dropping a required
//!   argument is refused with a `W_ADAPTER` warning (the argument is kept).
//!
//! An argument named by an adapter that no selected tool has is a `W_ADAPTER` warning.

use serde_json::{Map, Value};

use super::names::valid_arg;
use super::{Adapter, ArgumentAdapter, BodyLayout, Fill, FillFrom, Operation, Warning};

/// Applies `adapters` to `tools`, in order.
pub(crate) fn apply(adapters: &[Adapter], tools: &mut [Operation], warnings: &mut Vec<Warning>) {
    for (i, adapter) in adapters.iter().enumerate() {
        let globs: Vec<glob::Pattern> = adapter
            .tools
            .iter()
            .filter_map(|g| glob::Pattern::new(g).ok())
            .collect();
        let mut seen: Vec<&str> = Vec::new();
        for tool in tools.iter_mut() {
            let selected = adapter.tools.is_empty()
                || globs.iter().any(|g| {
                    g.matches(&tool.name)
                        || tool.operation_id.as_deref().is_some_and(|o| g.matches(o))
                });
            if !selected {
                continue;
            }
            for (arg, action) in &adapter.arguments {
                if has_property(tool, arg) {
                    seen.push(arg);
                    one(tool, arg, action, warnings);
                }
            }
        }
        for arg in adapter.arguments.keys() {
            if !seen.contains(&arg.as_str()) {
                warnings.push(Warning {
                    code: "W_ADAPTER".into(),
                    pointer: "#".into(),
                    message: format!(
                        "adapter {} names argument `{arg}`, which no tool it selects has",
                        i + 1
                    ),
                });
            }
        }
    }
}

fn props(tool: &mut Operation) -> Option<&mut Map<String, Value>> {
    tool.input_schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
}

fn has_property(tool: &Operation, arg: &str) -> bool {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(arg))
}

fn is_required(tool: &Operation, arg: &str) -> bool {
    tool.input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|n| n == arg))
}

fn unrequire(tool: &mut Operation, arg: &str) {
    if let Value::Object(m) = &mut tool.input_schema
        && let Some(Value::Array(r)) = m.get_mut("required")
    {
        r.retain(|n| n != arg);
        if r.is_empty() {
            m.shift_remove("required");
        }
    }
}

fn one(tool: &mut Operation, arg: &str, action: &ArgumentAdapter, warnings: &mut Vec<Warning>) {
    let warn = |warnings: &mut Vec<Warning>, tool: &Operation, message: String| {
        warnings.push(Warning {
            code: "W_ADAPTER".into(),
            pointer: tool.pointer.clone(),
            message,
        });
    };
    match action {
        ArgumentAdapter::Value(v) => {
            hide(tool, arg);
            tool.fills.push(Fill {
                arg: arg.into(),
                from: FillFrom::Value(v.raw().to_string()),
            });
        }
        ArgumentAdapter::FromContext(f) => {
            hide(tool, arg);
            tool.fills.push(Fill {
                arg: arg.into(),
                from: FillFrom::Context(*f),
            });
        }
        ArgumentAdapter::Default(v) => {
            if let Some(Value::Object(s)) = props(tool).and_then(|p| p.get_mut(arg)) {
                s.insert("default".into(), v.clone());
            }
            unrequire(tool, arg);
            tool.fills.push(Fill {
                arg: arg.into(),
                from: FillFrom::Default(v.clone()),
            });
        }
        ArgumentAdapter::Rename(new) => {
            if !valid_arg(new) || has_property(tool, new) {
                let message = format!(
                    "cannot rename argument `{arg}` of `{}` to `{new}`: not a valid property name \
                     (^[a-zA-Z0-9_.-]{{1,64}}$) or already taken",
                    tool.name
                );
                warn(warnings, tool, message);
                return;
            }
            if let Some(p) = props(tool) {
                let old = std::mem::take(p);
                *p = old
                    .into_iter()
                    .map(|(k, v)| if k == arg { (new.clone(), v) } else { (k, v) })
                    .collect();
            }
            if let Some(Value::Array(r)) = tool.input_schema.get_mut("required") {
                for n in r.iter_mut() {
                    if n == arg {
                        *n = Value::String(new.clone());
                    }
                }
            }
            for p in &mut tool.parameters {
                if p.arg == arg {
                    p.arg.clone_from(new);
                }
            }
            if let Some(b) = &mut tool.body {
                match &mut b.layout {
                    BodyLayout::Flattened { fields } => {
                        for f in fields.iter_mut().filter(|f| f.arg == arg) {
                            f.arg.clone_from(new);
                        }
                    }
                    BodyLayout::Property { arg: a } => {
                        if a == arg {
                            a.clone_from(new);
                        }
                    }
                }
            }
            for f in &mut tool.fills {
                if f.arg == arg {
                    f.arg.clone_from(new);
                }
            }
        }
        ArgumentAdapter::Drop(false) => {}
        ArgumentAdapter::Drop(true) => {
            if is_required(tool, arg) {
                let message = format!(
                    "cannot drop argument `{arg}` of `{}`: it is required (kept)",
                    tool.name
                );
                warn(warnings, tool, message);
                return;
            }
            if let Some(p) = props(tool) {
                p.shift_remove(arg);
            }
            tool.parameters.retain(|p| p.arg != arg);
            let drop_body = match tool.body.as_mut().map(|b| &mut b.layout) {
                Some(BodyLayout::Flattened { fields }) => {
                    fields.retain(|f| f.arg != arg);
                    false
                }
                Some(BodyLayout::Property { arg: a }) => a == arg,
                None => false,
            };
            if drop_body {
                tool.body = None;
            }
        }
    }
}

/// The property leaves the schema and `required`.
fn hide(tool: &mut Operation, arg: &str) {
    if let Some(p) = props(tool) {
        p.shift_remove(arg);
    }
    unrequire(tool, arg);
}
