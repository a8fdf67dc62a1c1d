//! Remote MCP sources when servers misbehave: each a real process (runtime/tests/peers/
//! fault_server.py over stdio, http_session_server.py over streamable HTTP) doing one wrong
//! thing: junk on stdout, a crash mid-call, odd results, a lost session, an unknown protocol
//! version, a huge result.

mod support;

#[path = "mcp_faults/deadlines.rs"]
mod deadlines;
#[path = "mcp_faults/sessions.rs"]
mod sessions;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::peers;
use toolgate_runtime::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate_runtime::remote::{RemoteBackend, RemoteSource};
use toolgate_runtime::{Content, ErrorKind, SourceState, ToolContext, ToolDescriptor, Toolset};

fn fault(mode: &str, env: &[(&str, &str)]) -> McpConnection {
    McpConnection::Stdio {
        program: peers::python3().display().to_string(),
        args: vec![peers::fault_server_py().display().to_string(), mode.into()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cwd: None,
    }
}

fn toolset(id: &str, connection: McpConnection) -> Toolset {
    toolset_with(id, connection, McpOptions::default())
}

fn toolset_with(id: &str, connection: McpConnection, options: McpOptions) -> Toolset {
    Toolset::builder()
        .source(RemoteSource::builder(id, McpBackend::new(id, connection, options)).build())
        .build()
        .unwrap()
}

async fn ready(tools: &Toolset) {
    let statuses = tools.discover(4).await;
    assert!(
        statuses.iter().all(|s| s.state == SourceState::Ready),
        "{statuses:?}"
    );
}

/// Calls `reports.die` (the server SIGKILLs itself) under a 30 s deadline: the call must fail
/// with `network` within a second, not at the deadline.
async fn dies_at_once(tools: &Toolset) -> toolgate_runtime::ToolError {
    let ctx = ToolContext::builder()
        .timeout(Duration::from_secs(30))
        .build();
    let started = Instant::now();
    let e = tools
        .call_with("reports.die", json!({}), ctx)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "failed after {:?}, not at once",
        started.elapsed()
    );
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    e
}

/// The server dies during a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_server_fails_the_call_at_once_and_the_next_call_reconnects() {
    let tools = toolset("reports", fault("die", &[]));
    ready(&tools).await;
    let e = dies_at_once(&tools).await;
    assert!(e.is_retryable());
    let m = e.message();
    assert!(
        m.contains("server `reports` was killed by signal 9 during tools/call die"),
        "{m}"
    );
    assert!(
        m.contains("fatal: about to die"),
        "the stderr tail is in the message: {m}"
    );
    // The next call starts a new session (a new process).
    let out = tools
        .call("reports.echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "again");
    tools.close().await;
}

/// The server dies during a call while a grandchild keeps the server's stdout open: the process's end is what counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_server_whose_child_holds_stdout_still_fails_at_once() {
    let script = format!(
        "sleep 300 & exec {} {} die",
        peers::python3().display(),
        peers::fault_server_py().display()
    );
    let connection = McpConnection::Stdio {
        program: "sh".into(),
        args: vec!["-c".into(), script],
        env: BTreeMap::new(),
        cwd: None,
    };
    let tools = toolset("reports", connection);
    ready(&tools).await;
    let e = dies_at_once(&tools).await;
    assert!(e.message().contains("killed by signal 9"), "{e}");
    tools.close().await;
}

/// A server that never answers: `timeout` at the deadline, `notifications/cancelled` sent, the
/// session still usable (a late reply would be ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_call_times_out_and_is_cancelled_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled.jsonl");
    let tools = toolset(
        "slow",
        fault("hang", &[("FAULT_LOG", log.to_str().unwrap())]),
    );
    ready(&tools).await;
    let ctx = ToolContext::builder()
        .timeout(Duration::from_millis(500))
        .build();
    let started = Instant::now();
    let e = tools
        .call_with("slow.hang", json!({}), ctx)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    // The cancellation reaches the server.
    let mut cancelled = String::new();
    for _ in 0..50 {
        cancelled = std::fs::read_to_string(&log).unwrap_or_default();
        if cancelled.contains("notifications/cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let line = cancelled
        .lines()
        .find(|l| l.contains("notifications/cancelled"));
    let first: Value = serde_json::from_str(line.expect("a cancellation")).unwrap();
    assert_eq!(first["method"], "notifications/cancelled");
    assert!(first["params"]["requestId"].is_number() || first["params"]["requestId"].is_string());
    let out = tools
        .call("slow.echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "still here");
    tools.close().await;
}

/// Junk lines and a BOM on stdout are skipped; the session works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_on_stdout_is_skipped() {
    for mode in ["junk", "junk_bom"] {
        let tools = toolset("noisy", fault(mode, &[]));
        ready(&tools).await;
        for i in 0..3 {
            let out = tools
                .call("noisy.echo", json!({"message": format!("m{i}")}))
                .await
                .unwrap();
            assert_eq!(out.text_joined(), format!("m{i}"), "{mode}");
        }
        tools.close().await;
    }
}

/// A server that cannot start does not hide the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_does_not_hide_the_others() {
    let broken = McpConnection::Stdio {
        program: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: BTreeMap::new(),
        cwd: None,
    };
    let crashing = fault("no-such-mode", &[]);
    let tools = Toolset::builder()
        .source(
            RemoteSource::builder(
                "broken",
                McpBackend::new("broken", broken, McpOptions::default()),
            )
            .build(),
        )
        .source(
            RemoteSource::builder(
                "crashing",
                McpBackend::new("crashing", crashing, McpOptions::default()),
            )
            .build(),
        )
        .source(
            RemoteSource::builder(
                "good",
                McpBackend::new("good", fault("echo", &[]), McpOptions::default()),
            )
            .build(),
        )
        .build()
        .unwrap();
    let statuses = tools.discover(4).await;
    let by_id = |id: &str| statuses.iter().find(|s| s.id == id).unwrap().clone();
    let broken = by_id("broken");
    assert_eq!(broken.state, SourceState::Failed);
    assert!(
        broken
            .error
            .as_deref()
            .unwrap()
            .contains("cannot start MCP server `broken`"),
        "{broken:?}"
    );
    let crashing = by_id("crashing");
    assert_eq!(crashing.state, SourceState::Failed);
    assert!(
        crashing.error.as_deref().unwrap().contains("unknown mode"),
        "stderr tail: {crashing:?}"
    );
    assert_eq!(by_id("good").state, SourceState::Ready);
    let out = tools
        .call("good.echo", json!({"message": "ok"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "ok");
    // The failed one answers with its error, not `not_found`.
    let e = tools.call("broken.anything", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    tools.close().await;
}

/// An older version is accepted and kept; an unknown one is refused, naming the versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_versions_are_negotiated() {
    let tools = toolset("old", fault("old", &[]));
    ready(&tools).await;
    assert_eq!(
        tools.statuses()[0].protocol.as_deref(),
        Some("mcp 2024-11-05")
    );
    tools
        .call("old.echo", json!({"message": "x"}))
        .await
        .unwrap();
    tools.close().await;

    let tools = toolset("ancient", fault("ancient", &[]));
    let s = tools.discover(1).await.remove(0);
    assert_eq!(s.state, SourceState::Failed);
    let error = s.error.unwrap();
    assert!(
        error.contains("unsupported protocol version 2023-01-01 (supported: 2024-11-05"),
        "{error}"
    );
    tools.close().await;
}

/// Every part kept, `isError` an upstream error, structured content checked
/// against the output schema unless the result is an error, and mirrored as text when
/// `content` is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_keep_every_part_and_errors_are_classified() {
    let tools = toolset("r", fault("results", &[]));
    ready(&tools).await;
    let out = tools.call("r.multi", json!({})).await.unwrap();
    let parts = serde_json::to_value(&out.content).unwrap();
    assert_eq!(
        parts,
        json!([
            {"type": "text", "text": "Page title: Dashboard"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///r/report.csv", "mimeType": "text/csv", "text": "a,b\n1,2"}},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
        ])
    );
    let out = tools.call("r.empty", json!({})).await.unwrap();
    assert_eq!(out.content, [Content::text("(tool returned no content)")]);

    let e = tools.call("r.app_error", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream);
    assert!(!e.is_retryable(), "an application error is not retried");
    assert!(e.message().contains("table not found: orders"), "{e}");
    let as_output = e.clone().into_output();
    assert!(as_output.is_error && as_output.text_joined().contains("table not found: orders"));

    let out = tools.call("r.structured", json!({})).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"status": "available", "count": 3}))
    );
    assert_eq!(out.text_joined(), r#"{"status":"available","count":3}"#);

    let e = tools
        .call("r.structured_error", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream);
    assert!(e.message().contains("quota exceeded"), "{e}");

    let e = tools.call("r.structured_bad", json!({})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol);
    assert!(
        e.message().contains("does not match its output schema"),
        "{e}"
    );

    // A JSON-RPC error (a tool the server does not know) is a protocol error.
    let backend = McpBackend::new("r", fault("results", &[]), McpOptions::default());
    let ghost = ToolDescriptor {
        name: "r.ordrs".into(),
        ..ToolDescriptor::default()
    };
    let e = backend
        .call(&ghost, "ordrs", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        e.message().contains("-32602") && e.message().contains("Unknown tool: ordrs"),
        "{e}"
    );
    backend.close().await;
    tools.close().await;
}

/// A 5 MB text result is cut head + tail with a marker, and kept in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn very_large_results_are_cut_and_kept() {
    let tools = toolset("r", fault("results", &[]));
    ready(&tools).await;
    let out = tools
        .call("r.big", json!({"bytes": 5_000_000}))
        .await
        .unwrap();
    let text = out.text_joined();
    assert!(text.len() <= 70_000, "{} bytes", text.len());
    let marker = text.find("[… truncated ").expect("a marker");
    let uri = text[marker..].split("full result: ").nth(1).unwrap();
    let uri = &uri[..uri.find(']').unwrap()];
    assert!(uri.starts_with("toolgate://results/r/"), "{uri}");
    let full = tools.stored_result(uri).await.expect("the full result");
    assert_eq!(full.text_joined().len(), 5_000_000);

    // A frame over the transport's cap is refused, not buffered: the call fails at once (the
    // frame's request id is answered with an error), and the session survives.
    let tools = toolset_with(
        "capped",
        fault("results", &[]),
        McpOptions {
            max_frame_bytes: 1 << 20,
            ..McpOptions::default()
        },
    );
    ready(&tools).await;
    let ctx = ToolContext::builder()
        .timeout(Duration::from_secs(20))
        .build();
    let started = Instant::now();
    let e = tools
        .call_with("capped.big", json!({"bytes": 3_000_000}), ctx)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        e.message().contains("over the 1048576-byte frame limit"),
        "{e}"
    );
    tools
        .call("capped.echo", json!({"message": "fine"}))
        .await
        .unwrap();
    tools.close().await;
}

/// tools/list pagination is followed, with a bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_is_followed_with_a_bound() {
    let tools = toolset("p", fault("paged", &[]));
    ready(&tools).await;
    let names: Vec<_> = tools.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["p.t1", "p.t2", "p.t3", "p.t4", "p.t5", "p.t6"]);
    tools.close().await;

    let tools = toolset_with(
        "f",
        fault("paged_forever", &[]),
        McpOptions {
            max_list_pages: 5,
            ..McpOptions::default()
        },
    );
    ready(&tools).await;
    assert_eq!(
        tools.tools().len(),
        10,
        "five pages of two tools each, then cut off"
    );
    tools.close().await;
}

/// notifications/tools/list_changed triggers a new listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_brings_new_tools() {
    let tools = toolset("lc", fault("list_changed", &[]));
    ready(&tools).await;
    assert!(tools.describe("lc.b").is_none());
    tools.call("lc.add_tool", json!({})).await.unwrap();
    for _ in 0..100 {
        if tools.describe("lc.b").is_some() {
            tools.close().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("lc.b never appeared: {:?}", tools.tools());
}

/// What generated code does with tools.yaml's `mcp:` entries: sources built at `build()`,
/// secrets resolved then, errors as `BuildError`s naming the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolsets_read_mcp_servers_from_tools_yaml() {
    let yaml = format!(
        "version: 1\ntools:\n  deny: [\"*.hang\"]\n  mcp:\n    - id: faulty\n      stdio: {{command: {}, args: [{}, hang]}}\n",
        peers::python3().display(),
        peers::fault_server_py().display()
    );
    let tools = Toolset::builder()
        .mcp_servers_from_yaml(&yaml, ".")
        .build()
        .unwrap();
    ready(&tools).await;
    let names: Vec<_> = tools.tools().iter().map(|d| d.name.clone()).collect();
    assert_eq!(
        names,
        ["faulty.echo"],
        "the global deny list hides faulty.hang"
    );
    tools.close().await;

    let yaml = "version: 1\ntools:\n  mcp:\n    - id: remote\n      http: {url: \"http://127.0.0.1:9/mcp\", bearer_token: \"${TOOLGATE_TEST_UNSET_TOKEN}\"}\n";
    let e = Toolset::builder()
        .mcp_servers_from_yaml(yaml, ".")
        .build()
        .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("remote") && m.contains("TOOLGATE_TEST_UNSET_TOKEN"),
        "{m}"
    );
}

/// Called directly (no toolset, no deadline in the context), a remote source still bounds the
/// call by its own timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_called_without_a_deadline_still_times_out() {
    use toolgate_runtime::{SourceLifecycle, ToolSource};
    let source = RemoteSource::builder(
        "slow",
        McpBackend::new("slow", fault("hang", &[]), McpOptions::default()),
    )
    .call_timeout(Some(Duration::from_millis(300)))
    .build();
    source.discover().await.unwrap();
    let started = Instant::now();
    let source: std::sync::Arc<dyn ToolSource> = std::sync::Arc::new(source);
    let e = toolgate_runtime::testing::call_source(
        std::sync::Arc::clone(&source),
        "slow.hang",
        json!({}),
        ToolContext::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    source.lifecycle().expect("a remote source").close().await;
}

/// Every process whose command line contains `marker`, and every zombie child of this process.
fn leftovers(marker: &str) -> (Vec<u32>, Vec<u32>) {
    let me = std::process::id().to_string();
    let mut alive = Vec::new();
    let mut zombies = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            alive.push(pid);
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
            zombies.push(pid);
        }
    }
    (alive, zombies)
}

/// `Toolset::close` ends every server process (stdin closed first) and leaves no zombie; so do
/// the sessions replaced after a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_leaves_no_process_and_no_zombie() {
    let marker = format!("toolgate-close-test-{}", std::process::id());
    let connection = McpConnection::Stdio {
        program: peers::python3().display().to_string(),
        args: vec![
            peers::fault_server_py().display().to_string(),
            "die".into(),
            marker.clone(),
        ],
        env: BTreeMap::new(),
        cwd: None,
    };
    let tools = toolset("procs", connection);
    ready(&tools).await;
    assert_eq!(leftovers(&marker).0.len(), 1, "one server process");
    // A crash and a new session: still one process.
    tools.call("procs.die", json!({})).await.unwrap_err();
    tools
        .call("procs.echo", json!({"message": "x"}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(leftovers(&marker).0.len(), 1, "the crashed one is gone");
    let started = Instant::now();
    tools.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "stdin closed: the server exits by itself"
    );
    let (alive, zombies) = leftovers(&marker);
    assert!(alive.is_empty(), "left running: {alive:?}");
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
}
