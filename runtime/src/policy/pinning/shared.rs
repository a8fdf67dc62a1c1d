//! Pins shared by replicas through Redis (see [`super`]'s "With a shared store"): reading
//! the store's approvals, seeding them from the file, pinning new tools there, and approving.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::{Failure, Feature, SharedStore};
use crate::{ErrorKind, ToolDescriptor, ToolError};

use super::{Pins, hash, lock, read, write};

/// What a toolset's pins need of the shared store.
pub(in crate::policy::pinning) struct Shared {
    store: SharedStore,
    /// Moves (under the `approved` lock) each time the approvals are replaced by the store's or
    /// approved here: the answer of a first-use pin sent before it is stale and dropped.
    epoch: Arc<AtomicU64>,
    /// Held while the store's approvals are read and applied, and through an approval, so
    /// that a read begun before an approval cannot overwrite it afterwards.
    serial: tokio::sync::Mutex<()>,
}

impl Pins {
    /// These pins, shared through `store` from now on (set by the toolset builder).
    pub(crate) fn with_store(mut self, store: SharedStore) -> Self {
        self.shared = Some(Shared {
            store,
            epoch: Arc::new(AtomicU64::new(0)),
            serial: tokio::sync::Mutex::new(()),
        });
        self
    }

    /// Reads the approvals held in the shared store again (on start, on
    /// [`Notice::PinsChanged`](crate::store::Notice::PinsChanged), after the subscription
    /// broke): they replace what was held (seeded from the file first when the store holds
    /// none). When the store does not answer, what was held is kept.
    pub(crate) async fn reread(&self, store: &SharedStore) {
        let Some(shared) = &self.shared else {
            return;
        };
        let _serial = shared.serial.lock().await;
        match self.fetch(store).await {
            Ok(held) => self.replace(held),
            Err(failure) => {
                tracing::debug!(
                    "approvals not read from the shared store (Redis {failure}); the ones read before are kept"
                );
            }
        }
    }

    /// Before an approval: the store's approvals read (strictly), and the lock that keeps
    /// another read from overwriting the approval until it is done. Without a store, nothing.
    ///
    /// # Errors
    /// The store did not answer: nothing may be approved.
    pub(super) async fn catch_up(
        &self,
    ) -> Result<Option<tokio::sync::MutexGuard<'_, ()>>, ToolError> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        let serial = shared.serial.lock().await;
        let held = self
            .fetch(&shared.store)
            .await
            .map_err(|f| not_approved(&f))?;
        self.replace(held);
        Ok(Some(serial))
    }

    /// Writes the current hashes of `tools` to the store (which tells the other replicas).
    /// Without a store, nothing.
    ///
    /// # Errors
    /// The store did not answer.
    pub(super) async fn share(&self, tools: &[Arc<ToolDescriptor>]) -> Result<(), ToolError> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let pins: Vec<(String, String)> = tools.iter().map(|d| (d.name.clone(), hash(d))).collect();
        shared
            .store
            .approve(&pins)
            .await
            .map_err(|f| not_approved(&f))
    }

    /// Records `pins` approved here, after [`share`](Self::share) put them in the store:
    /// into `approved` (the store's view), and into the file over what it holds (a file that
    /// cannot be read is replaced).
    ///
    /// # Errors
    /// The file cannot be written (`approved` holds the pins all the same).
    pub(super) fn record_shared(
        &self,
        approved: &mut BTreeMap<String, String>,
        pins: &[(String, String)],
    ) -> Result<(), String> {
        approved.extend(pins.iter().cloned());
        if let Some(shared) = &self.shared {
            shared.epoch.fetch_add(1, Ordering::SeqCst);
        }
        let mut on_disk = read(&self.file).unwrap_or_default();
        on_disk.extend(approved.iter().map(|(k, v)| (k.clone(), v.clone())));
        write(&self.file, &on_disk)
    }

    /// Trust on first use with a store: `name` is pinned to `hash` in `approved` (locked by
    /// the caller) at once, and in the store by a task of its own, whose answer — the hash the
    /// store holds, another replica's when it pinned the tool first — replaces it unless the
    /// approvals were replaced meanwhile (the tool turns [`Changed`](super::PinState::Changed)
    /// then). Outside a Tokio runtime only the memory is written (the next read of the store
    /// drops the pin, and the next verdict pins it again).
    pub(super) fn pin_first_use(
        &self,
        approved: &mut BTreeMap<String, String>,
        name: &str,
        hash: &str,
    ) {
        approved.insert(name.to_string(), hash.to_string());
        tracing::info!(tool = %name, "new remote tool approved and pinned (trust on first use), shared through the store");
        let Some(shared) = &self.shared else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let sent_at = shared.epoch.load(Ordering::SeqCst);
        let epoch = Arc::clone(&shared.epoch);
        let store = shared.store.clone();
        let (approved, verdicts) = (Arc::clone(&self.approved), Arc::clone(&self.verdicts));
        let (name, hash) = (name.to_string(), hash.to_string());
        runtime.spawn(async move {
            match store.pin_new(&name, &hash).await {
                Ok(Some(held)) if !super::same_pin(&held, &hash) => {
                    let mut approved = lock(&approved);
                    if epoch.load(Ordering::SeqCst) == sent_at {
                        tracing::warn!(tool = %name, "another replica pinned this new remote tool first, as it was then: withheld until `toolgate approve {name}`");
                        approved.insert(name.clone(), held);
                        lock(&verdicts).remove(&name);
                    }
                }
                Ok(_) => tracing::debug!(tool = %name, "first-use pin shared"),
                Err(failure) => store.warn_open(Feature::Pins, &failure),
            }
        });
    }

    /// The store's approvals; when it holds none (the first replica to share them, or Redis
    /// lost its data), the ones held here — on the first read, the approvals file's — are
    /// seeded into it first (`HSETNX`: what another replica seeds at the same time is kept).
    async fn fetch(&self, store: &SharedStore) -> Result<BTreeMap<String, String>, Failure> {
        let held = store.approvals().await?;
        if !held.is_empty() {
            return Ok(held);
        }
        let seed = lock(&self.approved).clone();
        if seed.is_empty() {
            return Ok(held);
        }
        let set = store.seed_pins(&seed).await?;
        tracing::info!(
            set,
            "the shared store held no approvals: seeded with the {} held here",
            seed.len()
        );
        store.approvals().await
    }

    /// Makes `held` (the store's approvals) the approvals, and forgets the verdicts when they
    /// changed.
    fn replace(&self, held: BTreeMap<String, String>) {
        let mut approved = lock(&self.approved);
        if let Some(shared) = &self.shared {
            shared.epoch.fetch_add(1, Ordering::SeqCst);
        }
        if *approved != held {
            *approved = held;
            // Cleared under `approved`, as in `reload_if_changed`.
            lock(&self.verdicts).clear();
            tracing::info!("approvals read from the shared store");
        }
    }
}

/// The error of an approval the store did not take.
fn not_approved(failure: &Failure) -> ToolError {
    ToolError::new(
        ErrorKind::Network,
        format!(
            "the shared store (Redis) did not answer ({failure}), so nothing was approved: the \
             replicas share their approvals through it; run `toolgate approve` again once it \
             answers"
        ),
    )
    .with_retryable(true)
    .with_details(serde_json::json!({"store": "redis", "feature": "pins"}))
}
