//! Pins the dispatch code generated for the example project, `examples/weather-agent`
//! (acceptance 4 of issue 2): the code that `build.rs` writes into `OUT_DIR` there.
//!
//! After an intended change of the generator or of the example's tools.yaml, review the new
//! snapshot with `cargo insta review` (or `INSTA_UPDATE=always`) and commit it.

use std::path::{Path, PathBuf};

use toolgate_codegen::Builder;

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/weather-agent")
}

#[test]
fn weather_agent_dispatch_code() {
    let generated = Builder::new("tools.yaml")
        .manifest_dir(example_dir())
        .render()
        .unwrap_or_else(|e| panic!("{e}"));
    let code = generated.code();
    if let Err(e) = syn::parse_file(code) {
        panic!("generated code does not parse: {e}\n{code}");
    }
    insta::assert_snapshot!("weather_agent", code);
}

#[test]
fn weather_agent_report() {
    let generated = Builder::new("tools.yaml")
        .manifest_dir(example_dir())
        .render()
        .unwrap_or_else(|e| panic!("{e}"));
    let report = generated.report();
    let tools: Vec<_> = report
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.function.as_str(), t.timeout_ms))
        .collect();
    assert_eq!(
        tools,
        [
            ("forecast", "crate::tools::forecast", None),
            (
                "convert_temperature",
                "crate::tools::convert_temperature",
                None
            ),
            ("plan_trip", "crate::tools::plan_trip", Some(5000)),
            ("save_note", "crate::tools::save_note", None),
            ("list_notes", "crate::tools::list_notes", None),
            ("slow_report", "crate::tools::slow_report", None),
        ]
    );
    let states: Vec<_> = report
        .states
        .iter()
        .map(|s| (s.ty.as_str(), s.tools.clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("crate::tools::Stations", vec!["forecast".to_string()]),
            (
                "crate::tools::Notebook",
                vec!["save_note".to_string(), "list_notes".to_string()]
            ),
        ]
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let root = example_dir();
    for f in ["tools.yaml", "src/tools.rs"] {
        assert!(
            generated.rerun_if_changed().contains(&root.join(f)),
            "{f}: {:?}",
            generated.rerun_if_changed()
        );
    }
}
