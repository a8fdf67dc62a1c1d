//! The policy pipeline: every call, whatever its source, passes through the same layers.
//!
//! # Order
//!
//! Outermost first; the order is fixed:
//!
//! ```text
//! fallback → telemetry → authorize → guardrails (arguments) → validate → argument rules
//!          → budget → rate limit → circuit breaker → concurrency limit → cache
//!          → guardrails (result) → timeout → retry → backend
//! ```
//!
//! * a fallback sees every failure, the telemetry layer every outcome (refusals included);
//! * a refused caller costs nothing and touches no limit (authorize first);
//! * guardrails see the arguments before anything reads them, and the result once, after the
//!   last retry; the cache keeps only results the guardrails passed ([`guardrails`]);
//! * only valid arguments are charged, counted or cached (validate before budget);
//! * a budget is charged before the call, not after (`budget_exceeded` means nothing ran);
//! * a rate-limited call never reaches the breaker, an open breaker takes no concurrency slot;
//! * a cache hit takes no time budget and no retry;
//! * the timeout bounds the whole call, retries included: retries only use what is left of the
//!   deadline.
//!
//! Each stage is a tower [`Layer`](tower::Layer) over [`Call`] (one file each, testable alone
//! with any inner service), returning a [`CallFuture`]: a layer that only looks at the call on
//! its way in passes the inner future on unchanged, and a refusal or a synchronous tool's result
//! is ready without an allocation. A tool's stack is built on its first call, with only the
//! layers its effective policy turns on ([`Pipeline::settle`]), and kept in its catalog entry.
//!
//! Files: [`call`] holds what every layer shares (the call, its report, the layer inputs),
//! [`pipeline`] builds the stacks; the layers sit between them and import only from [`call`].

pub(crate) mod arguments;
pub(crate) mod authorize;
mod backend;
mod breaker;
pub(crate) mod budget;
mod cache;
pub mod call;
pub(crate) mod code;
mod concurrency;
mod deadline;
mod fallback;
pub mod guardrails;
pub mod pinning;
pub(crate) mod pipeline;
mod rate_limit;
mod retry;
mod telemetry;
pub(crate) mod validate;

pub use backend::Backend;
pub use call::{Call, CallFuture, CallReport, CallStack};
pub use deadline::TimeoutLayer;
pub(crate) use pipeline::Pipeline;
pub(crate) use telemetry::record_gauges;
pub use telemetry::{
    CACHE_HITS_TOTAL, CACHE_MISSES_TOTAL, CALL_DURATION_SECONDS, CALLS_TOTAL,
    CIRCUIT_BREAKER_STATE, RATE_LIMITED_TOTAL, SPEND_MICROS_TOTAL, describe_metrics,
};
pub use validate::ValidateLayer;
