//! Resources, resource templates, prompts, completions, subscriptions and log messages of the
//! MCP servers behind `toolgate serve`, passed through (src/gateway/mcp/passthrough). The
//! gateway fronts server-everything twice — `everything` mounted without prefix, `ev2` with —
//! and is talked to over streamable HTTP by rmcp's client in the initialize era (notifications
//! on the session, `resources/subscribe`, `logging/setLevel`) and by toolgate's own client
//! (`McpBackend`, which negotiates 2026-07-28: `subscriptions/listen`).

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, ClientCapabilities, ClientConfig, CompleteRequestParams,
    ErrorCode, GetPromptRequestParams, Implementation, ProtocolVersion, ReadResourceRequestParams,
    Reference, ResourceContents, ResourceUpdatedNotificationParam, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{ClientLifecycleMode, NotificationContext, RoleClient, RunningService};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use toolgate::mcp::{McpBackend, McpConnection, McpEvent, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{SourceState, Toolset};

use crate::harness::{self, Served};

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";
const TEXT_9: &str = "demo://resource/dynamic/text/9";

/// The gateway in front of everything (no prefix, results over 400 bytes stored) and ev2
/// (prefixed), in pages of 3.
fn serve() -> Served {
    let mcp = harness::everything_stdio_entry("everything", "prefix: false\nmax_result_bytes: 400")
        + &harness::everything_stdio_entry("ev2", "");
    harness::serve(&harness::tools_yaml(&mcp, "gateway:\n  page_size: 3"), &[])
}

/// What the gateway sent the legacy client unasked.
#[derive(Debug)]
enum Note {
    Log { logger: Option<String>, data: Value },
    Updated(String),
    ResourcesChanged,
}

/// rmcp's client handler, recording notifications.
#[derive(Clone)]
struct Recorder(mpsc::UnboundedSender<Note>);

#[allow(deprecated)]
impl rmcp::ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("passthrough-test", "1"),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Note::Log {
            logger: params.logger,
            data: params.data,
        });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Note::Updated(params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Note::ResourcesChanged);
    }
}

/// An initialize-era session with the gateway, and what it receives unasked.
async fn legacy_client(
    served: &Served,
) -> (
    RunningService<RoleClient, Recorder>,
    mpsc::UnboundedReceiver<Note>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(served.url("/mcp"));
    let client = rmcp::service::serve_client_with_lifecycle(
        Recorder(tx),
        transport,
        ClientLifecycleMode::Initialize,
    )
    .await
    .expect("initialize with the gateway");
    (client, rx)
}

/// The first note `pick` accepts within `within`.
async fn wait_note<T>(
    notes: &mut mpsc::UnboundedReceiver<Note>,
    within: Duration,
    mut pick: impl FnMut(&Note) -> Option<T>,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, notes.recv()).await {
            Ok(Some(n)) => {
                if let Some(t) = pick(&n) {
                    return Some(t);
                }
            }
            _ => return None,
        }
    }
}

fn updated(uri: &str) -> impl FnMut(&Note) -> Option<()> + '_ {
    move |n| matches!(n, Note::Updated(u) if u == uri).then_some(())
}

fn logged(needle: &str) -> impl FnMut(&Note) -> Option<Option<String>> + '_ {
    move |n| match n {
        Note::Log { logger, data } if data.to_string().contains(needle) => Some(logger.clone()),
        _ => None,
    }
}

fn text(contents: &[ResourceContents]) -> String {
    contents
        .iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Whether `want` arrives within 8 s.
async fn wait_event(events: &mut broadcast::Receiver<McpEvent>, want: &McpEvent) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(e)) if e == *want => return true,
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            _ => return false,
        }
    }
}

fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

// resources/subscribe and logging/setLevel are deprecated in rmcp (SEP-2567, SEP-2577), and
// are what this era's clients use.
#[allow(deprecated)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_era_client_sees_resources_prompts_updates_and_logs() {
    let served = serve();
    let (client, mut notes) = legacy_client(&served).await;
    let caps = client.peer_info().unwrap().capabilities.clone();
    let resources_cap = caps.resources.clone().unwrap();
    assert_eq!(
        (resources_cap.subscribe, resources_cap.list_changed),
        (Some(true), Some(true))
    );
    assert!(
        caps.prompts.is_some() && caps.completions.is_some(),
        "{caps:?}"
    );

    // Resources: both servers list the same 7 documents; each URI once, in pages of 3.
    let first = client.list_resources(None).await.unwrap();
    assert_eq!(first.resources.len(), 3);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_resources().await.unwrap();
    let uris: HashSet<_> = all.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!((all.len(), uris.len()), (7, 7), "{uris:?}");
    assert!(uris.contains(ARCHITECTURE));
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 2, "{templates:?}");

    let read = client
        .read_resource(ReadResourceRequestParams::new(ARCHITECTURE))
        .await
        .unwrap();
    assert!(text(&read.contents).contains("Architecture"));
    let read = client
        .read_resource(ReadResourceRequestParams::new(TEXT_9))
        .await
        .unwrap();
    assert!(text(&read.contents).contains('9'), "{read:?}");
    let e = client
        .read_resource(ReadResourceRequestParams::new("test://nope"))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(e) = e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (e.code, e.message.as_ref()),
        (
            ErrorCode::INVALID_PARAMS,
            "MCP error -32602: Resource test://nope not found"
        ),
        "everything's own error, unchanged"
    );

    // Prompts: everything's under their names, ev2's as ev2__{name}.
    let prompts = client.list_all_prompts().await.unwrap();
    let names: HashSet<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    for name in [
        "simple-prompt",
        "args-prompt",
        "ev2__simple-prompt",
        "ev2__args-prompt",
    ] {
        assert!(names.contains(name), "{name} in {names:?}");
    }
    assert_eq!(prompts.len(), 8, "{names:?}");
    for (name, city) in [("ev2__args-prompt", "Lyon"), ("args-prompt", "Nice")] {
        let mut get = GetPromptRequestParams::new(name);
        get.arguments = args(json!({"city": city}));
        let got = client.get_prompt(get).await.unwrap();
        assert!(
            format!("{:?}", got.messages).contains(city),
            "{name}: {got:?}"
        );
    }
    let e = client
        .get_prompt(GetPromptRequestParams::new("nope"))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, rmcp::ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS && e.message.contains("nope")),
        "{e:?}"
    );
    for name in ["completable-prompt", "ev2__completable-prompt"] {
        let done = client
            .complete(CompleteRequestParams::new(
                Reference::for_prompt(name),
                ArgumentInfo::new("department", "Sa"),
            ))
            .await
            .unwrap();
        assert_eq!(done.completion.values, ["Sales"], "{name}");
    }

    // A subscription goes upstream (everything logs it: relayed, logger = the source id).
    client
        .subscribe(SubscribeRequestParams::new(ARCHITECTURE))
        .await
        .unwrap();
    let logger = wait_note(
        &mut notes,
        Duration::from_secs(5),
        logged("Received Subscribe"),
    )
    .await;
    assert_eq!(logger, Some(Some("everything".to_string())));
    let call = |name: &str, arguments: Value| {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = args(arguments);
        client.call_tool(params)
    };
    call("toggle-subscriber-updates", json!({})).await.unwrap();
    let update = wait_note(&mut notes, Duration::from_secs(7), updated(ARCHITECTURE)).await;
    assert!(
        update.is_some(),
        "no notifications/resources/updated relayed"
    );

    // Below the level the session set: not relayed.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    client
        .subscribe(SubscribeRequestParams::new(TEXT_9))
        .await
        .unwrap();
    let info = wait_note(&mut notes, Duration::from_millis(1500), logged(TEXT_9)).await;
    assert_eq!(info, None, "an info message got past setLevel error");

    // Unsubscribed: updates stop for that URI, not for the other.
    client
        .unsubscribe(UnsubscribeRequestParams::new(ARCHITECTURE))
        .await
        .unwrap();
    let mut seen = Vec::new();
    wait_note(&mut notes, Duration::from_secs(6), |n| {
        if let Note::Updated(u) = n {
            seen.push(u.clone());
        }
        None::<()>
    })
    .await;
    assert!(seen.iter().any(|u| u == TEXT_9), "{seen:?}");
    assert!(!seen.iter().any(|u| u == ARCHITECTURE), "{seen:?}");

    // A resource added at run time: resources/list_changed relayed, the resource listed.
    call(
        "gzip-file-as-resource",
        json!({"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}),
    )
    .await
    .unwrap();
    let changed = wait_note(&mut notes, Duration::from_secs(5), |n| {
        matches!(n, Note::ResourcesChanged).then_some(())
    })
    .await;
    assert!(
        changed.is_some(),
        "no notifications/resources/list_changed relayed"
    );
    let all = client.list_all_resources().await.unwrap();
    assert!(
        all.iter()
            .any(|r| r.uri == "demo://resource/session/hello.gz")
    );

    // A result cut to the size limit is read in full at the URI it names.
    let long = format!("{}END", "x".repeat(2000));
    let cut = call("echo", json!({"message": long})).await.unwrap();
    let cut_text = format!("{:?}", cut.content);
    let start = cut_text.find("toolgate://results/").expect("a results URI");
    let uri: String = cut_text[start..]
        .chars()
        .take_while(|c| !matches!(c, ']' | ' ' | '"' | '\\'))
        .collect();
    let full = client
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    let full = text(&full.contents);
    assert!(full.contains(&long), "{uri}: {} bytes", full.len());
    let e = client
        .read_resource(ReadResourceRequestParams::new(
            "toolgate://results/everything/999",
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, rmcp::ServiceError::McpError(e) if e.code == ErrorCode::RESOURCE_NOT_FOUND),
        "{e:?}"
    );

    // The session ends: its subscriptions are taken back upstream (everything logs that; a
    // second session, which set no level, gets every log message).
    let (other, mut other_notes) = legacy_client(&served).await;
    let _ = client.cancel().await;
    let unsubscribed = wait_note(&mut other_notes, Duration::from_secs(5), |n| match n {
        Note::Log { data, .. } => {
            let data = data.to_string();
            (data.contains("Received Unsubscribe") && data.contains(TEXT_9)).then_some(())
        }
        _ => None,
    })
    .await;
    assert!(
        unsubscribed.is_some(),
        "the ended session's subscription is still upstream"
    );
    let _ = other.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_gets_updates_and_list_changes_on_its_listen_stream() {
    let served = serve();
    let connection = McpConnection::Http {
        url: served.url("/mcp"),
        headers: Default::default(),
        oauth2: None,
    };
    let backend = McpBackend::new("gw", connection, McpOptions::default());
    let tools = Toolset::builder()
        .source(RemoteSource::builder("gw", backend.clone()).build())
        .build()
        .unwrap();
    let statuses = tools.discover(1).await;
    assert_eq!(statuses[0].state, SourceState::Ready, "{statuses:?}");
    assert!(
        statuses[0]
            .protocol
            .as_deref()
            .is_some_and(|p| p.contains("2026-07-28")),
        "this test is about the 2026-07-28 era: {statuses:?}"
    );

    let prompts = backend.list_prompts().await.unwrap();
    assert!(
        prompts.iter().any(|p| p.name == "ev2__simple-prompt"),
        "{prompts:?}"
    );
    let mut events = backend.events();
    backend.subscribe(ARCHITECTURE).await.unwrap();
    tools
        .call("gw.toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    let update = McpEvent::ResourceUpdated {
        uri: ARCHITECTURE.to_string(),
    };
    assert!(
        wait_event(&mut events, &update).await,
        "no update on the listen stream"
    );

    let mut changes = backend.events();
    tools
        .call(
            "gw.gzip-file-as-resource",
            json!({"name": "n.gz", "data": "data:text/plain;base64,aGk=", "outputType": "resource"}),
        )
        .await
        .unwrap();
    assert!(
        wait_event(&mut changes, &McpEvent::ResourcesListChanged).await,
        "no resources/list_changed on the listen stream"
    );
    backend.unsubscribe(ARCHITECTURE).await.unwrap();
    tools.close().await;
}
