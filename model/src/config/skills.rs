//! `tools.skills`: folders of Agent Skills (see [`crate::skill`]).

use serde::{Deserialize, Serialize};

/// A folder of skills: each sub-folder with a `SKILL.md` is one skill.
///
/// ```yaml
/// tools:
///   skills:
///     - dir: skills/        # relative to tools.yaml
/// ```
///
/// When tools.yaml is compiled by `build.rs`, every `SKILL.md` is checked at build time (a
/// broken front matter fails the build at its line); the skills are read from the folder when
/// the toolset is built. A tools.yaml given at run time (`--config`) has its skills found then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsDir {
    /// The folder holding the skill folders, relative to tools.yaml.
    pub dir: String,
}
