//! Console sessions: a random id in an `HttpOnly`, `SameSite=Strict` cookie, the signed-in
//! caller kept on the server under it, until the session expires or the caller signs out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};

use crate::gateway::Caller;

/// The name of the session cookie.
pub(crate) const COOKIE: &str = "toolgate_console";

/// How long a session lasts from sign-in (8 hours; an access token's own expiry, when
/// earlier, ends it sooner).
pub(crate) const TTL: Duration = Duration::from_secs(8 * 3600);

/// The most sessions kept at once; past it the oldest is dropped.
const MAX_SESSIONS: usize = 10_000;
/// The most sessions one credential (an API key, or a token's caller) holds: signing in again
/// beyond it ends that credential's oldest session, not another caller's.
pub(crate) const MAX_SESSIONS_PER_CALLER: usize = 32;

/// What the console may do for a signed-in caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads every page; may call the tools the caller may call (as over REST or MCP).
    Viewer,
    /// A viewer who may also change the gateway: approve changed tools.
    Admin,
}

impl Role {
    /// The role of `caller`: `Admin` when it has the role `admin` (an API key's `roles`, or
    /// the roles an access token's claims map to), else `Viewer`. `open`: the gateway takes no
    /// credential at all, so anyone who can reach it may already do anything: `Admin`.
    pub fn of(caller: &Caller, open: bool) -> Self {
        if open || caller.roles.iter().any(|r| r == "admin") {
            Self::Admin
        } else {
            Self::Viewer
        }
    }

    /// `viewer` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Admin => "admin",
        }
    }
}

/// One signed-in browser.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The session's id (the cookie's value).
    pub(crate) id: String,
    /// Who signed in.
    pub(crate) caller: Caller,
    /// What the console lets them do.
    pub(crate) role: Role,
    /// The token every form of this session carries (`csrf` field), checked on each POST.
    pub(crate) csrf: String,
    /// The digest of the API key the session was made with (never the key): each request
    /// finds the key's caller again, so that a key a reload removed ends the session and a
    /// key whose roles changed changes the session's role. `None` for an access token (the
    /// session ends when it expires) or a gateway without credentials.
    pub(crate) key_digest: Option<[u8; 32]>,
    expires: Instant,
}

/// Every session, by id.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes from the system's generator, as 64 hex digits.
fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    // aws-lc-rs' generator only fails when the system has none; no session is made then.
    aws_lc_rs::rand::fill(&mut bytes).expect("the system's random number generator failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Sessions {
    /// A new session for `caller`, lasting `ttl` (at most [`TTL`]).
    pub(crate) fn create(
        &self,
        caller: Caller,
        role: Role,
        key_digest: Option<[u8; 32]>,
        ttl: Duration,
    ) -> Session {
        let session = Session {
            id: random_hex(),
            caller,
            role,
            csrf: random_hex(),
            key_digest,
            expires: Instant::now() + ttl.min(TTL),
        };
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        map.retain(|_, s| s.expires > now);
        let same = |s: &Session| {
            s.key_digest == session.key_digest && s.caller.name == session.caller.name
        };
        if map.values().filter(|s| same(s)).count() >= MAX_SESSIONS_PER_CALLER
            && let Some(oldest) = map
                .values()
                .filter(|s| same(s))
                .min_by_key(|s| s.expires)
                .map(|s| s.id.clone())
        {
            map.remove(&oldest);
        }
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.values().min_by_key(|s| s.expires).map(|s| s.id.clone())
        {
            map.remove(&oldest);
        }
        map.insert(session.id.clone(), session.clone());
        session
    }

    /// The live session whose id the request's cookie carries.
    pub(crate) fn find(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers)?;
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(&id);
                None
            }
            None => None,
        }
    }

    /// Ends session `id`.
    pub(crate) fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// The session cookie's value, if the request has one.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value that stores `session` in the browser: `HttpOnly` (no script reads
/// it), `SameSite=Strict` (no other site's page sends it), for `/console` only.
pub(crate) fn set_cookie(session: &Session) -> String {
    let max_age = session
        .expires
        .saturating_duration_since(Instant::now())
        .as_secs();
    format!(
        "{COOKIE}={}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age}",
        session.id
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// Whether `given` is the session's CSRF token (compared in constant time).
pub(crate) fn csrf_matches(session: &Session, given: Option<&str>) -> bool {
    use subtle::ConstantTimeEq as _;
    given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(session.csrf.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_session_is_found_by_its_cookie_and_ends_when_removed() {
        let sessions = Sessions::default();
        let caller = Caller {
            name: Some("ann".into()),
            ..Caller::default()
        };
        let s = sessions.create(caller, Role::Viewer, None, TTL);
        assert_eq!(s.id.len(), 64);
        assert_ne!(s.id, s.csrf);
        let headers = with_cookie(&format!("other=1; {COOKIE}={}", s.id));
        assert_eq!(
            sessions.find(&headers).unwrap().caller.name.as_deref(),
            Some("ann")
        );
        assert!(
            sessions
                .find(&with_cookie(&format!("{COOKIE}={}", "0".repeat(64))))
                .is_none()
        );
        assert!(
            sessions
                .find(&with_cookie(&format!("{COOKIE}=short")))
                .is_none()
        );
        sessions.remove(&s.id);
        assert!(sessions.find(&headers).is_none());
    }

    #[test]
    fn an_expired_session_is_not_found() {
        let sessions = Sessions::default();
        let s = sessions.create(Caller::default(), Role::Admin, None, Duration::ZERO);
        assert!(
            sessions
                .find(&with_cookie(&format!("{COOKIE}={}", s.id)))
                .is_none()
        );
    }

    #[test]
    fn the_csrf_token_must_be_the_sessions_own() {
        let sessions = Sessions::default();
        let s = sessions.create(Caller::default(), Role::Admin, None, TTL);
        assert!(csrf_matches(&s, Some(&s.csrf)));
        assert!(!csrf_matches(&s, None));
        assert!(!csrf_matches(&s, Some("")));
        assert!(!csrf_matches(&s, Some(&s.id)));
    }

    #[test]
    fn only_the_admin_role_administers_unless_the_gateway_is_open() {
        let admin = Caller {
            roles: vec!["reader".into(), "admin".into()],
            ..Caller::default()
        };
        let reader = Caller {
            roles: vec!["reader".into()],
            ..Caller::default()
        };
        assert_eq!(Role::of(&admin, false), Role::Admin);
        assert_eq!(Role::of(&reader, false), Role::Viewer);
        assert_eq!(Role::of(&Caller::default(), true), Role::Admin);
    }
}

/// The call-log streams each session holds open (see
/// [`STREAMS_PER_SESSION`](super::pages::STREAMS_PER_SESSION)).
#[derive(Default)]
pub(crate) struct StreamSlots {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl StreamSlots {
    /// A slot for one more stream of `session`, or `None` when it holds `max` already. The
    /// slot is given back when dropped (the stream ended).
    pub(crate) fn open(&self, session: &str, max: usize) -> Option<StreamSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(session.to_string()).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(StreamSlot {
            open: Arc::clone(&self.open),
            session: session.to_string(),
        })
    }
}

/// One open stream's place among its session's (see [`StreamSlots::open`]).
pub(crate) struct StreamSlot {
    open: Arc<Mutex<HashMap<String, usize>>>,
    session: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.session) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.session);
            }
        }
    }
}
