//! Pins what the example offers a model: its tool names and every tool's MCP definition
//! (`tools/list`), as exported from the real generated toolset.
//!
//! After an intended change of a tool, its doc comments or tools.yaml, review the snapshots with
//! `cargo insta review` (or `INSTA_UPDATE=always`) and commit them.

use toolgate::Dialect;

#[test]
fn exported_tool_names() {
    let tools = weather_agent::build_toolset().unwrap();
    let names: Vec<String> = tools.tools().iter().map(|d| d.name.clone()).collect();
    insta::assert_json_snapshot!("tool_names", names);
}

#[test]
fn exported_mcp_definitions() {
    let tools = weather_agent::build_toolset().unwrap();
    let mcp = tools.export(Dialect::Mcp).unwrap();
    insta::assert_json_snapshot!("mcp_tools", mcp);
}

/// Every tool of the example, in every dialect, obeys the rules of that dialect as the
/// providers publish them (`toolgate::model::dialect::check`, each rule with its source), and
/// every change a dialect made is an export note (`strict: false` never comes without one).
#[test]
fn every_dialect_obeys_its_published_rules() {
    let tools = weather_agent::build_toolset().unwrap();
    for dialect in Dialect::ALL {
        for d in tools.tools() {
            let (def, notes) = d.export_with_notes(dialect).unwrap();
            let violations = toolgate::model::dialect::check::check(dialect, &def);
            assert!(
                violations.is_empty(),
                "{dialect} {}: {violations:?}\n{def:#}",
                d.name
            );
            if dialect == Dialect::OpenAiStrict && def["strict"] == false {
                assert!(
                    !notes.is_empty(),
                    "{}: strict: false without a note",
                    d.name
                );
            }
        }
    }
    // The strict export of the example is strict for every tool.
    let strict = tools.export(Dialect::OpenAiStrict).unwrap();
    assert!(
        strict.iter().all(|def| def["strict"] == true),
        "{strict:#?}"
    );
}
