//! Tool search (`gateway.tool_search`) through virtual servers of `toolgate serve`: on a
//! server's MCP endpoint the meta tools are the server's — `tools/list` shows them with the
//! `always` tools the server selects, `search_tools` ranks only its tools and names them as it
//! shows them, `describe_tools` and `call_tool` take those names and find nothing else — and
//! REST's `?q=` on `/servers/{id}/tools` returns the best of the server's tools.

use serde_json::{Value, json};
use toolgate::{ErrorKind, Toolset};

use crate::harness::{self, Served};
use crate::mcp_http::runtime;

/// Meta mode with `calc` and `read_file` always listed; `math` shows `calc` as `m_calc`,
/// `dirs` shows `list_dir`.
fn served() -> Served {
    let gateway = r#"gateway:
  tool_search: {mode: meta, always: [calc, read_file]}
  servers:
    - {id: math, tools: {include: [{name: calc}]}, prefix: m_}
    - {id: dirs, tools: {include: [{name: list_dir}]}}
"#;
    harness::serve(&harness::tools_yaml("", gateway), &[])
}

/// toolgate's own MCP client on the gateway's endpoint `path`, as source `gw`.
async fn client(served: &Served, path: &str) -> Toolset {
    harness::mcp_client_at(served, path, &[]).await.1
}

fn names(tools: &Toolset) -> Vec<String> {
    tools.tools().iter().map(|d| d.name.clone()).collect()
}

async fn structured(tools: &Toolset, name: &str, args: Value) -> Value {
    let out = tools
        .call(name, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {args}: {e}"));
    out.structured
        .unwrap_or_else(|| panic!("{name} {args}: no structuredContent"))
}

fn hit_names(found: &Value) -> Vec<&str> {
    found["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {found}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

#[test]
fn a_virtual_servers_meta_tools_search_describe_and_call_only_its_tools_under_its_names() {
    let served = served();
    runtime().block_on(async {
        let math = client(&served, "/mcp/math").await;
        let dirs = client(&served, "/mcp/dirs").await;
        // tools/list: the meta tools, and the `always` tools the server selects, its way.
        assert_eq!(
            names(&math),
            [
                "gw.search_tools",
                "gw.describe_tools",
                "gw.call_tool",
                "gw.m_calc"
            ]
        );
        assert_eq!(
            names(&dirs),
            ["gw.search_tools", "gw.describe_tools", "gw.call_tool"]
        );

        // search_tools: the server's tools only, under its names.
        let found = structured(
            &math,
            "gw.search_tools",
            json!({"query": "evaluate an arithmetic expression"}),
        )
        .await;
        assert_eq!(hit_names(&found), ["m_calc"], "{found}");
        let found = structured(&math, "gw.search_tools", json!({"query": "read a file"})).await;
        assert!(hit_names(&found).iter().all(|n| *n == "m_calc"), "{found}");
        // The best of the server's tools, not the best of all (read_file) filtered away.
        let found = structured(
            &dirs,
            "gw.search_tools",
            json!({"query": "read a file", "k": 1}),
        )
        .await;
        assert_eq!(hit_names(&found), ["list_dir"], "{found}");

        // describe_tools: by the server's names; other names are not found.
        let described = structured(
            &math,
            "gw.describe_tools",
            json!({"names": ["m_calc", "calc", "read_file"]}),
        )
        .await;
        assert_eq!(described["tools"][0]["name"], "m_calc", "{described}");
        assert!(
            described["tools"][0]["inputSchema"]["properties"]["expression"].is_object(),
            "{described}"
        );
        assert_eq!(described["not_found"], json!(["calc", "read_file"]));

        // call_tool: a tool of the server by its name; another tool is not found there.
        let called = structured(
            &math,
            "gw.call_tool",
            json!({"name": "m_calc", "arguments": {"expression": "2 * (3 + 4)"}}),
        )
        .await;
        assert_eq!(called["value"], 14, "{called}");
        let e = math
            .call(
                "gw.call_tool",
                json!({"name": "read_file", "arguments": {"path": "README.md"}}),
            )
            .await
            .expect_err("read_file is not math's");
        assert!(
            e.kind() == ErrorKind::NotFound || e.message().contains("not_found"),
            "{e:?}"
        );
        math.close().await;
        dirs.close().await;
    });

    // REST: `?q=` on a server ranks its tools only. Over the whole toolset the best hit is
    // read_file: the best of all, filtered to the server's, would be nothing.
    let (status, body) = harness::get(served.port(), "/tools?q=read%20a%20file&k=1", &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["tools"][0]["name"], "read_file", "{list}");
    let (status, body) = harness::get(
        served.port(),
        "/servers/dirs/tools?q=read%20a%20file&k=1",
        &[],
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let found: Vec<&str> = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(found, ["list_dir"], "{list}");
}
