//! Unit tests of the A2A client: both wire forms, card reading, and the call flow against an
//! in-process HTTP server scripted with the answers real agents give (a legacy card path, an agent asking for input). The real
//! agents (PyPI a2a-sdk 1.3 and 0.3, npm @a2a-js/sdk) are driven by `runtime/tests/a2a_*.rs`.

use serde_json::{Value, json};

use super::card::{AgentCard, CardFetcher, SecurityScheme};
use super::wire::{self, Event, Part, State, Version};
use super::{A2aBackend, A2aOptions};
use crate::remote::RemoteBackend;
use crate::test_server::TestServer;
use crate::{ErrorKind, ToolContext, ToolDescriptor};

fn ok_json(v: &Value) -> (&'static str, Vec<u8>) {
    (
        "200 OK\r\nContent-Type: application/json",
        v.to_string().into_bytes(),
    )
}

fn rpc_result(result: Value) -> (&'static str, Vec<u8>) {
    ok_json(&json!({"jsonrpc": "2.0", "id": 1, "result": result}))
}

/// A 0.2.5 card (top-level `url`), its endpoint moved to `rpc`.
fn c31_card(rpc: &str) -> Value {
    json!({"name": "Planner", "url": rpc, "protocolVersion": "0.2.5",
           "capabilities": {"streaming": false}, "skills": [{"id": "plan", "name": "Plan"}]})
}

#[test]
fn states_of_both_versions_read_alike() {
    for (s, state) in [
        ("TASK_STATE_INPUT_REQUIRED", State::InputRequired),
        ("input-required", State::InputRequired),
        ("TASK_STATE_AUTH_REQUIRED", State::AuthRequired),
        ("completed", State::Completed),
        ("TASK_STATE_CANCELED", State::Canceled),
        ("cancelled", State::Canceled),
        ("TASK_STATE_UNSPECIFIED", State::Unknown),
    ] {
        assert_eq!(State::parse(s), state, "{s}");
    }
    assert!(State::InputRequired.is_interrupted() && !State::InputRequired.is_terminal());
    assert!(State::Rejected.is_terminal());
    assert!(!State::Working.is_terminal() && !State::Working.is_interrupted());
}

#[test]
fn a_1_0_send_result_and_stream_events_decode() {
    // Verbatim from a2a-sdk 1.3.0 (protocol 1.0).
    let task = json!({"task": {"id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "name": "echo", "parts": [{"text": "echo: hello"},
            {"data": {"city": "Paris", "n": 3.0}}, {"raw": "iVBO", "filename": "dot.png", "mediaType": "image/png"}]}]}});
    let Event::Task(t) = wire::decode_event(&task).unwrap() else {
        panic!()
    };
    assert_eq!((t.id.as_str(), t.state), ("t1", State::Completed));
    assert_eq!(t.artifacts[0].parts[0], Part::Text("echo: hello".into()));
    assert_eq!(
        t.artifacts[0].parts[1],
        Part::Data(json!({"city": "Paris", "n": 3.0}))
    );
    assert!(
        matches!(&t.artifacts[0].parts[2], Part::File { bytes: Some(b), mime_type: Some(m), .. } if b == "iVBO" && m == "image/png")
    );

    let chunk = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
        "artifact": {"artifactId": "stream-1", "parts": [{"text": " b"}]}, "append": true}});
    let Event::Artifact {
        artifact,
        append,
        last_chunk,
        ..
    } = wire::decode_event(&chunk).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (artifact.id.as_str(), append, last_chunk),
        ("stream-1", true, false)
    );

    let status = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}});
    assert!(matches!(
        wire::decode_event(&status).unwrap(),
        Event::Status {
            state: State::Working,
            last: false,
            ..
        }
    ));
    let message = json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "echo: hi"}]}});
    assert!(
        matches!(wire::decode_event(&message).unwrap(), Event::Message(m) if m.parts == vec![Part::Text("echo: hi".into())])
    );
}

#[test]
fn a_0_3_send_result_and_stream_events_decode() {
    let task = json!({"kind": "task", "id": "t-42", "contextId": "c-7",
        "status": {"state": "input-required", "message": {"kind": "message", "role": "agent", "messageId": "m1",
            "parts": [{"kind": "text", "text": "Which city?"}]}}});
    let Event::Task(t) = wire::decode_event(&task).unwrap() else {
        panic!()
    };
    assert_eq!(t.state, State::InputRequired);
    assert_eq!(
        t.message.unwrap().parts,
        vec![Part::Text("Which city?".into())]
    );
    let last = json!({"kind": "status-update", "taskId": "t-42", "contextId": "c-7",
        "status": {"state": "input-required"}, "final": true});
    assert!(matches!(
        wire::decode_event(&last).unwrap(),
        Event::Status {
            state: State::InputRequired,
            last: true,
            ..
        }
    ));
    let file =
        json!({"kind": "file", "file": {"uri": "https://x/y.pdf", "mimeType": "application/pdf"}});
    assert!(
        matches!(wire::decode_part(&file).unwrap(), Part::File { uri: Some(u), .. } if u == "https://x/y.pdf")
    );
    assert!(
        wire::decode_event(&json!({"kind": "weird"}))
            .unwrap_err()
            .contains("weird")
    );
    assert!(wire::decode_event(&json!({"hello": 1})).is_err());
}

#[test]
fn messages_encode_in_each_version_s_form() {
    let m = super::tools::message(
        "echo",
        json!({"text": "Oslo", "taskId": "t-42", "contextId": "c-7"}),
        false,
    );
    let v1 = wire::encode_message(Version::V1, &m);
    assert_eq!(v1["role"], "ROLE_USER");
    assert_eq!(v1["parts"], json!([{"text": "Oslo"}]));
    assert_eq!(
        (v1["taskId"].as_str(), v1["contextId"].as_str()),
        (Some("t-42"), Some("c-7"))
    );
    assert_eq!(v1["metadata"], json!({"skill": "echo"}));
    assert!(v1.get("kind").is_none());
    let v03 = wire::encode_message(Version::V03, &m);
    assert_eq!(
        (v03["kind"].as_str(), v03["role"].as_str()),
        (Some("message"), Some("user"))
    );
    assert_eq!(v03["parts"], json!([{"kind": "text", "text": "Oslo"}]));
    // A skill with a configured schema sends its arguments as one data part.
    let d = super::tools::message(
        "book",
        json!({"from": "OSL", "to": "CDG", "taskId": ""}),
        true,
    );
    assert_eq!(
        wire::encode_message(Version::V03, &d)["parts"],
        json!([{"kind": "data", "data": {"from": "OSL", "to": "CDG"}}])
    );
    assert_eq!(
        wire::send_params(Version::V1, &m, false)["configuration"],
        json!({"returnImmediately": true})
    );
    assert_eq!(
        wire::send_params(Version::V03, &m, true)["configuration"],
        json!({"blocking": true})
    );
}

#[test]
fn cards_of_both_versions_name_their_endpoint() {
    let v1 = json!({"name": "Echo", "supportedInterfaces": [
        {"url": "http://h/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "extendedAgentCard": true},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
                            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}},
        "skills": [{"id": "echo", "name": "Echo", "tags": ["t"], "examples": ["hello"]}]});
    let card = AgentCard::parse(&v1, "x").unwrap();
    assert_eq!(
        (card.version, card.rpc_url.as_str()),
        (Version::V1, "http://h/rpc")
    );
    assert!(card.streaming && card.extended_card);
    assert_eq!(card.security_schemes["bearer"], SecurityScheme::Bearer);
    assert_eq!(
        card.security_schemes["key"],
        SecurityScheme::ApiKey {
            location: "header".into(),
            name: "X-Key".into()
        }
    );
    let c31 = AgentCard::parse(&c31_card("https://agents.example.com/a2a"), "x").unwrap();
    assert_eq!(
        (c31.version, c31.rpc_url.as_str()),
        (Version::V03, "https://agents.example.com/a2a")
    );
    // preferredTransport other than JSON-RPC: its JSON-RPC additional interface is used.
    let grpc_first = json!({"name": "A", "url": "http://h/grpc", "protocolVersion": "0.3.0", "preferredTransport": "GRPC",
        "additionalInterfaces": [{"url": "http://h/jsonrpc", "transport": "JSONRPC"}], "skills": []});
    assert_eq!(
        AgentCard::parse(&grpc_first, "x").unwrap().rpc_url,
        "http://h/jsonrpc"
    );
    let only_grpc =
        json!({"name": "A", "supportedInterfaces": [{"url": "u", "protocolBinding": "GRPC"}]});
    assert!(
        AgentCard::parse(&only_grpc, "x")
            .unwrap_err()
            .contains("no JSON-RPC interface (only: GRPC)")
    );
    assert!(
        AgentCard::parse(&json!({"name": "A"}), "x")
            .unwrap_err()
            .contains("neither")
    );
}

#[test]
fn skills_become_tools_taking_text_and_a_task_id() {
    let card = AgentCard::parse(&c31_card("http://h"), "x").unwrap();
    let schemas = [(
        "plan".to_string(),
        json!({"type": "object", "properties": {"goal": {"type": "string"}}}),
    )];
    let plain = super::tools::descriptors(&card, &Default::default());
    assert_eq!(plain[0].name, "plan");
    assert_eq!(plain[0].input_schema["required"], json!(["text"]));
    assert!(plain[0].input_schema["properties"]["taskId"].is_object());
    let typed = super::tools::descriptors(&card, &schemas.into_iter().collect());
    assert!(typed[0].input_schema["properties"]["goal"].is_object());
    assert!(typed[0].input_schema["properties"]["contextId"].is_object());
}

fn backend(url: Option<&str>, card_url: Option<&str>) -> A2aBackend {
    A2aBackend::new("planner", url, card_url, None, A2aOptions::default()).unwrap()
}

/// agent-card.json 404 → agent.json 200; calls go to the card's `url`.
#[tokio::test]
async fn c31_the_legacy_card_path_is_tried_and_calls_go_to_the_cards_url() {
    let rpc = TestServer::start(vec![rpc_result(
        json!({"kind": "message", "messageId": "r",
        "role": "agent", "parts": [{"kind": "text", "text": "planned"}]}),
    )])
    .await;
    let card = c31_card(&format!("{}/a2a", rpc.base));
    let base = TestServer::start(vec![("404 Not Found", b"no".to_vec()), ok_json(&card)]).await;
    let b = backend(Some(&base.base), None);
    let tools = b.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "plan");
    let lines: Vec<String> = base.requests().iter().map(|r| r.line.clone()).collect();
    assert_eq!(
        lines,
        [
            "GET /.well-known/agent-card.json HTTP/1.1",
            "GET /.well-known/agent.json HTTP/1.1"
        ]
    );
    assert_eq!(
        b.card_url().unwrap(),
        format!("{}/.well-known/agent.json", base.base)
    );
    assert!(
        b.peer().server.unwrap().contains("/.well-known/agent.json"),
        "status shows the path that worked"
    );
    let out = b
        .call(
            &tools[0],
            "plan",
            json!({"text": "a trip"}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.content[0].as_text(), Some("planned"));
    let sent = rpc.requests();
    assert_eq!(sent[0].line, "POST /a2a HTTP/1.1");
    let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
    assert_eq!(body["method"], "message/send");
    assert!(
        sent[0].header("a2a-version").is_none(),
        "0.x agents get no A2A-Version header"
    );
}

/// a 401 on the first path stops the fallback and is an auth problem.
#[tokio::test]
async fn c31_a_401_stops_the_fallback_and_says_auth() {
    let base = TestServer::start(vec![
        ("401 Unauthorized", b"who are you".to_vec()),
        ok_json(&c31_card("http://x")),
    ])
    .await;
    let e = backend(Some(&base.base), None)
        .list_tools()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(
        e.message().contains("needs authentication") && e.message().contains("auth:"),
        "{e}"
    );
    assert_eq!(
        base.requests().len(),
        1,
        "agent.json must not be tried after a 401"
    );
}

#[tokio::test]
async fn an_explicit_card_url_is_the_only_one_tried_and_both_404s_are_named() {
    let base = TestServer::start(vec![("404 Not Found", Vec::new())]).await;
    let e = backend(None, Some(&format!("{}/cards/planner.json", base.base)))
        .list_tools()
        .await
        .unwrap_err();
    assert_eq!(base.requests().len(), 1);
    assert!(e.message().contains("/cards/planner.json (404)"), "{e}");
    let e = backend(Some(&base.base), None)
        .list_tools()
        .await
        .unwrap_err();
    assert!(
        e.message().contains("agent-card.json (404)") && e.message().contains("agent.json (404)"),
        "{e}"
    );
}

#[tokio::test]
async fn an_etag_is_sent_back_and_a_304_keeps_the_card() {
    let card = c31_card("http://127.0.0.1:1/a2a");
    let with_etag = (
        "200 OK\r\nContent-Type: application/json\r\nETag: \"v1\"",
        card.to_string().into_bytes(),
    );
    let base = TestServer::start(vec![with_etag, ("304 Not Modified", Vec::new())]).await;
    let fetcher = CardFetcher::new("p", Some(&base.base), None).unwrap();
    let client = reqwest::Client::new();
    let first = fetcher
        .fetch(&client, &Default::default(), &[], 1 << 20)
        .await
        .unwrap();
    let second = fetcher
        .fetch(&client, &Default::default(), &[], 1 << 20)
        .await
        .unwrap();
    assert_eq!(first.body, second.body);
    assert_eq!(base.requests()[1].header("if-none-match"), Some("\"v1\""));
}

/// An agent at `rpc` answering with `answers` in turn, behind a 0.3 card.
async fn agent(
    answers: Vec<(&'static str, Vec<u8>)>,
    streaming: bool,
) -> (A2aBackend, TestServer, ToolDescriptor) {
    let rpc = TestServer::start(answers).await;
    let mut card = c31_card(&rpc.base);
    card["capabilities"]["streaming"] = json!(streaming);
    let card_server = TestServer::start(vec![ok_json(&card)]).await;
    let b = backend(None, Some(&card_server.base));
    let tool = b.list_tools().await.unwrap().remove(0);
    std::mem::forget(card_server);
    (b, rpc, tool)
}

fn c32_task() -> Value {
    json!({"kind": "task", "id": "t-42", "contextId": "c-7",
      "status": {"state": "input-required",
                 "message": {"role": "agent", "messageId": "m1", "parts": [{"kind": "text", "text": "Which city?"}]}}})
}

/// input-required stops at once; the result a model sees is not an error.
#[tokio::test]
async fn c32_input_required_asks_and_the_follow_up_continues_the_task() {
    let done = json!({"kind": "task", "id": "t-42", "contextId": "c-7", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "Booked for Oslo"}]}]});
    let (b, rpc, tool) = agent(vec![rpc_result(c32_task()), rpc_result(done)], false).await;
    let ctx = ToolContext::default();
    let e = b
        .call(&tool, "plan", json!({"text": "book a hotel"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InputRequired);
    assert_eq!(e.message(), "Agent needs more input: Which city?");
    let out = e.into_output();
    assert!(!out.is_error);
    assert_eq!(
        out.content[0].as_text(),
        Some("Agent needs more input: Which city?")
    );
    assert_eq!(
        out.structured,
        Some(json!({"state": "input-required", "taskId": "t-42", "contextId": "c-7"}))
    );
    assert_eq!(rpc.requests().len(), 1, "no polling of an interrupted task");

    let out = b
        .call(
            &tool,
            "plan",
            json!({"text": "Oslo", "taskId": "t-42", "contextId": "c-7"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.content[0].as_text(), Some("Booked for Oslo"));
    let follow_up: Value = serde_json::from_slice(&rpc.requests()[1].body).unwrap();
    let m = &follow_up["params"]["message"];
    assert_eq!(
        (m["taskId"].as_str(), m["contextId"].as_str()),
        (Some("t-42"), Some("c-7"))
    );
    assert_eq!(m["parts"], json!([{"kind": "text", "text": "Oslo"}]));
}

/// streaming: the stream ends with a final input-required status update.
#[tokio::test]
async fn c32_streaming_input_required_ends_the_wait() {
    let events = [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t-42", "contextId": "c-7", "status": {"state": "submitted"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"kind": "status-update", "taskId": "t-42", "contextId": "c-7",
            "status": {"state": "input-required", "message": {"role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "Which city?"}]}}, "final": true}}),
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let (b, rpc, tool) = agent(
        vec![(
            "200 OK\r\nContent-Type: text/event-stream",
            body.into_bytes(),
        )],
        true,
    )
    .await;
    let e = b
        .call(
            &tool,
            "plan",
            json!({"text": "book"}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InputRequired);
    assert_eq!(e.details().unwrap()["taskId"], "t-42");
    let sent: Value = serde_json::from_slice(&rpc.requests()[0].body).unwrap();
    assert_eq!(sent["method"], "message/stream");
}

#[tokio::test]
async fn failed_rejected_and_canceled_are_errors_naming_the_state() {
    for state in ["failed", "rejected", "canceled"] {
        let task = json!({"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": state,
            "message": {"role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "cannot do that"}]}}});
        let (b, _rpc, tool) = agent(vec![rpc_result(task)], false).await;
        let e = b
            .call(&tool, "plan", json!({"text": "x"}), &ToolContext::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream, "{state}");
        assert!(
            e.message()
                .contains(&format!("ended {state}: cannot do that")),
            "{e}"
        );
        assert_eq!(e.details().unwrap()["state"], state);
        assert!(e.into_output().is_error);
    }
}

#[tokio::test]
async fn a_working_task_is_polled_until_it_completes() {
    let working = json!({"kind": "task", "id": "t1", "status": {"state": "working"}});
    let done = json!({"kind": "task", "id": "t1", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "data", "data": {"ok": true}}]}]});
    let (b, rpc, tool) = agent(
        vec![
            rpc_result(working.clone()),
            rpc_result(working),
            rpc_result(done),
        ],
        false,
    )
    .await;
    let out = b
        .call(&tool, "plan", json!({"text": "x"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"ok": true})));
    let methods: Vec<Value> = rpc
        .requests()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [
            json!("message/send"),
            json!("tasks/get"),
            json!("tasks/get")
        ]
    );
}

#[tokio::test]
async fn json_rpc_errors_map_to_kinds_with_the_agents_message() {
    let not_found = ok_json(
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}),
    );
    let (b, _rpc, tool) = agent(vec![not_found], false).await;
    let e = b
        .call(
            &tool,
            "plan",
            json!({"text": "x", "taskId": "gone"}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(
        e.message()
            .contains("task not found (-32001): Task not found"),
        "{e}"
    );
    let version = ok_json(
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32009, "message": "A2A version '0.3' is not supported"}}),
    );
    let (b, _rpc, tool) = agent(vec![version], false).await;
    let e = b
        .call(&tool, "plan", json!({"text": "x"}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol);
}

/// With credentials, a card must not send them to another host (unless `allow_hosts` says so).
#[tokio::test]
async fn credentials_go_only_to_the_cards_host_or_allowed_hosts() {
    let elsewhere = TestServer::start(vec![rpc_result(
        json!({"kind": "message", "messageId": "r",
        "role": "agent", "parts": [{"kind": "text", "text": "got it"}]}),
    )])
    .await;
    // The card is on 127.0.0.1; the endpoint it names is `localhost` (another host).
    let endpoint = elsewhere.base.replace("127.0.0.1", "localhost");
    let card = c31_card(&format!("{endpoint}/a2a"));
    let auth = toolgate_model::config::AuthConfig::Bearer(
        toolgate_model::config::Interpolated::new("s3cret-token").unwrap(),
    );
    let card_server = TestServer::start(vec![ok_json(&card)]).await;
    let with_token = A2aBackend::new(
        "p",
        None,
        Some(&card_server.base),
        Some(&auth),
        A2aOptions::default(),
    )
    .unwrap();
    let e = with_token.list_tools().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(
        e.message().contains("another host") && e.message().contains("allow_hosts"),
        "{e}"
    );
    assert!(!e.message().contains("s3cret-token"));
    assert!(elsewhere.requests().is_empty(), "nothing was sent there");
    // Allowed: the call goes there, with the token.
    let options = A2aOptions {
        allow_hosts: vec!["localhost".into()],
        ..A2aOptions::default()
    };
    let allowed =
        A2aBackend::new("p", None, Some(&card_server.base), Some(&auth), options).unwrap();
    let tool = allowed.list_tools().await.unwrap().remove(0);
    allowed
        .call(&tool, "plan", json!({"text": "x"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(
        elsewhere.requests()[0].header("authorization"),
        Some("Bearer s3cret-token")
    );
    // Without credentials, another host is fine.
    let anonymous = backend(None, Some(&card_server.base));
    assert!(anonymous.list_tools().await.is_ok());
}
