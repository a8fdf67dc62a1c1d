//! The guardrail layers in a toolset over a stub source: deny rules, masking of arguments and
//! results, custom guardrails (refusing, replacing, selected by tool and source), and the
//! build errors of unknown or doubly defined guardrails.

use serde_json::{Value, json};
use toolgate_model::config::{DenyRule, GuardrailConfig, MaskConfig, PolicyConfig, ToolPolicy};

use super::*;
use crate::testing::StubSource;
use crate::{BoxFuture, ToolOutput, Toolset};

fn echo_source() -> StubSource {
    StubSource::new("stub").stub("echo", |args| Ok(ToolOutput::text(args.to_string())))
}

/// A policy whose defaults run `names`, with guardrail `g` defined as `config`.
fn policy(names: &[&str], defined: &[(&str, GuardrailConfig)]) -> PolicyConfig {
    PolicyConfig {
        defaults: ToolPolicy {
            guardrails: Some(names.iter().map(|n| n.to_string()).collect()),
            ..ToolPolicy::default()
        },
        guardrails: defined
            .iter()
            .map(|(n, g)| (n.to_string(), g.clone()))
            .collect(),
        ..PolicyConfig::default()
    }
}

fn toolset(stub: &StubSource, policy: &PolicyConfig, custom: Vec<CustomGuardrail>) -> Toolset {
    let mut builder = Toolset::builder().source(stub.clone()).policy(policy);
    for c in custom {
        builder = builder.guardrail(c);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_deny_rule_refuses_without_calling_and_without_the_value() {
    let stub = echo_source();
    let guard = GuardrailConfig {
        deny: vec![DenyRule {
            name: "no_rm".into(),
            pattern: r"rm\s+-rf".into(),
            argument: None,
        }],
        ..GuardrailConfig::default()
    };
    let ts = toolset(&stub, &policy(&["shell"], &[("shell", guard)]), vec![]);
    let e = ts
        .call(
            "echo",
            json!({"steps": [{"cmd": "ls"}, {"cmd": "sudo rm -rf /srv"}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PolicyDenied);
    assert!(
        e.message()
            .contains("argument `/steps/1/cmd` matches deny rule `no_rm`"),
        "{e}"
    );
    assert!(
        !e.message().contains("/srv") && !e.message().contains("rm -rf"),
        "{e}"
    );
    stub.assert_not_called("echo");
    ts.call("echo", json!({"cmd": "rm -r x"})).await.unwrap();
}

#[tokio::test]
async fn arguments_are_masked_when_asked_and_results_always() {
    let stub = echo_source();
    let guard = GuardrailConfig {
        mask: Some(MaskConfig {
            arguments: true,
            ..MaskConfig::default()
        }),
        ..GuardrailConfig::default()
    };
    let ts = toolset(&stub, &policy(&["pii"], &[("pii", guard)]), vec![]);
    let out = ts
        .call("echo", json!({"to": "eve@example.com"}))
        .await
        .unwrap();
    stub.assert_called_with("echo", json!({"to": "[email]"}));
    assert_eq!(out.text_joined(), r#"{"to":"[email]"}"#);
}

/// Refuses `secret` arguments, replaces `swap` arguments, rewrites results saying `raw`.
struct Custom;

impl Guardrail for Custom {
    fn check_arguments<'a>(
        &'a self,
        call: GuardrailCall<'a>,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Verdict<Value>> {
        let verdict = match arguments["mode"].as_str() {
            Some("secret") => Verdict::Deny(format!("no secrets for {}", call.tool)),
            Some("swap") => Verdict::Replace(json!({"mode": "swapped"})),
            _ => Verdict::Allow,
        };
        Box::pin(async move { verdict })
    }

    fn check_result<'a>(
        &'a self,
        _call: GuardrailCall<'a>,
        result: &'a ToolOutput,
    ) -> BoxFuture<'a, Verdict<ToolOutput>> {
        Box::pin(async move {
            if result.text_joined().contains("raw") {
                Verdict::Replace(ToolOutput::text("cooked"))
            } else {
                Verdict::Allow
            }
        })
    }
}

#[tokio::test]
async fn a_custom_guardrail_refuses_and_replaces_both_ways() {
    let stub = echo_source();
    let ts = toolset(
        &stub,
        &PolicyConfig::default(),
        vec![CustomGuardrail::new("custom", Custom)],
    );
    let e = ts
        .call("echo", json!({"mode": "secret"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PolicyDenied);
    assert!(
        e.message()
            .contains("guardrail `custom`: no secrets for echo"),
        "{e}"
    );
    stub.assert_not_called("echo");

    let out = ts.call("echo", json!({"mode": "swap"})).await.unwrap();
    stub.assert_called_with("echo", json!({"mode": "swapped"}));
    assert_eq!(out.text_joined(), r#"{"mode":"swapped"}"#);

    let out = ts.call("echo", json!({"mode": "raw"})).await.unwrap();
    assert_eq!(out.text_joined(), "cooked");
}

#[tokio::test]
async fn a_custom_guardrail_guards_only_what_its_settings_select() {
    let stub = echo_source().stub("other", |_| Ok(ToolOutput::text("ok")));
    let custom = CustomGuardrail::new("custom", Custom).tools(["other"]);
    let ts = toolset(&stub, &PolicyConfig::default(), vec![custom]);
    ts.call("echo", json!({"mode": "secret"})).await.unwrap();
    assert!(ts.call("other", json!({"mode": "secret"})).await.is_err());
    let custom = CustomGuardrail::new("custom", Custom).sources(["elsewhere"]);
    let ts = toolset(&stub, &PolicyConfig::default(), vec![custom]);
    ts.call("other", json!({"mode": "secret"})).await.unwrap();
}

#[test]
fn unknown_and_doubly_defined_guardrails_fail_the_build() {
    let stub = echo_source();
    let e = Toolset::builder()
        .source(stub.clone())
        .policy(&policy(&["nowhere"], &[]))
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("`nowhere`"), "{e}");
    let defined = GuardrailConfig {
        mask: Some(MaskConfig::default()),
        ..GuardrailConfig::default()
    };
    let e = Toolset::builder()
        .source(stub)
        .policy(&policy(&[], &[("pii", defined)]))
        .guardrail(CustomGuardrail::new("pii", Custom))
        .build()
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("guardrail `pii` is defined twice"),
        "{e}"
    );
}

#[tokio::test]
async fn a_guardrail_set_runs_besides_the_tools_own_and_fails_closed_once_dropped() {
    let stub = echo_source();
    let pii = GuardrailConfig {
        mask: Some(MaskConfig::default()),
        ..GuardrailConfig::default()
    };
    // No tool runs `pii` itself: only calls through the set do.
    let ts = toolset(&stub, &policy(&[], &[("pii", pii)]), vec![]);
    assert_eq!(ts.guardrail_set(&["nope"]).unwrap_err(), "nope");
    let set = ts.guardrail_set(&["pii", "pii"]).unwrap();
    assert_eq!(set.names().collect::<Vec<_>>(), ["pii"]);
    let args = json!({"to": "ann@example.org"});
    let plain = ts.call("echo", args.clone()).await.unwrap();
    assert!(plain.to_text().contains("ann@example.org"), "{plain:?}");
    let guarded = ts
        .call_guarded("echo", args.clone(), crate::ToolContext::default(), &set)
        .await
        .unwrap();
    assert!(
        guarded.to_text().contains("[email]") && !guarded.to_text().contains("ann@"),
        "{guarded:?}"
    );
    // A reload without `pii`: calls through the set are refused, not made unchecked.
    ts.reload_policy(PolicyConfig::default()).unwrap();
    let e = ts
        .call_guarded("echo", args, crate::ToolContext::default(), &set)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PolicyDenied);
    assert!(e.message().contains("guardrail `pii`"), "{e}");
    assert_eq!(stub.calls_to("echo").len(), 2);
}
