//! Code mode through `toolgate serve` (`gateway.code_mode`, docs/code-mode.md): Python run by
//! `run_python` over REST and MCP. Escapes (host files, sockets, the environment) are refused
//! and exhaustion (an endless loop, a gigabyte allocation, 100 MB of output) is stopped, each
//! with its typed error within the time limit plus a second, while the gateway keeps answering;
//! one snippet combines a local tool and a tool of a real MCP server (server-everything); a
//! tool the caller may not call raises inside Python with the policy's error; and the calls
//! made from code count against the caller's budget like direct ones.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{self, Served, everything_stdio_entry, request, serve_with_env, tools_yaml};

/// The time limit of a run in these gateways.
const TIME_MS: u64 = 2000;
const READER: &str = "reader-key-0123";
const ADMIN: &str = "admin-key-4567";
const KEYS: &[(&str, &str)] = &[("TG_READER", READER), ("TG_ADMIN", ADMIN)];

/// The repository's tools.yaml with code mode on, two API keys, `policy` added to its policy
/// section and `mcp` entries.
fn config(mcp: &str, policy: &str) -> String {
    let gateway = format!(
        "gateway:\n  api_keys:\n    - {{name: reader, key: \"${{TG_READER}}\", roles: [reader]}}\n    - {{name: admin, key: \"${{TG_ADMIN}}\", roles: [admin]}}\n  code_mode:\n    enabled: true\n    limits: {{time_ms: {TIME_MS}, tool_calls: 20}}\n"
    );
    let base = tools_yaml(mcp, &gateway);
    let old = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(old), "tools.yaml's policy section moved");
    base.replace(old, &format!("{old}{policy}"))
}

/// POST `/tools/{tool}/call` with `args` as the caller of `key`: (status, body, time taken).
fn call(served: &Served, key: &str, tool: &str, args: &Value) -> (u16, Value, Duration) {
    let started = Instant::now();
    let bearer = format!("Bearer {key}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", bearer.as_str()),
    ];
    let body = args.to_string();
    let (status, text) = request(
        served.port(),
        "POST",
        &format!("/tools/{tool}/call"),
        &headers,
        Some(&body),
    )
    .unwrap_or_else(|e| panic!("{tool} {args}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{tool} {args}: {status} {text:?} is not JSON: {e}"));
    (status, value, started.elapsed())
}

/// `run_python` with `code` as the reader.
fn run(served: &Served, code: &str) -> (u16, Value, Duration) {
    call(served, READER, "run_python", &json!({ "code": code }))
}

/// The gateway still answers: `/healthz`, a direct `calc`, and a small run.
fn still_answers(served: &Served) {
    let (status, _) = harness::get(served.port(), "/healthz", &[]).expect("healthz");
    assert_eq!(status, 200);
    let (status, out, _) = call(served, ADMIN, "calc", &json!({"expression": "6 * 7"}));
    assert_eq!(
        (status, &out["structuredContent"]["value"]),
        (200, &json!(42)),
        "{out}"
    );
    let (status, out, _) = run(served, "sum([1, 2, 3])");
    assert_eq!(
        (status, &out["structuredContent"]["result"]),
        (200, &json!(6)),
        "{out}"
    );
}

#[test]
fn escapes_are_refused_and_exhaustion_stopped_with_typed_errors() {
    let served = serve_with_env(&config("", ""), &[], KEYS);
    let limit = Duration::from_millis(TIME_MS) + Duration::from_secs(1);
    // (what, code, the HTTP status, the sandbox error's kind, its exception type if any).
    let cases: &[(&str, &str, u16, &str, Option<&str>)] = &[
        (
            "/etc/passwd",
            "open('/etc/passwd').read()",
            422,
            "exception",
            Some("PermissionError"),
        ),
        (
            "an unmounted path",
            "from pathlib import Path\nlist(Path('/tmp').iterdir())",
            422,
            "exception",
            Some("PermissionError"),
        ),
        (
            "a write",
            "from pathlib import Path\nPath('/tmp/x').write_text('x')",
            422,
            "exception",
            Some("PermissionError"),
        ),
        (
            "a socket",
            "import socket\nsocket.socket()",
            422,
            "exception",
            Some("ModuleNotFoundError"),
        ),
        (
            "the environment",
            "import os\nos.environ['HOME']",
            422,
            "exception",
            Some("RuntimeError"),
        ),
        (
            "an environment variable",
            "import os\nos.getenv('PATH')",
            422,
            "exception",
            Some("RuntimeError"),
        ),
        (
            "an endless loop",
            "while True:\n    pass",
            504,
            "timeout",
            None,
        ),
        ("a 1 GB string", "'x' * 10**9", 422, "memory", None),
        ("a 1 GB list", "[0] * 10**9", 422, "memory", None),
        // No single allocation to check up front: the worker process's limit stops it.
        (
            "memory grown step by step",
            "x = []\nwhile True:\n    x.append('a' * 100000)",
            422,
            "memory",
            None,
        ),
        (
            "100 MB of output",
            "line = 'y' * 1000\nfor i in range(100000):\n    print(line)",
            422,
            "output",
            None,
        ),
        ("a syntax error", "x = (\n", 422, "syntax", None),
    ];
    for (what, code, status, kind, exception) in cases {
        let (got, out, took) = run(&served, code);
        assert_eq!(got, *status, "{what}: {out}");
        let sandbox = &out["details"]["sandbox"];
        assert_eq!(sandbox["kind"], *kind, "{what}: {out}");
        if let Some(exception) = exception {
            assert_eq!(sandbox["exception"], *exception, "{what}: {out}");
        }
        assert!(took < limit, "{what} took {took:?}");
        still_answers(&served);
    }
    // The line of a syntax error is in the details and the message.
    let (_, out, _) = run(&served, "x = 1\ny = [\n");
    assert!(
        out["details"]["sandbox"]["line"].as_u64().is_some(),
        "{out}"
    );
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("syntax error at line"),
        "{out}"
    );
    // An exception carries its traceback and what was printed before it.
    let (_, out, _) = run(&served, "print('so far')\n1 / 0");
    assert_eq!(out["details"]["sandbox"]["stdout"], "so far\n", "{out}");
    assert!(
        out["details"]["sandbox"]["traceback"]
            .as_str()
            .unwrap()
            .contains("line 2"),
        "{out}"
    );
}

#[test]
fn a_runaway_loop_leaves_the_gateway_answering_meanwhile() {
    let served = serve_with_env(&config("", ""), &[], KEYS);
    std::thread::scope(|scope| {
        let loops: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| run(&served, "x = 0\nwhile True:\n    x += 1")))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        still_answers(&served);
        for handle in loops {
            let (status, out, took) = handle.join().unwrap();
            assert_eq!(
                (status, out["kind"].as_str()),
                (504, Some("timeout")),
                "{out}"
            );
            assert!(took < Duration::from_millis(TIME_MS + 1000), "{took:?}");
        }
    });
    still_answers(&served);
}

#[test]
fn one_snippet_combines_a_local_tool_and_an_mcp_server_tool() {
    let served = serve_with_env(
        &config(&everything_stdio_entry("everything", ""), ""),
        &[],
        KEYS,
    );
    let code = "total = tools.calc(expression='6 * 7')['value']\necho = tools.everything.echo(message=f'total={total}')\nsame = call_tool('everything.echo', {'message': 'again'})\n{'total': total, 'echo': echo, 'same': same}";
    let (status, out, _) = run(&served, code);
    assert_eq!(status, 200, "{out}");
    let result = &out["structuredContent"];
    assert_eq!(
        result["result"],
        json!({"total": 42, "echo": "Echo: total=42", "same": "Echo: again"}),
        "{out}"
    );
    assert_eq!(result["tool_calls"], 3, "{out}");
    // The same over MCP.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (_, tools) = harness::mcp_client_at(
            &served,
            "/mcp",
            &[("Authorization", &format!("Bearer {READER}"))],
        )
        .await;
        let out = tools
            .call("gw.run_python", json!({"code": code}))
            .await
            .expect("run_python over MCP");
        let structured = out.structured.expect("structured content");
        assert_eq!(
            structured["result"]["echo"], "Echo: total=42",
            "{structured}"
        );
        // An escape over MCP: the error reaches the client as a tool error.
        let refused = tools
            .call(
                "gw.run_python",
                json!({"code": "open('/etc/passwd').read()"}),
            )
            .await;
        let text = match refused {
            Ok(out) => {
                assert!(out.is_error, "{out:?}");
                out.text_joined()
            }
            Err(e) => e.to_string(),
        };
        assert!(text.contains("PermissionError"), "{text}");
    });
}

#[test]
fn a_forbidden_tool_raises_inside_python_and_is_not_described() {
    let served = serve_with_env(
        &config("", "  tools:\n    jq: {roles: [admin]}\n"),
        &[],
        KEYS,
    );
    let code = "try:\n    tools.jq(filter='.', input=1)\n    outcome = 'called'\nexcept PermissionError as e:\n    outcome = str(e)\noutcome";
    let (status, out, _) = run(&served, code);
    assert_eq!(status, 200, "{out}");
    let outcome = out["structuredContent"]["result"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(outcome.starts_with("permission_denied: "), "{out}");
    assert!(outcome.contains("jq"), "{out}");
    // Uncaught, it ends the run with the exception and its message.
    let (status, out, _) = run(&served, "call_tool('jq', {'filter': '.', 'input': 1})");
    assert_eq!(status, 422, "{out}");
    assert_eq!(
        out["details"]["sandbox"]["exception"], "PermissionError",
        "{out}"
    );
    // The admin may: the same code calls it.
    let (status, out, _) = call(&served, ADMIN, "run_python", &json!({"code": code}));
    assert_eq!(
        (status, &out["structuredContent"]["result"]),
        (200, &json!("called")),
        "{out}"
    );
    // describe_code_api shows each caller only what it may call.
    let (_, reader, _) = call(&served, READER, "describe_code_api", &json!({}));
    let (_, admin, _) = call(&served, ADMIN, "describe_code_api", &json!({}));
    let stubs = |v: &Value| {
        v["structuredContent"]["stubs"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!stubs(&reader).contains("def jq("), "{reader}");
    assert!(stubs(&admin).contains("def jq("), "{admin}");
    assert!(
        stubs(&reader).contains("def calc(*, expression: str)"),
        "{reader}"
    );
    // A query narrows the stubs through tool search.
    let (_, found, _) = call(
        &served,
        ADMIN,
        "describe_code_api",
        &json!({"query": "arithmetic expression", "limit": 1}),
    );
    assert_eq!(
        found["structuredContent"]["tools"],
        json!(["calc"]),
        "{found}"
    );
    // Code cannot run code.
    let (status, out, _) = run(&served, "call_tool('run_python', {'code': '1'})");
    assert_eq!(status, 422, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("cannot be called from code"),
        "{out}"
    );
}

#[test]
fn calls_from_code_count_against_the_callers_budget() {
    let policy = "  tools:\n    calc: {cost_per_call: 0.01}\n  budgets: {per_caller: 0.03}\n";
    let served = serve_with_env(&config("", policy), &[], KEYS);
    let code = "spent = []\nfor i in range(4):\n    try:\n        spent.append(tools.calc(expression=f'{i} + 1')['value'])\n    except RuntimeError as e:\n        spent.append(str(e))\nspent";
    let (status, out, _) = run(&served, code);
    assert_eq!(status, 200, "{out}");
    let spent = &out["structuredContent"]["result"];
    assert_eq!(
        spent.as_array().map(|s| s[..3].to_vec()),
        Some(vec![json!(1), json!(2), json!(3)]),
        "{out}"
    );
    assert!(
        spent[3]
            .as_str()
            .unwrap_or_default()
            .starts_with("budget_exceeded: "),
        "{out}"
    );
    // The three calls made from code were the reader's: a direct call is over budget too.
    let (status, out, _) = call(&served, READER, "calc", &json!({"expression": "1"}));
    assert_eq!(
        (status, out["kind"].as_str()),
        (402, Some("budget_exceeded")),
        "{out}"
    );
    // Another caller's budget is untouched.
    let (status, out, _) = call(&served, ADMIN, "calc", &json!({"expression": "1"}));
    assert_eq!(status, 200, "{out}");
}
