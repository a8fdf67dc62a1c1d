//! [`GuardrailSet`]: guardrails named for one way into the toolset (a gateway's virtual
//! server), run on every call made through it besides the tool's own.

use std::sync::Arc;

use toolgate_model::config::GuardDirection;

use super::Compiled;
use super::layer::Guards;
use crate::ToolDescriptor;
use crate::policy::Pipeline;

/// Guardrails of a toolset (`policy.guardrails` and those registered with
/// [`ToolsetBuilder::guardrail`](crate::ToolsetBuilder::guardrail)) picked by name, for the
/// calls made through one way in: a gateway's virtual server names them in
/// `gateway.servers[].guardrails`. Made by [`Toolset::guardrail_set`](crate::Toolset::guardrail_set),
/// applied by [`Toolset::call_guarded`](crate::Toolset::call_guarded).
///
/// They run **besides** the tool's own guardrails, never instead of them, around them: on the
/// way in before the tool's (on the arguments the caller sent, before an override's fixed
/// values are filled in), on the way out after them (on the result the tool's guardrails
/// left). A guardrail the tool already runs is not run a second time. Cheap to clone.
#[derive(Clone, Default)]
pub struct GuardrailSet {
    list: Arc<[Arc<Compiled>]>,
}

impl GuardrailSet {
    pub(crate) fn new(list: Vec<Arc<Compiled>>) -> Self {
        Self { list: list.into() }
    }

    /// Whether the set holds no guardrail (a call through it is a plain call).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The names of its guardrails, in the order they run.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|g| &*g.name)
    }

    /// The guards of the set for a call of `tool`, (arguments, result), leaving out the
    /// guardrails the tool's own stack runs already; `None` for a direction nothing acts on.
    pub(crate) fn for_tool(
        &self,
        pipeline: &Pipeline,
        tool: &ToolDescriptor,
    ) -> (Option<Guards>, Option<Guards>) {
        let policy = pipeline.config.effective(&tool.name, &tool.source);
        let own = pipeline
            .guardrails
            .of(&tool.name, &tool.source, policy.guardrails.as_deref());
        let extra: Vec<Arc<Compiled>> = self
            .list
            .iter()
            .filter(|g| !own.iter().any(|o| Arc::ptr_eq(o, g)))
            .cloned()
            .collect();
        let make = |direction| Guards::new(&tool.name, &tool.source, direction, &extra);
        (
            make(GuardDirection::Arguments),
            make(GuardDirection::Result),
        )
    }
}

impl std::fmt::Debug for GuardrailSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
