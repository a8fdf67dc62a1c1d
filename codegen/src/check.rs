//! Resolving tools.yaml's `tools.local` and `state:` against the functions found in the source,
//! and every check that fails the build.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toolgate_model::config::{Discover, LocalEntry, LocalFunction};
use toolgate_model::names::LOCAL_SOURCE_ID;
use toolgate_model::{Diagnostic, LoadedConfig, Location, validate_tool_name};

use crate::diagnostics::{closest, short_path};

mod variants;
mod warnings;
use crate::discover::{FoundTool, Scan, StateParam, last_segment};

/// One tool of the compiled toolset, as resolved from tools.yaml and the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The exported name (after tools.yaml's `name:` override).
    pub name: String,
    /// The `Tool` enum variant generated for it.
    pub variant: String,
    /// The function's absolute path: `crate::builtin::files::read_file`.
    pub function: String,
    /// The function's module: `crate::builtin::files`.
    pub module: String,
    /// The function's identifier.
    pub ident: String,
    /// Its `State<T>` parameters.
    pub states: Vec<StateParam>,
    /// The index of the `tools.local` entry that brought it in.
    pub entry: usize,
    /// The `fn:` entry's overrides, when it was listed by path (not only discovered).
    pub listed: Option<LocalFunction>,
    /// The timeout put in its descriptor, in milliseconds: the entry's `timeout_ms`, else
    /// `policy.tools.<name>.timeout_ms`, else `policy.sources.local.timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// The source file of the function.
    pub file: PathBuf,
    /// Where the function is in it.
    pub location: Location,
}

impl ToolInfo {
    /// The JSON pointer in tools.yaml of the entry that brought the tool in.
    pub fn entry_pointer(&self) -> String {
        match &self.listed {
            Some(_) => format!("/tools/local/{}", self.entry),
            None => format!("/tools/local/{}/discover", self.entry),
        }
    }

    /// The JSON pointer in tools.yaml that decides the tool's name.
    pub fn name_pointer(&self) -> String {
        match &self.listed {
            Some(f) if f.name.is_some() => format!("/tools/local/{}/name", self.entry),
            Some(_) => format!("/tools/local/{}/fn", self.entry),
            None => format!("/tools/local/{}/discover", self.entry),
        }
    }
}

/// One type of `state:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateInfo {
    /// The type as written in tools.yaml.
    pub ty: String,
    /// Its last path segment, matched against the tools' `State<T>`.
    pub last: String,
    /// The names of the tools that take it.
    pub tools: Vec<String>,
}

/// The result of the checks: what to generate, and the warnings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resolved {
    pub tools: Vec<ToolInfo>,
    pub states: Vec<StateInfo>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

/// Everything a check needs to know about the crate.
pub(crate) struct Crate<'a> {
    pub config: &'a LoadedConfig,
    pub scan: &'a Scan,
    pub manifest_dir: &'a Path,
    pub src_dir: &'a Path,
}

pub(crate) fn resolve(c: &Crate<'_>) -> Resolved {
    let mut r = Resolved::default();
    r.states = resolve_states(c, &mut r.errors);
    let candidates = resolve_entries(c, &mut r);
    for (found, entry, listed) in candidates {
        let name = listed
            .as_ref()
            .and_then(|l| l.name.clone())
            .unwrap_or_else(|| found.default_name().to_string());
        let policy = &c.config.policy;
        let timeout_ms = listed
            .as_ref()
            .and_then(|l| l.timeout_ms)
            .or_else(|| policy.tools.get(&name).and_then(|p| p.timeout_ms))
            .or_else(|| {
                policy
                    .sources
                    .get(LOCAL_SOURCE_ID)
                    .and_then(|p| p.timeout_ms)
            });
        if let Some(l) = &listed
            && let Some(Ok(req)) = l
                .require
                .as_deref()
                .map(toolgate_model::config::Constraint::parse)
        {
            let version = l.version.as_deref().or(found.attr_version.as_deref());
            if let Err(why) = req.check(version) {
                r.errors.push(
                    c.config
                        .error_at(
                            &format!("/tools/local/{entry}/require"),
                            format!("tool `{name}`: {why}"),
                        )
                        .with_hint("give the tool a matching `version` (in tools.yaml or `#[tool(version = \"...\")]`), or change `require`"),
                );
            }
        }
        r.tools.push(ToolInfo {
            name,
            variant: String::new(),
            function: found.path.clone(),
            module: found.module.clone(),
            ident: found.ident.clone(),
            states: found.states.clone(),
            entry,
            listed,
            timeout_ms,
            file: found.file.clone(),
            location: found.location,
        });
    }
    check_names(c, &mut r);
    check_states(c, &mut r);
    variants::assign_variants(&mut r.tools);
    warnings::warn(c, &mut r);
    r
}

fn resolve_states(c: &Crate<'_>, errors: &mut Vec<Diagnostic>) -> Vec<StateInfo> {
    let mut states: Vec<StateInfo> = Vec::new();
    for (i, ty) in c.config.state.iter().enumerate() {
        let pointer = format!("/state/{i}");
        let Ok(parsed) = syn::parse_str::<syn::Type>(ty) else {
            errors.push(
                c.config
                    .error_at(&pointer, format!("`{ty}` is not a Rust type"))
                    .with_hint("write the type's path from the crate root, e.g. `crate::AppState`"),
            );
            continue;
        };
        let ty = crate::discover::type_string(&parsed);
        let last = last_segment(&ty);
        if let Some(other) = states.iter().find(|s| s.last == last) {
            errors.push(
                c.config
                    .error_at(&pointer, format!("two state types end in `{last}`: `{}` and `{ty}`", other.ty))
                    .with_hint("tools' `State<T>` parameters are matched by the last segment of `T`; give the types distinct names"),
            );
            continue;
        }
        states.push(StateInfo {
            ty,
            last,
            tools: Vec::new(),
        });
    }
    states
}

type Candidate<'s> = (&'s FoundTool, usize, Option<LocalFunction>);

/// The tools of `tools.local`: listed functions in file order, then discovered ones sorted by
/// path (a function listed by path is not discovered again).
fn resolve_entries<'s>(c: &Crate<'s>, r: &mut Resolved) -> Vec<Candidate<'s>> {
    let by_path: HashMap<&str, &FoundTool> =
        c.scan.tools.iter().map(|t| (t.path.as_str(), t)).collect();
    let mut listed: Vec<Candidate<'s>> = Vec::new();
    let mut listed_at: HashMap<String, usize> = HashMap::new();
    let mut discovered: HashMap<&str, usize> = HashMap::new();
    for (i, entry) in c.config.tools.local.iter().enumerate() {
        match entry {
            LocalEntry::Function(f) => {
                let path =
                    crate::discover::strip_raw(&f.path.split_whitespace().collect::<String>());
                let pointer = format!("/tools/local/{i}/fn");
                if let Some(first) = listed_at.get(&path) {
                    let at = c.config.locate(&format!("/tools/local/{first}/fn"));
                    r.errors.push(c.config.error_at(
                        &pointer,
                        format!(
                            "function `{path}` is listed twice (also at line {})",
                            at.line
                        ),
                    ));
                } else if let Some(found) = by_path.get(path.as_str()) {
                    listed_at.insert(path, i);
                    listed.push((found, i, Some(f.clone())));
                } else {
                    r.errors.push(unknown_function(c, &pointer, &path));
                }
            }
            LocalEntry::Discover(d) => {
                let pointer = format!("/tools/local/{i}/discover");
                let matched = match discover_filter(c, d, &pointer) {
                    Ok(filter) => c
                        .scan
                        .tools
                        .iter()
                        .filter(|t| filter(&t.file))
                        .collect::<Vec<_>>(),
                    Err(e) => {
                        r.errors.push(e);
                        continue;
                    }
                };
                if matched.is_empty() {
                    r.warnings.push(
                        c.config
                            .warning_at(&pointer, "no #[tool] function found here"),
                    );
                }
                for t in matched {
                    discovered.entry(t.path.as_str()).or_insert(i);
                }
            }
        }
    }
    let rest = c
        .scan
        .tools
        .iter()
        .filter(|t| !listed_at.contains_key(&t.path))
        .filter_map(|t| discovered.get(t.path.as_str()).map(|&i| (t, i, None)));
    listed.into_iter().chain(rest).collect()
}

fn unknown_function(c: &Crate<'_>, pointer: &str, path: &str) -> Diagnostic {
    let d = c
        .config
        .error_at(pointer, format!("unknown function `{path}`"));
    if c.scan.other_fns.iter().any(|f| f == path) {
        return Diagnostic {
            message: format!("function `{path}` is not a #[tool] function"),
            ..d
        }
        .with_hint("mark it with `#[toolgate::tool]`");
    }
    let rooted = format!("crate::{path}");
    if !path.starts_with("crate::") && c.scan.tools.iter().any(|t| t.path == rooted) {
        return d.with_hint(format!("paths start at the crate root: `{rooted}`"));
    }
    match closest(path, c.scan.tools.iter().map(|t| t.path.as_str())) {
        Some(s) => d.with_hint(format!("did you mean `{s}`?")),
        None if c.scan.tools.is_empty() => d.with_hint(format!(
            "no #[tool] function was found under {}",
            c.src_dir.display()
        )),
        None => {
            const SHOWN: usize = 8;
            let mut list: Vec<String> = c
                .scan
                .tools
                .iter()
                .take(SHOWN)
                .map(|t| format!("`{}`", t.path))
                .collect();
            if c.scan.tools.len() > SHOWN {
                list.push(format!("and {} more", c.scan.tools.len() - SHOWN));
            }
            d.with_hint(format!("#[tool] functions found: {}", list.join(", ")))
        }
    }
}

type FileFilter = Box<dyn Fn(&Path) -> bool>;

/// Which files a `discover:` entry covers: everything, or a folder (and the `folder.rs` file of
/// the same module) relative to the crate root.
fn discover_filter(c: &Crate<'_>, d: &Discover, pointer: &str) -> Result<FileFilter, Diagnostic> {
    let Discover::Under(dir) = d else {
        return Ok(Box::new(|_| true));
    };
    let folder = c.manifest_dir.join(dir.trim_end_matches('/'));
    let file = PathBuf::from(format!("{}.rs", folder.display()));
    if !folder.exists() && !file.exists() {
        return Err(c
            .config
            .error_at(pointer, format!("`{dir}` does not exist"))
            .with_hint(format!(
                "folders are relative to the crate root, {}",
                c.manifest_dir.display()
            )));
    }
    if !folder.starts_with(c.src_dir) {
        return Err(c.config.error_at(
            pointer,
            format!(
                "`{dir}` is not inside the source folder {}",
                c.src_dir.display()
            ),
        ));
    }
    Ok(Box::new(move |p: &Path| {
        p.starts_with(&folder) || p == file
    }))
}

fn origin(c: &Crate<'_>, t: &ToolInfo) -> String {
    let yaml = c.config.locate(&t.name_pointer());
    match &t.listed {
        Some(_) => format!("`{}` (line {})", t.function, yaml.line),
        None => format!(
            "`{}` ({}:{}, discovered at line {})",
            t.function,
            short_path(&t.file, c.manifest_dir),
            t.location.line,
            yaml.line
        ),
    }
}

fn check_names(c: &Crate<'_>, r: &mut Resolved) {
    let mut seen: HashMap<&str, &ToolInfo> = HashMap::new();
    for t in &r.tools {
        if let Err(e) = validate_tool_name(&t.name) {
            let (source, hint) = match &t.listed {
                Some(l) if l.name.is_some() => (
                    "`name:` in tools.yaml".to_string(),
                    "set a legal name with `name:` on this `fn:` entry".to_string(),
                ),
                _ => (
                    format!("function `{}`", t.function),
                    format!(
                        "rename it with #[tool(name = \"...\")] on `{}` (the #[tool] macro checks its own name too, so `name:` in tools.yaml is not enough)",
                        t.function
                    ),
                ),
            };
            r.errors.push(
                c.config
                    .error_at(
                        &t.name_pointer(),
                        format!("invalid tool name (from {source}): {e}"),
                    )
                    .with_hint(hint),
            );
        }
        if let Some(first) = seen.get(t.name.as_str()) {
            r.errors.push(
                c.config
                    .error_at(
                        &t.name_pointer(),
                        format!(
                            "duplicate tool name `{}`: {} and {}",
                            t.name,
                            origin(c, first),
                            origin(c, t)
                        ),
                    )
                    .with_hint(
                        "rename one with `name:` in tools.yaml or `#[tool(name = \"...\")]`",
                    ),
            );
        } else {
            seen.insert(&t.name, t);
        }
    }
}

fn check_states(c: &Crate<'_>, r: &mut Resolved) {
    for t in &r.tools {
        for p in &t.states {
            if let Some(s) = r.states.iter_mut().find(|s| s.last == p.last) {
                if !s.tools.contains(&t.name) {
                    s.tools.push(t.name.clone());
                }
                continue;
            }
            let example = if p.ty.starts_with("crate::") {
                p.ty.clone()
            } else {
                format!("crate::path::to::{}", p.ty)
            };
            r.errors.push(
                c.config
                    .error_at(
                        &t.entry_pointer(),
                        format!(
                            "tool `{}` (`{}`) takes `State<{}>`, but no type of `state:` provides `{}`",
                            t.name, t.function, p.ty, p.last
                        ),
                    )
                    .with_hint(format!("add it to tools.yaml: `state: [{example}]`")),
            );
        }
    }
}
