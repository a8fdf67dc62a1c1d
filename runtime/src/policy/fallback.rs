//! The fallback layer: another tool for given error kinds.
//!
//! The outermost layer. When a tool's effective policy has a `fallback` (see
//! [`Fallback`](toolgate_model::config::Fallback)) and a call fails with one of its `on` kinds
//! (the structured [`ErrorKind`], never the message), the fallback tool is called through the
//! same toolset, under the same identity and deadline (with its own pipeline: its policy, its
//! limits), with the arguments mapped by JSON pointers (no mapping: the same arguments).
//!
//! * Its result is returned, with `_meta["toolgate/fallback"] = {"from": <tool>, "error":
//!   <kind>}` ([`FALLBACK_META_KEY`]).
//! * A fallback that fails returns its own error, its message naming the original failure.
//! * At most one hop per call: a fallback's own failure never triggers its fallback (no
//!   `a → b → a` cycle, no chains).
//! * A caller that cancelled gets no fallback.
//! * A tool of a source that could not list its tools (down since start-up) has no descriptor
//!   and no stack; its call still falls back, through this layer alone, when the source's error
//!   is one of the `on` kinds (`Toolset` builds it with `Pipeline::fallback_only`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::Value;
use tower::{Layer, Service};

use super::call::{Call, CallFuture, LayerInputs};
use crate::{ErrorKind, ToolError, ToolFuture, ToolOutput};

/// The `_meta` key of a fallback's result: `{"from": <the tool that failed>, "error": <kind>}`.
pub(crate) const FALLBACK_META_KEY: &str = "toolgate/fallback";

tokio::task_local! {
    /// Set while a fallback runs: the fallback's own pipeline must not fall back again.
    static IN_FALLBACK: ();
}

/// The layer for a tool, when its policy has a `fallback`.
pub(crate) fn layer(inputs: &LayerInputs<'_>) -> Option<FallbackLayer> {
    let fallback = inputs.policy.fallback.as_ref()?;
    let tool = &inputs.tool.name;
    if fallback.tool == *tool {
        tracing::warn!(tool = %tool, "fallback ignored: a tool cannot be its own fallback");
        return None;
    }
    let mut on = Vec::new();
    for name in &fallback.on {
        match ErrorKind::ALL.iter().find(|k| k.as_str() == name) {
            Some(kind) => on.push(*kind),
            None => {
                tracing::warn!(tool = %tool, kind = %name, "fallback: unknown error kind ignored")
            }
        }
    }
    if on.is_empty() {
        return None;
    }
    Some(FallbackLayer(Arc::new(Settings {
        from: tool.clone(),
        tool: fallback.tool.clone(),
        on,
        arguments: fallback.arguments.clone(),
    })))
}

struct Settings {
    /// The tool whose failures are caught.
    from: String,
    /// The fallback tool.
    tool: String,
    on: Vec<ErrorKind>,
    /// Fallback argument → JSON pointer into the original arguments.
    arguments: BTreeMap<String, String>,
}

impl Settings {
    /// The fallback's arguments: each mapped argument taken from the original ones by its JSON
    /// pointer (a name without a leading `/` is a top-level key; a pointer that finds nothing
    /// leaves the argument out), or the original arguments when there is no mapping.
    fn arguments(&self, original: Value) -> Value {
        if self.arguments.is_empty() {
            return original;
        }
        let mapped = self
            .arguments
            .iter()
            .filter_map(|(name, pointer)| {
                let found = match pointer.as_str() {
                    "" => Some(&original),
                    p if p.starts_with('/') => original.pointer(p),
                    key => original.get(key),
                };
                found.map(|v| (name.clone(), v.clone()))
            })
            .collect();
        Value::Object(mapped)
    }
}

/// Calls the fallback tool when the call fails with one of the configured kinds.
#[derive(Clone)]
pub(crate) struct FallbackLayer(Arc<Settings>);

impl<S> Layer<S> for FallbackLayer {
    type Service = FallbackService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FallbackService {
            settings: Arc::clone(&self.0),
            inner,
        }
    }
}

/// The service of [`FallbackLayer`].
#[derive(Clone)]
pub(crate) struct FallbackService<S> {
    settings: Arc<Settings>,
    inner: S,
}

impl<S> Service<Call> for FallbackService<S>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError, Future = CallFuture>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        if IN_FALLBACK.try_with(|()| ()).is_ok() {
            // This call is itself a fallback: one hop only.
            return self.inner.call(call);
        }
        let settings = Arc::clone(&self.settings);
        let ctx = call.ctx.clone();
        let args = call.args.clone();
        let inner = self.inner.call(call);
        ToolFuture::new(async move {
            let error = match inner.await {
                Ok(out) => return Ok(out),
                Err(e) => e,
            };
            if !settings.on.contains(&error.kind()) || ctx.is_cancelled() {
                return Err(error);
            }
            let kind = error.kind();
            tracing::info!(
                tool = %settings.from,
                fallback = %settings.tool,
                kind = %kind,
                "calling the fallback tool"
            );
            let args = settings.arguments(args);
            match IN_FALLBACK
                .scope((), ctx.call_configured(&settings.tool, args))
                .await
            {
                Ok(mut out) => {
                    out.meta.get_or_insert_with(Default::default).insert(
                        FALLBACK_META_KEY.to_string(),
                        serde_json::json!({"from": settings.from, "error": kind.as_str()}),
                    );
                    Ok(out)
                }
                Err(e) => {
                    if e.kind() == ErrorKind::NotFound {
                        tracing::warn!(tool = %settings.from, fallback = %settings.tool, "the fallback tool does not exist (check `fallback.tool` in tools.yaml)");
                    }
                    Err(e.with_context(format!(
                        "fallback tool `{}` failed after tool `{}` failed with {error}",
                        settings.tool, settings.from
                    )))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::StubSource;
    use crate::{ToolContext, Toolset};
    use toolgate_model::config::{Fallback, PolicyConfig, ToolPolicy};

    fn fallback(tool: &str, on: &[&str], arguments: &[(&str, &str)]) -> ToolPolicy {
        ToolPolicy {
            fallback: Some(Fallback {
                tool: tool.into(),
                on: on.iter().map(|s| s.to_string()).collect(),
                arguments: arguments
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }),
            ..Default::default()
        }
    }

    fn toolset(source: &StubSource, tools: Vec<(&str, ToolPolicy)>) -> Toolset {
        Toolset::builder()
            .source(source.clone())
            .policy(&PolicyConfig {
                tools: tools.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                ..Default::default()
            })
            .build()
            .unwrap()
    }

    fn stubs() -> StubSource {
        StubSource::new("src")
            .stub("down", |_| Err(ToolError::upstream("HTTP 500 from down")))
            .stub("slow", |_| {
                Err(ToolError::timeout(
                    "slow",
                    std::time::Duration::from_secs(1),
                ))
            })
            .stub("backup", |args| {
                Ok(ToolOutput::text(format!("backup got {args}")))
            })
            .stub("broken", |_| {
                Err(ToolError::new(ErrorKind::Network, "connection refused"))
            })
    }

    #[tokio::test]
    async fn falls_back_on_a_listed_kind_with_mapped_arguments() {
        let s = stubs();
        let tools = toolset(
            &s,
            vec![(
                "down",
                fallback(
                    "backup",
                    &["upstream"],
                    &[("place", "/where/city"), ("n", "count")],
                ),
            )],
        );
        let out = tools
            .call("down", json!({"where": {"city": "Oslo"}, "count": 2}))
            .await
            .unwrap();
        assert_eq!(out.text_joined(), r#"backup got {"n":2,"place":"Oslo"}"#);
        assert_eq!(
            out.meta.unwrap()[FALLBACK_META_KEY],
            json!({"from": "down", "error": "upstream"})
        );
        assert_eq!(s.calls_to("down").len(), 1);
    }

    #[tokio::test]
    async fn same_arguments_without_mapping_and_same_identity() {
        let s = stubs();
        let tools = toolset(&s, vec![("down", fallback("backup", &["upstream"], &[]))]);
        let ctx = ToolContext::builder().caller("alice").build();
        tools.call_with("down", json!({"q": 1}), ctx).await.unwrap();
        let calls = s.calls_to("backup");
        assert_eq!(calls[0].args, json!({"q": 1}));
        assert_eq!(calls[0].caller.as_deref(), Some("alice"));
    }

    #[tokio::test]
    async fn other_kinds_are_returned_as_they_are() {
        let s = stubs();
        let tools = toolset(
            &s,
            vec![("slow", fallback("backup", &["upstream", "network"], &[]))],
        );
        let e = tools.call("slow", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        s.assert_not_called("backup");
    }

    #[tokio::test]
    async fn a_failing_fallback_names_the_original_error() {
        let s = stubs();
        let tools = toolset(&s, vec![("down", fallback("broken", &["upstream"], &[]))]);
        let e = tools.call("down", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network);
        assert!(
            e.message().contains("fallback tool `broken` failed after tool `down` failed with upstream: HTTP 500 from down")
                && e.message().contains("connection refused"),
            "{}",
            e.message()
        );
    }

    #[tokio::test]
    async fn one_hop_only() {
        // down → broken → down would loop; broken's own fallback is not taken inside a fallback.
        let s = stubs();
        let tools = toolset(
            &s,
            vec![
                ("down", fallback("broken", &["upstream"], &[])),
                ("broken", fallback("down", &["network"], &[])),
            ],
        );
        let e = tools.call("down", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network);
        assert_eq!(
            (s.calls_to("down").len(), s.calls_to("broken").len()),
            (1, 1)
        );
        // Called directly, broken does fall back (to down, which fails: no further hop).
        let e = tools.call("broken", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Upstream);
        assert_eq!(
            (s.calls_to("down").len(), s.calls_to("broken").len()),
            (2, 2)
        );
    }

    #[tokio::test]
    async fn an_unknown_fallback_tool_is_not_found() {
        let s = stubs();
        let tools = toolset(&s, vec![("down", fallback("nowhere", &["upstream"], &[]))]);
        let e = tools.call("down", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("`nowhere`"), "{}", e.message());
    }

    /// A remote source that cannot list its tools (its server is down).
    struct Down;

    impl crate::ToolSource for Down {
        fn id(&self) -> &str {
            "weather"
        }
        fn tools(&self) -> Vec<crate::SourceTool> {
            Vec::new()
        }
        fn call(
            self: Arc<Self>,
            tool: &crate::SourceTool,
            _: Value,
            _: ToolContext,
        ) -> crate::ToolFuture<'static> {
            crate::ToolFuture::err(ToolError::not_found(tool.name()))
        }
        fn lifecycle(&self) -> Option<&dyn crate::SourceLifecycle> {
            Some(self)
        }
    }

    impl crate::SourceLifecycle for Down {
        fn status(&self) -> crate::SourceStatus {
            crate::SourceStatus::ready("weather", "mcp", 0)
        }
        fn discover(&self) -> crate::BoxFuture<'_, Result<(), ToolError>> {
            Box::pin(async {
                Err(ToolError::new(
                    ErrorKind::Network,
                    "MCP server `weather`: connection refused",
                ))
            })
        }
    }

    #[tokio::test]
    async fn a_tool_of_a_source_that_could_not_list_its_tools_still_falls_back() {
        let s = stubs();
        let policy = |on: &[&str]| PolicyConfig {
            tools: [(
                "weather.forecast".to_string(),
                fallback("backup", on, &[("city", "place")]),
            )]
            .into(),
            ..Default::default()
        };
        let tools = Toolset::builder()
            .source(s.clone())
            .source(Down)
            .policy(&policy(&["network"]))
            .build()
            .unwrap();
        let out = tools
            .call("weather.forecast", json!({"place": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(out.text_joined(), r#"backup got {"city":"Oslo"}"#);
        assert_eq!(
            out.meta.unwrap()[FALLBACK_META_KEY],
            json!({"from": "weather.forecast", "error": "network"})
        );
        // By its exported name too.
        assert!(tools.call("weather__forecast", json!({})).await.is_ok());
        // A tool without a fallback, or a fallback for other kinds: the source's error.
        let e = tools.call("weather.other", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network);
        let tools = Toolset::builder()
            .source(s.clone())
            .source(Down)
            .policy(&policy(&["timeout"]))
            .build()
            .unwrap();
        let e = tools.call("weather.forecast", json!({})).await.unwrap_err();
        assert!(
            e.message().contains("connection refused"),
            "{}",
            e.message()
        );
        assert_eq!(s.calls_to("backup").len(), 2);

        // The tool's rules still apply, whatever its unknown `dangerous` mark: a caller without
        // the role gets the source's error, not the fallback.
        let mut guarded = policy(&["network"]);
        guarded.rules = vec![toolgate_model::config::AccessRule {
            dangerous: Some(true),
            roles: vec!["admin".into()],
            ..Default::default()
        }];
        let tools = Toolset::builder()
            .source(s.clone())
            .source(Down)
            .policy(&guarded)
            .build()
            .unwrap();
        let e = tools.call("weather.forecast", json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network);
        assert_eq!(s.calls_to("backup").len(), 2);
        let admin = ToolContext::builder().roles(["admin"]).build();
        tools
            .call_with("weather.forecast", json!({}), admin)
            .await
            .unwrap();
        assert_eq!(s.calls_to("backup").len(), 3);
    }

    #[test]
    fn spec_kind_names_match_error_kinds() {
        let ours: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(ours, toolgate_model::config::ERROR_KINDS);
    }
}
