//! The monty engine's guarantees, each asserted on a real run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::MontyEngine;
use crate::{
    BoxFuture, Engine, Limits, Mount, RunOutput, RunRequest, SandboxError, ToolCallError, ToolHost,
};

/// A host with two tools (`add` and `weather.forecast`) that records every call; any other
/// tool is refused as `permission_denied`.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, Value)>>,
}

impl ToolHost for Recorder {
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<Value, ToolCallError>> {
        Box::pin(async move {
            self.calls
                .lock()
                .unwrap()
                .push((name.to_owned(), arguments.clone()));
            match name {
                "add" => Ok(json!(
                    arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0)
                )),
                "weather.forecast" => Ok(json!({"city": arguments["city"], "celsius": 21})),
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(Value::Null)
                }
                _ => Err(ToolCallError {
                    kind: "permission_denied".into(),
                    message: format!("the caller may not call {name}"),
                }),
            }
        })
    }
}

fn request(code: &str) -> RunRequest {
    RunRequest {
        code: code.into(),
        limits: Limits {
            time: Duration::from_secs(2),
            ..Limits::default()
        },
        mounts: Vec::new(),
        tools: vec!["add".into(), "weather.forecast".into(), "slow".into()],
    }
}

async fn run(code: &str) -> Result<RunOutput, SandboxError> {
    MontyEngine::new().run(request(code), None).await
}

async fn run_with(req: RunRequest, host: &Arc<Recorder>) -> Result<RunOutput, SandboxError> {
    let host: Arc<dyn ToolHost> = host.clone();
    MontyEngine::new().run(req, Some(host)).await
}

fn exception_of(result: Result<RunOutput, SandboxError>) -> (String, String) {
    match result {
        Err(SandboxError::Exception {
            exception, message, ..
        }) => (exception, message),
        other => panic!("expected an exception, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_and_returns_the_last_expression() {
    let out = run("import json\nxs = [i * i for i in range(4)]\nprint(f'{len(xs)} squares')\n{'sum': sum(xs), 'j': json.dumps({'a': 1})}")
        .await
        .unwrap();
    assert_eq!(out.stdout, "4 squares\n");
    assert_eq!(out.result, Some(json!({"sum": 14, "j": "{\"a\": 1}"})));
    assert_eq!(out.stderr, "");
    assert_eq!(out.tool_calls, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_classes_and_dicts_work() {
    let code = "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n    def norm2(self):\n        return self.x ** 2 + self.y ** 2\nPoint(3, 4).norm2()";
    assert_eq!(run(code).await.unwrap().result, Some(json!(25)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_names_its_line() {
    match run("x = 1\ny = (\nprint(x)\n").await {
        Err(SandboxError::Syntax { line, message }) => {
            assert!(line >= 2, "line {line}: {message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_exception_carries_its_traceback_and_output() {
    match run("print('before')\ndef f():\n    return 1 / 0\nf()").await {
        Err(SandboxError::Exception {
            exception,
            message,
            traceback,
            stdout,
        }) => {
            assert_eq!(exception, "ZeroDivisionError");
            assert!(message.contains("division by zero"), "{message}");
            assert!(traceback.contains("line 3"), "{traceback}");
            assert_eq!(stdout, "before\n");
        }
        other => panic!("expected an exception, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_stops_at_the_time_limit() {
    let started = Instant::now();
    let result = run("while True:\n    pass").await;
    assert_eq!(result, Err(SandboxError::Timeout { limit_ms: 2000 }));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_allocation_is_refused_as_memory() {
    for code in [
        "'x' * 10**9",
        "[0] * 10**9",
        "2 ** (8 * 10**9)",
        "'ab'.ljust(10**9)",
    ] {
        let result = run(code).await;
        assert_eq!(
            result,
            Err(SandboxError::Memory {
                limit_bytes: 64 << 20
            }),
            "{code}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_of_output_is_stopped() {
    let result = run("line = 'y' * 1000\nfor i in range(100000):\n    print(line)").await;
    assert_eq!(
        result,
        Err(SandboxError::Output {
            limit_bytes: 1 << 20
        })
    );
    // Catching the output error does not help: the run still ends with it.
    let result = run("for i in range(2000):\n    try:\n        print('z' * 1000)\n    except Exception:\n        pass\n'done'").await;
    assert_eq!(
        result,
        Err(SandboxError::Output {
            limit_bytes: 1 << 20
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_files_are_refused() {
    let (exc, msg) = exception_of(run("open('/etc/passwd').read()").await);
    assert_eq!(exc, "PermissionError", "{msg}");
    let (exc, _) =
        exception_of(run("from pathlib import Path\nPath('/etc/passwd').read_text()").await);
    assert_eq!(exc, "PermissionError");
    let (exc, _) =
        exception_of(run("from pathlib import Path\nPath('/tmp/x').write_text('x')").await);
    assert_eq!(exc, "PermissionError");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_refused() {
    let (exc, msg) = exception_of(run("import os\nos.environ").await);
    assert_eq!(exc, "RuntimeError", "{msg}");
    assert!(msg.contains("not supported"), "{msg}");
    let (exc, _) = exception_of(run("import os\nos.getenv('HOME')").await);
    assert_eq!(exc, "RuntimeError");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn there_is_no_network_or_process_module() {
    for module in [
        "socket",
        "subprocess",
        "urllib.request",
        "http.client",
        "ctypes",
    ] {
        let (exc, msg) = exception_of(run(&format!("import {module}")).await);
        assert_eq!(exc, "ModuleNotFoundError", "{module}: {msg}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_mount_is_readable_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("toolgate-sandbox-mount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello from the host").unwrap();
    let mut req = request(
        "from pathlib import Path\n[Path('/data/notes.txt').read_text(), Path('/data').is_dir(), Path('/data/missing').exists()]",
    );
    req.mounts = vec![Mount {
        host: dir.clone(),
        guest: "/data".into(),
    }];
    let out = MontyEngine::new().run(req.clone(), None).await.unwrap();
    assert_eq!(
        out.result,
        Some(json!(["hello from the host", true, false]))
    );
    for code in [
        "from pathlib import Path\nPath('/data/../etc/passwd').read_text()",
        "from pathlib import Path\nPath('/data/new.txt').write_text('x')",
    ] {
        req.code = code.into();
        let (exc, _) = exception_of(MontyEngine::new().run(req.clone(), None).await);
        assert_eq!(exc, "PermissionError", "{code}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_functions_and_their_calls_reach_the_host() {
    let host = Arc::new(Recorder::default());
    let code = "a = call_tool('add', {'a': 2, 'b': 3})\nf = tools.weather.forecast(city='Oslo')\nb = tools.add(a=a, b=f['celsius'])\n[a, f['city'], b]";
    let out = run_with(request(code), &host).await.unwrap();
    assert_eq!(out.result, Some(json!([5, "Oslo", 26])));
    assert_eq!(out.tool_calls, 3);
    let calls = host.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("weather.forecast".to_owned(), json!({"city": "Oslo"})),
            ("add".to_owned(), json!({"a": 5, "b": 21})),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tool_raises_inside_python_with_the_kind() {
    let host = Arc::new(Recorder::default());
    let code = "try:\n    call_tool('secret.read', {})\nexcept PermissionError as e:\n    caught = str(e)\ncaught";
    let out = run_with(request(code), &host).await.unwrap();
    assert_eq!(
        out.result,
        Some(json!(
            "permission_denied: the caller may not call secret.read"
        ))
    );
    let (exc, msg) = exception_of(run_with(request("call_tool('secret.read', {})"), &host).await);
    assert_eq!(exc, "PermissionError");
    assert!(msg.starts_with("permission_denied: "), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tool_names_and_bad_calls_raise() {
    let host = Arc::new(Recorder::default());
    let (exc, _) = exception_of(run_with(request("tools.weather.nope()"), &host).await);
    assert_eq!(exc, "AttributeError");
    let (exc, _) = exception_of(run_with(request("tools.nosuch.tool()"), &host).await);
    assert_eq!(exc, "AttributeError");
    let (exc, _) = exception_of(run_with(request("tools.add(1, 2)"), &host).await);
    assert_eq!(exc, "TypeError");
    let (exc, _) = exception_of(run_with(request("call_tool(42)"), &host).await);
    assert_eq!(exc, "TypeError");
    assert!(host.calls.lock().unwrap().is_empty());
    // A tool without source the run was not offered is the host's to refuse.
    let (exc, msg) = exception_of(run_with(request("tools.secret(x=1)"), &host).await);
    assert_eq!(exc, "PermissionError", "{msg}");
    assert_eq!(host.calls.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_call_limit_ends_the_run() {
    let host = Arc::new(Recorder::default());
    let mut req = request(
        "for i in range(10):\n    try:\n        tools.add(a=i, b=i)\n    except Exception:\n        pass",
    );
    req.limits.tool_calls = 3;
    assert_eq!(
        run_with(req, &host).await,
        Err(SandboxError::ToolCalls { limit: 3 })
    );
    assert_eq!(host.calls.lock().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tool_counts_against_the_time_limit() {
    let host = Arc::new(Recorder::default());
    let started = Instant::now();
    assert_eq!(
        run_with(request("tools.slow()"), &host).await,
        Err(SandboxError::Timeout { limit_ms: 2000 })
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_host_a_tool_call_raises() {
    let (exc, msg) = exception_of(run("call_tool('add', {'a': 1, 'b': 2})").await);
    assert_eq!(exc, "RuntimeError");
    assert!(msg.contains("no tools"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_between_runs() {
    run("leak = 41").await.unwrap();
    let (exc, _) = exception_of(run("leak + 1").await);
    assert_eq!(exc, "NameError");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_is_a_python_error_not_a_crash() {
    let (exc, _) = exception_of(run("def f(n):\n    return f(n + 1)\nf(0)").await);
    assert_eq!(exc, "RecursionError");
    // `repr` of a container nested far deeper than the recursion limit stops at the limit
    // (monty writes `...` there), and the interpreter's thread has the stack for those levels.
    let code = "x = []\nfor i in range(100000):\n    x = [x]\nrepr(x)";
    let out = run(code).await.unwrap();
    let text = out.result.unwrap();
    assert!(text.as_str().unwrap().contains("[...]"), "{text}");
}
