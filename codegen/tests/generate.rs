//! Snapshot tests of the generated code for the fixture crates under `tests/fixtures/`.

use std::path::{Path, PathBuf};

use toolgate_codegen::{Builder, Generated};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn render(name: &str) -> Generated {
    Builder::new("tools.yaml")
        .manifest_dir(fixture(name))
        .render()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The generated file must be valid Rust.
fn assert_parses(code: &str) {
    if let Err(e) = syn::parse_file(code) {
        panic!("generated code does not parse: {e}\n{code}");
    }
}

#[test]
fn basic_fixture() {
    let g = render("basic");
    assert_parses(g.code());
    insta::assert_snapshot!("basic", g.code());
}

/// MCP servers are not contacted at build time: the builder reads them from TOOLS_YAML at run
/// time (secrets unresolved in the generated code).
#[test]
fn mcp_fixture() {
    let g = render("mcp");
    assert_parses(g.code());
    assert!(g.code().contains(".mcp_servers_from_yaml("), "{}", g.code());
    insta::assert_snapshot!("mcp", g.code());
}

#[test]
fn basic_fixture_report() {
    let g = render("basic");
    let r = g.report();
    let tools: Vec<_> = r
        .tools
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.variant.as_str(),
                t.function.as_str(),
                t.timeout_ms,
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (
                "read_text_file",
                "ReadTextFile",
                "crate::builtin::files::read_file",
                Some(5000)
            ),
            ("ping", "Ping", "crate::ping", None),
            ("add-numbers", "AddNumbers", "crate::math::calc::add", None),
            ("negate", "Negate", "crate::math::calc::inner::negate", None),
            ("multiply", "Multiply", "crate::math::multiply", Some(1000)),
        ]
    );
    let states: Vec<_> = r
        .states
        .iter()
        .map(|s| (s.ty.as_str(), s.tools.clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("crate::AppState", vec!["read_text_file".to_string()]),
            ("crate::db::Db", vec!["add-numbers".to_string()]),
        ]
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let root = fixture("basic");
    for f in [
        "tools.yaml",
        "src/lib.rs",
        "src/math/calc.rs",
        "src/builtin/files.rs",
    ] {
        assert!(
            g.rerun_if_changed().contains(&root.join(f)),
            "{f}: {:?}",
            g.rerun_if_changed()
        );
    }
}

#[test]
fn discover_all_fixture() {
    let g = render("discover_all");
    assert_parses(g.code());
    let names: Vec<_> = g.report().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "say_hello", "reverse"]); // sorted by function path
    insta::assert_snapshot!("discover_all", g.code());
}

#[test]
fn empty_toolset() {
    let g = render("empty");
    assert_parses(g.code());
    assert!(g.report().tools.is_empty());
    insta::assert_snapshot!("empty", g.code());
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(render("basic").code(), render("basic").code());
}

#[test]
fn generate_writes_the_file_once() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-generate-writes");
    let _ = std::fs::remove_dir_all(&out);
    let builder = Builder::new("tools.yaml")
        .manifest_dir(fixture("discover_all"))
        .out_dir(&out)
        .out_file("toolset.rs");
    let g = builder.generate().unwrap();
    let path = out.join("toolset.rs");
    assert_eq!(g.out_path(), Some(path.as_path()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), g.code());
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    builder.generate().unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn check_takes_a_path_to_tools_yaml() {
    let report = toolgate_codegen::check(fixture("basic").join("tools.yaml")).unwrap();
    assert_eq!(report.tools.len(), 5);
    assert_eq!(report.config.tools.mcp[0].id, "everything");
}

#[test]
fn generate_without_out_dir_fails_outside_build_scripts() {
    if std::env::var_os("OUT_DIR").is_some() {
        return;
    }
    let err = Builder::new("tools.yaml")
        .manifest_dir(fixture("empty"))
        .generate()
        .unwrap_err();
    assert!(
        matches!(err, toolgate_codegen::CodegenError::NoOutDir),
        "{err}"
    );
}
