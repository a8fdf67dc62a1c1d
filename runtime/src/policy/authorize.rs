//! The authorize layer: who may call which tool.
//!
//! A caller may call a tool when
//! 1. the tool's effective `roles` (its `policy.tools` entry, else its source's, else the
//!    defaults; empty: anyone) include one of the caller's roles,
//! 2. every `policy.rules` entry that matches the tool is satisfied (the caller has one of the
//!    rule's `roles`; a `deny` rule refuses everyone), and
//! 3. a tool marked `requires_auth` has an authenticated caller.
//!
//! The same decision ([`allowed`]) hides the tool from the caller's listings
//! ([`Toolset::tools_for`](crate::Toolset::tools_for)): a caller never sees a tool it may not
//! call.
//!
//! # Errors
//! `permission_denied` naming the tool and what was missing (the roles, and the rule by its
//! 1-based index in `policy.rules`); nothing further runs, nothing is charged or counted.

use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::Value;
use toolgate_model::config::AccessRule;
use tower::{Layer, Service};

use super::Pipeline;
use super::call::{Call, CallFuture, LayerInputs};
use super::code::{self, CodeRule};
use crate::{ErrorKind, Identity, ToolDescriptor, ToolError, ToolFuture, ToolOutput};

/// What a caller needs to call one tool, worked out once per tool.
#[derive(Debug, Default, Clone)]
pub(crate) struct Requirements {
    /// The tool's name, for messages.
    tool: String,
    /// The tool is marked `requires_auth`.
    authenticated: bool,
    /// Each set of roles of which the caller needs one, and where it comes from.
    roles: Vec<(Vec<String>, String)>,
    /// A `deny` rule matches: nobody may call it (where it comes from).
    denied: Option<String>,
    /// The `rego` / `cel` rules that match and do not read the arguments, in order.
    code: Vec<Arc<CodeRule>>,
    /// The `tool` part of their input (`Null` when there is none).
    tool_input: Value,
}

impl Requirements {
    /// The requirements of `tool` under `pipeline`'s policy.
    pub(crate) fn of(pipeline: &Pipeline, tool: &ToolDescriptor) -> Self {
        Self::matching(pipeline, tool, matches)
    }

    /// The requirements of `tool` under `pipeline`'s policy, for the rules `applies` picks.
    fn matching(
        pipeline: &Pipeline,
        tool: &ToolDescriptor,
        applies: fn(&AccessRule, &ToolDescriptor) -> bool,
    ) -> Self {
        let config = &pipeline.config;
        let mut req = Self {
            tool: tool.name.clone(),
            authenticated: tool.requires_auth,
            ..Self::default()
        };
        let policy = config.effective(&tool.name, &tool.source);
        if !policy.roles.is_empty() {
            req.roles
                .push((policy.roles, "its policy's `roles`".to_string()));
        }
        for (i, rule) in config.rules.iter().enumerate() {
            if !applies(rule, tool) || pipeline.code.get(i).is_some() {
                continue;
            }
            let origin = format!("rule {} of policy.rules: {}", i + 1, describe(rule));
            if rule.deny {
                req.denied.get_or_insert(origin);
            } else if !rule.roles.is_empty() {
                req.roles.push((rule.roles.clone(), origin));
            }
        }
        req.code = pipeline.code.matching(config, tool, applies, false);
        if !req.code.is_empty() {
            req.tool_input = code::tool_input(tool);
        }
        req
    }

    /// Whether nothing is required (the layer can be left out).
    pub(crate) fn is_empty(&self) -> bool {
        !self.authenticated
            && self.roles.is_empty()
            && self.denied.is_none()
            && self.code.is_empty()
    }

    /// Whether `identity` may call the tool ([`check`](Self::check) without the reason: a
    /// listing asks this of every tool).
    pub(crate) fn permits(&self, identity: &Identity) -> bool {
        self.denied.is_none()
            && (!self.authenticated || identity.caller.is_some())
            && self
                .roles
                .iter()
                .all(|(roles, _)| roles.iter().any(|r| identity.roles.contains(r)))
            && self.code_check(identity).is_ok()
    }

    /// `Ok` when every code rule allows `identity`; else the first refusal's message.
    fn code_check(&self, identity: &Identity) -> Result<(), String> {
        if self.code.is_empty() {
            return Ok(());
        }
        let input = code::input(identity, &self.tool_input, None);
        self.code
            .iter()
            .try_for_each(|rule| rule.check(&self.tool, &input))
    }

    /// `Ok` when `identity` may call the tool; else why not.
    pub(crate) fn check(&self, identity: &Identity) -> Result<(), String> {
        let tool = &self.tool;
        if let Some(origin) = &self.denied {
            return Err(format!(
                "tool `{tool}` may not be called by anyone ({origin})"
            ));
        }
        if self.authenticated && identity.caller.is_none() {
            return Err(format!(
                "tool `{tool}` requires an authenticated caller (it is marked requires_auth); send an API key"
            ));
        }
        for (roles, origin) in &self.roles {
            if !roles.iter().any(|r| identity.roles.contains(r)) {
                let has = if identity.roles.is_empty() {
                    "the caller has no role".to_string()
                } else {
                    format!("the caller has {}", identity.roles.join(", "))
                };
                return Err(format!(
                    "tool `{tool}` needs one of the roles {} ({origin}); {has}",
                    roles.join(", ")
                ));
            }
        }
        self.code_check(identity)
    }
}

/// Whether `identity` may call `tool` under `config`; else why not (the message of the
/// `permission_denied` error). Used by the layer and by listings.
pub(crate) fn allowed(
    pipeline: &Pipeline,
    tool: &ToolDescriptor,
    identity: &Identity,
) -> Result<(), String> {
    Requirements::of(pipeline, tool).check(identity)
}

/// Whether `identity` may call `tool`, a remote tool known only by its name and source (its
/// source could not list it, so its category, tags and `dangerous` mark are unknown): every rule
/// whose `tools` and `sources` selectors match applies, whatever its other selectors say (a
/// `{dangerous: true, roles: [admin]}` rule too). Remote tools are never `requires_auth`.
pub(crate) fn allowed_unlisted(
    pipeline: &Pipeline,
    tool: &ToolDescriptor,
    identity: &Identity,
) -> Result<(), String> {
    Requirements::matching(pipeline, tool, matches_unlisted).check(identity)
}

/// [`matches`] for a tool whose descriptor is unknown: the name and source selectors decide,
/// the others are taken as matching.
fn matches_unlisted(rule: &AccessRule, tool: &ToolDescriptor) -> bool {
    matches_name_and_source(rule, tool) && rule.requires_auth != Some(true)
}

/// Whether `rule`'s `tools` globs (either name form) and `sources` select `tool` (none: every
/// tool).
fn matches_name_and_source(rule: &AccessRule, tool: &ToolDescriptor) -> bool {
    let exported = toolgate_model::names::exported_name(&tool.name);
    (rule.tools.is_empty()
        || rule.tools.iter().any(|g| {
            glob::Pattern::new(g)
                .map(|p| p.matches(&tool.name) || p.matches(&exported))
                .unwrap_or(g == &tool.name)
        }))
        && (rule.sources.is_empty() || rule.sources.contains(&tool.source))
}

/// Whether every selector `rule` gives matches `tool` (no selector: every tool).
pub(crate) fn matches(rule: &AccessRule, tool: &ToolDescriptor) -> bool {
    matches_name_and_source(rule, tool)
        && (rule.categories.is_empty()
            || tool
                .category
                .as_ref()
                .is_some_and(|c| rule.categories.contains(c)))
        && (rule.tags.is_empty() || tool.tags.iter().any(|t| rule.tags.contains(t)))
        && rule.dangerous.is_none_or(|d| d == tool.dangerous)
        && rule.requires_auth.is_none_or(|r| r == tool.requires_auth)
}

/// The rule's selectors in a few words: `dangerous tools`, `tools github.delete_*`.
fn describe(rule: &AccessRule) -> String {
    let mut parts = Vec::new();
    match rule.dangerous {
        Some(true) => parts.push("dangerous tools".to_string()),
        Some(false) => parts.push("tools not marked dangerous".to_string()),
        None => {}
    }
    match rule.requires_auth {
        Some(true) => parts.push("tools that require auth".to_string()),
        Some(false) => parts.push("tools that do not require auth".to_string()),
        None => {}
    }
    for (what, list) in [
        ("tools", &rule.tools),
        ("sources", &rule.sources),
        ("categories", &rule.categories),
        ("tags", &rule.tags),
    ] {
        if !list.is_empty() {
            parts.push(format!("{what} {}", list.join(", ")));
        }
    }
    if parts.is_empty() {
        "every tool".to_string()
    } else {
        parts.join("; ")
    }
}

/// The layer for a tool, when anything is required to call it.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<AuthorizeLayer> {
    let req = Requirements::of(inputs.pipeline, inputs.tool);
    (!req.is_empty()).then(|| AuthorizeLayer { req: Arc::new(req) })
}

/// Refuses callers that may not call the tool.
#[derive(Clone)]
pub(crate) struct AuthorizeLayer {
    req: Arc<Requirements>,
}

impl<S> Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authorize {
            req: Arc::clone(&self.req),
            inner,
        }
    }
}

/// The service of [`AuthorizeLayer`].
#[derive(Clone)]
pub(crate) struct Authorize<S> {
    req: Arc<Requirements>,
    inner: S,
}

impl<S> Service<Call> for Authorize<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        match self.req.check(call.ctx.identity()) {
            Ok(()) => self.inner.call(call),
            Err(why) => {
                tracing::info!(tool = %call.name(), caller = ?call.ctx.caller(), "call refused: {why}");
                ToolFuture::err(ToolError::new(ErrorKind::PermissionDenied, why))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_model::config::{PolicyConfig, ToolPolicy};

    fn tool(name: &str, dangerous: bool) -> ToolDescriptor {
        ToolDescriptor {
            name: name.into(),
            source: "local".into(),
            dangerous,
            ..ToolDescriptor::default()
        }
    }

    fn who(caller: Option<&str>, roles: &[&str]) -> Identity {
        Identity {
            caller: caller.map(str::to_owned),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            ..Identity::default()
        }
    }

    fn pipe(cfg: &PolicyConfig) -> Pipeline {
        Pipeline::new(false, None, cfg.clone())
    }

    fn config(rules: Vec<AccessRule>) -> PolicyConfig {
        PolicyConfig {
            rules,
            ..PolicyConfig::default()
        }
    }

    #[test]
    fn permits_agrees_with_check_for_every_kind_of_requirement() {
        // What a listing asks (permits) and what a call is told (check) must never differ.
        let cfg = config(vec![
            AccessRule {
                dangerous: Some(true),
                roles: vec!["admin".into()],
                ..AccessRule::default()
            },
            AccessRule {
                tools: vec!["pay*".into()],
                roles: vec!["finance".into(), "admin".into()],
                ..AccessRule::default()
            },
            AccessRule {
                tools: vec!["nuke".into()],
                deny: true,
                ..AccessRule::default()
            },
        ]);
        let mut guarded = tool("guarded", false);
        guarded.requires_auth = true;
        let tools = [
            tool("calc", false),
            tool("wipe", true),
            tool("pay_out", true),
            tool("nuke", false),
            guarded,
        ];
        let callers = [
            who(None, &[]),
            who(Some("bob"), &[]),
            who(Some("ann"), &["admin"]),
            who(Some("fin"), &["finance"]),
            who(None, &["admin", "finance"]),
        ];
        for t in &tools {
            let req = Requirements::of(&pipe(&cfg), t);
            for c in &callers {
                assert_eq!(
                    req.permits(c),
                    req.check(c).is_ok(),
                    "{} for {:?} {:?}",
                    t.name,
                    c.caller,
                    c.roles
                );
            }
        }
    }

    #[test]
    fn a_rule_on_dangerous_tools_needs_its_role() {
        let cfg = config(vec![AccessRule {
            dangerous: Some(true),
            roles: vec!["admin".into()],
            ..AccessRule::default()
        }]);
        let wipe = tool("wipe", true);
        let err = allowed(&pipe(&cfg), &wipe, &who(Some("bob"), &["reader"])).unwrap_err();
        assert!(
            err.contains(
                "tool `wipe` needs one of the roles admin (rule 1 of policy.rules: dangerous tools)"
            ),
            "{err}"
        );
        assert!(allowed(&pipe(&cfg), &wipe, &who(Some("ann"), &["reader", "admin"])).is_ok());
        // The rule does not match a harmless tool.
        assert!(allowed(&pipe(&cfg), &tool("calc", false), &who(None, &[])).is_ok());
    }

    #[test]
    fn deny_rules_refuse_everyone_and_globs_match_either_name_form() {
        let cfg = config(vec![AccessRule {
            tools: vec!["github.delete_*".into()],
            deny: true,
            ..AccessRule::default()
        }]);
        let mut t = tool("github.delete_repo", false);
        t.source = "github".into();
        let err = allowed(&pipe(&cfg), &t, &who(Some("root"), &["admin"])).unwrap_err();
        assert!(err.contains("may not be called by anyone (rule 1"), "{err}");
        let cfg = config(vec![AccessRule {
            tools: vec!["github__delete_*".into()],
            deny: true,
            ..AccessRule::default()
        }]);
        assert!(allowed(&pipe(&cfg), &t, &who(None, &[])).is_err());
        assert!(allowed(&pipe(&cfg), &tool("github.list", false), &who(None, &[])).is_ok());
    }

    #[test]
    fn every_matching_rule_must_hold_and_selectors_combine() {
        let mut t = tool("pay", false);
        t.source = "billing".into();
        t.category = Some("money".into());
        t.tags = vec!["write".into()];
        let cfg = config(vec![
            AccessRule {
                sources: vec!["billing".into()],
                roles: vec!["finance".into(), "admin".into()],
                ..AccessRule::default()
            },
            AccessRule {
                categories: vec!["money".into()],
                tags: vec!["write".into()],
                roles: vec!["admin".into()],
                ..AccessRule::default()
            },
            AccessRule {
                tags: vec!["other".into()],
                deny: true,
                ..AccessRule::default()
            },
        ]);
        let err = allowed(&pipe(&cfg), &t, &who(Some("f"), &["finance"])).unwrap_err();
        assert!(err.contains("rule 2 of policy.rules"), "{err}");
        assert!(allowed(&pipe(&cfg), &t, &who(Some("a"), &["admin"])).is_ok());
    }

    #[tokio::test]
    async fn the_layer_refuses_before_the_backend_runs() {
        use tower::ServiceExt;
        let cfg = config(vec![AccessRule {
            dangerous: Some(true),
            roles: vec!["admin".into()],
            ..AccessRule::default()
        }]);
        let wipe = Arc::new(tool("wipe", true));
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&ran);
        let backend = tower::service_fn(move |_: Call| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            crate::ToolFuture::ready(Ok(ToolOutput::text("wiped")))
        });
        let layer = AuthorizeLayer {
            req: Arc::new(Requirements::of(&pipe(&cfg), &wipe)),
        };
        let svc = layer.layer(backend);
        let call = |roles: &[&str]| {
            let source: Arc<dyn crate::ToolSource> =
                Arc::new(crate::testing::StubSource::new("local"));
            Call {
                report: Some(Arc::default()),
                caller_left: None,
                watch_cancel: false,
                ..Call::new(
                    Arc::clone(&wipe),
                    source,
                    serde_json::json!({}),
                    crate::ToolContext::builder()
                        .caller("k")
                        .roles(roles.iter().copied())
                        .build(),
                )
            }
        };
        let e = svc.clone().oneshot(call(&["reader"])).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
        svc.clone().oneshot(call(&["admin"])).await.unwrap();
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn policy_roles_and_requires_auth() {
        let mut cfg = PolicyConfig::default();
        cfg.tools.insert(
            "calc".into(),
            ToolPolicy {
                roles: vec!["math".into()],
                ..ToolPolicy::default()
            },
        );
        let calc = tool("calc", false);
        let err = allowed(&pipe(&cfg), &calc, &who(None, &[])).unwrap_err();
        assert!(
            err.contains(
                "needs one of the roles math (its policy's `roles`); the caller has no role"
            ),
            "{err}"
        );
        assert!(allowed(&pipe(&cfg), &calc, &who(None, &["math"])).is_ok());
        let mut secret = tool("secret", false);
        secret.requires_auth = true;
        let err = allowed(&pipe(&cfg), &secret, &who(None, &[])).unwrap_err();
        assert!(err.contains("requires an authenticated caller"), "{err}");
        assert!(allowed(&pipe(&cfg), &secret, &who(Some("k"), &[])).is_ok());
        // Nothing required: no layer.
        assert!(Requirements::of(&pipe(&cfg), &tool("other", false)).is_empty());
    }
}
