//! Tool versions in tools.yaml: `version:` (a semantic version a tool is given) and `require:`
//! (semver constraints a source's tools must meet).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `require:` on a source: one semver constraint (`"^2"`, `">=1.4, <3"`, as Cargo reads them)
/// every tool of the source must meet, or one per tool (keyed by the tool's name as the source
/// names it; a tool not in the map is not constrained).
///
/// A tool whose version does not meet its constraint is left out with the reason, and so is a
/// tool that declares no version under a constraint (it cannot be shown to meet it).
///
/// ```yaml
/// require: "^2"
/// # or
/// require: {search: "^2", fetch: ">=1.4"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "RawRequire", into = "RawRequire")]
#[schemars(with = "RawRequire")]
pub enum Require {
    /// One constraint for every tool of the source.
    All(Constraint),
    /// A constraint per tool (the tool's name as the source names it).
    PerTool(BTreeMap<String, Constraint>),
}

/// One semver constraint, as written and as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// As written in tools.yaml.
    pub text: String,
    /// As `semver` reads it.
    pub req: semver::VersionReq,
}

impl Constraint {
    /// Parses `text` as a semver constraint (`^2`, `~1.4`, `>=1, <3`, `*`).
    ///
    /// # Errors
    /// A text `semver::VersionReq` does not read, with its reason.
    pub fn parse(text: &str) -> Result<Self, String> {
        semver::VersionReq::parse(text)
            .map(|req| Self {
                text: text.to_string(),
                req,
            })
            .map_err(|e| {
                format!(
                    "`require: \"{text}\"` is not a semver constraint ({e}); write e.g. \"^2\" or \">=1.4, <3\""
                )
            })
    }

    /// Whether a tool with `version` (`None`: it declares none) meets the constraint; `Err`
    /// is the reason it is left out, e.g. `its version 3.0.0 does not match require "^2"`.
    ///
    /// # Errors
    /// The reason, as above: no version, a version that is not semver, or no match.
    pub fn check(&self, version: Option<&str>) -> Result<(), String> {
        let Some(text) = version else {
            return Err(format!(
                "it declares no version, and require \"{}\" needs one",
                self.text
            ));
        };
        let Ok(v) = semver::Version::parse(text) else {
            return Err(format!(
                "its version `{text}` is not a semantic version, and require \"{}\" needs one",
                self.text
            ));
        };
        if self.req.matches(&v) {
            Ok(())
        } else {
            Err(format!(
                "its version {v} does not match require \"{}\"",
                self.text
            ))
        }
    }
}

impl Require {
    /// The constraint on the tool the source names `tool`, if any.
    pub fn for_tool(&self, tool: &str) -> Option<&Constraint> {
        match self {
            Self::All(c) => Some(c),
            Self::PerTool(map) => map.get(tool),
        }
    }
}

/// The YAML shape of `require:`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "Require")]
enum RawRequire {
    /// A semver constraint every tool of the source must meet (`"^2"`).
    All(String),
    /// A semver constraint per tool, keyed by the tool's name as the source names it.
    PerTool(BTreeMap<String, String>),
}

impl TryFrom<RawRequire> for Require {
    type Error = String;
    fn try_from(raw: RawRequire) -> Result<Self, String> {
        match raw {
            RawRequire::All(text) => Constraint::parse(&text).map(Self::All),
            RawRequire::PerTool(map) => map
                .into_iter()
                .map(|(tool, text)| {
                    Constraint::parse(&text)
                        .map(|c| (tool.clone(), c))
                        .map_err(|e| format!("tool `{tool}`: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(Self::PerTool),
        }
    }
}

impl From<Require> for RawRequire {
    fn from(r: Require) -> Self {
        match r {
            Require::All(c) => Self::All(c.text),
            Require::PerTool(map) => {
                Self::PerTool(map.into_iter().map(|(k, c)| (k, c.text)).collect())
            }
        }
    }
}

/// A tool's version as tools.yaml gives it (`version: "1.2.0"`): must be a semantic version.
///
/// # Errors
/// The text is not `MAJOR.MINOR.PATCH[-pre][+build]`.
pub fn check_version(text: &str) -> Result<(), String> {
    semver::Version::parse(text).map(drop).map_err(|e| {
        format!("`version: \"{text}\"` is not a semantic version ({e}); write MAJOR.MINOR.PATCH, e.g. \"1.2.0\"")
    })
}

/// `text` as a semantic version, if it is one (a source's version that is not, such as an
/// OpenAPI `info.version` of `2024-05-01` or `1.0`, leaves its tools unversioned).
pub fn semantic(text: &str) -> Option<String> {
    semver::Version::parse(text.trim())
        .ok()
        .map(|v| v.to_string())
}

/// The MAJOR part of a semantic version (`None` for no version or one that is not semver).
pub fn major(version: Option<&str>) -> Option<u64> {
    version
        .and_then(|v| semver::Version::parse(v).ok())
        .map(|v| v.major)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_give_their_reason() {
        let c = Constraint::parse("^2").unwrap();
        assert!(c.check(Some("2.4.1")).is_ok());
        let e = c.check(Some("3.0.0")).unwrap_err();
        assert_eq!(e, "its version 3.0.0 does not match require \"^2\"");
        assert!(c.check(None).unwrap_err().contains("declares no version"));
        assert!(
            c.check(Some("2024-05-01"))
                .unwrap_err()
                .contains("not a semantic version")
        );
        assert!(
            Constraint::parse("two")
                .unwrap_err()
                .contains("not a semver constraint")
        );
        assert_eq!(semantic("1.0"), None);
        assert_eq!(semantic("2.1.0"), Some("2.1.0".into()));
        assert_eq!(major(Some("3.1.4")), Some(3));
    }

    #[test]
    fn require_reads_a_string_or_a_map() {
        let all: Require = serde_json::from_value(serde_json::json!("^2")).unwrap();
        assert_eq!(all.for_tool("x").unwrap().text, "^2");
        let per: Require = serde_json::from_value(serde_json::json!({"a": "~1.4"})).unwrap();
        assert!(per.for_tool("b").is_none());
        assert_eq!(per.for_tool("a").unwrap().text, "~1.4");
        let bad = serde_json::from_value::<Require>(serde_json::json!({"a": "x.y"})).unwrap_err();
        assert!(bad.to_string().contains("tool `a`"), "{bad}");
        assert_eq!(
            serde_json::to_value(&per).unwrap(),
            serde_json::json!({"a": "~1.4"})
        );
    }
}
