//! OpenAPI sources at build time: the generated code for the Swagger petstore (pinned by a
//! snapshot), what is embedded, and the build errors of broken entries.

use std::fs;
use std::path::{Path, PathBuf};

use toolgate_codegen::Builder;
use toolgate_model::openapi::Conversion;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The petstore documents, relative to a crate in `CARGO_TARGET_TMPDIR/codegen-openapi/<name>`.
fn spec(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/specs")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn petstore_fixture() {
    let g = Builder::new("tools.yaml")
        .manifest_dir(fixture("openapi"))
        .render()
        .unwrap_or_else(|e| panic!("{e}"));
    let code = g.code();
    if let Err(e) = syn::parse_file(code) {
        panic!("generated code does not parse: {e}\n{code}");
    }
    // The entry (with its `${PETSTORE_TOKEN}`) is read from TOOLS_YAML at run time.
    assert!(
        code.contains("__toolgate_openapi_entry(\"petstore\")"),
        "{code}"
    );
    assert!(
        code.contains("include_str!(\"toolgate_openapi_petstore.json\")"),
        "{code}"
    );
    assert!(code.contains(".openapi_sources_from_yaml("), "{code}");
    assert!(code.contains("pub mod petstore"), "{code}");
    assert!(
        !code.contains("pub mod pets "),
        "typed: false has no module\n{code}"
    );
    insta::assert_snapshot!("openapi_petstore", code);

    let r = g.report();
    let ids: Vec<&str> = r.openapi_sources.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["petstore", "pets"], "load: runtime is not compiled");
    let petstore = &r.openapi_sources[0];
    assert_eq!(petstore.conversion.operations, 19);
    assert_eq!(petstore.accounted(), 19);
    assert!(
        petstore
            .conversion
            .tools
            .iter()
            .any(|t| t.name == "inventory")
    );
    let files: Vec<&str> = g.embedded_files().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        files,
        [
            "toolgate_openapi_petstore.json",
            "toolgate_openapi_pets.json"
        ]
    );
    let embedded: Conversion = serde_json::from_str(&g.embedded_files()[0].1).unwrap();
    assert_eq!(embedded, petstore.conversion);
    let root = fixture("openapi");
    assert!(
        g.rerun_if_changed()
            .iter()
            .any(|f| f.ends_with("swagger-petstore3-openapi.yaml")),
        "{:?}",
        g.rerun_if_changed()
    );
    let _ = root;
}

#[test]
fn generate_writes_the_conversion_next_to_the_generated_file() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-openapi-generate");
    let _ = fs::remove_dir_all(&out);
    let g = Builder::new("tools.yaml")
        .manifest_dir(fixture("openapi"))
        .out_dir(&out)
        .out_file("nested/toolset.rs")
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.join("nested/toolset.rs").is_file());
    let json = fs::read_to_string(out.join("nested/toolgate_openapi_petstore.json")).unwrap();
    assert_eq!(json, g.embedded_files()[0].1);
}

fn check_errors(name: &str, yaml: &str, lib: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("codegen-openapi")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("tools.yaml"), yaml).unwrap();
    fs::write(dir.join("src/lib.rs"), lib).unwrap();
    let prefix = format!("{}/", dir.display());
    match Builder::new("tools.yaml").manifest_dir(&dir).check() {
        Ok(r) => panic!("expected errors, got {:?}", r.warnings),
        Err(e) => e
            .diagnostics()
            .iter()
            .map(|d| d.to_string().replace(&prefix, ""))
            .collect(),
    }
}

#[test]
fn a_url_with_load_build_is_an_error_at_its_line() {
    let e = check_errors(
        "url",
        "version: 1\ntools:\n  openapi:\n    - id: a\n      spec: https://example.com/openapi.json\n",
        "",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("error: tools.yaml:5:13: "), "{e:#?}");
    assert!(e[0].contains("load: runtime"), "{e:#?}");
}

#[test]
fn an_unreadable_document_is_an_error_at_its_spec_line() {
    let e = check_errors(
        "missing",
        "version: 1\ntools:\n  openapi:\n    - {id: a, spec: nowhere.yaml}\n",
        "",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].starts_with("error: tools.yaml:4:21: OpenAPI source `a`: document `nowhere.yaml`"),
        "{e:#?}"
    );
    let swagger = spec("readme-oas-examples/readme-2.0-petstore.yaml");
    let e = check_errors(
        "swagger",
        &format!("version: 1\ntools:\n  openapi:\n    - {{id: a, spec: '{swagger}'}}\n"),
        "",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("2.0"), "{e:#?}");
}

#[test]
fn an_unprefixed_tool_colliding_names_both() {
    let petstore = spec("oai-examples/oai-v3.0-petstore.yaml");
    let e = check_errors(
        "collision",
        &format!(
            "version: 1\ntools:\n  local:\n    - fn: crate::listPets\n  openapi:\n    - {{id: a, spec: '{petstore}', prefix: false}}\n"
        ),
        "#[toolgate::tool]\n/// Lists.\npub fn listPets() {}\n",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("error: tools.yaml:6:"), "{e:#?}");
    assert!(
        e[0].contains("`listPets` is already taken by the compiled tool `listPets`"),
        "{e:#?}"
    );
}

#[test]
fn an_unknown_server_variable_is_an_error() {
    let petstore = spec("oai-examples/oai-v3.0-petstore.yaml");
    let e = check_errors(
        "variables",
        &format!(
            "version: 1\ntools:\n  openapi:\n    - id: a\n      spec: '{petstore}'\n      server_variables: {{region: us}}\n"
        ),
        "",
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("error: tools.yaml:6:"), "{e:#?}");
    assert!(e[0].contains("no variable `region`"), "{e:#?}");
}
