//! RemoteSource with an in-process fake backend (the real MCP servers are in
//! runtime/tests/mcp_*.rs).

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;
use crate::Toolset;

/// Lists `tools` (or fails while `fail` is set), counts listings, echoes calls.
struct Fake {
    tools: Mutex<Vec<&'static str>>,
    fail: std::sync::atomic::AtomicBool,
    listings: Arc<AtomicUsize>,
    changes: watch::Sender<u64>,
}

impl Fake {
    fn new(tools: &[&'static str]) -> Self {
        Self {
            tools: Mutex::new(tools.to_vec()),
            fail: false.into(),
            listings: Arc::default(),
            changes: watch::channel(0).0,
        }
    }
}

impl RemoteBackend for Arc<Fake> {
    fn protocol(&self) -> &'static str {
        "fake"
    }
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, ToolError>> {
        Box::pin(async move {
            self.listings.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                return Err(ToolError::new(ErrorKind::Network, "connection refused"));
            }
            Ok(self
                .tools
                .lock()
                .unwrap()
                .iter()
                .map(|n| ToolDescriptor {
                    name: (*n).to_string(),
                    input_schema: match *n {
                        "stringly" => json!({"type": "string"}),
                        "typo" => {
                            json!({"type": "object", "properties": {"a": {"type": "strnig"}}})
                        }
                        _ => json!({"type": "object"}),
                    },
                    ..ToolDescriptor::default()
                })
                .collect())
        })
    }
    fn call<'a>(
        &'a self,
        tool: &'a ToolDescriptor,
        remote_name: &'a str,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if remote_name == "big" {
                return Ok(ToolOutput::text("x".repeat(200_000)));
            }
            Ok(ToolOutput::text(format!(
                "{} as {remote_name}: {args}",
                tool.name
            )))
        })
    }
    fn ping(&self) -> BoxFuture<'_, Result<Duration, ToolError>> {
        Box::pin(async { Ok(Duration::from_millis(1)) })
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
    fn peer(&self) -> PeerInfo {
        PeerInfo::default()
    }
}

#[tokio::test]
async fn lazy_source_is_listed_on_first_use_of_its_prefix() {
    let fake = Arc::new(Fake::new(&["echo", "sum"]));
    let source = RemoteSource::builder("fk", Arc::clone(&fake))
        .lazy(true)
        .build();
    let tools = Toolset::builder().source(source).build().unwrap();
    let statuses = tools.discover(4).await;
    assert_eq!(
        statuses[0].state,
        SourceState::Pending,
        "lazy: not listed at start-up"
    );
    assert_eq!(fake.listings.load(Ordering::SeqCst), 0);
    let out = tools.call("fk.echo", json!({"a": 1})).await.unwrap();
    assert_eq!(out.text_joined(), r#"fk.echo as echo: {"a":1}"#);
    // The exported form of the name works too, and nothing is listed again.
    tools.call("fk__sum", json!({})).await.unwrap();
    assert_eq!(fake.listings.load(Ordering::SeqCst), 1);
    assert_eq!(tools.statuses()[0].tools, 2);
}

#[tokio::test]
async fn a_failed_listing_is_not_retried_on_every_lookup() {
    let fake = Arc::new(Fake::new(&["echo"]));
    fake.fail.store(true, Ordering::SeqCst);
    let source = RemoteSource::builder("fk", Arc::clone(&fake))
        .retry_interval(Duration::from_secs(60))
        .build();
    let tools = Toolset::builder().source(source).build().unwrap();
    let statuses = tools.discover(4).await;
    assert_eq!(statuses[0].state, SourceState::Failed);
    assert!(
        statuses[0]
            .error
            .as_deref()
            .unwrap()
            .contains("connection refused")
    );
    for _ in 0..3 {
        let e = tools.call("fk.echo", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network);
        assert!(e.message().contains("unavailable"), "{}", e.message());
    }
    assert_eq!(
        fake.listings.load(Ordering::SeqCst),
        1,
        "the attempted record holds"
    );
    // An explicit refresh contacts it again.
    fake.fail.store(false, Ordering::SeqCst);
    tools.refresh("fk").await.unwrap();
    tools.call("fk.echo", json!({})).await.unwrap();
    assert_eq!(tools.statuses()[0].state, SourceState::Ready);
}

#[tokio::test]
async fn allow_deny_and_global_lists_hide_tools_everywhere() {
    let fake = Arc::new(Fake::new(&["echo", "get-sum", "get-env", "delete_all"]));
    let source = RemoteSource::builder("fk", Arc::clone(&fake))
        .filter(ToolFilter::new("fk", ["echo", "get-*", "delete_all"], ["get-env"]).unwrap())
        .global_filter(ToolFilter::new("*", Vec::<&str>::new(), ["*.delete_*"]).unwrap())
        .build();
    let tools = Toolset::builder().source(source).build().unwrap();
    tools.discover(1).await;
    let names: Vec<_> = tools.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["fk.echo", "fk.get-sum"]);
    assert_eq!(tools.statuses()[0].hidden, 2);
    assert_eq!(
        tools
            .call("fk.get-env", json!({}))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    let (exported, _) = tools.export_available(crate::Dialect::OpenAi);
    assert_eq!(exported.len(), 2);
}

#[tokio::test]
async fn list_changed_refreshes_the_catalog() {
    let fake = Arc::new(Fake::new(&["a"]));
    let source = RemoteSource::builder("fk", Arc::clone(&fake)).build();
    let tools = Toolset::builder().source(source).build().unwrap();
    tools.discover(1).await;
    assert_eq!(tools.tools().len(), 1);
    let mut watch = tools.watch_tools();
    assert_eq!(watch.len(), 1, "the remote source is watched");
    fake.tools.lock().unwrap().push("b");
    fake.changes.send_modify(|n| *n += 1);
    // The toolset's watch fires once the new listing is in.
    tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the toolset's watch fired");
    assert_eq!(
        tools.tools().len(),
        2,
        "the catalog was refreshed after a list_changed"
    );
}

#[tokio::test]
async fn big_results_are_cut_and_kept_in_full() {
    let fake = Arc::new(Fake::new(&["big"]));
    let source = RemoteSource::builder("fk", Arc::clone(&fake))
        .max_result_bytes(Some(1000))
        .build();
    let tools = Toolset::builder().source(source).build().unwrap();
    tools.discover(1).await;
    let out = tools.call("fk.big", json!({})).await.unwrap();
    let text = out.text_joined();
    assert!(text.len() < 1200);
    let uri = text
        .split("full result: ")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap();
    let full = tools.stored_result(uri).unwrap();
    assert_eq!(full.text_joined().len(), 200_000);
}

#[tokio::test]
async fn closed_sources_refuse_calls() {
    let fake = Arc::new(Fake::new(&["echo"]));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    tools.discover(1).await;
    tools.close().await;
    assert_eq!(tools.statuses()[0].state, SourceState::Closed);
    let e = tools.call("fk.echo", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network);
}

#[tokio::test]
async fn tools_no_provider_could_take_are_left_out_with_the_reason() {
    let long = Box::leak("x".repeat(70).into_boxed_str());
    let fake = Arc::new(Fake::new(&[
        "ok",
        "",
        "with space",
        "stringly",
        "typo",
        long,
    ]));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    let names: Vec<_> = tools.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["fk.ok"]);
    let rejected = status.rejected.join("\n");
    assert_eq!(status.rejected.len(), 5, "{rejected}");
    for needle in [
        "no name",
        "' ' at position",
        "not an object schema",
        "not valid JSON Schema",
        "64",
    ] {
        assert!(rejected.contains(needle), "{needle}: {rejected}");
    }
}
