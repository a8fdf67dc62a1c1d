//! `server_variables` values checked at build / `toolgate check` time as the runtime resolves
//! them: a value outside a variable's `enum` is an error at its line, for compiled and
//! `load: runtime` file entries.

use std::fs;
use std::path::Path;

use toolgate_codegen::Builder;

const DOC: &str = r#"
openapi: 3.1.0
info: {title: t, version: "1"}
servers:
  - url: https://{region}.api.example.com/v1
    variables:
      region: {default: eu, enum: [eu, us]}
paths:
  /a:
    get:
      operationId: a
      responses: {'200': {description: ok}}
  /b:
    servers:
      - url: https://{zone}.other.example.com
        variables:
          zone: {default: z1, enum: [z1, z2]}
    get:
      operationId: b
      responses: {'200': {description: ok}}
"#;

/// The diagnostics of `check` on a crate with `tools.yaml` = `yaml` and `api.yaml` = [`DOC`].
fn check(name: &str, yaml: &str) -> Result<Vec<String>, Vec<String>> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("codegen-openapi-servers")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("tools.yaml"), yaml).unwrap();
    fs::write(dir.join("api.yaml"), DOC).unwrap();
    fs::write(dir.join("src/lib.rs"), "").unwrap();
    let prefix = format!("{}/", dir.display());
    let shown = |d: &[toolgate_model::Diagnostic]| {
        d.iter()
            .map(|d| d.to_string().replace(&prefix, ""))
            .collect()
    };
    match Builder::new("tools.yaml").manifest_dir(&dir).check() {
        Ok(r) => Ok(shown(&r.warnings)),
        Err(e) => Err(shown(&e.diagnostics())),
    }
}

fn entry(load: &str, vars: &str) -> String {
    format!(
        "version: 1\ntools:\n  openapi:\n    - id: api\n      spec: api.yaml\n      load: {load}\n      server_variables: {vars}\n"
    )
}

#[test]
fn a_value_outside_the_enum_is_an_error_at_its_line() {
    for load in ["build", "runtime"] {
        let e = check(&format!("bad-{load}"), &entry(load, "{region: ap}")).unwrap_err();
        assert_eq!(e.len(), 1, "{load}: {e:#?}");
        assert!(e[0].starts_with("error: tools.yaml:7:"), "{load}: {e:#?}");
        assert!(
            e[0].contains("server variable 'region' must be one of [eu, us]"),
            "{load}: {e:#?}"
        );
        // an operation's own server is checked with its own variables
        let e = check(&format!("zone-{load}"), &entry(load, "{zone: z9}")).unwrap_err();
        assert!(
            e.len() == 1 && e[0].contains("server variable 'zone' must be one of [z1, z2]"),
            "{load}: {e:#?}"
        );
    }
}

#[test]
fn allowed_values_and_base_url_pass() {
    // `region` is only the document server's, `zone` only /b's: each server takes its own
    for load in ["build", "runtime"] {
        check(
            &format!("ok-{load}"),
            &entry(load, "{region: us, zone: z2}"),
        )
        .unwrap_or_else(|e| panic!("{load}: {e:#?}"));
    }
    // with base_url the servers are not used
    let yaml = entry("build", "{region: ap}") + "      base_url: https://x.example.com\n";
    check("base-url", &yaml).unwrap_or_else(|e| panic!("{e:#?}"));
}
