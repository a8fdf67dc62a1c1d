use super::*;

fn parse(text: &str) -> Result<SkillDocument, Vec<String>> {
    parse_skill_md(text, Path::new("s/SKILL.md"), Some("tidy-notes"))
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

#[test]
fn a_complete_front_matter_is_read_and_the_body_kept() {
    let doc = parse(
        "---\nname: tidy-notes\ndescription: Tidies notes.\nlicense: MIT\n\
         compatibility: any\nmetadata: {author: me, version: \"1.0\"}\n\
         allowed-tools: read_file calc\n---\n# Steps\nDo it.\n",
    )
    .unwrap();
    assert_eq!(doc.front.name, "tidy-notes");
    assert_eq!(doc.front.allowed_tools.as_deref(), Some("read_file calc"));
    assert_eq!(doc.front.metadata["version"], "1.0");
    assert_eq!(doc.body, "# Steps\nDo it.\n");
}

#[test]
fn an_unknown_key_is_an_error_at_its_line() {
    let e = parse("---\nname: tidy-notes\ndescription: x\nauthor: me\n---\nbody\n").unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("error: s/SKILL.md:4:"), "{e:?}");
    assert!(e[0].contains("author"), "{e:?}");
}

#[test]
fn a_missing_description_is_an_error() {
    let e = parse("---\nname: tidy-notes\n---\nbody\n").unwrap_err();
    assert!(e[0].contains("description"), "{e:?}");
}

#[test]
fn name_rules_are_checked_at_the_name_line() {
    for (name, why) in [
        ("Tidy", "only lowercase"),
        ("-tidy", "starts or ends"),
        ("tidy--notes", "two hyphens"),
        ("tidy_notes", "only lowercase"),
    ] {
        let e = parse(&format!("---\ndescription: d\nname: {name}\n---\n")).unwrap_err();
        assert!(e[0].starts_with("error: s/SKILL.md:3:"), "{e:?}");
        assert!(e[0].contains(why), "{name}: {e:?}");
    }
    let long = "a".repeat(65);
    assert!(check_name(&long).unwrap_err().contains("65 characters"));
    assert!(check_name(&"a".repeat(64)).is_ok());
}

#[test]
fn the_name_must_be_the_folders() {
    let e = parse("---\nname: other\ndescription: d\n---\n").unwrap_err();
    assert!(e[0].contains("folder is `tidy-notes`"), "{e:?}");
    assert!(e[0].starts_with("error: s/SKILL.md:2:"), "{e:?}");
}

#[test]
fn lengths_are_checked() {
    let d = "x".repeat(1025);
    let e = parse(&format!("---\nname: tidy-notes\ndescription: {d}\n---\n")).unwrap_err();
    assert!(e[0].contains("1025 characters"), "{e:?}");
    let c = "x".repeat(501);
    let e = parse(&format!(
        "---\nname: tidy-notes\ndescription: d\ncompatibility: {c}\n---\n"
    ))
    .unwrap_err();
    assert!(e[0].starts_with("error: s/SKILL.md:4:"), "{e:?}");
    let e = parse("---\nname: tidy-notes\ndescription: \"  \"\n---\n").unwrap_err();
    assert!(e[0].contains("empty"), "{e:?}");
}

#[test]
fn front_matter_must_open_and_close() {
    assert!(parse("# no front matter\n").unwrap_err()[0].contains(":1:1:"));
    let e = parse("---\nname: tidy-notes\ndescription: d\n").unwrap_err();
    assert!(e[0].contains("not closed"), "{e:?}");
}

#[test]
fn bad_yaml_is_an_error_at_its_line() {
    let e = parse("---\nname: tidy-notes\ndescription: d\nmetadata: [a, b\n---\n").unwrap_err();
    assert!(e[0].starts_with("error: s/SKILL.md:"), "{e:?}");
    let line: usize = e[0]["error: s/SKILL.md:".len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((4..=6).contains(&line), "{e:?}");
}

#[test]
fn metadata_values_are_strings() {
    let e = parse("---\nname: tidy-notes\ndescription: d\nmetadata: {a: [1]}\n---\n").unwrap_err();
    assert!(e[0].starts_with("error: s/SKILL.md:4:"), "{e:?}");
}

#[test]
fn discover_finds_skill_folders_and_reports_every_broken_one() {
    let root = tempfile_dir();
    let make = |folder: &str, text: &str| {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join(SKILL_FILE), text).unwrap();
    };
    make(
        "b-skill",
        "---\nname: b-skill\ndescription: B.\n---\nB body\n",
    );
    make(
        "a-skill",
        "---\nname: a-skill\ndescription: A.\n---\nA body\n",
    );
    std::fs::create_dir_all(root.join("not-a-skill")).unwrap();
    let found = discover(&root).unwrap();
    let names: Vec<_> = found
        .iter()
        .map(|s| s.document.front.name.as_str())
        .collect();
    assert_eq!(names, ["a-skill", "b-skill"]);
    make("c-skill", "---\nname: c\ndescription: C.\n---\n");
    make("d-skill", "---\nname: d-skill\n---\n");
    let errors = discover(&root).unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
    std::fs::remove_dir_all(&root).unwrap();
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolgate-skill-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
