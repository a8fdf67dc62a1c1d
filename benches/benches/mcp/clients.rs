//! The three clients of the MCP bench (`benches/benches/mcp.rs`): toolgate's `Toolset` over its
//! persistent session, a bare rmcp client's persistent session, and connect-per-call (spawn,
//! initialize, call, close with rmcp). Every call is `echo` of server-everything over stdio.

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{SourceState, Toolset};

use super::peers;

/// What `echo` must answer to `{"message": "hi"}`.
pub const EXPECTED: &str = "Echo: hi";

fn args() -> Value {
    json!({"message": "hi"})
}

/// The program that runs server-everything (`node` from `PATH`).
pub fn server_program() -> String {
    peers::node().display().to_string()
}

fn server_args() -> Vec<String> {
    vec![peers::everything_js().display().to_string(), "stdio".into()]
}

/// toolgate: one `RemoteSource` over stdio, its tools listed, health checks off (so that no
/// `ping` lands in the measurements). Two toolsets share it (and its one session): the default
/// one, and one with argument validation turned off.
pub async fn toolgate_connect() -> (Toolset, Toolset) {
    let connection = McpConnection::Stdio {
        program: server_program(),
        args: server_args(),
        env: Default::default(),
        cwd: None,
    };
    let backend = McpBackend::new("everything", connection, McpOptions::default());
    let source = RemoteSource::builder("everything", backend)
        .health_interval(None)
        .build();
    let tools = Toolset::builder()
        .source(source.clone())
        .build()
        .expect("toolset builds");
    let unvalidated = Toolset::builder()
        .source(source)
        .validate_arguments(false)
        .build()
        .expect("toolset builds");
    for toolset in [&tools, &unvalidated] {
        let statuses = toolset.discover(1).await;
        assert!(
            statuses.iter().all(|s| s.state == SourceState::Ready),
            "server-everything did not list its tools: {statuses:?}"
        );
        assert!(
            toolset.describe("everything.echo").is_some(),
            "server-everything lists no `echo`"
        );
    }
    (tools, unvalidated)
}

/// rmcp: spawn the server (stderr discarded, killed if dropped) and `initialize`.
pub async fn rmcp_connect() -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(server_program());
    command.args(server_args()).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server-everything");
    ().serve(transport)
        .await
        .expect("initialize server-everything")
}

async fn rmcp_echo(peer: &Peer<RoleClient>) -> String {
    let Value::Object(arguments) = args() else {
        unreachable!("the arguments are an object")
    };
    let result = peer
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("rmcp: echo");
    rmcp_text(&result)
}

fn rmcp_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The whole life of one connect-per-call call: spawn, initialize, call, close. Returns the
/// answer and when it arrived (the rest of the time is the close).
pub async fn connect_per_call() -> (String, Duration) {
    let started = Instant::now();
    let client = rmcp_connect().await;
    let text = rmcp_echo(client.peer()).await;
    let answered = started.elapsed();
    client.cancel().await.expect("close the session");
    (text, answered)
}

/// A persistent client: toolgate's `Toolset` or a bare rmcp peer. Cheap to clone.
#[derive(Clone)]
pub enum Persistent {
    /// toolgate: `Toolset::call`.
    Toolgate(Toolset),
    /// bare rmcp: `peer.call_tool`.
    Rmcp(Peer<RoleClient>),
}

impl Persistent {
    /// One `echo` call; returns the answer's text.
    pub async fn echo(&self) -> String {
        match self {
            Self::Toolgate(tools) => tools
                .call("everything.echo", args())
                .await
                .expect("toolgate: echo")
                .text_joined(),
            Self::Rmcp(peer) => rmcp_echo(peer).await,
        }
    }
}
