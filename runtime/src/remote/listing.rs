//! A listing made into what the source offers: provider-safe names (a remote name no provider
//! accepts, such as one with spaces or over 64 characters, is offered under a sanitized name
//! that keeps the original in the title and description), allow / deny filters, and the tools
//! that cannot be offered and why.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use toolgate_model::names;

use super::{Listing, RemoteSource};
use crate::{SourceTool, ToolDescriptor};

impl RemoteSource {
    /// Names, filters and indexes a listing (see "Names" in the module docs).
    pub(super) fn fill(&self, catalog: &mut Listing, tools: Vec<ToolDescriptor>) {
        let id = &self.inner.id;
        let settings = &self.inner.settings;
        // The room a tool's own name has: the exported `{id}__` prefix counts toward 64.
        let max = if settings.prefix {
            names::MAX_TOOL_NAME_LEN
                .saturating_sub(id.chars().count() + names::EXPORTED_SEPARATOR.len())
        } else {
            names::MAX_TOOL_NAME_LEN
        };
        let mut hidden = 0;
        let mut rejected = Vec::new();
        // (descriptor, remote name, provider-safe name) of each tool that passes.
        let mut kept: Vec<(ToolDescriptor, String, String)> = Vec::with_capacity(tools.len());
        for mut d in tools {
            let remote = std::mem::take(&mut d.name);
            if remote.is_empty() {
                tracing::warn!(source = %id, "tool left out: the server gave it no name");
                rejected.push("``: the server gave it no name".to_string());
                continue;
            }
            let safe = names::provider_safe(&remote, max);
            let full = [format!("{id}.{remote}"), format!("{id}.{safe}")];
            if !settings.filter.allows_any(&[&remote, &safe])
                || !settings.global.allows_any(&[&full[0], &full[1]])
            {
                hidden += 1;
                continue;
            }
            if let Some(Err(why)) = settings
                .require
                .as_ref()
                .and_then(|r| r.for_tool(&remote))
                .map(|c| c.check(d.version.as_deref()))
            {
                tracing::warn!(source = %id, tool = %remote, "tool left out: {why}");
                rejected.push(format!("`{remote}`: {why}"));
                continue;
            }
            if let Err(why) = usable(&d) {
                tracing::warn!(source = %id, tool = %remote, "tool left out: {why}");
                rejected.push(format!("`{remote}`: {why}"));
                continue;
            }
            kept.push((d, remote, safe));
        }
        // A renamed tool whose safe name another tool has too takes the hash suffix.
        let unchanged: HashSet<&str> = kept
            .iter()
            .filter(|(_, remote, safe)| remote == safe)
            .map(|(_, _, safe)| safe.as_str())
            .collect();
        let mut renamed: HashMap<&str, usize> = HashMap::new();
        for (_, remote, safe) in &kept {
            if remote != safe {
                *renamed.entry(safe.as_str()).or_default() += 1;
            }
        }
        let finals: Vec<String> = kept
            .iter()
            .map(|(_, remote, safe)| {
                let clash = remote != safe
                    && (unchanged.contains(safe.as_str())
                        || renamed.get(safe.as_str()).is_some_and(|n| *n > 1));
                if clash {
                    names::with_hash(&names::sanitize(remote), remote, max)
                } else {
                    safe.clone()
                }
            })
            .collect();
        // Whatever is still equal: the first keeps the name (unchanged names before renamed
        // ones), the other is left out and reported.
        let mut owner: HashMap<&str, usize> = HashMap::new();
        let mut offered = vec![false; kept.len()];
        let unchanged_first = (0..kept.len())
            .filter(|&i| kept[i].1 == kept[i].2)
            .chain((0..kept.len()).filter(|&i| kept[i].1 != kept[i].2));
        for i in unchanged_first {
            let remote = &kept[i].1;
            let tool = finals[i].as_str();
            if let Some(&first) = owner.get(tool) {
                let first = &kept[first].1;
                let why = if first == remote {
                    "the server listed it twice; the first is kept".to_string()
                } else {
                    format!(
                        "its provider-safe name `{tool}` is also that of remote tool `{first}`, \
                         which keeps it"
                    )
                };
                tracing::warn!(source = %id, tool = %remote, "tool left out: {why}");
                rejected.push(format!("`{remote}`: {why}"));
                continue;
            }
            let name = if settings.prefix {
                format!("{id}.{tool}")
            } else {
                tool.to_string()
            };
            // Only a source id too long to leave room for any tool name fails here.
            let exported = names::exported_name(&name);
            if let Err(e) = names::validate_tool_name(&exported) {
                let why = format!("its name cannot be exported as `{exported}`: {e}");
                tracing::warn!(source = %id, tool = %remote, "tool left out: {why}");
                rejected.push(format!("`{remote}`: {why}"));
                continue;
            }
            owner.insert(tool, i);
            offered[i] = true;
        }
        let mut order = Vec::with_capacity(kept.len());
        for (((mut d, remote, _), tool), offered) in kept.into_iter().zip(finals).zip(offered) {
            if !offered {
                continue;
            }
            if tool != remote {
                tracing::debug!(source = %id, tool = %remote, "offered as `{tool}` (a provider-safe name)");
                keep_remote_name(&mut d, &remote);
            }
            let name = if settings.prefix {
                format!("{id}.{tool}")
            } else {
                tool
            };
            d.name.clone_from(&name);
            d.source.clone_from(id);
            if d.timeout.is_none() {
                d.timeout = settings.call_timeout;
            }
            order.push(SourceTool::named(Arc::new(d), remote));
        }
        catalog.order = order;
        catalog.hidden = hidden;
        catalog.rejected = rejected;
        catalog.listed = true;
    }
}

/// Whether a listed tool can be offered at all: its input schema must be a JSON Schema of an
/// object (MCP 2025-06-18, "Tool": `inputSchema` is an object schema) that compiles. A tool that
/// fails is left out, with the reason, rather than offered and then failing every call. (Its
/// name is no reason: a name no provider takes is replaced by a provider-safe one.)
fn usable(d: &ToolDescriptor) -> Result<(), String> {
    let root_type = d.input_schema.get("type");
    if root_type.is_some_and(|t| t != "object") {
        return Err(format!(
            "its input schema is not an object schema (`\"type\": {}`)",
            root_type.map(ToString::to_string).unwrap_or_default()
        ));
    }
    jsonschema::validator_for(&d.input_schema)
        .map(drop)
        .map_err(|e| format!("its input schema is not valid JSON Schema: {e}"))
}

/// Keeps the remote name of a tool offered under another name visible: as its title when the
/// server gave none (MCP clients show the title, else the name), and at the end of its
/// description (which is what a model reads).
fn keep_remote_name(d: &mut ToolDescriptor, remote: &str) {
    if d.annotations.title.is_none() {
        d.annotations.title = Some(remote.to_string());
    }
    let note = format!("(Remote tool name: `{remote}`.)");
    if d.description.trim().is_empty() {
        d.description = note;
    } else {
        d.description = format!("{}\n\n{note}", d.description.trim_end());
    }
}
