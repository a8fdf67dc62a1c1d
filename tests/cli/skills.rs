//! `toolgate skills list|show|read` on the three skills of `tests/skills`, named by a tools.yaml
//! in a temporary folder (copied there, with a symlink out of one skill and a broken copy).

use std::path::Path;

use serde_json::json;

use crate::harness::{repo_root, toolgate_in};

fn copy_dir(from: &Path, to: &Path) {
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

/// `dir/tools.yaml` listing `dir/skills` (a copy of the test skills), `dir/secret.txt` and a
/// symlink `release-notes/leak.txt` pointing at it.
fn setup(dir: &Path) {
    copy_dir(&repo_root().join("tests/skills"), &dir.join("skills"));
    std::fs::write(dir.join("secret.txt"), "the secret").unwrap();
    std::os::unix::fs::symlink(
        "../../secret.txt",
        dir.join("skills/release-notes/leak.txt"),
    )
    .unwrap();
    std::fs::write(
        dir.join("tools.yaml"),
        "version: 1\ntools:\n  skills:\n    - dir: skills\n",
    )
    .unwrap();
}

#[test]
fn list_show_and_read_the_skills() {
    let tmp = tempfile::tempdir().unwrap();
    setup(tmp.path());
    let run = |args: &[&str]| toolgate_in(tmp.path(), args, None);

    let listed = run(&["skills", "list", "--json"]).code(0).json();
    let names: Vec<_> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["csv-cleanup", "incident-report", "release-notes"]);
    let text = run(&["skills", "list"]).code(0).stdout.clone();
    assert!(
        text.contains("incident-report  Draft a blameless"),
        "{text}"
    );

    let shown = run(&["skills", "show", "csv-cleanup", "--json"])
        .code(0)
        .json();
    assert_eq!(
        shown["files"],
        json!(["SKILL.md", "references/rules.md", "scripts/clean.py"])
    );
    assert!(
        shown["instructions"]
            .as_str()
            .unwrap()
            .starts_with("# Cleaning a CSV file")
    );

    let file = run(&[
        "skills",
        "read",
        "incident-report",
        "references/timeline.md",
    ]);
    assert!(
        file.code(0).stdout.contains("14:31 rollback"),
        "{}",
        file.context()
    );
}

#[test]
fn read_refuses_paths_out_of_the_skill() {
    let tmp = tempfile::tempdir().unwrap();
    setup(tmp.path());
    let secret = tmp.path().join("secret.txt");
    for path in [
        "../csv-cleanup/SKILL.md",
        "../../secret.txt",
        secret.to_str().unwrap(),
        "leak.txt",
    ] {
        let r = toolgate_in(tmp.path(), &["skills", "read", "release-notes", path], None);
        r.code(1).stderr_has(&["outside the skill's folder"]);
        assert!(!r.stdout.contains("the secret"), "{}", r.context());
    }
    toolgate_in(tmp.path(), &["skills", "read", "nope", "SKILL.md"], None)
        .code(4)
        .stderr_has(&["no skill named `nope`"]);
}

#[test]
fn a_broken_skill_is_a_config_error_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    setup(tmp.path());
    std::fs::write(
        tmp.path().join("skills/csv-cleanup/SKILL.md"),
        "---\nname: csv-cleanup\ndescription: \"\"\n---\n",
    )
    .unwrap();
    toolgate_in(tmp.path(), &["skills", "list"], None)
        .code(3)
        .stderr_has(&["csv-cleanup/SKILL.md:3:14", "`description` is empty"]);
}
