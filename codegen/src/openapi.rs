//! `tools.openapi` entries compiled in (`load: build`, the default): each document read and
//! converted at build time by `toolgate_model::openapi` (the same conversion the runtime runs for
//! `load: runtime` entries), checked like the `json_schema` sources (names valid and unique
//! across every source, schemas exportable), and embedded in the generated code as JSON next to
//! the generated file. The conversion's warnings and skipped operations become build warnings,
//! grouped by code for big documents (`toolgate check` and `toolgate openapi inspect` list them
//! all).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_model::LoadedConfig;
use toolgate_model::config::{LoadMode, OpenApiSource as Entry};
use toolgate_model::dialect::{
    Dialect, ExportOptions, ToolSchema, check::check, export, refs::recursive_types,
};
use toolgate_model::names::{exported_name, validate_tool_name};
use toolgate_model::openapi::{Conversion, ConvertOptions, Document, Operation, convert};
use toolgate_model::{Diagnostic, validate_source_id};

pub(crate) mod emit;

/// One `tools.openapi` entry with `load: build`, read, converted and checked.
#[derive(Debug, Clone)]
pub struct OpenApiSourceInfo {
    /// The source id.
    pub id: String,
    /// The index of its entry in `tools.openapi`.
    pub index: usize,
    /// The entry, as tools.yaml has it (secrets unresolved).
    pub entry: Entry,
    /// The document's file.
    pub document: PathBuf,
    /// The conversion: tools, skipped operations, warnings, counts.
    pub conversion: Conversion,
}

impl OpenApiSourceInfo {
    /// The name of `op` inside the toolset (`{id}.{name}`, or `name` with `prefix: false`).
    pub fn full_name(&self, op: &Operation) -> String {
        if self.entry.prefix {
            format!("{}.{}", self.id, op.name)
        } else {
            op.name.clone()
        }
    }

    /// Whether the generated module has typed argument structs and functions.
    pub fn typed(&self) -> bool {
        self.entry.typed
    }

    /// The name of the embedded conversion file next to the generated file.
    pub fn json_file(&self) -> String {
        format!("toolgate_openapi_{}.json", self.id)
    }

    /// Operations in the document = tools + skipped + excluded (what `check` verifies).
    pub fn accounted(&self) -> usize {
        self.conversion.tools.len() + self.conversion.skipped.len() + self.conversion.excluded
    }
}

/// What [`resolve`] found.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub sources: Vec<OpenApiSourceInfo>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// Every file a document was read from (for `rerun-if-changed`).
    pub files: Vec<PathBuf>,
}

/// At most this many warnings and skips of one document are printed one by one; beyond, they are
/// grouped by code.
const ONE_BY_ONE: usize = 3;
/// Pointers shown per code when grouped.
const EXAMPLES: usize = 3;

/// Reads, converts and checks every `tools.openapi` entry with `load: build`. `taken` maps the
/// names of the tools already in the toolset (compiled, `json_schema`) to what they are.
pub(crate) fn resolve(
    config: &LoadedConfig,
    root: &Path,
    taken: &HashMap<String, String>,
) -> Resolved {
    let mut out = Resolved::default();
    let mut names = taken.clone();
    for (i, entry) in config.tools.openapi.iter().enumerate() {
        if entry.load != LoadMode::Build {
            check_runtime_server_variables(config, root, i, entry, &mut out.errors);
            continue;
        }
        let spec_at = format!("/tools/openapi/{i}/spec");
        if validate_source_id(&entry.id).is_err() {
            continue; // reported by the config's own validation
        }
        if entry.spec_is_url() {
            // Also refused by the config validation; kept here for configs built in code.
            continue;
        }
        if let Some(hook) = &entry.hook
            && let Err(e) = syn::parse_str::<syn::Path>(hook)
        {
            out.errors.push(config.error_at(
                &format!("/tools/openapi/{i}/hook"),
                format!("`{hook}` is not a Rust path: {e}"),
            ));
        }
        let path = root.join(&entry.spec);
        out.files.push(path.clone());
        let doc = match Document::from_file(&path) {
            Ok(d) => d,
            Err(e) => {
                out.errors.push(config.error_at(
                    &spec_at,
                    format!(
                        "OpenAPI source `{}`: document `{}`: {e}",
                        entry.id, entry.spec
                    ),
                ));
                continue;
            }
        };
        for f in &doc.files {
            if !out.files.contains(f) {
                out.files.push(f.clone());
            }
        }
        let conversion = match convert(&doc, &ConvertOptions::for_source(entry)) {
            Ok(c) => c,
            Err(e) => {
                out.errors.push(config.error_at(
                    &spec_at,
                    format!(
                        "OpenAPI source `{}`: document `{}`: {e}",
                        entry.id, entry.spec
                    ),
                ));
                continue;
            }
        };
        let source = OpenApiSourceInfo {
            id: entry.id.clone(),
            index: i,
            entry: entry.clone(),
            document: path,
            conversion,
        };
        check_server_variables(config, &source, &mut out.errors);
        check_require(config, &source, &mut out.errors);
        report_remarks(config, &source, &mut out.warnings);
        check_tools(
            config,
            &source,
            &spec_at,
            &mut names,
            &mut out.errors,
            &mut out.warnings,
        );
        out.sources.push(source);
    }
    out
}

/// `require:` of a compiled entry against its version (tools.yaml's `version`, else the
/// document's `info.version` when it is a semantic version): a mismatch fails the build at the
/// `require` line.
fn check_require(config: &LoadedConfig, source: &OpenApiSourceInfo, errors: &mut Vec<Diagnostic>) {
    let entry = &source.entry;
    let Some(Ok(req)) = entry
        .require
        .as_deref()
        .map(toolgate_model::config::Constraint::parse)
    else {
        return; // none, or malformed: reported by the config's own checks
    };
    let version = match &entry.version {
        Some(v) => Some(v.clone()),
        None => toolgate_model::config::semantic(&source.conversion.version),
    };
    if let Err(why) = req.check(version.as_deref()) {
        let shown = if entry.version.is_none() && version.is_none() {
            format!(
                " (the document's info.version is `{}`)",
                source.conversion.version
            )
        } else {
            String::new()
        };
        errors.push(
            config
                .error_at(
                    &format!("/tools/openapi/{}/require", source.index),
                    format!("OpenAPI source `{}`: {why}{shown}", source.id),
                )
                .with_hint("use a document of a matching version, change `require`, or set `version:` if the document's version is not semver"),
        );
    }
}

/// A `load: runtime` entry whose `spec` is a file that converts now: its `server_variables`
/// values are checked as for a compiled entry, so `check` and the build refuse what
/// start-up would. Only when it sets `server_variables` without `base_url`; a document that
/// cannot be read or converted now is left to start-up (`check` reports it as a warning).
fn check_runtime_server_variables(
    config: &LoadedConfig,
    root: &Path,
    index: usize,
    entry: &Entry,
    errors: &mut Vec<Diagnostic>,
) {
    if entry.server_variables.is_empty() || entry.base_url.is_some() || entry.spec_is_url() {
        return;
    }
    let Ok(conversion) = Document::from_file(root.join(&entry.spec))
        .and_then(|d| convert(&d, &ConvertOptions::for_source(entry)))
    else {
        return;
    };
    let source = OpenApiSourceInfo {
        id: entry.id.clone(),
        index,
        entry: entry.clone(),
        document: root.join(&entry.spec),
        conversion,
    };
    check_server_variables(config, &source, errors);
}

/// `server_variables` must name variables of the document's servers, and (without
/// `base_url`) the values must be ones the servers used allow, resolved as the runtime does
/// (each server with only its own variables).
fn check_server_variables(
    config: &LoadedConfig,
    source: &OpenApiSourceInfo,
    errors: &mut Vec<Diagnostic>,
) {
    if source.entry.base_url.is_none() {
        for e in source
            .conversion
            .server_variable_errors(&source.entry.server_variables)
        {
            let pointer = if e.configured {
                format!(
                    "/tools/openapi/{}/server_variables/{}",
                    source.index,
                    toolgate_model::config::location::escape(&e.name)
                )
            } else {
                format!("/tools/openapi/{}/spec", source.index)
            };
            let what = if e.configured {
                ""
            } else {
                " (the document's default; set server_variables)"
            };
            errors.push(config.error_at(
                &pointer,
                format!("OpenAPI source `{}`: {}{what}", source.id, e.message),
            ));
        }
    }
    let c = &source.conversion;
    let known: Vec<&String> = c
        .servers
        .iter()
        .chain(c.tools.iter().flat_map(|t| &t.servers))
        .flat_map(|s| s.variables.keys())
        .collect();
    for name in source.entry.server_variables.keys() {
        if !known.contains(&name) {
            let pointer = format!(
                "/tools/openapi/{}/server_variables/{}",
                source.index,
                toolgate_model::config::location::escape(name)
            );
            let mut listed: Vec<&str> = known.iter().map(|s| s.as_str()).collect();
            listed.sort_unstable();
            listed.dedup();
            let hint = if listed.is_empty() {
                "the document's servers have no variables".to_string()
            } else {
                format!("its variables: `{}`", listed.join("`, `"))
            };
            errors.push(
                config
                    .error_at(
                        &pointer,
                        format!(
                            "OpenAPI source `{}`: the document's servers have no variable `{name}`",
                            source.id
                        ),
                    )
                    .with_hint(hint),
            );
        }
    }
}

/// The conversion's warnings and skipped operations as build warnings at the entry's `spec`
/// line: one by one for a few, grouped by code (count and first pointers) for many.
fn report_remarks(config: &LoadedConfig, source: &OpenApiSourceInfo, out: &mut Vec<Diagnostic>) {
    let c = &source.conversion;
    let at = format!("/tools/openapi/{}/spec", source.index);
    let doc = &source.entry.spec;
    let id = &source.id;
    let total = c.warnings.len() + c.skipped.len();
    if total == 0 {
        return;
    }
    if total <= ONE_BY_ONE {
        for s in &c.skipped {
            out.push(config.warning_at(
                &at,
                format!(
                    "OpenAPI source `{id}` (`{doc}`): operation {} {} skipped: {} at {}: {}",
                    s.method, s.path, s.reason.code, s.reason.pointer, s.reason.message
                ),
            ));
        }
        for w in &c.warnings {
            out.push(config.warning_at(
                &at,
                format!(
                    "OpenAPI source `{id}` (`{doc}`): {} at {}: {}",
                    w.code, w.pointer, w.message
                ),
            ));
        }
        return;
    }
    let mut groups: BTreeMap<(bool, &str), Vec<&str>> = BTreeMap::new();
    for s in &c.skipped {
        groups
            .entry((true, &s.reason.code))
            .or_default()
            .push(&s.reason.pointer);
    }
    for w in &c.warnings {
        groups.entry((false, &w.code)).or_default().push(&w.pointer);
    }
    for ((skipped, code), pointers) in groups {
        let n = pointers.len();
        if n == 1 {
            // A code seen once: the remark itself.
            let line = if skipped {
                c.skipped.iter().find(|s| s.reason.code == code).map(|s| {
                    format!(
                        "operation {} {} skipped: {} at {}: {}",
                        s.method, s.path, s.reason.code, s.reason.pointer, s.reason.message
                    )
                })
            } else {
                c.warnings
                    .iter()
                    .find(|w| w.code == code)
                    .map(|w| format!("{} at {}: {}", w.code, w.pointer, w.message))
            };
            if let Some(line) = line {
                out.push(
                    config.warning_at(&at, format!("OpenAPI source `{id}` (`{doc}`): {line}")),
                );
            }
            continue;
        }
        let what = if skipped {
            format!("{n} operation(s) skipped with {code}")
        } else {
            format!("{n} × {code}")
        };
        let mut shown: Vec<&str> = pointers.iter().take(EXAMPLES).copied().collect();
        let more = n.saturating_sub(EXAMPLES);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        shown.dedup();
        out.push(
            config
                .warning_at(
                    &at,
                    format!(
                        "OpenAPI source `{id}` (`{doc}`): {what}: {}{more}",
                        shown.join(", ")
                    ),
                )
                .with_hint(format!(
                    "every remark: `toolgate check` or `toolgate openapi inspect {doc}`"
                )),
        );
    }
}

/// Names (valid, unique across every source, exportable) and schemas (exportable as MCP, OpenAI
/// and Anthropic).
fn check_tools(
    config: &LoadedConfig,
    source: &OpenApiSourceInfo,
    pointer: &str,
    names: &mut HashMap<String, String>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    for t in &source.conversion.tools {
        let what = format!(
            "OpenAPI source `{}`, operation {} {} (at {} in `{}`)",
            source.id, t.method, t.path, t.pointer, source.entry.spec
        );
        if let Err(e) = validate_tool_name(&t.name) {
            errors.push(config.error_at(pointer, format!("{what}: {e}")));
            continue;
        }
        let full = source.full_name(t);
        let exported = exported_name(&full).into_owned();
        if let Err(e) = validate_tool_name(&exported) {
            errors.push(
                config
                    .error_at(pointer, format!("{what}: the exported name {e}"))
                    .with_hint("use `prefix: false`, a shorter source id or `names:`"),
            );
            continue;
        }
        let first = names.get(&full).or_else(|| names.get(&exported)).cloned();
        if let Some(first) = first {
            let as_exported = if exported == full {
                String::new()
            } else {
                format!(" (exported as `{exported}`)")
            };
            let hint = if source.entry.prefix {
                "rename one with `names:`".to_string()
            } else {
                "this source has `prefix: false`: give it `prefix: true` or rename the tool with `names:`".to_string()
            };
            errors.push(
                config
                    .error_at(
                        pointer,
                        format!(
                            "{what}: the tool name `{full}`{as_exported} is already taken by {first}"
                        ),
                    )
                    .with_hint(hint),
            );
            continue;
        }
        names.insert(full.clone(), what.clone());
        names.insert(exported, what.clone());
        if let Err(e) = check_exports(t, &full) {
            errors.push(config.error_at(pointer, format!("{what}: {e}")));
        } else if let Some(w) = recursion_warning(&t.input_schema) {
            warnings.push(config.warning_at(pointer, format!("{what}: {w}")));
        }
    }
}

/// The build warning for an input schema with recursive types, which Gemini (no `$ref` in its
/// `Schema` object) gets unrolled to [`ExportOptions::DEFAULT_RECURSION_DEPTH`] levels: the
/// types and the depth, or `None` without recursion.
pub(crate) fn recursion_warning(input_schema: &Value) -> Option<String> {
    let types = recursive_types(input_schema);
    if types.is_empty() {
        return None;
    }
    let names: Vec<String> = types
        .iter()
        .map(|t| {
            if t == "#" {
                "the root schema (`#`)".to_string()
            } else {
                format!("`{t}`")
            }
        })
        .collect();
    Some(format!(
        "{} recursive: exported to Gemini (no `$ref`) {} level(s) deep, deeper levels described \
         as \"nesting depth limit reached\" placeholders; the arguments are still validated \
         against the full schema",
        if names.len() == 1 {
            format!("{} is", names[0])
        } else {
            format!("{} are", names.join(", "))
        },
        ExportOptions::DEFAULT_RECURSION_DEPTH
    ))
}

/// Whether `op`'s schemas can be exported as MCP, OpenAI and Anthropic definitions (Gemini
/// unrolls recursive types, a build warning: [`recursion_warning`]).
pub(crate) fn check_exports(op: &Operation, name: &str) -> Result<(), String> {
    let view = ToolSchema {
        name,
        description: &op.description,
        input_schema: &op.input_schema,
        output_schema: op.output_schema.as_ref(),
        annotations: None,
    };
    for dialect in [Dialect::Mcp, Dialect::OpenAi, Dialect::Anthropic] {
        let def = export(dialect, &view).map_err(|e| e.message)?;
        if let Some(v) = check(dialect, &def).into_iter().next() {
            return Err(format!("as {dialect}, {v}"));
        }
    }
    Ok(())
}
