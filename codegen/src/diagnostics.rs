//! Error type, rendering of diagnostics for build scripts, and "did you mean" suggestions.

use std::fmt;
use std::path::{Path, PathBuf};

use toolgate_model::config::DisplayAll;
use toolgate_model::{ConfigError, Diagnostic};

/// Why code generation (or `check`) failed.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// tools.yaml could not be read, or is not valid (bad YAML, unknown key, broken rule).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The toolset is broken: every problem found, each naming a file, line and column.
    #[error("{}", DisplayAll(.0))]
    Invalid(Vec<Diagnostic>),
    /// A file or folder could not be read or written.
    #[error("error: {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The output location is unknown: no `out_dir` was set and `OUT_DIR` is not set (only a
    /// build script has it).
    #[error("error: no output folder: set `Builder::out_dir`, or run from a build script")]
    NoOutDir,
}

impl CodegenError {
    /// Every problem as a [`Diagnostic`].
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            CodegenError::Config(e) => e.diagnostics(),
            CodegenError::Invalid(d) => d.clone(),
            CodegenError::Io { path, source } => {
                vec![Diagnostic::error(path.clone(), None, source.to_string())]
            }
            CodegenError::NoOutDir => vec![Diagnostic::error(
                PathBuf::from("OUT_DIR"),
                None,
                "no output folder: set `Builder::out_dir`, or run from a build script",
            )],
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        CodegenError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Renders diagnostics for a human: each on its own line(s), then a summary line.
pub(crate) struct Rendered<'a>(pub &'a [Diagnostic]);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in self.0 {
            writeln!(f, "{d}")?;
        }
        let errors = self.0.iter().filter(|d| d.is_error()).count();
        if errors > 0 {
            let s = if errors == 1 { "" } else { "s" };
            writeln!(
                f,
                "error: toolgate-codegen: {errors} error{s} in the toolset"
            )?;
        }
        Ok(())
    }
}

/// A single-line form of a diagnostic for `cargo:warning=` (cargo shows one line per directive).
pub(crate) fn cargo_warning(d: &Diagnostic) -> String {
    let mut line = format!("{}: {}", d.position(), d.message);
    if let Some(hint) = &d.hint {
        line.push_str(" (hint: ");
        line.push_str(hint);
        line.push(')');
    }
    line.replace(['\n', '\r'], " ")
}

/// The candidate closest to `target` by edit distance, if it is close enough to be a likely typo
/// (at most a third of its length, and at least 3, edits away).
pub fn closest<'a>(target: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (target.chars().count() / 3).max(3);
    candidates
        .into_iter()
        .map(|c| (levenshtein(target, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `path` relative to `base` when it is inside it (for short messages), else as is.
pub(crate) fn short_path(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        let c = ["crate::files::read_file", "crate::math::calc"];
        assert_eq!(
            closest("crate::files::read_fil", c),
            Some("crate::files::read_file")
        );
        assert_eq!(closest("crate::x::totally_else", c), None);
    }
}
