//! [`SharedStore`]: the connection to Redis, each command bounded, its outcome recorded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Cmd, FromRedisValue, Script};
use toolgate_model::config::{FailMode, FailModes, RedisStore};
use toolgate_model::secrets::Field;

use super::{Failure, Feature, STORE_ERRORS_TOTAL, StoreError, StoreHealth};

/// A warning that a feature decides in memory (`fail: open`) is logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// How many times one reconnection tries before the command waiting on it fails (the next
/// command starts another round): with [`RETRY_MIN_DELAY`] doubling, a round is short.
const RECONNECT_RETRIES: usize = 3;
/// The first delay between two connection attempts of one round.
const RETRY_MIN_DELAY: Duration = Duration::from_millis(50);
/// The longest delay between two connection attempts.
const RETRY_MAX_DELAY: Duration = Duration::from_secs(2);

/// A handle on the Redis (or Valkey) server that the rate limits and budgets of one or more
/// toolsets share (see [`crate::store`]). Cheap to clone: clones share the connection.
///
/// Made by [`connect`](Self::connect) without talking to the server: the connection is opened
/// by the first command (in a Tokio runtime), and opened again by itself, with backoff, after it
/// broke. A server that is down when the gateway starts is therefore no start-up error: the
/// [fail modes](FailModes) cover the calls until it answers.
#[derive(Clone)]
pub struct SharedStore(Arc<Inner>);

struct Inner {
    client: ::redis::Client,
    /// Made on the first command (it needs a Tokio runtime, [`connect`](SharedStore::connect)
    /// does not).
    manager: OnceLock<ConnectionManager>,
    prefix: String,
    timeout: Duration,
    connect_timeout: Duration,
    fail: FailModes,
    address: String,
    /// This replica's id in [notices](super::Notice): 16 random hex digits, made at connect.
    replica: String,
    /// The last command's outcome: `None` before the first one.
    last: Mutex<Option<Result<(), String>>>,
    /// When each feature last logged that it decides in memory, in ms since `started` (+1; 0:
    /// never).
    warned: [AtomicU64; Feature::COUNT],
    started: Instant,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("address", &self.0.address)
            .field("prefix", &self.0.prefix)
            .finish_non_exhaustive()
    }
}

impl SharedStore {
    /// A store for `config`: its URL resolved (`${REDIS_URL}`; the password in it is
    /// remembered as a secret, so that it is masked wherever it would be logged), checked, and
    /// the client set up with `timeout_ms` as its response timeout and `connect_timeout_ms` as
    /// the bound of each connection attempt. Nothing is sent yet; no Tokio runtime is needed.
    ///
    /// # Errors
    /// [`StoreError::Interpolation`] when the URL names a variable that is not set;
    /// [`StoreError::Url`] when it is no `redis://`, `rediss://` or `unix://` URL. Neither
    /// shows the password.
    pub fn connect(config: &RedisStore) -> Result<Self, StoreError> {
        let url = config
            .url
            .resolve_as(Field::Plain)
            .map_err(|e| StoreError::Interpolation(e.to_string()))?;
        let parsed = url::Url::parse(url.expose()).map_err(|e| StoreError::Url(e.to_string()))?;
        if let Some(password) = parsed.password() {
            let decoded = percent_decode(password);
            toolgate_model::secrets::remember(&decoded);
            toolgate_model::secrets::remember(password);
        }
        if !matches!(
            parsed.scheme(),
            "redis" | "rediss" | "valkey" | "valkeys" | "unix" | "redis+unix"
        ) {
            return Err(StoreError::Url(format!(
                "scheme `{}` (expected redis://, rediss:// or unix://)",
                parsed.scheme()
            )));
        }
        let client = ::redis::Client::open(url.expose())
            .map_err(|e| StoreError::Url(crate::redact::text(&e.to_string()).into_owned()))?;
        let info = client.get_connection_info();
        let address = format!("{}/{}", info.addr(), info.redis_settings().db());
        Ok(Self(Arc::new(Inner {
            client,
            manager: OnceLock::new(),
            prefix: config.prefix().to_string(),
            timeout: config.timeout(),
            connect_timeout: config.connect_timeout(),
            fail: config.fail.clone(),
            address,
            replica: uuid::Uuid::new_v4().simple().to_string()[..16].to_string(),
            last: Mutex::new(None),
            warned: std::array::from_fn(|_| AtomicU64::new(0)),
            started: Instant::now(),
        })))
    }

    /// What the last command met (no secret in it): for `/readyz` and the like.
    pub fn health(&self) -> StoreHealth {
        let last = self.0.last.lock().unwrap_or_else(|p| p.into_inner());
        StoreHealth {
            store: "redis",
            address: self.0.address.clone(),
            last_ok: last.as_ref().map(Result::is_ok),
            last_error: last.as_ref().and_then(|r| r.as_ref().err().cloned()),
        }
    }

    /// What every key starts with (then `:`): `store.redis.key_prefix`, default `toolgate`.
    pub fn key_prefix(&self) -> &str {
        &self.0.prefix
    }

    /// The bound of one command (`store.redis.timeout_ms`).
    pub fn timeout(&self) -> Duration {
        self.0.timeout
    }

    /// The bound of one connection attempt (`store.redis.connect_timeout_ms`).
    pub fn connect_timeout(&self) -> Duration {
        self.0.connect_timeout
    }

    /// This replica's id in [notices](super::Notice): 16 hex digits, random per
    /// [`connect`](Self::connect).
    pub fn replica(&self) -> &str {
        &self.0.replica
    }

    /// The client, for connections of their own (the pub/sub subscription).
    pub(crate) fn client(&self) -> &::redis::Client {
        &self.0.client
    }

    /// What `feature` does while the store cannot answer (notices and the readiness check
    /// decide nothing: open).
    pub(crate) fn fail_mode(&self, feature: Feature) -> FailMode {
        match feature {
            Feature::RateLimits => self.0.fail.rate_limits,
            Feature::Budgets => self.0.fail.budgets,
            Feature::Cache => self.0.fail.cache,
            Feature::Breakers
            | Feature::Pins
            | Feature::Results
            | Feature::Notices
            | Feature::Readiness => FailMode::Open,
        }
    }

    /// Sends `PING` and says how long the answer took, for `/readyz`.
    ///
    /// # Errors
    /// The failure (timeout or the client's error, secrets masked), also recorded in
    /// [`health`](Self::health).
    pub async fn ping(&self) -> Result<Duration, String> {
        let started = Instant::now();
        let pong: Result<String, Failure> =
            self.query(&::redis::cmd("PING"), Feature::Readiness).await;
        pong.map(|_| started.elapsed()).map_err(|f| f.to_string())
    }

    /// The connection manager, made on first use (lazily connected).
    fn manager(&self) -> Result<ConnectionManager, Failure> {
        if let Some(m) = self.0.manager.get() {
            return Ok(m.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(self.0.timeout))
            .set_connection_timeout(Some(self.0.connect_timeout))
            .set_number_of_retries(RECONNECT_RETRIES)
            .set_min_delay(RETRY_MIN_DELAY)
            .set_max_delay(RETRY_MAX_DELAY);
        let made = ConnectionManager::new_lazy_with_config(self.0.client.clone(), config)
            .map_err(|e| Failure::Redis(crate::redact::text(&e.to_string()).into_owned()))?;
        // Two first calls at once: one manager wins, the other is dropped unused.
        Ok(self.0.manager.get_or_init(|| made).clone())
    }

    /// Runs `script` on `keys` and `args`, within the store's timeout (reconnecting included);
    /// records the outcome (health, [`STORE_ERRORS_TOTAL`]).
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[u64],
        feature: Feature,
    ) -> Result<T, Failure> {
        let conn = self.manager();
        self.bounded(feature, async move {
            let mut conn = conn?;
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(key);
            }
            for arg in args {
                invocation.arg(*arg);
            }
            invocation
                .invoke_async(&mut conn)
                .await
                .map_err(|e| Failure::from_redis(&e, self.0.timeout))
        })
        .await
    }

    /// Sends `command`, within the store's timeout (reconnecting included); records the outcome
    /// like [`run`](Self::run).
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        command: &Cmd,
        feature: Feature,
    ) -> Result<T, Failure> {
        let conn = self.manager();
        self.bounded(feature, async move {
            let mut conn = conn?;
            command
                .query_async(&mut conn)
                .await
                .map_err(|e| Failure::from_redis(&e, self.0.timeout))
        })
        .await
    }

    /// `command` within the store's timeout, its outcome recorded (health, and
    /// [`STORE_ERRORS_TOTAL`] under `feature` for a failure).
    async fn bounded<T>(
        &self,
        feature: Feature,
        command: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let outcome = match tokio::time::timeout(self.0.timeout, command).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::Timeout(self.0.timeout)),
        };
        let mut last = self.0.last.lock().unwrap_or_else(|p| p.into_inner());
        match &outcome {
            Ok(_) => *last = Some(Ok(())),
            Err(failure) => {
                *last = Some(Err(failure.to_string()));
                metrics::counter!(STORE_ERRORS_TOTAL, "feature" => feature.as_str()).increment(1);
            }
        }
        outcome
    }

    /// Logs (at most every [`WARN_EVERY`] per feature) that `feature` decides in memory.
    pub(crate) fn warn_open(&self, feature: Feature, failure: &Failure) {
        let now = self.0.started.elapsed().as_millis() as u64 + 1;
        let last = &self.0.warned[feature.index()];
        let before = last.load(Ordering::Relaxed);
        let due = before == 0 || now.saturating_sub(before) >= WARN_EVERY.as_millis() as u64;
        if due
            && last
                .compare_exchange(before, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                store = "redis",
                feature = feature.as_str(),
                "shared store (Redis) {failure}; {} decided by this replica alone \
                 (store.redis.fail.{}: open)",
                feature.as_str().replace('_', " "),
                feature.as_str()
            );
        }
    }
}

/// `%XX` sequences decoded (a password in a URL's user info).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(url: &str) -> Result<SharedStore, StoreError> {
        let config: RedisStore = serde_json::from_value(serde_json::json!({"url": url})).unwrap();
        SharedStore::connect(&config)
    }

    #[test]
    fn a_url_is_checked_and_its_password_never_shown() {
        let s = store("redis://user:s3cret-pw-4f1c@127.0.0.1:6390/2").unwrap();
        let health = s.health();
        assert_eq!(health.address, "127.0.0.1:6390/2");
        assert_eq!(health.last_ok, None);
        assert_eq!(s.key_prefix(), "toolgate");
        assert_eq!(s.timeout(), Duration::from_millis(250));
        assert!(!format!("{s:?}").contains("s3cret"));
        assert_eq!(
            crate::redact::text("pw s3cret-pw-4f1c"),
            format!("pw {}", toolgate_model::secrets::REDACTED)
        );
        let e = store("http://h:1").unwrap_err();
        assert!(e.to_string().contains("scheme `http`"), "{e}");
        let e = store("not a url at all").unwrap_err();
        assert!(matches!(e, StoreError::Url(_)), "{e}");
        let e = store("${TOOLGATE_TEST_UNSET_REDIS_URL_9d1}").unwrap_err();
        assert!(matches!(e, StoreError::Interpolation(_)), "{e}");
    }

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(percent_decode("a%40b%2"), "a@b%2");
    }
}
