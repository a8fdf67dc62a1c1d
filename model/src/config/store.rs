//! The `store:` section: where state shared by several gateway replicas lives.
//!
//! Without it (the default) every replica keeps its rate-limit buckets and budgets in its own
//! memory, as one process always did. With `store.redis`, replicas behind one load balancer
//! share them through Redis (or Valkey): a per-caller limit of 60/m admits 60 calls across all
//! replicas, not 60 per replica.

use serde::{Deserialize, Serialize};

use super::interpolate::Interpolated;

/// The default bound of one Redis command, in milliseconds ([`RedisStore::timeout_ms`]).
pub const DEFAULT_REDIS_TIMEOUT_MS: u64 = 250;

/// The default bound of one connection attempt, in milliseconds
/// ([`RedisStore::connect_timeout_ms`]).
pub const DEFAULT_REDIS_CONNECT_TIMEOUT_MS: u64 = 1_000;

/// The default prefix of every key toolgate writes ([`RedisStore::key_prefix`]).
pub const DEFAULT_REDIS_PREFIX: &str = "toolgate";

/// `store:`:
///
/// ```yaml
/// store:
///   redis:
///     url: "${REDIS_URL}"          # redis://[user:password@]host:port[/db], rediss:// for TLS
///     key_prefix: toolgate         # every key starts with `toolgate:`
///     timeout_ms: 250              # each command; on expiry the feature's fail mode applies
///     connect_timeout_ms: 1000
///     fail: {rate_limits: closed, budgets: closed, cache: open}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Shared state in Redis or Valkey. Absent: every replica keeps its own, in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisStore>,
}

impl StoreConfig {
    /// Whether nothing is set (state stays in the process).
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// `store.redis`: one Redis (or Valkey) server shared by the replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisStore {
    /// The server: `redis://[user:password@]host:port[/db]`, `rediss://...` for TLS, normally
    /// `${REDIS_URL}` (a password in it is a secret: never logged, never in an error).
    pub url: Interpolated,
    /// What every key starts with, then `:` (default `toolgate`): replicas of one gateway share
    /// a prefix; two gateways on one server keep apart with two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    /// The longest one command may take, in milliseconds (default 250), connecting again
    /// included; beyond it the command counts as failed and the feature's
    /// [fail mode](FailModes) applies. Keep it well inside the tools' timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The longest one connection attempt may take, in milliseconds (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
    /// What each shared feature does while Redis cannot answer.
    #[serde(default, skip_serializing_if = "FailModes::is_default")]
    pub fail: FailModes,
}

impl RedisStore {
    /// [`key_prefix`](Self::key_prefix) or [`DEFAULT_REDIS_PREFIX`].
    pub fn prefix(&self) -> &str {
        self.key_prefix.as_deref().unwrap_or(DEFAULT_REDIS_PREFIX)
    }

    /// [`timeout_ms`](Self::timeout_ms) or [`DEFAULT_REDIS_TIMEOUT_MS`], as a duration.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_REDIS_TIMEOUT_MS))
    }

    /// [`connect_timeout_ms`](Self::connect_timeout_ms) or
    /// [`DEFAULT_REDIS_CONNECT_TIMEOUT_MS`], as a duration.
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.connect_timeout_ms
                .unwrap_or(DEFAULT_REDIS_CONNECT_TIMEOUT_MS),
        )
    }
}

/// `store.redis.fail`: per shared feature, what a call meets while Redis is down or slower
/// than `timeout_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailModes {
    /// Rate limits (default `closed`).
    #[serde(default, skip_serializing_if = "FailMode::is_closed")]
    pub rate_limits: FailMode,
    /// Budgets (default `closed`).
    #[serde(default, skip_serializing_if = "FailMode::is_closed")]
    pub budgets: FailMode,
    /// The shared result cache, the L2 behind each replica's in-process cache (default
    /// `open`: a result that cannot be read from or written to Redis is computed by the
    /// backend, as without a store; `closed` refuses the call instead).
    #[serde(default = "FailMode::open", skip_serializing_if = "FailMode::is_open")]
    pub cache: FailMode,
}

impl Default for FailModes {
    fn default() -> Self {
        Self {
            rate_limits: FailMode::Closed,
            budgets: FailMode::Closed,
            cache: FailMode::Open,
        }
    }
}

impl FailModes {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// What a shared feature does while its store cannot answer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// The call is refused with a retryable `network` error naming the store (nothing runs,
    /// nothing is charged): no limit or budget is ever exceeded because Redis was down.
    #[default]
    Closed,
    /// The replica decides alone, with its own in-memory state (each replica then admits up to
    /// the whole limit or budget by itself), and logs that it does.
    Open,
}

impl FailMode {
    fn is_closed(&self) -> bool {
        *self == Self::Closed
    }

    fn is_open(&self) -> bool {
        *self == Self::Open
    }

    fn open() -> Self {
        Self::Open
    }
}

/// The 32 bytes of a `gateway.session_key` (AES-256): 64 hex digits, or standard base64
/// (with or without padding) of 32 bytes. Surrounding white space is ignored.
///
/// # Errors
/// Why the text is no key, completing "`session_key` ...": its length, never its content.
pub fn session_key_bytes(text: &str) -> Result<[u8; 32], String> {
    use base64::Engine as _;
    let text = text.trim();
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        return Ok(key);
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
        .map_err(|_| {
            format!(
                "is neither 64 hex digits nor base64 ({} characters)",
                text.chars().count()
            )
        })?;
    <[u8; 32]>::try_from(decoded.as_slice()).map_err(|_| {
        format!(
            "must be 32 bytes (AES-256); it decodes to {} bytes",
            decoded.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::session_key_bytes;

    #[test]
    fn a_session_key_is_32_bytes_in_hex_or_base64() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let key = session_key_bytes(hex).unwrap();
        assert_eq!(key[1], 0x11);
        assert_eq!(key[31], 0xff);
        let b64 = "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=";
        assert_eq!(session_key_bytes(b64).unwrap(), key);
        assert_eq!(session_key_bytes(b64.trim_end_matches('=')).unwrap(), key);
        let short = session_key_bytes("c2hvcnQ=").unwrap_err();
        assert!(short.contains("decodes to 5 bytes"), "{short}");
        let junk = session_key_bytes("not a key!").unwrap_err();
        assert!(junk.contains("neither 64 hex digits nor base64"), "{junk}");
        assert!(
            !junk.contains("not a key"),
            "the text itself is not echoed: {junk}"
        );
    }
}
