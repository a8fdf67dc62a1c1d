//! `toolgate probe`: one MCP server, no config: list its tools or call one. Also what the MCP
//! conformance suite's client scenarios drive (it appends the scenario server's URL).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{ToolContext, Toolset};

use super::args::exit;
use super::{CmdResult, Failure, output};

/// The source id the probed server gets.
const ID: &str = "server";

/// What `toolgate probe` was asked to do, besides its target.
pub(super) struct Probe {
    /// The tool to call (its name on the server), or `None` to list.
    pub call: Option<String>,
    /// `--header` values, `Name: value`.
    pub headers: Vec<String>,
    /// The call's arguments.
    pub args: Value,
    /// The deadline of the connection, the listing and the call, in milliseconds.
    pub timeout_ms: u64,
    /// JSON on stdout.
    pub json: bool,
}

/// `toolgate probe --json` without `--call`.
#[derive(serde::Serialize)]
struct ProbeOut<'a> {
    /// The server's name and version, as it introduced itself.
    server: Option<&'a str>,
    /// The protocol and version spoken (`mcp 2025-06-18`).
    protocol: Option<&'a str>,
    /// How long the listing took, in milliseconds.
    discovery_ms: Option<u64>,
    /// Tools the server listed that cannot be offered, with the reason.
    rejected: &'a [String],
    /// Every tool's descriptor (names as on the server, after `server.`).
    tools: Vec<std::sync::Arc<toolgate::ToolDescriptor>>,
}

impl Probe {
    /// Connects to `target` (a URL, or a command and its arguments), lists or calls, and
    /// closes the session.
    pub(super) async fn run(self, target: Vec<String>) -> CmdResult {
        let Self {
            call,
            headers,
            args,
            timeout_ms,
            json,
        } = self;
        let mut parsed = BTreeMap::new();
        for h in &headers {
            let Some((name, value)) = h.split_once(':') else {
                return Err(Failure::new(
                    exit::USAGE,
                    format!("error: --header `{h}` is not `Name: value`"),
                ));
            };
            parsed.insert(name.trim().to_string(), value.trim().to_string());
        }
        let connection = connection(target, parsed);
        let timeout = Duration::from_millis(timeout_ms);
        let options = McpOptions {
            connect_timeout: timeout,
            ..McpOptions::default()
        };
        let source = RemoteSource::builder(ID, McpBackend::new(ID, connection, options))
            .discovery_timeout(timeout)
            .health_interval(None)
            .build();
        let tools = Toolset::builder()
            .source(source)
            .build()
            .map_err(|e| Failure::new(exit::CONFIG, format!("error: {e}")))?;
        let result = async {
            let status = tools.discover(1).await.remove(0);
            if let Some(error) = status.error {
                return Err(Failure::new(exit::TOOL_ERROR, format!("error: {error}")));
            }
            let Some(name) = call else {
                if json {
                    output::print_json(&ProbeOut {
                        server: status.server.as_deref(),
                        protocol: status.protocol.as_deref(),
                        discovery_ms: status.discovery_ms,
                        rejected: &status.rejected,
                        tools: tools.tools(),
                    });
                } else {
                    if let (Some(server), Some(protocol)) = (&status.server, &status.protocol) {
                        output::write_err(&format!("server: {server} ({protocol})"));
                    }
                    output::list(&tools, false, &output::ListFilter::default());
                }
                return Ok(exit::OK);
            };
            let ctx = ToolContext::builder()
                .caller("cli")
                .timeout(timeout)
                .build();
            match tools.call_with(&format!("{ID}.{name}"), args, ctx).await {
                Ok(out) => {
                    output::call_output(&out, json);
                    Ok(if out.is_error {
                        exit::TOOL_ERROR
                    } else {
                        exit::OK
                    })
                }
                Err(e) => {
                    let code = if e.kind() == toolgate::ErrorKind::NotFound {
                        exit::NOT_FOUND
                    } else {
                        exit::TOOL_ERROR
                    };
                    Err(Failure::new(code, output::error_text(&e)))
                }
            }
        }
        .await;
        tools.close().await;
        result
    }
}

/// A URL (an `/sse` path: legacy HTTP+SSE), else a command line.
fn connection(mut target: Vec<String>, headers: BTreeMap<String, String>) -> McpConnection {
    let first = target.first().cloned().unwrap_or_default();
    if first.starts_with("http://") || first.starts_with("https://") {
        let path = first.split('?').next().unwrap_or_default();
        return if path.trim_end_matches('/').ends_with("/sse") {
            McpConnection::Sse {
                url: first,
                headers,
                oauth2: None,
            }
        } else {
            McpConnection::Http {
                url: first,
                headers,
                oauth2: None,
            }
        };
    }
    let program = target.remove(0);
    McpConnection::Stdio {
        program,
        args: target,
        env: BTreeMap::new(),
        cwd: None,
    }
}
