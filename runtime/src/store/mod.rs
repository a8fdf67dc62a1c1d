//! State shared by several gateway replicas (the `redis` feature; tools.yaml `store.redis`).
//!
//! Without a store every toolset keeps its rate-limit buckets and budgets in its own memory. A
//! [`SharedStore`] given to [`ToolsetBuilder::shared_store`](crate::ToolsetBuilder::shared_store)
//! moves both into one Redis (or Valkey) server, so that replicas behind a load balancer act as
//! one gateway: a `caller_rate_limit` of 60/m admits 60 calls across all of them.
//!
//! * **Rate limits**: one Lua script per call evaluates GCRA for all of the call's buckets at
//!   once, on Redis' clock (`TIME`, so the replicas' clocks do not matter), all or none (see
//!   [`crate::policy`]'s rate limit layer). Idle buckets expire by themselves.
//! * **Budgets**: one script checks every applicable budget and charges all or none; a refund
//!   takes the cost back, never below 0. Budgets do not expire.
//! * **Result cache**: a second level behind each replica's own cache, `{prefix}:cache:{digest}`
//!   (SHA-256 of tool, version, caller and canonical arguments) holding the result's JSON for
//!   the tool's `cache_ttl_ms`: a result computed on one replica is a hit on the others (see
//!   `cache` and [`crate::policy`]'s cache layer).
//! * **Circuit breakers**: a breaker opened on one replica opens on the others within the time
//!   a pub/sub message takes; calls never wait for Redis (see `breakers`).
//! * **Tool pins**: the approvals of [pinning](crate::policy::pinning) are one Redis hash,
//!   `{prefix}:pins` (tool → SHA-256); `toolgate approve` on any replica reaches the others by
//!   a [`Notice::PinsChanged`]; listings and calls never wait for Redis (see `pins`).
//! * **Cut results**: the full result of a call cut to `max_result_bytes`,
//!   `{prefix}:result:{SHA-256 of its URI}` for an hour, so `resources/read` of its
//!   `toolgate://results/...` URI works on any replica (see `results`).
//!
//! Keys: `{prefix}:rl:{tool|caller|source}:{limit}:{name}[:{caller}]`,
//! `{prefix}:budget:{per_caller|per_agent|per_task}:{name}` and `{prefix}:breaker:{source}`,
//! names with `%`, `:` and NUL percent-escaped; `{prefix}:cache:{hex}`, `{prefix}:result:{hex}`
//! (SHA-256 digests), `{prefix}:pins` and the channel `{prefix}:notices`.
//!
//! # Failures
//! Every command is bounded by `timeout_ms` (the client's response timeout and a
//! `tokio::time::timeout` around the whole command, reconnecting included). When Redis fails or
//! does not answer in time, the feature's [`FailMode`] applies: `closed` refuses the call with a
//! retryable `network` [`ToolError`](crate::ToolError) naming the store (nothing runs, nothing is
//! charged), `open` decides with the toolset's in-memory state for that call and logs a warning
//! (at most every 10 s per feature). The connection is made again by itself with backoff: once
//! Redis answers again, calls are shared again. Each failure counts in
//! [`STORE_ERRORS_TOTAL`].

mod breakers;
mod budgets;
mod cache;
mod limits;
mod notices;
mod pins;
mod redis;
mod results;

pub(crate) use self::limits::Gcra;

use std::fmt;

use toolgate_model::config::FailMode;

pub use self::notices::Notice;
pub use self::redis::SharedStore;
pub use self::results::{MAX_SHARED_RESULT_BYTES, RESULT_TTL};

/// `toolgate_store_errors_total{feature}`: shared-store commands that failed or timed out, by
/// feature (`rate_limits`, `budgets`, `cache`, `breakers`, `pins`, `notices`, `readiness`).
pub const STORE_ERRORS_TOTAL: &str = "toolgate_store_errors_total";

/// Why a [`SharedStore`] cannot be made from its configuration. Never shows the URL's
/// password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// `store.redis.url` references a variable that is not set, or a file that cannot be read.
    #[error("store.redis.url: {0}")]
    Interpolation(String),
    /// `store.redis.url` is no Redis URL (`redis://[user:password@]host:port[/db]`,
    /// `rediss://...` for TLS).
    #[error("store.redis.url is not a Redis URL: {0}")]
    Url(String),
}

/// What a [`SharedStore`]'s last command met, for readiness checks (no secret in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreHealth {
    /// The store's kind: `redis`.
    pub store: &'static str,
    /// Where it is: `host:port/db` (or the socket path), without user or password.
    pub address: String,
    /// `Some(true)`: the last command was answered; `Some(false)`: it failed or timed out
    /// ([`last_error`](Self::last_error) says why); `None`: no command was sent yet.
    pub last_ok: Option<bool>,
    /// Why the last failed command failed (`did not answer within 250 ms`, the client's error
    /// with remembered secrets masked); `None` after an answer.
    pub last_error: Option<String>,
}

/// A shared feature: what a failure is counted and reported under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature {
    /// `store.redis.fail.rate_limits`.
    RateLimits,
    /// `store.redis.fail.budgets`.
    Budgets,
    /// `store.redis.fail.cache`: the shared result cache (L2).
    Cache,
    /// Circuit breakers opened or closed on one replica, told the others: always open, each
    /// replica's breaker decides on its own state, Redis only carries what the others saw.
    Breakers,
    /// Tool pins and approvals: always open, the approvals read last are kept.
    Pins,
    /// Full results of cut calls: always open, a result not shared is read where it was cut.
    Results,
    /// Notices between replicas ([`Notice`]): always open, a lost notice only delays.
    Notices,
    /// The `/readyz` check: always open, it reports and decides nothing.
    Readiness,
}

impl Feature {
    /// The `fail` key and metric label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::RateLimits => "rate_limits",
            Self::Budgets => "budgets",
            Self::Cache => "cache",
            Self::Breakers => "breakers",
            Self::Pins => "pins",
            Self::Results => "results",
            Self::Notices => "notices",
            Self::Readiness => "readiness",
        }
    }

    /// The feature's slot in per-feature arrays ([`Self::COUNT`] of them).
    fn index(self) -> usize {
        match self {
            Self::RateLimits => 0,
            Self::Budgets => 1,
            Self::Cache => 2,
            Self::Breakers => 3,
            Self::Pins => 4,
            Self::Notices => 5,
            Self::Readiness => 6,
            Self::Results => 7,
        }
    }

    /// How many features there are.
    const COUNT: usize = 8;
}

/// A command that did not get its answer.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// No answer within the store's `timeout_ms`.
    Timeout(std::time::Duration),
    /// The client's error, secrets masked.
    Redis(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(after) => write!(f, "did not answer within {} ms", after.as_millis()),
            Self::Redis(why) => write!(f, "failed: {why}"),
        }
    }
}

impl Failure {
    /// `error`, met by a command bounded by `bound`, as a failure: a timeout as
    /// [`Self::Timeout`], anything else with remembered secrets masked.
    pub(crate) fn from_redis(error: &::redis::RedisError, bound: std::time::Duration) -> Self {
        if error.is_timeout() {
            Self::Timeout(bound)
        } else {
            Self::Redis(crate::redact::text(&error.to_string()).into_owned())
        }
    }

    /// The refusal of a call under `fail: closed`: retryable `network`, retry after 1 s.
    pub(crate) fn refusal(&self, feature: Feature) -> crate::ToolError {
        crate::ToolError::new(
            crate::ErrorKind::Network,
            format!(
                "shared store (Redis) {self}; the call was not run (store.redis.fail.{}: closed)",
                feature.as_str()
            ),
        )
        .with_retryable(true)
        .with_retry_after(std::time::Duration::from_secs(1))
        .with_details(serde_json::json!({"store": "redis", "feature": feature.as_str()}))
    }
}

/// What a call does after `failure` of `feature`: `Err` (closed) or go on in memory (open).
pub(crate) fn on_failure(
    store: &SharedStore,
    feature: Feature,
    tool: &str,
    failure: &Failure,
) -> Result<(), crate::ToolError> {
    match store.fail_mode(feature) {
        FailMode::Closed => {
            tracing::debug!(tool, "call refused: shared store {failure}");
            Err(failure.refusal(feature))
        }
        FailMode::Open => {
            store.warn_open(feature, failure);
            Ok(())
        }
    }
}

/// `name` with `%`, `:` and NUL percent-escaped, so that no two key parts run together.
pub(crate) fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains(['%', ':', '\0']) {
        return name.into();
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '\0' => out.push_str("%00"),
            c => out.push(c),
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parts_are_escaped() {
        assert_eq!(escape("gh.search"), "gh.search");
        assert_eq!(escape("a:b%c\0d"), "a%3Ab%25c%00d");
    }

    #[test]
    fn a_closed_refusal_is_a_retryable_network_error_naming_the_store() {
        let e = Failure::Timeout(std::time::Duration::from_millis(250)).refusal(Feature::Budgets);
        assert_eq!(e.kind(), crate::ErrorKind::Network);
        assert!(e.is_retryable());
        assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(1)));
        assert_eq!(
            e.message(),
            "shared store (Redis) did not answer within 250 ms; the call was not run \
             (store.redis.fail.budgets: closed)"
        );
        assert_eq!(e.details().unwrap()["feature"], "budgets");
        assert_eq!(e.details().unwrap()["store"], "redis");
    }
}
