//! Remote MCP sources against the reference servers (npm `@modelcontextprotocol/server-everything`,
//! `server-filesystem`, `server-memory`), over stdio, streamable HTTP and legacy HTTP+SSE, all in
//! one toolset. Peers come from `scripts/install-peers.sh`.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::peers;
use toolgate_runtime::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate_runtime::remote::RemoteSource;
use toolgate_runtime::{Content, ErrorKind, ProgressReporter, SourceState, ToolContext, Toolset};

fn stdio(program: &str, args: Vec<String>, env: &[(&str, &str)]) -> McpConnection {
    McpConnection::Stdio {
        program: program.to_string(),
        args,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cwd: None,
    }
}

fn everything_stdio() -> McpConnection {
    stdio(
        peers::node().to_str().unwrap(),
        vec![peers::everything_js().display().to_string(), "stdio".into()],
        &[],
    )
}

fn source(id: &str, connection: McpConnection) -> RemoteSource {
    RemoteSource::builder(id, McpBackend::new(id, connection, McpOptions::default())).build()
}

fn names(tools: &Toolset, prefix: &str) -> Vec<String> {
    tools
        .tools()
        .iter()
        .map(|d| d.name.clone())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_servers_over_three_transports_in_one_toolset() {
    let http = peers::everything_http("streamableHttp");
    let sse = peers::everything_http("sse");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello from a file").unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let tools = Toolset::builder()
        .source(source("everything", everything_stdio()))
        .source(source(
            "web",
            McpConnection::Http {
                url: http.url("/mcp"),
                headers: BTreeMap::new(),
                oauth2: None,
            },
        ))
        .source(source(
            "legacy",
            McpConnection::Sse {
                url: sse.url("/sse"),
                headers: BTreeMap::new(),
                oauth2: None,
            },
        ))
        .source(source(
            "fs",
            stdio(
                peers::node().to_str().unwrap(),
                vec![
                    peers::filesystem_js().display().to_string(),
                    dir.path().display().to_string(),
                ],
                &[],
            ),
        ))
        .source(source(
            "memory",
            stdio(
                peers::node().to_str().unwrap(),
                vec![peers::memory_js().display().to_string()],
                &[("MEMORY_FILE_PATH", memory_file.to_str().unwrap())],
            ),
        ))
        .build()
        .unwrap();
    let statuses = tools.discover(8).await;
    for s in &statuses {
        assert_eq!(s.state, SourceState::Ready, "{s:?}");
        assert!(s.tools > 0, "{s:?}");
        assert!(
            s.protocol.as_deref().unwrap().starts_with("mcp 20"),
            "{s:?}"
        );
    }
    for prefix in ["everything.", "web.", "legacy."] {
        let listed = names(&tools, prefix);
        assert!(listed.contains(&format!("{prefix}echo")), "{listed:?}");
        assert!(
            listed.contains(&format!("{prefix}get-tiny-image")),
            "{listed:?}"
        );
    }
    assert!(names(&tools, "fs.").contains(&"fs.read_text_file".to_string()));
    assert!(names(&tools, "memory.").contains(&"memory.create_entities".to_string()));

    // Calls over each transport.
    for prefix in ["everything", "web", "legacy"] {
        let out = tools
            .call(&format!("{prefix}.echo"), json!({"message": "hi"}))
            .await
            .unwrap();
        assert_eq!(out.text_joined(), "Echo: hi", "{prefix}");
    }
    let path = dir.path().join("hello.txt");
    let out = tools
        .call("fs.read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert!(out.text_joined().contains("hello from a file"), "{out:?}");
    tools
        .call(
            "memory__create_entities",
            json!({"entities": [{"name": "toolgate", "entityType": "project", "observations": ["a gateway"]}]}),
        )
        .await
        .unwrap();
    let graph = tools.call("memory.read_graph", json!({})).await.unwrap();
    assert!(graph.text_joined().contains("a gateway"), "{graph:?}");
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_image_keeps_every_part_and_structured_content_passes_through() {
    let tools = Toolset::builder()
        .source(source("everything", everything_stdio()))
        .build()
        .unwrap();
    let out = tools
        .call("everything.get-tiny-image", json!({}))
        .await
        .unwrap();
    let kinds: Vec<&str> = out
        .content
        .iter()
        .map(|c| match c {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "image", "text"], "{out:?}");
    let Content::Image { mime_type, data } = &out.content[1] else {
        unreachable!()
    };
    assert_eq!(mime_type, "image/png");
    assert!(!data.is_empty());

    let out = tools
        .call(
            "everything.get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await
        .unwrap();
    let structured = out.structured.expect("structuredContent");
    assert!(structured["temperature"].is_number(), "{structured}");
    let d = tools.describe("everything.get-structured-content").unwrap();
    assert!(d.output_schema.is_some());

    // Arguments are checked locally against the server's input schema before sending.
    let e = tools
        .call(
            "everything.get-structured-content",
            json!({"location": "Paris"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_running_operation_reports_progress() {
    let tools = Toolset::builder()
        .source(source("everything", everything_stdio()))
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reporter = {
        let seen = Arc::clone(&seen);
        ProgressReporter::new(move |p| seen.lock().unwrap().push((p.progress, p.total)))
    };
    let ctx = ToolContext::builder()
        .progress(reporter)
        .timeout(Duration::from_secs(20))
        .build();
    let out = tools
        .call_with(
            "everything.trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            ctx,
        )
        .await
        .unwrap();
    assert!(out.text_joined().contains("completed"), "{out:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    tools.close().await;
}

/// The official Python SDK (PyPI `mcp` 2.x) speaks the stateless 2026-07-28 era: toolgate
/// negotiates it with `server/discover` (no `initialize`), and calls work the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_in_the_2026_era() {
    let script = peers::test_peers_dir().join("py_server.py");
    let tools = Toolset::builder()
        .source(source(
            "py",
            stdio(
                peers::venv_python().to_str().unwrap(),
                vec![script.display().to_string()],
                &[],
            ),
        ))
        .build()
        .unwrap();
    let status = tools.discover(1).await.remove(0);
    assert_eq!(status.state, SourceState::Ready, "{status:?}");
    assert_eq!(
        status.protocol.as_deref(),
        Some("mcp 2026-07-28"),
        "{status:?}"
    );
    let out = tools.call("py.add", json!({"a": 2, "b": 3})).await.unwrap();
    assert!(out.text_joined().contains('5'), "{out:?}");
    let out = tools.call("py.shout", json!({"text": "hi"})).await.unwrap();
    assert!(out.text_joined().contains("HI"), "{out:?}");
    let e = tools
        .call("py.add", json!({"a": "two", "b": 3}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
    tools.close().await;
}
