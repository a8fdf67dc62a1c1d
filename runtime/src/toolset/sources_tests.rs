//! `Toolset::reload_sources` with in-process remote backends (the real MCP servers are in
//! tests/gateway/reload.rs): a kept source keeps its connection, an added one is called after
//! its discovery, a removed one's tools are gone at once while its call in flight finishes,
//! and it is closed only after that call ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::remote::{PeerInfo, RemoteBackend, RemoteSource};
use crate::{BoxFuture, ErrorKind, ToolContext, ToolDescriptor, ToolError, ToolOutput, Toolset};

/// Lists `tools`; `slow` waits for `release` before answering; counts listings, calls and
/// closes.
struct Backend {
    tools: Vec<&'static str>,
    listings: AtomicUsize,
    calls: AtomicUsize,
    closes: AtomicUsize,
    release: Notify,
    changes: watch::Sender<u64>,
}

fn backend(tools: &[&'static str]) -> Arc<Backend> {
    Arc::new(Backend {
        tools: tools.to_vec(),
        listings: AtomicUsize::new(0),
        calls: AtomicUsize::new(0),
        closes: AtomicUsize::new(0),
        release: Notify::new(),
        changes: watch::channel(0).0,
    })
}

impl RemoteBackend for Arc<Backend> {
    fn protocol(&self) -> &'static str {
        "fake"
    }
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, ToolError>> {
        self.listings.fetch_add(1, Ordering::SeqCst);
        let tools = self
            .tools
            .iter()
            .map(|n| ToolDescriptor {
                name: (*n).to_string(),
                input_schema: json!({"type": "object"}),
                ..ToolDescriptor::default()
            })
            .collect();
        Box::pin(std::future::ready(Ok(tools)))
    }
    fn call<'a>(
        &'a self,
        _tool: &'a ToolDescriptor,
        remote_name: &'a str,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.closes.load(Ordering::SeqCst) > 0 {
                return Err(ToolError::new(ErrorKind::Network, "closed"));
            }
            if remote_name == "slow" {
                self.release.notified().await;
            }
            Ok(ToolOutput::text(format!("{remote_name} answered")))
        })
    }
    fn ping(&self) -> BoxFuture<'_, Result<Duration, ToolError>> {
        Box::pin(async { Ok(Duration::from_millis(1)) })
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        self.closes.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {})
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
    fn peer(&self) -> PeerInfo {
        PeerInfo::default()
    }
}

fn toolset(sources: &[(&str, &Arc<Backend>)]) -> Toolset {
    sources
        .iter()
        .fold(Toolset::builder(), |b, (id, backend)| {
            b.source(RemoteSource::builder(*id, Arc::clone(backend)).build())
        })
        .build()
        .expect("toolset")
}

/// Waits (at most 5 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}: not in 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_reload_keeps_unchanged_sources_replaces_changed_ones_and_adds_and_removes() {
    let (kept, changed, gone) = (backend(&["a"]), backend(&["b"]), backend(&["c"]));
    let running = toolset(&[("kept", &kept), ("changed", &changed), ("gone", &gone)]);
    running.discover(4).await;
    let mut watch = running.watch_tools();

    let (kept_new, changed_new, added) = (backend(&["a"]), backend(&["b2"]), backend(&["d"]));
    let next = toolset(&[
        ("kept", &kept_new),
        ("changed", &changed_new),
        ("added", &added),
    ]);
    let report = running.reload_sources(&next, |id| id == "kept");
    drop(next);
    assert_eq!(report.kept, ["kept"]);
    assert_eq!(report.replaced, ["changed"]);
    assert_eq!(report.added, ["added"]);
    assert_eq!(report.removed, ["gone"]);
    assert_eq!((report.generation, running.config_generation()), (1, 1));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), watch.changed())
            .await
            .expect("the watch hears the reload")
    );

    running.discover(4).await;
    let ids: Vec<String> = running
        .sources()
        .iter()
        .map(|s| s.id().to_string())
        .collect();
    assert_eq!(ids, ["kept", "changed", "added"]);
    // The kept source is the running one: listed once, at start-up; its twin never.
    assert_eq!(kept.listings.load(Ordering::SeqCst), 1);
    assert_eq!(kept_new.listings.load(Ordering::SeqCst), 0);
    let out = running.call("kept.a", json!({})).await.unwrap();
    assert_eq!(out.text_joined(), "a answered");
    // The changed entry is the new source's, the added one answers.
    assert_eq!(
        running
            .call("changed.b2", json!({}))
            .await
            .unwrap()
            .text_joined(),
        "b2 answered"
    );
    assert_eq!(
        running
            .call("added.d", json!({}))
            .await
            .unwrap()
            .text_joined(),
        "d answered"
    );
    for gone_tool in ["changed.b", "gone.c"] {
        let err = running.call(gone_tool, json!({})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{gone_tool}: {err}");
    }
    // Retired sources are closed (nothing was running on them); kept ones are not.
    until("the retired sources closed", || {
        changed.closes.load(Ordering::SeqCst) == 1 && gone.closes.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(kept.closes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_call_running_on_a_removed_source_finishes_before_the_source_is_closed() {
    let (stays, leaves) = (backend(&["a"]), backend(&["slow"]));
    let running = toolset(&[("stays", &stays), ("leaves", &leaves)]);
    running.discover(4).await;
    let call = tokio::spawn({
        let running = running.clone();
        async move { running.call("leaves.slow", json!({})).await }
    });
    // The call is running when the reload comes.
    until("the call started", || {
        running.catalog().get("leaves.slow").is_some()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;

    let next = toolset(&[("stays", &backend(&["a"]))]);
    let report = running.reload_sources(&next, |_| true);
    drop(next);
    assert_eq!(report.removed, ["leaves"]);
    let err = running.call("leaves.slow", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        leaves.closes.load(Ordering::SeqCst),
        0,
        "closed while a call still ran on it"
    );

    leaves.release.notify_one();
    let out = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends")
        .unwrap()
        .expect("the call in flight finishes");
    assert_eq!(out.text_joined(), "slow answered");
    until("the removed source closed", || {
        leaves.closes.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(stays.closes.load(Ordering::SeqCst), 0);
}
