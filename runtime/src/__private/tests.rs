use super::*;
use serde_json::json;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Args {
    query: String,
    filter: Option<Filter>,
}
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Filter {
    year: u16,
}

#[test]
fn decode_errors_name_the_pointer() {
    let e = decode_args::<Args>("t", json!({"query": "q", "filter": {"year": "x"}})).unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/filter/year");
    let e = decode_args::<Args>("t", json!({"filter": null})).unwrap_err();
    assert_eq!(e.argument_errors()[0].pointer, "/query", "{e}");
    let e = decode_args::<Args>("t", json!({"query": "q", "extra": 1})).unwrap_err();
    assert!(e.message().contains("unknown field `extra`"), "{e}");
    let e = decode_args::<Args>("t", json!([1])).unwrap_err();
    assert!(e.message().contains("must be a JSON object"), "{e}");
}

#[test]
fn output_schema_wraps_non_objects() {
    let (s, wrapped) = output_schema_of::<i64>();
    assert!(wrapped);
    assert_eq!(s["type"], "object");
    assert_eq!(s["properties"]["result"]["type"], "integer");
    let (s, wrapped) = output_schema_of::<Vec<Filter>>();
    assert!(wrapped);
    assert!(s["$defs"]["Filter"].is_object(), "{s}");
}

#[test]
#[allow(clippy::needless_borrow)] // the borrows choose the conversion (autoref specialization)
fn conversions_pick_the_most_specific() {
    let conv = (&&&&OutTag::<String>::new()).to_output();
    assert_eq!(conv("hi".into(), None), ToolOutput::text("hi"));
    assert!((&&&&OutTag::<String>::new()).output_schema().is_none());
    let conv = (&&&&OutTag::<Vec<u8>>::new()).to_output();
    assert_eq!(
        conv(vec![1], Some(true)).structured,
        Some(json!({"result": [1]}))
    );
    assert!((&&&&OutTag::<Vec<u8>>::new()).output_schema().is_some());
    struct NoSchema;
    impl serde::Serialize for NoSchema {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_u8(7)
        }
    }
    assert!((&&&&OutTag::<NoSchema>::new()).output_schema().is_none());
    let conv = (&&&&OutTag::<NoSchema>::new()).to_output();
    assert_eq!(conv(NoSchema, None).structured, Some(json!({"result": 7})));
    let e = (&&&ErrTag::<std::io::Error>::new()).to_tool_error()(std::io::Error::other("x"));
    assert_eq!(e.kind(), crate::ErrorKind::Upstream);
    let e = (&&&ErrTag::<ToolError>::new()).to_tool_error()(ToolError::not_found("z"));
    assert_eq!(e.kind(), crate::ErrorKind::NotFound);
}
