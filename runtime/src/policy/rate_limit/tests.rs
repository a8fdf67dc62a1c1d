use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use toolgate_model::config::{PolicyConfig, ToolPolicy};
use tower::ServiceExt;

use super::*;
use crate::policy::{CallReport, Pipeline};
use crate::testing::StubSource;
use crate::{ToolContext, ToolDescriptor, ToolSource};

/// Counts the calls that reach it and answers `ok`.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl Service<Call> for Counter {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Call) -> CallFuture {
        self.0.fetch_add(1, Ordering::SeqCst);
        crate::ToolFuture::ready(Ok(ToolOutput::text("ok")))
    }
}

impl Counter {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

fn descriptor(name: &str, source: &str) -> Arc<ToolDescriptor> {
    Arc::new(ToolDescriptor {
        name: name.into(),
        source: source.into(),
        input_schema: serde_json::json!({"type": "object"}),
        ..ToolDescriptor::default()
    })
}

/// The policy section, written as JSON (the runtime has no YAML parser).
fn policy(json: &str) -> PolicyConfig {
    serde_json::from_str(json).expect("policy JSON")
}

/// The stack `rate limit → counter` of `tool` under `config` (None when no limit is on).
fn stack(
    pipeline: &Pipeline,
    tool: &Arc<ToolDescriptor>,
    counter: &Counter,
) -> Option<RateLimited<Counter>> {
    let p = pipeline.config.effective(&tool.name, &tool.source);
    let sp = pipeline.config.source_policy(&tool.source);
    let inputs = LayerInputs {
        pipeline,
        tool,
        policy: &p,
        source_policy: &sp,
    };
    layer(&inputs).map(|l| l.layer(counter.clone()))
}

fn call(tool: &Arc<ToolDescriptor>, caller: Option<&str>) -> Call {
    let mut ctx = ToolContext::builder();
    if let Some(c) = caller {
        ctx = ctx.caller(c);
    }
    Call {
        report: Some(Arc::new(CallReport::default())),
        caller_left: None,
        watch_cancel: false,
        ..Call::new(
            Arc::clone(tool),
            Arc::new(StubSource::new(&tool.source)) as Arc<dyn ToolSource>,
            Value::Null,
            ctx.build(),
        )
    }
}

async fn run(
    svc: &RateLimited<Counter>,
    tool: &Arc<ToolDescriptor>,
    caller: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    svc.clone().oneshot(call(tool, caller)).await
}

fn pipeline(config: PolicyConfig) -> Pipeline {
    Pipeline::new(false, None, config)
}

#[test]
fn off_without_a_limit() {
    let p = pipeline(PolicyConfig::default());
    let t = descriptor("a", "local");
    assert!(stack(&p, &t, &Counter::default()).is_none());
    let p = pipeline(PolicyConfig {
        tools: [(
            "a".into(),
            ToolPolicy {
                concurrency: Some(1),
                ..ToolPolicy::default()
            },
        )]
        .into(),
        ..PolicyConfig::default()
    });
    assert!(stack(&p, &t, &Counter::default()).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_20_at_5_per_second_lets_5_through() {
    let p = pipeline(policy(r#"{"tools": {"calc": {"rate_limit": "5/s"}}}"#));
    let t = descriptor("calc", "local");
    let counter = Counter::default();
    let svc = stack(&p, &t, &counter).expect("layer on");
    let mut ok = 0;
    let mut refused = Vec::new();
    for _ in 0..20 {
        match run(&svc, &t, None).await {
            Ok(_) => ok += 1,
            Err(e) => refused.push(e),
        }
    }
    assert_eq!((ok, refused.len(), counter.count()), (5, 15, 5));
    let e = &refused[0];
    assert_eq!(e.kind(), ErrorKind::RateLimited);
    assert!(e.is_retryable());
    // One call every 200 ms: the next one is 200 ms away (the clock is paused).
    assert_eq!(e.retry_after(), Some(Duration::from_millis(200)));
    assert_eq!(
        e.message(),
        "tool `calc`: rate limit 5/s reached; retry in 200 ms"
    );
    assert_eq!(e.details().unwrap()["scope"], "tool");

    // The bucket refills steadily: 200 ms later one more call, not five.
    tokio::time::advance(Duration::from_millis(200)).await;
    assert!(run(&svc, &t, None).await.is_ok());
    let e = run(&svc, &t, None).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_millis(200)));
    tokio::time::advance(Duration::from_millis(120)).await;
    let e = run(&svc, &t, None).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_millis(80)));
    assert!(e.message().ends_with("retry in 80 ms"), "{}", e.message());
    // A full second later, a full burst again.
    tokio::time::advance(Duration::from_secs(1)).await;
    for _ in 0..5 {
        assert!(run(&svc, &t, None).await.is_ok());
    }
    assert!(run(&svc, &t, None).await.is_err());
    assert_eq!(counter.count(), 11);
}

#[tokio::test(start_paused = true)]
async fn each_tool_has_its_own_bucket_and_a_rebuilt_stack_keeps_it() {
    let p = pipeline(policy(r#"{"defaults": {"rate_limit": "2/m"}}"#));
    let (a, b) = (descriptor("a", "local"), descriptor("b", "local"));
    let counter = Counter::default();
    let sa = stack(&p, &a, &counter).unwrap();
    let sb = stack(&p, &b, &counter).unwrap();
    for _ in 0..2 {
        assert!(run(&sa, &a, None).await.is_ok());
        assert!(run(&sb, &b, None).await.is_ok());
    }
    let e = run(&sa, &a, None).await.unwrap_err();
    assert!(e.message().starts_with("tool `a`: rate limit 2/m reached"));
    assert_eq!(e.retry_after(), Some(Duration::from_secs(30)));
    // The same tool's stack built again (a new descriptor) shares the spent bucket.
    let again = stack(&p, &descriptor("a", "local"), &counter).unwrap();
    assert!(run(&again, &a, None).await.is_err());
    assert_eq!(counter.count(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_source_limit_is_shared_by_its_tools() {
    let p = pipeline(policy(
        r#"{"sources": {"gh": {"source_rate_limit": "3/s"}}, "tools": {"gh.b": {"source_rate_limit": "100/s"}}}"#,
    ));
    let (a, b, other) = (
        descriptor("gh.a", "gh"),
        descriptor("gh.b", "gh"),
        descriptor("x", "local"),
    );
    let counter = Counter::default();
    let sa = stack(&p, &a, &counter).unwrap();
    // Read from the source's policy: a tool entry cannot raise it.
    let sb = stack(&p, &b, &counter).unwrap();
    assert!(stack(&p, &other, &counter).is_none());
    assert!(run(&sa, &a, None).await.is_ok());
    assert!(run(&sb, &b, None).await.is_ok());
    assert!(run(&sa, &a, None).await.is_ok());
    let e = run(&sb, &b, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited);
    assert!(
        e.message()
            .starts_with("tool `gh.b`: rate limit 3/s of source `gh`"),
        "{}",
        e.message()
    );
    assert_eq!(e.details().unwrap()["source"], "gh");
    assert!(run(&sa, &a, None).await.is_err());
    assert_eq!(counter.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn each_caller_has_its_own_budget_per_tool() {
    let p = pipeline(policy(r#"{"defaults": {"caller_rate_limit": "2/s"}}"#));
    let (a, b) = (descriptor("a", "local"), descriptor("b", "local"));
    let counter = Counter::default();
    let sa = stack(&p, &a, &counter).unwrap();
    let sb = stack(&p, &b, &counter).unwrap();
    for who in [Some("alice"), Some("bob"), None] {
        assert!(run(&sa, &a, who).await.is_ok());
        assert!(run(&sa, &a, who).await.is_ok());
        let e = run(&sa, &a, who).await.unwrap_err();
        assert_eq!(e.details().unwrap()["scope"], "caller");
        let named = match who {
            Some(c) => format!("(caller `{c}`) reached"),
            None => "(anonymous callers) reached".into(),
        };
        assert!(e.message().contains(&named), "{}", e.message());
        assert!(e.message().contains("2/s per caller"), "{}", e.message());
    }
    // Another tool: another budget for the same caller.
    assert!(run(&sb, &b, Some("alice")).await.is_ok());
    assert_eq!(counter.count(), 7);
}

#[tokio::test(start_paused = true)]
async fn a_caller_over_its_limit_does_not_drain_the_shared_buckets() {
    let p = pipeline(policy(
        r#"{"tools": {"a": {"caller_rate_limit": "1/s", "rate_limit": "3/s"}}}"#,
    ));
    let a = descriptor("a", "local");
    let counter = Counter::default();
    let sa = stack(&p, &a, &counter).unwrap();
    assert!(run(&sa, &a, Some("noisy")).await.is_ok());
    for _ in 0..10 {
        let e = run(&sa, &a, Some("noisy")).await.unwrap_err();
        assert_eq!(e.details().unwrap()["scope"], "caller");
    }
    // The tool's bucket still has 2 of its 3 calls.
    assert!(run(&sa, &a, Some("x")).await.is_ok());
    assert!(run(&sa, &a, Some("y")).await.is_ok());
    let e = run(&sa, &a, Some("z")).await.unwrap_err();
    assert_eq!(e.details().unwrap()["scope"], "tool");
    assert_eq!(counter.count(), 3);
}

#[test]
fn limits_read_as_written() {
    let l = |calls, secs| RateLimit {
        calls,
        per: Duration::from_secs(secs),
    };
    assert_eq!(limit_text(l(5, 1)), "5/s");
    assert_eq!(limit_text(l(100, 60)), "100/m");
    assert_eq!(limit_text(l(7, 3600)), "7/h");
    // 7/s: a refill every 1/7 s, a burst of 7.
    let q = quota(l(7, 1));
    assert_eq!(q.burst_size().get(), 7);
    assert_eq!(q.replenish_interval(), Duration::from_secs(1) / 7);
}
