//! The argument rules layer (`policy.arguments`): one argument's value checked before the call.
//!
//! For a tool a rule's `tools` globs match (no glob: every tool), the argument the rule names (a
//! top-level name `url`, or a JSON pointer `/request/url`) is looked up in the validated
//! arguments; an absent argument passes. An array is checked element by element.
//!
//! * URL rules (`deny_hosts`, `allow_hosts`, `deny_paths`): the value must be an absolute URL
//!   with a host (anything else is refused: it could not be checked). Hosts match exactly
//!   (ignoring case) or as `*.example.com` (any subdomain of example.com, not example.com
//!   itself); `deny_paths` are globs on the URL's path (`/admin/*`).
//! * Value rules (`deny_values`, `allow_values`): globs on the value as text (a string as it
//!   is, anything else as JSON).
//!
//! The `rego` / `cel` rules of `policy.rules` that read the `arguments` are checked here too,
//! after the argument rules (see [`super::code`]).
//!
//! # Errors
//! `policy_denied` naming the tool, the argument's pointer, the host, path or value refused,
//! and the rule by its 1-based index in `policy.arguments`; for a code rule, its reason and its
//! index in `policy.rules`; nothing runs.

use std::sync::Arc;
use std::task::{Context, Poll};

use glob::Pattern;
use serde_json::Value;
use toolgate_model::config::ArgumentRule;
use tower::{Layer, Service};

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ErrorKind, ToolError, ToolFuture, ToolOutput};

/// One rule, compiled for a tool.
#[derive(Debug)]
struct Rule {
    /// 1-based index in `policy.arguments`.
    index: usize,
    /// The argument as a JSON pointer.
    pointer: String,
    deny_hosts: Vec<String>,
    allow_hosts: Vec<String>,
    deny_paths: Vec<Pattern>,
    deny_values: Vec<Pattern>,
    allow_values: Vec<Pattern>,
}

/// A top-level argument name as a JSON pointer (`url` → `/url`); a pointer as it is.
fn pointer_of(argument: &str) -> String {
    if argument.starts_with('/') || argument.is_empty() {
        argument.to_string()
    } else {
        format!("/{}", argument.replace('~', "~0").replace('/', "~1"))
    }
}

fn globs(list: &[String]) -> Vec<Pattern> {
    list.iter()
        .map(|g| Pattern::new(g).unwrap_or_else(|_| Pattern::new(&Pattern::escape(g)).unwrap()))
        .collect()
}

/// Whether `host` (lower case, no brackets) matches `pattern` (exact, or `*.example.com`).
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim_end_matches('.').to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
        None => pattern.trim_start_matches('[').trim_end_matches(']') == host,
    }
}

impl Rule {
    fn compile(index: usize, rule: &ArgumentRule) -> Self {
        Self {
            index: index + 1,
            pointer: pointer_of(&rule.argument),
            deny_hosts: rule.deny_hosts.clone(),
            allow_hosts: rule.allow_hosts.clone(),
            deny_paths: globs(&rule.deny_paths),
            deny_values: globs(&rule.deny_values),
            allow_values: globs(&rule.allow_values),
        }
    }

    fn checks_urls(&self) -> bool {
        !(self.deny_hosts.is_empty() && self.allow_hosts.is_empty() && self.deny_paths.is_empty())
    }

    /// Checks the argument in `args`; `Err` says what was refused.
    fn check(&self, args: &Value) -> Result<(), String> {
        let Some(value) = args.pointer(&self.pointer) else {
            return Ok(());
        };
        match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| self.check_one(v, &format!("{}/{i}", self.pointer))),
            v => self.check_one(v, &self.pointer),
        }
    }

    fn check_one(&self, value: &Value, pointer: &str) -> Result<(), String> {
        let rule = format!("rule {} of policy.arguments", self.index);
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if self.checks_urls() {
            let url = url::Url::parse(&text)
                .ok()
                .filter(|u| u.host_str().is_some());
            let Some(url) = url else {
                return Err(format!(
                    "argument `{pointer}`: `{}` is not an absolute URL with a host, so {rule} cannot check it",
                    shown(value)
                ));
            };
            self.check_url(&url, &format!("argument `{pointer}`"))?;
        }
        if let Some(p) = self.deny_values.iter().find(|p| p.matches(&text)) {
            return Err(format!(
                "argument `{pointer}`: value `{}` is refused ({rule}: deny_values `{p}`)",
                shown(value)
            ));
        }
        if !self.allow_values.is_empty() && !self.allow_values.iter().any(|p| p.matches(&text)) {
            return Err(format!(
                "argument `{pointer}`: value `{}` is not allowed ({rule}: allow_values {})",
                shown(value),
                self.allow_values
                    .iter()
                    .map(Pattern::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(())
    }

    /// Checks `url` against the URL rules (`deny_hosts`, `allow_hosts`, `deny_paths`);
    /// `what` starts the message (``argument `/url` ``, ``redirect to `…` ``).
    fn check_url(&self, url: &url::Url, what: &str) -> Result<(), String> {
        let rule = format!("rule {} of policy.arguments", self.index);
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if let Some(p) = self.deny_hosts.iter().find(|p| host_matches(p, &host)) {
            return Err(format!(
                "{what}: host `{host}` is refused ({rule}: deny_hosts `{p}`)"
            ));
        }
        if !self.allow_hosts.is_empty() && !self.allow_hosts.iter().any(|p| host_matches(p, &host))
        {
            return Err(format!(
                "{what}: host `{host}` is not allowed ({rule}: allow_hosts {})",
                self.allow_hosts.join(", ")
            ));
        }
        // Matched as the server will read it: percent-decoded, repeated slashes collapsed
        // (`/%61dmin/x` and `//admin/x` are `/admin/x`).
        let decoded = percent_decoded(url.path());
        let path = decoded.as_str();
        if let Some(p) = self.deny_paths.iter().find(|p| p.matches(path)) {
            return Err(format!(
                "{what}: path `{path}` on host `{host}` is refused ({rule}: deny_paths `{p}`)"
            ));
        }
        Ok(())
    }
}

/// The URL rules of `policy.arguments` that checked one call's arguments, kept on its
/// [`ToolContext`](crate::ToolContext) so that a tool can check the URLs it follows on its own
/// (redirects): [`ToolContext::check_followed_url`](crate::ToolContext::check_followed_url).
#[derive(Clone)]
pub(crate) struct FollowedUrlRules {
    rules: Arc<Vec<Rule>>,
    /// Indices in `rules` of the URL rules whose argument the call had.
    applied: Vec<usize>,
}

impl FollowedUrlRules {
    /// Checks `url`, a URL the tool follows on its own; `Err` says which rule refused it.
    pub(crate) fn check(&self, url: &url::Url) -> Result<(), String> {
        let shown = toolgate_model::text::cut(url.as_str(), 200);
        self.applied
            .iter()
            .try_for_each(|&i| self.rules[i].check_url(url, &format!("redirect to `{shown}`")))
    }
}

impl std::fmt::Debug for FollowedUrlRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let indices: Vec<usize> = self.applied.iter().map(|&i| self.rules[i].index).collect();
        f.debug_struct("FollowedUrlRules")
            .field("rules", &indices)
            .finish()
    }
}

/// The value for a message: a string as it is, anything else as JSON, cut to 80 characters.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => toolgate_model::text::cut(s, 80).into_owned(),
        other => crate::validate::short(other),
    }
}

/// Whether `rule` applies to tool `name` (its globs, on either name form; none: every tool).
fn applies(rule: &ArgumentRule, name: &str) -> bool {
    let exported = toolgate_model::names::exported_name(name);
    rule.tools.is_empty()
        || rule.tools.iter().any(|g| {
            Pattern::new(g)
                .map(|p| p.matches(name) || p.matches(&exported))
                .unwrap_or(g == name)
        })
}

/// The layer for a tool, when some argument rule (or code rule reading the arguments) applies
/// to it.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<ArgumentsLayer> {
    let pipeline = inputs.pipeline;
    let code = pipeline.code.matching(
        &pipeline.config,
        inputs.tool,
        super::authorize::matches,
        true,
    );
    let tool_input = if code.is_empty() {
        Value::Null
    } else {
        super::code::tool_input(inputs.tool)
    };
    let rules: Vec<Rule> = inputs
        .pipeline
        .config
        .arguments
        .iter()
        .enumerate()
        .filter(|(_, r)| applies(r, &inputs.tool.name))
        .map(|(i, r)| Rule::compile(i, r))
        .collect();
    (!rules.is_empty() || !code.is_empty()).then(|| ArgumentsLayer {
        rules: Arc::new(rules),
        code: Arc::new((code, tool_input)),
    })
}

/// The code rules of a tool that read its arguments, and the `tool` part of their input.
type CodeRules = Arc<(Vec<Arc<super::code::CodeRule>>, Value)>;

/// Refuses calls whose arguments break a rule.
#[derive(Clone)]
pub(crate) struct ArgumentsLayer {
    rules: Arc<Vec<Rule>>,
    code: CodeRules,
}

impl<S> Layer<S> for ArgumentsLayer {
    type Service = Arguments<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Arguments {
            rules: Arc::clone(&self.rules),
            code: Arc::clone(&self.code),
            inner,
        }
    }
}

/// The service of [`ArgumentsLayer`].
#[derive(Clone)]
pub(crate) struct Arguments<S> {
    rules: Arc<Vec<Rule>>,
    code: CodeRules,
    inner: S,
}

impl<S> Service<Call> for Arguments<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: Call) -> CallFuture {
        for rule in self.rules.iter() {
            if let Err(why) = rule.check(&call.args) {
                let message = format!("tool `{}`: {why}", call.name());
                tracing::info!(tool = %call.name(), rule = rule.index, "call refused: {why}");
                let e = ToolError::new(ErrorKind::PolicyDenied, message).with_details(
                    serde_json::json!({"argument": rule.pointer, "rule": rule.index}),
                );
                return ToolFuture::err(e);
            }
        }
        let (code, tool_input) = &*self.code;
        if !code.is_empty() {
            let input = super::code::input(call.ctx.identity(), tool_input, Some(&call.args));
            for rule in code {
                if let Err(why) = rule.check(call.name(), &input) {
                    tracing::info!(tool = %call.name(), rule = rule.index, "call refused: {why}");
                    let e = ToolError::new(ErrorKind::PolicyDenied, why)
                        .with_details(serde_json::json!({"rule": rule.index}));
                    return ToolFuture::err(e);
                }
            }
        }
        // The URL rules that checked an argument check the URLs the tool follows from it.
        let applied: Vec<usize> = (0..self.rules.len())
            .filter(|&i| {
                let rule = &self.rules[i];
                rule.checks_urls() && call.args.pointer(&rule.pointer).is_some()
            })
            .collect();
        if !applied.is_empty() {
            call.ctx.set_followed_url_rules(FollowedUrlRules {
                rules: Arc::clone(&self.rules),
                applied,
            });
        }
        self.inner.call(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(f: impl FnOnce(&mut ArgumentRule)) -> Rule {
        let mut r = ArgumentRule {
            argument: "url".into(),
            ..ArgumentRule::default()
        };
        f(&mut r);
        Rule::compile(0, &r)
    }

    #[test]
    fn denied_hosts_exact_and_wildcard() {
        let r = rule(|r| r.deny_hosts = vec!["*.internal".into(), "LinkedIn.com".into()]);
        let err = r
            .check(&json!({"url": "https://db.corp.internal/x"}))
            .unwrap_err();
        assert!(
            err.contains("argument `/url`: host `db.corp.internal` is refused (rule 1 of policy.arguments: deny_hosts `*.internal`)"),
            "{err}"
        );
        assert!(
            r.check(&json!({"url": "https://linkedin.com/in/x"}))
                .is_err()
        );
        assert!(r.check(&json!({"url": "https://example.com/"})).is_ok());
        // `*.internal` is not `internal` itself, nor `notinternal`.
        assert!(r.check(&json!({"url": "https://internal/"})).is_ok());
        assert!(r.check(&json!({"url": "https://notinternal/"})).is_ok());
        // An absent argument passes.
        assert!(r.check(&json!({"other": 1})).is_ok());
        // Something that is not a URL cannot be checked: refused.
        let err = r.check(&json!({"url": "db.internal/x"})).unwrap_err();
        assert!(err.contains("not an absolute URL"), "{err}");
    }

    #[test]
    fn allowed_hosts_paths_and_ip_literals() {
        let r = rule(|r| {
            r.allow_hosts = vec!["*.example.com".into(), "::1".into()];
            r.deny_paths = vec!["/admin/*".into()];
        });
        assert!(
            r.check(&json!({"url": "https://api.example.com/v1"}))
                .is_ok()
        );
        assert!(r.check(&json!({"url": "http://[::1]:8080/v1"})).is_ok());
        let err = r.check(&json!({"url": "http://127.0.0.1/"})).unwrap_err();
        assert!(err.contains("host `127.0.0.1` is not allowed"), "{err}");
        let err = r
            .check(&json!({"url": "https://api.example.com/admin/users"}))
            .unwrap_err();
        assert!(
            err.contains("path `/admin/users` on host `api.example.com` is refused"),
            "{err}"
        );
    }

    #[test]
    fn arrays_are_checked_element_by_element_and_pointers_reach_nested_values() {
        let r = rule(|r| {
            r.argument = "/request/urls".into();
            r.deny_hosts = vec!["evil.com".into()];
        });
        let err = r
            .check(&json!({"request": {"urls": ["https://ok.com", "https://evil.com/a"]}}))
            .unwrap_err();
        assert!(err.contains("argument `/request/urls/1`"), "{err}");
        assert!(
            r.check(&json!({"request": {"urls": ["https://ok.com"]}}))
                .is_ok()
        );
    }

    #[test]
    fn values_as_text() {
        let r = rule(|r| {
            r.argument = "owner".into();
            r.allow_values = vec!["my-org".into(), "my-*".into()];
            r.deny_values = vec!["my-secret".into()];
        });
        assert!(r.check(&json!({"owner": "my-org"})).is_ok());
        assert!(r.check(&json!({"owner": "my-team"})).is_ok());
        let err = r.check(&json!({"owner": "my-secret"})).unwrap_err();
        assert!(err.contains("value `my-secret` is refused"), "{err}");
        let err = r.check(&json!({"owner": "other"})).unwrap_err();
        assert!(
            err.contains("is not allowed (rule 1 of policy.arguments: allow_values my-org, my-*)"),
            "{err}"
        );
        let n = rule(|r| {
            r.argument = "n".into();
            r.deny_values = vec!["4?".into()];
        });
        assert!(n.check(&json!({"n": 42})).is_err());
        assert!(n.check(&json!({"n": 5})).is_ok());
    }

    #[test]
    fn rules_apply_to_their_tools() {
        let r = ArgumentRule {
            tools: vec!["github.*".into()],
            argument: "owner".into(),
            ..ArgumentRule::default()
        };
        assert!(applies(&r, "github.list"));
        assert!(!applies(&r, "fetch"));
        let all = ArgumentRule::default();
        assert!(applies(&all, "fetch"));
    }
}

/// `path` percent-decoded (invalid UTF-8 kept as `%XX`) with runs of `/` collapsed to one.
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    let text = String::from_utf8(out).unwrap_or_else(|_| path.to_string());
    let mut collapsed = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '/' && collapsed.ends_with('/') {
            continue;
        }
        collapsed.push(c);
    }
    collapsed
}

#[cfg(test)]
mod path_tests {
    #[test]
    fn paths_are_matched_decoded_and_collapsed() {
        assert_eq!(super::percent_decoded("/%61dmin/x"), "/admin/x");
        assert_eq!(super::percent_decoded("//admin//x"), "/admin/x");
        assert_eq!(super::percent_decoded("/a%2"), "/a%2");
        assert_eq!(super::percent_decoded("/caf%C3%A9"), "/café");
    }
}
