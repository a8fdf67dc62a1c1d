//! `read_file` and `list_dir`: read-only access to one directory tree.
//!
//! Every path is resolved inside [`FilesSettings::root`] with `cap-std`, which opens the root
//! once and resolves each path component relative to it (`openat2(RESOLVE_BENEATH)` on Linux,
//! a manual component walk elsewhere), so nothing outside the root can be reached:
//!
//! - absolute paths and `..` that climbs above the root are refused ([`FilesError::Escape`]);
//! - a symlink inside the root is followed only while its target stays inside the root and is
//!   *relative*: `docs/latest -> v2` works, `link -> ../../etc` and `link -> /etc` are refused,
//!   and so is an absolute target even when it names a place inside the root;
//! - `list_dir` reports symlinks as `symlink` without following them.
//!
//! Without a root (the default: no `settings.files.root` in tools.yaml) both tools refuse
//! every call ([`FilesError::NoRoot`]): file access is never granted implicitly, least of all
//! to the directory a client happened to start the gateway in.
//!
//! What is read is checked on the opened handle, not on the path before opening it (the path
//! may be swapped in between): `read_file` opens without blocking (`O_NONBLOCK`, so a FIFO or
//! device put in a file's place cannot hold a worker thread, and `O_NOCTTY`) and reads only
//! when the opened handle is a regular file; `list_dir` opens a directory only
//! (`O_DIRECTORY`) and checks the handle is one.
//!
//! Error messages name the path as the caller gave it, never the root's location on disk.

use std::{
    io::{self, Read},
    path::{Component, Path, PathBuf},
};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use serde::{Deserialize, Serialize};

/// Most entries `list_dir` returns; the rest are cut (sorted by name first).
pub const MAX_DIR_ENTRIES: usize = 1000;

/// Settings of `read_file` and `list_dir` (`settings.files` in `tools.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FilesSettings {
    /// The directory the tools are confined to; a relative path is relative to the folder of
    /// the tools.yaml that sets it. No default: without a root both tools refuse every call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// Largest file `read_file` returns, in bytes. Default 1 MiB.
    pub max_bytes: usize,
}

impl Default for FilesSettings {
    fn default() -> Self {
        Self {
            root: None,
            max_bytes: 1024 * 1024,
        }
    }
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Path of a UTF-8 text file, relative to the shared directory, e.g. "README.md" or
    /// "src/main.rs". Absolute paths and ".." above the shared directory are refused.
    pub path: String,
    /// Largest file to accept, in bytes; larger files fail with a "too large" error instead of
    /// being cut. Optional: defaults to (and cannot exceed) the operator's limit, 1 MiB unless
    /// configured otherwise.
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// A text file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadFileResult {
    /// The path, as given.
    pub path: String,
    /// The whole file, decoded as UTF-8 (a leading byte-order mark is removed).
    pub text: String,
    /// Size of the file in bytes.
    pub bytes: usize,
}

/// Arguments of `list_dir`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// Directory to list, relative to the shared directory, e.g. "src". Defaults to ".",
    /// the shared directory itself. Absolute paths and ".." above it are refused.
    #[serde(default = "dot")]
    pub path: String,
}

impl Default for ListDirArgs {
    fn default() -> Self {
        Self { path: dot() }
    }
}

fn dot() -> String {
    ".".to_owned()
}

/// The entries of a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListDirResult {
    /// The directory, as given.
    pub path: String,
    /// Its entries sorted by name (byte order), without "." and "..".
    pub entries: Vec<DirEntryInfo>,
    /// True when the directory has more than 1000 entries and only the first 1000 are listed.
    pub truncated: bool,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirEntryInfo {
    /// File name (not a path); bytes that are not UTF-8 are shown as U+FFFD.
    pub name: String,
    /// What the entry is; a symlink is not followed.
    pub kind: EntryKind,
    /// Size in bytes, for files only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (it may point outside the shared directory, where it cannot be read).
    Symlink,
    /// Anything else: a socket, a FIFO, a device.
    Other,
}

/// Why `read_file` or `list_dir` failed.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// No shared directory is configured (`settings.files.root`): file access is off.
    #[error(
        "{path}: file access is off: the operator has not shared a directory (settings.files.root in tools.yaml)"
    )]
    NoRoot {
        /// The path, as given.
        path: String,
    },
    /// Nothing exists at the path.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path, as given.
        path: String,
    },
    /// The path leads outside the shared directory (absolute, `..`, or a symlink).
    #[error("{path}: outside the shared directory, access denied")]
    Escape {
        /// The path, as given.
        path: String,
    },
    /// The file is binary or not valid UTF-8.
    #[error("{path}: not a UTF-8 text file")]
    NotText {
        /// The path, as given.
        path: String,
    },
    /// The file is larger than the limit.
    #[error("{path}: {size} bytes, larger than the limit of {max} bytes")]
    TooLarge {
        /// The path, as given.
        path: String,
        /// The file's size in bytes.
        size: u64,
        /// The limit in bytes.
        max: usize,
    },
    /// `read_file` on a directory or a special file.
    #[error("{path}: not a regular file")]
    NotAFile {
        /// The path, as given.
        path: String,
    },
    /// `list_dir` on something that is not a directory.
    #[error("{path}: not a directory")]
    NotADirectory {
        /// The path, as given.
        path: String,
    },
    /// Any other I/O error (permissions, a missing root directory, ...).
    #[error("{path}: {source}")]
    Io {
        /// The path, as given.
        path: String,
        /// The underlying error (it carries no path).
        #[source]
        source: io::Error,
    },
}

/// Read a whole UTF-8 text file inside the root.
pub fn read_file(
    settings: &FilesSettings,
    args: ReadFileArgs,
) -> Result<ReadFileResult, FilesError> {
    let path = args.path;
    let root = open_root(settings, &path)?;
    let rel = relative(&path)?;
    if rel.as_os_str().is_empty() {
        return Err(FilesError::NotAFile { path });
    }
    let max = args
        .max_bytes
        .map_or(settings.max_bytes, |m| m.min(settings.max_bytes));
    let err = |e| map_err(e, &path);
    // The type is checked on the opened handle: a path checked first could be swapped for a
    // FIFO before it is opened, and opening a FIFO (without O_NONBLOCK) waits for a writer.
    let file = root.open_with(&rel, &read_options()).map_err(err)?;
    let meta = file.metadata().map_err(err)?;
    if !meta.is_file() {
        return Err(FilesError::NotAFile { path });
    }
    if meta.len() > max as u64 {
        return Err(too_large(path, meta.len(), max));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() > max {
        // The file grew since its size was checked.
        return Err(too_large(path, bytes.len() as u64, max));
    }
    let size = bytes.len();
    if bytes.contains(&0) {
        return Err(FilesError::NotText { path });
    }
    let mut text =
        String::from_utf8(bytes).map_err(|_| FilesError::NotText { path: path.clone() })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(ReadFileResult {
        path,
        text,
        bytes: size,
    })
}

/// List a directory inside the root, sorted by name, at most [`MAX_DIR_ENTRIES`] entries.
pub fn list_dir(settings: &FilesSettings, args: ListDirArgs) -> Result<ListDirResult, FilesError> {
    let path = args.path;
    let root = open_root(settings, &path)?;
    let rel = relative(&path)?;
    let err = |e| map_err(e, &path);
    let dir = if rel.as_os_str().is_empty() {
        root
    } else {
        // Opened as a directory only (O_DIRECTORY: a FIFO is refused, never opened), and the
        // handle checked, not the path before it.
        match root.open_dir(&rel) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                // The last component is not a directory, or one before it: which one says
                // whether the path names something.
                return Err(match root.symlink_metadata(&rel) {
                    Ok(_) => FilesError::NotADirectory { path },
                    Err(e) => err(e),
                });
            }
            Err(e) => return Err(err(e)),
        }
    };
    if !dir.dir_metadata().map_err(err)?.is_dir() {
        return Err(FilesError::NotADirectory { path });
    }
    let mut entries = Vec::new();
    for entry in dir.entries().map_err(err)? {
        let entry = entry.map_err(err)?;
        let file_type = entry.file_type().map_err(err)?;
        let (kind, size) = if file_type.is_symlink() {
            (EntryKind::Symlink, None)
        } else if file_type.is_dir() {
            (EntryKind::Dir, None)
        } else if file_type.is_file() {
            (EntryKind::File, entry.metadata().ok().map(|m| m.len()))
        } else {
            (EntryKind::Other, None)
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push(DirEntryInfo { name, kind, size });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let truncated = entries.len() > MAX_DIR_ENTRIES;
    entries.truncate(MAX_DIR_ENTRIES);
    Ok(ListDirResult {
        path,
        entries,
        truncated,
    })
}

/// The path as a relative path that stays inside the root lexically ("" for the root itself).
fn relative(path: &str) -> Result<PathBuf, FilesError> {
    let escape = || FilesError::Escape {
        path: path.to_owned(),
    };
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for component in Path::new(path).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Err(escape()),
            Component::CurDir => {}
            Component::ParentDir => {
                depth = depth.checked_sub(1).ok_or_else(escape)?;
                out.push("..");
            }
            Component::Normal(part) => {
                depth += 1;
                out.push(part);
            }
        }
    }
    Ok(out)
}

/// How `read_file` opens a file: read-only, without blocking on a FIFO or device put in a
/// file's place (`O_NONBLOCK`: has no effect on reading a regular file), and without making a
/// terminal the process's controlling terminal (`O_NOCTTY`).
fn read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options
}

fn open_root(settings: &FilesSettings, path: &str) -> Result<Dir, FilesError> {
    let Some(root) = &settings.root else {
        return Err(FilesError::NoRoot {
            path: path.to_owned(),
        });
    };
    Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| FilesError::Io {
        path: path.to_owned(),
        source: io::Error::new(
            e.kind(),
            format!("the shared directory cannot be opened ({})", e.kind()),
        ),
    })
}

fn map_err(e: io::Error, path: &str) -> FilesError {
    let path = path.to_owned();
    match e.kind() {
        io::ErrorKind::NotFound => FilesError::NotFound { path },
        // cap-std reports escapes as PermissionDenied without an OS error code.
        io::ErrorKind::PermissionDenied if e.raw_os_error().is_none() => {
            FilesError::Escape { path }
        }
        io::ErrorKind::NotADirectory => FilesError::NotFound { path },
        _ => FilesError::Io { path, source: e },
    }
}

fn too_large(path: String, size: u64, max: usize) -> FilesError {
    FilesError::TooLarge { path, size, max }
}

#[cfg(test)]
mod tests;
