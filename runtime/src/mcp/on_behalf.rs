//! MCP servers whose token is had by token exchange (RFC 8693, `oauth2: {grant:
//! token_exchange}`): each caller's calls go on a session of the caller's own, authenticated
//! with the token exchanged from the caller's access token. A server binds a session to the
//! credential that opened it (the Python SDK answers another credential's request on it with
//! 404), and one caller's token must never serve another.
//!
//! The listing (at start-up, on refresh) goes on the shared session, with a client-credentials
//! token of the same client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::session::Client;
use crate::net::oauth::ClientCredentials;
use crate::{ToolContext, ToolError};

/// The most callers with a session of their own on one server; past it the sessions are
/// closed (a caller's next call opens a new one).
const MAX_SESSIONS: usize = 1_000;

/// The callers' clients of one server.
pub(crate) struct Callers {
    /// The server's credential (its `exchanges()` is true).
    base: ClientCredentials,
    clients: Mutex<HashMap<String, (ClientCredentials, Arc<Client>)>>,
}

impl Callers {
    /// The callers of a server whose `oauth2` is `oauth`, when it exchanges tokens.
    pub(crate) fn new(oauth: Option<&ClientCredentials>) -> Option<Arc<Self>> {
        let base = oauth.filter(|o| o.exchanges())?.clone();
        Some(Arc::new(Self {
            base,
            clients: Mutex::new(HashMap::new()),
        }))
    }

    /// The client `ctx`'s caller calls through (made from `shared` on its first call).
    ///
    /// # Errors
    /// `permission_denied` when the call came without an access token to exchange.
    pub(crate) fn client(
        &self,
        shared: &Client,
        ctx: &ToolContext,
    ) -> Result<Arc<Client>, ToolError> {
        let credential = self.base.on_behalf(ctx)?;
        let caller = ctx.caller().unwrap_or_default().to_string();
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((c, client)) = clients.get(&caller)
            && c.same(&credential)
        {
            return Ok(Arc::clone(client));
        }
        if clients.len() >= MAX_SESSIONS {
            for (_, (_, client)) in clients.drain() {
                tokio::spawn(async move { client.close().await });
            }
        }
        let client = shared.for_caller(credential.clone());
        if let Some((_, old)) = clients.insert(caller, (credential, Arc::clone(&client))) {
            tokio::spawn(async move { old.close().await });
        }
        Ok(client)
    }

    /// Closes every caller's session.
    pub(crate) async fn close(&self) {
        let clients: Vec<_> = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, (_, c))| c)
            .collect();
        for client in clients {
            client.close().await;
        }
    }
}
