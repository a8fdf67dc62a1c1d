//! [`ToolEntry`]: everything a toolset knows of one tool, resolved once.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use toolgate_model::dialect::{Dialect, ExportError};

use toolgate_model::config::{ArgumentOverride, ToolOverride};

use crate::policy::authorize::Requirements;
use crate::policy::{CallStack, Pipeline};
use crate::{ArgumentValidator, SourceTool, ToolDescriptor, ToolError, ToolKey, ToolSource};

/// One tool of a [`Toolset`](crate::Toolset), as its catalog holds it: the descriptor, the
/// source that runs it and the source's key for it, the names it answers to, and what is worked
/// out for it once and then reused by every call — its effective timeout and argument policy,
/// its policy stack, its compiled argument validator, its definition in each dialect.
///
/// What is worked out is computed on first need (a catalog of 100,000 tools costs nothing per
/// tool until a tool is called or exported). An entry lives as long as its tool is listed the
/// same way: a source that lists the tool again with an equal descriptor keeps the entry (and
/// everything computed in it).
pub struct ToolEntry {
    tool: SourceTool,
    /// The descriptor the tool is presented with: the source's, or the one its `tools.overrides`
    /// entry makes (new name, description, input schema...).
    presented: Arc<ToolDescriptor>,
    /// The arguments its override fills in before a call is checked and sent.
    fill: Option<Arc<BTreeMap<String, ArgumentOverride>>>,
    source: Arc<dyn ToolSource>,
    exported: Arc<str>,
    remote: bool,
    settled: OnceLock<Settled>,
    validator: OnceLock<Result<Arc<ArgumentValidator>, ToolError>>,
    exports: [OnceLock<Export>; Dialect::ALL.len()],
    access: OnceLock<Requirements>,
    search: OnceLock<crate::search::ToolDoc>,
    /// The tool's vector for semantic search (`None`: the model failed on its text).
    #[cfg(feature = "semantic")]
    embedding: OnceLock<Option<Box<[f32]>>>,
}

/// What a call needs of the tool's policy, settled on its first call.
pub(crate) struct Settled {
    /// The tool's timeout (its policy, its own, its source's, the default).
    pub timeout: Option<Duration>,
    /// The policy layers, in their fixed order, over the source.
    pub stack: Box<dyn CallStack>,
    /// Whether a layer of the stack fills in a [`CallReport`](crate::policy::CallReport)
    /// (retries, cache hits, cost): a call without one allocates none.
    pub reports: bool,
}

/// A definition in one dialect, and the notes of what the export changed.
type Export = Result<(Arc<Value>, Arc<[String]>), ExportError>;

impl ToolEntry {
    /// The entry of `tool`, offered by `source`.
    pub(crate) fn new(tool: SourceTool, source: Arc<dyn ToolSource>) -> Self {
        let presented = Arc::clone(&tool.descriptor);
        Self::presented(tool, source, presented, None)
    }

    /// The entry of `tool`, offered by `source`, presented as `presented` (made from its
    /// override `o` by [`super::overrides::present`]); the call reaches the source with the
    /// tool as listed, the arguments filled in per `o`.
    pub(crate) fn overridden(
        tool: SourceTool,
        source: Arc<dyn ToolSource>,
        presented: ToolDescriptor,
        o: &ToolOverride,
    ) -> Self {
        let fill = o.fills_arguments().then(|| Arc::new(o.arguments.clone()));
        Self::presented(tool, source, Arc::new(presented), fill)
    }

    fn presented(
        tool: SourceTool,
        source: Arc<dyn ToolSource>,
        presented: Arc<ToolDescriptor>,
        fill: Option<Arc<BTreeMap<String, ArgumentOverride>>>,
    ) -> Self {
        let exported = toolgate_model::names::exported_name(&presented.name).into();
        let remote = crate::policy::pinning::is_remote(source.kind());
        Self {
            tool,
            presented,
            fill,
            source,
            exported,
            remote,
            settled: OnceLock::new(),
            validator: OnceLock::new(),
            exports: Default::default(),
            access: OnceLock::new(),
            search: OnceLock::new(),
            #[cfg(feature = "semantic")]
            embedding: OnceLock::new(),
        }
    }

    /// What the tool is, as it is presented (with its `tools.overrides` entry applied; the
    /// source's own descriptor is [`source_tool`](Self::source_tool)'s).
    pub fn descriptor(&self) -> &Arc<ToolDescriptor> {
        &self.presented
    }

    /// The tool's name inside the toolset (`read_file`, `github.get_repo`, or the name its
    /// override gives it).
    pub fn name(&self) -> &str {
        &self.presented.name
    }

    /// The arguments the tool's override fills in (fixed values and defaults), if any.
    pub fn filled_arguments(&self) -> Option<&BTreeMap<String, ArgumentOverride>> {
        self.fill.as_deref()
    }

    /// The name a model sees (`github__get_repo`; the same as [`name`](Self::name) for a name
    /// without a dot).
    pub fn exported_name(&self) -> &str {
        &self.exported
    }

    /// The source that runs the tool.
    pub fn source(&self) -> &Arc<dyn ToolSource> {
        &self.source
    }

    /// The tool and the source's key for it, as the source listed it.
    pub fn source_tool(&self) -> &SourceTool {
        &self.tool
    }

    /// The source's key for the tool (for a remote tool: its name on the server).
    pub fn key(&self) -> &ToolKey {
        &self.tool.key
    }

    /// Whether the tool is a remote one (MCP, A2A), which [pinning](crate::policy::pinning)
    /// covers.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// The tool's definition in `dialect` (computed once, then shared).
    ///
    /// # Errors
    /// [`ExportError`] when the dialect cannot express the tool's schema (remembered too).
    pub fn export(&self, dialect: Dialect) -> Result<Arc<Value>, ExportError> {
        self.export_with_notes(dialect).map(|(v, _)| v)
    }

    /// The tool's definition in `dialect` and its export notes (see
    /// [`ToolDescriptor::export_with_notes`]), computed once, then shared.
    ///
    /// # Errors
    /// As [`export`](Self::export).
    pub fn export_with_notes(
        &self,
        dialect: Dialect,
    ) -> Result<(Arc<Value>, Arc<[String]>), ExportError> {
        let cell = &self.exports[dialect_index(dialect)];
        cell.get_or_init(|| {
            self.presented
                .export_with_notes(dialect)
                .map(|(v, notes)| (Arc::new(v), notes.into()))
        })
        .clone()
    }

    /// The tool's compiled argument validator (compiled on first use; a schema that does not
    /// compile is remembered as its error). It checks the source's own input schema: the
    /// arguments an override fills in are in the arguments by then.
    ///
    /// # Errors
    /// `internal`, naming the tool, when its input schema cannot be compiled.
    pub fn validator(&self) -> Result<&Arc<ArgumentValidator>, ToolError> {
        self.validator
            .get_or_init(|| {
                ArgumentValidator::compile(self.name(), &self.tool.descriptor.input_schema)
                    .map(Arc::new)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// What a caller needs to call the tool (roles, rules, `requires_auth`), worked out from
    /// `pipeline` (the toolset's policy, the same for every entry) on first use: a listing checks
    /// every entry for its caller.
    pub(crate) fn access(&self, pipeline: &crate::policy::Pipeline) -> &Requirements {
        self.access
            .get_or_init(|| Requirements::of(pipeline, &self.presented))
    }

    /// The tool's fields as the search index holds them, normalized on first use (a catalog
    /// rebuilt while the tool is listed the same way keeps them).
    pub(crate) fn search_doc(&self) -> &crate::search::ToolDoc {
        self.search
            .get_or_init(|| crate::search::ToolDoc::of(&self.presented))
    }

    /// The tool's vector for semantic search, set once by the first search that needs it (a
    /// catalog rebuilt while the tool is listed the same way keeps it).
    #[cfg(feature = "semantic")]
    pub(crate) fn embedding(&self) -> &OnceLock<Option<Box<[f32]>>> {
        &self.embedding
    }

    /// The tool's settled policy, worked out from `pipeline` on first use.
    pub(crate) fn settled(self: &Arc<Self>, pipeline: &Pipeline) -> &Settled {
        self.settled.get_or_init(|| pipeline.settle(self))
    }

    /// Whether this entry describes `tool` of `source` as it is listed now (so that a rebuilt
    /// catalog keeps it, with what it computed).
    pub(crate) fn serves(&self, tool: &SourceTool, source: &Arc<dyn ToolSource>) -> bool {
        Arc::ptr_eq(&self.source, source)
            && self.tool.key == tool.key
            && (Arc::ptr_eq(&self.tool.descriptor, &tool.descriptor)
                || *self.tool.descriptor == *tool.descriptor)
    }
}

fn dialect_index(dialect: Dialect) -> usize {
    Dialect::ALL
        .iter()
        .position(|d| *d == dialect)
        .unwrap_or_default()
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name())
            .field("source", &self.source.id())
            .field("key", &self.tool.key)
            .finish_non_exhaustive()
    }
}
