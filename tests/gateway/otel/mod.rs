//! OTLP export of the per-call spans, against a real OpenTelemetry collector (PyPI `rotel`,
//! started here on 127.0.0.1, printing every span it receives): calls over REST with a
//! `traceparent` header and over MCP with `_meta.traceparent` each give exactly one span, in the
//! caller's trace and under the caller's span, with the tool, source, caller and outcome; the
//! backends (an A2A agent over HTTP, an MCP server in `_meta`) get the gateway's span as their
//! parent. A collector that is down or never answers changes nothing for callers, and the
//! gateway still exits promptly.

use std::io::Read;
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::{Content, ToolContext};

use crate::harness::{self, Served, peers, request, serve_with_env, tools_yaml};

mod collector;
use collector::{SpanSeen, collector, parse_spans, terminate};

const KEY: &str = "otel-test-key-5d1e";
const OTLP_TOKEN: &str = "otlp-token-secret-8c4b21";

/// `POST /tools/{tool}/call` as the `ci` key with `args` and `headers`: (status, JSON body).
fn call(served: &Served, tool: &str, args: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let path = format!("/tools/{tool}/call");
    let bearer = format!("Bearer {KEY}");
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Authorization", bearer.as_str()),
    ];
    all.extend_from_slice(headers);
    let (status, text) = request(served.port(), "POST", &path, &all, Some(&args.to_string()))
        .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("POST {path} answered {status}, not JSON ({e}): {text}"));
    (status, body)
}

/// The tools.yaml: the built-in tools, `mcp` (tools.mcp entries), `a2a` (tools.a2a entries),
/// the `ci` API key and `otlp` (the lines under `gateway.telemetry.otlp`, indented by 6; no
/// `telemetry` section when `None`).
fn yaml(mcp: &str, a2a: &str, otlp: Option<&str>) -> String {
    let mut gateway =
        "gateway:\n  api_keys:\n    - {name: ci, key: \"${OTEL_TEST_KEY}\"}\n".to_string();
    if let Some(otlp) = otlp {
        gateway.push_str(&format!("  telemetry:\n    otlp:\n{otlp}"));
    }
    let base = tools_yaml(mcp, &gateway);
    if a2a.is_empty() {
        base
    } else {
        base.replacen("\ntools:\n", &format!("\ntools:\n  a2a:\n{a2a}"), 1)
    }
}

fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

#[test]
fn each_call_is_one_span_in_the_callers_trace_at_a_real_collector() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let mut receiver = collector(scratch.path());
    let agent = peers::a2a_echo("v1", &[]);
    let mcp = format!(
        "    - id: trace\n      stdio:\n        command: {}\n        args: [\"{}\"]\n",
        peers::venv_python().display(),
        peers::trace_server_py().display()
    );
    let a2a = format!(
        "    - id: agent\n      url: {}\n      streaming: false\n",
        agent.url("")
    );
    let otlp = format!(
        "      endpoint: {}\n      headers: {{x-collector-token: \"${{OTLP_TOKEN}}\"}}\n      service_name: toolgate-otel-test\n      resource_attributes: {{deployment.environment.name: test}}\n      timeout_ms: 5000\n",
        receiver.url("")
    );
    let mut served = serve_with_env(
        &yaml(&mcp, &a2a, Some(&otlp)),
        &[],
        &[
            ("RUST_LOG", "debug"),
            ("OTEL_TEST_KEY", KEY),
            ("OTLP_TOKEN", OTLP_TOKEN),
            // Export every 100 ms rather than every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );

    // The callers' traces: one per call, each with its own parent span.
    let rest_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let rest_parent = "00f067aa0ba902b7";
    let failing_trace = "5ae4c3d2e1f00112233445566778899a";
    let failing_parent = "1a2b3c4d5e6f7081";
    let agent_trace = "6cf03b1a29384756a1b2c3d4e5f60718";
    let agent_parent = "2b3c4d5e6f708192";
    let mcp_trace = "7d0e1f2a3b4c5d6e7f8091a2b3c4d5e6";
    let mcp_parent = "3c4d5e6f708192a3";
    let meta_trace = "8e1f2a3b4c5d6e7f8091a2b3c4d5e6f7";
    let meta_parent = "4d5e6f708192a3b4";

    // REST, with a traceparent and a tracestate.
    let tp = traceparent(rest_trace, rest_parent);
    let (status, body) = call(
        &served,
        "calc",
        &json!({"expression": "6*7"}),
        &[("traceparent", &tp), ("tracestate", "vendor=rest")],
    );
    assert_eq!(status, 200, "{body}\n{}", served.log());
    // REST, a call the pipeline refuses (an argument calc does not know).
    let tp = traceparent(failing_trace, failing_parent);
    let (status, body) = call(&served, "calc", &json!({}), &[("traceparent", &tp)]);
    assert!(status >= 400, "{status} {body}");
    // REST, without a traceparent: a trace of its own.
    let (status, body) = call(&served, "calc", &json!({"expression": "1+1"}), &[]);
    assert_eq!(status, 200, "{body}");
    // REST to the A2A agent, which must see the gateway's span as its parent.
    let (status, list) = harness::get(
        served.port(),
        "/tools",
        &[("Authorization", &format!("Bearer {KEY}"))],
    )
    .expect("GET /tools");
    assert_eq!(status, 200, "{list}");
    let list: Value = serde_json::from_str(&list).expect("JSON");
    let agent_tool = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.starts_with("agent."))
        .unwrap_or_else(|| panic!("no agent tool in {list}\n{}", served.log()))
        .to_string();
    let tp = traceparent(agent_trace, agent_parent);
    let (status, body) = call(
        &served,
        &agent_tool,
        &json!({"text": "hello"}),
        &[("traceparent", &tp), ("tracestate", "vendor=a2a")],
    );
    assert_eq!(status, 200, "{body}\n{}", served.log());

    // MCP, the trace in the request's `_meta` (toolgate's own MCP client puts it there).
    let meta_answer = mcp_runtime().block_on(async {
        let (_, tools) = harness::mcp_client_at(
            &served,
            "/mcp",
            &[("Authorization", &format!("Bearer {KEY}"))],
        )
        .await;
        let ctx = ToolContext::builder()
            .traceparent(traceparent(mcp_trace, mcp_parent))
            .tracestate("vendor=mcp")
            .build();
        let out = tools
            .call_with("gw.calc", json!({"expression": "2*3"}), ctx)
            .await
            .unwrap_or_else(|e| panic!("gw.calc over MCP: {e}\n{}", served.log()));
        assert!(!out.is_error, "{out:?}");
        let name = tools
            .tools()
            .iter()
            .map(|d| d.name.clone())
            .find(|n| n.ends_with("trace_context"))
            .unwrap_or_else(|| panic!("no trace_context tool\n{}", served.log()));
        let ctx = ToolContext::builder()
            .traceparent(traceparent(meta_trace, meta_parent))
            .tracestate("vendor=meta")
            .build();
        let out = tools
            .call_with(&name, json!({}), ctx)
            .await
            .unwrap_or_else(|e| panic!("{name} over MCP: {e}\n{}", served.log()));
        let text = out
            .content
            .iter()
            .find_map(|c| match c {
                Content::Text { text, .. } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no text in {out:?}"));
        serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    });
    let calls = 6;

    // The spans arrive (bounded wait), then the gateway stops (flushing) and the collector
    // stops too, so that its output is whole.
    let deadline = Instant::now() + Duration::from_secs(60);
    while parse_spans(&receiver.log()).len() < calls {
        assert!(
            Instant::now() < deadline,
            "the collector got {} of {calls} spans within 60 s\ncollector:\n{}\ngateway:\n{}",
            parse_spans(&receiver.log()).len(),
            receiver.log(),
            served.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let gateway_log = served.log();
    let status = terminate(&mut served.process, Duration::from_secs(30));
    assert!(status.is_some(), "the gateway did not exit within 30 s");
    assert!(
        terminate(&mut receiver, Duration::from_secs(30)).is_some(),
        "rotel did not exit"
    );
    let spans = parse_spans(&receiver.log());
    let all = format!("{spans:#?}");
    assert_eq!(spans.len(), calls, "one span per call: {all}");

    let one = |trace: &str| -> SpanSeen {
        let found: Vec<&SpanSeen> = spans.iter().filter(|s| s.trace_id == trace).collect();
        assert_eq!(found.len(), 1, "one span in trace {trace}: {all}");
        found[0].clone()
    };
    // Every span: the GenAI names, the source, the caller, the resource from tools.yaml.
    for span in &spans {
        assert!(span.name.starts_with("execute_tool "), "{span:?}");
        assert_eq!(
            span.attributes["gen_ai.operation.name"], "execute_tool",
            "{span:?}"
        );
        assert_eq!(span.attributes["caller"], "ci", "{span:?}");
        // The `trace_id` field is the span's own trace.
        assert_eq!(span.attributes["trace_id"], span.trace_id, "{span:?}");
        assert_eq!(
            span.resource["service.name"], "toolgate-otel-test",
            "{span:?}"
        );
        assert_eq!(
            span.resource["deployment.environment.name"], "test",
            "{span:?}"
        );
        assert!(span.resource.contains_key("service.version"), "{span:?}");
        assert!(
            !format!("{span:?}").contains("6*7"),
            "an argument value: {span:?}"
        );
    }

    let rest = one(rest_trace);
    assert_eq!(rest.parent_id, rest_parent, "{rest:?}");
    assert_eq!(rest.name, "execute_tool calc");
    assert_eq!(rest.attributes["gen_ai.tool.name"], "calc");
    assert_eq!(rest.attributes["tool"], "calc");
    assert_eq!(rest.attributes["source"], "local");
    assert_eq!(rest.attributes["outcome"], "ok");
    assert!(!rest.attributes.contains_key("error.type"), "{rest:?}");

    let failing = one(failing_trace);
    assert_eq!(failing.parent_id, failing_parent, "{failing:?}");
    assert_ne!(failing.attributes["outcome"], "ok", "{failing:?}");
    assert_eq!(
        failing.attributes["error.type"], failing.attributes["outcome"],
        "{failing:?}"
    );
    assert!(failing.status.contains("ERROR"), "{failing:?}");

    let own_trace: Vec<&SpanSeen> = spans
        .iter()
        .filter(|s| {
            ![
                rest_trace,
                failing_trace,
                agent_trace,
                mcp_trace,
                meta_trace,
            ]
            .contains(&s.trace_id.as_str())
        })
        .collect();
    assert_eq!(own_trace.len(), 1, "{all}");
    assert!(
        own_trace[0].parent_id.is_empty(),
        "a root span: {:?}",
        own_trace[0]
    );

    let mcp = one(mcp_trace);
    assert_eq!(mcp.parent_id, mcp_parent, "{mcp:?}");
    assert_eq!(mcp.attributes["gen_ai.tool.name"], "calc");

    // The A2A agent's request carried the gateway's span as parent, in the caller's trace.
    let to_agent = one(agent_trace);
    assert_eq!(to_agent.parent_id, agent_parent, "{to_agent:?}");
    assert_eq!(to_agent.attributes["source"], "agent", "{to_agent:?}");
    let agent_log = agent.log();
    let line = agent_log
        .lines()
        .find(|l| l.starts_with("A2A-REQ POST") && l.contains("rpc=SendMessage"))
        .unwrap_or_else(|| panic!("no SendMessage in {agent_log}"));
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .unwrap_or("-")
            .to_string()
    };
    assert_eq!(
        field("traceparent="),
        traceparent(agent_trace, &to_agent.span_id),
        "{line}"
    );
    assert_eq!(field("tracestate="), "vendor=a2a", "{line}");

    // The MCP server got the gateway's span as parent in `_meta`, and the tracestate.
    let to_server = one(meta_trace);
    assert_eq!(to_server.parent_id, meta_parent, "{to_server:?}");
    assert_eq!(
        meta_answer["traceparent"],
        traceparent(meta_trace, &to_server.span_id),
        "{meta_answer}"
    );
    assert_eq!(meta_answer["tracestate"], "vendor=meta", "{meta_answer}");

    // The collector's token (a header from `${OTLP_TOKEN}`) is in no line of the gateway's log.
    assert!(gateway_log.lines().count() > 20, "{gateway_log}");
    assert!(
        !gateway_log.contains(OTLP_TOKEN) && !served.log().contains(OTLP_TOKEN),
        "the OTLP header's secret was logged"
    );
}

/// A multi-threaded Tokio runtime for the MCP client.
fn mcp_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Calls keep being answered, and the gateway exits within its grace period plus the export
/// timeout, with the collector at `endpoint` unreachable or silent.
fn calls_go_on_without_the_collector(endpoint: &str) {
    let otlp = format!("      endpoint: {endpoint}\n      timeout_ms: 500\n");
    let mut served = serve_with_env(
        &yaml("", "", Some(&otlp)),
        &[],
        &[("OTEL_TEST_KEY", KEY), ("OTEL_BSP_SCHEDULE_DELAY", "50")],
    );
    for i in 0..20 {
        let tp = traceparent("9f1e2d3c4b5a69788796a5b4c3d2e1f0", "5e6f708192a3b4c5");
        let (status, body) = call(
            &served,
            "calc",
            &json!({"expression": format!("{i}+1")}),
            &[("traceparent", &tp)],
        );
        assert_eq!(status, 200, "call {i}: {body}\n{}", served.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGTERM: the gateway drains (no call in flight), flushes for at most 500 ms, exits 0.
    let status = terminate(&mut served.process, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the gateway did not exit within 30 s\n{}", served.log()));
    assert!(status.success(), "{status:?}\n{}", served.log());
    // The operator is told: a failed export, or spans that could not be sent at shutdown.
    let log = served.log();
    assert!(
        log.contains("ExportError") || log.contains("were not all sent"),
        "{log}"
    );
}

#[test]
fn calls_are_answered_and_shutdown_is_prompt_when_the_collector_is_down() {
    // A port nothing listens on.
    let port = peers::free_port();
    calls_go_on_without_the_collector(&format!("http://127.0.0.1:{port}"));
}

#[test]
fn calls_are_answered_and_shutdown_is_prompt_when_the_collector_never_answers() {
    // A listener that accepts connections and reads, but never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    listener.set_nonblocking(true).expect("nonblocking");
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(10)));
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf);
                    held.push(stream);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        held.len()
    });
    calls_go_on_without_the_collector(&format!("http://127.0.0.1:{port}"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let connections = silent.join().expect("the silent listener");
    assert!(connections > 0, "the gateway never tried to export");
}

#[test]
fn the_standard_environment_variables_turn_export_on_and_name_the_service() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let mut receiver = collector(scratch.path());
    // No `gateway.telemetry` in tools.yaml: the environment alone.
    let mut served = serve_with_env(
        &yaml("", "", None),
        &[],
        &[
            ("OTEL_TEST_KEY", KEY),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url("")),
            ("OTEL_SERVICE_NAME", "toolgate-from-env"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "team=tools,service.name=overridden-by-otel-service-name",
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let trace = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let parent = "6f708192a3b4c5d6";
    let tp = traceparent(trace, parent);
    let (status, body) = call(
        &served,
        "calc",
        &json!({"expression": "3*3"}),
        &[("traceparent", &tp)],
    );
    assert_eq!(status, 200, "{body}");
    // SIGTERM: the span still queued is flushed before the gateway exits.
    assert!(
        terminate(&mut served.process, Duration::from_secs(30)).is_some(),
        "the gateway did not exit within 30 s"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while parse_spans(&receiver.log()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no span within 30 s\n{}\n{}",
            receiver.log(),
            served.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        terminate(&mut receiver, Duration::from_secs(30)).is_some(),
        "rotel did not exit"
    );
    let spans = parse_spans(&receiver.log());
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let span = &spans[0];
    assert_eq!(
        (span.trace_id.as_str(), span.parent_id.as_str()),
        (trace, parent)
    );
    assert_eq!(
        span.resource["service.name"], "toolgate-from-env",
        "{span:?}"
    );
    assert_eq!(span.resource["team"], "tools", "{span:?}");
}

#[test]
fn otlp_settings_that_cannot_work_stop_the_gateway_at_start_up() {
    for (otlp, env, says) in [
        (
            "      sample_ratio: 1.5\n",
            None,
            "`sample_ratio: 1.5` is not between 0 and 1",
        ),
        ("      protocol: grpc\n", None, "`http/protobuf` only"),
        (
            "      endpoint: http://127.0.0.1:9\n",
            Some(("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")),
            "OTEL_EXPORTER_OTLP_PROTOCOL is `grpc`",
        ),
        (
            "      headers: {x-token: \"${OTEL_TEST_SURELY_UNSET}\"}\n",
            None,
            "OTEL_TEST_SURELY_UNSET",
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("tools.yaml");
        std::fs::write(&config, yaml("", "", Some(otlp))).expect("write");
        let mut command = Command::new(harness::BIN);
        command
            .args([
                "--config",
                config.to_str().expect("UTF-8"),
                "serve",
                "--http",
                "127.0.0.1:0",
            ])
            .env("OTEL_TEST_KEY", KEY)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn toolgate");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("toolgate serve with {otlp:?} did not stop within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("read stderr");
        assert_eq!(status.code(), Some(3), "{otlp:?}: {stderr}");
        assert!(stderr.contains(says), "{otlp:?}: {stderr}");
    }
}
