//! Rules of `tools.overrides` that need no tool list: new names well formed and unique, no
//! argument both fixed and defaulted. (What needs the tools — an override of a tool that does
//! not exist, an argument the schema lacks, a value the schema refuses, a new name another tool
//! has — is checked where the tools are known: the build, `toolgate check`, the catalog.) And a
//! warning per `policy.tools` entry that names a renamed tool by its old name.

use std::collections::HashMap;

use super::super::{Diagnostic, LoadedConfig};
use super::escape;
use crate::names::validate_tool_name;

/// Pushes an error per broken rule of `tools.overrides`, and a warning per `policy.tools` entry
/// keyed by the old name of a tool an override renames (policies name it by its new name, so
/// the entry applies to nothing).
pub(super) fn check(
    cfg: &LoadedConfig,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    for (tool, new) in cfg
        .tools
        .overrides
        .iter()
        .filter_map(|(tool, o)| Some((tool, o.name.as_ref()?)))
        .filter(|(tool, new)| tool != new && cfg.policy.tools.contains_key(*tool))
    {
        warnings.push(
            cfg.warning_at(
                &format!("/policy/tools/{}", escape(tool)),
                format!(
                    "policy for `{tool}`, which tools.overrides renames to `{new}`: it applies to no tool"
                ),
            )
            .with_hint(format!(
                "policies name a renamed tool by its new name: write `{new}`"
            )),
        );
    }
    let mut taken: HashMap<&str, &str> = HashMap::new();
    for (tool, o) in &cfg.tools.overrides {
        let at = format!("/tools/overrides/{}", escape(tool));
        if let Some(name) = &o.name {
            if let Err(e) = validate_tool_name(name) {
                errors.push(
                    cfg.error_at(&format!("{at}/name"), format!("override of `{tool}`: {e}")),
                );
            } else if let Some(first) = taken.insert(name, tool) {
                errors.push(cfg.error_at(
                    &format!("{at}/name"),
                    format!("override of `{tool}`: `{first}` is already exported as `{name}`"),
                ));
            }
        }
        for (arg, a) in &o.arguments {
            if a.value.is_some() && a.default.is_some() {
                errors.push(cfg.error_at(
                    &format!("{at}/arguments/{}", escape(arg)),
                    format!(
                        "override of `{tool}`: argument `{arg}` has both `value` and `default`"
                    ),
                ));
            }
        }
    }
}
