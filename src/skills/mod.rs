//! Agent Skills as a source: folders with a `SKILL.md` (front matter, then instructions) and
//! the files they ship, offered to a model progressively.
//!
//! - the model sees each skill's name and description only: the [`list`](Skills::list), which
//!   is also the description of the `load_skill` tool;
//! - `load_skill(name)` returns the skill's instructions (the body of its `SKILL.md`) and the
//!   list of its files;
//! - `read_skill_file(skill, path)` reads one of those files, confined to the skill's folder
//!   with the guarantees of the built-in [`read_file`](crate::builtin::files::read_file) (it is
//!   that function, rooted at the folder): absolute paths, `..` above the folder and symlinks
//!   leading out of it are refused.
//!
//! The gateway also offers each skill as MCP resources (`skill://{name}/SKILL.md`,
//! `skill://{name}/{path}`) and over REST (`GET /skills`, ...). Scripts a skill ships are
//! files to read, never run.
//!
//! ```no_run
//! use toolgate::skills::{Skills, SkillsExt as _};
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let skills = Skills::discover(["skills/"])?;
//! let tools = toolgate::builtin::toolset(Default::default()).skills(skills).build()?;
//! // or, found when the toolset is built:
//! let tools = toolgate::Toolset::builder().skills_dirs(["skills/"]).build()?;
//! # Ok(()) }
//! ```

mod files;
mod source;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toolgate_model::config::{Diagnostic, DisplayAll};
use toolgate_model::skill::{FoundSkill, SkillFrontMatter};

pub use files::{MAX_SKILL_FILES, SkillFileError};
pub use source::{LOAD_SKILL, READ_SKILL_FILE, SkillsSource};

/// One skill: its checked front matter, its instructions and its folder.
#[derive(Debug, Clone)]
pub struct Skill {
    front: SkillFrontMatter,
    instructions: String,
    dir: PathBuf,
}

impl Skill {
    /// The skill's name (the same as its folder's).
    pub fn name(&self) -> &str {
        &self.front.name
    }

    /// What the skill does and when to use it.
    pub fn description(&self) -> &str {
        &self.front.description
    }

    /// The whole front matter (license, compatibility, metadata, allowed tools).
    pub fn front_matter(&self) -> &SkillFrontMatter {
        &self.front
    }

    /// The instructions: the Markdown after the front matter of its `SKILL.md`, as read when
    /// the skills were discovered.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The skill's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The skill's files (regular files, paths relative to its folder with `/`, sorted; at most
    /// [`MAX_SKILL_FILES`], symlinks and special files left out), read from the folder now.
    ///
    /// # Errors
    /// [`SkillFileError`] when the folder cannot be read.
    pub fn files(&self) -> Result<Vec<String>, SkillFileError> {
        files::list(&self.dir)
    }

    /// One file of the skill as UTF-8 text, `path` relative to its folder (at most 1 MiB).
    ///
    /// # Errors
    /// [`SkillFileError`]: the path leads out of the folder (absolute, `..`, a symlink out), is
    /// not there, is not a regular UTF-8 text file or is too large.
    pub fn read_file(&self, path: &str) -> Result<String, SkillFileError> {
        files::read(&self.dir, path)
    }

    /// The name and description, what a model sees before it loads the skill.
    pub fn summary(&self) -> SkillSummary {
        SkillSummary {
            name: self.front.name.clone(),
            description: self.front.description.clone(),
        }
    }
}

/// A skill as listed: name and description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillSummary {
    /// The skill's name, for `load_skill`.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
}

/// A set of skills with distinct names, sorted by name. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Arc<Vec<Skill>>,
}

/// Why skills could not be discovered: every problem, each at its file and line.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", DisplayAll(.0))]
pub struct SkillsError(pub Vec<Diagnostic>);

impl Skills {
    /// Every skill found in the sub-folders of each of `dirs` (a sub-folder is a skill when it
    /// holds a `SKILL.md`), each `SKILL.md` read and checked now.
    ///
    /// # Errors
    /// [`SkillsError`] with every broken front matter (at its line), every folder that cannot
    /// be read, and every name two skills share.
    pub fn discover<P: AsRef<Path>>(
        dirs: impl IntoIterator<Item = P>,
    ) -> Result<Self, SkillsError> {
        let mut found: Vec<FoundSkill> = Vec::new();
        let mut errors = Vec::new();
        for dir in dirs {
            match toolgate_model::skill::discover(dir.as_ref()) {
                Ok(f) => found.extend(f),
                Err(e) => errors.extend(e),
            }
        }
        found.sort_by(|a, b| a.document.front.name.cmp(&b.document.front.name));
        for pair in found.windows(2) {
            if pair[0].document.front.name == pair[1].document.front.name {
                errors.push(Diagnostic::error(
                    pair[1].dir.join(toolgate_model::skill::SKILL_FILE),
                    None,
                    format!(
                        "a second skill named `{}` (the first is in {})",
                        pair[1].document.front.name,
                        pair[0].dir.display()
                    ),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(SkillsError(errors));
        }
        let skills = found
            .into_iter()
            .map(|f| Skill {
                front: f.document.front,
                instructions: f.document.body,
                dir: f.dir,
            })
            .collect();
        Ok(Self {
            skills: Arc::new(skills),
        })
    }

    /// Every skill, sorted by name.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .binary_search_by(|s| s.name().cmp(name))
            .ok()
            .map(|i| &self.skills[i])
    }

    /// Name and description of every skill, sorted by name.
    pub fn list(&self) -> Vec<SkillSummary> {
        self.skills.iter().map(Skill::summary).collect()
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

/// The toolset's skills, kept in its state: set by [`SkillsExt::skills`] at once, or by
/// [`SkillsExt::skills_dirs`] when the toolset is built.
#[derive(Debug, Default)]
struct SkillsState(std::sync::OnceLock<Skills>);

/// The skills of `toolset` (added with [`SkillsExt`]), if any.
pub fn of(toolset: &crate::Toolset) -> Option<Skills> {
    toolset.state::<SkillsState>()?.0.get().cloned()
}

/// Adds skills to a [`ToolsetBuilder`](crate::ToolsetBuilder).
pub trait SkillsExt {
    /// Offers `skills`: the tools `load_skill` and `read_skill_file` (source `skills`), and the
    /// set itself to the gateway ([`of`]), which serves them as MCP resources and over REST.
    /// Use it once per builder (a second set of skills is a second `skills` source, refused
    /// by `build()` as a duplicate id).
    #[must_use]
    fn skills(self, skills: Skills) -> Self;

    /// [`skills`](Self::skills) with the skills found in `dirs` when the toolset is built
    /// ([`Skills::discover`]); generated code uses it for `tools.skills`.
    ///
    /// `build()` then fails with [`BuildError::Source`](crate::BuildError::Source) (source
    /// `skills`) listing every broken `SKILL.md` at its line.
    #[must_use]
    fn skills_dirs<P: AsRef<Path>>(self, dirs: impl IntoIterator<Item = P>) -> Self;
}

impl SkillsExt for crate::ToolsetBuilder {
    fn skills(self, skills: Skills) -> Self {
        let state = SkillsState::default();
        let _ = state.0.set(skills.clone());
        self.state(state).source(SkillsSource::new(skills))
    }

    fn skills_dirs<P: AsRef<Path>>(self, dirs: impl IntoIterator<Item = P>) -> Self {
        let dirs: Vec<PathBuf> = dirs.into_iter().map(|d| d.as_ref().to_path_buf()).collect();
        let state = Arc::new(SkillsState::default());
        let cell = Arc::clone(&state);
        self.state_arc(state).source_with(move |_| {
            let skills = Skills::discover(&dirs).map_err(|e| crate::BuildError::Source {
                source_id: "skills".into(),
                message: e.to_string(),
            })?;
            let _ = cell.0.set(skills.clone());
            Ok(Arc::new(SkillsSource::new(skills)) as Arc<dyn crate::ToolSource>)
        })
    }
}
