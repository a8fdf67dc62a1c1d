//! Arguments sent as one string holding JSON, as OpenAI's function calling hands a tool call's
//! `arguments` to its client (`"{\"expression\": \"2+3\"}"`): every front — `toolgate call`,
//! `POST /tools/{name}/call`, `POST /calls`, MCP over stdio, over streamable HTTP and over
//! legacy SSE — gives the same outcome for the same string. A string holding an object runs
//! the call with that object, the change listed in the result's `_meta`; a string that is not
//! JSON is refused naming the tool and the place; a string holding another JSON type is
//! refused saying which.

use serde_json::{Value, json};

use crate::harness::{self, BIN};
use crate::mcp_errors::McpHttp;
use crate::sse::{self, Stream};
use crate::stdio::StdioServer;

/// What a front made of one call, reduced to what must agree.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// The call ran: its structured result and the kinds of the changes made to its arguments.
    Ran { result: Value, changes: Vec<String> },
    /// The call was refused: its error's kind and message.
    Refused { kind: String, message: String },
}

/// A result (`ToolOutput` / MCP `CallToolResult` JSON) as an outcome: a failed one by the error
/// its `_meta["toolgate/error"]` carries.
fn of_result(result: &Value) -> Outcome {
    if result["isError"] == true {
        return of_error(&result["_meta"]["toolgate/error"]);
    }
    let changes = result["_meta"]["toolgate/coercions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| c["kind"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    Outcome::Ran {
        result: result["structuredContent"].clone(),
        changes,
    }
}

/// A ToolError's JSON as an outcome.
fn of_error(error: &Value) -> Outcome {
    Outcome::Refused {
        kind: error["kind"].as_str().unwrap_or("(no kind)").to_string(),
        message: error["message"]
            .as_str()
            .unwrap_or("(no message)")
            .to_string(),
    }
}

/// (what, the string sent as the arguments of `calc`, the outcome every front must give).
fn cases() -> Vec<(&'static str, &'static str, Outcome)> {
    vec![
        (
            "a string holding the arguments object",
            r#"{"expression": "2+3"}"#,
            Outcome::Ran {
                result: json!({"expression": "2+3", "value": 5}),
                changes: vec!["json_text".into()],
            },
        ),
        (
            "a string holding an object with a wrong argument",
            r#"{"expression": 7}"#,
            Outcome::Refused {
                kind: "invalid_arguments".into(),
                message: "invalid arguments for tool `calc`: /expression: expected string, got number 7"
                    .into(),
            },
        ),
        (
            "a string whose JSON is cut short",
            r#"{"expression": "2+3""#,
            Outcome::Refused {
                kind: "invalid_arguments".into(),
                message: "arguments for `calc` are not valid JSON at line 1 column 20: EOF while parsing an object".into(),
            },
        ),
        (
            "a string in single quotes, as Python prints a dict",
            "{'expression': '2+3'}",
            Outcome::Refused {
                kind: "invalid_arguments".into(),
                message: "arguments for `calc` are not valid JSON at line 1 column 2: key must be a string".into(),
            },
        ),
        (
            "a string holding an array",
            "[1, 2]",
            Outcome::Refused {
                kind: "invalid_arguments".into(),
                message: "arguments for `calc` must be a JSON object (each argument by name); the string sent holds an array".into(),
            },
        ),
    ]
}

/// `toolgate call calc <the string as a JSON string> --json`: the result on stdout, or the
/// error as `{"error"}`.
fn over_cli(config: &std::path::Path, text: &str) -> Outcome {
    let arg = Value::String(text.to_string()).to_string();
    let out = std::process::Command::new("timeout")
        .args(["60", BIN, "--config"])
        .arg(config)
        .args(["call", "calc", &arg, "--json"])
        .env("RUST_LOG", "off")
        .output()
        .expect("run toolgate call");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "toolgate call printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    match printed.get("error") {
        Some(error) => {
            assert_eq!(out.status.code(), Some(1), "a refused call exits 1");
            of_error(error)
        }
        None => of_result(&printed),
    }
}

#[test]
fn every_front_gives_the_same_outcome_for_arguments_sent_as_one_string() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    let config = served.dir.path().join("tools.yaml");
    let mut stdio = StdioServer::start("");
    stdio.initialize("2025-06-18");
    sse::runtime().block_on(async {
        let http = McpHttp::initialize(&served).await;
        let mut stream = Stream::open(&served, &[]).await;
        let endpoint = stream.endpoint().await;
        assert_eq!(
            sse::post(&served, &endpoint, &sse::initialize(1), &[])
                .await
                .0,
            202
        );
        stream.answer().await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(sse::post(&served, &endpoint, &note, &[]).await.0, 202);

        for (n, (what, text, expected)) in cases().into_iter().enumerate() {
            let id = 100 + n as u64;
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "calc", "arguments": text}})
            .to_string();
            let mut outcomes = Vec::new();

            outcomes.push(("toolgate call", over_cli(&config, text)));

            let body = Value::String(text.to_string()).to_string();
            let (status, answer) = sse::post(&served, "/tools/calc/call", &body, &[]).await;
            let answer: Value = serde_json::from_str(&answer).unwrap();
            let rest = if status == 200 {
                of_result(&answer)
            } else {
                assert_eq!(status, 422, "{what}: REST answered {status}: {answer}");
                of_error(&answer)
            };
            outcomes.push(("POST /tools/calc/call", rest));

            let batch = json!({"calls": [{"name": "calc", "arguments": text}]}).to_string();
            let (status, answer) = sse::post(&served, "/calls", &batch, &[]).await;
            assert_eq!(status, 200, "{what}: {answer}");
            let answer: Value = serde_json::from_str(&answer).unwrap();
            let one = &answer["results"][0];
            let batch = match one.get("error") {
                Some(error) => of_error(error),
                None => of_result(&one["output"]),
            };
            outcomes.push(("POST /calls", batch));

            stdio.write(format!("{call}\n").as_bytes());
            let answer = stdio.answer();
            assert_eq!(answer["id"], id, "{what} over stdio: {answer}");
            outcomes.push(("MCP stdio", of_result(&answer["result"])));

            let answer = http.answer(&call).await;
            assert_eq!(answer["id"], id, "{what} over /mcp: {answer}");
            outcomes.push(("MCP streamable HTTP", of_result(&answer["result"])));

            let (status, _) = sse::post(&served, &endpoint, &call, &[]).await;
            assert_eq!(status, 202, "{what} over SSE");
            let answer = stream.answer().await;
            assert_eq!(answer["id"], id, "{what} over SSE: {answer}");
            outcomes.push(("MCP legacy SSE", of_result(&answer["result"])));

            for (front, outcome) in outcomes {
                assert_eq!(outcome, expected, "{what}, over {front}");
            }
        }
    });
}

/// Text that is no JSON at all where a front reads the arguments itself (a request body, the
/// CLI's ARGS) is refused naming the tool by its name inside toolgate, whichever name the
/// request used, and the place serde stopped at.
#[test]
fn arguments_that_are_not_json_name_the_tool_and_the_place() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    sse::runtime().block_on(async {
        for path in ["/tools/calc/call", "/tools/read_file/call"] {
            let (status, answer) = sse::post(&served, path, "{\"path\": ", &[]).await;
            assert_eq!(status, 400, "{answer}");
            let answer: Value = serde_json::from_str(&answer).unwrap();
            let tool = path.split('/').nth(2).unwrap();
            assert_eq!(answer["kind"], "invalid_arguments", "{answer}");
            assert_eq!(
                answer["message"],
                format!(
                    "arguments for `{tool}` are not valid JSON at line 1 column 9: EOF while parsing a value"
                ),
                "{answer}"
            );
            assert_eq!(answer["details"]["tool"], tool, "{answer}");
        }
    });
    let config = served.dir.path().join("tools.yaml");
    let out = std::process::Command::new("timeout")
        .args(["60", BIN, "--config"])
        .arg(&config)
        .args(["call", "calc", "{\"expression\": 2+"])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: arguments for `calc` are not valid JSON at line 1 column 17"),
        "{stderr}"
    );
}

/// The openai-strict export carries an argument strict mode cannot describe (jq's `input`,
/// any JSON value) as `input_json`, a string of JSON text, so the tool is strict; a call that
/// sends `input_json` as that export says runs with the decoded value, over REST and MCP alike,
/// and a string that is not JSON is refused at `/input_json`.
#[test]
fn an_argument_carried_as_json_text_is_decoded_before_the_call() {
    let served = harness::serve(&harness::tools_yaml("", ""), &[]);
    let (status, schema) =
        harness::get(served.port(), "/tools/jq/schema?dialect=openai-strict", &[]).unwrap();
    assert_eq!(status, 200, "{schema}");
    let schema: Value = serde_json::from_str(&schema).unwrap();
    sse::runtime().block_on(async {
        let definition = schema.get("definition").unwrap_or(&schema);
        assert_eq!(definition["strict"], true, "{schema}");
        assert_eq!(
            definition["parameters"]["properties"]["input_json"]["type"], "string",
            "{schema}"
        );

        let args = json!({"filter": ".a + 1", "input_json": "{\"a\": 41}"});
        let (status, answer) = sse::post(&served, "/tools/jq/call", &args.to_string(), &[]).await;
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(
            of_result(&answer),
            Outcome::Ran {
                result: json!({"results": [42], "truncated": false}),
                changes: vec!["json_text".into()],
            },
            "{answer}"
        );
        assert_eq!(
            answer["_meta"]["toolgate/coercions"][0]["pointer"],
            "/input"
        );

        let http = McpHttp::initialize(&served).await;
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "jq", "arguments": args}});
        let over_mcp = http.answer(&call.to_string()).await;
        assert_eq!(
            of_result(&over_mcp["result"]),
            of_result(&answer),
            "{over_mcp}"
        );

        let bad = json!({"filter": ".", "input_json": "{\"a\": "});
        let (status, answer) = sse::post(&served, "/tools/jq/call", &bad.to_string(), &[]).await;
        assert_eq!(status, 422, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["kind"], "invalid_arguments", "{answer}");
        assert_eq!(
            answer["details"]["errors"][0]["pointer"], "/input_json",
            "{answer}"
        );
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("not valid JSON at line 1 column 6"),
            "{answer}"
        );
    });
}
