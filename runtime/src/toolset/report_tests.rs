//! A caller's own `CallReport` (`ToolContextBuilder::report`): the layers fill it in, so that
//! the caller reads afterwards what the call went through (the gateway's call log does).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;

use crate::policy::CallReport;
use crate::testing::StubSource;
use crate::{ToolAnnotations, ToolContext, ToolDescriptor, ToolOutput, Toolset};

#[tokio::test]
async fn the_callers_report_says_what_the_call_cost_and_whether_the_cache_answered() {
    let lookup = ToolDescriptor {
        name: "lookup".into(),
        input_schema: json!({"type": "object"}),
        source: "local".into(),
        annotations: ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        },
        ..ToolDescriptor::default()
    };
    let source = StubSource::new("local")
        .stub_with(lookup, |_| Ok(ToolOutput::text("found")))
        .stub("plain", |_| Ok(ToolOutput::text("done")));
    let policy = serde_json::from_value(json!({
        "tools": {"lookup": {"cache_ttl_ms": 60000, "cost_per_call": 0.25}},
        "budgets": {"per_caller": 10.0}
    }))
    .unwrap();
    let tools = Toolset::builder()
        .source(source)
        .policy(&policy)
        .build()
        .unwrap();
    let call = |name: &'static str| {
        let tools = tools.clone();
        async move {
            let report = Arc::new(CallReport::default());
            let ctx = ToolContext::builder()
                .caller("ann")
                .report(Arc::clone(&report))
                .build();
            tools.call_with(name, json!({}), ctx).await.unwrap();
            report
        }
    };
    let first = call("lookup").await;
    assert!(!first.cache_hit());
    assert_eq!(first.cost_micros.load(Ordering::Relaxed), 250_000);
    let second = call("lookup").await;
    assert!(second.cache_hit());
    // A tool whose policy fills in no report leaves the caller's untouched.
    let plain = call("plain").await;
    assert!(!plain.cache_hit());
    assert_eq!(
        (plain.retries(), plain.cost_micros.load(Ordering::Relaxed)),
        (0, 0)
    );
}
