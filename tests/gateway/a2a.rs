//! A2A agents behind `toolgate serve`: an echo agent (a2a-sdk 1.x, protocol 1.0) as source
//! `one`, called over REST and over MCP (streamable HTTP, with toolgate's own MCP client). An
//! agent that asks for input is an answer, not a failure, on both faces: REST 200
//! and MCP `isError: false`, with `{state, taskId, contextId}` as structuredContent; the task is
//! continued by a second call with that taskId.

use serde_json::{Value, json};
use toolgate::{Content, ErrorKind, Toolset};

use crate::harness::{self, Served, peers, request};

/// The repository's tools.yaml with `tools.a2a` holding `entries` (YAML list items, indented
/// by 4).
fn yaml_with_a2a(entries: &str) -> String {
    let base = harness::tools_yaml("", "");
    let mut yaml = String::new();
    let mut done = false;
    for line in base.lines() {
        yaml.push_str(line);
        yaml.push('\n');
        if line.trim_end() == "tools:" && !done {
            yaml.push_str("  a2a:\n");
            yaml.push_str(entries);
            done = true;
        }
    }
    assert!(done, "no `tools:` line in the repository's tools.yaml");
    yaml
}

fn serve_agent(agent: &peers::PeerProcess) -> Served {
    let entries = format!(
        "    - id: one\n      url: {url}\n      streaming: false\n    - id: ones\n      url: {url}\n      streaming: true\n",
        url = agent.url("")
    );
    harness::serve(&yaml_with_a2a(&entries), &[])
}

/// The `rpc=` of each POST the agent logged (`A2A-REQ POST / rpc=SendMessage ...`).
fn rpc_methods(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.strip_prefix("A2A-REQ POST "))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("rpc="))
                .map(str::to_string)
        })
        .collect()
}

fn post_json(served: &Served, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = request(
        served.port(),
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("POST {path} answered {status} with a body that is not JSON ({e}): {text:?}")
    });
    (status, value)
}

#[test]
fn a2a_over_rest_asks_answers_and_fails() {
    let agent = peers::a2a_echo("v1", &[]);
    let served = serve_agent(&agent);

    let (status, text) = harness::get(served.port(), "/tools", &[]).unwrap();
    assert_eq!(status, 200, "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in ["calc", "one.echo", "one.shout", "ones.echo", "ones.shout"] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }

    for (source, method) in [("one", "SendMessage"), ("ones", "SendStreamingMessage")] {
        let call = format!("/tools/{source}.echo/call");
        let mark = agent.log().len();
        let (status, out) = post_json(&served, &call, r#"{"text":"hello"}"#);
        assert_eq!(status, 200, "{out}");
        // `streaming: false` sends with SendMessage, `streaming: true` with SendStreamingMessage.
        assert_eq!(rpc_methods(&agent.log()[mark..]), [method]);
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "echo: hello"}])
        );
        assert_eq!(out["_meta"]["toolgate/a2a"]["state"], "completed", "{out}");

        // The question is a 200 answer, not an error.
        let (status, out) = post_json(&served, &call, r#"{"text":"ask"}"#);
        assert_eq!(status, 200, "{out}");
        assert!(
            out.get("isError").is_none_or(|e| e == false),
            "isError must be absent or false: {out}"
        );
        let structured = &out["structuredContent"];
        assert_eq!(structured["state"], "input-required", "{out}");
        let task = structured["taskId"].as_str().unwrap_or_default();
        assert!(!task.is_empty(), "{out}");
        assert!(structured["contextId"].is_string(), "{out}");
        assert_eq!(
            out["content"][0],
            json!({"type": "text", "text": "Agent needs more input: Which city?"}),
            "{out}"
        );
        assert_eq!(
            out["_meta"]["toolgate/error"]["kind"], "input_required",
            "{out}"
        );

        // Answered by a second request.
        let answer = json!({"text": "Oslo", "taskId": task, "contextId": structured["contextId"]});
        let (status, out) = post_json(&served, &call, &answer.to_string());
        assert_eq!(status, 200, "{out}");
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "city: Oslo"}])
        );

        // A failed task is a backend failure: 502, the ToolError JSON.
        let (status, out) = post_json(&served, &call, r#"{"text":"fail"}"#);
        assert_eq!(status, 502, "{out}");
        assert_eq!(out["kind"], "upstream", "{out}");
        let message = out["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("agent `{source}`: task "))
                && message.ends_with(" ended failed: cannot do that"),
            "{out}"
        );
        assert_eq!(out["details"]["state"], "failed", "{out}");
    }
}

/// A toolset whose one source is the gateway at `served`, as MCP source `gw`.
async fn client(served: &Served) -> Toolset {
    crate::harness::mcp_client_at(served, "/mcp", &[]).await.1
}

fn texts(content: &[Content]) -> Vec<&str> {
    content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.as_str(),
            other => panic!("not a text part: {other:?}"),
        })
        .collect()
}

#[test]
fn a2a_over_mcp_streamable_http() {
    let agent = peers::a2a_echo("v1", &[]);
    let served = serve_agent(&agent);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tools = client(&served).await;
        let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
        for want in ["gw.one__echo", "gw.one__shout", "gw.ones__echo"] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        // The skill's schema: `text`, plus taskId / contextId to continue a task.
        let echo = tools.describe("gw.one__echo").unwrap();
        let props = echo.input_schema["properties"].as_object().unwrap();
        let keys: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["text", "taskId", "contextId"],
            "{}",
            echo.input_schema
        );

        for source in ["one", "ones"] {
            let name = format!("gw.{source}__echo");
            let out = tools
                .call(&name, json!({"text": "hello"}))
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", served.log()));
            assert!(!out.is_error, "{out:?}");
            assert_eq!(texts(&out.content), ["echo: hello"], "{out:?}");

            let out = tools
                .call(&name, json!({"text": "stream a b c"}))
                .await
                .unwrap();
            assert_eq!(texts(&out.content), ["a b c"], "{out:?}");

            // The question: isError false, the details as structuredContent and as text.
            let out = tools
                .call(&name, json!({"text": "ask"}))
                .await
                .unwrap_or_else(|e| panic!("{name} ask: {e}\n{}", served.log()));
            assert!(!out.is_error, "{out:?}");
            let structured = out.structured.clone().expect("structuredContent");
            assert_eq!(structured["state"], "input-required", "{out:?}");
            let details = structured.to_string();
            assert_eq!(
                texts(&out.content),
                ["Agent needs more input: Which city?", details.as_str()],
                "{out:?}"
            );
            let out = tools
                .call(
                    &name,
                    json!({"text": "Oslo", "taskId": structured["taskId"]}),
                )
                .await
                .unwrap();
            assert_eq!(texts(&out.content), ["city: Oslo"], "{out:?}");

            // A failed task is an `isError: true` result on the wire (the text naming the
            // kind and the state), which toolgate's client reads as an `upstream` error.
            let e = tools
                .call(&name, json!({"text": "fail"}))
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Upstream, "{e:?}");
            assert!(
                e.message()
                    .contains(&format!("upstream: agent `{source}`: task "))
                    && e.message().contains(" ended failed: cannot do that"),
                "{e:?}"
            );
        }
        tools.close().await;
    });
}
