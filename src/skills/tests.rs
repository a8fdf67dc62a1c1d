use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::ErrorKind;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/skills")
}

/// A copy of the three test skills in a temporary folder, with `escape` (outside the skills
/// folder) holding a secret file.
fn copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    copy_dir(&fixtures(), &skills);
    std::fs::create_dir(tmp.path().join("escape")).unwrap();
    std::fs::write(tmp.path().join("escape/secret.txt"), "secret").unwrap();
    tmp
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_three_skills_are_listed_by_name_with_their_descriptions() {
    let skills = Skills::discover([fixtures()]).unwrap();
    let names: Vec<_> = skills.list().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["csv-cleanup", "incident-report", "release-notes"]);
    assert!(
        skills
            .get("csv-cleanup")
            .unwrap()
            .description()
            .starts_with("Clean up a CSV")
    );
    assert!(skills.get("nope").is_none());
}

#[test]
fn a_skill_lists_its_files() {
    let skills = Skills::discover([fixtures()]).unwrap();
    let files = skills.get("release-notes").unwrap().files().unwrap();
    assert_eq!(
        files,
        ["SKILL.md", "assets/template.md", "references/style.md"]
    );
}

#[tokio::test]
async fn load_skill_returns_the_instructions_and_the_files() {
    let skills = Skills::discover([fixtures()]).unwrap();
    let tools = crate::Toolset::builder().skills(skills).build().unwrap();
    let load = tools.describe(LOAD_SKILL).unwrap();
    assert!(
        load.description
            .contains("- incident-report: Draft a blameless")
    );
    let out = tools
        .call(LOAD_SKILL, json!({"name": "csv-cleanup"}))
        .await
        .unwrap();
    let s = out.structured.unwrap();
    assert!(
        s["instructions"]
            .as_str()
            .unwrap()
            .starts_with("# Cleaning a CSV file")
    );
    assert_eq!(
        s["files"],
        json!(["SKILL.md", "references/rules.md", "scripts/clean.py"])
    );
    let e = tools
        .call(LOAD_SKILL, json!({"name": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
}

#[tokio::test]
async fn read_skill_file_reads_inside_the_folder() {
    let skills = Skills::discover([fixtures()]).unwrap();
    let tools = crate::Toolset::builder().skills(skills).build().unwrap();
    let out = tools
        .call(
            READ_SKILL_FILE,
            json!({"skill": "incident-report", "path": "references/timeline.md"}),
        )
        .await
        .unwrap();
    assert!(
        out.structured.unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("14:02 alert")
    );
}

#[test]
fn read_skill_file_refuses_parent_absolute_and_symlinks_out() {
    let tmp = copy();
    let skill_dir = tmp.path().join("skills/csv-cleanup");
    std::os::unix::fs::symlink("../../escape/secret.txt", skill_dir.join("out-relative")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("escape"), skill_dir.join("out-absolute")).unwrap();
    // A symlink that stays inside the folder is followed, as read_file does.
    std::os::unix::fs::symlink("references/rules.md", skill_dir.join("rules-link")).unwrap();
    let skills = Skills::discover([tmp.path().join("skills")]).unwrap();
    let skill = skills.get("csv-cleanup").unwrap();
    let secret = tmp.path().join("escape/secret.txt");
    for path in [
        "../incident-report/SKILL.md",
        "references/../../release-notes/SKILL.md",
        "../../escape/secret.txt",
        secret.to_str().unwrap(),
        "/etc/passwd",
        "out-relative",
        "out-absolute/secret.txt",
    ] {
        let e = skill.read_file(path).unwrap_err();
        assert!(matches!(e, SkillFileError::Escape { .. }), "{path}: {e}");
        // The message names the path as given, never the folder's place on disk.
        assert!(
            e.to_string().starts_with(&format!("{path}: outside")),
            "{e}"
        );
    }
    assert!(
        skill
            .read_file("rules-link")
            .unwrap()
            .contains("Cleaning rules")
    );
    // Symlinks are not listed.
    let files = skill.files().unwrap();
    assert!(
        !files
            .iter()
            .any(|f| f.contains("out-") || f == "rules-link"),
        "{files:?}"
    );
}

#[test]
fn a_broken_skill_stops_discovery_with_its_line() {
    let tmp = copy();
    std::fs::write(
        tmp.path().join("skills/csv-cleanup/SKILL.md"),
        "---\nname: csv-cleanup\ndescription: d\nauthor: me\n---\n",
    )
    .unwrap();
    let e = Skills::discover([tmp.path().join("skills")]).unwrap_err();
    assert!(e.to_string().contains("csv-cleanup/SKILL.md:4:"), "{e}");
}

#[test]
fn two_skills_with_one_name_are_refused() {
    let tmp = copy();
    let e = Skills::discover([fixtures(), tmp.path().join("skills")]).unwrap_err();
    assert_eq!(e.0.len(), 3, "{e}");
    assert!(e.to_string().contains("a second skill named"), "{e}");
}

#[tokio::test]
async fn skills_dirs_finds_the_skills_when_the_toolset_is_built() {
    let tools = crate::Toolset::builder()
        .skills_dirs([fixtures()])
        .build()
        .unwrap();
    assert_eq!(of(&tools).unwrap().len(), 3);
    let out = tools
        .call(LOAD_SKILL, json!({"name": "release-notes"}))
        .await
        .unwrap();
    assert_eq!(out.structured.unwrap()["name"], "release-notes");
}

#[test]
fn skills_dirs_with_a_broken_skill_fails_the_build_with_its_line() {
    let tmp = copy();
    std::fs::write(
        tmp.path().join("skills/release-notes/SKILL.md"),
        "---\nname: release-notes\n\ndescription: [not, a, string]\n---\n",
    )
    .unwrap();
    let e = crate::Toolset::builder()
        .skills_dirs([tmp.path().join("skills")])
        .build()
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("release-notes/SKILL.md:4:"), "{text}");
}

#[test]
fn no_skills_no_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let tools = crate::Toolset::builder()
        .skills_dirs([tmp.path()])
        .build()
        .unwrap();
    assert!(tools.describe(LOAD_SKILL).is_none());
    assert!(of(&tools).unwrap().is_empty());
}
