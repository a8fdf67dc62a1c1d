//! A skill's files: listed and read inside its folder only.
//!
//! Reading is the built-in `read_file` rooted at the skill's folder (cap-std: absolute paths,
//! `..` above the folder and symlinks leading out are refused; the type is checked on the
//! opened handle); listing walks the folder through a cap-std directory handle without
//! following symlinks.

use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::builtin::files::{self, FilesError, FilesSettings, ReadFileArgs};

/// Most files a skill's listing names; the rest are left out.
pub const MAX_SKILL_FILES: usize = 1000;
/// Deepest folder nesting a listing walks into.
const MAX_DEPTH: usize = 8;
/// Largest file read, in bytes.
const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Why a skill's file could not be listed or read; messages name the path as given, never the
/// folder's place on disk.
#[derive(Debug, thiserror::Error)]
pub enum SkillFileError {
    /// The path leads out of the skill's folder (absolute, `..`, or a symlink).
    #[error("{path}: outside the skill's folder, access denied")]
    Escape {
        /// The path, as given.
        path: String,
    },
    /// Nothing is there.
    #[error("{path}: no such file in the skill")]
    NotFound {
        /// The path, as given.
        path: String,
    },
    /// Not a regular UTF-8 text file, or larger than 1 MiB.
    #[error("{0}")]
    Unreadable(String),
    /// Any other I/O error (the message names the path as given and the OS's reason).
    #[error("{0}")]
    Io(String),
}

impl From<SkillFileError> for crate::ToolError {
    fn from(e: SkillFileError) -> Self {
        use crate::ErrorKind;
        let kind = match &e {
            SkillFileError::Escape { .. } => ErrorKind::PermissionDenied,
            SkillFileError::NotFound { .. } => ErrorKind::NotFound,
            SkillFileError::Unreadable(_) => ErrorKind::InvalidArguments,
            SkillFileError::Io(_) => ErrorKind::Internal,
        };
        crate::ToolError::new(kind, e.to_string())
    }
}

/// The text of `path` inside `dir`.
pub(super) fn read(dir: &Path, path: &str) -> Result<String, SkillFileError> {
    let settings = FilesSettings {
        root: Some(dir.to_path_buf()),
        max_bytes: MAX_FILE_BYTES,
    };
    let args = ReadFileArgs {
        path: path.to_owned(),
        max_bytes: None,
    };
    files::read_file(&settings, args)
        .map(|r| r.text)
        .map_err(|e| match e {
            FilesError::Escape { path } => SkillFileError::Escape { path },
            FilesError::NotFound { path } => SkillFileError::NotFound { path },
            e @ (FilesError::NotText { .. }
            | FilesError::TooLarge { .. }
            | FilesError::NotAFile { .. }
            | FilesError::NotADirectory { .. }) => SkillFileError::Unreadable(e.to_string()),
            // Io's message names the path as given and the OS's reason, never the folder.
            e @ (FilesError::Io { .. } | FilesError::NoRoot { .. }) => {
                SkillFileError::Io(e.to_string())
            }
        })
}

/// The regular files under `dir`, relative, `/`-separated, sorted, at most [`MAX_SKILL_FILES`].
pub(super) fn list(dir: &Path) -> Result<Vec<String>, SkillFileError> {
    let io = |e: std::io::Error| {
        SkillFileError::Io(format!("the skill's folder cannot be listed: {}", e.kind()))
    };
    let root = Dir::open_ambient_dir(dir, ambient_authority()).map_err(io)?;
    let mut out = Vec::new();
    walk(&root, "", 0, &mut out).map_err(io)?;
    out.sort();
    out.truncate(MAX_SKILL_FILES);
    Ok(out)
}

fn walk(dir: &Dir, prefix: &str, depth: usize, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in dir.entries()? {
        if out.len() > MAX_SKILL_FILES {
            return Ok(());
        }
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let path = format!("{prefix}{name}");
        // The entry's own type: a symlink is neither followed nor listed.
        let kind = entry.file_type()?;
        if kind.is_file() {
            out.push(path);
        } else if kind.is_dir() && depth < MAX_DEPTH {
            walk(&entry.open_dir()?, &format!("{path}/"), depth + 1, out)?;
        }
    }
    Ok(())
}
