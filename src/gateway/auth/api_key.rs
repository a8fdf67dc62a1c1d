//! API keys from tools.yaml (`gateway.api_keys`): found by digest, compared in constant time.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use toolgate_runtime::ToolError;

use crate::gateway::Caller;

/// One configured API key: the SHA-256 digest of the key (the key itself is not kept) and the
/// caller its requests run as.
///
/// A request's key is hashed and the two 32-byte digests compared in constant time
/// (`subtle`), so the time a check takes depends neither on how much of a key was right nor
/// on its length (comparing the keys themselves would stop at a length mismatch).
#[derive(Clone)]
pub(crate) struct ApiKey {
    digest: [u8; 32],
    caller: Caller,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("caller", &self.caller)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    pub(crate) fn new(key: &toolgate_model::config::Secret, caller: Caller) -> Self {
        Self {
            digest: Self::digest(key.expose().as_bytes()),
            caller,
        }
    }

    fn digest(key: &[u8]) -> [u8; 32] {
        Sha256::digest(key).into()
    }
}

/// The caller whose key `given` is.
///
/// # Errors
/// `permission_denied` when no key matches.
pub(crate) fn find(keys: &[ApiKey], given: &str) -> Result<Caller, ToolError> {
    find_digest(keys, &digest(given))
}

/// The SHA-256 digest of key `given`: what a console session keeps of the key it signed in
/// with (never the key), to find its caller again on each request ([`find_digest`]).
pub(crate) fn digest(given: &str) -> [u8; 32] {
    ApiKey::digest(given.as_bytes())
}

/// The caller whose key's digest is `given`, compared in constant time as [`find`] does.
///
/// # Errors
/// `permission_denied` when no key matches (the key was removed by a reload).
pub(crate) fn find_digest(keys: &[ApiKey], given: &[u8; 32]) -> Result<Caller, ToolError> {
    // Every key is compared, whichever matches: the time taken says nothing about which did.
    let mut found = None;
    for key in keys {
        if bool::from(key.digest.ct_eq(given)) {
            found = found.or(Some(&key.caller));
        }
    }
    found
        .cloned()
        .ok_or_else(|| ToolError::permission_denied("the API key is not valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(keys: &[(&str, &str)]) -> Vec<ApiKey> {
        keys.iter()
            .map(|(name, key)| {
                ApiKey::new(
                    &toolgate_model::config::Secret::new(*key),
                    Caller {
                        name: Some((*name).to_string()),
                        ..Caller::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn keys_are_found_by_digest_and_only_whole() {
        let keys = keys(&[("a", "key-one"), ("b", "key-two")]);
        let caller = |key: &str| find(&keys, key).map(|c| c.name);
        assert_eq!(caller("key-one").unwrap().as_deref(), Some("a"));
        assert_eq!(caller("key-two").unwrap().as_deref(), Some("b"));
        for wrong in ["key-on", "key-one!", "key-onf", "", "KEY-ONE"] {
            assert!(caller(wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn a_key_is_compared_as_a_digest_whatever_its_length() {
        // What is compared is always two 32-byte digests, never the keys: a key of another
        // length is no shortcut (the compare of the keys themselves stopped at the length).
        let short = ApiKey::digest(b"k");
        let long = ApiKey::digest(&[b'k'; 4096]);
        assert_eq!((short.len(), long.len()), (32, 32));
        assert_ne!(short, long);
        let key = ApiKey::new(&toolgate_model::config::Secret::new("k"), Caller::default());
        assert_eq!(key.digest, short);
        assert!(!format!("{key:?}").contains("digest"), "{key:?}");
    }
}
