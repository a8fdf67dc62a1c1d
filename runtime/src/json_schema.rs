//! [`JsonSchemaSource`]: tools defined by data — a name, a description and a JSON Schema — and
//! dispatched to one handler the application supplies.
//!
//! The common real-world shape of a tool outside Rust: an OpenAI / Anthropic / MCP definition
//! list, or a benchmark's function documents (BFCL). The definitions are imported with
//! [`toolgate_model::import`] (at build time by `tools.yaml`'s `json_schema:` section, or at run
//! time), and every call goes through the same toolset pipeline as any other tool: the
//! arguments are validated against the imported schema before the handler sees them.
//!
//! ```
//! use toolgate_runtime::{JsonSchemaSource, JsonToolCall, ToolOutput, Toolset};
//! use toolgate_model::import::{DefinitionFormat, import_document};
//!
//! let defs = r#"[{"name": "get_weather", "description": "Weather for a city.",
//!                 "parameters": {"type": "object",
//!                                "properties": {"city": {"type": "string"}},
//!                                "required": ["city"]}}]"#;
//! let source = JsonSchemaSource::builder("weather")
//!     .tools(import_document(DefinitionFormat::JsonSchema, defs).unwrap())
//!     .handler(|call: JsonToolCall| async move {
//!         Ok(ToolOutput::text(format!("{} in {}", call.tool, call.args["city"])))
//!     })
//!     .build()
//!     .unwrap();
//! let tools = Toolset::builder().source(source).build().unwrap();
//! assert!(tools.describe("weather.get_weather").is_some());
//! ```

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use toolgate_model::import::ImportedTool;
use toolgate_model::names::{NameError, exported_name, validate_source_id, validate_tool_name};

use crate::{
    ArgumentValidator, BoxFuture, SourceTool, ToolAnnotations, ToolContext, ToolDescriptor,
    ToolError, ToolFuture, ToolOutput, ToolSource,
};

/// One call as a [`JsonSchemaSource`]'s handler receives it.
#[derive(Clone)]
pub struct JsonToolCall {
    /// The tool's name in its source, as imported: unique within the source (`math_factorial`
    /// for BFCL's `math.factorial`; a second, different definition of `d` is `d_2`). Dispatch on
    /// this.
    pub tool: String,
    /// The name as the definition document writes it (`math.factorial`; `d` for both `d` and
    /// `d_2`).
    pub original_name: String,
    /// The tool's name inside the toolset (`{source}.{tool}` with the provider-safe name, or the
    /// bare name when the source is mounted without prefix).
    pub name: String,
    /// The arguments, already validated against the tool's input schema (and, where the
    /// toolset's policy says so, coerced).
    pub args: Value,
    /// The caller's context: identity, deadline, cancellation, progress. The application's
    /// state is at `ctx.toolset().and_then(|t| t.state::<T>())`.
    pub ctx: ToolContext,
}

impl std::fmt::Debug for JsonToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonToolCall")
            .field("tool", &self.tool)
            .field("name", &self.name)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

/// What answers the calls of a [`JsonSchemaSource`]. Implemented for every
/// `Fn(JsonToolCall) -> impl Future<Output = Result<ToolOutput, ToolError>>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot answer the calls of a json_schema source",
    label = "the `handler:` of a `json_schema` entry in tools.yaml (or given to `JsonSchemaSource::builder`)",
    note = "a handler is `async fn(call: toolgate::JsonToolCall) -> Result<toolgate::ToolOutput, toolgate::ToolError>` (or a closure returning such a future, `Send + Sync + 'static`)"
)]
pub trait JsonToolHandler: Send + Sync + 'static {
    /// Answers one call.
    fn call(&self, call: JsonToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

impl<F, Fut> JsonToolHandler for F
where
    F: Fn(JsonToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(&self, call: JsonToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(self(call))
    }
}

/// Why a [`JsonSchemaSource`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonSourceError {
    /// The source id breaks the source-id rule.
    #[error("json_schema source id: {0}")]
    Id(NameError),
    /// A tool name breaks the tool-name rule.
    #[error("json_schema source `{source_id}`: tool `{tool}`: {error}")]
    Name {
        /// The source id.
        source_id: String,
        /// The tool's name as defined.
        tool: String,
        /// What is wrong with it.
        error: NameError,
    },
    /// Two definitions have the same name.
    #[error("json_schema source `{source_id}`: two tools are named `{name}`")]
    Duplicate {
        /// The source id.
        source_id: String,
        /// The name they share.
        name: String,
    },
    /// A tool's input schema is not a JSON Schema the validator can compile.
    #[error("json_schema source `{source_id}`: tool `{tool}`: {message}")]
    Schema {
        /// The source id.
        source_id: String,
        /// The tool's name as defined.
        tool: String,
        /// What is wrong with its schema.
        message: String,
    },
    /// No handler was given.
    #[error("json_schema source `{0}` has no handler: call `.handler(...)`")]
    NoHandler(String),
}

struct Entry {
    descriptor: Arc<ToolDescriptor>,
    imported: String,
    original: String,
}

/// A [`ToolSource`] of tools defined by JSON Schema documents, all answered by one handler.
///
/// Tool names inside the toolset are `{id}.{name}` (exported as `{id}__{name}`, see
/// [`toolgate_model::names`]), or the bare names with [`prefix(false)`](JsonSchemaSourceBuilder::prefix).
pub struct JsonSchemaSource {
    id: String,
    /// The tools, in order: a call's key is the position here.
    entries: Vec<Entry>,
    handler: Arc<dyn JsonToolHandler>,
}

impl std::fmt::Debug for JsonSchemaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchemaSource")
            .field("id", &self.id)
            .field("tools", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl JsonSchemaSource {
    /// A builder for a source with id `id` (the prefix of its tools' names).
    pub fn builder(id: impl Into<String>) -> JsonSchemaSourceBuilder {
        JsonSchemaSourceBuilder {
            id: id.into(),
            prefix: true,
            tools: Vec::new(),
            handler: None,
            category: None,
        }
    }
}

/// Builds a [`JsonSchemaSource`].
pub struct JsonSchemaSourceBuilder {
    id: String,
    prefix: bool,
    tools: Vec<ImportedTool>,
    handler: Option<Arc<dyn JsonToolHandler>>,
    category: Option<String>,
}

impl std::fmt::Debug for JsonSchemaSourceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchemaSourceBuilder")
            .field("id", &self.id)
            .field("prefix", &self.prefix)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl JsonSchemaSourceBuilder {
    /// Adds imported tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = ImportedTool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Whether tool names are prefixed with `{id}.` (default `true`). Unprefixed names must not
    /// collide with other sources' tools (the toolset's build checks it).
    pub fn prefix(mut self, prefix: bool) -> Self {
        self.prefix = prefix;
        self
    }

    /// The category every tool of this source is listed under.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// The handler answering every call.
    pub fn handler(mut self, handler: impl JsonToolHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// The handler answering every call, shared.
    pub fn handler_arc(mut self, handler: Arc<dyn JsonToolHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Builds the source.
    ///
    /// Compiles every input schema once (the toolset's validators compile them again on first
    /// use), so that a tool whose schema cannot validate is refused here, not on every call.
    ///
    /// # Errors
    /// [`JsonSourceError`]: a bad source id or tool name (also as exported, `{id}__{name}`), an
    /// input schema that is not valid JSON Schema, two tools with one name, no handler.
    pub fn build(self) -> Result<JsonSchemaSource, JsonSourceError> {
        validate_source_id(&self.id).map_err(JsonSourceError::Id)?;
        let handler = self
            .handler
            .ok_or_else(|| JsonSourceError::NoHandler(self.id.clone()))?;
        let mut entries = Vec::with_capacity(self.tools.len());
        let mut names = std::collections::HashSet::with_capacity(self.tools.len());
        for t in self.tools {
            validate_tool_name(&t.name).map_err(|error| JsonSourceError::Name {
                source_id: self.id.clone(),
                tool: t.original_name.clone(),
                error,
            })?;
            let name = if self.prefix {
                format!("{}.{}", self.id, t.name)
            } else {
                t.name.clone()
            };
            validate_tool_name(&exported_name(&name)).map_err(|error| JsonSourceError::Name {
                source_id: self.id.clone(),
                tool: t.original_name.clone(),
                error,
            })?;
            if let Err(e) = ArgumentValidator::compile(&name, &t.input_schema) {
                return Err(JsonSourceError::Schema {
                    source_id: self.id,
                    tool: t.original_name,
                    message: e.message().to_string(),
                });
            }
            // The same provider rules as at build time, on the definition as written.
            if let Err(message) = t.check_exports(&name) {
                return Err(JsonSourceError::Schema {
                    source_id: self.id,
                    tool: t.original_name,
                    message,
                });
            }
            let annotations = match t.annotations {
                None => ToolAnnotations::default(),
                Some(a) => serde_json::from_value(a).map_err(|e| JsonSourceError::Schema {
                    source_id: self.id.clone(),
                    tool: t.original_name.clone(),
                    message: format!("its `annotations` are not MCP tool annotations: {e}"),
                })?,
            };
            let descriptor = Arc::new(ToolDescriptor {
                name: name.clone(),
                description: t.description,
                input_schema: t.input_schema,
                output_schema: t.output_schema,
                annotations,
                source: self.id.clone(),
                category: self.category.clone(),
                ..ToolDescriptor::default()
            });
            if let Some(o) = &descriptor.output_schema
                && let Err(e) = ArgumentValidator::compile(&name, o)
            {
                return Err(JsonSourceError::Schema {
                    source_id: self.id,
                    tool: t.original_name,
                    message: format!("output schema: {}", e.message()),
                });
            }
            let entry = Entry {
                descriptor: Arc::clone(&descriptor),
                imported: t.name,
                original: t.original_name,
            };
            if !names.insert(name.clone()) {
                return Err(JsonSourceError::Duplicate {
                    source_id: self.id,
                    name,
                });
            }
            entries.push(entry);
        }
        Ok(JsonSchemaSource {
            id: self.id,
            entries,
            handler,
        })
    }
}

impl ToolSource for JsonSchemaSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> &str {
        "json_schema"
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| SourceTool::indexed(Arc::clone(&e.descriptor), i))
            .collect()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let name = tool.name();
        let Some(entry) = tool.key.index().and_then(|i| self.entries.get(i)) else {
            return ToolFuture::err(ToolError::not_found(name));
        };
        let args = if args.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            args
        };
        self.handler
            .call(JsonToolCall {
                tool: entry.imported.clone(),
                original_name: entry.original.clone(),
                name: name.to_string(),
                args,
                ctx,
            })
            .into()
    }
}
