//! `gateway.tool_search` through `toolgate serve`, with toolgate's own MCP client on `/mcp`:
//! in `meta` mode `tools/list` holds only the meta tools and the `always` tools; search,
//! describe and call go through them with the caller's authorization (a rule keeps `calc` for
//! admins: a reader neither finds, nor describes, nor calls it); in `both` mode the meta tools
//! sit next to every tool.

use serde_json::{Value, json};
use toolgate::{ErrorKind, Toolset};

use crate::harness::{Served, serve_with_env, tools_yaml};

const READER: &str = "reader-key-0123";
const ADMIN: &str = "admin-key-4567";
const KEYS: &[(&str, &str)] = &[("TG_READER", READER), ("TG_ADMIN", ADMIN)];

/// The repository's tools.yaml with two API keys, `calc` kept for admins, and `tool_search`.
fn config(tool_search: &str) -> String {
    let gateway = format!(
        "gateway:\n  api_keys:\n    - {{name: reader, key: \"${{TG_READER}}\", roles: [reader]}}\n    - {{name: admin, key: \"${{TG_ADMIN}}\", roles: [admin]}}\n  tool_search: {tool_search}\n"
    );
    let base = tools_yaml("", &gateway);
    let yaml = base.replacen(
        "\npolicy:\n",
        "\npolicy:\n  rules:\n    - {tools: [calc], roles: [admin]}\n",
        1,
    );
    assert_ne!(yaml, base, "tools.yaml has a policy section");
    yaml
}

async fn client(served: &Served, key: &str) -> Toolset {
    let bearer = format!("Bearer {key}");
    crate::harness::mcp_client_at(served, "/mcp", &[("Authorization", bearer.as_str())])
        .await
        .1
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn meta_mode_lists_search_describe_and_call_and_keeps_the_callers_authorization() {
    let served = serve_with_env(
        &config("{mode: meta, always: [current_time, calc]}"),
        &[],
        KEYS,
    );
    runtime().block_on(async {
        // tools/list: the three meta tools and the `always` tools this caller may call.
        let reader = client(&served, READER).await;
        assert_eq!(
            names(&reader),
            [
                "gw.search_tools",
                "gw.describe_tools",
                "gw.call_tool",
                "gw.current_time"
            ]
        );
        let admin = client(&served, ADMIN).await;
        assert_eq!(
            names(&admin),
            [
                "gw.search_tools",
                "gw.describe_tools",
                "gw.call_tool",
                "gw.current_time",
                "gw.calc"
            ]
        );

        // search → describe → call, as an admin.
        let query = json!({"query": "evaluate an arithmetic expression", "k": 3});
        let found = structured(&admin, "gw.search_tools", query.clone()).await;
        assert_eq!(hit_names(&found).first(), Some(&"calc"), "{found}");
        assert!(found["tools"][0]["score"].as_f64().is_some_and(|s| s > 0.0));
        assert!(hit_names(&found).len() <= 3, "{found}");
        let described = structured(
            &admin,
            "gw.describe_tools",
            json!({"names": ["calc", "no_such_tool"]}),
        )
        .await;
        assert_eq!(described["tools"][0]["name"], "calc", "{described}");
        assert!(
            described["tools"][0]["inputSchema"]["properties"]["expression"].is_object(),
            "{described}"
        );
        assert_eq!(described["not_found"], json!(["no_such_tool"]));
        let called = structured(
            &admin,
            "gw.call_tool",
            json!({"name": "calc", "arguments": {"expression": "2 * (3 + 4)"}}),
        )
        .await;
        assert_eq!(called["value"], 14, "{called}");

        // A reader: never found, never described, refused like a direct call.
        let found = structured(&reader, "gw.search_tools", query).await;
        assert!(!hit_names(&found).contains(&"calc"), "{found}");
        let described = structured(&reader, "gw.describe_tools", json!({"names": ["calc"]})).await;
        assert_eq!(described["tools"], json!([]), "{described}");
        assert_eq!(described["not_found"], json!(["calc"]));
        let e = reader
            .call(
                "gw.call_tool",
                json!({"name": "calc", "arguments": {"expression": "1"}}),
            )
            .await
            .expect_err("a reader may not call calc");
        assert!(
            e.kind() == ErrorKind::PermissionDenied || e.message().contains("permission_denied"),
            "{e:?}"
        );
        // A tool outside the list is still called through call_tool, and directly.
        let out = structured(
            &reader,
            "gw.call_tool",
            json!({"name": "jq", "arguments": {"filter": ".a", "input": {"a": 7}}}),
        )
        .await;
        assert!(out.to_string().contains('7'), "{out}");

        // A query with nothing to search for is an error result, not an empty list.
        let e = reader
            .call("gw.search_tools", json!({"query": "the of a"}))
            .await
            .expect_err("a stop-word query");
        assert!(e.message().contains("invalid_arguments"), "{e:?}");
        reader.close().await;
        admin.close().await;
    });
}

#[test]
fn both_mode_lists_the_meta_tools_next_to_every_tool() {
    let served = serve_with_env(&config("{mode: both}"), &[], KEYS);
    runtime().block_on(async {
        let reader = client(&served, READER).await;
        let listed = names(&reader);
        assert_eq!(
            listed[..3],
            ["gw.search_tools", "gw.describe_tools", "gw.call_tool"],
            "{listed:?}"
        );
        for tool in ["gw.read_file", "gw.jq", "gw.current_time"] {
            assert!(listed.iter().any(|n| n == tool), "{tool}: {listed:?}");
        }
        assert!(!listed.iter().any(|n| n == "gw.calc"), "{listed:?}");
        let found = structured(&reader, "gw.search_tools", json!({"query": "read a file"})).await;
        assert_eq!(hit_names(&found).first(), Some(&"read_file"), "{found}");
        reader.close().await;
    });
}
