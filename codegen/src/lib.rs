//! toolgate's build-time code generator: reads `tools.yaml`, finds the crate's `#[tool]`
//! functions, checks the toolset, and writes a static dispatch table to `OUT_DIR`.
//!
//! In a build script:
//!
//! ```no_run
//! // build.rs: `fn main() { toolgate_codegen::compile("tools.yaml"); }`
//! toolgate_codegen::compile("tools.yaml");
//! ```
//!
//! and in the crate, `toolgate::include_toolset!();` brings the generated module in. A broken
//! toolset fails the build with messages that name the line of tools.yaml:
//!
//! ```text
//! error: /path/to/crate/tools.yaml:7:11: unknown function `crate::tools::reed_file`
//!   hint: did you mean `crate::tools::read_file`?
//! ```
//!
//! What is checked: the shape of tools.yaml (unknown keys, types, bad YAML), that every `fn:`
//! names a `#[tool]` function, that tool names are unique and match `^[a-zA-Z0-9_-]{1,64}$`
//! after overrides, and that every `State<T>` a tool takes is listed under `state:`.
//!
//! What is generated is described in `docs/internals.md`: `ToolsetState`, `enum Tool` with a
//! phf name map, `StaticTools` (a `ToolSource`), `toolset()` and `TOOLS_YAML`.

#![warn(missing_docs)]

mod check;
mod diagnostics;
mod discover;
mod emit;
mod json_schema;
mod openapi;
mod overrides;
mod skills;

use std::path::{Path, PathBuf};

use std::collections::HashMap;

use toolgate_model::config::{LoadMode, ToolsConfig};
use toolgate_model::names::exported_name;
use toolgate_model::{Diagnostic, LoadedConfig};

pub use check::{StateInfo, ToolInfo};
pub use diagnostics::{CodegenError, closest};
pub use discover::StateParam;
pub use json_schema::JsonSource;
pub use openapi::OpenApiSourceInfo;

/// The default name of the generated file inside `OUT_DIR`.
pub const DEFAULT_OUT_FILE: &str = "toolgate_toolset.rs";

/// For `build.rs`: generates `$OUT_DIR/toolgate_toolset.rs` from `config` (a path relative to
/// `CARGO_MANIFEST_DIR`), the `#[tool]` functions under `src/`, and prints
/// `cargo:rerun-if-changed=` for tools.yaml, every `.rs` file scanned and every OpenAPI file it
/// names, and `cargo:warning=` for each warning.
///
/// On error, prints every diagnostic to stderr (`error: tools.yaml:12:7: ...`) and exits with
/// status 1, which fails the build.
pub fn compile(config: impl AsRef<Path>) {
    match Builder::new(config.as_ref()).generate() {
        Ok(generated) => generated.print_cargo_directives(),
        Err(e) => {
            eprint!("{}", diagnostics::Rendered(&e.diagnostics()));
            std::process::exit(1);
        }
    }
}

/// The analysis of [`compile`] without writing anything, for `toolgate check`.
///
/// `config` is taken as given (relative to the current directory); the crate root is the folder
/// that holds it, and the sources are in its `src/`.
///
/// # Errors
/// [`CodegenError`] with every problem found.
pub fn check(config: impl AsRef<Path>) -> Result<Report, CodegenError> {
    Builder::at(config).check()
}

/// Configures and runs the generator.
///
/// ```no_run
/// let generated = toolgate_codegen::Builder::new("tools.yaml")
///     .src_dir("src")
///     .out_file("toolgate_toolset.rs")
///     .generate()?;
/// generated.print_cargo_directives();
/// # Ok::<(), toolgate_codegen::CodegenError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    config: PathBuf,
    manifest_dir: Option<PathBuf>,
    src_dir: PathBuf,
    out_dir: Option<PathBuf>,
    out_file: PathBuf,
    runtime_config: bool,
}

impl Builder {
    /// A generator for `config` (tools.yaml), relative to the crate root.
    pub fn new(config: impl Into<PathBuf>) -> Self {
        Self {
            config: config.into(),
            manifest_dir: None,
            src_dir: PathBuf::from("src"),
            out_dir: None,
            out_file: PathBuf::from(DEFAULT_OUT_FILE),
            runtime_config: false,
        }
    }

    /// A generator for the tools.yaml at `config` (relative to the current directory, or
    /// absolute), the folder that holds it being the crate root.
    pub fn at(config: impl AsRef<Path>) -> Self {
        let config = config.as_ref();
        let dir = config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file = config
            .file_name()
            .map_or_else(|| config.to_path_buf(), PathBuf::from);
        Self::new(file).manifest_dir(dir)
    }

    /// Checks tools.yaml as the run-time config of a built binary (`toolgate serve --config
    /// FILE`), anywhere, not as the config of a crate: its `tools.local` functions and `state:`
    /// types are those the binary was compiled with, so no source folder is read and they are
    /// not resolved ([`Report::tools`] and [`Report::states`] stay empty). Everything else is
    /// checked as for a crate. [`render`](Self::render) and [`generate`](Self::generate)
    /// ignore it: generated code needs the sources.
    #[must_use]
    pub fn runtime_config(mut self) -> Self {
        self.runtime_config = true;
        self
    }

    /// The crate root that relative paths start from. Default: `CARGO_MANIFEST_DIR`, else the
    /// current directory.
    #[must_use]
    pub fn manifest_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.manifest_dir = Some(dir.into());
        self
    }

    /// The folder scanned for `#[tool]` functions, relative to the crate root. Default `src`.
    #[must_use]
    pub fn src_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.src_dir = dir.into();
        self
    }

    /// The folder the generated file is written to. Default: `OUT_DIR`.
    #[must_use]
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The generated file's name inside the output folder (or an absolute path). Default
    /// [`DEFAULT_OUT_FILE`].
    #[must_use]
    pub fn out_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.out_file = file.into();
        self
    }

    fn root(&self) -> PathBuf {
        self.manifest_dir
            .clone()
            .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("."))
    }

    /// Loads tools.yaml, scans the sources and runs every check, without generating.
    ///
    /// # Errors
    /// [`CodegenError::Config`] for a tools.yaml that does not load; [`CodegenError::Invalid`]
    /// with every problem of the toolset; [`CodegenError::Io`].
    pub fn check(&self) -> Result<Report, CodegenError> {
        self.check_as(self.runtime_config)
    }

    /// [`check`](Self::check), as a run-time config (`runtime_config`) or as a crate's.
    fn check_as(&self, runtime_config: bool) -> Result<Report, CodegenError> {
        let root = self.root();
        let config_path = root.join(&self.config);
        let config = ToolsConfig::load(&config_path)?;
        let src_dir = root.join(&self.src_dir);
        let scan = if runtime_config {
            discover::Scan::default()
        } else if src_dir.is_dir() {
            discover::scan(&src_dir).map_err(|e| CodegenError::io(&src_dir, e))?
        } else if config.tools.local.is_empty() {
            discover::Scan::default()
        } else {
            let e = std::io::Error::new(std::io::ErrorKind::NotFound, "source folder not found");
            return Err(CodegenError::io(&src_dir, e));
        };
        let krate = check::Crate {
            config: &config,
            scan: &scan,
            manifest_dir: &root,
            src_dir: &src_dir,
        };
        let resolved = if runtime_config {
            check::Resolved::default()
        } else {
            check::resolve(&krate)
        };
        let taken: Vec<String> = resolved.tools.iter().map(|t| t.name.clone()).collect();
        let json = json_schema::resolve(&config, &root, &taken);
        let mut names: HashMap<String, String> = HashMap::new();
        for n in &taken {
            let what = format!("the compiled tool `{n}`");
            names.insert(n.clone(), what.clone());
            names.insert(exported_name(n).into_owned(), what);
        }
        for s in &json.sources {
            for t in &s.tools {
                let full = s.full_name(t);
                let what = format!("json_schema source `{}`, definition `{}`", s.id, t.name);
                names.insert(exported_name(&full).into_owned(), what.clone());
                names.insert(full, what);
            }
        }
        let api = openapi::resolve(&config, &root, &names);
        let skills = skills::resolve(&config, config_path.parent().unwrap_or(&root));
        let mut errors = scan.errors.clone();
        let mut config_errors = resolved.errors;
        config_errors.extend(json.errors);
        config_errors.extend(api.errors);
        let mut known = overrides::Known::new();
        known.extend(taken.iter().map(|n| (n.clone(), None)));
        for s in &json.sources {
            for t in &s.tools {
                known.insert(s.full_name(t), Some(t.input_schema.clone()));
            }
        }
        for s in &api.sources {
            for op in &s.conversion.tools {
                known.insert(s.full_name(op), Some(op.input_schema.clone()));
            }
        }
        config_errors.extend(overrides::check(&config, &known, !runtime_config));
        config_errors.sort_by_key(|d| d.location);
        errors.extend(config_errors);
        // After tools.yaml's own: each names its SKILL.md and line.
        errors.extend(skills.errors);
        if !errors.is_empty() {
            return Err(CodegenError::Invalid(errors));
        }
        let mut warnings = config.warnings.clone();
        warnings.extend(resolved.warnings);
        warnings.extend(json.warnings);
        warnings.extend(api.warnings);
        warnings.sort_by_key(|d| d.location);
        let mut files = vec![config_path.clone()];
        if !runtime_config {
            files.push(src_dir.clone());
        }
        files.extend(scan.files.iter().cloned());
        files.extend(json.files);
        files.extend(api.files);
        files.extend(skills.files);
        Ok(Report {
            config,
            tools: resolved.tools,
            states: resolved.states,
            json_sources: json.sources,
            openapi_sources: api.sources,
            skill_dirs: skills.dirs,
            skill_count: skills.count,
            warnings,
            files,
        })
    }

    /// Runs [`check`](Self::check) and renders the generated code, without writing it.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn render(&self) -> Result<Generated, CodegenError> {
        // Code is generated from the sources: a run-time config check does not apply here.
        let report = self.check_as(false)?;
        let config_name = self.config.file_name().map_or_else(
            || self.config.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let tools_dir = || {
            // Relative to the crate (the generated code joins it to CARGO_MANIFEST_DIR), so
            // that the code does not depend on where the crate was built.
            self.config
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        };
        let code = emit::render(&emit::Input {
            tools: &report.tools,
            states: &report.states,
            json_sources: &report.json_sources,
            policy: &report.config.policy,
            config_name: &config_name,
            config_text: &report.config.source,
            mcp_base: (!report.config.config.tools.mcp.is_empty()).then(tools_dir),
            a2a: !report.config.config.tools.a2a.is_empty(),
            overrides: !report.config.config.tools.overrides.is_empty(),
            openapi_sources: &report.openapi_sources,
            // Skill folders relative to the crate: tools.yaml's folder joined with each.
            skill_dirs: report
                .skill_dirs
                .iter()
                .map(|d| Path::new(&tools_dir()).join(d).display().to_string())
                .collect(),
            openapi_runtime_base: report
                .config
                .config
                .tools
                .openapi
                .iter()
                .any(|s| s.load == LoadMode::Runtime)
                // `spec` paths are relative to the crate root, as at build time.
                .then(String::new),
        })
        .map_err(|message| {
            CodegenError::Invalid(vec![Diagnostic::error(&report.config.path, None, message)])
        })?;
        let embedded = report
            .openapi_sources
            .iter()
            .map(|s| {
                serde_json::to_string(&s.conversion)
                    .map(|json| (s.json_file(), json))
                    .map_err(|e| {
                        CodegenError::Invalid(vec![Diagnostic::error(
                            &report.config.path,
                            None,
                            format!("OpenAPI source `{}`: cannot serialize: {e}", s.id),
                        )])
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Generated {
            code,
            embedded,
            out_path: None,
            report,
        })
    }

    /// Renders the code and writes it to the output file (only when its content changed, so
    /// that nothing is rebuilt needlessly).
    ///
    /// # Errors
    /// As [`check`](Self::check); [`CodegenError::NoOutDir`] when no output folder is known;
    /// [`CodegenError::Io`] when the file cannot be written.
    pub fn generate(&self) -> Result<Generated, CodegenError> {
        let mut generated = self.render()?;
        let out = if self.out_file.is_absolute() {
            self.out_file.clone()
        } else {
            let dir = self
                .out_dir
                .clone()
                .or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from))
                .ok_or(CodegenError::NoOutDir)?;
            dir.join(&self.out_file)
        };
        let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(&dir).map_err(|e| CodegenError::io(&dir, e))?;
        }
        // The embedded OpenAPI conversions go next to the generated file, which reads them
        // with a relative `include_str!` (resolved next to the file that holds it).
        for (name, text) in &generated.embedded {
            write_if_changed(&dir.join(name), text)?;
        }
        write_if_changed(&out, &generated.code)?;
        generated.out_path = Some(out);
        Ok(generated)
    }
}

/// Writes `text` to `path` unless it already holds it (so that nothing is rebuilt needlessly).
fn write_if_changed(path: &Path, text: &str) -> Result<(), CodegenError> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| CodegenError::io(path, e))
}

/// What the checks found: the loaded tools.yaml, the compiled tools, the state types, the
/// warnings, and every file the result depends on.
#[derive(Debug, Clone)]
pub struct Report {
    /// tools.yaml, loaded.
    pub config: LoadedConfig,
    /// The compiled tools, in generation order.
    pub tools: Vec<ToolInfo>,
    /// The types of `state:`, with the tools that take each.
    pub states: Vec<StateInfo>,
    /// The `json_schema` sources, imported and checked.
    pub json_sources: Vec<JsonSource>,
    /// The OpenAPI sources compiled in (`load: build`), converted and checked.
    pub openapi_sources: Vec<OpenApiSourceInfo>,
    /// The `tools.skills` folders, as tools.yaml names them (relative to its folder), every
    /// `SKILL.md` in them checked.
    pub skill_dirs: Vec<String>,
    /// How many skills they hold.
    pub skill_count: usize,
    /// Problems that do not fail the build.
    pub warnings: Vec<Diagnostic>,
    /// tools.yaml, the source folder, every `.rs` file scanned, every OpenAPI and
    /// `json_schema` file named, and every skills folder, skill folder and `SKILL.md`.
    pub files: Vec<PathBuf>,
}

/// The generated code and the report it came from.
#[derive(Debug, Clone)]
pub struct Generated {
    code: String,
    embedded: Vec<(String, String)>,
    out_path: Option<PathBuf>,
    report: Report,
}

impl Generated {
    /// The generated Rust source (formatted by prettyplease).
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The files written next to the generated one (name, content): each compiled OpenAPI
    /// source's conversion as JSON (`toolgate_openapi_{id}.json`), read by `include_str!`.
    pub fn embedded_files(&self) -> &[(String, String)] {
        &self.embedded
    }

    /// Where it was written ([`Builder::generate`]), if it was.
    pub fn out_path(&self) -> Option<&Path> {
        self.out_path.as_deref()
    }

    /// The analysis.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The files whose change must re-run the build script.
    pub fn rerun_if_changed(&self) -> &[PathBuf] {
        &self.report.files
    }

    /// Prints `cargo:rerun-if-changed=` for every file the result depends on and
    /// `cargo:warning=` for every warning.
    pub fn print_cargo_directives(&self) {
        for file in self.rerun_if_changed() {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        for w in &self.report.warnings {
            println!("cargo:warning={}", diagnostics::cargo_warning(w));
        }
    }
}
