//! Reviewer findings: exponential `$ref` inlining.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::*;

/// Component schemas `S0..S{levels-1}`, each with two properties `$ref`-ing the next one.
fn doubling_document(levels: usize) -> String {
    let mut doc = String::from(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /deep:\n    post:\n      operationId: deep\n      requestBody:\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/S0'}\n      responses:\n        '200': {description: ok}\ncomponents:\n  schemas:\n",
    );
    for i in 0..levels {
        let next = if i + 1 == levels {
            "{type: string}".to_string()
        } else {
            format!("{{$ref: '#/components/schemas/S{}'}}", i + 1)
        };
        writeln!(
            doc,
            "    S{i}:\n      type: object\n      properties:\n        a: {next}\n        b: {next}"
        )
        .unwrap();
    }
    doc
}

#[test]
fn doubling_refs_convert_and_export_quickly() {
    let start = Instant::now();
    let c = conv(&doubling_document(20));
    let t = tool(&c, "deep");
    let view = ToolSchema {
        name: &t.name,
        description: &t.description,
        input_schema: &t.input_schema,
        output_schema: t.output_schema.as_ref(),
        annotations: None,
    };
    // The dialects `check_exports` (codegen, runtime) checks keep `$defs`; Gemini refuses.
    for d in Dialect::ALL {
        match export(d, &view) {
            Ok(def) => assert!(check(d, &def).is_empty(), "{d}: {:?}", check(d, &def)),
            Err(e) => {
                assert_eq!(d, Dialect::Gemini, "{e}");
                assert!(
                    e.message.contains("too large once `$ref`s are inlined"),
                    "{e}"
                );
            }
        }
    }
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

/// YAML 1.2 booleans only (OpenAPI 3.1 requires YAML 1.2): `n`, `y`, `on`, `NO` are strings.
#[test]
fn yaml_1_1_booleans_stay_strings() {
    let doc = crate::openapi::Document::from_text(
        r"
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /countries:
    get:
      operationId: countries
      parameters:
        - {name: n, in: query, schema: {type: string, enum: [NO, SE, DK, on, y]}}
      responses: {'200': {description: ok}}
",
        "yaml11.yaml",
    )
    .unwrap();
    let conv = crate::openapi::convert(&doc, &crate::openapi::ConvertOptions::default()).unwrap();
    let n = &conv.tools[0].input_schema["properties"]["n"];
    assert_eq!(
        n["enum"],
        serde_json::json!(["NO", "SE", "DK", "on", "y"]),
        "{n}"
    );
    assert_eq!(conv.tools[0].parameters[0].name, "n");
}
