//! A result cut to `max_result_bytes` is kept in full and can be read at its
//! `toolgate://results/…` URI: that full copy must be masked like the cut one, by the tool's own
//! guardrails and by a virtual server's. server-everything's `echo` (stdio) repeats a long
//! message whose e-mail address lies beyond the cut, so only the stored copy holds it.

use rmcp::model::{ReadResourceRequestParams, ReadResourceResponse, ResourceContents};
use serde_json::json;
use toolgate::Toolset;
use toolgate::mcp::McpBackend;

use crate::harness::{self, Served};
use crate::mcp_http::runtime;

const EMAIL: &str = "ann.lee@example.com";

/// `everything` (results over 400 bytes cut and kept) with `echo` under the `pii` guardrail,
/// and ev2 (no guardrail of its own) behind the virtual server `partners`, which names `pii`.
fn served() -> Served {
    let mcp = harness::everything_stdio_entry("everything", "prefix: false\nmax_result_bytes: 400")
        + &harness::everything_stdio_entry("ev2", "max_result_bytes: 400");
    let gateway = "gateway:\n  servers:\n    - id: partners\n      tools: {include: [{source: ev2}]}\n      guardrails: [pii]\n";
    let yaml = harness::tools_yaml(&mcp, gateway);
    let own = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(yaml.contains(own), "tools.yaml's policy section moved");
    let policy = format!(
        "{own}  guardrails:\n    pii:\n      mask: {{detectors: [email]}}\n  tools:\n    echo: {{guardrails: [pii]}}\n"
    );
    harness::serve(&yaml.replacen(own, &policy, 1), &[])
}

async fn client(served: &Served, path: &str) -> (McpBackend, Toolset) {
    harness::mcp_client_at(served, path, &[]).await
}

/// Calls `tool` with a message longer than the cut (which keeps its head and tail), the
/// address in its middle; reads the URI the cut result names; returns the full text read
/// there.
async fn full_text_read_back(backend: &McpBackend, tools: &Toolset, tool: &str) -> String {
    let message = format!("{} {EMAIL} {} END", "x".repeat(1000), "y".repeat(1000));
    let cut = tools
        .call(tool, json!({"message": message}))
        .await
        .expect("echo answers");
    let shown = format!("{:?}", cut.content);
    assert!(
        !shown.contains(EMAIL),
        "the cut result shows no address: {shown}"
    );
    let start = shown.find("toolgate://results/").expect("a results URI");
    let uri: String = shown[start..]
        .chars()
        .take_while(|c| !matches!(c, ']' | ' ' | '"' | '\\' | ')'))
        .collect();
    let read = backend
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e:?}"));
    let ReadResourceResponse::Complete(read) = read else {
        panic!("{uri}: asked for input");
    };
    read.contents
        .iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_cut_results_stored_copy_is_masked_by_the_tools_and_the_servers_guardrails() {
    let served = served();
    runtime().block_on(async {
        // The tool's own guardrail, on the default endpoint.
        let (backend, tools) = client(&served, "/mcp").await;
        let full = full_text_read_back(&backend, &tools, "gw.echo").await;
        assert!(
            full.contains("END"),
            "the whole result is read back: {full}"
        );
        assert!(!full.contains(EMAIL), "the stored copy is masked: {full}");
        assert!(full.contains("[email]"), "{full}");

        // ev2's echo has no guardrail of its own: raw on the default endpoint (the positive
        // control), masked through `partners`, which names `pii`.
        let raw = full_text_read_back(&backend, &tools, "gw.ev2__echo").await;
        assert!(raw.contains(EMAIL), "no guardrail, no mask: {raw}");
        let (partners, partner_tools) = client(&served, "/mcp/partners").await;
        let full = full_text_read_back(&partners, &partner_tools, "gw.ev2__echo").await;
        assert!(full.contains("END"), "{full}");
        assert!(!full.contains(EMAIL), "masked through the server: {full}");
    });
}
