//! `$ref` inlining is bounded ([`super::refs::MAX_INLINED_VALUES`]): a chain of definitions each
//! using the next one twice must not produce an exponentially large export.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::cases::params;
use super::rules::all_refs_resolve;
use super::*;

/// `S0..S{levels-1}`, each with two properties `$ref`-ing the next one (a DAG, no cycle).
pub(crate) fn doubling_defs(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = if i + 1 == levels {
            json!({"type": "string"})
        } else {
            json!({"$ref": format!("#/$defs/S{}", i + 1)})
        };
        defs.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": next, "b": next}}),
        );
    }
    json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/S0"}},
        "$defs": defs,
    })
}

#[test]
fn doubling_refs_do_not_explode() {
    let input = doubling_defs(20);
    let view = ToolSchema {
        name: "deep",
        description: "d",
        input_schema: &input,
        output_schema: None,
        annotations: None,
    };
    let start = Instant::now();
    for d in Dialect::ALL {
        match export(d, &view) {
            Ok(def) => {
                assert_ne!(d, Dialect::Gemini, "Gemini has no `$ref`: {def}");
                let text = def.to_string();
                assert!(text.len() < 100_000, "{d}: {} bytes", text.len());
                assert!(text.contains("$defs"), "{d} keeps the definitions: {text}");
                assert!(all_refs_resolve(&params(d, &def)), "{d}: {def}");
                assert!(
                    check::check(d, &def).is_empty(),
                    "{d}: {:?}",
                    check::check(d, &def)
                );
            }
            Err(e) => {
                assert_eq!(d, Dialect::Gemini, "{d}: {e}");
                assert_eq!(e.tool, "deep");
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

#[test]
fn small_dags_are_still_inlined() {
    let input = doubling_defs(5);
    let view = ToolSchema {
        name: "small",
        description: "d",
        input_schema: &input,
        output_schema: None,
        annotations: None,
    };
    for d in Dialect::ALL {
        let def = export(d, &view).unwrap();
        assert!(!def.to_string().contains("$ref"), "{d}: {def}");
    }
}
