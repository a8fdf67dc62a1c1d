//! Diagnostics that point at a line of a file, and the loader's error type.

use std::fmt;
use std::path::{Path, PathBuf};

use super::location::Location;

/// How bad a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The file cannot be used; the build or the load fails.
    Error,
    /// Worth a look; nothing fails.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One message about one place of a file (tools.yaml, or a Rust source file the code generator
/// scanned).
///
/// `Display` renders it the way compilers do, so editors and terminals can jump to it:
///
/// ```text
/// error: /path/to/tools.yaml:12:11: unknown function `crate::x::y`
///   hint: did you mean `crate::x::z`?
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file the message is about.
    pub file: PathBuf,
    /// Where in the file, when known.
    pub location: Option<Location>,
    /// What is wrong, one line.
    pub message: String,
    /// How to fix it, when there is something useful to say.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// An error at `location` of `file`.
    pub fn error(
        file: impl Into<PathBuf>,
        location: Option<Location>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Error,
            file: file.into(),
            location,
            message: message.into(),
            hint: None,
        }
    }

    /// A warning at `location` of `file`.
    pub fn warning(
        file: impl Into<PathBuf>,
        location: Option<Location>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(file, location, message)
        }
    }

    /// The same diagnostic with a hint line.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// `path:line:col` (or just `path` when the location is unknown).
    pub fn position(&self) -> String {
        match self.location {
            Some(loc) => format!("{}:{loc}", self.file.display()),
            None => self.file.display().to_string(),
        }
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.severity,
            self.position(),
            self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// A list of diagnostics, displayed one after the other (one per line, plus hint lines).
#[derive(Debug, Clone, Copy)]
pub struct DisplayAll<'a>(pub &'a [Diagnostic]);

impl fmt::Display for DisplayAll<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Why tools.yaml could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("error: {}: cannot read the file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML, does not fit the model (unknown key, wrong type, missing
    /// field), or breaks a rule of the model (version, source ids, ...). Holds every problem
    /// found, each with its line and column.
    #[error("{}", DisplayAll(.0))]
    Invalid(Vec<Diagnostic>),
}

impl ConfigError {
    /// Every problem as a [`Diagnostic`] (an I/O error becomes one without a location).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            ConfigError::Io { path, source } => vec![Diagnostic::error(
                path.clone(),
                None,
                format!("cannot read the file: {source}"),
            )],
            ConfigError::Invalid(d) => d.clone(),
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
