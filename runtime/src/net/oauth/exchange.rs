//! Token exchange on behalf of the caller (RFC 8693): each caller who came with an access
//! token gets a credential of its own, whose token requests exchange that access token (the
//! `subject_token`) for one the upstream takes.
//!
//! * The credentials are kept by caller name (at most [`MAX_CALLERS`]; when full, those
//!   without a fresh token go first, then all), so a caller's exchanged token serves its next
//!   calls until shortly before it expires, like a client-credentials token.
//! * A cached token is used only with the subject token it was exchanged from: a caller who
//!   comes with a new access token gets a new exchange.
//! * A call without an access token (an API key, no credential) is refused before anything is
//!   sent: there is nothing to exchange, and the gateway's own token is not the caller's.

use std::sync::{Arc, PoisonError};

use super::ClientCredentials;
use crate::{ToolContext, ToolError};

/// The most callers whose credentials one upstream keeps.
pub const MAX_CALLERS: usize = 10_000;

impl ClientCredentials {
    /// Whether two handles are the same credential (clones of one another).
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether tokens are had by token exchange (`grant: token_exchange`).
    pub fn exchanges(&self) -> bool {
        self.0.client.exchange.is_some() && self.0.subject.is_none()
    }

    /// The credential a request made for `ctx`'s caller uses: `self` for client credentials;
    /// for a token exchange, the caller's own (made on its first call), exchanging the access
    /// token the call came with.
    ///
    /// # Errors
    /// `permission_denied` naming the upstream when the exchange has no token to exchange
    /// (the caller came with an API key, or with no credential).
    pub fn on_behalf(&self, ctx: &ToolContext) -> Result<ClientCredentials, ToolError> {
        if !self.exchanges() {
            return Ok(self.clone());
        }
        let Some(token) = ctx.access_token() else {
            return Err(ToolError::permission_denied(format!(
                "{}: its token is had by exchanging the caller's access token (oauth2 `grant: token_exchange`), and this call came without one (an API key, or no credential): call with an access token from the gateway's identity provider",
                self.0.client.owner
            )));
        };
        let caller = ctx.caller().unwrap_or_default().to_string();
        let mut callers = self
            .0
            .callers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(mine) = callers.get(&caller)
            && let Some(subject) = &mine.0.subject
        {
            *subject.lock().unwrap_or_else(PoisonError::into_inner) = token.clone();
            return Ok(mine.clone());
        }
        if callers.len() >= MAX_CALLERS {
            callers.retain(|_, c| c.fresh().is_some());
            if callers.len() >= MAX_CALLERS {
                callers.clear();
            }
        }
        let mine = ClientCredentials::with_client(
            Arc::clone(&self.0.client),
            Some(token.clone()),
            format!(
                "{} oauth2 exchanged token for {caller}",
                self.0.client.owner
            ),
        );
        callers.insert(caller, mine.clone());
        Ok(mine)
    }
}

#[cfg(test)]
mod tests {
    use toolgate_model::config::Secret;

    use super::*;
    use crate::net::oauth::Digest;

    fn credentials(grant: &str) -> ClientCredentials {
        let config = serde_json::from_value(serde_json::json!({
            "client_id": "gw", "client_secret": "s3cret-exchange", "grant": grant,
            "token_url": "http://127.0.0.1:9/token",
        }))
        .unwrap();
        ClientCredentials::new("MCP server `t`", &config, None).unwrap()
    }

    fn call(caller: &str, token: Option<&str>) -> ToolContext {
        let mut ctx = ToolContext::builder().caller(caller);
        if let Some(t) = token {
            ctx = ctx.access_token(Secret::new(t));
        }
        ctx.build()
    }

    #[test]
    fn a_call_without_an_access_token_has_nothing_to_exchange_and_is_refused() {
        let e = credentials("token_exchange")
            .on_behalf(&call("ci", None))
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::PermissionDenied);
        assert!(
            e.message()
                .starts_with("MCP server `t`: its token is had by exchanging")
                && e.message().contains("came without one"),
            "{}",
            e.message()
        );
        // Client credentials need no caller token.
        let own = credentials("client_credentials");
        assert!(own.on_behalf(&call("ci", None)).unwrap().same(&own));
    }

    #[test]
    fn each_caller_has_one_credential_which_follows_the_token_it_came_with_last() {
        let base = credentials("token_exchange");
        let alice = base.on_behalf(&call("i#alice", Some("token-a1"))).unwrap();
        assert!(!alice.same(&base) && !alice.exchanges());
        let again = base.on_behalf(&call("i#alice", Some("token-a2"))).unwrap();
        assert!(again.same(&alice));
        let digest = alice.subject_digest();
        let expected: Digest = {
            use sha2::Digest as _;
            sha2::Sha256::digest(b"token-a2").into()
        };
        assert_eq!(digest, Some(expected));
        let bob = base.on_behalf(&call("i#bob", Some("token-b1"))).unwrap();
        assert!(!bob.same(&alice));
    }
}
