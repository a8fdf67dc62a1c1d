//! Rules of the model that serde cannot express, each reported at its line.

use std::collections::HashMap;

use super::location::escape;
use super::{CONFIG_VERSION, Diagnostic, LoadedConfig, McpTransport, ToolPolicy, parse_rate_limit};
use crate::names::{LOCAL_SOURCE_ID, validate_source_id};

mod gateway;
mod openapi;

/// Every broken rule of `cfg` (errors), and the warnings.
pub(super) fn validate(cfg: &LoadedConfig) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if cfg.version != CONFIG_VERSION {
        errors.push(
            cfg.error_at(
                "/version",
                format!("unsupported tools.yaml version {}", cfg.version),
            )
            .with_hint(format!("this toolgate reads `version: {CONFIG_VERSION}`")),
        );
    }
    check_source_ids(cfg, &mut errors);
    for (i, s) in cfg.tools.mcp.iter().enumerate() {
        match &s.transport {
            McpTransport::Stdio(t) if t.command.trim().is_empty() => errors.push(cfg.error_at(
                &format!("/tools/mcp/{i}/stdio/command"),
                format!("MCP server `{}`: `command` is empty", s.id),
            )),
            McpTransport::Http(t) if !is_http_url(&t.url) => errors.push(cfg.error_at(
                &format!("/tools/mcp/{i}/http/url"),
                format!("MCP server `{}`: `{}` is not an http(s) URL", s.id, t.url),
            )),
            McpTransport::Sse(t) if !is_http_url(&t.url) => errors.push(cfg.error_at(
                &format!("/tools/mcp/{i}/sse/url"),
                format!("MCP server `{}`: `{}` is not an http(s) URL", s.id, t.url),
            )),
            _ => {}
        }
    }
    for (i, s) in cfg.tools.mcp.iter().enumerate() {
        for (list, entries) in [("allow", &s.allow), ("deny", &s.deny)] {
            check_globs(cfg, &format!("/tools/mcp/{i}/{list}"), entries, &mut errors);
        }
        if s.timeout_ms == Some(0) {
            errors.push(
                cfg.error_at(
                    &format!("/tools/mcp/{i}/timeout_ms"),
                    format!(
                        "MCP server `{}`: `timeout_ms: 0` would fail every call",
                        s.id
                    ),
                )
                .with_hint("leave it out to use the policy's timeout"),
            );
        }
    }
    check_globs(cfg, "/tools/allow", &cfg.tools.allow, &mut errors);
    check_globs(cfg, "/tools/deny", &cfg.tools.deny, &mut errors);
    for (i, a) in cfg.tools.a2a.iter().enumerate() {
        if a.url.is_none() && a.card_url.is_none() {
            errors.push(
                cfg.error_at(
                    &format!("/tools/a2a/{i}"),
                    format!("A2A agent `{}` needs `url` or `card_url`", a.id),
                )
                .with_hint("the card is looked up at `{url}/.well-known/agent-card.json`, then `agent.json`"),
            );
        }
        for (key, url) in [("url", &a.url), ("card_url", &a.card_url)] {
            if let Some(url) = url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                errors.push(cfg.error_at(
                    &format!("/tools/a2a/{i}/{key}"),
                    format!(
                        "A2A agent `{}`: `{key}` must be an http:// or https:// URL, not `{url}`",
                        a.id
                    ),
                ));
            }
        }
        for (skill, settings) in &a.skills {
            if settings.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                errors.push(
                    cfg.error_at(
                        &format!("/tools/a2a/{i}/skills/{skill}/input_schema"),
                        format!(
                            "A2A agent `{}`, skill `{skill}`: `input_schema` must be an object schema (`type: object`)",
                            a.id
                        ),
                    )
                    .with_hint("tool arguments are always a JSON object"),
                );
            }
        }
    }
    openapi::check_openapi(cfg, &mut errors, &mut warnings);
    check_policy(cfg, &mut errors, &mut warnings);
    gateway::check_gateway(cfg, &mut errors, &mut warnings);
    (errors, warnings)
}

/// Every entry of an allow/deny list must be a name or a glob the `glob` crate reads.
fn check_globs(
    cfg: &LoadedConfig,
    pointer: &str,
    entries: &[String],
    errors: &mut Vec<Diagnostic>,
) {
    for (j, entry) in entries.iter().enumerate() {
        if let Err(e) = glob::Pattern::new(entry) {
            errors.push(cfg.error_at(
                &format!("{pointer}/{j}"),
                format!("`{entry}` is not a valid name or glob: {e}"),
            ));
        }
    }
}

fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

fn check_source_ids(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<&str, String> = HashMap::new();
    for (id, pointer) in cfg.source_ids() {
        if let Err(e) = validate_source_id(id) {
            errors.push(cfg.error_at(&pointer, format!("invalid source id: {e}")));
            continue;
        }
        if let Some(first) = seen.get(id) {
            errors.push(
                cfg.error_at(&pointer, format!("duplicate source id `{id}`"))
                    .with_hint(format!(
                        "`{id}` is already the id of the source at line {}; ids prefix tool \
                         names and must be unique",
                        cfg.locate(first).line
                    )),
            );
        } else {
            seen.insert(id, pointer);
        }
    }
}

fn check_policy(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>, warnings: &mut Vec<Diagnostic>) {
    let p = &cfg.policy;
    check_tool_policy(cfg, "/policy/defaults", &p.defaults, errors);
    gateway::check_unenforced(cfg, "/policy/defaults", &p.defaults, warnings);
    for (name, tp) in &p.tools {
        let pointer = format!("/policy/tools/{}", escape(name));
        check_tool_policy(cfg, &pointer, tp, errors);
        gateway::check_unenforced(cfg, &pointer, tp, warnings);
    }
    let mut ids: Vec<&str> = Vec::new();
    for (id, _) in cfg.source_ids() {
        if !ids.contains(&id) && validate_source_id(id).is_ok() {
            ids.push(id);
        }
    }
    for (id, tp) in &p.sources {
        let pointer = format!("/policy/sources/{}", escape(id));
        check_tool_policy(cfg, &pointer, tp, errors);
        gateway::check_unenforced(cfg, &pointer, tp, warnings);
        if id != LOCAL_SOURCE_ID && !ids.contains(&id.as_str()) {
            let known = if ids.is_empty() {
                format!(
                    "this file defines only `{LOCAL_SOURCE_ID}` (fine if the application adds \
                     `{id}` in code)"
                )
            } else {
                format!(
                    "sources defined in this file: `{LOCAL_SOURCE_ID}`, `{}` (fine if the \
                     application adds `{id}` in code)",
                    ids.join("`, `")
                )
            };
            let loc = cfg
                .locations
                .key(&pointer)
                .unwrap_or_else(|| cfg.locate(&pointer));
            warnings.push(
                Diagnostic::warning(
                    &cfg.path,
                    Some(loc),
                    format!("policy for unknown source `{id}`"),
                )
                .with_hint(known),
            );
        }
    }
}

fn check_tool_policy(
    cfg: &LoadedConfig,
    pointer: &str,
    tp: &ToolPolicy,
    errors: &mut Vec<Diagnostic>,
) {
    if let Some(rl) = &tp.rate_limit
        && let Err(e) = parse_rate_limit(rl)
    {
        errors.push(cfg.error_at(&format!("{pointer}/rate_limit"), e));
    }
    if tp.concurrency == Some(0) {
        errors.push(cfg.error_at(
            &format!("{pointer}/concurrency"),
            "`concurrency: 0` would block every call; use at least 1",
        ));
    }
    if let Some(c) = tp.cost_per_call
        && !(c.is_finite() && c >= 0.0)
    {
        errors.push(cfg.error_at(
            &format!("{pointer}/cost_per_call"),
            format!("`cost_per_call` must be a finite number >= 0, not {c}"),
        ));
    }
}
