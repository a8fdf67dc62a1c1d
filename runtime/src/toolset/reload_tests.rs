//! `Toolset::reload_policy`: a new rule takes effect on the next call and listing; what the
//! layers counted carries over (a rate-limit bucket spent before the reload stays spent); a
//! guardrail registered in code survives; a policy that does not compile changes nothing; the
//! tools watch hears the reload.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_model::config::PolicyConfig;

use crate::policy::guardrails::{CustomGuardrail, Guardrail, GuardrailCall, Verdict};
use crate::testing::StubSource;
use crate::{BoxFuture, ErrorKind, Identity, ToolContext, ToolOutput, Toolset};

fn policy(yaml: &str) -> PolicyConfig {
    let indented: String = yaml.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("version: 1\npolicy:\n{indented}");
    toolgate_model::ToolsConfig::from_yaml_str(&text, std::path::Path::new("tools.yaml"))
        .expect("tools.yaml")
        .config
        .policy
}

/// Refuses any argument mentioning `prod`.
struct NoProd;

impl Guardrail for NoProd {
    fn check_arguments<'a>(
        &'a self,
        _call: GuardrailCall<'a>,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Verdict<Value>> {
        let verdict = if arguments.to_string().contains("prod") {
            Verdict::Deny("production is off limits".into())
        } else {
            Verdict::Allow
        };
        Box::pin(std::future::ready(verdict))
    }
}

fn toolset(start: &str) -> Toolset {
    let source = StubSource::new("local")
        .stub("deploy", |_| Ok(ToolOutput::text("deployed")))
        .stub("status", |_| Ok(ToolOutput::text("ok")));
    Toolset::builder()
        .source(source)
        .policy(&policy(start))
        .guardrail(CustomGuardrail::new("no_prod", NoProd))
        .build()
        .expect("toolset")
}

fn reader() -> Identity {
    Identity {
        caller: Some("ann".into()),
        roles: vec!["reader".into()],
        ..Identity::default()
    }
}

async fn call(tools: &Toolset, name: &str, args: Value) -> Result<ToolOutput, ErrorKind> {
    let ctx = ToolContext::builder().identity(reader()).build();
    tools.call_with(name, args, ctx).await.map_err(|e| e.kind())
}

#[tokio::test]
async fn a_reloaded_rule_applies_at_once_and_the_counted_state_carries_over() {
    // `status`: 2 calls per hour for each caller; `deploy`: open.
    let tools = toolset("tools:\n  status: {caller_rate_limit: 2/h}\n");
    let mut watch = tools.watch_tools();
    assert!(call(&tools, "deploy", json!({})).await.is_ok());
    assert!(call(&tools, "status", json!({})).await.is_ok());
    let shown = |tools: &Toolset| -> Vec<String> {
        tools
            .tools_for(&reader())
            .iter()
            .map(|d| d.name.clone())
            .collect()
    };
    assert!(shown(&tools).contains(&"deploy".to_string()));

    let done = tools
        .reload_policy(policy(
            "tools:\n  status: {caller_rate_limit: 2/h}\nrules:\n  - {tools: [deploy], roles: [admin]}\n",
        ))
        .expect("the new policy compiles");
    assert_eq!(done.generation, 1);
    assert!(done.not_applied.is_empty(), "{:?}", done.not_applied);
    tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the tools watch hears the reload");

    // The new rule: refused and hidden.
    assert_eq!(
        call(&tools, "deploy", json!({})).await.unwrap_err(),
        ErrorKind::PermissionDenied
    );
    assert!(!shown(&tools).contains(&"deploy".to_string()));
    // The bucket spent before the reload: one call left, not two.
    assert!(call(&tools, "status", json!({})).await.is_ok());
    assert_eq!(
        call(&tools, "status", json!({})).await.unwrap_err(),
        ErrorKind::RateLimited
    );
    // The guardrail registered in code is still there.
    assert_eq!(
        call(&tools, "status", json!({"env": "prod"}))
            .await
            .unwrap_err(),
        ErrorKind::PolicyDenied
    );
}

#[tokio::test]
async fn a_policy_that_does_not_compile_changes_nothing() {
    let tools = toolset("rules:\n  - {tools: [deploy], roles: [admin]}\n");
    let broken = policy("rules:\n  - {tools: [deploy], roles: [admin]}\n");
    let mut broken = broken;
    broken.guardrails.clear();
    broken.defaults.guardrails = Some(vec!["nowhere".into()]);
    let error = tools
        .reload_policy(broken)
        .expect_err("an unknown guardrail");
    assert!(error.to_string().contains("nowhere"), "{error}");
    assert_eq!(
        call(&tools, "deploy", json!({})).await.unwrap_err(),
        ErrorKind::PermissionDenied
    );
    assert!(call(&tools, "status", json!({})).await.is_ok());

    let pinned = policy("pinning: {file: pins.json}\n");
    let done = tools.reload_policy(pinned).expect("compiles");
    assert_eq!(done.not_applied.len(), 1, "{:?}", done.not_applied);
    assert!(done.not_applied[0].contains("pinning"));
    // The reload itself applied: deploy is open again.
    assert!(call(&tools, "deploy", json!({})).await.is_ok());
}
