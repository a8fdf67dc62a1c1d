//! Every build error names `tools.yaml:<line>:<col>` (or the Rust file), and all are reported.

use std::fs;
use std::path::{Path, PathBuf};

use toolgate_codegen::{Builder, Report};

const LIB: &str = "pub mod tools;\npub mod kinds;\npub mod long;\npub struct AppState;\n";

const TOOLS: &str = r#"use toolgate::{tool, State};

/// Reads.
#[tool]
pub fn read_file(path: String) -> String { path }

/// Also claims the name read_file.
#[tool(name = "read_file", tags = ["x"])]
pub fn read_file_v2(path: String) -> String { path }

#[tool]
pub fn with_app(s: State<crate::AppState>) {}

#[toolgate::tool]
pub async fn with_db(db: toolgate::State<Db>, n: u32) {}

pub fn helper() {}
"#;

/// A crate in a temporary folder with this tools.yaml and `src/lib.rs` + `src/tools.rs`
/// (plus `extra` files).
fn make_crate(name: &str, yaml: &str, extra: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("codegen-errors")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    let files = [
        ("src/lib.rs", LIB),
        ("src/tools.rs", TOOLS),
        ("tools.yaml", yaml),
    ];
    for (path, text) in files.iter().chain(extra) {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    dir
}

fn check(name: &str, yaml: &str, extra: &[(&str, &str)]) -> Result<Report, Vec<String>> {
    let dir = make_crate(name, yaml, extra);
    Builder::new("tools.yaml")
        .manifest_dir(&dir)
        .check()
        .map_err(|e| {
            let prefix = format!("{}/", dir.display());
            e.diagnostics()
                .iter()
                .map(|d| d.to_string().replace(&prefix, ""))
                .collect()
        })
}

fn errors(name: &str, yaml: &str) -> Vec<String> {
    match check(name, yaml, &[]) {
        Ok(r) => panic!("expected errors, got {:?}", r.tools),
        Err(e) => e,
    }
}

/// The single error, which must start with `error: tools.yaml:<at>: `.
fn one_error(name: &str, yaml: &str, at: &str) -> String {
    let e = errors(name, yaml);
    assert_eq!(e.len(), 1, "{e:#?}");
    let prefix = format!("error: tools.yaml:{at}: ");
    assert!(
        e[0].starts_with(&prefix),
        "expected {prefix:?}, got:\n{}",
        e[0]
    );
    e[0].clone()
}

#[test]
fn unknown_function_suggests_the_closest() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::reed_file\n";
    let e = one_error("unknown_fn", yaml, "4:11");
    assert!(
        e.contains("unknown function `crate::tools::reed_file`"),
        "{e}"
    );
    assert!(
        e.contains("hint: did you mean `crate::tools::read_file`?"),
        "{e}"
    );
}

#[test]
fn function_without_tool_attribute() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::helper\n";
    let e = one_error("not_a_tool", yaml, "4:11");
    assert!(
        e.contains("`crate::tools::helper` is not a #[tool] function"),
        "{e}"
    );
    assert!(e.contains("#[toolgate::tool]"), "{e}");
}

#[test]
fn path_without_crate_prefix() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: tools::read_file\n";
    let e = one_error("no_crate_prefix", yaml, "4:11");
    assert!(
        e.contains("paths start at the crate root: `crate::tools::read_file`"),
        "{e}"
    );
}

#[test]
fn duplicate_name_names_both() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n    - fn: crate::tools::read_file_v2\n";
    let e = one_error("dup_name", yaml, "5:11");
    assert!(e.contains("duplicate tool name `read_file`"), "{e}");
    assert!(e.contains("`crate::tools::read_file` (line 4)"), "{e}");
    assert!(e.contains("`crate::tools::read_file_v2` (line 5)"), "{e}");
}

#[test]
fn duplicate_name_by_override_and_discovery() {
    let yaml = "version: 1\nstate: [crate::AppState, Db]\ntools:\n  local:\n    - fn: crate::tools::with_app\n      name: with_db\n    - discover: src\n";
    let e = errors("dup_discover", yaml);
    let dup: Vec<_> = e
        .iter()
        .filter(|m| m.contains("duplicate tool name"))
        .collect();
    // read_file twice (discovered), with_db twice (override + discovery).
    assert_eq!(dup.len(), 2, "{e:#?}");
    assert!(
        dup.iter().any(
            |m| m.starts_with("error: tools.yaml:7:17: duplicate tool name `with_db`")
                && m.contains("`crate::tools::with_app` (line 6)")
                && m.contains("`crate::tools::with_db` (src/tools.rs:15, discovered at line 7)")
        ),
        "{dup:#?}"
    );
}

#[test]
fn same_function_listed_twice() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n    - fn: crate::tools::read_file\n";
    let e = one_error("listed_twice", yaml, "5:11");
    assert!(e.contains("listed twice (also at line 4)"), "{e}");
}

#[test]
fn illegal_name() {
    let yaml =
        "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n      name: read file\n";
    let e = one_error("bad_name", yaml, "5:13");
    assert!(
        e.contains("invalid tool name (from `name:` in tools.yaml)"),
        "{e}"
    );
    assert!(e.contains("' ' at position 4"), "{e}");
}

#[test]
fn over_long_name() {
    let long = "n".repeat(65);
    let yaml = format!(
        "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n      name: {long}\n"
    );
    let e = one_error("long_name", &yaml, "5:13");
    assert!(e.contains("is 65 characters long"), "{e}");
}

#[test]
fn illegal_name_from_the_attribute() {
    let yaml = "version: 1\ntools:\n  local:\n    - discover: src/extra\n";
    let extra = [(
        "src/extra.rs",
        "#[tool(name = \"a.b\")]\npub fn dotted() {}\n",
    )];
    let e = check("attr_name", yaml, &extra).unwrap_err();
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].starts_with(
            "error: tools.yaml:4:17: invalid tool name (from function `crate::extra::dotted`)"
        ),
        "{e:#?}"
    );
}

#[test]
fn missing_state_points_at_the_entry() {
    let yaml = "version: 1\nstate: [crate::AppState]\ntools:\n  local:\n    - fn: crate::tools::with_app\n    - fn: crate::tools::with_db\n";
    let e = one_error("missing_state", yaml, "6:7");
    assert!(
        e.contains("tool `with_db` (`crate::tools::with_db`) takes `State<Db>`"),
        "{e}"
    );
    assert!(e.contains("no type of `state:` provides `Db`"), "{e}");
    assert!(
        e.contains("hint: add it to tools.yaml: `state: [crate::path::to::Db]`"),
        "{e}"
    );
}

#[test]
fn missing_state_points_at_the_discover_line() {
    let yaml = "version: 1\nstate: [crate::db::Db]\ntools:\n  local:\n    - fn: crate::tools::read_file\n    - discover: true\n";
    let e = errors("missing_state_discover", yaml);
    let state: Vec<_> = e.iter().filter(|m| m.contains("takes `State<")).collect();
    assert_eq!(state.len(), 1, "{e:#?}");
    assert!(
        state[0].starts_with("error: tools.yaml:6:17: tool `with_app`"),
        "{state:#?}"
    );
    assert!(
        state[0].contains("`state: [crate::AppState]`"),
        "{state:#?}"
    );
}

#[test]
fn unknown_key() {
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n      nmae: x\n";
    let e = one_error("unknown_key", yaml, "5:7");
    assert!(e.contains("unknown field `nmae`, expected one of"), "{e}");
}

#[test]
fn bad_yaml() {
    let yaml = "version: 1\ntools:\n  local: [\n";
    let e = errors("bad_yaml", yaml);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("error: tools.yaml:3:"), "{e:#?}");
}

#[test]
fn bad_state_type_and_ambiguous_state() {
    let yaml = "version: 1\nstate: [\"not a type!\", crate::a::Db, crate::b::Db]\n";
    let e = errors("bad_state", yaml);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].starts_with("error: tools.yaml:2:9: `not a type!` is not a Rust type"),
        "{e:#?}"
    );
    assert!(
        e[1].starts_with("error: tools.yaml:2:38: two state types end in `Db`"),
        "{e:#?}"
    );
}

#[test]
fn discover_folder_must_exist() {
    let yaml = "version: 1\ntools:\n  local:\n    - discover: src/nope\n";
    let e = one_error("discover_missing", yaml, "4:17");
    assert!(e.contains("`src/nope` does not exist"), "{e}");
}

#[test]
fn rust_parse_errors_name_the_file() {
    let yaml = "version: 1\ntools:\n  local:\n    - discover: true\n";
    let extra = [("src/broken.rs", "pub fn ok() {}\n\nfn broken( {\n")];
    let e = check("parse_error", yaml, &extra).unwrap_err();
    assert!(
        e.iter()
            .any(|m| m.starts_with("error: src/broken.rs:3:") && m.contains("cannot parse")),
        "{e:#?}"
    );
}

#[test]
fn every_error_is_reported_in_line_order() {
    let yaml = "\
version: 1
state: [crate::AppState]
tools:
  local:
    - fn: crate::tools::nope
    - fn: crate::tools::read_file
    - fn: crate::tools::read_file_v2
    - fn: crate::tools::with_db
      name: \"bad!\"
";
    let e = errors("all_errors", yaml);
    let positions: Vec<_> = e
        .iter()
        .map(|m| m.split(": ").nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        positions,
        [
            "tools.yaml:5:11",
            "tools.yaml:7:11",
            "tools.yaml:8:7",
            "tools.yaml:9:13"
        ],
        "{e:#?}"
    );
    insta::assert_snapshot!("all_errors", e.join("\n"));
}

#[test]
fn warnings_do_not_fail() {
    let yaml = "version: 1\nstate: [crate::AppState, crate::Unused]\ntools:\n  local:\n    - fn: crate::priv_mod::hidden\n    - discover: src/empty\npolicy:\n  tools:\n    nope: {timeout_ms: 5}\n    remote.tool: {timeout_ms: 5}\n";
    let extra = [
        (
            "src/priv_mod.rs",
            "#[tool]\nfn hidden(s: toolgate::State<AppState>) {}\n",
        ),
        ("src/empty/mod.rs", "pub fn nothing() {}\n"),
    ];
    let report = check("warnings", yaml, &extra).unwrap();
    let w: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 5, "{w:#?}");
    let has = |s: &str| w.iter().any(|m| m.contains(s));
    assert!(
        has("tools.yaml:5:7: tool `hidden` has no description"),
        "{w:#?}"
    );
    assert!(
        has("tools.yaml:2:26: no compiled tool takes `State<Unused>`"),
        "{w:#?}"
    );
    assert!(
        has("tools.yaml:5:7: tool function `crate::priv_mod::hidden` is private"),
        "{w:#?}"
    );
    assert!(
        has("tools.yaml:6:17: no #[tool] function found here"),
        "{w:#?}"
    );
    assert!(has("tools.yaml:9:5: policy for `nope`"), "{w:#?}");
}

#[test]
fn raw_identifiers_are_tools_without_the_prefix() {
    let extra = [(
        "src/kinds.rs",
        "/// The kind.\n#[toolgate::tool]\npub fn r#type() -> String { String::new() }\n",
    )];
    for path in ["crate::kinds::r#type", "crate::kinds::type"] {
        let yaml = format!("version: 1\ntools:\n  local:\n    - fn: {path}\n");
        let r = check("raw", &yaml, &extra).unwrap_or_else(|e| panic!("{path}: {e:#?}"));
        assert_eq!(r.tools[0].name, "type");
        assert_eq!(r.tools[0].ident, "type");
    }
}

#[test]
fn an_illegal_function_name_is_fixed_in_the_attribute() {
    let extra = [(
        "src/long.rs",
        "/// Long.\n#[toolgate::tool]\npub fn a_function_name_that_is_far_too_long_for_any_provider_to_accept_as_a_tool() {}\n",
    )];
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::long::a_function_name_that_is_far_too_long_for_any_provider_to_accept_as_a_tool\n";
    let e = check("long-fn", yaml, &extra).unwrap_err();
    assert!(e[0].contains("#[tool(name = "), "{e:#?}");
}

// ---- json_schema sources ---------------------------------------------------------------------

const DEFS: &str = r#"[
  {"name": "get_alerts", "description": "Alerts.",
   "parameters": {"type": "object", "properties": {"region": {"type": "string"}}}},
  {"name": "read_file", "description": "Clashes when mounted without prefix.",
   "parameters": {"type": "object", "properties": {}}}
]"#;

fn json_yaml(extra: &str) -> String {
    format!(
        "version: 1\ntools:\n  local:\n    - fn: crate::tools::read_file\n  json_schema:\n    \
         - {{id: alerts, file: defs.json, handler: crate::alerts::answer{extra}}}\n"
    )
}

#[test]
fn json_schema_sources_are_imported_and_filtered() {
    let report = check(
        "json_ok",
        &json_yaml(", deny: [read_*]"),
        &[("defs.json", DEFS)],
    )
    .unwrap();
    let [source] = &report.json_sources[..] else {
        panic!("{:?}", report.json_sources)
    };
    let names: Vec<String> = source.tools.iter().map(|t| source.full_name(t)).collect();
    assert_eq!(names, ["alerts.get_alerts"]);
    assert!(report.files.iter().any(|f| f.ends_with("defs.json")));
}

#[test]
fn json_schema_source_errors_name_the_line() {
    let e = errors("json_missing", &json_yaml(""));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].starts_with("error: tools.yaml:6:")
            && e[0].contains("cannot read")
            && e[0].contains("defs.json"),
        "{}",
        e[0]
    );
    // Unprefixed: `read_file` is taken by the compiled tool.
    let e = check(
        "json_clash",
        &json_yaml(", prefix: false"),
        &[("defs.json", DEFS)],
    )
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].contains("definition `read_file` (at /1 in `defs.json`): the tool name `read_file` is already taken by the compiled tool `read_file`"),
        "{}",
        e[0]
    );
    // A definition that does not import names its pointer in the file.
    let bad = r#"[{"name": "ok", "parameters": {"type": "object"}}, {"description": "no name"}]"#;
    let e = check("json_bad", &json_yaml(""), &[("defs.json", bad)]).unwrap_err();
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].contains("defs.json") && e[0].contains("/1"),
        "{}",
        e[0]
    );
    // A handler that is not a path.
    let yaml = json_yaml("").replace("crate::alerts::answer", "not a path!");
    let e = check("json_handler", &yaml, &[("defs.json", DEFS)]).unwrap_err();
    assert!(
        e.iter()
            .any(|m| m.contains("`not a path!` is not a Rust path")),
        "{e:#?}"
    );
}

#[test]
fn json_schema_sources_refuse_schemas_that_cannot_validate() {
    for (name, schema, says) in [
        (
            "json_type",
            r#"{"type": "object", "properties": {"x": {"type": "strnig"}}}"#,
            "is not valid JSON Schema",
        ),
        (
            "json_regex",
            r#"{"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}"#,
            "is not valid JSON Schema",
        ),
        (
            "json_required",
            r#"{"type": "object", "properties": {"x": {"type": "string"}}, "required": "x"}"#,
            "is not valid JSON Schema",
        ),
    ] {
        let defs = format!(r#"[{{"name": "t", "description": "d", "parameters": {schema}}}]"#);
        let e = check(name, &json_yaml(""), &[("defs.json", &defs)]).unwrap_err();
        assert_eq!(e.len(), 1, "{name}: {e:#?}");
        assert!(
            e[0].starts_with("error: tools.yaml:6:")
                && e[0].contains("definition `t`")
                && e[0].contains(says),
            "{name}: {}",
            e[0]
        );
    }
}

#[test]
fn json_schema_names_are_unique_as_exported() {
    // A compiled tool named `alerts__get_alerts` is the same name to a model as
    // `alerts.get_alerts`.
    let tools = "use toolgate::tool;\n/// Clash.\n#[tool(name = \"alerts__get_alerts\")]\npub fn clash() {}\n";
    let yaml = "version: 1\ntools:\n  local:\n    - fn: crate::tools::clash\n  json_schema:\n    \
                - {id: alerts, file: defs.json, handler: crate::alerts::answer}\n";
    let e = check(
        "json_exported_clash",
        yaml,
        &[("defs.json", DEFS), ("src/tools.rs", tools)],
    )
    .unwrap_err();
    assert!(
        e.iter().any(|m| m.contains(
            "(at /0 in `defs.json`): the tool name `alerts.get_alerts` (exported as `alerts__get_alerts`) is already taken by the compiled tool `alerts__get_alerts`"
        )),
        "{e:#?}"
    );
}

#[test]
fn json_schema_import_notes_are_warnings() {
    let defs = r#"[{"name": "get.alerts", "description": "d", "parameters": {"type": "object"}},
                   {"name": "get_alerts", "description": "other", "parameters": {"type": "object"}}]"#;
    let report = check("json_notes", &json_yaml(""), &[("defs.json", defs)]).unwrap();
    let w: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter()
            .any(|m| m.contains("definition `get.alerts` (imported as `get_alerts`)")),
        "{w:#?}"
    );
    assert!(
        w.iter()
            .any(|m| m.contains("definition `get_alerts` (imported as `get_alerts_2`)")),
        "{w:#?}"
    );
}

#[test]
fn json_schema_warnings_are_about_what_is_compiled_in() {
    let defs = r#"[{"name": "get.alerts", "description": "d", "parameters": {"type": "object"}},
                   {"name": "set.alerts", "description": "d", "parameters": {"type": "object"}}]"#;
    let report = check(
        "json_filtered_notes",
        &json_yaml(r#", allow: ["get*", "nothing_*"]"#),
        &[("defs.json", defs)],
    )
    .unwrap();
    let w: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter().any(|m| m.contains("definition `get.alerts`")),
        "{w:#?}"
    );
    assert!(!w.iter().any(|m| m.contains("set.alerts")), "{w:#?}");
    assert!(
        w.iter()
            .any(|m| m.contains("`allow` pattern `nothing_*` matches no definition")),
        "{w:#?}"
    );
}
