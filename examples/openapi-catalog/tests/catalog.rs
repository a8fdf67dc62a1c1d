//! The acceptance test of OpenAPI sources: every document under tests/specs/ builds into one
//! toolset, and every operation of each document is accounted for: a tool, an operation left
//! out by `include` / `exclude`, or a skip with its reason; and the toolset, `toolgate check`'s
//! report (`toolgate_codegen::check`) and the documents agree.

use std::collections::BTreeMap;
use std::path::Path;

use toolgate::model::openapi::Document;

const METHODS: [&str; 9] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace", "query",
];

/// Operations of the document (every path × method), counted here from the raw document.
fn operations_in(doc: &Document) -> usize {
    doc.root
        .get("paths")
        .and_then(|p| p.as_object())
        .map(|paths| {
            paths
                .values()
                .filter_map(|item| item.as_object())
                .map(|item| {
                    item.keys()
                        .filter(|k| METHODS.contains(&k.as_str()))
                        .count()
                })
                .sum()
        })
        .unwrap_or(0)
}

fn report() -> toolgate_codegen::Report {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.yaml");
    toolgate_codegen::check(&config).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_operation_is_a_tool_or_an_explained_skip() {
    let report = report();
    assert_eq!(
        report.openapi_sources.len(),
        report.config.tools.openapi.len(),
        "every entry is compiled in"
    );
    for s in &report.openapi_sources {
        let c = &s.conversion;
        let doc = Document::from_file(&s.document).unwrap();
        let operations = operations_in(&doc);
        assert_eq!(c.operations, operations, "`{}`: operations counted", s.id);
        assert_eq!(
            c.tools.len() + c.skipped.len() + c.excluded,
            operations,
            "`{}`: {} tool(s) + {} skipped + {} excluded",
            s.id,
            c.tools.len(),
            c.skipped.len(),
            c.excluded
        );
        for skipped in &c.skipped {
            assert!(
                !skipped.reason.code.is_empty() && !skipped.reason.message.is_empty(),
                "`{}`: {skipped:?} has no reason",
                s.id
            );
        }
    }
    let counts: BTreeMap<&str, usize> = report
        .openapi_sources
        .iter()
        .map(|s| (s.id.as_str(), s.conversion.operations))
        .collect();
    assert_eq!(counts["github"], 1223);
    assert_eq!(counts["stripe"], 468);
    assert_eq!(counts["petstore"], 19);
}

#[test]
fn the_toolset_has_every_tool_of_the_report() {
    let report = report();
    let tools = openapi_catalog::toolset::toolset()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
    for d in tools.tools() {
        *by_source.entry(d.source.clone()).or_default() += 1;
    }
    for s in &report.openapi_sources {
        assert_eq!(
            by_source.get(&s.id).copied().unwrap_or(0),
            s.conversion.tools.len(),
            "`{}`: tools in the toolset vs the check report",
            s.id
        );
        for op in &s.conversion.tools {
            let name = s.full_name(op);
            assert!(tools.describe(&name).is_some(), "`{name}` is missing");
        }
    }
}

#[test]
fn typed_arguments_serialize_to_the_wire_names() {
    let args = openapi_catalog::toolset::petstore::FindPetsByStatusArgs {
        status: Some("available".to_string()),
    };
    let value = serde_json::to_value(args).unwrap();
    assert_eq!(value, serde_json::json!({"status": "available"}));
    let empty = openapi_catalog::toolset::petstore::FindPetsByStatusArgs::default();
    assert_eq!(serde_json::to_value(empty).unwrap(), serde_json::json!({}));
}

/// One HTTP/1.1 exchange on 127.0.0.1: answers `body` as JSON and hands back the request head.
fn serve_once(body: &'static str) -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        head
    });
    (port, handle)
}

#[tokio::test]
async fn a_typed_call_goes_through_the_compiled_source_and_its_hook() {
    let (port, request) = serve_once(r#"{"id": 10, "name": "doggie", "photoUrls": []}"#);
    // SAFETY: the only test of this binary that reads the variable; set before the toolset.
    unsafe { std::env::set_var("CATALOG_PETSTORE_URL", format!("http://127.0.0.1:{port}")) };
    let tools = openapi_catalog::toolset::toolset().build().unwrap();
    let args = openapi_catalog::toolset::petstore::GetPetByIdArgs { pet_id: 10 };
    let out = openapi_catalog::toolset::petstore::get_pet_by_id(&tools, args)
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(serde_json::json!({"id": 10, "name": "doggie", "photoUrls": []}))
    );
    let head = request.join().unwrap().to_ascii_lowercase();
    assert!(head.starts_with("get /pet/10 http/1.1\r\n"), "{head}");
    assert!(
        head.contains("x-catalog-operation: getpetbyid\r\n"),
        "the hook's header: {head}"
    );
}
