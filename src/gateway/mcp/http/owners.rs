//! MCP sessions bound to the caller that opened them: a session id seen by someone else (a log,
//! a proxy, a shared screen) cannot be used with another credential.
//!
//! - A request naming a session another caller opened is refused (`403`); one naming a session
//!   this layer does not know (forgotten, or never opened through it) is answered as a session
//!   that ended (`404`): without an owner there is no one it may be used by.
//! - At most [`MAX_SESSIONS_PER_CALLER`] sessions are open per caller (sessions rmcp closed
//!   after their idle time are not counted): one more `initialize` is answered `429` and the
//!   session it opened is closed, so one credential cannot fill the gateway's memory.
//! - At most [`MAX_OWNERS`] sessions are remembered in all; beyond it the oldest tenth is
//!   forgotten *and closed*.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use toolgate_runtime::{ErrorKind, ToolError};

use super::SESSION_HEADER;
use super::sealed::{Seal, Sessions};
use crate::gateway::Caller;
use crate::gateway::security::refused;

/// The most sessions remembered; beyond it the oldest tenth is forgotten and closed.
pub(super) const MAX_OWNERS: usize = 100_000;

/// The most sessions one caller may have open at once.
pub(super) const MAX_SESSIONS_PER_CALLER: usize = 1_000;

/// Who opened each session ([`Caller::principal`]), and rmcp's sessions to close.
pub(super) struct Owners {
    inner: Mutex<Inner>,
    manager: Arc<Sessions>,
    /// `gateway.session_key`: a session another replica opened names its owner in its id.
    seal: Option<Arc<Seal>>,
}

#[derive(Default)]
struct Inner {
    by_session: HashMap<String, (u64, Option<String>)>,
    per_owner: HashMap<Option<String>, usize>,
    next: u64,
}

/// What a session id is to a caller.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Theirs,
    Another,
    Unknown,
}

impl Owners {
    pub(super) fn new(manager: Arc<Sessions>, seal: Option<Arc<Seal>>) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            manager,
            seal,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn seen(&self, session: &str, caller: &Option<String>) -> Seen {
        let known = self.lock().by_session.get(session).map(|(_, o)| o.clone());
        let owner = match known {
            Some(owner) => owner,
            // Not opened here: a sealed id names its owner (another replica opened it).
            None => match self.seal.as_deref().and_then(|seal| seal.open(session)) {
                Some(claims) => {
                    if &claims.owner != caller {
                        return Seen::Another;
                    }
                    let forgotten = self.record(session.to_string(), claims.owner);
                    self.close(forgotten);
                    return Seen::Theirs;
                }
                None => return Seen::Unknown,
            },
        };
        if &owner == caller {
            Seen::Theirs
        } else {
            Seen::Another
        }
    }

    /// How many sessions `owner` has open, once those rmcp closed are forgotten (checked only
    /// when the count reaches the limit).
    async fn open_sessions(&self, owner: &Option<String>) -> usize {
        let count = self.lock().per_owner.get(owner).copied().unwrap_or(0);
        if count < MAX_SESSIONS_PER_CALLER {
            return count;
        }
        let theirs: Vec<String> = self
            .lock()
            .by_session
            .iter()
            .filter(|(_, (_, o))| o == owner)
            .map(|(id, _)| id.clone())
            .collect();
        for id in theirs {
            if !self
                .manager
                .has_session(&Arc::from(id.as_str()))
                .await
                .unwrap_or(true)
            {
                self.forget(&id);
            }
        }
        self.lock().per_owner.get(owner).copied().unwrap_or(0)
    }

    /// Records `session` as `owner`'s; returns the sessions forgotten to make room.
    fn record(&self, session: String, owner: Option<String>) -> Vec<String> {
        let mut inner = self.lock();
        inner.next += 1;
        let n = inner.next;
        *inner.per_owner.entry(owner.clone()).or_insert(0) += 1;
        if let Some((_, before)) = inner.by_session.insert(session, (n, owner))
            && let Some(count) = inner.per_owner.get_mut(&before)
        {
            // The same id recorded again: its earlier owner no longer has it.
            *count = count.saturating_sub(1);
        }
        if inner.by_session.len() <= MAX_OWNERS {
            return Vec::new();
        }
        let mut ages: Vec<u64> = inner.by_session.values().map(|(n, _)| *n).collect();
        ages.sort_unstable();
        let cut = ages[MAX_OWNERS / 10];
        let old: Vec<String> = inner
            .by_session
            .iter()
            .filter(|(_, (n, _))| *n <= cut)
            .map(|(id, _)| id.clone())
            .collect();
        drop(inner);
        for id in &old {
            self.forget(id);
        }
        old
    }

    fn forget(&self, session: &str) {
        let mut inner = self.lock();
        if let Some((_, owner)) = inner.by_session.remove(session)
            && let Some(count) = inner.per_owner.get_mut(&owner)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                inner.per_owner.remove(&owner);
            }
        }
    }

    /// Closes rmcp's sessions `ids` (in the background: the answer does not wait).
    fn close(&self, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        let manager = Arc::clone(&self.manager);
        tokio::spawn(async move {
            for id in ids {
                let _ = manager.close_session(&Arc::from(id.as_str())).await;
            }
        });
    }
}

/// Refuses a request whose `Mcp-Session-Id` another caller opened (403) or that no caller
/// opened (404); records the owner of a session a request opens; forgets a session its
/// `DELETE` ended.
pub(super) async fn bind_sessions(
    State(owners): State<Arc<Owners>>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let caller = request
        .extensions()
        .get::<Caller>()
        .and_then(Caller::principal);
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let delete = request.method() == Method::DELETE;
    if let Some(id) = &session {
        match owners.seen(id, &caller) {
            Seen::Theirs => {}
            Seen::Another => {
                return refused(
                    StatusCode::FORBIDDEN,
                    ToolError::permission_denied(
                        "this MCP session was opened by another caller (another API key or token subject); open your own with initialize",
                    ),
                );
            }
            Seen::Unknown => {
                return refused(
                    StatusCode::NOT_FOUND,
                    ToolError::new(
                        ErrorKind::NotFound,
                        "Session not found: this MCP session ended or is not known here; open a new one with initialize",
                    ),
                );
            }
        }
    }
    let response = next.run(request).await;
    match session {
        None => {
            let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
            else {
                return response;
            };
            if owners.open_sessions(&caller).await >= MAX_SESSIONS_PER_CALLER {
                owners.close(vec![id]);
                return refused(
                    StatusCode::TOO_MANY_REQUESTS,
                    ToolError::new(
                        ErrorKind::RateLimited,
                        format!(
                            "this caller has {MAX_SESSIONS_PER_CALLER} MCP sessions open, the most allowed: end one (DELETE /mcp with its Mcp-Session-Id) or reuse one"
                        ),
                    ),
                );
            }
            let forgotten = owners.record(id, caller);
            owners.close(forgotten);
            response
        }
        Some(id) if delete && response.status().is_success() => {
            owners.forget(&id);
            response
        }
        Some(_) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_are_counted_per_owner_and_forgotten_ones_are_nobody_s() {
        let owners = Owners::new(Arc::new(Sessions::default()), None);
        let alice = Some("token:i#alice".to_string());
        let bob = Some("token:i#bob".to_string());
        assert!(owners.record("s1".into(), alice.clone()).is_empty());
        owners.record("s2".into(), alice.clone());
        owners.record("s3".into(), bob.clone());
        assert_eq!(owners.seen("s1", &alice), Seen::Theirs);
        assert_eq!(owners.seen("s1", &bob), Seen::Another);
        assert_eq!(owners.seen("s1", &None), Seen::Another);
        assert_eq!(owners.seen("nope", &alice), Seen::Unknown);
        assert_eq!(owners.open_sessions(&alice).await, 2);
        owners.forget("s1");
        assert_eq!(owners.open_sessions(&alice).await, 1);
        assert_eq!(owners.seen("s1", &alice), Seen::Unknown);
        assert_eq!(owners.open_sessions(&bob).await, 1);
        // The same id recorded again for another owner moves, it is not counted twice.
        owners.record("s3".into(), alice.clone());
        assert_eq!(owners.open_sessions(&bob).await, 0);
        assert_eq!(owners.open_sessions(&alice).await, 2);
    }

    #[tokio::test]
    async fn at_the_limit_sessions_rmcp_closed_are_not_counted() {
        // None of these is a session of the (empty) manager: all closed, as after their idle
        // time.
        let owners = Owners::new(Arc::new(Sessions::default()), None);
        let alice = Some("key:alice".to_string());
        for i in 0..MAX_SESSIONS_PER_CALLER {
            owners.record(format!("s{i}"), alice.clone());
        }
        assert_eq!(owners.open_sessions(&alice).await, 0);
    }
}
