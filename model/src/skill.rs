//! Agent Skills: a folder with a `SKILL.md` (YAML front matter between `---` lines, then
//! Markdown instructions) and any other files (`scripts/`, `references/`, `assets/`).
//!
//! ```text
//! ---
//! name: pdf-forms                 # required: a-z, 0-9 and '-', at most 64, = the folder's name
//! description: Fill PDF forms...  # required: at most 1024 characters
//! license: Apache-2.0             # optional
//! compatibility: needs python3    # optional, at most 500 characters
//! metadata: {author: me}          # optional, string to string
//! allowed-tools: read_file calc   # optional, space-separated
//! ---
//! # Instructions
//! ...
//! ```
//!
//! [`parse_skill_md`] reads one file and checks its front matter; [`discover`] finds every
//! skill folder under a directory. Every problem is a [`Diagnostic`] at `file:line:column`
//! (lines counted in the whole `SKILL.md`, the opening `---` being line 1), so a build or a
//! start-up that refuses a skill says where to look. Reading only: nothing here runs a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_saphyr::MessageFormatter as _;

use crate::config::{Diagnostic, Location, LocationMap};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Longest skill name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Largest `SKILL.md` read, in bytes (the instructions are meant to be short; details go into
/// the skill's other files).
pub const MAX_SKILL_MD_BYTES: u64 = 1024 * 1024;

/// The front matter of a `SKILL.md`, as the Agent Skills format defines it; any other key is an
/// error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillFrontMatter {
    /// The skill's name: lowercase letters, digits and hyphens (not first, not last, not two in
    /// a row), 1 to 64 characters, the same as its folder's name.
    pub name: String,
    /// What the skill does and when to use it (1 to 1024 characters): all a model sees before
    /// it loads the skill.
    pub description: String,
    /// The skill's license (a name or a file of the skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// What the skill needs from its environment (at most 500 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// Free-form properties, string to string.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Tools the skill may use, space-separated (informative: toolgate grants nothing by it).
    #[serde(
        default,
        rename = "allowed-tools",
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_tools: Option<String>,
}

/// A parsed and checked `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDocument {
    /// The front matter.
    pub front: SkillFrontMatter,
    /// The Markdown after the closing `---` (the instructions), as written.
    pub body: String,
}

/// One skill folder found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSkill {
    /// The skill's folder.
    pub dir: PathBuf,
    /// Its `SKILL.md`, parsed and checked.
    pub document: SkillDocument,
}

/// Parses `text`, the content of the `SKILL.md` at `file`, and checks its front matter; with
/// `folder`, the skill's name must equal it.
///
/// # Errors
/// Every problem found, each at its line of `file`: no front matter, YAML that does not parse,
/// an unknown key, a missing or wrongly typed field, a name that breaks the rules or is not
/// the folder's, a description or `compatibility` too long or empty.
pub fn parse_skill_md(
    text: &str,
    file: &Path,
    folder: Option<&str>,
) -> Result<SkillDocument, Vec<Diagnostic>> {
    let error = |line: usize, column: usize, message: String| {
        vec![Diagnostic::error(
            file,
            Some(Location::new(line, column)),
            message,
        )]
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(error(
            1,
            1,
            "a SKILL.md starts with YAML front matter: a `---` line, `name:` and `description:`, \
             then a closing `---` line"
                .into(),
        ));
    }
    // Byte offsets of the front matter and of the body; line numbers of the whole file.
    let start = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut offset = start;
    let mut end = None;
    for line in lines {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((front_end, body_start)) = end else {
        return Err(error(
            1,
            1,
            "the front matter is not closed: no `---` line after the opening one".into(),
        ));
    };
    let yaml = &text[start..front_end];
    // The YAML starts on line 2 of the file.
    let shift = |loc: Location| Location::new(loc.line + 1, loc.column);
    let front: SkillFrontMatter = serde_saphyr::from_str(yaml).map_err(|e| {
        let inner = e.without_snippet();
        let message = serde_saphyr::DefaultMessageFormatter.format_message(inner);
        let location = e.location().map_or(Location::new(2, 1), |l| {
            shift(Location::new(
                usize::try_from(l.line()).unwrap_or(usize::MAX - 1),
                usize::try_from(l.column()).unwrap_or(usize::MAX),
            ))
        });
        vec![Diagnostic::error(file, Some(location), message)]
    })?;
    let locations = LocationMap::from_yaml(yaml);
    let at = |pointer: &str, message: String| {
        Diagnostic::error(file, Some(shift(locations.locate(pointer))), message)
    };
    let mut errors = Vec::new();
    if let Err(reason) = check_name(&front.name) {
        errors.push(at("/name", format!("`name` {reason}")));
    } else if let Some(folder) = folder.filter(|f| *f != front.name) {
        errors.push(at(
            "/name",
            format!(
                "`name` is `{}` but the skill's folder is `{folder}`: they must be the same",
                front.name
            ),
        ));
    }
    let description = front.description.trim();
    if description.is_empty() {
        errors.push(at("/description", "`description` is empty".into()));
    } else if front.description.chars().count() > MAX_DESCRIPTION_CHARS {
        errors.push(at(
            "/description",
            format!(
                "`description` has {} characters, more than {MAX_DESCRIPTION_CHARS}",
                front.description.chars().count()
            ),
        ));
    }
    if let Some(c) = &front.compatibility {
        let n = c.chars().count();
        if c.trim().is_empty() {
            errors.push(at("/compatibility", "`compatibility` is empty".into()));
        } else if n > MAX_COMPATIBILITY_CHARS {
            errors.push(at(
                "/compatibility",
                format!("`compatibility` has {n} characters, more than {MAX_COMPATIBILITY_CHARS}"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(SkillDocument {
        front,
        body: text[body_start..].to_string(),
    })
}

/// Checks a skill name: 1 to 64 characters, lowercase ASCII letters, digits and hyphens, not
/// starting or ending with a hyphen, no two hyphens in a row.
///
/// # Errors
/// Why the name breaks the rules, as the end of a sentence starting with the field's name.
pub fn check_name(name: &str) -> Result<(), String> {
    let n = name.chars().count();
    if n == 0 {
        return Err("is empty".into());
    }
    if n > MAX_NAME_CHARS {
        return Err(format!("has {n} characters, more than {MAX_NAME_CHARS}"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "`{name}` has {c:?}: only lowercase letters, digits and hyphens are allowed"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!("`{name}` starts or ends with a hyphen"));
    }
    if name.contains("--") {
        return Err(format!("`{name}` has two hyphens in a row"));
    }
    Ok(())
}

/// Every skill under `dir`: each sub-folder holding a `SKILL.md` (sorted by folder name;
/// folders without one are not skills and are skipped). Each `SKILL.md` is read (at most
/// [`MAX_SKILL_MD_BYTES`]) and checked with [`parse_skill_md`]; two skills with one name are an
/// error.
///
/// # Errors
/// Every problem of every skill (a skill that fails does not hide the others'), or one
/// diagnostic when `dir` cannot be read.
pub fn discover(dir: &Path) -> Result<Vec<FoundSkill>, Vec<Diagnostic>> {
    let io = |path: &Path, e: std::io::Error| {
        vec![Diagnostic::error(
            path,
            None,
            format!("cannot read the skills folder: {e}"),
        )]
    };
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let path = entry.path();
        if path.is_dir() && path.join(SKILL_FILE).is_file() {
            folders.push(path);
        }
    }
    folders.sort();
    let mut found: Vec<FoundSkill> = Vec::new();
    let mut errors = Vec::new();
    for folder in folders {
        let file = folder.join(SKILL_FILE);
        let name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match read_skill_md(&file) {
            Ok(text) => match parse_skill_md(&text, &file, Some(name)) {
                Ok(document) => found.push(FoundSkill {
                    dir: folder,
                    document,
                }),
                Err(e) => errors.extend(e),
            },
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

fn read_skill_md(file: &Path) -> Result<String, Diagnostic> {
    let fail = |m: String| Diagnostic::error(file, None, m);
    let len = std::fs::metadata(file)
        .map_err(|e| fail(format!("cannot read the file: {e}")))?
        .len();
    if len > MAX_SKILL_MD_BYTES {
        return Err(fail(format!(
            "{len} bytes, more than the {MAX_SKILL_MD_BYTES} a SKILL.md may have"
        )));
    }
    let bytes = std::fs::read(file).map_err(|e| fail(format!("cannot read the file: {e}")))?;
    String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))
}

#[cfg(test)]
mod tests;
