//! Context saved by `gateway.tool_search: {mode: meta}`: the MCP `tools/list` answers a client
//! gets from the gateway (served on a loopback port in this process, read with rmcp's
//! streamable-HTTP client, every page), in `meta` mode and with search off, as JSON text
//! (each page's `ListToolsResult` serialized by serde_json, compact) and as tokens of
//! OpenAI's `o200k_base` encoding (tiktoken-rs).

use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::PaginatedRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use toolgate::Toolset;
use toolgate::gateway::Gateway;
use toolgate::model::config::{ToolSearchConfig, ToolSearchMode};

/// How long the whole listing of one mode may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// One mode's listing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing {
    /// Tools listed, over all pages.
    pub tools: usize,
    /// Pages.
    pub pages: usize,
    /// Bytes of JSON, over all pages.
    pub bytes: usize,
    /// `o200k_base` tokens, over all pages.
    pub tokens: usize,
}

/// Lists every page of `tools/list` from a gateway over `toolset` in `mode`.
pub fn list(toolset: &Toolset, mode: ToolSearchMode) -> Listing {
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base encoding loads");
    let gateway = Gateway::builder(toolset.clone())
        .tool_search(ToolSearchConfig {
            mode,
            always: Vec::new(),
            semantic: None,
        })
        .build();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let bodies: Vec<(usize, String)> = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, gateway.router()).await;
        });
        let url = format!("http://127.0.0.1:{port}/mcp");
        let bodies = tokio::time::timeout(DEADLINE, async {
            let client = ()
                .serve(StreamableHttpClientTransport::from_uri(url.clone()))
                .await
                .unwrap_or_else(|e| panic!("initialize a session with {url}: {e}"));
            let mut bodies = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = client
                    .peer()
                    .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                    .await
                    .expect("tools/list");
                let text = serde_json::to_string(&page).expect("serializes");
                bodies.push((page.tools.len(), text));
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            let _ = client.cancel().await;
            bodies
        })
        .await
        .unwrap_or_else(|_| panic!("tools/list did not finish within {DEADLINE:?}"));
        server.abort();
        bodies
    });
    let mut listing = Listing::default();
    for (tools, text) in &bodies {
        listing.tools += tools;
        listing.pages += 1;
        listing.bytes += text.len();
        listing.tokens += bpe.encode_ordinary(text).len();
    }
    listing
}
