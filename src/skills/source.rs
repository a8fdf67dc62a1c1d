//! [`SkillsSource`]: the tools `load_skill` and `read_skill_file`.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Skills;
use crate::{
    ErrorKind, SourceTool, ToolAnnotations, ToolContext, ToolDescriptor, ToolError, ToolFuture,
    ToolOutput, ToolSource,
};

/// The name of the tool that loads a skill's instructions.
pub const LOAD_SKILL: &str = "load_skill";
/// The name of the tool that reads one of a skill's files.
pub const READ_SKILL_FILE: &str = "read_skill_file";

/// The source (id `skills`, kind `skills`, names not prefixed) of the tools `load_skill` and
/// `read_skill_file` over a set of [`Skills`] (none when the set is empty). Both are
/// read-only: nothing a skill ships is run.
#[derive(Debug)]
pub struct SkillsSource {
    skills: Skills,
    tools: Vec<SourceTool>,
}

/// Arguments of `load_skill`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadSkillArgs {
    name: String,
}

/// Arguments of `read_skill_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadSkillFileArgs {
    skill: String,
    path: String,
}

/// What `load_skill` returns.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct LoadedSkill {
    /// The skill's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The instructions: the body of its SKILL.md (Markdown).
    pub instructions: String,
    /// The skill's files, relative to its folder; read them with `read_skill_file`.
    pub files: Vec<String>,
}

/// What `read_skill_file` returns.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct SkillFile {
    /// The skill.
    skill: String,
    /// The path, as given.
    path: String,
    /// The file's text.
    text: String,
}

impl SkillsSource {
    /// The tools over `skills`.
    pub fn new(skills: Skills) -> Self {
        let names: Vec<&str> = skills.all().iter().map(|s| s.name()).collect();
        let mut listing = String::new();
        for s in skills.all() {
            let _ = write!(listing, "\n- {}: {}", s.name(), s.description().trim());
        }
        let annotations = ToolAnnotations {
            read_only_hint: Some(true),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
            destructive_hint: Some(false),
            ..ToolAnnotations::default()
        };
        let descriptor = |name: &str, description: String, input: Value, output: Value| {
            Arc::new(ToolDescriptor {
                name: name.to_owned(),
                description,
                input_schema: input,
                output_schema: Some(output),
                annotations: annotations.clone(),
                source: "skills".to_owned(),
                category: Some("skills".to_owned()),
                ..ToolDescriptor::default()
            })
        };
        let load = descriptor(
            LOAD_SKILL,
            format!(
                "Load a skill: its instructions and the list of its files (read them with \
                 {READ_SKILL_FILE}). Load a skill when the task matches its description. \
                 Skills:{listing}"
            ),
            json!({
                "type": "object",
                "properties": {"name": {
                    "type": "string",
                    "enum": names,
                    "description": "The skill's name, one of the listed skills."
                }},
                "required": ["name"],
                "additionalProperties": false
            }),
            output_schema::<LoadedSkill>(),
        );
        let read = descriptor(
            READ_SKILL_FILE,
            format!(
                "Read one text file of a skill (a reference, a template, a script's source), by \
                 its path inside the skill's folder as {LOAD_SKILL} lists it. Nothing is run."
            ),
            json!({
                "type": "object",
                "properties": {
                    "skill": {"type": "string", "enum": names, "description": "The skill's name."},
                    "path": {
                        "type": "string",
                        "description": "The file's path inside the skill's folder, e.g. \"references/guide.md\"."
                    }
                },
                "required": ["skill", "path"],
                "additionalProperties": false
            }),
            output_schema::<SkillFile>(),
        );
        // No skills, no tools: a `load_skill` that can load nothing would only mislead.
        let tools = if skills.is_empty() {
            Vec::new()
        } else {
            vec![SourceTool::indexed(load, 0), SourceTool::indexed(read, 1)]
        };
        Self { tools, skills }
    }

    /// The skills it offers.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    fn run(&self, index: Option<usize>, args: Value) -> Result<ToolOutput, ToolError> {
        let bad = |tool: &str, e: serde_json::Error| {
            ToolError::new(
                ErrorKind::InvalidArguments,
                format!("{tool}: invalid arguments: {e}"),
            )
        };
        match index {
            Some(0) => {
                let args: LoadSkillArgs =
                    serde_json::from_value(args).map_err(|e| bad(LOAD_SKILL, e))?;
                let loaded = load(&self.skills, &args.name)?;
                Ok(ToolOutput::structured(
                    serde_json::to_value(loaded)
                        .map_err(|e| ToolError::internal(format!("{LOAD_SKILL}: {e}")))?,
                ))
            }
            Some(1) => {
                let args: ReadSkillFileArgs =
                    serde_json::from_value(args).map_err(|e| bad(READ_SKILL_FILE, e))?;
                let skill = self
                    .skills
                    .get(&args.skill)
                    .ok_or_else(|| unknown(&args.skill))?;
                let text = skill.read_file(&args.path)?;
                Ok(ToolOutput::structured(json!(SkillFile {
                    skill: args.skill,
                    path: args.path,
                    text,
                })))
            }
            _ => Err(ToolError::not_found("skills tool")),
        }
    }
}

/// The skill `name` as `load_skill` returns it.
pub(crate) fn load(skills: &Skills, name: &str) -> Result<LoadedSkill, ToolError> {
    let skill = skills.get(name).ok_or_else(|| unknown(name))?;
    Ok(LoadedSkill {
        name: skill.name().to_owned(),
        description: skill.description().to_owned(),
        instructions: skill.instructions().to_owned(),
        files: skill.files()?,
    })
}

/// The error for a skill that is not there.
pub(crate) fn unknown(name: &str) -> ToolError {
    ToolError::new(
        ErrorKind::NotFound,
        format!("no skill named `{name}` (see the skills listed by load_skill)"),
    )
}

fn output_schema<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({"type": "object"}))
}

impl ToolSource for SkillsSource {
    fn id(&self) -> &str {
        "skills"
    }

    fn kind(&self) -> &str {
        "skills"
    }

    fn prefixed(&self) -> bool {
        false
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.tools.clone()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        _ctx: ToolContext,
    ) -> ToolFuture<'static> {
        ToolFuture::ready(self.run(tool.key.index(), args))
    }
}
