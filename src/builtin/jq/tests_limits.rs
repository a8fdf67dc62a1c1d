//! Filters built to take the process down: deep nesting, huge allocations, endless loops.
//! Each must end in a typed error, leave nothing running and this process unharmed.

use serde_json::json;

use super::tests::{run_jq, serial, setup};
use super::*;

/// Runs `filter` on `input` with a long timeout: for filters that build big values, slow in
/// an unoptimised test build on a loaded machine (the limits under test are not time).
fn run_slow(filter: &str, input: Value) -> Result<JqResult, JqError> {
    static SLOW: std::sync::OnceLock<JqPool> = std::sync::OnceLock::new();
    let _serial = serial();
    let pool = SLOW.get_or_init(|| {
        JqPool::new(&JqSettings {
            timeout_ms: 120_000,
            ..JqSettings::default()
        })
    });
    pool.run(JqArgs {
        filter: filter.into(),
        input,
    })
}

/// `reduce range(n) as $i (null; [.])`: `n` arrays nested in each other.
fn nested(n: usize) -> String {
    format!("reduce range({n}) as $i (null; [.])")
}

fn assert_too_deep(filter: &str) {
    let err = run_jq(filter, json!(null)).unwrap_err();
    let JqError::Runtime { message } = &err else {
        panic!("{filter}: {err:?}")
    };
    assert!(
        message.contains(&format!("nested deeper than {MAX_VALUE_DEPTH} levels")),
        "{filter}: {message}"
    );
}

#[test]
fn deep_values_are_refused_by_the_conversions_that_recurse() {
    // Twice the limit: a jq error, not a stack overflow (the million levels abort
    // the process on the old in-process engine; the gateway test runs those).
    let deep = nested(2 * MAX_VALUE_DEPTH);
    for tail in [
        "tojson",
        "tostring",
        "@text",
        "@json",
        "@base64",
        "walk(.)",
        "[.] | join(\",\")",
    ] {
        assert_too_deep(&format!("{deep} | {tail}"));
    }
    // A jq error like any other: `try` catches it.
    assert_eq!(
        run_jq(
            &format!("try ({deep} | tojson) catch \"caught\""),
            json!(null)
        )
        .unwrap()
        .results,
        [json!("caught")]
    );
    // Up to the limit they work as before.
    let ok = run_jq(
        &format!("{} | tojson | length", nested(MAX_VALUE_DEPTH)),
        json!(null),
    )
    .unwrap();
    assert_eq!(ok.results, [json!(2 * MAX_VALUE_DEPTH + 4)]);
    assert_eq!(
        run_jq(
            "[1, [2]] | walk(if type == \"number\" then . * 10 else . end)",
            json!(null)
        )
        .unwrap()
        .results,
        [json!([10, [20]])]
    );
}

#[test]
fn outputs_deeper_than_the_limit_are_refused() {
    let at_limit = run_jq(&nested(MAX_DEPTH), json!(null)).unwrap();
    assert_eq!(at_limit.results.len(), 1);
    for filter in [
        nested(MAX_DEPTH + 1),
        format!("reduce range({}) as $i (1; {{a: .}})", MAX_DEPTH + 1),
        "reduce range(20000) as $i (null; {a: .})".to_string(),
    ] {
        let err = run_jq(&filter, json!(null)).unwrap_err();
        let JqError::OutputTooLarge { reason } = &err else {
            panic!("{filter}: {err:?}")
        };
        assert!(
            reason.contains(&format!("deeper than {MAX_DEPTH} levels")),
            "{reason}"
        );
    }
}

#[test]
fn inputs_deeper_than_the_limit_are_refused() {
    let deep = |n: usize| (0..n).fold(json!(1), |v, _| Value::Array(vec![v]));
    assert_eq!(
        run_jq("[paths] | length", deep(MAX_DEPTH)).unwrap().results,
        [json!(MAX_DEPTH)]
    );
    for n in [MAX_DEPTH + 1, 1_000_000] {
        let err = run_jq(".", deep(n)).unwrap_err();
        let JqError::Rejected { reason } = &err else {
            panic!("{n}: {err:?}")
        };
        assert!(reason.contains("input is nested deeper"), "{reason}");
    }
}

#[test]
fn a_stack_overflow_is_a_typed_error_and_the_next_call_works() {
    // String interpolation recurses over the value with no depth check of ours: the worker's
    // stack overflows. That worker is gone; the error says what happened.
    let filter = format!("\"\\({})\" | length", nested(150_000));
    let err = run_slow(&filter, json!(null)).unwrap_err();
    assert!(err.to_string().contains("overflowed its stack"), "{err:?}");
    assert_eq!(run_jq(". + 1", json!(1)).unwrap().results, [json!(2)]);
}

#[test]
fn huge_allocations_hit_the_memory_limit() {
    // 688 GB asked for at once.
    let err = run_slow("[range(1e6)] | tostring | . * 100000", json!(null)).unwrap_err();
    assert!(err.to_string().contains("memory limit"), "{err:?}");
    assert_eq!(run_jq(". + 1", json!(1)).unwrap().results, [json!(2)]);
}

#[test]
fn growing_memory_hits_the_memory_limit() {
    let _serial = serial();
    // 1e8 numbers are 1.6 GB; the limit stops the array at 256 MiB. (At 128 MiB the worker's
    // own address space, the binary and the filter thread's stack, no longer leaves room to
    // start the filter thread: the binary grew with the Rego and CEL engines.) A long timeout:
    // this test is about memory, and a loaded machine is slow.
    let pool = JqPool::new(&JqSettings {
        memory_mb: 256,
        timeout_ms: 60_000,
        workers: 1,
    });
    let err = pool
        .run(JqArgs {
            filter: "[range(1e8)] | length".into(),
            input: json!(null),
        })
        .unwrap_err();
    assert_eq!(err, JqError::MemoryLimit { limit_mb: 256 }, "{err}");
    assert_eq!(pool.busy(), 0);
}

/// This process's resident memory, in bytes.
fn own_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn a_timed_out_filter_keeps_nothing() {
    // More runaway filters than there are slots, one after the other: each is stopped at its
    // deadline and frees its slot (before, each kept a thread spinning, and the fifth call was
    // refused as busy; `[range(1e8)] | length` kept growing to 1.6 GB after its timeout).
    let _serial = serial();
    let run = |filter: &str, input: Value| {
        jq(JqArgs {
            filter: filter.into(),
            input,
        })
    };
    let before = own_rss();
    for filter in ["last(range(1e12))", "[range(1e8)] | length"]
        .iter()
        .cycle()
        .take(MAX_WORKERS + 1)
    {
        let err = run(filter, json!(null)).unwrap_err();
        assert!(
            matches!(err, JqError::Timeout { .. }) || err.to_string().contains("memory limit"),
            "{filter}: {err:?}"
        );
    }
    assert_eq!(run(". + 1", json!(1)).unwrap().results, [json!(2)]);
    // No filter thread left running in this process; its memory barely moved (other tests
    // run meanwhile: a generous margin, well under the gigabytes a runaway filter holds).
    let threads = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "toolgate-jq")
        .count();
    assert_eq!(threads, 0, "filter threads still running in this process");
    let grown = own_rss().saturating_sub(before);
    assert!(
        grown < 300 * 1024 * 1024,
        "this process grew by {grown} bytes"
    );
}

#[test]
fn a_timed_out_worker_is_killed_and_replaced() {
    let _serial = serial();
    let pool = JqPool::new(&JqSettings {
        timeout_ms: 500,
        workers: 1,
        ..JqSettings::default()
    });
    let run = |filter: &str| {
        pool.run(JqArgs {
            filter: filter.into(),
            input: json!(1),
        })
    };
    assert_eq!(run(". + 1").unwrap().results, [json!(2)]);
    let [warm] = pool.idle_pids()[..] else {
        panic!("{:?}", pool.idle_pids())
    };
    // A warm worker serves the next call.
    assert_eq!(run(". * 3").unwrap().results, [json!(3)]);
    assert_eq!(pool.idle_pids(), [warm]);

    let err = run("last(range(1e12))").unwrap_err();
    assert_eq!(
        err,
        JqError::Timeout {
            timeout: Duration::from_millis(500)
        }
    );
    // Killed and reaped (no zombie left in /proc), its slot free, nothing idle.
    assert!(
        !std::path::Path::new(&format!("/proc/{warm}")).exists(),
        "worker {warm} still exists"
    );
    assert_eq!(pool.busy(), 0);
    assert!(pool.idle_pids().is_empty());
    // The only slot is free again: a new worker runs the next filter.
    assert_eq!(run(". - 1").unwrap().results, [json!(0)]);
    assert_ne!(pool.idle_pids(), [warm]);
}

#[test]
fn cancelling_a_call_kills_its_worker() {
    let _serial = serial();
    let pool = JqPool::new(&JqSettings {
        timeout_ms: 60_000,
        workers: 1,
        ..JqSettings::default()
    });
    let started = std::time::Instant::now();
    let cancelled = || started.elapsed() > Duration::from_millis(300);
    let err = pool
        .run_cancellable(
            JqArgs {
                filter: "last(range(1e12))".into(),
                input: json!(null),
            },
            &cancelled,
        )
        .unwrap_err();
    assert_eq!(err, JqError::Cancelled);
    assert_eq!(pool.busy(), 0);
    assert!(pool.idle_pids().is_empty());
}

#[test]
fn a_program_that_is_not_a_worker_is_a_clear_error() {
    setup();
    let settings = JqSettings {
        timeout_ms: 1000,
        ..JqSettings::default()
    };
    let args = || JqArgs {
        filter: ".".into(),
        input: json!(1),
    };
    for (command, expected) in [
        (WorkerCommand::new("/nonexistent/toolgate"), "cannot start"),
        (WorkerCommand::new("/bin/true"), "exited at start"),
        (
            WorkerCommand::new("/bin/sleep").arg("30"),
            "did not greet in time",
        ),
        (
            WorkerCommand::new("/bin/echo").arg("hello"),
            "exited at start",
        ),
    ] {
        let err = JqPool::with_command(&settings, command.clone())
            .run(args())
            .unwrap_err();
        let JqError::Unavailable { reason } = &err else {
            panic!("{command:?}: {err:?}")
        };
        assert!(reason.contains(expected), "{command:?}: {reason}");
    }
    // Without a command, and without the hook in `main`, nothing is started.
    let err = process::resolve(None, false).unwrap_err();
    assert!(
        err.to_string().contains("worker_main_if_requested"),
        "{err}"
    );
    assert_eq!(
        process::resolve(None, true).unwrap(),
        WorkerCommand::current_exe()
    );
}

#[test]
fn check_filter_runs_the_static_checks_only() {
    assert_eq!(check_filter(".a | map(. + 1)"), Ok(()));
    // Never runs: an endless filter checks at once.
    assert_eq!(check_filter("last(range(1e12))"), Ok(()));
    assert!(matches!(
        check_filter("def f: f; f"),
        Err(JqError::Rejected { .. })
    ));
    assert!(matches!(check_filter(".a | ]"), Err(JqError::Parse { .. })));
    assert!(matches!(check_filter("env"), Err(JqError::Parse { .. })));
    assert!(matches!(
        check_filter(&".".repeat(MAX_FILTER_CHARS + 1)),
        Err(JqError::Rejected { .. })
    ));
    // The deepest filters that fit in the length limit parse without overflowing.
    let half = MAX_FILTER_CHARS / 2;
    for deep in [
        format!("{}{}", "[".repeat(half), "]".repeat(half)),
        format!("{}1{}", "(".repeat(half - 1), ")".repeat(half - 1)),
        format!("{}1", "-".repeat(MAX_FILTER_CHARS - 1)),
        format!("{}1", ".[".repeat(MAX_FILTER_CHARS / 3)),
    ] {
        let _ = check_filter(&deep);
    }
}

#[test]
fn deep_values_are_measured_and_dropped_without_recursion() {
    use jaq_json::{Rc, Val};
    // Holds a few hundred MB: not while another test measures this process's memory.
    let _serial = serial();
    // Two million levels: a recursive drop needs about 100 MB of stack, this thread has 2 MiB.
    let levels = 2_000_000;
    let mut arr = Val::Null;
    let mut obj = Val::Null;
    for _ in 0..levels {
        arr = Val::Arr(Rc::new(vec![arr]));
        let mut map = jaq_json::Map::default();
        map.insert(Val::Null, obj);
        obj = Val::Obj(Rc::new(map));
    }
    for v in [arr, obj] {
        assert!(convert::deeper_than(&v, levels - 1));
        assert!(!convert::deeper_than(&v, levels));
        convert::dispose(v);
    }
    // A value still shared elsewhere is left to its other owner.
    let shared = Val::Arr(Rc::new(vec![Val::Bool(true)]));
    convert::dispose(shared.clone());
    assert_eq!(shared.to_string(), "[true]");
}
