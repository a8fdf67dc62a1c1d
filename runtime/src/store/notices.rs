//! Notices between replicas: Redis pub/sub on the channel `{prefix}:notices`.
//!
//! A replica publishes a [`Notice`] when something changed that the other replicas cannot see
//! by themselves (today: an MCP server behind the gateway said its tools changed, on the one
//! upstream session that this replica holds). Every replica subscribes; it ignores its own
//! notices and acts on the others'. A notice is a hint, never state: one lost while Redis was
//! unreachable is made up for by a [`Notice::Resync`] delivered to the replica itself when its
//! subscription comes back.
//!
//! The payload is JSON, `{"v": 1, "replica": "<16 hex digits>", "kind": "tools_changed",
//! "source": "<source id>"}`; a payload of another version or kind, or longer than
//! [`MAX_PAYLOAD`], is logged at debug level and dropped, so older and newer replicas can share
//! one channel.

use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::redis::SharedStore;
use super::{Failure, Feature};

/// The longest notice payload read (bytes). Notices are a few dozen bytes; a longer message on
/// the channel is no notice of ours.
pub(crate) const MAX_PAYLOAD: usize = 16 * 1024;

/// How often the subscription connection is checked with a `PING` (a connection whose server
/// vanished without a reset would otherwise wait for messages forever).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The first wait before subscribing again after the subscription broke; doubled up to
/// [`RESUBSCRIBE_MAX`], back to this after a subscription succeeded.
const RESUBSCRIBE_MIN: Duration = Duration::from_millis(50);
/// The longest wait between two subscription attempts.
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(2);

/// What one replica tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// The MCP server behind source `source` said its tools changed (MCP
    /// `notifications/tools/list_changed`): list them again.
    ToolsChanged {
        /// The source's id (tools.yaml `mcp[].id`).
        source: String,
    },
    /// The circuit breaker of source `source` opened on the sender (see
    /// [`crate::policy`]'s breaker layer): open it here too, for `open_ms` from now.
    BreakerOpened {
        /// The source's id.
        source: String,
        /// How long the sender's breaker stays open from when it sent this, in milliseconds.
        open_ms: u64,
        /// Why it opened (`5 consecutive failures (last: ...)`), for the refusal's message.
        reason: String,
    },
    /// The circuit breaker of source `source` closed on the sender (its probe call
    /// succeeded): close it here too.
    BreakerClosed {
        /// The source's id.
        source: String,
    },
    /// Tool approvals changed in the store (`toolgate approve`, or a new tool pinned on first
    /// use): read them again.
    PinsChanged,
    /// Never sent: given to the replica's own handler when its subscription is made again
    /// after it broke, since notices published meanwhile were lost (pub/sub keeps nothing).
    #[serde(skip)]
    Resync,
}

/// A notice on the wire: the protocol version and the sender beside it.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    v: u32,
    replica: String,
    #[serde(flatten)]
    notice: Notice,
}

impl SharedStore {
    /// The channel notices go through: `{prefix}:notices`.
    pub fn notice_channel(&self) -> String {
        format!("{}:notices", self.key_prefix())
    }

    /// Publishes `notice` to the other replicas, bounded by the store's `timeout_ms`. A failure
    /// is counted (`feature="notices"`) and logged; it is never the caller's error, since a
    /// lost notice only delays what the others learn.
    pub async fn publish(&self, notice: &Notice) {
        let payload = match serde_json::to_string(&Envelope {
            v: 1,
            replica: self.replica().to_string(),
            notice: notice.clone(),
        }) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode a notice");
                return;
            }
        };
        let mut command = ::redis::cmd("PUBLISH");
        command.arg(self.notice_channel()).arg(payload);
        match self.query::<i64>(&command, Feature::Notices).await {
            Ok(receivers) => tracing::debug!(?notice, receivers, "notice published"),
            Err(failure) => {
                tracing::warn!(
                    ?notice,
                    "shared store (Redis) {failure}; notice not published"
                )
            }
        }
    }

    /// Subscribes to the notice channel and calls `handle` with every other replica's notice,
    /// in order, until `stop` is cancelled. Never returns before: when the subscription
    /// breaks (Redis restarted, the connection reset or silent for longer than a keep-alive
    /// `PING` allows) it subscribes again with backoff (50 ms doubling to 2 s), then hands
    /// `handle` a [`Notice::Resync`].
    pub async fn listen<F>(self, stop: CancellationToken, mut handle: F)
    where
        F: FnMut(Notice) + Send,
    {
        let mut wait = RESUBSCRIBE_MIN;
        let mut broke = false;
        loop {
            let subscribed = tokio::select! {
                () = stop.cancelled() => return,
                s = self.subscribe() => s,
            };
            match subscribed {
                Ok(pubsub) => {
                    wait = RESUBSCRIBE_MIN;
                    if broke {
                        tracing::info!("notices: subscribed again; listing shared sources again");
                        handle(Notice::Resync);
                    }
                    let why = tokio::select! {
                        () = stop.cancelled() => return,
                        why = self.receive(pubsub, &mut handle) => why,
                    };
                    tracing::warn!(
                        "notices: subscription to Redis broke ({why}); subscribing again"
                    );
                }
                Err(failure) => {
                    tracing::debug!("notices: cannot subscribe: {failure}");
                }
            }
            broke = true;
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(RESUBSCRIBE_MAX);
        }
    }

    /// A pub/sub connection subscribed to the notice channel, within `connect_timeout_ms` +
    /// `timeout_ms`.
    async fn subscribe(&self) -> Result<::redis::aio::PubSub, Failure> {
        let bound = self.connect_timeout() + self.timeout();
        let attempt = async {
            let mut pubsub = self.client().get_async_pubsub().await?;
            pubsub.subscribe(self.notice_channel()).await?;
            Ok::<_, ::redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(bound, attempt).await {
            Ok(Ok(pubsub)) => Ok(pubsub),
            Ok(Err(e)) => Err(Failure::from_redis(&e, bound)),
            Err(_) => Err(Failure::Timeout(bound)),
        }
    }

    /// Hands every other replica's notice to `handle` until the subscription breaks; says why.
    async fn receive<F>(&self, pubsub: ::redis::aio::PubSub, handle: &mut F) -> String
    where
        F: FnMut(Notice) + Send,
    {
        let (mut sink, mut stream) = pubsub.split();
        let mut keepalive = tokio::time::interval(KEEPALIVE);
        keepalive.tick().await;
        loop {
            tokio::select! {
                message = stream.next() => {
                    let Some(message) = message else {
                        return "the connection closed".into();
                    };
                    let payload: &[u8] = message.get_payload_bytes();
                    match decode(payload, self.replica()) {
                        Ok(Some(notice)) => handle(notice),
                        Ok(None) => {}
                        Err(why) => tracing::debug!("notices: a message dropped: {why}"),
                    }
                }
                _ = keepalive.tick() => {
                    let ping = tokio::time::timeout(self.timeout(), sink.ping::<::redis::Value>()).await;
                    match ping {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return crate::redact::text(&e.to_string()).into_owned(),
                        Err(_) => {
                            return format!("no answer to PING within {} ms", self.timeout().as_millis());
                        }
                    }
                }
            }
        }
    }
}

/// The notice in `payload`: `None` for one this replica (`own`) sent.
///
/// # Errors
/// Why the payload is no notice of this version (too long, not JSON, another `v` or `kind`).
fn decode(payload: &[u8], own: &str) -> Result<Option<Notice>, String> {
    if payload.len() > MAX_PAYLOAD {
        return Err(format!("{} bytes, more than {MAX_PAYLOAD}", payload.len()));
    }
    let envelope: Envelope = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
    if envelope.v != 1 {
        return Err(format!("version {} (this replica reads 1)", envelope.v));
    }
    Ok((envelope.replica != own).then_some(envelope.notice))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(replica: &str, notice: Notice) -> Vec<u8> {
        serde_json::to_vec(&Envelope {
            v: 1,
            replica: replica.into(),
            notice,
        })
        .unwrap()
    }

    #[test]
    fn a_notice_reads_back_unless_this_replica_sent_it() {
        let sent = Notice::ToolsChanged {
            source: "up".into(),
        };
        let bytes = wire("aa", sent.clone());
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"v":1,"replica":"aa","kind":"tools_changed","source":"up"}"#
        );
        assert_eq!(decode(&bytes, "bb"), Ok(Some(sent)));
        assert_eq!(decode(&bytes, "aa"), Ok(None));
    }

    #[test]
    fn what_is_no_notice_of_this_version_is_dropped_with_a_reason() {
        let other_kind = br#"{"v":1,"replica":"aa","kind":"weather_changed"}"#;
        assert!(decode(other_kind, "bb").is_err());
        let other_version = br#"{"v":2,"replica":"aa","kind":"tools_changed","source":"up"}"#;
        assert!(
            decode(other_version, "bb")
                .unwrap_err()
                .contains("version 2")
        );
        assert!(decode(b"not json", "bb").is_err());
        let long = vec![b' '; MAX_PAYLOAD + 1];
        assert!(decode(&long, "bb").unwrap_err().contains("more than"));
        // Resync is the replica's own signal: it cannot come over the wire.
        let resync = br#"{"v":1,"replica":"aa","kind":"resync"}"#;
        assert!(decode(resync, "bb").is_err());
    }
}
