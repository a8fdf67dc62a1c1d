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
    assert_eq!(
        watch.len(),
        2,
        "the remote source is watched, and the policy's reloads"
    );
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
    let full = tools.stored_result(uri).await.unwrap();
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
    let fake = Arc::new(Fake::new(&["ok", "", "stringly", "typo"]));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    let names: Vec<_> = tools.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["fk.ok"]);
    let rejected = status.rejected.join("\n");
    assert_eq!(status.rejected.len(), 3, "{rejected}");
    for needle in ["no name", "not an object schema", "not valid JSON Schema"] {
        assert!(rejected.contains(needle), "{needle}: {rejected}");
    }
}

/// A 70-character MCP-legal name (`.` inside): too long once exported as `files__...`.
const LONG: &str = "analytics.generate_quarterly_revenue_breakdown_by_regions_and_products";

fn names_of(tools: &Toolset) -> Vec<String> {
    tools.tools().iter().map(|d| d.name.clone()).collect()
}

fn hash(remote: &str) -> String {
    format!("{:08x}", toolgate_model::names::fnv1a32(remote))
}

/// names MCP allows but providers do not are offered under provider-safe names,
/// and a call under the new name (either form) reaches the tool under its remote name.
#[tokio::test]
async fn illegal_remote_names_are_offered_under_provider_safe_names() {
    assert_eq!(LONG.len(), 70);
    let fake = Arc::new(Fake::new(&[
        "admin.tools.list",
        "Report builder",
        LONG,
        "ok",
    ]));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("files", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    assert!(status.rejected.is_empty(), "{:?}", status.rejected);
    // 64 - `files__` = 57: 48 characters, `_`, 8 hex of the hash of the remote name.
    let long = format!(
        "analytics_generate_quarterly_revenue_breakdown_b_{}",
        hash(LONG)
    );
    assert_eq!(
        names_of(&tools),
        [
            "files.admin_tools_list".to_string(),
            "files.Report_builder".to_string(),
            format!("files.{long}"),
            "files.ok".to_string(),
        ]
    );
    let (exported, skipped) = tools.export_available(crate::Dialect::OpenAi);
    assert!(skipped.is_empty(), "{skipped:?}");
    let exported: Vec<_> = exported
        .iter()
        .map(|t| {
            let name = t.get("name").or_else(|| t.pointer("/function/name"));
            name.and_then(Value::as_str).unwrap().to_string()
        })
        .collect();
    assert_eq!(
        exported,
        [
            "files__admin_tools_list".to_string(),
            "files__Report_builder".to_string(),
            format!("files__{long}"),
            "files__ok".to_string(),
        ]
    );
    for name in &exported {
        assert!(toolgate_model::validate_tool_name(name).is_ok(), "{name}");
    }
    assert_eq!(exported[2].len(), 64, "the prefix counts toward 64");
    for (called, remote) in [
        ("files.admin_tools_list", "admin.tools.list"),
        ("files__admin_tools_list", "admin.tools.list"),
        ("files__Report_builder", "Report builder"),
        (exported[2].as_str(), LONG),
        ("files__ok", "ok"),
    ] {
        let out = tools.call(called, json!({})).await.unwrap();
        assert!(
            out.text_joined().contains(&format!(" as {remote}: ")),
            "{called}: {}",
            out.text_joined()
        );
    }
    // The remote name stays visible: title (none was given) and description.
    let d = tools.describe("files.admin_tools_list").unwrap();
    assert_eq!(d.annotations.title.as_deref(), Some("admin.tools.list"));
    assert!(
        d.description.contains("`admin.tools.list`"),
        "{}",
        d.description
    );
    // A tool whose name was fine is untouched.
    let ok = tools.describe("files.ok").unwrap();
    assert!(ok.annotations.title.is_none() && ok.description.is_empty());
    // The remote name itself is not a toolset name.
    assert_eq!(
        tools
            .call("files.admin.tools.list", json!({}))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
}

/// Names equal after sanitising never shadow each other: a legal name keeps its name, renamed
/// ones that clash take their own hash suffix, whatever the listing order.
#[tokio::test]
async fn sanitised_names_that_clash_get_hash_suffixes() {
    let listing = ["a.b", "a_b", "a b", "c.d", "c/d", "e.f"];
    let expected = [
        format!("fk.a_b_{}", hash("a.b")),
        "fk.a_b".to_string(),
        format!("fk.a_b_{}", hash("a b")),
        format!("fk.c_d_{}", hash("c.d")),
        format!("fk.c_d_{}", hash("c/d")),
        "fk.e_f".to_string(),
    ];
    let fake = Arc::new(Fake::new(&listing));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    assert!(status.rejected.is_empty(), "{:?}", status.rejected);
    assert_eq!(names_of(&tools), expected);
    for (name, remote) in expected.iter().zip(listing) {
        let exported = toolgate_model::names::exported_name(name).into_owned();
        let out = tools.call(&exported, json!({})).await.unwrap();
        assert!(
            out.text_joined().contains(&format!(" as {remote}: ")),
            "{exported}: {}",
            out.text_joined()
        );
    }
    // The same names in the reverse order.
    let reversed: Vec<&'static str> = listing.iter().rev().copied().collect();
    let fake = Arc::new(Fake::new(&reversed));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    tools.discover(1).await;
    let mut names = names_of(&tools);
    names.reverse();
    assert_eq!(names, expected);
}

/// What still clashes after the suffixes (a name listed twice) is reported, not dropped
/// silently.
#[tokio::test]
async fn a_name_listed_twice_is_reported() {
    let fake = Arc::new(Fake::new(&["echo", "x.y", "echo", "x.y"]));
    let tools = Toolset::builder()
        .source(RemoteSource::builder("fk", Arc::clone(&fake)).build())
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    // Both `x.y` clash on `x_y`: both take the (same) suffix, and the second still clashes.
    assert_eq!(
        names_of(&tools),
        ["fk.echo".to_string(), format!("fk.x_y_{}", hash("x.y"))]
    );
    assert_eq!(status.rejected.len(), 2, "{:?}", status.rejected);
    assert!(
        status
            .rejected
            .iter()
            .all(|r| r.contains("listed it twice"))
    );
}

/// Allow/deny lists match a renamed tool under its remote name and its provider-safe name.
#[tokio::test]
async fn filters_match_remote_and_safe_names() {
    let listing = [
        "admin.tools.list",
        "Report builder",
        "drop.table",
        "keep.me",
    ];
    // (allow, deny, global deny, offered)
    type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let cases: [Case; 4] = [
        // allow by remote name, allow by safe name
        (
            &["admin.tools.list", "Report_builder"],
            &[],
            &[],
            &["fk.admin_tools_list", "fk.Report_builder"],
        ),
        // deny by remote name, deny by safe name
        (
            &[],
            &["drop.table", "Report_builder"],
            &[],
            &["fk.admin_tools_list", "fk.keep_me"],
        ),
        // global deny by `{id}.{remote}`
        (
            &[],
            &[],
            &["fk.drop.*"],
            &["fk.admin_tools_list", "fk.Report_builder", "fk.keep_me"],
        ),
        // global deny by `{id}.{safe}`
        (
            &[],
            &[],
            &["fk.*_table", "fk.admin_*"],
            &["fk.Report_builder", "fk.keep_me"],
        ),
    ];
    for (allow, deny, global_deny, expected) in cases {
        let fake = Arc::new(Fake::new(&listing));
        let source = RemoteSource::builder("fk", Arc::clone(&fake))
            .filter(ToolFilter::new("fk", allow, deny).unwrap())
            .global_filter(ToolFilter::new("*", Vec::<&str>::new(), global_deny).unwrap())
            .build();
        let tools = Toolset::builder().source(source).build().unwrap();
        let status = tools.discover(1).await.remove(0);
        assert_eq!(
            names_of(&tools),
            expected,
            "{allow:?} {deny:?} {global_deny:?}"
        );
        assert_eq!(status.hidden, listing.len() - expected.len());
    }
}

/// Without a prefix, the whole 64 characters are the tool's, and no `.` is left in a name.
#[tokio::test]
async fn unprefixed_sources_rename_too() {
    let fake = Arc::new(Fake::new(&["admin.tools.list", LONG]));
    let tools = Toolset::builder()
        .source(
            RemoteSource::builder("files", Arc::clone(&fake))
                .prefix(false)
                .build(),
        )
        .build()
        .unwrap();
    tools.discover(1).await;
    assert_eq!(
        names_of(&tools),
        [
            "admin_tools_list".to_string(),
            format!("{}_{}", &LONG.replace('.', "_")[..55], hash(LONG)),
        ]
    );
    let out = tools.call("admin_tools_list", json!({})).await.unwrap();
    assert!(out.text_joined().contains(" as admin.tools.list: "));
}
