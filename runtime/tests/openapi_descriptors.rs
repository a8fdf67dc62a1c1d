//! An `OpenApiSource` holds its schemas compactly and makes descriptors when asked: on the two
//! big vendored documents (GitHub, Stripe: shared components, loosened output schemas), every
//! tool's descriptor and operation are what the conversion gave, and every export is unchanged.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use toolgate_model::dialect::{Dialect, ToolSchema, export};
use toolgate_model::openapi::{Conversion, ConvertOptions, Document, convert};
use toolgate_runtime::{OpenApiSource, ToolSource};

fn conversion(path: &str) -> Conversion {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = Document::from_file(root.join(path)).expect("the document reads");
    convert(&doc, &ConvertOptions::default()).expect("it converts")
}

fn check(id: &str, path: &str) {
    let conversion = conversion(path);
    let source = OpenApiSource::builder(id, conversion.clone())
        .build()
        .expect("the source builds");
    let tools = source.tools();
    assert_eq!(tools.len(), conversion.tools.len());
    for (op, t) in conversion.tools.iter().zip(&tools) {
        let d = &t.descriptor;
        let name = format!("{id}.{}", op.name);
        assert_eq!(d.name, name);
        assert!(d.input_schema == op.input_schema, "{name}: input schema");
        assert!(d.output_schema == op.output_schema, "{name}: output schema");
        // Key order too: exports and `tools/list` bodies are written from these values.
        assert_eq!(d.input_schema.to_string(), op.input_schema.to_string());
        let held = source.descriptor(&name).expect("found by name");
        assert!(
            Arc::ptr_eq(&held, d),
            "{name}: the descriptor in use is reused"
        );
        assert!(
            source.operation(&name).as_ref() == Some(op),
            "{name}: operation"
        );
        let view = ToolSchema {
            name: &name,
            description: &d.description,
            input_schema: &op.input_schema,
            output_schema: op.output_schema.as_ref(),
            annotations: Some(serde_json::to_value(&d.annotations).unwrap()),
        };
        for dialect in Dialect::ALL {
            let ours = d.export(dialect).ok();
            let theirs: Option<Value> = export(dialect, &view).ok();
            assert!(ours == theirs, "{name}: {} export", dialect.as_str());
        }
    }
    drop(tools);
    // Nothing holds them now: made again, equal.
    let again = source.tools();
    for (op, t) in conversion.tools.iter().zip(&again) {
        let d = &t.descriptor;
        assert!(d.input_schema == op.input_schema && d.output_schema == op.output_schema);
    }
    assert_eq!(again.len(), conversion.tools.len());
}

#[test]
fn github_tools_are_described_as_converted() {
    check(
        "github",
        "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json",
    );
}

#[test]
fn stripe_tools_are_described_as_converted() {
    check("stripe", "tests/specs/stripe/stripe-spec3-2023-09-12.yaml");
}

/// A hook is handed the whole operation, schemas and `$defs` included.
#[tokio::test]
async fn hooks_see_the_operation_with_its_schemas() {
    use std::sync::Mutex;
    use toolgate_model::openapi::Operation;
    use toolgate_runtime::{OpenApiHook, ToolContext, ToolError};

    struct Record(Mutex<Vec<Operation>>);
    impl OpenApiHook for Record {
        fn request(
            &self,
            op: &Operation,
            _: &mut toolgate_runtime::openapi::reqwest::Request,
            _: &ToolContext,
        ) -> Result<(), ToolError> {
            self.0.lock().unwrap().push(op.clone());
            Err(ToolError::internal("stopped by the test before sending"))
        }
    }
    let doc = Document::from_text(
        r##"
openapi: 3.1.0
info: {title: Pets, version: "1"}
servers: [{url: "http://127.0.0.1:9/"}]
paths:
  /pets:
    post:
      operationId: add
      requestBody:
        content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}}
components:
  schemas:
    Pet: {type: object, properties: {name: {type: string}, owner: {$ref: "#/components/schemas/Owner"}}}
    Owner: {type: object, properties: {id: {type: integer}}}
"##,
        "pets.yaml",
    )
    .unwrap();
    let conversion = convert(&doc, &ConvertOptions::default()).unwrap();
    let hook = Arc::new(Record(Mutex::new(Vec::new())));
    let source = OpenApiSource::builder("pets", conversion.clone())
        .hook(hook.clone())
        .build()
        .unwrap();
    let e = source
        .call_named(
            "pets.add",
            serde_json::json!({"name": "rex"}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert!(e.message().contains("stopped by the test"), "{e}");
    let seen = hook.0.lock().unwrap();
    assert_eq!(seen.as_slice(), &conversion.tools[..]);
    assert!(seen[0].input_schema["$defs"]["Owner"].is_object());
}
