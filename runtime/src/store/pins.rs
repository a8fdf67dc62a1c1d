//! Tool pins in Redis: one hash, `{prefix}:pins`, field = the tool's name inside toolgate,
//! value = the SHA-256 (hex) approved for it (see [`crate::policy::pinning`]). Every change
//! made here (an approval, a new tool pinned on first use, approvals seeded into an empty
//! hash) is told the other replicas by a [`Notice::PinsChanged`], on which they read the hash
//! again.
//!
//! Every command counts under `feature="pins"`, which is always open: a replica that cannot
//! reach Redis keeps the approvals it read last.

use std::collections::BTreeMap;

use super::{Failure, Feature, Notice, SharedStore};

/// `HSETNX` then `HGET` of one field, in one round trip: `{1 if it was set, the value now}`.
const PIN_NEW: &str = "local set = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) \
                       return {set, redis.call('HGET', KEYS[1], ARGV[1])}";

/// `HSETNX` of every (field, value) pair of `ARGV`: how many were set.
const SEED: &str = "local set = 0 \
                    for i = 1, #ARGV, 2 do \
                      set = set + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) \
                    end \
                    return set";

impl SharedStore {
    /// The hash of approved tool pins: `{prefix}:pins` (tool names are hash fields, so they
    /// need no escaping).
    pub(crate) fn pins_key(&self) -> String {
        format!("{}:pins", self.key_prefix())
    }

    /// Every approval held in the store (tool → SHA-256 hex): `HGETALL`.
    ///
    /// # Errors
    /// The store did not answer (counted under `feature="pins"`).
    pub(crate) async fn approvals(&self) -> Result<BTreeMap<String, String>, Failure> {
        let mut command = ::redis::cmd("HGETALL");
        command.arg(self.pins_key());
        self.query(&command, Feature::Pins).await
    }

    /// Records `pins` (tool → hash), replacing what the store held for those tools (`HSET`),
    /// then tells the other replicas. Nothing to record: nothing sent.
    ///
    /// # Errors
    /// The store did not answer: nothing is known to be recorded.
    pub(crate) async fn approve(&self, pins: &[(String, String)]) -> Result<(), Failure> {
        if pins.is_empty() {
            return Ok(());
        }
        let mut command = ::redis::cmd("HSET");
        command.arg(self.pins_key());
        for (tool, hash) in pins {
            command.arg(tool).arg(hash);
        }
        self.query::<i64>(&command, Feature::Pins).await?;
        self.publish(&Notice::PinsChanged).await;
        Ok(())
    }

    /// Pins `tool` to `hash` unless the store pins it already (`HSETNX`, trust on first use),
    /// and says what the store holds for it afterwards: `hash`, or the hash another replica
    /// pinned first. Tells the other replicas when it set it.
    ///
    /// # Errors
    /// The store did not answer.
    pub(crate) async fn pin_new(&self, tool: &str, hash: &str) -> Result<Option<String>, Failure> {
        let mut command = ::redis::cmd("EVAL");
        command
            .arg(PIN_NEW)
            .arg(1)
            .arg(self.pins_key())
            .arg(tool)
            .arg(hash);
        let (set, now): (i64, Option<String>) = self.query(&command, Feature::Pins).await?;
        if set == 1 {
            self.publish(&Notice::PinsChanged).await;
        }
        Ok(now)
    }

    /// Records each of `pins` the store does not pin yet (`HSETNX` each, in one script): the
    /// approvals a replica holds (at first its approvals file's) when the store holds none.
    /// Tells the other replicas when any was set; says how many were.
    ///
    /// # Errors
    /// The store did not answer.
    pub(crate) async fn seed_pins(&self, pins: &BTreeMap<String, String>) -> Result<u64, Failure> {
        if pins.is_empty() {
            return Ok(0);
        }
        let mut command = ::redis::cmd("EVAL");
        command.arg(SEED).arg(1).arg(self.pins_key());
        for (tool, hash) in pins {
            command.arg(tool).arg(hash);
        }
        let set: u64 = self.query(&command, Feature::Pins).await?;
        if set > 0 {
            self.publish(&Notice::PinsChanged).await;
        }
        Ok(set)
    }
}
