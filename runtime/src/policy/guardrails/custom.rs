//! Custom guardrails in library use: the [`Guardrail`] trait and [`CustomGuardrail`], its
//! settings on the [`ToolsetBuilder`](crate::ToolsetBuilder).

use std::sync::Arc;

use serde_json::Value;

use crate::{BoxFuture, ToolContext, ToolOutput};

/// What a guardrail decides about arguments (`T` = [`Value`]) or a result (`T` =
/// [`ToolOutput`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<T> {
    /// Go on unchanged.
    Allow,
    /// Refuse: the call ends in `policy_denied` with this reason (shown to the caller: do not
    /// put the offending value in it).
    Deny(String),
    /// Go on with this instead (the arguments the tool gets, or the result the caller gets).
    Replace(T),
}

/// The call a guardrail is asked about.
#[derive(Debug, Clone, Copy)]
pub struct GuardrailCall<'a> {
    /// The tool's name inside the toolset (`read_file`, `github.create_issue`).
    pub tool: &'a str,
    /// The id of the tool's source (`local`, `github`).
    pub source: &'a str,
    /// The call's context: its caller, roles, agent, task and deadline.
    pub context: &'a ToolContext,
}

/// A guardrail of your own, run on a tool's arguments before the call (before validation:
/// the arguments as the caller sent them) and on its result after it (once, after retries;
/// a cached result was checked before it was cached). Both methods default to
/// [`Verdict::Allow`]; each may be asynchronous (it returns a boxed future) and is bounded by
/// the call's deadline.
///
/// ```
/// use toolgate_runtime::policy::guardrails::{Guardrail, GuardrailCall, Verdict};
/// use toolgate_runtime::BoxFuture;
/// use serde_json::Value;
///
/// /// Refuses any argument mentioning `prod`.
/// struct NoProd;
///
/// impl Guardrail for NoProd {
///     fn check_arguments<'a>(
///         &'a self,
///         _call: GuardrailCall<'a>,
///         arguments: &'a Value,
///     ) -> BoxFuture<'a, Verdict<Value>> {
///         let verdict = if arguments.to_string().contains("prod") {
///             Verdict::Deny("production is off limits".into())
///         } else {
///             Verdict::Allow
///         };
///         Box::pin(std::future::ready(verdict))
///     }
/// }
/// ```
pub trait Guardrail: Send + Sync + 'static {
    /// Checks (or replaces) the arguments of `call`.
    fn check_arguments<'a>(
        &'a self,
        call: GuardrailCall<'a>,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Verdict<Value>> {
        let _ = (call, arguments);
        Box::pin(std::future::ready(Verdict::Allow))
    }

    /// Checks (or replaces) the result of `call`.
    fn check_result<'a>(
        &'a self,
        call: GuardrailCall<'a>,
        result: &'a ToolOutput,
    ) -> BoxFuture<'a, Verdict<ToolOutput>> {
        let _ = (call, result);
        Box::pin(std::future::ready(Verdict::Allow))
    }
}

/// A [`Guardrail`] with its name and the tools it guards, for
/// [`ToolsetBuilder::guardrail`](crate::ToolsetBuilder::guardrail).
///
/// It guards the tools its [`tools`](Self::tools) globs or [`sources`](Self::sources) ids
/// match (neither given: every tool), after the tool's configured guardrails; a tool whose
/// `guardrails:` list in tools.yaml names it runs it at that place in the list instead.
#[derive(Clone)]
pub struct CustomGuardrail {
    pub(crate) name: String,
    pub(crate) guardrail: Arc<dyn Guardrail>,
    pub(crate) tools: Vec<String>,
    pub(crate) sources: Vec<String>,
}

impl CustomGuardrail {
    /// `guardrail` under `name` (its label in metrics, logs and refusals).
    pub fn new(name: impl Into<String>, guardrail: impl Guardrail) -> Self {
        Self {
            name: name.into(),
            guardrail: Arc::new(guardrail),
            tools: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// Guards the tools these globs match (`github.*`, `read_file`), by either name form.
    #[must_use]
    pub fn tools<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools.extend(globs.into_iter().map(Into::into));
        self
    }

    /// Guards every tool of these sources (`local`, `github`).
    #[must_use]
    pub fn sources<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sources.extend(ids.into_iter().map(Into::into));
        self
    }

    /// Whether the selectors match tool `name` of source `source`.
    pub(crate) fn selects(&self, name: &str, source: &str) -> bool {
        if self.tools.is_empty() && self.sources.is_empty() {
            return true;
        }
        let exported = toolgate_model::names::exported_name(name);
        self.sources.iter().any(|s| s == source)
            || self.tools.iter().any(|g| {
                glob::Pattern::new(g)
                    .map(|p| p.matches(name) || p.matches(&exported))
                    .unwrap_or(g == name)
            })
    }
}

impl std::fmt::Debug for CustomGuardrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomGuardrail")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}
