//! What an agent's stream or card endpoint does wrong: chunks after an artifact's last chunk
//! and an append to an artifact never started (runtime/tests/peers/a2a_raw_stream.py: the
//! SDKs refuse to send these), and an endpoint that accepts the connection but never answers.

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_runtime::ErrorKind;

use super::{a2a_meta, ok, peers, source, text, toolset};

/// After `lastChunk: true` an artifact is final: a later chunk for it changes nothing. An
/// append to an artifact id never seen starts that artifact (both are logged as warnings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_ends_at_its_last_chunk() {
    let script = peers::test_peers_dir().join("a2a_raw_stream.py");
    let script = script.to_str().unwrap();
    let peer = peers::spawn_http_peer_retry(peers::python3(), &[script, "{port}"], &[]);
    let sse = source(json!({"id": "sse", "url": peer.url(""), "streaming": true}));
    let tools = toolset(&[&sse]);
    tools.discover(1).await;
    let out = ok(&tools, "sse.echo", json!({"text": "hi"})).await;
    assert_eq!(
        out.content,
        [text("Hello world"), text("orphan")],
        "{out:?}"
    );
    assert_eq!(a2a_meta(&out)["state"], "completed");
    tools.close().await;
}

/// An agent whose card URL accepts connections but never answers fails its listing at
/// `connect_timeout_ms`, saying that no card came and where it was looked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_never_comes_fails_at_connect_timeout_ms() {
    // The kernel completes the TCP handshakes (backlog); nobody ever reads or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let agent = source(json!({"id": "mute", "url": url, "connect_timeout_ms": 800}));
    let tools = toolset(&[&agent]);
    let started = Instant::now();
    let statuses = tools.discover(1).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not the 30 s discovery bound"
    );
    let error = statuses[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("agent `mute`: no agent card within 800 ms (its `connect_timeout_ms`")
            && error.contains(&format!("{url}/.well-known/agent-card.json")),
        "{error}"
    );
    let e = tools.call("mute.echo", json!({})).await.unwrap_err();
    assert_ne!(
        e.kind(),
        ErrorKind::NotFound,
        "the listing's error, not not_found: {e}"
    );
    tools.close().await;
    drop(silent);
}
