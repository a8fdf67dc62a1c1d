//! `toolgate openapi inspect` and the OpenAPI part of `toolgate check`.

use crate::harness::*;

const PETSTORE: &str = "tests/specs/petstore/swagger-petstore3-openapi.yaml";

#[test]
fn inspect_lists_tools_arguments_and_where_they_go() {
    let run = toolgate(&["openapi", "inspect", PETSTORE]);
    let out = run.code(0).stdout.clone();
    assert!(
        out.contains("19 operation(s), 19 tool(s), 0 skipped"),
        "{}",
        run.context()
    );
    assert!(
        out.contains("getPetById  GET /pet/{petId}") || out.contains("GET /pet/{petId}"),
        "{}",
        run.context()
    );
    assert!(out.contains("petId (path, required)"), "{}", run.context());
    assert!(out.contains("status (query)"), "{}", run.context());
}

#[test]
fn inspect_json_has_document_tools_warnings_and_skips() {
    let run = toolgate(&[
        "openapi",
        "inspect",
        PETSTORE,
        "--json",
        "--dialect",
        "openai-strict",
    ]);
    let v = run.code(0).json();
    assert_eq!(v["document"]["operations"], 19, "{}", run.context());
    assert_eq!(v["document"]["openapi"], "3.0.4");
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 19);
    let get = tools
        .iter()
        .find(|t| t["operation_id"] == "getPetById")
        .unwrap();
    assert_eq!(get["method"], "GET");
    assert_eq!(get["path"], "/pet/{petId}");
    assert_eq!(get["arguments"][0]["in"], "path");
    // OpenAI strict: every property required, no undeclared keys.
    assert_eq!(
        get["input_schema"]["additionalProperties"], false,
        "{get:#}"
    );
    assert!(v["warnings"].is_array() && v["skipped"].is_array());
}

#[test]
fn inspect_of_an_unreadable_document_exits_2() {
    toolgate(&["openapi", "inspect", "tests/specs/nowhere.yaml"])
        .code(2)
        .stderr_has(&["error:", "nowhere.yaml"]);
    toolgate(&[
        "openapi",
        "inspect",
        "tests/specs/readme-oas-examples/readme-2.0-petstore.yaml",
    ])
    .code(2)
    .stderr_has(&["error:", "2.0"]);
}

#[test]
fn check_reports_each_openapi_source() {
    let run = toolgate(&["check", "examples/openapi-catalog/tools.yaml"]);
    let out = run.code(0).stdout.clone();
    assert!(
        out.contains("openapi github (../../tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json, load: build):"),
        "{}",
        run.context()
    );
    assert!(
        out.contains("1223 operation(s): 1223 tool(s), 0 excluded, 0 skipped"),
        "{}",
        run.context()
    );
    assert!(
        out.contains("468 operation(s): 468 tool(s)"),
        "{}",
        run.context()
    );
    assert!(
        out.contains("warnings W_NO_OPERATION_ID: 78"),
        "{}",
        run.context()
    );
}

#[test]
fn list_with_a_config_loads_its_openapi_sources_at_run_time() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-openapi-config");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = repo_root().join(PETSTORE);
    let config = dir.join("tools.yaml");
    std::fs::write(
        &config,
        format!(
            "version: 1\ntools:\n  openapi:\n    - {{id: pets, spec: '{}'}}\n",
            spec.display()
        ),
    )
    .unwrap();
    let run = toolgate(&["list", "--config", config.to_str().unwrap()]);
    let out = run.code(0).stdout.clone();
    assert!(out.contains("pets.getPetById"), "{}", run.context());
    assert_eq!(
        out.lines().filter(|l| l.starts_with("pets.")).count(),
        19,
        "{}",
        run.context()
    );
}

/// A recursive type (a tree node whose children are nodes) is exported to Gemini, which has no
/// `$ref`, unrolled three levels deep: `inspect --dialect gemini` shows the schema with the note
/// naming the type, and `check` warns with the type and the depth instead of passing silently.
#[test]
fn a_recursive_type_is_unrolled_for_gemini_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r##"openapi: 3.0.3
info: {title: Trees, version: "1"}
servers: [{url: "http://127.0.0.1:9/"}]
paths:
  /trees:
    post:
      operationId: plantTree
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Node"}
      responses: {"200": {description: ok}}
components:
  schemas:
    Node:
      type: object
      description: A tree node.
      properties:
        label: {type: string}
        children: {type: array, items: {$ref: "#/components/schemas/Node"}}
"##;
    std::fs::write(dir.path().join("trees.yaml"), doc).unwrap();
    let spec = dir.path().join("trees.yaml").display().to_string();
    let run = toolgate(&["openapi", "inspect", &spec, "--dialect", "gemini"]);
    let out = run.code(0).stdout.clone();
    assert!(
        out.contains("note:") && out.contains("is recursive") && out.contains("3 level(s)"),
        "{}",
        run.context()
    );
    assert!(
        out.contains("nesting depth limit of 3 reached") && !out.contains("\"$ref\""),
        "{}",
        run.context()
    );
    let json = toolgate(&["openapi", "inspect", &spec, "--json", "--dialect", "gemini"]).json();
    let notes = json["tools"][0]["export_notes"].to_string();
    assert!(notes.contains("is recursive"), "{json}");

    let config = format!("version: 1\ntools:\n  openapi:\n    - id: trees\n      spec: {spec}\n");
    std::fs::write(dir.path().join("tools.yaml"), config).unwrap();
    let path = dir.path().join("tools.yaml").display().to_string();
    let run = toolgate(&["check", &path]);
    run.code(0);
    let warning = run
        .stdout
        .lines()
        .find(|l| l.starts_with("warning:") && l.contains("operation POST /trees"));
    assert!(
        warning.is_some_and(|w| w.contains("`Node` is recursive") && w.contains("3 level(s) deep")),
        "{}",
        run.context()
    );
}
