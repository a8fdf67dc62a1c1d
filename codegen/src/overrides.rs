//! `tools.overrides` checked against the tools a build knows: every override names a tool, its
//! arguments are properties of the tool's schema (where the schema is known at build time:
//! `json_schema` and compiled OpenAPI tools), its fixed values and defaults fit them, and no two
//! tools end up exported under one name. Each problem is a diagnostic at its tools.yaml line.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use toolgate_model::config::{Diagnostic, LoadMode, LoadedConfig, location::escape};
use toolgate_model::names::exported_name;

/// The tools a check knows, by name inside toolgate: the input schema when it is known at build
/// time (`None` for a `#[tool]` function, whose schema its crate derives).
pub(crate) type Known = BTreeMap<String, Option<Value>>;

/// Every broken rule of `tools.overrides` against `known`. `local_known`: whether the crate's
/// local tools are in `known` (not so for a run-time config, whose local tools are a binary's).
pub(crate) fn check(config: &LoadedConfig, known: &Known, local_known: bool) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let overrides = &config.tools.overrides;
    if overrides.is_empty() {
        return errors;
    }
    // Sources whose tools are only known at run time.
    let t = &config.tools;
    let later: Vec<&str> = t
        .mcp
        .iter()
        .map(|s| s.id.as_str())
        .chain(t.a2a.iter().map(|s| s.id.as_str()))
        .chain(
            t.openapi
                .iter()
                .filter(|s| s.load == LoadMode::Runtime)
                .map(|s| s.id.as_str()),
        )
        .collect();
    let at = |tool: &str| format!("/tools/overrides/{}", escape(tool));
    for (tool, o) in overrides {
        match known.get(tool) {
            Some(Some(schema)) => {
                if let Err(e) = toolgate_model::config::rewrite_schema(schema, &o.arguments) {
                    let pointer = match &e.argument {
                        Some(a) => format!("{}/arguments/{}", at(tool), escape(a)),
                        None => at(tool),
                    };
                    errors.push(config.error_at(&pointer, format!("override of `{tool}`: {e}")));
                } else if let Some(message) = values_error(schema, &o.arguments) {
                    errors.push(config.error_at(
                        &format!("{}/arguments", at(tool)),
                        format!("override of `{tool}`: {message}"),
                    ));
                }
            }
            Some(None) => {}
            None => {
                let remote = later.iter().any(|id| {
                    tool.strip_prefix(id)
                        .is_some_and(|rest| rest.starts_with('.'))
                });
                let binary_local = !local_known && !tool.contains('.');
                if !remote && !binary_local {
                    errors.push(config.error_at(
                        &at(tool),
                        format!("tools.overrides names `{tool}`, which no source offers"),
                    ));
                }
            }
        }
    }
    // Every name a model would see, after the overrides: two tools must not share one.
    let mut taken: HashMap<String, &str> = HashMap::new();
    for tool in known.keys() {
        if overrides.get(tool).is_some_and(|o| o.name.is_some()) {
            continue; // offered under its new name only
        }
        taken.insert(exported_name(tool).into_owned(), tool);
    }
    for (tool, o) in overrides {
        let Some(name) = &o.name else { continue };
        let exported = exported_name(name).into_owned();
        if let Some(other) = taken.get(&exported) {
            if *other != tool {
                errors.push(config.error_at(
                    &format!("{}/name", at(tool)),
                    format!("override of `{tool}`: `{name}` is already the name of tool `{other}`"),
                ));
            }
        } else {
            taken.insert(exported, tool);
        }
    }
    errors
}

/// Why a fixed value or default does not fit its argument's schema, if one does not.
fn values_error(
    schema: &Value,
    arguments: &BTreeMap<String, toolgate_model::config::ArgumentOverride>,
) -> Option<String> {
    let (check, values) = toolgate_model::config::values_check(schema, arguments)?;
    let validator = match jsonschema::options().build(&check) {
        Ok(v) => v,
        Err(e) => return Some(format!("the tool's input schema does not compile: {e}")),
    };
    let problems: Vec<String> = validator
        .iter_errors(&values)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    (!problems.is_empty()).then(|| {
        format!(
            "a fixed value or default does not fit the argument's schema: {}",
            problems.join("; ")
        )
    })
}

#[cfg(test)]
mod tests;
