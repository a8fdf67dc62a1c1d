//! The OS calls a monty run makes, answered: reads under a read-only mount, refusals for
//! everything else.
//!
//! A path is inside a mount when it is the mount's guest path or below it, with no `..`
//! component; the host file it names must stay inside the mount's host directory once symbolic
//! links are resolved. Writes, renames, deletes, the environment and the clock are refused.

use std::path::{Component, Path, PathBuf};

use monty_types::{ExcType, MontyException, MontyObject, OsFunctionCall};

use crate::Mount;

/// Answers `call`: the value it returns, or the exception it raises in Python.
pub(super) fn answer(
    call: &OsFunctionCall,
    mounts: &[Mount],
    max_bytes: u64,
) -> Result<MontyObject, MontyException> {
    let refused = || Err(call.on_no_handler());
    let (guest, host) = match call {
        OsFunctionCall::Exists(p)
        | OsFunctionCall::IsFile(p)
        | OsFunctionCall::IsDir(p)
        | OsFunctionCall::ReadText(p)
        | OsFunctionCall::ReadBytes(p)
        | OsFunctionCall::Iterdir(p) => match resolve(p.as_str(), mounts) {
            Some(host) => (p.as_str(), host),
            None => return refused(),
        },
        _ => return refused(),
    };
    let not_found = || {
        MontyException::new(
            ExcType::FileNotFoundError,
            Some(format!("No such file or directory: '{guest}'")),
        )
    };
    match call {
        OsFunctionCall::Exists(_) => Ok(MontyObject::Bool(host.exists())),
        OsFunctionCall::IsFile(_) => Ok(MontyObject::Bool(host.is_file())),
        OsFunctionCall::IsDir(_) => Ok(MontyObject::Bool(host.is_dir())),
        OsFunctionCall::ReadText(_) | OsFunctionCall::ReadBytes(_) => {
            let size = std::fs::metadata(&host).map_err(|_| not_found())?.len();
            if size > max_bytes {
                return Err(MontyException::new(
                    ExcType::MemoryError,
                    Some(format!(
                        "memory limit exceeded: the file '{guest}' has {size} bytes > {max_bytes} bytes"
                    )),
                ));
            }
            let bytes = std::fs::read(&host).map_err(|_| not_found())?;
            if matches!(call, OsFunctionCall::ReadBytes(_)) {
                return Ok(MontyObject::Bytes(bytes));
            }
            String::from_utf8(bytes)
                .map(MontyObject::String)
                .map_err(|_| {
                    MontyException::new(
                        ExcType::UnicodeDecodeError,
                        Some(format!("'{guest}' is not valid UTF-8")),
                    )
                })
        }
        OsFunctionCall::Iterdir(_) => {
            let entries = std::fs::read_dir(&host).map_err(|_| not_found())?;
            let base = guest.trim_end_matches('/');
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            Ok(MontyObject::List(
                names
                    .into_iter()
                    .map(|n| MontyObject::Path(format!("{base}/{n}")))
                    .collect(),
            ))
        }
        _ => refused(),
    }
}

/// The host path `guest` names under one of `mounts`, if it is inside one.
fn resolve(guest: &str, mounts: &[Mount]) -> Option<PathBuf> {
    for mount in mounts {
        let root = mount.guest.trim_end_matches('/');
        let rest = if guest == root {
            ""
        } else if let Some(rest) = guest.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
            rest
        } else {
            continue;
        };
        let rest = Path::new(rest);
        if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
            return None;
        }
        let base = mount.host.canonicalize().ok()?;
        let joined = base.join(rest);
        // A file that does not exist is still inside (it answers "no such file"); one that does
        // must stay inside once its symbolic links are resolved.
        return match joined.canonicalize() {
            Ok(real) if real.starts_with(&base) => Some(real),
            Ok(_) => None,
            Err(_) => Some(joined),
        };
    }
    None
}
