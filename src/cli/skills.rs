//! `toolgate skills list|show|read`: the Agent Skills of tools.yaml's `tools.skills`, as a
//! model gets them through `load_skill` and `read_skill_file`.

use std::path::Path;

use serde_json::json;
use toolgate::skills::Skills;

use super::args::{SkillsCommand, exit};
use super::config::{config_path, load_config, skills};
use super::{CmdResult, Failure, output};

/// Runs one `skills` subcommand on the skills of `config` (or ./tools.yaml).
pub(super) fn run(command: SkillsCommand, config: Option<&Path>) -> CmdResult {
    let (loaded, base) = load_config(config)?;
    let skills = skills(&loaded, &base, config_path(config).is_some())?.unwrap_or_default();
    match command {
        SkillsCommand::List { json } => {
            list(&skills, json);
            Ok(exit::OK)
        }
        SkillsCommand::Show { name, json } => {
            let skill = find(&skills, &name)?;
            let files = skill
                .files()
                .map_err(|e| Failure::new(exit::TOOL_ERROR, format!("error: {e}")))?;
            if json {
                output::print_json(&json!({
                    "name": skill.name(),
                    "description": skill.description(),
                    "instructions": skill.instructions(),
                    "files": files,
                }));
            } else {
                let mut text = format!("{}\n  {}\n\n", skill.name(), skill.description());
                text.push_str(skill.instructions().trim_end());
                text.push_str("\n\nfiles:\n");
                for f in files {
                    text.push_str(&format!("  {f}\n"));
                }
                output::print_text(&text);
            }
            Ok(exit::OK)
        }
        SkillsCommand::Read { name, path } => {
            let skill = find(&skills, &name)?;
            let text = skill.read_file(&path).map_err(|e| {
                let code = match e {
                    toolgate::skills::SkillFileError::NotFound { .. } => exit::NOT_FOUND,
                    _ => exit::TOOL_ERROR,
                };
                Failure::new(code, format!("error: {e}"))
            })?;
            output::print_text(&text);
            Ok(exit::OK)
        }
    }
}

fn list(skills: &Skills, json: bool) {
    if json {
        output::print_json(&json!({ "skills": skills.list() }));
        return;
    }
    if skills.is_empty() {
        output::write_err("no skills: tools.yaml lists no `tools.skills` folder with a SKILL.md");
        return;
    }
    let width = skills
        .all()
        .iter()
        .map(|s| s.name().len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for s in skills.all() {
        text.push_str(&format!(
            "{:width$}  {}\n",
            s.name(),
            s.description().trim()
        ));
    }
    output::print_text(&text);
}

fn find<'a>(skills: &'a Skills, name: &str) -> Result<&'a toolgate::skills::Skill, Failure> {
    skills.get(name).ok_or_else(|| {
        Failure::new(
            exit::NOT_FOUND,
            format!("error: no skill named `{name}` (see `toolgate skills list`)"),
        )
    })
}
