//! `tools.skills` entries: every `SKILL.md` of every listed folder checked at build time, so a
//! broken front matter fails `cargo build` at its line. The skills are read from the folders
//! when the toolset is built (the generated code calls `SkillsExt::skills_dirs`).

use std::path::{Path, PathBuf};

use toolgate_model::Diagnostic;
use toolgate_model::LoadedConfig;
use toolgate_model::skill::{SKILL_FILE, discover};

/// What [`resolve`] found.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// The skill folders' parents, as tools.yaml names them (relative to its folder).
    pub dirs: Vec<String>,
    /// How many skills were found.
    pub count: usize,
    pub errors: Vec<Diagnostic>,
    /// Every folder listed, every skill folder and its `SKILL.md` (for `rerun-if-changed`).
    pub files: Vec<PathBuf>,
}

/// Finds and checks the skills of every `tools.skills` entry, folders relative to `base` (the
/// folder of tools.yaml). A folder that cannot be read is an error at its entry's line; a
/// broken `SKILL.md` at its own line; two skills with one name at the second one's file.
pub(crate) fn resolve(config: &LoadedConfig, base: &Path) -> Resolved {
    let mut out = Resolved::default();
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    for (i, entry) in config.tools.skills.iter().enumerate() {
        let dir = base.join(&entry.dir);
        out.files.push(dir.clone());
        out.dirs.push(entry.dir.clone());
        if !dir.is_dir() {
            out.errors.push(config.error_at(
                &format!("/tools/skills/{i}/dir"),
                format!("`{}` is not a folder", dir.display()),
            ));
            continue;
        }
        match discover(&dir) {
            Ok(found) => {
                for skill in found {
                    let file = skill.dir.join(SKILL_FILE);
                    out.files.push(skill.dir.clone());
                    out.files.push(file.clone());
                    let name = skill.document.front.name;
                    if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                        out.errors.push(Diagnostic::error(
                            &file,
                            None,
                            format!(
                                "a second skill named `{name}` (the first is {})",
                                first.display()
                            ),
                        ));
                    } else {
                        seen.push((name, file));
                    }
                    out.count += 1;
                }
            }
            Err(errors) => out.errors.extend(errors),
        }
    }
    out
}
