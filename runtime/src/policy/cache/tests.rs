use std::sync::atomic::AtomicUsize;

use serde_json::json;
use toolgate_model::config::PolicyConfig;

use super::*;
use crate::policy::{CallReport, Pipeline};
use crate::testing::StubSource;
use crate::{ToolAnnotations, ToolContext, ToolDescriptor, ToolSource};

/// A backend that counts its calls: `{"fail": true}` fails, `{"flag": true}` answers with an
/// `is_error` result, anything else answers `call <n>`.
#[derive(Clone, Default)]
pub(super) struct Counting {
    calls: Arc<AtomicUsize>,
    delay: Duration,
}

impl Counting {
    pub(super) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Service<Call> for Counting {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let delay = self.delay;
        ToolFuture::new(async move {
            tokio::time::sleep(delay).await;
            if call.args["fail"] == json!(true) {
                return Err(ToolError::upstream("backend failed"));
            }
            let mut out = ToolOutput::text(format!("call {n}"));
            out.is_error = call.args["flag"] == json!(true);
            Ok(out)
        })
    }
}

pub(super) fn descriptor(read_only: bool) -> Arc<ToolDescriptor> {
    Arc::new(ToolDescriptor {
        name: "lookup".into(),
        source: "local".into(),
        input_schema: json!({"type": "object"}),
        annotations: ToolAnnotations {
            read_only_hint: Some(read_only),
            ..ToolAnnotations::default()
        },
        ..ToolDescriptor::default()
    })
}

pub(super) fn pipeline(json: &str) -> Pipeline {
    let config: PolicyConfig = serde_json::from_str(json).expect("policy JSON");
    Pipeline::new(false, None, config)
}

pub(super) fn stack(
    p: &Pipeline,
    tool: &Arc<ToolDescriptor>,
    backend: &Counting,
) -> Option<CacheService<Counting>> {
    let policy = p.config.effective(&tool.name, &tool.source);
    let source_policy = p.config.source_policy(&tool.source);
    let inputs = LayerInputs {
        pipeline: p,
        tool,
        policy: &policy,
        source_policy: &source_policy,
    };
    layer(&inputs).map(|l| l.layer(backend.clone()))
}

fn call(tool: &Arc<ToolDescriptor>, args: Value, caller: Option<&str>) -> (Call, Arc<CallReport>) {
    let mut ctx = ToolContext::builder();
    if let Some(c) = caller {
        ctx = ctx.caller(c);
    }
    let report = Arc::new(CallReport::default());
    let call = Call {
        report: Some(Arc::clone(&report)),
        caller_left: None,
        watch_cancel: false,
        ..Call::new(
            Arc::clone(tool),
            Arc::new(StubSource::new(&tool.source)) as Arc<dyn ToolSource>,
            args,
            ctx.build(),
        )
    };
    (call, report)
}

pub(super) async fn run(
    svc: &CacheService<Counting>,
    tool: &Arc<ToolDescriptor>,
    args: Value,
    caller: Option<&str>,
) -> (Result<ToolOutput, ToolError>, bool) {
    let (c, report) = call(tool, args, caller);
    let r = svc.clone().oneshot(c).await;
    (r, report.cache_hit())
}

fn text(r: &Result<ToolOutput, ToolError>) -> String {
    r.as_ref().expect("ok").text_joined()
}

pub(super) const CACHED: &str = r#"{"tools": {"lookup": {"cache_ttl_ms": 60000}}}"#;

#[test]
fn canonical_json_sorts_keys_at_every_depth() {
    let a = json!({"b": 1, "a": {"y": [true, null, {"d": "x", "c": 1.5}], "x": "é\"q"}});
    let b = json!({"a": {"x": "é\"q", "y": [true, null, {"c": 1.5, "d": "x"}]}, "b": 1});
    assert_eq!(canonical_json(&a), canonical_json(&b));
    assert_eq!(
        canonical_json(&a),
        r#"{"a":{"x":"é\"q","y":[true,null,{"c":1.5,"d":"x"}]},"b":1}"#
    );
    // Array order matters; so do values.
    assert_ne!(
        canonical_json(&json!([1, 2])),
        canonical_json(&json!([2, 1]))
    );
    assert_ne!(
        canonical_json(&json!({"a": "1"})),
        canonical_json(&json!({"a": 1}))
    );
}

#[test]
fn off_without_a_ttl_or_for_a_tool_that_is_not_idempotent() {
    let backend = Counting::default();
    assert!(stack(&pipeline("{}"), &descriptor(true), &backend).is_none());
    let zero = pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 0}}}"#);
    assert!(stack(&zero, &descriptor(true), &backend).is_none());
    let p = pipeline(CACHED);
    assert!(stack(&p, &descriptor(false), &backend).is_none());
    // Warned once per tool, however often its stack is built.
    assert!(stack(&p, &descriptor(false), &backend).is_none());
    assert_eq!(p.shared.cache.warned.lock().unwrap().len(), 1);
    // `idempotent: true` in the policy turns it on for a tool without annotations.
    let declared = pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 1000, "idempotent": true}}}"#);
    assert!(stack(&declared, &descriptor(false), &backend).is_some());
}

#[tokio::test]
async fn a_repeated_call_is_a_hit_whatever_the_key_order() {
    let p = pipeline(CACHED);
    let tool = descriptor(true);
    let backend = Counting::default();
    let svc = stack(&p, &tool, &backend).expect("on");
    let (first, hit) = run(&svc, &tool, json!({"q": "x", "n": 1}), Some("alice")).await;
    assert_eq!((text(&first), hit), ("call 1".to_string(), false));
    let (second, hit) = run(&svc, &tool, json!({"n": 1, "q": "x"}), Some("alice")).await;
    assert_eq!((text(&second), hit), ("call 1".to_string(), true));
    assert_eq!(backend.calls(), 1);
    // Other arguments: a miss.
    let (other, hit) = run(&svc, &tool, json!({"n": 2, "q": "x"}), Some("alice")).await;
    assert_eq!((text(&other), hit), ("call 2".to_string(), false));
}

#[tokio::test]
async fn callers_do_not_share_entries() {
    let p = pipeline(CACHED);
    let tool = descriptor(true);
    let backend = Counting::default();
    let svc = stack(&p, &tool, &backend).expect("on");
    let args = json!({"q": "x"});
    let _ = run(&svc, &tool, args.clone(), Some("alice")).await;
    let (r, hit) = run(&svc, &tool, args.clone(), Some("bob")).await;
    assert_eq!((text(&r), hit), ("call 2".to_string(), false));
    let (r, hit) = run(&svc, &tool, args, None).await;
    assert_eq!((text(&r), hit), ("call 3".to_string(), false));
}

#[tokio::test]
async fn errors_and_is_error_results_are_not_cached() {
    let p = pipeline(CACHED);
    let tool = descriptor(true);
    let backend = Counting::default();
    let svc = stack(&p, &tool, &backend).expect("on");
    for _ in 0..2 {
        let (r, hit) = run(&svc, &tool, json!({"fail": true}), None).await;
        assert_eq!(r.expect_err("fails").kind(), crate::ErrorKind::Upstream);
        assert!(!hit);
    }
    for _ in 0..2 {
        let (r, hit) = run(&svc, &tool, json!({"flag": true}), None).await;
        assert!(r.expect("answers").is_error && !hit);
    }
    assert_eq!(backend.calls(), 4);
}

#[tokio::test]
async fn an_entry_expires_after_its_ttl() {
    let p = pipeline(r#"{"tools": {"lookup": {"cache_ttl_ms": 50}}}"#);
    let tool = descriptor(true);
    let backend = Counting::default();
    let svc = stack(&p, &tool, &backend).expect("on");
    let _ = run(&svc, &tool, json!({}), None).await;
    let (_, hit) = run(&svc, &tool, json!({}), None).await;
    assert!(hit);
    // moka reads the real clock: wait for real.
    std::thread::sleep(Duration::from_millis(120));
    let (r, hit) = run(&svc, &tool, json!({}), None).await;
    assert_eq!((text(&r), hit), ("call 2".to_string(), false));
}

#[tokio::test]
async fn identical_concurrent_misses_run_the_backend_once() {
    let p = pipeline(CACHED);
    let tool = descriptor(true);
    let backend = Counting {
        delay: Duration::from_millis(50),
        ..Counting::default()
    };
    let svc = stack(&p, &tool, &backend).expect("on");
    let (a, b) = tokio::join!(
        run(&svc, &tool, json!({"q": 1}), None),
        run(&svc, &tool, json!({"q": 1}), None)
    );
    assert_eq!(text(&a.0), "call 1");
    assert_eq!(text(&b.0), "call 1");
    assert_eq!(backend.calls(), 1);
    assert!(a.1 != b.1, "one ran the backend, the other waited for it");
}

#[test]
fn hits_and_misses_are_counted() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let p = pipeline(CACHED);
            let tool = descriptor(true);
            let backend = Counting::default();
            let svc = stack(&p, &tool, &backend).expect("on");
            for _ in 0..3 {
                let _ = run(&svc, &tool, json!({}), None).await;
            }
        });
    });
    let text = handle.render();
    assert!(
        text.contains(r#"toolgate_cache_hits_total{tool="lookup"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"toolgate_cache_misses_total{tool="lookup"} 1"#),
        "{text}"
    );
}
