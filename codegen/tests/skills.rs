//! `tools.skills`: every SKILL.md checked at build time, each problem at its file and line.

use std::fs;
use std::path::{Path, PathBuf};

use toolgate_codegen::{Builder, CodegenError};

const GOOD: &str = "---\nname: {name}\ndescription: Does {name} things.\n---\n# Steps\n";

/// A crate (no local tools) in a temporary folder: tools.yaml listing `skills/`, and `files`.
fn make_crate(case: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("codegen-skills")
        .join(case);
    let _ = fs::remove_dir_all(&dir);
    let yaml = "version: 1\ntools:\n  skills:\n    - dir: skills\n";
    let src = [("tools.yaml", yaml), ("src/lib.rs", "")];
    for (path, text) in src.iter().chain(files) {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    dir
}

fn good(name: &str) -> String {
    GOOD.replace("{name}", name)
}

fn errors(dir: &Path) -> Vec<String> {
    match Builder::new("tools.yaml").manifest_dir(dir).check() {
        Ok(_) => panic!("expected errors"),
        Err(CodegenError::Invalid(d)) => {
            let prefix = format!("{}/", dir.display());
            d.iter()
                .map(|d| d.to_string().replace(&prefix, ""))
                .collect()
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn valid_skills_pass_and_are_read_when_the_toolset_is_built() {
    let (a, b) = (good("alpha"), good("beta"));
    let dir = make_crate(
        "valid",
        &[
            ("skills/alpha/SKILL.md", &a),
            ("skills/beta/SKILL.md", &b),
            ("skills/beta/references/x.md", "x"),
            ("skills/not-a-skill/notes.md", "no SKILL.md here"),
        ],
    );
    let generated = Builder::new("tools.yaml")
        .manifest_dir(&dir)
        .render()
        .unwrap();
    assert_eq!(generated.report().skill_count, 2);
    assert_eq!(generated.report().skill_dirs, ["skills"]);
    // A change to a SKILL.md, or a new skill folder, runs the build script again.
    let reruns = generated.rerun_if_changed();
    assert!(
        reruns.contains(&dir.join("skills/alpha/SKILL.md")),
        "{reruns:?}"
    );
    assert!(reruns.contains(&dir.join("skills")), "{reruns:?}");
    let code = generated.code();
    assert!(code.contains(".skills_dirs(["), "{code}");
    assert!(code.contains("join(\"skills\")"), "{code}");
}

#[test]
fn a_broken_front_matter_fails_at_its_line() {
    let a = good("alpha");
    let dir = make_crate(
        "broken",
        &[
            ("skills/alpha/SKILL.md", &a),
            (
                "skills/beta/SKILL.md",
                "---\nname: beta\ndescription: Beta.\nauthor: someone\n---\n",
            ),
            (
                "skills/gamma/SKILL.md",
                "---\nname: Gamma\ndescription: G.\n---\n",
            ),
        ],
    );
    let e = errors(&dir);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].starts_with("error: skills/beta/SKILL.md:4:1: "),
        "{e:#?}"
    );
    assert!(e[0].contains("author"), "{e:#?}");
    assert!(
        e[1].starts_with("error: skills/gamma/SKILL.md:2:7: "),
        "{e:#?}"
    );
    assert!(e[1].contains("lowercase"), "{e:#?}");
}

#[test]
fn a_missing_folder_is_an_error_at_its_entry() {
    let dir = make_crate("missing", &[]);
    let e = errors(&dir);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("error: tools.yaml:4:12: "), "{e:#?}");
    assert!(e[0].contains("is not a folder"), "{e:#?}");
}

#[test]
fn two_skills_with_one_name_are_refused() {
    let a = good("alpha");
    let dir = make_crate("twice", &[("skills/alpha/SKILL.md", &a)]);
    fs::write(
        dir.join("tools.yaml"),
        "version: 1\ntools:\n  skills:\n    - dir: skills\n    - dir: ./skills\n",
    )
    .unwrap();
    let e = errors(&dir);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("a second skill named `alpha`"), "{e:#?}");
}
