use serde_json::json;

use super::*;

/// Tests share the process-wide pool's slots: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(super) fn serial() -> std::sync::MutexGuard<'static, ()> {
    setup();
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The test whose process is this binary's jq worker: libtest owns `main`, so the pools start
/// `<this binary> --exact builtin::jq::tests::jq_worker`. In an ordinary run it does nothing.
#[test]
fn jq_worker() {
    if std::env::var_os(wire::WORKER_ENV).is_some() {
        worker_main_if_requested();
    }
}

pub(super) const WORKER_TEST: &str = "builtin::jq::tests::jq_worker";

/// Workers of this process are this test binary running [`jq_worker`].
pub(super) fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| set_worker_command(WorkerCommand::libtest(WORKER_TEST)));
}

pub(super) fn run_jq(filter: &str, input: Value) -> Result<JqResult, JqError> {
    let _serial = serial();
    jq(JqArgs {
        filter: filter.into(),
        input,
    })
}

fn results(filter: &str, input: Value) -> Vec<Value> {
    let r = run_jq(filter, input).unwrap_or_else(|e| panic!("{filter}: {e}"));
    assert!(!r.truncated);
    r.results
}

#[test]
fn basic_filters() {
    let doc = json!({"items": [
        {"name": "pen", "price": 2.5, "tags": ["office"]},
        {"name": "desk", "price": 120, "tags": []},
        {"name": "ink", "price": 7, "tags": ["office", "refill"]}
    ]});
    assert_eq!(
        results(".items[] | select(.price < 10) | .name", doc.clone()),
        [json!("pen"), json!("ink")]
    );
    assert_eq!(
        results("[.items[].price] | add", doc.clone()),
        [json!(129.5)]
    );
    assert_eq!(results(".items | length", doc.clone()), [json!(3)]);
    assert_eq!(
        results(".items | map({(.name): .price}) | add", doc.clone()),
        [json!({"pen": 2.5, "desk": 120, "ink": 7})]
    );
    assert_eq!(
        results("[.items[] | .tags[]] | unique", doc.clone()),
        [json!(["office", "refill"])]
    );
    assert_eq!(results(".missing", doc.clone()), [json!(null)]);
    assert_eq!(results("empty", doc.clone()), Vec::<Value>::new());
    assert_eq!(
        results(
            r#"to_entries | map("\(.key)=\(.value)") | .[]"#,
            json!({"a": 1})
        ),
        [json!("a=1")]
    );
    assert_eq!(
        results("[paths] | length", json!({"a": [1, {"b": 2}]})),
        [json!(4)]
    );
    assert_eq!(results(r#"test("^a.c$")"#, json!("abc")), [json!(true)]);
    assert_eq!(results("@base64", json!("hi")), [json!("aGk=")]);
    assert_eq!(
        results(
            "walk(if type == \"number\" then . + 1 else . end)",
            json!([1, [2]])
        ),
        [json!([2, [3]])]
    );
    assert_eq!(
        results("def double: . * 2; [.[] | double]", json!([1, 2])),
        [json!([2, 4])]
    );
    assert_eq!(
        results("[limit(3; repeat(1))]", json!(null)),
        [json!([1, 1, 1])]
    );
    assert_eq!(
        results("[recurse(if . < 3 then . + 1 else empty end)]", json!(0)),
        [json!([0, 1, 2, 3])]
    );
    assert_eq!(
        results("1, 2, 3", json!(null)),
        [json!(1), json!(2), json!(3)]
    );
}

#[test]
fn numbers_and_strings_convert() {
    assert_eq!(results("1 / 3 | . * 3", json!(null)), [json!(1.0)]);
    assert_eq!(
        results("[nan, infinite]", json!(null)),
        [json!([null, null])]
    );
    assert_eq!(
        results(".", json!(9007199254740993_u64)),
        [json!(9007199254740993_u64)]
    );
    assert_eq!(
        results(".[0] * 1000000", json!([1000000000000_i64])).len(),
        1
    );
    assert_eq!(results("\"ü\" + \"x\"", json!(null)), [json!("üx")]);
}

#[test]
fn truncates_many_results() {
    let r = run_jq("range(5000)", json!(null)).unwrap();
    assert!(r.truncated);
    assert_eq!(r.results.len(), MAX_RESULTS);
    assert_eq!(r.results[999], json!(999));
    // An endless generator is cut the same way.
    let r = run_jq("repeat(1)", json!(null)).unwrap();
    assert!(r.truncated);
    let r = run_jq("range(1000)", json!(null)).unwrap();
    assert!(!r.truncated);
}

#[test]
fn parse_errors_have_positions() {
    let err = run_jq(".a | ]", json!({})).unwrap_err();
    let JqError::Parse {
        message,
        offset,
        line,
        column,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*offset, *line, *column), (5, 1, 6), "{message}");
    assert!(message.contains("expected"), "{message}");

    let err = run_jq(".a |\n  foo(1)", json!({})).unwrap_err();
    let JqError::Parse {
        message,
        line,
        column,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(message, "undefined filter foo/1");
    assert_eq!((*line, *column), (2, 3));
    assert!(err.to_string().contains("line 2, column 3"), "{err}");

    for bad in [
        "[1, 2",
        "\"abc",
        ".a[",
        "if . then 1",
        "{a: }",
        "$x",
        ".a.\"\\q\"",
    ] {
        let err = run_jq(bad, json!({})).unwrap_err();
        assert!(matches!(err, JqError::Parse { .. }), "{bad}: {err:?}");
    }
}

#[test]
fn runtime_errors() {
    let err = run_jq(".a.b", json!({"a": 5})).unwrap_err();
    assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
    let err = run_jq(r#"error("boom")"#, json!(null)).unwrap_err();
    assert_eq!(err.to_string(), "jq error: boom");
    assert_eq!(
        results(r#"try error("x") catch ."#, json!(null)),
        [json!("x")]
    );
}

#[test]
fn no_io_or_process_control() {
    // `env` would reveal the gateway's environment (and its secrets).
    for filter in [
        "env",
        "$ENV",
        "$ENV.PATH",
        "env.PATH",
        "input",
        "inputs",
        "input_filename",
    ] {
        let err = run_jq(filter, json!(null)).unwrap_err();
        assert!(matches!(err, JqError::Parse { .. }), "{filter}: {err:?}");
    }
    // `halt` must not exit the process.
    for filter in ["halt", "halt_error", "halt_error(1)", "1, halt"] {
        let err = run_jq(filter, json!("x")).unwrap_err();
        assert!(matches!(err, JqError::Runtime { .. }), "{filter}: {err:?}");
    }
    assert_eq!(results("stderr | . + 1", json!(1)), [json!(2)]);
    assert_eq!(results("debug | . + 1", json!(1)), [json!(2)]);
    let err = run_jq(r#"import "foo" as foo; ."#, json!(null)).unwrap_err();
    assert!(matches!(err, JqError::Parse { .. }), "{err:?}");
}

#[test]
fn recursion_is_rejected() {
    for filter in [
        "def f: 1 + f; f",
        "def f: f; f",
        "def f(g): g | f(g); f(.)",
        "def f: def g: f; g; f",
        "def f($x): if $x > 0 then f($x - 1) else 0 end; f(10)",
        "[.[] | (def f: [f]; f)]",
        "def f: {a: f}; 1",
        ". as [$a] | def r: r; r",
    ] {
        let err = run_jq(filter, json!([1])).unwrap_err();
        assert!(matches!(err, JqError::Rejected { .. }), "{filter}: {err:?}");
        assert!(err.to_string().contains("recursi"), "{err}");
    }
    // In jq a definition is in scope in its own body: this `f` calls itself.
    assert!(matches!(
        run_jq("def f: 1; def f: f + 1; f", json!(null)),
        Err(JqError::Rejected { .. })
    ));
    // Shadowing by an inner definition, and calling other definitions, is not recursion.
    assert_eq!(results("def f: def f: 3; f; f", json!(null)), [json!(3)]);
    assert_eq!(results("def f(x): x + 1; f(2)", json!(null)), [json!(3)]);
    assert_eq!(
        results("def f: 1; def g: f + f; g", json!(null)),
        [json!(2)]
    );
}

#[test]
fn bounded_work() {
    let long = format!(".{}", " ".repeat(MAX_FILTER_CHARS));
    assert!(matches!(
        run_jq(&long, json!(null)),
        Err(JqError::Rejected { .. })
    ));
    let err = run_jq("last(repeat(1))", json!(null)).unwrap_err();
    assert!(matches!(err, JqError::Timeout { .. }), "{err:?}");
    let err = run_jq(r#""x" * 10000000"#, json!(null)).unwrap_err();
    assert!(matches!(err, JqError::OutputTooLarge { .. }), "{err:?}");
    let err = run_jq("reduce range(1000) as $i (0; [.])", json!(null)).unwrap_err();
    assert!(matches!(err, JqError::OutputTooLarge { .. }), "{err:?}");
    assert_eq!(
        results(
            "reduce range(100) as $i (0; [.]) | [paths] | length",
            json!(null)
        ),
        [json!(100)]
    );
}

#[test]
fn busy_when_all_threads_are_taken() {
    let serial = serial();
    let slots: Vec<_> = std::iter::from_fn(|| JqPool::global().slot()).collect();
    assert!(slots.len() <= MAX_WORKERS);
    let args = JqArgs {
        filter: ".".into(),
        input: json!(1),
    };
    assert!(matches!(jq(args), Err(JqError::Busy)));
    drop(slots);
    drop(serial);
    assert!(JqPool::global().slot().is_some());
}

#[test]
fn args_are_strict() {
    let a: JqArgs = serde_json::from_value(json!({"filter": ".", "input": {"a": 1}})).unwrap();
    assert_eq!(a.input, json!({"a": 1}));
    assert!(serde_json::from_value::<JqArgs>(json!({"filter": ".", "input": 1, "x": 1})).is_err());
}
