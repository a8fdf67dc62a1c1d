//! The process-wide list of configured secrets and of the ids and names that are never masked.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Shorter values are not remembered: masking every `on`, `true` or `8080` in a log would make
/// it unreadable, and such a value is no credential.
pub const MIN_SECRET_LEN: usize = 6;

/// The schemes of an `Authorization` value whose credential is remembered on its own too
/// (`Bearer abc` → `abc`: an upstream may echo the token without its scheme).
const SCHEMES: &[&str] = &["Bearer", "Basic", "Token", "Bot", "ApiKey", "Digest"];

#[derive(Default)]
pub(super) struct Registry {
    pub(super) secrets: BTreeSet<String>,
    /// Secrets that replace each other, by slot (a refreshed OAuth2 token).
    pub(super) slots: BTreeMap<String, Vec<String>>,
    pub(super) public: BTreeSet<String>,
}

impl Registry {
    pub(super) fn all_secrets(&self) -> impl Iterator<Item = &String> {
        self.secrets.iter().chain(self.slots.values().flatten())
    }
}

pub(super) static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    secrets: BTreeSet::new(),
    slots: BTreeMap::new(),
    public: BTreeSet::new(),
});
/// Bumped on every change, so that the redactor is rebuilt only when the list changed.
pub(super) static GENERATION: AtomicU64 = AtomicU64::new(0);
static ANY: AtomicBool = AtomicBool::new(false);

pub(super) fn lock() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// `value` and what of it is remembered: itself trimmed, and the credential of an
/// `Authorization`-style value (`Bearer abc` → `abc`); none shorter than [`MIN_SECRET_LEN`]
/// characters.
fn parts(value: &str) -> Vec<String> {
    let value = value.trim();
    let mut out = vec![value.to_string()];
    if let Some((scheme, rest)) = value.split_once(' ')
        && SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme))
    {
        out.push(rest.trim().to_string());
    }
    out.retain(|v| v.chars().count() >= MIN_SECRET_LEN);
    out
}

/// Remembers `value` as a secret for the rest of the process: [`redact`](super::redact) masks
/// it (in every [form](super::forms)) from then on. Ignored when shorter than
/// [`MIN_SECRET_LEN`] characters (after trimming); an `Authorization`-style value (`Bearer
/// abc…`) is remembered with and without its scheme.
pub fn remember(value: &str) {
    let parts = parts(value);
    if parts.is_empty() {
        return;
    }
    let mut registry = lock();
    let mut changed = false;
    for part in parts {
        changed |= registry.secrets.insert(part);
    }
    if changed {
        changed_now(true);
    }
}

/// Remembers `value` in `slot`, replacing what the slot held: for a secret that is replaced
/// over time (an OAuth2 access token, refreshed when it expires), so that the list does not
/// grow with every refresh. Short values are ignored as by [`remember`].
pub fn remember_as(slot: &str, value: &str) {
    let parts = parts(value);
    let mut registry = lock();
    if registry.slots.get(slot) == Some(&parts) {
        return;
    }
    let secret = !parts.is_empty();
    registry.slots.insert(slot.to_string(), parts);
    changed_now(secret);
}

/// Remembers `name` (a source id, a caller name) as public: never masked, even when a secret
/// equals it or a secret is part of it.
pub fn remember_public(name: &str) {
    if name.is_empty() {
        return;
    }
    let mut registry = lock();
    if registry.public.insert(name.to_string()) {
        changed_now(false);
    }
}

/// Whether any secret has been remembered (a fast check: one atomic load), so that text is
/// not even looked at while there is none.
pub fn any() -> bool {
    ANY.load(Ordering::Acquire)
}

/// Something changed: the redactor is rebuilt on its next use. `secret`: a secret was added.
fn changed_now(secret: bool) {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    if secret {
        ANY.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_not_remembered_and_schemes_are_split() {
        assert!(parts("  on ").is_empty());
        assert_eq!(parts(" s3cr3t-value\n"), ["s3cr3t-value"]);
        assert_eq!(
            parts("Bearer abc.def.ghi"),
            ["Bearer abc.def.ghi", "abc.def.ghi"]
        );
        assert_eq!(parts("Bearer abc"), ["Bearer abc"]);
    }
}
