//! The isolated form of the engine: each snippet in a worker process (this test binary, running
//! only [`monty_worker`]). What a thread cannot give is asserted here: memory grown step by step
//! is stopped at the limit, and a snippet that would overflow the native stack ends only its
//! worker.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{MontyEngine, WorkerCommand, worker_main_if_requested};
use crate::{BoxFuture, Engine, Limits, RunRequest, SandboxError, ToolCallError, ToolHost};

/// The worker's entry: serves one run when started as a worker, passes otherwise.
#[test]
fn monty_worker() {
    worker_main_if_requested();
}

fn engine() -> MontyEngine {
    MontyEngine::isolated(WorkerCommand::libtest(
        "monty::tests_isolated::monty_worker",
    ))
}

fn request(code: &str, limits: Limits) -> RunRequest {
    RunRequest {
        code: code.into(),
        limits,
        tools: vec!["add".into()],
        ..RunRequest::default()
    }
}

/// Adds `a` and `b`; records each call.
#[derive(Default)]
struct Adder(Mutex<Vec<Value>>);

impl ToolHost for Adder {
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<Value, ToolCallError>> {
        Box::pin(async move {
            self.0.lock().unwrap().push(arguments.clone());
            if name != "add" {
                return Err(ToolCallError {
                    kind: "permission_denied".into(),
                    message: format!("{name} is not for you"),
                });
            }
            Ok(json!(
                arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0)
            ))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_a_worker_prints_returns_and_calls_tools() {
    let host = Arc::new(Adder::default());
    let code =
        "print('hi')\nx = call_tool('add', {'a': 2, 'b': 3})\ny = tools.add(a=x, b=1)\n[x, y]";
    let out = engine()
        .run(request(code, Limits::default()), Some(host.clone()))
        .await
        .unwrap();
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.result, Some(json!([5, 6])));
    assert_eq!(out.tool_calls, 2);
    assert_eq!(host.0.lock().unwrap().len(), 2);

    let e = engine()
        .run(
            request("call_tool('rm', {})", Limits::default()),
            Some(host),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&e, SandboxError::Exception { message, .. } if message.contains("not for you")),
        "{e:?}"
    );
}

/// Appending in a loop never makes one large allocation that monty checks up front; in a
/// thread it would grow until the time limit. In a worker it ends at the memory limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_grown_step_by_step_stops_at_the_limit() {
    let limits = Limits {
        memory_bytes: 32 << 20,
        time: Duration::from_secs(20),
        ..Limits::default()
    };
    let code = "x = []\nwhile True:\n    x.append('a' * 100000)";
    let started = Instant::now();
    let e = engine().run(request(code, limits), None).await.unwrap_err();
    assert_eq!(
        e,
        SandboxError::Memory {
            limit_bytes: 32 << 20
        },
        "after {:?}",
        started.elapsed()
    );
}

/// A value nested far deeper than any stack holds ends the worker, not this process, and the
/// error says what happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_too_deep_for_the_stack_ends_only_the_worker() {
    let limits = Limits {
        time: Duration::from_secs(30),
        memory_bytes: 1 << 30,
        ..Limits::default()
    };
    let code = "x = []\nfor i in range(1000000):\n    x = [x]\nx";
    let e = engine().run(request(code, limits), None).await.unwrap_err();
    assert!(
        matches!(&e, SandboxError::Engine { message, .. }
            if message.contains("ended without an outcome")
                && message.contains("nests too deeply")),
        "{e:?}"
    );
    // This process is still here, and the next run works.
    let out = engine()
        .run(request("1 + 1", Limits::default()), None)
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_in_a_worker_stops_at_the_time_limit() {
    let limits = Limits {
        time: Duration::from_millis(500),
        ..Limits::default()
    };
    let started = Instant::now();
    let e = engine()
        .run(request("while True:\n    pass", limits), None)
        .await
        .unwrap_err();
    assert_eq!(e, SandboxError::Timeout { limit_ms: 500 });
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_crosses_the_process_boundary() {
    let e = engine()
        .run(request("x = (1,\n", Limits::default()), None)
        .await
        .unwrap_err();
    assert!(matches!(e, SandboxError::Syntax { .. }), "{e:?}");
}

/// What crosses back from a worker is bounded: a result nested past the parsers' depth is a
/// Python error saying so, a result over the output limit is `Output`, tool-call arguments
/// over 4 MiB are refused inside Python, an exception's message is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_crosses_the_boundary_is_bounded() {
    let run = |code: &'static str| async move {
        engine()
            .run(
                request(code, Limits::default()),
                Some(Arc::new(Adder::default())),
            )
            .await
    };
    let e = run("x = []\nfor i in range(126):\n    x = [x]\nx")
        .await
        .unwrap_err();
    assert!(
        matches!(&e, SandboxError::Exception { exception, message, .. }
            if exception == "ValueError" && message.contains("nests deeper than 100")),
        "{e:?}"
    );
    let e = run("'r' * 2000000").await.unwrap_err();
    assert_eq!(
        e,
        SandboxError::Output {
            limit_bytes: Limits::default().output_bytes
        }
    );
    let e = run("call_tool('add', {'a': 'x' * 5000000, 'b': 1})")
        .await
        .unwrap_err();
    assert!(
        matches!(&e, SandboxError::Exception { message, .. }
            if message.contains("a call from code may send at most")),
        "{e:?}"
    );
    let e = run("raise ValueError('x' * 100000)").await.unwrap_err();
    let SandboxError::Exception { message, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(message.len() <= (16 << 10) + 3, "{}", message.len());
}

/// With one turn, a second run that cannot get it within its time limit is `Busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_beyond_the_workers_allowed_wait_then_are_busy() {
    let engine = engine().max_runs(1);
    let long = Limits {
        time: Duration::from_secs(3),
        ..Limits::default()
    };
    let first = {
        let engine = engine.clone();
        tokio::spawn(async move {
            engine
                .run(request("while True:\n    pass", long), None)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let short = Limits {
        time: Duration::from_millis(500),
        ..Limits::default()
    };
    let e = engine.run(request("1", short), None).await.unwrap_err();
    assert_eq!(e, SandboxError::Busy { limit: 1 });
    assert!(matches!(
        first.await.unwrap(),
        Err(SandboxError::Timeout { .. })
    ));
}
