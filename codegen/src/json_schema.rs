//! `tools.json_schema` entries: the definition files read and imported at build time, filtered,
//! checked (names, duplicates, collisions, exportable schemas), and embedded in the generated
//! code as a `JsonSchemaSource` per entry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toolgate_model::Diagnostic;
use toolgate_model::LoadedConfig;
use toolgate_model::config::JsonSchemaSource as Entry;
use toolgate_model::import::{ImportedTool, import_document};
use toolgate_model::names::{exported_name, validate_tool_name};

/// One `json_schema` entry, imported and checked.
#[derive(Debug, Clone)]
pub struct JsonSource {
    /// The source id.
    pub id: String,
    /// The handler's Rust path.
    pub handler: String,
    /// Whether names are prefixed with `{id}.`.
    pub prefix: bool,
    /// The category of its tools.
    pub category: Option<String>,
    /// The imported definitions (after `allow` / `deny`).
    pub tools: Vec<ImportedTool>,
}

impl JsonSource {
    /// The name of `tool` inside the toolset.
    pub fn full_name(&self, tool: &ImportedTool) -> String {
        if self.prefix {
            format!("{}.{}", self.id, tool.name)
        } else {
            tool.name.clone()
        }
    }
}

/// What [`resolve`] found.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub sources: Vec<JsonSource>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// The definition files read (for `rerun-if-changed`).
    pub files: Vec<PathBuf>,
}

/// Reads, imports and checks every `tools.json_schema` entry. `taken` are the names of the
/// compiled tools (an unprefixed name must not collide with them).
pub(crate) fn resolve(config: &LoadedConfig, root: &Path, taken: &[String]) -> Resolved {
    let mut out = Resolved::default();
    let mut names: HashMap<String, String> = taken
        .iter()
        .flat_map(|n| {
            let what = format!("the compiled tool `{n}`");
            [
                (n.clone(), what.clone()),
                (exported_name(n).into_owned(), what),
            ]
        })
        .collect();
    for (i, entry) in config.tools.json_schema.iter().enumerate() {
        let at = |key: &str| format!("/tools/json_schema/{i}/{key}");
        if let Err(e) = syn::parse_str::<syn::Path>(&entry.handler) {
            out.errors.push(config.error_at(
                &at("handler"),
                format!("`{}` is not a Rust path: {e}", entry.handler),
            ));
        }
        let path = root.join(&entry.file);
        out.files.push(path.clone());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                out.errors.push(config.error_at(
                    &at("file"),
                    format!("cannot read `{}`: {e}", path.display()),
                ));
                continue;
            }
        };
        let format = serde_json::to_value(entry.format)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let imported = match import_document(entry.format, &text) {
            Ok(t) => t,
            Err(e) => {
                out.errors.push(config.error_at(
                    &at("file"),
                    format!("`{}` (format `{format}`): {e}", entry.file),
                ));
                continue;
            }
        };
        if imported.is_empty() {
            out.warnings.push(config.warning_at(
                &at("file"),
                format!("`{}` holds no tool definition", entry.file),
            ));
        }
        let (allow, deny) = match (patterns(&entry.allow), patterns(&entry.deny)) {
            (Ok(a), Ok(d)) => (a, d),
            (Err(e), _) => {
                out.errors.push(config.error_at(&at("allow"), e));
                continue;
            }
            (_, Err(e)) => {
                out.errors.push(config.error_at(&at("deny"), e));
                continue;
            }
        };
        let matches = |ps: &[glob::Pattern], t: &ImportedTool| {
            ps.iter()
                .any(|p| p.matches(&t.name) || p.matches(&t.original_name))
        };
        let tools: Vec<ImportedTool> = imported
            .into_iter()
            .filter(|t| (allow.is_empty() || matches(&allow, t)) && !matches(&deny, t))
            .collect();
        if tools.is_empty() && (!entry.allow.is_empty() || !entry.deny.is_empty()) {
            out.warnings.push(config.warning_at(
                &at("file"),
                format!(
                    "json_schema source `{}`: no definition left after `allow` / `deny`",
                    entry.id
                ),
            ));
        }
        // What the importer changed (a renamed duplicate, a `.` in a name, a lossy type) is
        // said, never silent: for the definitions compiled in.
        for t in &tools {
            for note in &t.notes {
                out.warnings.push(config.warning_at(
                    &at("file"),
                    format!(
                        "json_schema source `{}`, definition `{}` (imported as `{}`): {note}",
                        entry.id, t.original_name, t.name
                    ),
                ));
            }
        }
        for p in entry.allow.iter().filter(|p| {
            glob::Pattern::new(p).is_ok_and(|g| {
                !tools
                    .iter()
                    .any(|t| g.matches(&t.name) || g.matches(&t.original_name))
            })
        }) {
            out.warnings.push(config.warning_at(
                &at("allow"),
                format!(
                    "json_schema source `{}`: `allow` pattern `{p}` matches no definition",
                    entry.id
                ),
            ));
        }
        let source = JsonSource {
            id: entry.id.clone(),
            handler: entry.handler.clone(),
            prefix: entry.prefix,
            category: entry.category.clone(),
            tools,
        };
        check_tools(
            config,
            entry,
            &source,
            &at("file"),
            &mut names,
            &mut out.errors,
            &mut out.warnings,
        );
        out.sources.push(source);
    }
    out
}

fn patterns(list: &[String]) -> Result<Vec<glob::Pattern>, String> {
    list.iter()
        .map(|p| glob::Pattern::new(p).map_err(|e| format!("`{p}` is not a glob: {e}")))
        .collect()
}

/// Names (valid, unique, exportable) and schemas (exportable in every dialect; a recursive type,
/// which Gemini gets unrolled, is a build warning).
fn check_tools(
    config: &LoadedConfig,
    entry: &Entry,
    source: &JsonSource,
    pointer: &str,
    names: &mut HashMap<String, String>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    for t in &source.tools {
        let what = format!(
            "json_schema source `{}`, definition `{}` (at {} in `{}`)",
            entry.id,
            t.original_name,
            if t.location.is_empty() {
                "/"
            } else {
                &t.location
            },
            entry.file
        );
        if let Err(e) = validate_tool_name(&t.name) {
            errors.push(config.error_at(pointer, format!("{what}: {e}")));
            continue;
        }
        let full = source.full_name(t);
        if let Err(e) = validate_tool_name(&exported_name(&full)) {
            errors.push(
                config
                    .error_at(pointer, format!("{what}: the exported name {e}"))
                    .with_hint("use `prefix: false` or a shorter source id"),
            );
            continue;
        }
        // Unique inside toolgate and as exported (a compiled tool may be named `alerts__x`).
        let exported = exported_name(&full).into_owned();
        let taken = names.get(&full).or_else(|| names.get(&exported)).cloned();
        if let Some(first) = taken {
            let as_exported = if exported == full {
                String::new()
            } else {
                format!(" (exported as `{exported}`)")
            };
            errors.push(config.error_at(
                pointer,
                format!("{what}: the tool name `{full}`{as_exported} is already taken by {first}"),
            ));
            continue;
        }
        names.insert(full.clone(), what.clone());
        names.insert(exported, what.clone());
        let schemas = [
            ("input", Some(&t.input_schema)),
            ("output", t.output_schema.as_ref()),
        ];
        let invalid = schemas.iter().find_map(|(which, schema)| {
            let e = jsonschema::options()
                .should_validate_formats(true)
                .should_ignore_unknown_formats(true)
                .build((*schema)?)
                .err()?;
            let at = e.instance_path().as_str();
            let at = if at.is_empty() { "/" } else { at };
            Some(format!(
                "its {which} schema is not valid JSON Schema at {at}: {e}"
            ))
        });
        if let Some(invalid) = invalid {
            errors.push(config.error_at(pointer, format!("{what}: {invalid}")));
            continue;
        }
        if let Err(e) = t.check_exports(&full) {
            errors.push(config.error_at(pointer, format!("{what}: {e}")));
        } else if let Some(w) = crate::openapi::recursion_warning(&t.input_schema) {
            warnings.push(config.warning_at(pointer, format!("{what}: {w}")));
        }
    }
}
