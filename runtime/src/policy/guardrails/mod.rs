//! Guardrails (`policy.guardrails`): checks on what goes into a tool and what comes out of it,
//! as two layers of the pipeline.
//!
//! # Where they sit
//!
//! ```text
//! … → authorize → guardrails(arguments) → validate → … → cache → guardrails(result) → timeout → retry → backend
//! ```
//!
//! * on the way in, right after authorize: a refused caller costs no webhook call, and the
//!   validator, the argument rules, the cache key and the tool all see the arguments as the
//!   guardrails left them (masked or replaced by a webhook);
//! * on the way out, inside the cache and outside the timeout and retries: the result is
//!   checked once, after the last attempt, and the cache keeps only checked results, so a
//!   cache hit is masked too (and costs no second check).
//!
//! # What each guardrail does
//!
//! A tool's guardrails are those its effective policy lists (`guardrails: [..]` per tool, per
//! source, defaults), in order, then the [`CustomGuardrail`]s whose selectors match it. In
//! each: on the arguments, its deny rules (a match refuses the call with `policy_denied`
//! naming the guardrail, the rule and the argument's pointer, never the value), its mask (with
//! `arguments: true`), its webhook, its custom check; on the result, its mask (text parts,
//! embedded text resources, `structuredContent`, `_meta`: every string at any depth; not
//! base64 data, not numbers), its webhook, its custom check. An error result (`Err`) passes
//! unchanged.
//!
//! # Metrics and logs
//!
//! | name | labels | what |
//! | --- | --- | --- |
//! | `toolgate_guardrail_masked_total` | `tool`, `guardrail`, `kind` (detector or pattern), `direction` | values masked |
//! | `toolgate_guardrail_denied_total` | `tool`, `guardrail`, `kind` (deny rule name, `webhook`, `webhook_unavailable`, `custom`), `direction` | calls refused, results withheld |
//! | `toolgate_guardrail_modified_total` | `tool`, `guardrail`, `kind` (`webhook`, `custom`), `direction` | arguments or results replaced |
//! | `toolgate_guardrail_webhook_failures_total` | `tool`, `guardrail`, `kind` (`timeout`, `error`), `direction` | webhook checks without a usable answer |
//!
//! Each is logged too (INFO; a webhook failure at WARN), with the same labels and never the
//! value.

mod custom;
pub(crate) mod detect;
mod layer;
mod set;
#[cfg(feature = "net")]
mod webhook;

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::Value;
use toolgate_model::config::{GuardDirection, GuardrailConfig, PolicyConfig};

pub use custom::{CustomGuardrail, Guardrail, GuardrailCall, Verdict};
pub(crate) use layer::layers;
pub use set::GuardrailSet;
pub(crate) use set::stored_result_guards;

use crate::{ErrorKind, ToolError};

/// `toolgate_guardrail_masked_total{tool,guardrail,kind,direction}`: values masked.
pub const GUARDRAIL_MASKED_TOTAL: &str = "toolgate_guardrail_masked_total";
/// `toolgate_guardrail_denied_total{tool,guardrail,kind,direction}`: calls refused and results
/// withheld.
pub const GUARDRAIL_DENIED_TOTAL: &str = "toolgate_guardrail_denied_total";
/// `toolgate_guardrail_modified_total{tool,guardrail,kind,direction}`: arguments or results
/// replaced by a webhook or a custom guardrail.
pub const GUARDRAIL_MODIFIED_TOTAL: &str = "toolgate_guardrail_modified_total";
/// `toolgate_guardrail_webhook_failures_total{tool,guardrail,kind,direction}`: webhook checks
/// that got no usable answer (`kind` `timeout` or `error`).
pub const GUARDRAIL_WEBHOOK_FAILURES_TOTAL: &str = "toolgate_guardrail_webhook_failures_total";

/// One deny rule, compiled.
struct DenyRule {
    name: String,
    regex: Regex,
    /// The argument's JSON pointer; `None`: the whole arguments.
    pointer: Option<String>,
}

impl DenyRule {
    /// The pointer of the first string under the rule's argument that matches, if one does.
    fn find(&self, args: &Value) -> Option<String> {
        let (start, at) = match &self.pointer {
            Some(p) => (args.pointer(p)?, p.clone()),
            None => (args, String::new()),
        };
        self.find_in(start, at)
    }

    fn find_in(&self, value: &Value, at: String) -> Option<String> {
        match value {
            Value::String(s) => self.regex.is_match(s).then_some(at),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| self.find_in(v, format!("{at}/{i}"))),
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                self.find_in(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                )
            }),
            _ => None,
        }
    }
}

/// A top-level argument name as a JSON pointer (`query` → `/query`); a pointer as it is.
fn pointer_of(argument: &str) -> String {
    if argument.starts_with('/') {
        argument.to_string()
    } else {
        format!("/{}", argument.replace('~', "~0").replace('/', "~1"))
    }
}

/// One guardrail, compiled: a configured one (deny rules, mask, webhook) or a custom one.
pub(crate) struct Compiled {
    pub(crate) name: Arc<str>,
    deny: Vec<DenyRule>,
    mask: Option<detect::Masker>,
    mask_arguments: bool,
    mask_results: bool,
    #[cfg(feature = "net")]
    webhook: Option<webhook::Webhook>,
    custom: Option<Arc<dyn Guardrail>>,
}

impl Compiled {
    /// Compiles guardrail `name` of tools.yaml.
    fn configured(name: &str, config: &GuardrailConfig) -> Result<Self, String> {
        let deny = config
            .deny
            .iter()
            .map(|r| {
                Ok(DenyRule {
                    name: r.name.clone(),
                    regex: Regex::new(&r.pattern).map_err(|e| {
                        format!(
                            "deny rule `{}`: not a valid regular expression: {e}",
                            r.name
                        )
                    })?,
                    pointer: r.argument.as_deref().map(pointer_of),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let mask = config.mask.as_ref().map(detect::Masker::new).transpose()?;
        #[cfg(feature = "net")]
        let webhook = config
            .webhook
            .as_ref()
            .map(webhook::Webhook::new)
            .transpose()?;
        #[cfg(not(feature = "net"))]
        if config.webhook.is_some() {
            return Err("a webhook guardrail needs toolgate-runtime's `net` feature".into());
        }
        Ok(Self {
            name: Arc::from(name),
            deny,
            mask,
            mask_arguments: config.mask.as_ref().is_some_and(|m| m.arguments),
            mask_results: config.mask.as_ref().is_some_and(|m| m.results),
            #[cfg(feature = "net")]
            webhook,
            custom: None,
        })
    }

    fn custom(c: &CustomGuardrail) -> Self {
        Self {
            name: Arc::from(c.name.as_str()),
            deny: Vec::new(),
            mask: None,
            mask_arguments: false,
            mask_results: false,
            #[cfg(feature = "net")]
            webhook: None,
            custom: Some(Arc::clone(&c.guardrail)),
        }
    }

    /// Whether its check of `direction` has to wait (a webhook or a custom guardrail).
    fn waits(&self, direction: GuardDirection) -> bool {
        #[cfg(feature = "net")]
        if self.webhook.as_ref().is_some_and(|w| w.asks(direction)) {
            return true;
        }
        let _ = direction;
        self.custom.is_some()
    }

    /// Whether it does anything on `direction`.
    fn acts(&self, direction: GuardDirection) -> bool {
        self.waits(direction)
            || match direction {
                GuardDirection::Arguments => !self.deny.is_empty() || self.mask_arguments,
                GuardDirection::Result => self.mask_results,
            }
    }
}

/// The guardrails of one toolset: those of tools.yaml by name, and the custom ones.
#[derive(Default)]
pub(crate) struct Registry {
    named: HashMap<String, Arc<Compiled>>,
    /// Custom guardrails with their selectors, in registration order.
    custom: Vec<(CustomGuardrail, Arc<Compiled>)>,
}

impl Registry {
    /// Compiles `policy.guardrails` and `custom`; checks that every `guardrails:` list of
    /// `policy` names one of them.
    ///
    /// # Errors
    /// A message naming the guardrail that does not compile or the unknown name.
    /// The registry of a reloaded `policy`: its configured guardrails compiled anew, the
    /// custom ones of this registry kept.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub(crate) fn rebuild(&self, policy: &PolicyConfig) -> Result<Self, String> {
        Self::build(policy, self.custom.iter().map(|(c, _)| c.clone()).collect())
    }

    pub(crate) fn build(
        policy: &PolicyConfig,
        custom: Vec<CustomGuardrail>,
    ) -> Result<Self, String> {
        let mut named = HashMap::new();
        for (name, config) in &policy.guardrails {
            let compiled = Compiled::configured(name, config)
                .map_err(|e| format!("guardrail `{name}`: {e}"))?;
            named.insert(name.clone(), Arc::new(compiled));
        }
        let mut customs = Vec::new();
        for c in custom {
            let compiled = Arc::new(Compiled::custom(&c));
            if named
                .insert(c.name.clone(), Arc::clone(&compiled))
                .is_some()
            {
                return Err(format!(
                    "guardrail `{}` is defined twice (in policy.guardrails and in code, or twice in code)",
                    c.name
                ));
            }
            customs.push((c, compiled));
        }
        let levels = std::iter::once(("policy.defaults".to_string(), &policy.defaults))
            .chain(
                policy
                    .tools
                    .iter()
                    .map(|(k, v)| (format!("policy.tools.{k}"), v)),
            )
            .chain(
                policy
                    .sources
                    .iter()
                    .map(|(k, v)| (format!("policy.sources.{k}"), v)),
            );
        for (at, p) in levels {
            if let Some(unknown) = p
                .guardrails
                .iter()
                .flatten()
                .find(|n| !named.contains_key(*n))
            {
                return Err(format!(
                    "{at}.guardrails names `{unknown}`, which is neither in policy.guardrails nor registered with ToolsetBuilder::guardrail"
                ));
            }
        }
        Ok(Self {
            named,
            custom: customs,
        })
    }

    /// Whether a guardrail is called `name` (in tools.yaml or registered in code).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.named.contains_key(name)
    }

    /// The guardrails called `names`, in that order, as one set (a name given twice runs
    /// once).
    ///
    /// # Errors
    /// The first name no guardrail has.
    pub(crate) fn set<S: AsRef<str>>(&self, names: &[S]) -> Result<GuardrailSet, String> {
        let mut list: Vec<Arc<str>> = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            if !self.named.contains_key(name) {
                return Err(name.to_string());
            }
            if !list.iter().any(|n| &**n == name) {
                list.push(Arc::from(name));
            }
        }
        Ok(GuardrailSet::new(list))
    }

    /// Guardrail `name`, if there is one.
    /// Whether no guardrail is configured or registered at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.named.is_empty() && self.custom.is_empty()
    }

    fn get(&self, name: &str) -> Option<&Arc<Compiled>> {
        self.named.get(name)
    }

    /// The guardrails of tool `name` of source `source` whose effective list is `listed`, in
    /// order.
    fn of(&self, name: &str, source: &str, listed: Option<&[String]>) -> Vec<Arc<Compiled>> {
        let listed = listed.unwrap_or_default();
        let mut out: Vec<Arc<Compiled>> = listed
            .iter()
            .filter_map(|n| self.named.get(n).cloned())
            .collect();
        for (c, compiled) in &self.custom {
            if !listed.contains(&c.name) && c.selects(name, source) {
                out.push(Arc::clone(compiled));
            }
        }
        out
    }
}

/// A refusal by guardrail `guardrail` of tool `tool`.
fn refused(
    tool: &str,
    guardrail: &str,
    direction: GuardDirection,
    why: &str,
    details: Value,
) -> ToolError {
    let what = match direction {
        GuardDirection::Arguments => "call refused",
        GuardDirection::Result => "result withheld",
    };
    let why = toolgate_model::text::cut(why, 300);
    ToolError::new(
        ErrorKind::PolicyDenied,
        format!("tool `{tool}`: {what} by guardrail `{guardrail}`: {why}"),
    )
    .with_details(details)
}

#[cfg(test)]
mod tests;
