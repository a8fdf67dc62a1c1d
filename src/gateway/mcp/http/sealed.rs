//! Self-contained MCP session ids (`gateway.session_key`): any replica holding the key resumes
//! a session another replica opened.
//!
//! An `initialize`-era session (MCP 2025-06-18 "Transports", session management) is named by
//! its `Mcp-Session-Id`. Without a key that id is random and the session lives in the memory of
//! the replica that opened it; behind a round-robin load balancer the next request lands on
//! another replica and is answered 404. With a key, the id *is* the session:
//!
//! ```text
//! tg1.<base64url(nonce ‖ AES-256-GCM(key, nonce, claims) ‖ tag)>
//! claims = {"v": 1, "iat": <unix seconds>, "owner": <principal or null>, "init": <initialize params>}
//! ```
//!
//! The claims carry what the handshake settled: the client's `initialize` params (its
//! protocol version, capabilities and name: the negotiated version follows from them), and the
//! caller who opened the session ([`Caller::principal`](crate::gateway::Caller::principal)).
//! A replica that does not hold the session opens the id ([`Seal::open`]) and rmcp re-creates
//! the session from the claims, replaying the handshake (rmcp's session store restore,
//! [`SealedStore`]), before the request is served.
//!
//! Refused, answered 404 like a session that ended (the client opens a new one): an id sealed
//! with another key, any altered byte (GCM's tag), a claim of another version, an id older than
//! [`MAX_AGE`]. An id opened by another caller is refused 403 by the owners layer.
//!
//! Nonces are 96 random bits per id (aws-lc-rs's `RandomizedNonceKey`): with one key, 2³²
//! sessions keep the chance of a repeated nonce below 2⁻³² (NIST SP 800-38D §8.3).
//!
//! What does not travel with the id: a `DELETE` ends the session on the replica that serves
//! it, but the id stays valid elsewhere until [`MAX_AGE`] (there is no shared revocation list);
//! `logging/setLevel` and resource subscriptions are per replica.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_256_GCM, Aad, NONCE_LEN, Nonce, RandomizedNonceKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState, SessionStore,
    SessionStoreError,
};
use serde::{Deserialize, Serialize};

/// How long a sealed id is accepted after the `initialize` that made it.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What every sealed id starts with (its format's version).
const PREFIX: &str = "tg1.";

/// Bound to every sealed id as associated data: a ciphertext made for something else with the
/// same key does not open as a session.
const AAD: &[u8] = b"toolgate mcp session id v1";

/// The largest id handed out (bytes); an `initialize` with bigger params gets a random id that
/// only its replica knows (proxies commonly cap a header near 8 KiB).
const MAX_ID_LEN: usize = 4096;

/// A session key: seals and opens session ids.
pub(crate) struct Seal {
    key: RandomizedNonceKey,
    /// Derives the keys of other uses ([`cursor_key`](Self::cursor_key)).
    derive: aws_lc_rs::hmac::Key,
}

/// What a sealed id carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// The claims' format (1).
    v: u8,
    /// When the session was opened, in seconds since the Unix epoch.
    iat: u64,
    /// Who opened it ([`Caller::principal`](crate::gateway::Caller::principal)); `None`:
    /// an anonymous caller.
    pub(crate) owner: Option<String>,
    /// The client's `initialize` params, as sent.
    init: serde_json::Value,
}

impl Claims {
    pub(crate) fn new(owner: Option<String>, init: serde_json::Value) -> Self {
        Self {
            v: 1,
            iat: now_secs(),
            owner,
            init,
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(<redacted>)")
    }
}

impl Seal {
    /// A seal with the 32 bytes of `gateway.session_key`.
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Self {
            // Only fails for a key of the wrong length, which the type rules out.
            key: RandomizedNonceKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key"),
            derive: aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key),
        }
    }

    /// The session id carrying `claims`; `None` when it would be longer than [`MAX_ID_LEN`] or
    /// the system's randomness failed (the session then gets a random id).
    pub(crate) fn seal(&self, claims: &Claims) -> Option<String> {
        let mut data = serde_json::to_vec(claims).ok()?;
        let nonce = self
            .key
            .seal_in_place_append_tag(Aad::from(AAD), &mut data)
            .ok()?;
        let mut raw = Vec::with_capacity(NONCE_LEN + data.len());
        raw.extend_from_slice(nonce.as_ref());
        raw.extend_from_slice(&data);
        let id = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw));
        (id.len() <= MAX_ID_LEN).then_some(id)
    }

    /// The key of `tools/list` cursor tags, derived from the session key (HMAC-SHA-256 of a
    /// fixed label), so that the session key itself is used for one thing only.
    pub(crate) fn cursor_key(&self) -> [u8; 32] {
        let tag = aws_lc_rs::hmac::sign(&self.derive, b"toolgate tools/list cursors v1");
        let mut key = [0u8; 32];
        key.copy_from_slice(tag.as_ref());
        key
    }

    /// The claims of `id`, when this key sealed it, unaltered, less than [`MAX_AGE`] ago.
    pub(crate) fn open(&self, id: &str) -> Option<Claims> {
        if id.len() > MAX_ID_LEN {
            return None;
        }
        let raw = URL_SAFE_NO_PAD.decode(id.strip_prefix(PREFIX)?).ok()?;
        if raw.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(AAD), &mut sealed)
            .ok()?;
        let claims: Claims = serde_json::from_slice(plain).ok()?;
        let age = now_secs().saturating_sub(claims.iat);
        (claims.v == 1 && age < MAX_AGE.as_secs()).then_some(claims)
    }
}

tokio::task_local! {
    /// The id the session being opened by this request takes (set by the HTTP front around an
    /// `initialize` it sealed an id for).
    static NEXT_ID: SessionId;
}

/// Runs `serve` (rmcp's handling of an `initialize` request) so that the session it opens is
/// named `id`.
pub(crate) async fn opening_as<F: Future>(id: String, serve: F) -> F::Output {
    NEXT_ID.scope(SessionId::from(id), serve).await
}

/// rmcp's in-memory sessions, where a session opened by an `initialize` the HTTP front sealed
/// an id for ([`opening_as`]) takes that id instead of a random one.
#[derive(Default)]
pub(crate) struct Sessions {
    local: LocalSessionManager,
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if let Ok(id) = NEXT_ID.try_with(SessionId::clone) {
            // A fresh session worker under the given id (what a restore makes, before rmcp
            // sends it the client's initialize). A sealed id never repeats (random nonce).
            if let RestoreOutcome::Restored(transport) =
                self.local.restore_session(id.clone()).await?
            {
                return Ok((id, transport));
            }
        }
        self.local.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.local.restore_session(id).await
    }
}

/// rmcp's session store, read from the ids themselves: `load` opens a sealed id and gives its
/// `initialize` params for rmcp to replay; nothing is stored or deleted anywhere.
pub(crate) struct SealedStore {
    seal: Arc<Seal>,
}

impl SealedStore {
    pub(crate) fn new(seal: Arc<Seal>) -> Self {
        Self { seal }
    }
}

#[async_trait::async_trait]
impl SessionStore for SealedStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(claims) = self.seal.open(session_id) else {
            return Ok(None);
        };
        Ok(serde_json::from_value(claims.init)
            .ok()
            .map(SessionState::new))
    }

    async fn store(&self, _: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, _: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() -> serde_json::Value {
        serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": true}},
            "clientInfo": {"name": "probe", "version": "1"}
        })
    }

    #[test]
    fn an_id_opens_with_its_key_only_and_unaltered() {
        let seal = Seal::new(&[7; 32]);
        let claims = Claims::new(Some("key:ci".into()), init());
        let id = seal.seal(&claims).unwrap();
        assert!(id.starts_with(PREFIX));
        assert!(
            id[PREFIX.len()..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "visible ASCII only (MCP session ids): {id}"
        );
        assert_eq!(seal.open(&id), Some(claims.clone()));
        // Two sessions of the same client get two ids (a nonce each).
        assert_ne!(seal.seal(&claims).unwrap(), id);
        // Another key: not a session.
        assert_eq!(Seal::new(&[8; 32]).open(&id), None);
        // Any byte changed: not a session.
        let mut raw = URL_SAFE_NO_PAD.decode(&id[PREFIX.len()..]).unwrap();
        for i in [0, NONCE_LEN, raw.len() - 1] {
            raw[i] ^= 1;
            let altered = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&raw));
            assert_eq!(seal.open(&altered), None, "byte {i} altered");
            raw[i] ^= 1;
        }
        // Not even an id of this form.
        for junk in [
            "",
            "tg1.",
            "tg1.AAAA",
            "random-uuid",
            "tg1.!!!!",
            &"tg1.A".repeat(2000),
        ] {
            assert_eq!(seal.open(junk), None, "{junk:.20}");
        }
    }

    #[test]
    fn an_old_id_is_refused() {
        let seal = Seal::new(&[7; 32]);
        let mut claims = Claims::new(None, init());
        claims.iat = now_secs() - MAX_AGE.as_secs() - 1;
        let id = seal.seal(&claims).unwrap();
        assert_eq!(seal.open(&id), None);
        claims.iat = now_secs() - MAX_AGE.as_secs() + 60;
        assert!(seal.open(&seal.seal(&claims).unwrap()).is_some());
    }

    #[test]
    fn params_too_big_for_a_header_get_no_sealed_id() {
        let seal = Seal::new(&[7; 32]);
        let big = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {"x": "y".repeat(MAX_ID_LEN)}, "clientInfo": {"name": "n", "version": "1"}});
        assert_eq!(seal.seal(&Claims::new(None, big)), None);
    }

    #[tokio::test]
    async fn the_store_gives_the_initialize_params_of_a_sealed_id() {
        let seal = Arc::new(Seal::new(&[7; 32]));
        let id = seal.seal(&Claims::new(None, init())).unwrap();
        let store = SealedStore::new(Arc::clone(&seal));
        let state = store.load(&id).await.unwrap().expect("a session");
        assert_eq!(state.initialize_params.client_info.name, "probe");
        assert!(store.load("nope").await.unwrap().is_none());
    }
}
