//! An MCP server's features besides tools through `McpBackend` (toolgate_runtime::mcp::
//! passthrough): resources, templates, prompts, completions, subscriptions and the events a
//! server sends unasked, against server-everything over stdio, a server offering none of them
//! (runtime/tests/peers/fault_server.py) and one that never answers some requests
//! (runtime/tests/peers/features_server.py).

mod support;

use std::time::{Duration, Instant};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, GetPromptResponse,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ResourceContents,
};
use serde_json::json;
use support::peers;
use tokio::sync::broadcast;
use toolgate_runtime::mcp::{McpBackend, McpConnection, McpEvent, McpOptions, servers};
use toolgate_runtime::remote::RemoteSource;
use toolgate_runtime::{ErrorKind, ToolError, Toolset};

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

fn stdio(program: &str, args: Vec<String>) -> McpConnection {
    McpConnection::Stdio {
        program: program.to_string(),
        args,
        env: Default::default(),
        cwd: None,
    }
}

fn everything() -> McpConnection {
    stdio(
        peers::node().to_str().unwrap(),
        vec![peers::everything_js().display().to_string(), "stdio".into()],
    )
}

fn python_peer(script: &str, args: &[&str]) -> McpConnection {
    let mut all = vec![peers::test_peers_dir().join(script).display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    stdio(peers::python3().to_str().unwrap(), all)
}

fn toolset(id: &str, connection: McpConnection, options: McpOptions) -> Toolset {
    Toolset::builder()
        .mcp_source(RemoteSource::builder(id, McpBackend::new(id, connection, options)).build())
        .build()
        .unwrap()
}

/// The one MCP server of `tools`.
fn backend(tools: &Toolset) -> McpBackend {
    let found = servers(tools);
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].backend.clone()
}

fn text_of(r: ReadResourceResponse) -> String {
    let ReadResourceResponse::Complete(r) = r else {
        panic!("input required: {r:?}");
    };
    r.contents
        .iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn prompt_text(r: GetPromptResponse) -> String {
    let GetPromptResponse::Complete(r) = r else {
        panic!("input required: {r:?}");
    };
    r.messages
        .iter()
        .map(|m| match m.content.as_text() {
            Some(t) => t.text.clone(),
            None => format!("{:?}", m.content),
        })
        .collect()
}

/// The JSON-RPC code a server answered with, from the error's details.
fn code(e: &ToolError) -> Option<i64> {
    e.details()?.get("code")?.as_i64()
}

/// The first event `pick` accepts within `within`.
async fn wait_for<T>(
    events: &mut broadcast::Receiver<McpEvent>,
    within: Duration,
    mut pick: impl FnMut(&McpEvent) -> Option<T>,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => return None,
            Ok(Ok(e)) => {
                if let Some(t) = pick(&e) {
                    return Some(t);
                }
            }
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(broadcast::error::RecvError::Closed)) => return None,
        }
    }
}

/// A log message of everything's that contains `needle`.
fn log_with(needle: &str) -> impl FnMut(&McpEvent) -> Option<String> + '_ {
    move |e| match e {
        McpEvent::Log { data, .. } if data.to_string().contains(needle) => Some(data.to_string()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_resources_prompts_and_completions() {
    let tools = toolset("everything", everything(), McpOptions::default());
    let found = servers(&tools);
    assert_eq!(
        (found[0].id.as_str(), found[0].prefixed),
        ("everything", true)
    );
    let b = backend(&tools);

    let caps = b.capabilities().await.unwrap();
    assert_eq!(caps.resources.as_ref().unwrap().subscribe, Some(true));
    assert!(
        caps.prompts.is_some() && caps.completions.is_some(),
        "{caps:?}"
    );

    assert!(!b.listed_resource(ARCHITECTURE), "nothing listed yet");
    let resources = b.list_resources().await.unwrap();
    assert!(
        resources.iter().any(|r| r.uri == ARCHITECTURE),
        "{resources:?}"
    );
    assert!(b.listed_resource(ARCHITECTURE));
    let templates = b.list_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    assert!(b.listed_template_for("demo://resource/dynamic/text/7"));
    assert!(!b.listed_template_for("demo://resource/other/7"));

    let doc = text_of(
        b.read_resource(ReadResourceRequestParams::new(ARCHITECTURE))
            .await
            .unwrap(),
    );
    assert!(doc.contains("Architecture"), "{doc}");
    let dynamic = text_of(
        b.read_resource(ReadResourceRequestParams::new(
            "demo://resource/dynamic/text/7",
        ))
        .await
        .unwrap(),
    );
    assert!(dynamic.contains('7'), "{dynamic}");
    let e = b
        .read_resource(ReadResourceRequestParams::new("test://nope"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind(), code(&e)),
        (ErrorKind::Protocol, Some(-32602)),
        "{e}"
    );
    assert!(
        e.message().contains("test://nope") && e.message().contains("everything"),
        "{e}"
    );

    let prompts = b.list_prompts().await.unwrap();
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"simple-prompt") && names.contains(&"args-prompt"),
        "{names:?}"
    );
    assert!(b.listed_prompt("args-prompt") && !b.listed_prompt("nope"));
    let mut get = GetPromptRequestParams::new("args-prompt");
    get.arguments = Some(json!({"city": "Lyon"}).as_object().unwrap().clone());
    let text = prompt_text(b.get_prompt(get).await.unwrap());
    assert!(text.contains("Lyon"), "{text}");
    let e = b
        .get_prompt(GetPromptRequestParams::new("no-such-prompt"))
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(-32602), "{e}");

    let done = b
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("completable-prompt"),
            ArgumentInfo::new("department", "En"),
        ))
        .await
        .unwrap();
    assert_eq!(done.completion.values, ["Engineering"]);
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_counted_and_updates_and_logs_arrive_as_events() {
    let tools = toolset("everything", everything(), McpOptions::default());
    let b = backend(&tools);
    let mut events = b.events();

    // everything logs every subscribe and unsubscribe it receives.
    b.subscribe(ARCHITECTURE).await.unwrap();
    let log = wait_for(
        &mut events,
        Duration::from_secs(5),
        log_with("Received Subscribe"),
    )
    .await;
    assert!(
        log.is_some_and(|l| l.contains(ARCHITECTURE)),
        "no log of the subscribe"
    );
    b.subscribe(ARCHITECTURE).await.unwrap();
    let again = wait_for(
        &mut events,
        Duration::from_millis(1500),
        log_with("Received Subscribe"),
    )
    .await;
    assert_eq!(
        again, None,
        "a second subscription to a URI is not sent upstream"
    );

    // Updates start with the tool (one at once, then every 5 s).
    tools
        .call("everything.toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    let updated = wait_for(&mut events, Duration::from_secs(7), |e| match e {
        McpEvent::ResourceUpdated { uri } => Some(uri.clone()),
        _ => None,
    })
    .await;
    assert_eq!(updated.as_deref(), Some(ARCHITECTURE));

    b.unsubscribe(ARCHITECTURE).await.unwrap();
    let early = wait_for(
        &mut events,
        Duration::from_millis(1500),
        log_with("Received Unsubscribe"),
    )
    .await;
    assert_eq!(early, None, "still one subscriber: nothing sent upstream");
    b.unsubscribe(ARCHITECTURE).await.unwrap();
    let last = wait_for(
        &mut events,
        Duration::from_secs(5),
        log_with("Received Unsubscribe"),
    )
    .await;
    assert!(last.is_some(), "the last unsubscribe is sent upstream");
    b.unsubscribe(ARCHITECTURE).await.unwrap();

    // No more updates for it (everything sends them every 5 s to subscribers).
    let late = wait_for(&mut events, Duration::from_secs(6), |e| match e {
        McpEvent::ResourceUpdated { uri } => Some(uri.clone()),
        _ => None,
    })
    .await;
    assert_eq!(late, None);
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_features_is_empty_or_a_clear_error() {
    let tools = toolset(
        "plain",
        python_peer("fault_server.py", &["echo"]),
        McpOptions::default(),
    );
    let b = backend(&tools);
    assert!(b.list_resources().await.unwrap().is_empty());
    assert!(b.list_resource_templates().await.unwrap().is_empty());
    assert!(b.list_prompts().await.unwrap().is_empty());
    let started = Instant::now();
    let e = b
        .read_resource(ReadResourceRequestParams::new("x://y"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind(), code(&e)),
        (ErrorKind::Protocol, Some(-32601)),
        "{e}"
    );
    assert!(
        e.message().contains("`plain`") && e.message().contains("resources"),
        "{e}"
    );
    let e = b.subscribe("x://y").await.unwrap_err();
    assert!(e.message().contains("resources.subscribe"), "{e}");
    let e = b
        .get_prompt(GetPromptRequestParams::new("p"))
        .await
        .unwrap_err();
    assert!(e.message().contains("prompts"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "nothing was sent, nothing waited"
    );
    b.unsubscribe("x://y").await.unwrap();
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_are_paged_and_bounded_and_no_request_hangs() {
    let options = McpOptions {
        request_timeout: Duration::from_millis(700),
        max_list_pages: 4,
        ..McpOptions::default()
    };
    let tools = toolset("peer", python_peer("features_server.py", &[]), options);
    let b = backend(&tools);
    let uris: Vec<_> = b
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(uris, ["peer://r1", "peer://r2", "peer://r3"]);
    // prompts/list always has a nextCursor: cut off after max_list_pages pages.
    let prompts = b.list_prompts().await.unwrap();
    assert_eq!(prompts.len(), 4, "{prompts:?}");

    let started = Instant::now();
    let e = b
        .read_resource(ReadResourceRequestParams::new("peer://never"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        e.message().contains("`peer`") && e.message().contains("700 ms"),
        "{e}"
    );
    let e = b
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("p1"),
            ArgumentInfo::new("a", ""),
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // The session survives a request given up on.
    let text = text_of(
        b.read_resource(ReadResourceRequestParams::new("peer://item/3"))
            .await
            .unwrap(),
    );
    assert_eq!(text, "read peer://item/3");

    // This server sends an update right after each subscribe.
    let mut events = b.events();
    b.subscribe("peer://r1").await.unwrap();
    let updated = wait_for(&mut events, Duration::from_secs(3), |e| match e {
        McpEvent::ResourceUpdated { uri } => Some(uri.clone()),
        _ => None,
    })
    .await;
    assert_eq!(updated.as_deref(), Some("peer://r1"));

    // The server dies; the next request starts a new session, which subscribes again.
    let e = b
        .read_resource(ReadResourceRequestParams::new("peer://die"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    assert_eq!(b.list_resources().await.unwrap().len(), 3);
    let again = wait_for(&mut events, Duration::from_secs(3), |e| match e {
        McpEvent::ResourceUpdated { uri } => Some(uri.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        again.as_deref(),
        Some("peer://r1"),
        "subscribed again on the new session"
    );
    tools.close().await;
}
