//! The tools array for a provider's own deferred tool loading: every definition goes to the
//! provider, but marked `defer_loading: true`, next to the provider's tool-search tool, so the
//! model sees only the search tool (and the tools kept loaded) until it searches
//! ([`Toolset::export_deferred`]).
//!
//! This is the provider-side counterpart of the gateway's MCP meta mode
//! (`gateway.tool_search`): there toolgate searches; here the provider does.

use serde_json::{Value, json};
use toolgate_model::dialect::{Dialect, ExportError};

use super::Toolset;

/// Whose deferred tool loading to export for, and with which of its search tools.
///
/// Sources: Anthropic's "tool search tool" (Messages API; the definitions are Anthropic tools,
/// each with `"defer_loading": true`, after a server tool of type
/// `tool_search_tool_bm25_20251119` or `tool_search_tool_regex_20251119`; the API asks for the
/// beta header `anthropic-beta: advanced-tool-use-2025-11-20` and takes up to 10,000 tools in
/// one request), and OpenAI's "tool search" (Responses API, gpt-5.4 and later: a
/// `{"type": "tool_search"}` tool and function tools with `"defer_loading": true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeferredLoading {
    /// Anthropic, searched by natural-language query (BM25): `tool_search_tool_bm25`.
    AnthropicBm25,
    /// Anthropic, searched by regular expression: `tool_search_tool_regex`.
    AnthropicRegex,
    /// OpenAI Responses API, hosted `tool_search`, function tools as [`Dialect::OpenAi`].
    OpenAi,
    /// The same with [`Dialect::OpenAiStrict`] function tools (`"strict": true`).
    OpenAiStrict,
}

impl DeferredLoading {
    /// The dialect of the definitions.
    pub fn dialect(self) -> Dialect {
        match self {
            Self::AnthropicBm25 | Self::AnthropicRegex => Dialect::Anthropic,
            Self::OpenAi => Dialect::OpenAi,
            Self::OpenAiStrict => Dialect::OpenAiStrict,
        }
    }

    /// The provider's search tool, first in the array (never deferred itself).
    pub fn search_tool(self) -> Value {
        match self {
            Self::AnthropicBm25 => json!({
                "type": "tool_search_tool_bm25_20251119",
                "name": "tool_search_tool_bm25",
            }),
            Self::AnthropicRegex => json!({
                "type": "tool_search_tool_regex_20251119",
                "name": "tool_search_tool_regex",
            }),
            Self::OpenAi | Self::OpenAiStrict => json!({"type": "tool_search"}),
        }
    }
}

/// What [`Toolset::export_deferred`] gives: the tools array and the tools left out.
#[derive(Debug, Clone, Default)]
pub struct DeferredExport {
    /// The provider's search tool, then every tool's definition: deferred
    /// (`"defer_loading": true`) unless it was named to stay loaded.
    pub tools: Vec<Value>,
    /// The tools the dialect cannot express (a schema too large once its `$ref`s are inlined for Gemini, ...), each with why: left out
    /// of `tools`, so that one of them does not keep the others from a model.
    pub failed: Vec<ExportError>,
}

impl Toolset {
    /// Every tool's definition for `provider`'s own deferred tool loading
    /// ([`DeferredLoading`]): the provider's search tool, then each tool in the provider's
    /// dialect with `"defer_loading": true`, except the tools in `loaded` (internal or exported
    /// names: `calc`, `github.repos_get`, `github__repos_get`), which stay loaded — the few a
    /// model needs on every turn. A name in `loaded` that the toolset does not have is
    /// ignored. Like [`export_available`](Self::export_available), this is the toolset's own
    /// view, not filtered by a caller.
    pub fn export_deferred(&self, provider: DeferredLoading, loaded: &[&str]) -> DeferredExport {
        let dialect = provider.dialect();
        let mut out = DeferredExport {
            tools: vec![provider.search_tool()],
            failed: Vec::new(),
        };
        for entry in self.entries().iter() {
            let definition = match entry.export(dialect) {
                Ok(definition) => definition,
                Err(e) => {
                    out.failed.push(e);
                    continue;
                }
            };
            let mut definition = std::sync::Arc::unwrap_or_clone(definition);
            let keep = loaded
                .iter()
                .any(|l| *l == entry.name() || *l == entry.exported_name());
            if let (false, Some(object)) = (keep, definition.as_object_mut()) {
                object.insert("defer_loading".into(), Value::Bool(true));
            }
            out.tools.push(definition);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::StubSource;
    use crate::{ToolDescriptor, ToolOutput};

    fn toolset() -> Toolset {
        let mut source = StubSource::new("gh");
        for (name, schema) in [
            ("repos_get", json!({"type": "object", "properties": {}})),
            ("issues_create", json!({"type": "object", "properties": {}})),
        ] {
            let d = ToolDescriptor {
                name: name.into(),
                description: format!("{name} does it."),
                input_schema: schema,
                source: "gh".into(),
                ..ToolDescriptor::default()
            };
            source = source.stub_with(d, |_| Ok(ToolOutput::text("ok")));
        }
        Toolset::builder().source(source).build().expect("toolset")
    }

    fn deferred_names(tools: &[Value]) -> Vec<(String, bool)> {
        tools[1..]
            .iter()
            .map(|t| {
                let name = t["name"].as_str().expect("a name").to_string();
                (name, t.get("defer_loading") == Some(&Value::Bool(true)))
            })
            .collect()
    }

    #[test]
    fn anthropic_gets_its_search_tool_first_and_every_tool_deferred_but_the_loaded_ones() {
        let tools = toolset();
        let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
        let export = tools.export_deferred(DeferredLoading::AnthropicBm25, &[names[0].as_str()]);
        assert!(export.failed.is_empty(), "{:?}", export.failed);
        assert_eq!(
            export.tools[0],
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
        );
        let listed = deferred_names(&export.tools);
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(!listed[0].1, "the loaded tool is not deferred: {listed:?}");
        assert!(listed[1].1, "{listed:?}");
        // An Anthropic tool: name, description, input_schema.
        assert!(
            export.tools[2]["input_schema"].is_object(),
            "{}",
            export.tools[2]
        );
    }

    #[test]
    fn openai_gets_tool_search_and_function_tools_and_a_loaded_name_may_be_the_exported_one() {
        let tools = toolset();
        let exported: Vec<String> = tools
            .entries()
            .iter()
            .map(|e| e.exported_name().to_string())
            .collect();
        for provider in [DeferredLoading::OpenAi, DeferredLoading::OpenAiStrict] {
            let export = tools.export_deferred(provider, &[exported[1].as_str(), "no_such_tool"]);
            assert_eq!(export.tools[0], json!({"type": "tool_search"}));
            assert_eq!(export.tools[1]["type"], "function", "{}", export.tools[1]);
            let listed = deferred_names(&export.tools);
            assert_eq!(
                listed.iter().map(|(_, d)| *d).collect::<Vec<_>>(),
                [true, false]
            );
        }
        let strict = tools.export_deferred(DeferredLoading::OpenAiStrict, &[]);
        assert_eq!(strict.tools[1]["strict"], true, "{}", strict.tools[1]);
    }
}
