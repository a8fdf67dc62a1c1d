//! Budgets in Redis: every applicable budget charged in one script (`scripts/reserve.lua`), all
//! or none; refunds never below 0 (`scripts/refund.lua`).

use std::sync::LazyLock;

use ::redis::Script;

use super::{Failure, Feature, SharedStore, escape};

/// `scripts/reserve.lua`.
static RESERVE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/reserve.lua")));
/// `scripts/refund.lua`.
static REFUND: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/refund.lua")));

impl SharedStore {
    /// The key of a budget: `{prefix}:budget:{scope}:{name}` (`scope` as in `policy.budgets`).
    pub(crate) fn budget_key(&self, scope: &str, name: &str) -> String {
        format!("{}:budget:{scope}:{}", self.key_prefix(), escape(name))
    }

    /// Charges `cost` micros to every budget (`(key, limit in micros)`), or to none:
    /// `Ok(None)` when charged, `Ok(Some((i, spent)))` when `budgets[i]` (the first that cannot
    /// pay) has spent `spent` micros already.
    pub(crate) async fn reserve(
        &self,
        budgets: &[(&str, u64)],
        cost: u64,
    ) -> Result<Option<(usize, u64)>, Failure> {
        let keys: Vec<&str> = budgets.iter().map(|(k, _)| *k).collect();
        let args: Vec<u64> = std::iter::once(cost)
            .chain(budgets.iter().map(|(_, limit)| *limit))
            .collect();
        let (index, spent): (i64, i64) = self.run(&RESERVE, &keys, &args, Feature::Budgets).await?;
        Ok(match usize::try_from(index) {
            Ok(0) => None,
            Ok(i) if i <= budgets.len() => Some((i - 1, spent.max(0).unsigned_abs())),
            _ => {
                return Err(Failure::Redis(format!(
                    "the budget script answered budget {index} of {}",
                    budgets.len()
                )));
            }
        })
    }

    /// Gives `cost` micros back to every budget in `keys` (none goes below 0).
    pub(crate) async fn refund(&self, keys: &[&str], cost: u64) -> Result<(), Failure> {
        let _: i64 = self.run(&REFUND, keys, &[cost], Feature::Budgets).await?;
        Ok(())
    }
}
