//! The budget layer: a tool's `cost_per_call` charged to the caller's, the agent's and the
//! task's budgets (`policy.budgets`), before the call.
//!
//! Amounts are kept in millionths of the budget's unit (`micros`): `cost_per_call: 0.01` is
//! 10 000. The caller's budget is keyed by the caller's name (`anonymous` when unauthenticated);
//! the agent's and the task's apply only when the call names an agent or a task (the gateway
//! reads them from `X-Toolgate-Agent` / `X-Toolgate-Task`). A task is named by its caller, so
//! task budgets are kept per caller and task: another caller naming the same task id has a
//! budget of its own and cannot spend this one. An agent's budget is kept per agent name, across
//! callers (an agent acting for many callers is capped as a whole).
//!
//! The cost is reserved before the call under one lock, against every applicable budget at
//! once, so concurrent calls cannot overspend. It is given back when the call did not reach the
//! backend: refused further down (`rate_limited`, `circuit_open`, `permission_denied`,
//! `policy_denied`) or answered from the cache. Any other failure — a timeout, a cancellation,
//! an upstream error — stays charged, since the backend may have done (and billed) the work.
//! What was charged is in the call's report (`cost_micros`).
//!
//! # Shared through a store
//! With a [`SharedStore`](crate::store::SharedStore) (tools.yaml `store.redis`, the `redis`
//! feature) what was spent lives in Redis, shared by every replica: one Lua script checks every
//! applicable budget and charges all or none, and a refund takes the cost back (never below 0)
//! from where it was charged. While Redis cannot answer within `timeout_ms`,
//! `store.redis.fail.budgets` applies: `closed` refuses the call (retryable `network`, nothing
//! runs, nothing is charged), `open` charges this toolset's in-memory budgets instead (see
//! [`crate::store`]).
//!
//! # Errors
//! `budget_exceeded` naming the budget (`per_caller` for caller `x`, ...), its limit, what was
//! spent and the call's cost; nothing runs.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::call::{Call, CallFuture, CallReport, LayerInputs};
use crate::{ErrorKind, Identity, ToolError, ToolFuture, ToolOutput};

/// Millionths of a unit per unit.
const MICROS: f64 = 1_000_000.0;

/// Separates the caller from the task in a task budget's name (tasks are kept per caller).
const TASK_OF: char = '\0';

/// Who a budget is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// `per_caller`.
    Caller,
    /// `per_agent`.
    Agent,
    /// `per_task`.
    Task,
}

impl Scope {
    /// The `policy.budgets` key.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Caller => "per_caller",
            Self::Agent => "per_agent",
            Self::Task => "per_task",
        }
    }

    /// Whose budget `name` is, for messages: ``caller `ci` ``, ``task `t1` of caller `ci` ``.
    fn named(self, name: &str) -> String {
        match self {
            Self::Caller => format!("caller `{name}`"),
            Self::Agent => format!("agent `{name}`"),
            Self::Task => match name.split_once(TASK_OF) {
                Some((caller, task)) => format!("task `{task}` of caller `{caller}`"),
                None => format!("task `{name}`"),
            },
        }
    }
}

/// What has been spent, per caller, agent and task (shared by every tool of a toolset).
#[derive(Default)]
pub(crate) struct State {
    spent: Mutex<HashMap<(Scope, String), u64>>,
}

impl State {
    /// What has been spent so far, in micros, by scope and name (the `toolgate_spend_micros_total`
    /// counter carries it in production).
    #[cfg(test)]
    pub(crate) fn spend(&self) -> Vec<(Scope, String, u64)> {
        let spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<_> = spent
            .iter()
            .map(|((scope, name), micros)| (*scope, name.clone(), *micros))
            .collect();
        all.sort();
        all
    }

    /// Charges `cost` to every budget in `limits` (scope, name, limit), all or none.
    fn reserve(
        &self,
        limits: &[(Scope, String, u64)],
        cost: u64,
        currency: &str,
    ) -> Result<(), String> {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        for (scope, name, limit) in limits {
            let so_far = spent.get(&(*scope, name.clone())).copied().unwrap_or(0);
            if so_far.saturating_add(cost) > *limit {
                return Err(exceeded(*scope, name, *limit, so_far, cost, currency));
            }
        }
        for (scope, name, _) in limits {
            *spent.entry((*scope, name.clone())).or_insert(0) += cost;
        }
        Ok(())
    }

    /// Gives `cost` back to every budget in `limits`.
    fn refund(&self, limits: &[(Scope, String, u64)], cost: u64) {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        for (scope, name, _) in limits {
            if let Some(s) = spent.get_mut(&(*scope, name.clone())) {
                *s = s.saturating_sub(cost);
            }
        }
    }
}

/// Why a call does not fit budget `scope` of `name`: ``budget per_caller of caller `ci`
/// exceeded: limit 0.03 USD, spent 0.03 USD, this call costs 0.01 USD``.
fn exceeded(scope: Scope, name: &str, limit: u64, spent: u64, cost: u64, currency: &str) -> String {
    format!(
        "budget {} of {} exceeded: limit {} {currency}, spent {} {currency}, this call costs {} {currency}",
        scope.as_str(),
        scope.named(name),
        units(limit),
        units(spent),
        units(cost),
    )
}

/// An amount in units, as written in tools.yaml (`0.03`).
fn units(micros: u64) -> String {
    let text = format!("{:.6}", micros as f64 / MICROS);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// An amount in micros (negative or not finite: 0).
fn micros(amount: f64) -> u64 {
    if amount.is_finite() && amount > 0.0 {
        (amount * MICROS).round() as u64
    } else {
        0
    }
}

/// The limits of one tool's calls, in micros.
#[derive(Debug, Clone)]
struct Limits {
    tool: String,
    cost: u64,
    currency: String,
    per_caller: Option<u64>,
    per_agent: Option<u64>,
    per_task: Option<u64>,
}

impl Limits {
    /// The budgets a call by `identity` is charged to.
    fn applicable(&self, identity: &Identity) -> Vec<(Scope, String, u64)> {
        let mut out = Vec::new();
        if let Some(l) = self.per_caller {
            let caller = identity.caller.as_deref().unwrap_or("anonymous");
            out.push((Scope::Caller, caller.to_string(), l));
        }
        if let (Some(l), Some(agent)) = (self.per_agent, &identity.agent) {
            out.push((Scope::Agent, agent.clone(), l));
        }
        if let (Some(l), Some(task)) = (self.per_task, &identity.task) {
            // The caller names its tasks: another caller naming the same task has its own.
            let caller = identity.caller.as_deref().unwrap_or("anonymous");
            out.push((Scope::Task, format!("{caller}{TASK_OF}{task}"), l));
        }
        out
    }
}

/// The layer for a tool, when it costs something and some budget is set.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<BudgetLayer> {
    let budgets = inputs.pipeline.config.budgets.as_ref()?;
    let cost = micros(inputs.policy.cost_per_call?);
    let limits = Limits {
        tool: inputs.tool.name.clone(),
        cost,
        currency: budgets.currency.clone().unwrap_or_else(|| "USD".into()),
        per_caller: budgets.per_caller.map(micros),
        per_agent: budgets.per_agent.map(micros),
        per_task: budgets.per_task.map(micros),
    };
    let any =
        limits.per_caller.is_some() || limits.per_agent.is_some() || limits.per_task.is_some();
    (cost > 0 && any).then(|| BudgetLayer {
        limits: Arc::new(limits),
        state: Arc::clone(&inputs.pipeline.shared.budgets),
        #[cfg(feature = "redis")]
        store: inputs.pipeline.shared.store.clone(),
    })
}

/// Charges each call's cost before it runs.
#[derive(Clone)]
pub(crate) struct BudgetLayer {
    limits: Arc<Limits>,
    state: Arc<State>,
    /// Where the budgets are shared with other replicas (`None`: only in `state`).
    #[cfg(feature = "redis")]
    store: Option<crate::store::SharedStore>,
}

impl<S> Layer<S> for BudgetLayer {
    type Service = Budget<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Budget {
            layer: self.clone(),
            inner,
        }
    }
}

/// The service of [`BudgetLayer`].
#[derive(Clone)]
pub(crate) struct Budget<S> {
    layer: BudgetLayer,
    inner: S,
}

/// Error kinds that mean the call never reached the backend: its cost is given back.
fn not_run(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::RateLimited
            | ErrorKind::CircuitOpen
            | ErrorKind::PermissionDenied
            | ErrorKind::PolicyDenied
            | ErrorKind::BudgetExceeded
    )
}

/// Whether a call's cost is given back after `result`: it never reached the backend, or was
/// answered from the cache.
fn refunded(result: &Result<ToolOutput, ToolError>, report: Option<&Arc<CallReport>>) -> bool {
    match result {
        Ok(_) => report.is_some_and(|r| r.cache_hit()),
        Err(e) => not_run(e.kind()),
    }
}

impl BudgetLayer {
    /// `budget_exceeded` for a call of this tool: `why` (see [`exceeded`]).
    fn refusal(&self, why: &str) -> ToolError {
        let tool = &self.limits.tool;
        tracing::info!(tool = %tool, "call refused: {why}");
        ToolError::new(ErrorKind::BudgetExceeded, format!("tool `{tool}`: {why}"))
    }

    /// Charges the call in the shared store (in memory when it fails under `fail: open`), runs
    /// it, and gives the cost back where it was charged when the call never ran.
    #[cfg(feature = "redis")]
    async fn call_shared<S>(
        self,
        store: crate::store::SharedStore,
        inner: S,
        call: Call,
    ) -> Result<ToolOutput, ToolError>
    where
        S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
    {
        let limits = &self.limits;
        let charged = limits.applicable(call.ctx.identity());
        let keys: Vec<String> = charged
            .iter()
            .map(|(scope, name, _)| store.budget_key(scope.as_str(), name))
            .collect();
        let budgets: Vec<(&str, u64)> = keys
            .iter()
            .zip(&charged)
            .map(|(key, (_, _, limit))| (key.as_str(), *limit))
            .collect();
        let shared = match store.reserve(&budgets, limits.cost).await {
            Ok(None) => true,
            Ok(Some((i, spent))) => {
                let (scope, name, limit) = &charged[i];
                let why = exceeded(*scope, name, *limit, spent, limits.cost, &limits.currency);
                return Err(self.refusal(&why));
            }
            Err(failure) => {
                use crate::store::Feature;
                crate::store::on_failure(&store, Feature::Budgets, &limits.tool, &failure)?;
                self.state
                    .reserve(&charged, limits.cost, &limits.currency)
                    .map_err(|why| self.refusal(&why))?;
                false
            }
        };
        let report = call.report.clone();
        if let Some(r) = &report {
            r.cost_micros.store(limits.cost, Ordering::Relaxed);
        }
        let result = tower::ServiceExt::oneshot(inner, call).await;
        if refunded(&result, report.as_ref()) {
            if shared {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                if let Err(failure) = store.refund(&keys, limits.cost).await {
                    tracing::warn!(
                        tool = %limits.tool,
                        "the cost of a call that did not run stays charged: shared store {failure}"
                    );
                }
            } else {
                self.state.refund(&charged, limits.cost);
            }
            if let Some(r) = &report {
                r.cost_micros.store(0, Ordering::Relaxed);
            }
        }
        result
    }
}

impl<S> Service<Call> for Budget<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>
        + Clone
        + Send
        + 'static,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        #[cfg(feature = "redis")]
        if let Some(store) = &self.layer.store {
            // The charge waits for the store: the clone that was made ready goes into the
            // future, this service keeps a fresh one (tower's usual pattern).
            let clone = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, clone);
            let store = store.clone();
            return ToolFuture::new(self.layer.clone().call_shared(store, inner, call));
        }
        let limits = &self.layer.limits;
        let charged = limits.applicable(call.ctx.identity());
        if let Err(why) = self
            .layer
            .state
            .reserve(&charged, limits.cost, &limits.currency)
        {
            return ToolFuture::err(self.layer.refusal(&why));
        }
        let report = call.report.clone();
        if let Some(r) = &report {
            r.cost_micros.store(limits.cost, Ordering::Relaxed);
        }
        let layer = self.layer.clone();
        self.inner.call(call).map(move |result| {
            if refunded(&result, report.as_ref()) {
                layer.state.refund(&charged, layer.limits.cost);
                if let Some(r) = &report {
                    r.cost_micros.store(0, Ordering::Relaxed);
                }
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_caller: Option<f64>, per_task: Option<f64>) -> Limits {
        Limits {
            tool: "search".into(),
            cost: micros(0.01),
            currency: "USD".into(),
            per_caller: per_caller.map(micros),
            per_agent: None,
            per_task: per_task.map(micros),
        }
    }

    fn who(caller: &str, task: Option<&str>) -> Identity {
        Identity {
            caller: Some(caller.into()),
            task: task.map(str::to_owned),
            ..Identity::default()
        }
    }

    #[test]
    fn three_calls_fit_a_budget_of_three_and_the_fourth_does_not() {
        let state = State::default();
        let l = limits(Some(0.03), None);
        let charged = l.applicable(&who("ci", None));
        for _ in 0..3 {
            state.reserve(&charged, l.cost, "USD").unwrap();
        }
        let err = state.reserve(&charged, l.cost, "USD").unwrap_err();
        assert_eq!(
            err,
            "budget per_caller of caller `ci` exceeded: limit 0.03 USD, spent 0.03 USD, this call costs 0.01 USD"
        );
        // Another caller has a budget of its own.
        state
            .reserve(&l.applicable(&who("other", None)), l.cost, "USD")
            .unwrap();
        assert_eq!(
            state.spend(),
            vec![
                (Scope::Caller, "ci".to_string(), 30_000),
                (Scope::Caller, "other".to_string(), 10_000)
            ]
        );
        state.refund(&charged, l.cost);
        state.reserve(&charged, l.cost, "USD").unwrap();
    }

    #[test]
    fn a_refused_budget_charges_none_of_the_others() {
        let state = State::default();
        let l = limits(Some(1.0), Some(0.01));
        let t1 = l.applicable(&who("ci", Some("t1")));
        state.reserve(&t1, l.cost, "USD").unwrap();
        let err = state.reserve(&t1, l.cost, "USD").unwrap_err();
        assert!(
            err.starts_with("budget per_task of task `t1` of caller `ci` exceeded"),
            "{err}"
        );
        // The caller was charged once, not twice.
        assert!(
            state
                .spend()
                .contains(&(Scope::Caller, "ci".into(), 10_000))
        );
        // A call without a task is not charged to any task budget.
        assert_eq!(l.applicable(&who("ci", None)).len(), 1);
        // Another caller naming the same task has a task budget of its own.
        let other = l.applicable(&who("other", Some("t1")));
        state.reserve(&other, l.cost, "USD").unwrap();
    }

    #[test]
    fn concurrent_reservations_never_overspend() {
        let state = Arc::new(State::default());
        let l = Arc::new(limits(Some(0.5), None));
        let ok: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let state = Arc::clone(&state);
                    let l = Arc::clone(&l);
                    s.spawn(move || {
                        let charged = l.applicable(&who("ci", None));
                        (0..20)
                            .filter(|_| state.reserve(&charged, l.cost, "USD").is_ok())
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(ok, 50);
        assert_eq!(state.spend()[0].2, 500_000);
    }

    /// A backend answering with each of `answers` in turn (an error kind, or `None` for `ok`).
    fn backend(
        answers: Vec<Option<ErrorKind>>,
    ) -> impl Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture> + Clone
    {
        let answers = Arc::new(Mutex::new(answers.into_iter()));
        tower::service_fn(move |_: Call| {
            let next = answers.lock().unwrap().next().flatten();
            crate::ToolFuture::ready(match next {
                None => Ok(ToolOutput::text("ok")),
                Some(kind) => Err(ToolError::new(kind, "refused below")),
            })
        })
    }

    fn call(caller: &str) -> Call {
        let source: Arc<dyn crate::ToolSource> = Arc::new(crate::testing::StubSource::new("local"));
        Call::new(
            Arc::new(crate::ToolDescriptor {
                name: "search".into(),
                source: "local".into(),
                ..crate::ToolDescriptor::default()
            }),
            source,
            serde_json::json!({}),
            crate::ToolContext::builder().caller(caller).build(),
        )
    }

    #[tokio::test]
    async fn the_layer_charges_before_refunds_what_never_ran_and_reports_the_cost() {
        use tower::ServiceExt;
        let state = Arc::new(State::default());
        let layer = BudgetLayer {
            limits: Arc::new(limits(Some(0.02), None)),
            state: Arc::clone(&state),
            #[cfg(feature = "redis")]
            store: None,
        };
        let svc = layer.layer(backend(vec![
            Some(ErrorKind::RateLimited),
            Some(ErrorKind::Upstream),
            None,
            None,
        ]));
        // Rate limited below: given back, nothing reported.
        let c = call("ci");
        let report = c.report.clone().expect("a report");
        let e = svc.clone().oneshot(c).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RateLimited);
        assert_eq!(report.cost_micros.load(Ordering::Relaxed), 0);
        assert!(state.spend().iter().all(|(_, _, m)| *m == 0));
        // An upstream failure may have cost the backend something: kept.
        let c = call("ci");
        let report = c.report.clone().expect("a report");
        svc.clone().oneshot(c).await.unwrap_err();
        assert_eq!(report.cost_micros.load(Ordering::Relaxed), 10_000);
        // One more fits; the next would overspend and never reaches the backend.
        svc.clone().oneshot(call("ci")).await.unwrap();
        let e = svc.clone().oneshot(call("ci")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
        assert!(e.message().contains("per_caller of caller `ci`"), "{e:?}");
        assert_eq!(state.spend(), vec![(Scope::Caller, "ci".into(), 20_000)]);
    }

    #[test]
    fn amounts_round_trip_as_written() {
        assert_eq!(micros(0.01), 10_000);
        assert_eq!(micros(-1.0), 0);
        assert_eq!(units(30_000), "0.03");
        assert_eq!(units(5_000_000), "5");
        assert_eq!(units(0), "0");
    }
}
