//! Rate limits in Redis: GCRA over all of a call's buckets in one script (`scripts/gcra.lua`),
//! all or none, on Redis' clock.

use std::sync::LazyLock;
use std::time::Duration;

use ::redis::Script;
use toolgate_model::config::RateLimit;

use super::{Failure, Feature, SharedStore, escape};

/// `scripts/gcra.lua`, loaded by its SHA-1 (EVALSHA; loaded again after a server restart).
static GCRA: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/gcra.lua")));

/// GCRA's parameters of one limit, in microseconds: a call every `interval_us`, a burst of
/// `tolerance_us / interval_us + 1` (governor's: `t = period / N`, `tau = t * (N - 1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gcra {
    pub interval_us: u64,
    pub tolerance_us: u64,
}

impl Gcra {
    /// `limit.calls` per `limit.per` (0 calls counts as 1, as in memory).
    pub(crate) fn new(limit: RateLimit) -> Self {
        let burst = u64::from(limit.calls.max(1));
        let per_us = u64::try_from(limit.per.as_micros()).unwrap_or(u64::MAX);
        let interval_us = (per_us / burst).max(1);
        Self {
            interval_us,
            tolerance_us: interval_us.saturating_mul(burst - 1),
        }
    }
}

impl SharedStore {
    /// The key of a bucket: `{prefix}:rl:{scope}:{calls}/{per_ms}ms:{name}` (a caller's bucket
    /// then takes `:{caller}`, [`caller_key`](Self::caller_key)).
    pub(crate) fn rate_key(&self, scope: &str, limit: RateLimit, name: &str) -> String {
        format!(
            "{}:rl:{scope}:{}/{}ms:{}",
            self.key_prefix(),
            limit.calls,
            limit.per.as_millis(),
            escape(name)
        )
    }

    /// The key of `caller`'s bucket under `base` (a [`rate_key`](Self::rate_key) of scope
    /// `caller`).
    pub(crate) fn caller_key(base: &str, caller: &str) -> String {
        format!("{base}:{}", escape(caller))
    }

    /// Takes one token of every bucket, or of none: `Ok(None)` when the call may go on,
    /// `Ok(Some((i, wait)))` when `buckets[i]` (the first that refused) lets a call through in
    /// `wait`.
    pub(crate) async fn take(
        &self,
        buckets: &[(&str, Gcra)],
    ) -> Result<Option<(usize, Duration)>, Failure> {
        let keys: Vec<&str> = buckets.iter().map(|(k, _)| *k).collect();
        let args: Vec<u64> = buckets
            .iter()
            .flat_map(|(_, g)| [g.interval_us, g.tolerance_us])
            .collect();
        let (index, wait): (i64, i64) = self.run(&GCRA, &keys, &args, Feature::RateLimits).await?;
        Ok(match usize::try_from(index) {
            Ok(0) => None,
            Ok(i) if i <= buckets.len() => {
                Some((i - 1, Duration::from_micros(wait.max(0).unsigned_abs())))
            }
            _ => {
                return Err(Failure::Redis(format!(
                    "the rate limit script answered bucket {index} of {}",
                    buckets.len()
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_parameters_match_governors() {
        let l = |calls, secs| RateLimit {
            calls,
            per: Duration::from_secs(secs),
        };
        assert_eq!(
            Gcra::new(l(5, 1)),
            Gcra {
                interval_us: 200_000,
                tolerance_us: 800_000
            }
        );
        assert_eq!(Gcra::new(l(60, 60)).interval_us, 1_000_000);
        assert_eq!(Gcra::new(l(1, 3600)).tolerance_us, 0);
    }
}
