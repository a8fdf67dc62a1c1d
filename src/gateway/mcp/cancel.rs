//! The reasons clients give when they cancel a request (`notifications/cancelled`'s `reason`,
//! MCP 2025-06-18 "Cancellation"), kept so that a call passed on to an MCP server behind the
//! gateway is cancelled there with the client's own words.
//!
//! rmcp cancels a request's token the moment it reads the notification, and tells the
//! handler the reason only later, in a task of its own. So the transports note the reason
//! *before* rmcp reads the message: the stdio and SSE inbox as it queues the message, the
//! streamable HTTP front as the POST arrives ([`super::http`]). The call's
//! [`CancelReason`] slot is the same whichever side comes first; the call removes it when it
//! ends.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage};
use toolgate_runtime::CancelReason;

/// The most reasons kept at once. A reason for a request that is no call (a cancelled
/// `resources/read`, a request already answered) is never taken by a call; when the map is
/// full, those are forgotten, so a client cannot grow it.
const MAX_REASONS: usize = 1024;

/// Reasons by request key: the request id for one session, (session id, request id) for the
/// HTTP front; each with whether a call holds it. Cheap to clone; clones share the map.
pub(crate) struct CancelReasons<K>(Arc<Mutex<HashMap<K, (CancelReason, bool)>>>);

impl<K> Clone for CancelReasons<K> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K> Default for CancelReasons<K> {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(HashMap::new())))
    }
}

impl<K: Eq + Hash + Clone> CancelReasons<K> {
    /// Records `reason` for the request `key`, before its cancellation reaches rmcp.
    pub(crate) fn note(&self, key: K, reason: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_REASONS && !map.contains_key(&key) {
            map.retain(|_, (_, held)| *held);
            if map.len() >= MAX_REASONS {
                return;
            }
        }
        map.entry(key).or_default().0.set(reason);
    }

    /// The slot of request `key`'s reason (filled now or later), held until the guard drops.
    pub(crate) fn slot(&self, key: K) -> (CancelReason, Taken<K>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(key.clone()).or_default();
        entry.1 = true;
        let slot = entry.0.clone();
        let taken = Taken {
            reasons: self.clone(),
            key: Some(key),
        };
        (slot, taken)
    }
}

/// Forgets a call's reason when the call ends.
pub(crate) struct Taken<K: Eq + Hash> {
    reasons: CancelReasons<K>,
    key: Option<K>,
}

impl<K: Eq + Hash> Drop for Taken<K> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.reasons
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
        }
    }
}

/// The request id and reason of a `notifications/cancelled` that gives one.
pub(crate) fn cancelled(message: &ClientJsonRpcMessage) -> Option<(&rmcp::model::RequestId, &str)> {
    let JsonRpcMessage::Notification(n) = message else {
        return None;
    };
    let ClientNotification::CancelledNotification(c) = &n.notification else {
        return None;
    };
    Some((c.params.request_id.as_ref()?, c.params.reason.as_deref()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot is shared whichever side comes first, and forgotten when the call ends.
    #[test]
    fn a_reason_reaches_the_call_in_either_order() {
        let reasons = CancelReasons::<u32>::default();
        reasons.note(1, "user pressed stop");
        let (early, taken) = reasons.slot(1);
        assert_eq!(early.get(), Some("user pressed stop"));
        drop(taken);
        let (late, _taken) = reasons.slot(2);
        reasons.note(2, "too slow");
        assert_eq!(late.get(), Some("too slow"));
        assert_eq!(reasons.0.lock().unwrap().len(), 1, "key 1 was forgotten");
    }

    /// Reasons no call took are forgotten when the map fills up; those calls hold stay.
    #[test]
    fn the_map_is_bounded() {
        let reasons = CancelReasons::<usize>::default();
        let (held, _taken) = reasons.slot(usize::MAX);
        for i in 0..3 * MAX_REASONS {
            reasons.note(i, "stray");
        }
        assert!(reasons.0.lock().unwrap().len() <= MAX_REASONS);
        reasons.note(usize::MAX, "kept");
        assert_eq!(held.get(), Some("kept"));
    }
}
