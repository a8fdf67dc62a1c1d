//! Policy as code: the `rego` / `cel` entries of `policy.rules`, compiled once when the toolset
//! is built ([`CodeRules::compile`]), and the input they are asked about.
//!
//! How they combine with the built-in rules: every `policy.rules` entry that matches a tool
//! must allow the call, whatever its kind (any refusal wins; no rule can allow what another
//! refuses). A code rule that does not read `arguments` is checked by the authorize layer (and
//! hides the tool from listings and search, as the built-in access rules do): its refusal is
//! `permission_denied`. One that reads `arguments` is checked with the argument rules, after
//! the arguments are validated: its refusal is `policy_denied`, and listings show the tool. A
//! rule that cannot decide (its time limit ran out, a runtime error) refuses.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_model::config::{AccessRule, PolicyConfig};
use toolgate_model::policy_code::{self, CompiledCode, Decision};

use crate::{Identity, ToolDescriptor};

/// One compiled code rule and where it comes from.
#[derive(Debug)]
pub(crate) struct CodeRule {
    /// 1-based index in `policy.rules`.
    pub index: usize,
    /// The compiled policy.
    pub code: CompiledCode,
}

impl CodeRule {
    /// `rule N of policy.rules (Rego)`.
    pub(crate) fn origin(&self) -> String {
        format!(
            "rule {} of policy.rules ({})",
            self.index,
            self.code.language().name()
        )
    }

    /// `Ok` when the rule allows the call `input` describes; else the message for the caller.
    pub(crate) fn check(&self, tool: &str, input: &Value) -> Result<(), String> {
        match self.code.decide(input) {
            Ok(Decision::Allow) => Ok(()),
            Ok(Decision::Deny(reason)) => Err(match reason {
                Some(reason) => format!("tool `{tool}`: {reason} ({})", self.origin()),
                None => format!("tool `{tool}` is refused by {}", self.origin()),
            }),
            Err(why) => {
                tracing::warn!(tool, rule = self.index, "policy could not decide: {why}");
                Err(format!(
                    "tool `{tool}` is refused: {} could not decide ({why})",
                    self.origin()
                ))
            }
        }
    }
}

/// The code rules of a toolset, by position in `policy.rules` (`None` for a built-in rule).
#[derive(Debug, Default)]
pub(crate) struct CodeRules(Vec<Option<Arc<CodeRule>>>);

impl CodeRules {
    /// Compiles every `rego` / `cel` entry of `config.rules` (files relative to `base`).
    ///
    /// # Errors
    /// The first rule that does not compile (or cannot be read), by its 1-based index.
    pub(crate) fn compile(config: &PolicyConfig, base: &Path) -> Result<Self, String> {
        let mut rules = Vec::with_capacity(config.rules.len());
        for (i, rule) in config.rules.iter().enumerate() {
            let Some(key) = rule.code() else {
                rules.push(None);
                continue;
            };
            let at = format!("rule {} of policy.rules (`{}`)", i + 1, key.key);
            let text = policy_code::read_text(&key, base).map_err(|e| format!("{at}: {e}"))?;
            let name = if key.is_file() {
                key.value.to_string()
            } else {
                format!("policy.rules[{i}].{}", key.key)
            };
            let code = CompiledCode::compile(
                key.language,
                &text,
                &name,
                rule.reason.clone(),
                rule.time_limit(),
            )
            .map_err(|e| format!("{at}: {e}"))?;
            rules.push(Some(Arc::new(CodeRule { index: i + 1, code })));
        }
        Ok(Self(rules))
    }

    /// The code rule at `index` (0-based) of `policy.rules`, if it is one.
    pub(crate) fn get(&self, index: usize) -> Option<&Arc<CodeRule>> {
        self.0.get(index).and_then(Option::as_ref)
    }

    /// The code rules whose selectors match `tool` (per `applies`), that need the arguments
    /// (`arguments: true`) or not.
    pub(crate) fn matching(
        &self,
        config: &PolicyConfig,
        tool: &ToolDescriptor,
        applies: impl Fn(&AccessRule, &ToolDescriptor) -> bool,
        arguments: bool,
    ) -> Vec<Arc<CodeRule>> {
        config
            .rules
            .iter()
            .enumerate()
            .filter_map(|(i, rule)| Some((self.get(i)?, rule)))
            .filter(|(code, rule)| code.code.needs_arguments() == arguments && applies(rule, tool))
            .map(|(code, _)| Arc::clone(code))
            .collect()
    }
}

/// The `tool` part of a rule's input.
pub(crate) fn tool_input(tool: &ToolDescriptor) -> Value {
    json!({
        "name": tool.name,
        "source": tool.source,
        "category": tool.category,
        "tags": tool.tags,
        "annotations": serde_json::to_value(&tool.annotations).unwrap_or(Value::Null),
    })
}

/// A rule's input: `{caller: {id, roles, claims}, tool, arguments}` (`arguments` left out when
/// `None`: a listing).
pub(crate) fn input(identity: &Identity, tool: &Value, arguments: Option<&Value>) -> Value {
    let mut input = json!({
        "caller": {
            "id": identity.caller,
            "roles": identity.roles,
            "claims": identity.claims.as_deref().cloned().unwrap_or_else(|| json!({})),
        },
        "tool": tool,
    });
    if let Some(arguments) = arguments {
        input["arguments"] = arguments.clone();
    }
    input
}

#[cfg(all(test, feature = "rego", feature = "cel"))]
#[path = "code_tests.rs"]
mod tests;
