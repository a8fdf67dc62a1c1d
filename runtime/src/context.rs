//! [`ToolContext`]: what a tool knows about the call it is serving.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use toolgate_model::config::Secret;

use crate::policy::arguments::FollowedUrlRules;
use crate::{CallScope, ToolError, ToolOutput, Toolset};

/// Who is calling: the caller (a user or API key), the agent acting for it, and its roles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The authenticated caller, if any (a user id, an API key's name).
    pub caller: Option<String>,
    /// The agent making the call on the caller's behalf, if known.
    pub agent: Option<String>,
    /// The caller's roles, used by authorization policies.
    pub roles: Vec<String>,
    /// The task (a conversation, as the caller names it) the call is part of, if known: budgets
    /// are kept per task (`policy.budgets.per_task`).
    pub task: Option<String>,
    /// The claims of the caller's access token (a JSON object), when it came with one: what
    /// `rego` / `cel` policies read as `caller.claims`.
    pub claims: Option<Arc<Value>>,
}

/// One progress report of a long-running tool (MCP `notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far (increases with every report).
    pub progress: f64,
    /// Total work, if known.
    pub total: Option<f64>,
    /// A short human-readable status.
    pub message: Option<String>,
}

/// Receives a tool's progress reports; cheap to clone. The default reporter discards them.
#[derive(Clone, Default)]
pub struct ProgressReporter(Option<Arc<dyn Fn(Progress) + Send + Sync>>);

impl ProgressReporter {
    /// A reporter that calls `f` for every report.
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    /// Reports progress (a no-op when nobody listens); a configured secret the message quotes
    /// is masked ([`crate::redact`]).
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(f) = &self.0 {
            f(Progress {
                progress,
                total,
                message: message.map(|m| crate::redact::text(m).into_owned()),
            });
        }
    }

    /// Whether somebody listens.
    pub fn is_active(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_active() {
            "ProgressReporter(active)"
        } else {
            "ProgressReporter(none)"
        })
    }
}

/// The per-call context a `#[tool]` function may take as `&ToolContext` (it never appears in the
/// input schema): the caller's [`Identity`], the call's deadline, a cancellation token, a
/// progress reporter, and a handle to the toolset for calling other tools under the same identity.
///
/// Cheap to clone. Build one with [`ToolContext::builder`]; [`Toolset::call`] makes a default one.
///
/// A default context makes its cancellation token on first use (so that a call nobody can cancel
/// allocates none); a clone shares the token with the original, as it always did.
pub struct ToolContext {
    identity: Arc<Identity>,
    deadline: Option<Instant>,
    cancel: OnceLock<CancellationToken>,
    progress: ProgressReporter,
    toolset: Option<Toolset>,
    /// The W3C `traceparent` the call carries (see [`crate::trace_context`]).
    traceparent: Option<Arc<str>>,
    /// The W3C `tracestate` that came with the `traceparent`, forwarded with it.
    tracestate: Option<Arc<str>>,
    /// The `traceparent` was made up for the call (the caller sent none): it starts a trace
    /// rather than continuing one, so it is no span's parent.
    trace_generated: bool,
    /// The `policy.arguments` URL rules that checked this call's arguments.
    followed_url_rules: Option<FollowedUrlRules>,
    /// Why the caller cancelled, when it says.
    cancel_reason: Option<CancelReason>,
    /// Where the layers report what the call went through (retries, cache hit, cost), when
    /// the caller wants to read it afterwards (the gateway's call log).
    report: Option<Arc<crate::policy::CallReport>>,
    /// The access token the caller came with (the one the gateway's resource server
    /// accepted), for upstreams configured for token exchange (RFC 8693); never sent upstream
    /// as is.
    access_token: Option<Secret>,
    /// The part of the toolset the call was made through (a virtual server): nested calls
    /// stay inside it and pass its guardrails.
    scope: Option<Arc<dyn CallScope>>,
}

/// Why a caller cancelled a call, when it said so (the `reason` of MCP's
/// `notifications/cancelled`, MCP 2025-06-18 "Cancellation"). A front that learns a reason
/// [`set`](Self::set)s it *before* it cancels the call's token, so that a backend passing the
/// cancellation on (an MCP server behind the gateway gets its own `notifications/cancelled`)
/// finds it there. Cheap to clone; clones share the one reason.
#[derive(Clone, Default, Debug)]
pub struct CancelReason(Arc<OnceLock<String>>);

impl CancelReason {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `reason`; the first one recorded stays (`false` when there was one already).
    pub fn set(&self, reason: impl Into<String>) -> bool {
        self.0.set(reason.into()).is_ok()
    }

    /// The reason, once recorded.
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

impl Clone for ToolContext {
    fn clone(&self) -> Self {
        Self {
            identity: Arc::clone(&self.identity),
            deadline: self.deadline,
            // Made now if it was not yet, so that both copies share one token.
            cancel: OnceLock::from(self.cancellation().clone()),
            progress: self.progress.clone(),
            toolset: self.toolset.clone(),
            traceparent: self.traceparent.clone(),
            tracestate: self.tracestate.clone(),
            trace_generated: self.trace_generated,
            followed_url_rules: self.followed_url_rules.clone(),
            cancel_reason: self.cancel_reason.clone(),
            report: self.report.clone(),
            access_token: self.access_token.clone(),
            scope: self.scope.clone(),
        }
    }
}

/// The identity of anonymous calls, shared so that a default context allocates nothing for it.
fn anonymous() -> Arc<Identity> {
    static ANONYMOUS: std::sync::OnceLock<Arc<Identity>> = std::sync::OnceLock::new();
    Arc::clone(ANONYMOUS.get_or_init(|| Arc::new(Identity::default())))
}

impl Default for ToolContext {
    /// An anonymous context: no identity, no deadline, a fresh cancellation token.
    fn default() -> Self {
        Self {
            identity: anonymous(),
            deadline: None,
            cancel: OnceLock::new(),
            progress: ProgressReporter::default(),
            toolset: None,
            traceparent: None,
            tracestate: None,
            trace_generated: false,
            followed_url_rules: None,
            cancel_reason: None,
            report: None,
            access_token: None,
            scope: None,
        }
    }
}

impl ToolContext {
    /// A builder for a context.
    pub fn builder() -> ToolContextBuilder {
        ToolContextBuilder::default()
    }

    /// The caller's access token, for a token exchange (see
    /// [`ToolContextBuilder::access_token`]).
    pub(crate) fn access_token(&self) -> Option<&Secret> {
        self.access_token.as_ref()
    }

    /// Who is calling.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The identity, shared (no copy of its strings).
    pub(crate) fn identity_arc(&self) -> Arc<Identity> {
        Arc::clone(&self.identity)
    }

    /// The authenticated caller, if any.
    pub fn caller(&self) -> Option<&str> {
        self.identity.caller.as_deref()
    }

    /// The agent acting for the caller, if known.
    pub fn agent(&self) -> Option<&str> {
        self.identity.agent.as_deref()
    }

    /// The caller's roles.
    pub fn roles(&self) -> &[String] {
        &self.identity.roles
    }

    /// The task the call is part of, if known.
    pub fn task(&self) -> Option<&str> {
        self.identity.task.as_deref()
    }

    /// Whether the caller has `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.identity.roles.iter().any(|r| r == role)
    }

    /// When the call must be finished, if it has a deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left before the deadline (`None` without a deadline, zero once it has passed).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The call's cancellation token: cancelled when the caller gives up or the deadline passes.
    /// Long-running tools should `select!` on [`CancellationToken::cancelled`].
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancel.get_or_init(CancellationToken::new)
    }

    /// Why the caller cancelled the call, if it did and said why (see [`CancelReason`]).
    pub fn cancel_reason(&self) -> Option<&str> {
        self.cancel_reason.as_ref().and_then(CancelReason::get)
    }

    /// Where the layers report what this call went through, when the caller gave one
    /// ([`ToolContextBuilder::report`]).
    pub(crate) fn report_slot(&self) -> Option<&Arc<crate::policy::CallReport>> {
        self.report.as_ref()
    }

    /// The slot the caller's reason lands in, for a backend that reads it later.
    #[cfg(feature = "mcp")]
    pub(crate) fn cancel_reason_slot(&self) -> Option<CancelReason> {
        self.cancel_reason.clone()
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        // A token nobody has asked for yet cannot have been cancelled.
        self.cancel
            .get()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Where to send progress reports.
    pub fn progress(&self) -> &ProgressReporter {
        &self.progress
    }

    /// The W3C `traceparent` of the call, if it carries one: forwarded to MCP servers
    /// (`_meta.traceparent`), OpenAPI operations and A2A agents (the `traceparent` header).
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The W3C `tracestate` that came with the call's `traceparent`, if any: forwarded beside
    /// it (`_meta.tracestate` to MCP servers, the `tracestate` header otherwise).
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// Whether the call's `traceparent` continues the caller's trace (it came with the call)
    /// rather than one made up for it ([`ToolContextBuilder::new_trace`]).
    pub fn continues_trace(&self) -> bool {
        self.traceparent.is_some() && !self.trace_generated
    }

    /// Replaces the trace context passed on to the backend: the telemetry layer's own span
    /// becomes the parent of what the backend does.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) fn set_trace_context(&mut self, traceparent: String, tracestate: Option<String>) {
        self.traceparent = Some(Arc::from(traceparent));
        self.tracestate = tracestate.map(Arc::from);
        self.trace_generated = false;
    }

    /// The scope the call was made in (a gateway's virtual server), if any: the calls made on
    /// its behalf ([`call_tool`](Self::call_tool)) reach only the tools it admits.
    pub fn scope(&self) -> Option<&Arc<dyn CallScope>> {
        self.scope.as_ref()
    }

    /// The toolset serving this call, if the call came through one.
    pub fn toolset(&self) -> Option<&Toolset> {
        self.toolset.as_ref()
    }

    /// Calls another tool of the same toolset, under the same identity and deadline, with a child
    /// cancellation token (cancelling this call cancels the nested one).
    ///
    /// With a [`scope`](Self::scope) (the call came through a gateway's virtual server), the
    /// nested call inherits it: a tool the scope does not admit is refused, and the scope's
    /// guardrails run on the call besides the tool's own
    /// ([`Toolset::call_guarded`]).
    ///
    /// # Errors
    /// The nested call's [`ToolError`]; `internal` when the context has no toolset; the
    /// scope's [`refusal`](CallScope::refusal) (`not_found` naming it) for a tool outside it.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let (toolset, child) = self.nested(name)?;
        crate::scope::call_in(self.scope.as_deref(), toolset, name, args, child).await
    }

    /// A call the configuration makes for this one (a tool's `fallback`), not one the tool
    /// chose: as [`call_tool`](Self::call_tool), but the scope neither refuses nor guards this
    /// hop (the operator named the tool; its result is the scoped call's own, which the
    /// scope's guardrails check). The nested call still carries the scope on.
    pub(crate) async fn call_configured(
        &self,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let (toolset, child) = self.nested(name)?;
        toolset.call_with(name, args, child).await
    }

    /// The toolset and the child context of a nested call of `name`.
    fn nested(&self, name: &str) -> Result<(&Toolset, Self), ToolError> {
        let Some(toolset) = &self.toolset else {
            return Err(ToolError::internal(format!(
                "cannot call tool `{name}`: this context is not attached to a toolset"
            )));
        };
        let child = Self {
            identity: Arc::clone(&self.identity),
            deadline: self.deadline,
            cancel: OnceLock::from(self.cancellation().child_token()),
            progress: ProgressReporter::default(),
            toolset: None,
            traceparent: self.traceparent.clone(),
            tracestate: self.tracestate.clone(),
            trace_generated: self.trace_generated,
            followed_url_rules: None,
            cancel_reason: self.cancel_reason.clone(),
            report: None,
            access_token: self.access_token.clone(),
            scope: self.scope.clone(),
        };
        Ok((toolset, child))
    }

    /// Checks a URL the tool is about to follow on its own (a redirect's target, a link found
    /// in a page) against the URL rules of `policy.arguments` (`deny_hosts`, `allow_hosts`,
    /// `deny_paths`) that checked this call's arguments. Those rules saw only the URLs the
    /// caller gave; a tool that follows redirects calls this on every hop, so a redirect cannot
    /// lead where the rules would not let the caller go. The built-in `fetch` does.
    ///
    /// Every URL rule whose argument the call had applies to every followed URL (a tool with
    /// two URL arguments under different rules gets both rules on each). `Ok` when no URL rule
    /// checked the call (no rule applies to the tool, or the arguments the rules name were
    /// absent).
    ///
    /// # Errors
    /// `policy_denied` naming the URL, the host or path refused and the rule by its 1-based
    /// index in `policy.arguments`.
    pub fn check_followed_url(&self, url: &url::Url) -> Result<(), ToolError> {
        match &self.followed_url_rules {
            Some(rules) => rules
                .check(url)
                .map_err(|why| ToolError::new(crate::ErrorKind::PolicyDenied, why)),
            None => Ok(()),
        }
    }

    pub(crate) fn set_followed_url_rules(&mut self, rules: FollowedUrlRules) {
        self.followed_url_rules = Some(rules);
    }

    pub(crate) fn attach(&mut self, toolset: &Toolset) {
        if self.toolset.is_none() {
            self.toolset = Some(toolset.clone());
        }
    }

    /// Replaces the token by a child of it, for one call (see `Toolset::call_with`).
    pub(crate) fn isolate_cancellation(&mut self) {
        self.cancel = OnceLock::from(self.cancellation().child_token());
    }

    pub(crate) fn tighten_deadline(&mut self, timeout: Duration) -> Instant {
        let by_timeout = Instant::now() + timeout;
        let deadline = match self.deadline {
            Some(d) if d < by_timeout => d,
            _ => by_timeout,
        };
        self.deadline = Some(deadline);
        deadline
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("identity", &self.identity)
            .field("deadline", &self.deadline)
            .field("cancelled", &self.is_cancelled())
            .field("progress", &self.progress)
            .field("followed_url_rules", &self.followed_url_rules)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`].
#[derive(Default)]
pub struct ToolContextBuilder {
    identity: Identity,
    deadline: Option<Instant>,
    cancel: Option<CancellationToken>,
    progress: ProgressReporter,
    traceparent: Option<Arc<str>>,
    tracestate: Option<Arc<str>>,
    trace_generated: bool,
    cancel_reason: Option<CancelReason>,
    report: Option<Arc<crate::policy::CallReport>>,
    access_token: Option<Secret>,
    scope: Option<Arc<dyn CallScope>>,
}

impl ToolContextBuilder {
    /// The part of the toolset the call is made through (a gateway's virtual server): the
    /// calls made on its behalf ([`ToolContext::call_tool`]) reach only the tools it admits and
    /// pass its guardrails. It does not check the call itself: the caller resolves the name
    /// through the scope first.
    pub fn scope(mut self, scope: Arc<dyn CallScope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The access token the caller authenticated with (a JWT the gateway validated): an
    /// upstream configured with `oauth2: {grant: token_exchange}` exchanges it for a token of
    /// its own (RFC 8693). Tools never see it.
    pub fn access_token(mut self, token: Secret) -> Self {
        self.access_token = Some(token);
        self
    }

    /// The authenticated caller.
    pub fn caller(mut self, caller: impl Into<String>) -> Self {
        self.identity.caller = Some(caller.into());
        self
    }

    /// The agent acting for the caller.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.identity.agent = Some(agent.into());
        self
    }

    /// The task the call is part of (budgets are kept per task).
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.identity.task = Some(task.into());
        self
    }

    /// The whole caller at once (caller, agent, roles, task, claims), replacing what
    /// [`caller`](Self::caller), [`agent`](Self::agent), [`roles`](Self::roles),
    /// [`task`](Self::task) and [`claims`](Self::claims) set before.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = identity;
        self
    }

    /// The claims of the caller's access token (a JSON object).
    pub fn claims(mut self, claims: Arc<Value>) -> Self {
        self.identity.claims = Some(claims);
        self
    }

    /// The caller's roles.
    pub fn roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.identity.roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// An absolute deadline.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// A deadline `timeout` from now.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.deadline(Instant::now() + timeout)
    }

    /// A cancellation token owned by the caller.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Where the caller's reason for cancelling will be, if it gives one (set it before
    /// cancelling the [`cancellation`](Self::cancellation) token).
    pub fn cancel_reason(mut self, reason: CancelReason) -> Self {
        self.cancel_reason = Some(reason);
        self
    }

    /// Where the layers report what the call went through: how many times it was retried,
    /// whether its result came from the cache, what it cost (read it once the call has ended;
    /// all zero when the tool's policy has no retry, cache or budget layer).
    pub fn report(mut self, report: Arc<crate::policy::CallReport>) -> Self {
        self.report = Some(report);
        self
    }

    /// Where progress reports go.
    pub fn progress(mut self, reporter: ProgressReporter) -> Self {
        self.progress = reporter;
        self
    }

    /// The W3C `traceparent` to forward to the tool's backend (taken as given; the gateway
    /// checks it with [`crate::trace_context::is_valid`] first).
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(Arc::from(traceparent.into()));
        self.trace_generated = false;
        self
    }

    /// The W3C `tracestate` that came with the [`traceparent`](Self::traceparent), forwarded
    /// with it (taken as given: at most 32 `key=value` members, 512 bytes, as the caller sent it).
    pub fn tracestate(mut self, tracestate: impl Into<String>) -> Self {
        self.tracestate = Some(Arc::from(tracestate.into()));
        self
    }

    /// A new trace for a call that came without a `traceparent`: a generated one
    /// ([`crate::trace_context::generate`]) is forwarded to the backend, but no span takes it as
    /// its parent (with OpenTelemetry export on, the call's span starts the trace and its
    /// own context is forwarded instead).
    pub fn new_trace(mut self) -> Self {
        self.traceparent = Some(Arc::from(crate::trace_context::generate()));
        self.tracestate = None;
        self.trace_generated = true;
        self
    }

    /// The context.
    pub fn build(self) -> ToolContext {
        ToolContext {
            identity: Arc::new(self.identity),
            deadline: self.deadline,
            cancel: self.cancel.map(OnceLock::from).unwrap_or_default(),
            progress: self.progress,
            toolset: None,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            trace_generated: self.trace_generated,
            followed_url_rules: None,
            cancel_reason: self.cancel_reason,
            report: self.report,
            access_token: self.access_token,
            scope: self.scope,
        }
    }
}
