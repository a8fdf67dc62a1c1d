//! [`GuardrailSet`]: guardrails named for one way into the toolset (a gateway's virtual
//! server), run on every call made through it besides the tool's own.

use std::sync::Arc;

use toolgate_model::config::GuardDirection;

use super::Compiled;
use super::layer::Guards;
use crate::policy::Pipeline;
use crate::{ErrorKind, ToolDescriptor, ToolError};

/// Guardrails of a toolset (`policy.guardrails` and those registered with
/// [`ToolsetBuilder::guardrail`](crate::ToolsetBuilder::guardrail)) picked by name, for the
/// calls made through one way in: a gateway's virtual server names them in
/// `gateway.servers[].guardrails`. Made by [`Toolset::guardrail_set`](crate::Toolset::guardrail_set),
/// applied by [`Toolset::call_guarded`](crate::Toolset::call_guarded).
///
/// They run **besides** the tool's own guardrails, never instead of them, around them: on the
/// way in before the tool's (on the arguments the caller sent, before an override's fixed
/// values are filled in), on the way out after them (on the result the tool's guardrails
/// left). A guardrail the tool already runs is not run a second time.
///
/// The set holds names: each call uses the definitions of the toolset's current policy, so a
/// [reload](crate::Toolset::reload_policy) that changes a guardrail changes it here too, and
/// one that drops a guardrail the set names makes every call through the set fail closed
/// (`policy_denied`) until it is back. Cheap to clone.
#[derive(Clone, Default)]
pub struct GuardrailSet {
    names: Arc<[Arc<str>]>,
}

impl GuardrailSet {
    pub(crate) fn new(names: Vec<Arc<str>>) -> Self {
        Self {
            names: names.into(),
        }
    }

    /// Whether the set holds no guardrail (a call through it is a plain call).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names of its guardrails, in the order they run.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// The guards of the set for a call of `tool` under `pipeline`, (arguments, result),
    /// leaving out the guardrails the tool's own stack runs already; `None` for a direction
    /// nothing acts on.
    ///
    /// # Errors
    /// `policy_denied` when the pipeline has no guardrail of a name the set holds (a reload
    /// dropped it): the call is refused rather than made unchecked.
    pub(crate) fn for_tool(
        &self,
        pipeline: &Pipeline,
        tool: &ToolDescriptor,
    ) -> Result<(Option<Guards>, Option<Guards>), ToolError> {
        let policy = pipeline.config.effective(&tool.name, &tool.source);
        let own = pipeline
            .guardrails
            .of(&tool.name, &tool.source, policy.guardrails.as_deref());
        let mut extra: Vec<Arc<Compiled>> = Vec::with_capacity(self.names.len());
        for name in self.names.iter() {
            let g = pipeline.guardrails.get(name).ok_or_else(|| {
                ToolError::new(
                    ErrorKind::PolicyDenied,
                    format!(
                        "tool `{}`: call refused: guardrail `{name}` is named for this way in but no longer defined (the policy was reloaded without it)",
                        tool.name
                    ),
                )
            })?;
            if !own.iter().any(|o| Arc::ptr_eq(o, g)) {
                extra.push(Arc::clone(g));
            }
        }
        let make = |direction| Guards::new(&tool.name, &tool.source, direction, &extra);
        Ok((
            make(GuardDirection::Arguments),
            make(GuardDirection::Result),
        ))
    }
}

/// The result guards a stored (cut) result of `tool` is read under: the tool's own result
/// guardrails, then those of `set` (a virtual server's) it does not run already.
///
/// # Errors
/// As [`GuardrailSet::for_tool`].
pub(crate) fn stored_result_guards(
    pipeline: &Pipeline,
    tool: &ToolDescriptor,
    set: Option<&GuardrailSet>,
) -> Result<Vec<Guards>, ToolError> {
    let policy = pipeline.config.effective(&tool.name, &tool.source);
    let own = pipeline
        .guardrails
        .of(&tool.name, &tool.source, policy.guardrails.as_deref());
    let mut guards: Vec<Guards> =
        Guards::new(&tool.name, &tool.source, GuardDirection::Result, &own)
            .into_iter()
            .collect();
    if let Some(set) = set {
        guards.extend(set.for_tool(pipeline, tool)?.1);
    }
    Ok(guards)
}

impl std::fmt::Debug for GuardrailSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
