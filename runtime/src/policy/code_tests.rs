//! The Rego and the CEL form of two rules decide as the built-in rules do: "`file_write` needs
//! `admin`" (an access rule) and "no `fetch` to `*.internal`" (an argument rule, the host read
//! from the `url` argument), on a table of callers and calls, listings included.

use serde_json::{Value, json};
use toolgate_model::config::PolicyConfig;

use crate::testing::StubSource;
use crate::{ErrorKind, Identity, ToolContext, ToolOutput, Toolset};

const BUILT_IN: &str = r#"
rules:
  - {tools: [file_write], roles: [admin]}
arguments:
  - {tools: [fetch], argument: url, deny_hosts: ["*.internal"]}
"#;

const REGO: &str = r#"
rules:
  - tools: [file_write]
    reason: file_write needs the admin role
    rego: |
      package toolgate.file_write
      import rego.v1
      default allow := false
      allow if "admin" in input.caller.roles
  - rego: |
      package toolgate.fetch
      import rego.v1
      deny contains msg if {
        input.tool.name == "fetch"
        host := url_host(input.arguments.url)
        endswith(host, ".internal")
        msg := sprintf("host `%s` is refused", [host])
      }
"#;

const CEL: &str = r#"
rules:
  - tools: [file_write]
    cel: "'admin' in caller.roles"
    reason: file_write needs the admin role
  - cel: >-
      tool.name != 'fetch' || !has(arguments.url)
      || !url_host(arguments.url).endsWith('.internal')
    reason: fetching from an internal host is refused
"#;

fn toolset(policy: &str) -> Toolset {
    let policy: PolicyConfig = serde_saphyr_like(policy);
    let mut source = StubSource::new("local");
    for name in ["file_write", "fetch", "read_file"] {
        source = source.stub(name, |_| Ok(ToolOutput::text("ran")));
    }
    Toolset::builder()
        .source(source)
        .policy(&policy)
        .build()
        .expect("toolset")
}

/// The policy section from YAML, as tools.yaml gives it.
fn serde_saphyr_like(yaml: &str) -> PolicyConfig {
    let text = format!("version: 1\npolicy:\n{}", indent(yaml));
    toolgate_model::ToolsConfig::from_yaml_str(&text, std::path::Path::new("tools.yaml"))
        .expect("tools.yaml")
        .config
        .policy
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

fn who(roles: &[&str]) -> Identity {
    Identity {
        caller: Some("k".into()),
        roles: roles.iter().map(|r| (*r).to_string()).collect(),
        ..Identity::default()
    }
}

/// What a call ended in: `ok`, or the error kind and message.
async fn outcome(
    tools: &Toolset,
    identity: &Identity,
    name: &str,
    args: Value,
) -> Result<(), (ErrorKind, String)> {
    let ctx = ToolContext::builder()
        .caller("k")
        .roles(identity.roles.clone())
        .build();
    tools
        .call_with(name, args, ctx)
        .await
        .map(|_| ())
        .map_err(|e| (e.kind(), e.message().to_string()))
}

#[tokio::test]
async fn rego_and_cel_decide_as_the_built_in_rules_on_a_table_of_callers_and_calls() {
    let built_in = toolset(BUILT_IN);
    let rego = toolset(REGO);
    let cel = toolset(CEL);
    let calls = [
        ("file_write", json!({})),
        ("read_file", json!({})),
        ("fetch", json!({"url": "https://example.com/a"})),
        ("fetch", json!({"url": "https://db.corp.internal/x"})),
        ("fetch", json!({"url": "https://API.Internal./x"})),
        ("fetch", json!({"url": "https://internal/x"})),
        ("fetch", json!({})),
    ];
    let mut refused = 0;
    for roles in [&[][..], &["reader"], &["admin"]] {
        let identity = who(roles);
        for (name, args) in &calls {
            let expected = outcome(&built_in, &identity, name, args.clone()).await;
            for (form, tools) in [("rego", &rego), ("cel", &cel)] {
                let got = outcome(tools, &identity, name, args.clone()).await;
                let case = format!("{form}: {roles:?} calling {name} with {args}");
                match (&expected, &got) {
                    (Ok(()), Ok(())) => {}
                    (Err((kind, built)), Err((code_kind, message))) => {
                        assert_eq!(kind, code_kind, "{case}: {built} / {message}");
                        assert!(
                            message.contains(&format!("tool `{name}`")),
                            "{case}: {message}"
                        );
                        if *name == "file_write" {
                            assert!(built.contains("admin"), "{built}");
                            assert!(
                                message.contains("file_write needs the admin role"),
                                "{case}: {message}"
                            );
                        } else {
                            let host = built
                                .split("host `")
                                .nth(1)
                                .and_then(|h| h.split('`').next())
                                .unwrap();
                            assert!(
                                message.contains(&format!("host `{host}` is refused"))
                                    || message.contains("internal host is refused"),
                                "{case}: {message}"
                            );
                        }
                        refused += 1;
                    }
                    _ => panic!(
                        "{case}: the built-in rules give {expected:?}, the {form} rule {got:?}"
                    ),
                }
            }
        }
        // Listings: the access rule hides file_write from non-admins in every form; the
        // argument rule hides nothing (it needs the arguments).
        let listed = |tools: &Toolset| {
            let mut names: Vec<String> = tools
                .tools_for(&identity)
                .iter()
                .map(|t| t.name.clone())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listed(&rego), listed(&built_in), "{roles:?}");
        assert_eq!(listed(&cel), listed(&built_in), "{roles:?}");
    }
    // 2 callers refused file_write, 3 callers refused 2 internal fetches, in 2 forms each.
    assert_eq!(refused, (2 + 3 * 2) * 2);
}

#[tokio::test]
async fn claims_reach_a_policy_as_caller_claims() {
    let tools = toolset(
        r#"
rules:
  - {tools: [file_write], cel: "has(caller.claims.tenant) && caller.claims.tenant == 'acme'"}
"#,
    );
    let call = |claims: Value| {
        let ctx = ToolContext::builder()
            .caller("k")
            .claims(std::sync::Arc::new(claims))
            .build();
        let tools = tools.clone();
        async move { tools.call_with("file_write", json!({}), ctx).await }
    };
    assert!(call(json!({"tenant": "acme"})).await.is_ok());
    let e = call(json!({"tenant": "other"})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(
        e.message()
            .contains("refused by rule 1 of policy.rules (CEL)"),
        "{}",
        e.message()
    );
}
