//! Rules of the model that serde cannot express, each reported at its line.

use std::collections::HashMap;

use super::location::escape;
use super::{CONFIG_VERSION, Diagnostic, LoadedConfig, McpTransport, ToolPolicy, parse_rate_limit};
use crate::names::{LOCAL_SOURCE_ID, validate_source_id};

mod code_mode;
mod gateway;
mod guardrails;
mod oauth2;
mod openapi;
mod overrides;
mod telemetry;

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
    overrides::check(cfg, &mut errors, &mut warnings);
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
        let (key, headers, bearer, oauth) = match &s.transport {
            McpTransport::Http(t) => ("http", &t.headers, &t.bearer_token, &t.oauth2),
            McpTransport::Sse(t) => ("sse", &t.headers, &t.bearer_token, &t.oauth2),
            McpTransport::Stdio(_) => continue,
        };
        let Some(o) = oauth else { continue };
        let at = format!("/tools/mcp/{i}/{key}/oauth2");
        let owner = format!("MCP server `{}`", s.id);
        oauth2::check_client_credentials(cfg, &at, &owner, o, true, &mut errors);
        let url = match &s.transport {
            McpTransport::Http(t) => &t.url,
            McpTransport::Sse(t) => &t.url,
            McpTransport::Stdio(_) => continue,
        };
        if url.starts_with("http://") && !gateway::is_loopback_url(url) {
            errors.push(
                cfg.error_at(
                    &format!("/tools/mcp/{i}/{key}/url"),
                    format!(
                        "MCP server `{}`: `{url}` is plain http: the access token `oauth2` fetches would cross the network unencrypted",
                        s.id
                    ),
                )
                .with_hint("use https (plain http only to a loopback address)"),
            );
        }
        let header = headers
            .keys()
            .any(|h| h.eq_ignore_ascii_case("authorization"));
        if bearer.is_some() || header {
            errors.push(
                cfg.error_at(
                    &at,
                    format!(
                        "{owner}: `oauth2` and {} both set the `Authorization` header",
                        if header {
                            "an `Authorization` header"
                        } else {
                            "`bearer_token`"
                        }
                    ),
                )
                .with_hint(if header {
                    "keep one: `oauth2` fetches the token; drop the `Authorization` header"
                } else {
                    "keep one: `oauth2` fetches the token, `bearer_token` is a fixed one"
                }),
            );
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
        for (key, value) in [
            ("connect_timeout_ms", s.connect_timeout_ms),
            ("idle_timeout_ms", s.idle_timeout_ms),
        ] {
            if value == Some(0) {
                errors.push(cfg.error_at(
                    &format!("/tools/mcp/{i}/{key}"),
                    format!("MCP server `{}`: `{key}: 0` is not a usable wait; give at least 1 (milliseconds) or leave it out", s.id),
                ));
            }
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
        for (key, value) in [
            ("timeout_ms", a.timeout_ms),
            ("connect_timeout_ms", a.connect_timeout_ms),
            ("poll_interval_ms", a.poll_interval_ms),
        ] {
            if value == Some(0) {
                errors.push(cfg.error_at(
                    &format!("/tools/a2a/{i}/{key}"),
                    format!("A2A agent `{}`: `{key}: 0` is not a usable wait; give at least 1 (milliseconds)", a.id),
                ));
            }
        }
        check_auth(
            cfg,
            &format!("/tools/a2a/{i}/auth"),
            &format!("A2A agent `{}`", a.id),
            a.auth.as_ref(),
            false,
            &mut errors,
        );
        if let Some(super::AuthConfig::OAuth2(o)) = &a.auth
            && o.token_url.is_none()
        {
            errors.push(
                cfg.error_at(
                    &format!("/tools/a2a/{i}/auth/oauth2"),
                    format!("A2A agent `{}`: `oauth2` needs `token_url`", a.id),
                )
                .with_hint("the token endpoint of your identity provider, e.g. `https://idp.example.com/oauth2/token`"),
            );
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
    telemetry::check_telemetry(cfg, &mut errors);
    code_mode::check_code_mode(cfg, &mut errors);
    gateway::check_store(cfg, &mut errors);
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
        if let Some(message) = glob_error(entry) {
            errors.push(cfg.error_at(&format!("{pointer}/{j}"), message));
        }
    }
}

/// Why `entry` is not a name or a glob the `glob` crate reads, or `None` when it is.
pub(super) fn glob_error(entry: &str) -> Option<String> {
    glob::Pattern::new(entry)
        .err()
        .map(|e| format!("`{entry}` is not a valid name or glob: {e}"))
}

/// The `oauth2` client credentials of an `auth:` (OpenAPI, A2A), alone or by scheme name.
/// `exchange`: whether `grant: token_exchange` is available (OpenAPI sources).
fn check_auth(
    cfg: &LoadedConfig,
    at: &str,
    owner: &str,
    auth: Option<&super::AuthConfig>,
    exchange: bool,
    errors: &mut Vec<Diagnostic>,
) {
    match auth {
        Some(super::AuthConfig::OAuth2(o)) => {
            oauth2::check_client_credentials(
                cfg,
                &format!("{at}/oauth2"),
                owner,
                o,
                exchange,
                errors,
            );
        }
        Some(super::AuthConfig::Schemes(schemes)) => {
            for (name, creds) in schemes {
                if let super::SchemeCredentials::OAuth2(o) = creds {
                    let at = format!("{at}/schemes/{}", escape(name));
                    oauth2::check_client_credentials(cfg, &at, owner, o, exchange, errors);
                }
            }
        }
        _ => {}
    }
}

/// Whether `url` is an absolute `http://` or `https://` URL with a host.
fn is_http_url(url: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        url.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
    })
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
    check_access_and_budgets(cfg, errors);
    guardrails::check(cfg, errors, warnings);
    check_tool_policy(cfg, "/policy/defaults", &p.defaults, errors);
    for (name, tp) in &p.tools {
        let pointer = format!("/policy/tools/{}", escape(name));
        check_tool_policy(cfg, &pointer, tp, errors);
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
    if tp.timeout_ms == Some(0) {
        errors.push(cfg.error_at(
            &format!("{pointer}/timeout_ms"),
            "`timeout_ms: 0` would time out every call at once; use at least 1 (milliseconds)",
        ));
    }
    if let Some(rl) = &tp.rate_limit
        && let Err(e) = parse_rate_limit(rl)
    {
        errors.push(cfg.error_at(&format!("{pointer}/rate_limit"), e));
    }
    for (key, rl) in [
        ("caller_rate_limit", &tp.caller_rate_limit),
        ("source_rate_limit", &tp.source_rate_limit),
    ] {
        if let Some(rl) = rl
            && let Err(e) = parse_rate_limit(rl)
        {
            errors.push(cfg.error_at(&format!("{pointer}/{key}"), e));
        }
    }
    if tp.source_concurrency == Some(0) {
        errors.push(cfg.error_at(
            &format!("{pointer}/source_concurrency"),
            "`source_concurrency: 0` would block every call of the source; use at least 1",
        ));
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
    check_resilience(cfg, pointer, tp, errors);
}

/// The circuit breaker's numbers and the fallback (its error kinds, not the tool itself; an
/// unknown fallback tool can only be told at run time, remote tools being listed then).
fn check_resilience(
    cfg: &LoadedConfig,
    pointer: &str,
    tp: &ToolPolicy,
    errors: &mut Vec<Diagnostic>,
) {
    if let Some(cb) = &tp.circuit_breaker {
        let at = |key: &str| format!("{pointer}/circuit_breaker/{key}");
        if cb.failures == 0 {
            errors.push(cfg.error_at(
                &at("failures"),
                "`failures: 0` would open the breaker before any call; use at least 1",
            ));
        }
        if let Some(rate) = cb.error_rate
            && !(rate > 0.0 && rate <= 1.0)
        {
            errors.push(cfg.error_at(&at("error_rate"), format!("`error_rate` must be above 0 and at most 1 (a fraction of the calls), not {rate}")));
        }
        if cb.open_ms == 0 {
            errors.push(cfg.error_at(
                &at("open_ms"),
                "`open_ms: 0` would never keep the breaker open; use at least 1 (milliseconds)",
            ));
        }
        if cb.error_rate.is_some() && cb.window_ms == 0 {
            errors.push(cfg.error_at(&at("window_ms"), "`window_ms: 0` leaves no calls to measure the error rate over; use at least 1 (milliseconds)"));
        }
    }
    if let Some(fb) = &tp.fallback {
        for (i, kind) in fb.on.iter().enumerate() {
            if !super::policy_rules::ERROR_KINDS.contains(&kind.as_str()) {
                errors.push(cfg.error_at(
                    &format!("{pointer}/fallback/on/{i}"),
                    format!(
                        "unknown error kind `{kind}` in `fallback.on`; known kinds: {}",
                        super::policy_rules::ERROR_KINDS.join(", ")
                    ),
                ));
            }
        }
        if fb.on.is_empty() {
            errors.push(cfg.error_at(&format!("{pointer}/fallback/on"), "`fallback.on` lists no error kind, so the fallback would never be called; e.g. `on: [timeout, network, upstream]`"));
        }
        if pointer.strip_prefix("/policy/tools/") == Some(escape(&fb.tool).as_str()) {
            errors.push(cfg.error_at(
                &format!("{pointer}/fallback/tool"),
                format!("tool `{}` cannot be its own fallback", fb.tool),
            ));
        }
    }
}

/// `policy.rules`, `policy.arguments`, `policy.budgets` and `policy.pinning`: a rule that can
/// refuse nobody, an argument rule without a condition, a negative budget, an empty approvals
/// path, and globs that do not parse are errors.
fn check_access_and_budgets(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>) {
    let p = &cfg.policy;
    let bad_glob = |g: &String| {
        glob::Pattern::new(g)
            .err()
            .map(|e| format!("`{g}` is not a valid glob: {e}"))
    };
    for (i, rule) in p.rules.iter().enumerate() {
        let at = format!("/policy/rules/{i}");
        if rule.code().is_some() || rule.reason.is_some() || rule.timeout_ms.is_some() {
            errors.extend(crate::policy_code::check_rule(cfg, i, rule));
        } else if rule.roles.is_empty() && !rule.deny {
            errors.push(
                cfg.error_at(&at, "this access rule has neither `roles` nor `deny: true`, so it refuses nobody")
                    .with_hint("give the roles that may call the matched tools, e.g. roles: [admin], deny: true, or a rego / cel policy"),
            );
        }
        if let Some(e) = rule.tools.iter().find_map(bad_glob) {
            errors.push(cfg.error_at(&format!("{at}/tools"), e));
        }
    }
    for (i, rule) in p.arguments.iter().enumerate() {
        let at = format!("/policy/arguments/{i}");
        if rule.argument.trim().is_empty() {
            errors.push(cfg.error_at(&format!("{at}/argument"), "`argument` is empty: name the argument (`url`) or give a JSON pointer (`/request/url`)"));
        }
        let conditions = [
            &rule.deny_hosts,
            &rule.allow_hosts,
            &rule.deny_paths,
            &rule.deny_values,
            &rule.allow_values,
        ];
        if conditions.iter().all(|c| c.is_empty()) {
            errors.push(
                cfg.error_at(
                    &at,
                    "this argument rule has no condition, so it refuses nothing",
                )
                .with_hint("give deny_hosts, allow_hosts, deny_paths, deny_values or allow_values"),
            );
        }
        for (key, list) in [
            ("tools", &rule.tools),
            ("deny_paths", &rule.deny_paths),
            ("deny_values", &rule.deny_values),
            ("allow_values", &rule.allow_values),
        ] {
            if let Some(e) = list.iter().find_map(bad_glob) {
                errors.push(cfg.error_at(&format!("{at}/{key}"), e));
            }
        }
    }
    if let Some(b) = &p.budgets {
        for (key, limit) in [
            ("per_caller", b.per_caller),
            ("per_agent", b.per_agent),
            ("per_task", b.per_task),
        ] {
            if let Some(l) = limit
                && !(l.is_finite() && l >= 0.0)
            {
                errors.push(cfg.error_at(
                    &format!("/policy/budgets/{key}"),
                    format!("`{key}` must be a finite number >= 0, not {l}"),
                ));
            }
        }
    }
    if let Some(pin) = &p.pinning
        && pin.file.trim().is_empty()
    {
        errors.push(
            cfg.error_at(
                "/policy/pinning/file",
                "`file` is empty: name the approvals file (JSON), relative to this tools.yaml",
            )
            .with_hint("e.g. file: tool-approvals.json"),
        );
    }
}
