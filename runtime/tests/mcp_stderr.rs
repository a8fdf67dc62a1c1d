//! What a stdio MCP server writes to stderr: read line by line whatever the bytes (a line that
//! is not UTF-8 never stops the reading: a server whose stderr is no longer read blocks on a
//! full pipe), quoted in errors without its secrets, and without garbling the names of things
//! (runtime/tests/peers/fault_server.py, stdlib only).

mod support;

use std::time::Duration;

use serde_json::json;
use support::peers;
use toolgate_runtime::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate_runtime::remote::RemoteSource;
use toolgate_runtime::{SourceState, ToolContext, Toolset};

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

async fn toolset(id: &str, connection: McpConnection) -> Toolset {
    let tools = Toolset::builder()
        .source(
            RemoteSource::builder(id, McpBackend::new(id, connection, McpOptions::default()))
                .build(),
        )
        .build()
        .unwrap();
    let statuses = tools.discover(1).await;
    assert_eq!(statuses[0].state, SourceState::Ready, "{statuses:?}");
    tools
}

fn within_30s() -> ToolContext {
    ToolContext::builder()
        .timeout(Duration::from_secs(30))
        .build()
}

/// Finding 9: a stderr line with invalid UTF-8 (`ff fe`) is read (lossily) like any other, and
/// the 1 MiB of stderr after it too: the server is not left blocked on a full pipe, its call
/// answers and the next one as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_line_that_is_not_utf8_does_not_stop_the_reading() {
    let tools = toolset("noisy", fault("stderr", &[])).await;
    let out = tools
        .call_with("noisy.bad_utf8", json!({}), within_30s())
        .await
        .unwrap_or_else(|e| panic!("the server must keep working: {e}"));
    assert_eq!(out.text_joined(), "still here");
    let out = tools
        .call_with("noisy.bad_utf8", json!({}), within_30s())
        .await
        .unwrap_or_else(|e| panic!("and keep working: {e}"));
    assert_eq!(out.text_joined(), "still here");
    let out = tools
        .call_with(
            "noisy.echo",
            json!({"message": "same process"}),
            within_30s(),
        )
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "same process");
    tools.close().await;
}

/// Finding 7: only configured secrets are masked. An env value under a plain name (`REPORT_NAME:
/// reports`) is no secret, and the server's id, equal to it, reads as it is in the error of its
/// crash (not "server `[redacted]`"). A value under a credential name is masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_equal_to_an_env_value_are_not_garbled() {
    let tools = toolset(
        "reports",
        fault(
            "die",
            &[
                ("REPORT_NAME", "reports"),
                ("LOG_FORMAT", "plain-text"),
                ("REPORTS_API_TOKEN", "tok-3e9f1a7c5b"),
            ],
        ),
    )
    .await;
    let e = tools
        .call_with("reports.die", json!({}), within_30s())
        .await
        .unwrap_err();
    let m = e.message();
    assert!(m.contains("server `reports` was killed by signal 9"), "{m}");
    assert!(!m.contains("[redacted]"), "nothing here is a secret: {m}");
    tools.close().await;

    // The token, echoed back, is masked.
    let echo = toolset(
        "echoer",
        fault("echo", &[("REPORTS_API_TOKEN", "tok-3e9f1a7c5b")]),
    )
    .await;
    let out = echo
        .call("echoer.echo", json!({"message": "sent tok-3e9f1a7c5b"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "sent [redacted]");
    let out = echo
        .call("echoer.echo", json!({"message": "plain-text reports"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "plain-text reports");
    echo.close().await;
}
