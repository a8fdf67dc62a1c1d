//! [`CallScope`]: the part of the toolset a call was made through (a gateway's virtual
//! server), carried to every call made on its behalf.

use std::fmt::Debug;

use serde_json::Value;

use crate::catalog::ToolEntry;
use crate::policy::guardrails::GuardrailSet;
use crate::{ToolContext, ToolError, ToolOutput, Toolset};

/// A limit on which tools a call, and every call made on its behalf, may reach, and the
/// guardrails they all pass besides each tool's own.
///
/// Set on a context with [`ToolContextBuilder::scope`](crate::ToolContextBuilder::scope); a
/// nested call ([`ToolContext::call_tool`](crate::ToolContext::call_tool): a tool calling
/// tools, code run by code mode) inherits it, so that a tool reached through a gateway's
/// virtual server cannot call a tool the server does not select, nor skip the server's
/// guardrails.
pub trait CallScope: Send + Sync + Debug {
    /// Whether a call on the scope's behalf may reach the tool of `entry`.
    fn admits(&self, entry: &ToolEntry) -> bool;

    /// The error for a call of `name` (the toolset's name) the scope does not admit: a
    /// `not_found` naming the scope, as a direct call through it would get.
    fn refusal(&self, name: &str) -> ToolError;

    /// The guardrails every call in the scope passes besides the tool's own
    /// ([`Toolset::call_guarded`](crate::Toolset::call_guarded)); `None` for none.
    fn guardrails(&self) -> Option<&GuardrailSet>;
}

/// Calls `name` on `toolset` under `ctx` inside `scope` (none: a plain
/// [`Toolset::call_with`]): refused with the scope's [`refusal`](CallScope::refusal) when it
/// does not admit the tool, else run with its guardrails ([`Toolset::call_guarded`]).
pub(crate) async fn call_in(
    scope: Option<&dyn CallScope>,
    toolset: &Toolset,
    name: &str,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let Some(scope) = scope else {
        return toolset.call_with(name, args, ctx).await;
    };
    // Admitted by the catalog entry of the very name asked for: nested calls use the toolset's
    // names, whatever the scope shows them as.
    if !toolset.entry(name).is_some_and(|e| scope.admits(&e)) {
        return Err(scope.refusal(name));
    }
    match scope.guardrails() {
        Some(guardrails) => toolset.call_guarded(name, args, ctx, guardrails).await,
        None => toolset.call_with(name, args, ctx).await,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use toolgate_model::config::{Fallback, GuardrailConfig, MaskConfig, PolicyConfig, ToolPolicy};

    use super::*;
    use crate::ErrorKind;
    use crate::testing::StubSource;

    /// Admits the tools named in `names`, with `guardrails`.
    #[derive(Debug)]
    struct Only {
        names: Vec<&'static str>,
        guardrails: Option<GuardrailSet>,
    }

    impl CallScope for Only {
        fn admits(&self, entry: &ToolEntry) -> bool {
            self.names.contains(&entry.name())
        }
        fn refusal(&self, name: &str) -> ToolError {
            ToolError::new(
                ErrorKind::NotFound,
                format!("no tool `{name}` in scope `only`"),
            )
        }
        fn guardrails(&self) -> Option<&GuardrailSet> {
            self.guardrails.as_ref()
        }
    }

    fn toolset(stub: &StubSource) -> Toolset {
        let pii = GuardrailConfig {
            mask: Some(MaskConfig::default()),
            ..GuardrailConfig::default()
        };
        // `down` fails, and falls back to `backup`.
        let fallback = ToolPolicy {
            fallback: Some(Fallback {
                tool: "backup".into(),
                on: vec!["upstream".into()],
                arguments: Default::default(),
            }),
            ..ToolPolicy::default()
        };
        let policy = PolicyConfig {
            guardrails: [("pii".to_string(), pii)].into_iter().collect(),
            tools: [("down".to_string(), fallback)].into_iter().collect(),
            ..PolicyConfig::default()
        };
        Toolset::builder()
            .source(stub.clone())
            .policy(&policy)
            .build()
            .unwrap()
    }

    fn context(ts: &Toolset, scope: Option<Arc<dyn CallScope>>) -> ToolContext {
        let mut builder = ToolContext::builder();
        if let Some(scope) = scope {
            builder = builder.scope(scope);
        }
        let mut ctx = builder.build();
        ctx.attach(ts);
        ctx
    }

    #[tokio::test]
    async fn context_call_tool_stays_inside_the_scope_and_passes_its_guardrails() {
        let stub = StubSource::new("stub")
            .stub("echo", |args| Ok(ToolOutput::text(args.to_string())))
            .stub("secret", |_| Ok(ToolOutput::text("the secret")));
        let ts = toolset(&stub);
        let scope = Only {
            names: vec!["echo"],
            guardrails: Some(ts.guardrail_set(&["pii"]).unwrap()),
        };
        let ctx = context(&ts, Some(Arc::new(scope)));
        let e = ctx.call_tool("secret", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("scope `only`"), "{e}");
        assert!(stub.calls_to("secret").is_empty());
        let echoed = ctx
            .call_tool("echo", json!({"to": "ann@example.org"}))
            .await
            .unwrap();
        assert!(
            echoed.to_text().contains("[email]") && !echoed.to_text().contains("ann@"),
            "{echoed:?}"
        );
        // A tool calling tools passes the scope on: the nested context keeps it.
        assert!(ctx.clone().scope().is_some());
    }

    #[tokio::test]
    async fn context_call_tool_in_a_scope_keeps_the_fallback_the_operator_configured() {
        let stub = StubSource::new("stub")
            .stub("down", |_| Err(ToolError::upstream("HTTP 500 from down")))
            .stub("backup", |_| Ok(ToolOutput::text("from backup")));
        let ts = toolset(&stub);
        let scope = Only {
            names: vec!["down"],
            guardrails: None,
        };
        let ctx = context(&ts, Some(Arc::new(scope)));
        // The code may not name `backup` itself ...
        let e = ctx.call_tool("backup", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        // ... but `down`'s configured fallback to it still runs.
        let out = ctx.call_tool("down", json!({})).await.unwrap();
        assert_eq!(out.to_text(), "from backup");
        assert_eq!(stub.calls_to("backup").len(), 1);
    }

    #[tokio::test]
    async fn context_call_tool_without_a_scope_reaches_every_tool_unmasked() {
        let stub = StubSource::new("stub")
            .stub("echo", |args| Ok(ToolOutput::text(args.to_string())))
            .stub("secret", |_| Ok(ToolOutput::text("the secret")));
        let ts = toolset(&stub);
        let ctx = context(&ts, None);
        let out = ctx.call_tool("secret", json!({})).await.unwrap();
        assert_eq!(out.to_text(), "the secret");
        let echoed = ctx
            .call_tool("echo", json!({"to": "ann@example.org"}))
            .await
            .unwrap();
        assert!(echoed.to_text().contains("ann@example.org"), "{echoed:?}");
    }
}
