//! Tests of the OpenAPI conversion: the rules with small inline documents (names,
//! `allOf` merging, normalisation, bodies, servers), and every real document of `tests/specs/`.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::*;
use crate::dialect::{Dialect, ToolSchema, check::check, export};

mod qa;
mod real;
mod review;
mod rules;
mod xml;

fn conv(text: &str) -> Conversion {
    convert(
        &Document::from_text(text, "t.yaml").unwrap(),
        &ConvertOptions::default(),
    )
    .unwrap()
}

fn tool<'a>(c: &'a Conversion, name: &str) -> &'a Operation {
    c.tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}: {c:#?}"))
}

/// Every dialect accepts the tool (Gemini may refuse recursive schemas).
pub(super) fn assert_exportable(t: &Operation) {
    let view = ToolSchema {
        name: &t.name,
        description: &t.description,
        input_schema: &t.input_schema,
        output_schema: t.output_schema.as_ref(),
        annotations: None,
    };
    for d in Dialect::ALL {
        match export(d, &view) {
            Ok(def) => {
                let v = check(d, &def);
                assert!(
                    v.is_empty(),
                    "{} as {d}: {:?}\n{}",
                    t.name,
                    v.first(),
                    t.input_schema
                );
            }
            Err(e) if d == Dialect::Gemini && e.message.contains("ecursive") => {}
            Err(e) => panic!("{} as {d}: {e}\n{}", t.name, t.input_schema),
        }
    }
}

#[test]
fn c09_missing_operation_id() {
    let doc = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /accounts/{accountId}/transactions:
    get:
      parameters:
        - {name: accountId, in: path, required: true, schema: {type: string}}
      responses: {'200': {description: ok}}
"#;
    let c = conv(doc);
    assert_eq!(c.tools[0].name, "get_accounts_by_account_id_transactions");
    let w = &c.warnings[0];
    assert_eq!(w.code, "W_NO_OPERATION_ID");
    assert!(
        w.message
            .starts_with("GET /accounts/{accountId}/transactions"),
        "{w:?}"
    );
    assert_eq!(
        w.pointer,
        "#/paths/~1accounts~1{accountId}~1transactions/get"
    );
    let mut o = ConvertOptions::default();
    o.names.insert(
        "GET /accounts/{accountId}/transactions".into(),
        "list_transactions".into(),
    );
    let c = convert(&Document::from_text(doc, "t").unwrap(), &o).unwrap();
    assert_eq!(c.tools[0].name, "list_transactions");
    // Two derived names that collide: an error naming both.
    let clash = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /a-b: {get: {responses: {'200': {description: ok}}}}
  /a_b: {get: {responses: {'200': {description: ok}}}}
"#;
    let e = convert(
        &Document::from_text(clash, "t").unwrap(),
        &ConvertOptions::default(),
    )
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("GET /a-b") && m.contains("GET /a_b") && m.contains("names:"),
        "{m}"
    );
    // An invalid hand-chosen name is an error.
    let mut o = ConvertOptions::default();
    o.names.insert("GET /a-b".into(), "a b".into());
    assert!(matches!(
        convert(&Document::from_text(clash, "t").unwrap(), &o),
        Err(OpenApiError::Names { .. })
    ));
}

#[test]
fn c10_long_and_illegal_names() {
    let id = "UserAdministrationController_updateUserPermissionGroupAssignmentsForTenant";
    let doc = format!(
        "openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\npaths:\n  /x:\n    get: {{operationId: {id}, responses: {{'200': {{description: ok}}}}}}\n  /y:\n    get: {{operationId: admin.tools list, responses: {{'200': {{description: ok}}}}}}\n"
    );
    let c = conv(&doc);
    let hash = format!("{:08x}", names::fnv1a32(id));
    assert_eq!(
        c.tools[0].name,
        format!("UserAdministrationController_updateUserPermissionGroupA_{hash}")
    );
    assert_eq!(c.tools[0].name.len(), 64);
    assert!(c.warnings.iter().any(|w| w.code == "W_NAME_SHORTENED"));
    assert_eq!(c.tools[1].name, "admin_tools_list");
    // FNV-1a 32 reference values.
    assert_eq!(names::fnv1a32(""), 0x811c_9dc5);
    assert_eq!(names::fnv1a32("a"), 0xe40c_292c);
    let o = ConvertOptions {
        max_name_len: 40,
        ..ConvertOptions::default()
    };
    let c = convert(&Document::from_text(&doc, "t").unwrap(), &o).unwrap();
    assert_eq!(c.tools[0].name.len(), 40);
}

const ALL_OF_MERGE: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  schemas:
    Base:  {type: object, required: [name], properties: {name: {type: string}}}
    Draft:
      allOf:
        - $ref: '#/components/schemas/Base'
        - type: object
          required: [budget]
          properties: {budget: {type: integer, minimum: 0}}
    Broken:
      allOf: [{type: string}, {type: object}]
paths:
  /drafts:
    post:
      operationId: create_draft
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Draft'}}}
      responses: {'201': {description: created}}
  /broken:
    post:
      operationId: broken
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/Broken'}}}
      responses: {'201': {description: created}}
"#;

#[test]
fn c13_all_of_merged() {
    let c = conv(ALL_OF_MERGE);
    let t = tool(&c, "create_draft");
    assert_eq!(
        t.input_schema,
        json!({"type": "object",
            "properties": {"name": {"type": "string"}, "budget": {"type": "integer", "minimum": 0}},
            "required": ["name", "budget"], "additionalProperties": false})
    );
    assert_eq!(c.skipped.len(), 1);
    let r = &c.skipped[0].reason;
    assert_eq!(
        format!("{} {} {}", r.code, r.pointer, r.message),
        "E_UNSATISFIABLE_SCHEMA #/components/schemas/Broken allOf cannot be satisfied (string ∧ object)"
    );
    assert_exportable(t);
}

#[test]
fn c14_nullable_and_type_arrays_agree() {
    let make = |v: &str, level: &str| {
        format!(
            "openapi: {v}\ninfo: {{title: t, version: '1'}}\npaths:\n  /l:\n    post:\n      operationId: l\n      requestBody:\n        content:\n          application/json:\n            schema:\n              type: object\n              properties:\n                level: {level}\n                old: {{type: integer, nullable: false, minimum: 1, exclusiveMinimum: true, xml: {{name: o}}, x-foo: 1}}\n      responses: {{'200': {{description: ok}}}}\n"
        )
    };
    let a = conv(&make(
        "3.0.3",
        "{type: string, nullable: true, enum: [low, high], example: low, readOnly: false}",
    ));
    let b = conv(&make(
        "3.1.0",
        "{type: [string, 'null'], enum: [low, high, null], examples: [low]}",
    ));
    let la = &a.tools[0].input_schema["properties"]["level"];
    assert_eq!(
        la,
        &json!({"type": ["string", "null"], "enum": ["low", "high", null], "examples": ["low"]})
    );
    assert_eq!(la, &b.tools[0].input_schema["properties"]["level"]);
    assert_eq!(
        a.tools[0].input_schema["properties"]["old"],
        json!({"type": "integer", "exclusiveMinimum": 1})
    );
    let v = jsonschema::validator_for(&a.tools[0].input_schema).unwrap();
    assert!(v.is_valid(&json!({"level": null})) && v.is_valid(&json!({"level": "low"})));
    assert!(!v.is_valid(&json!({"level": "mid"})));
}

#[test]
fn c15_form_body_and_cookie() {
    let c = conv(
        r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /oauth/token:
    post:
      operationId: issue_token
      parameters:
        - {name: session, in: cookie, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [grant_type]
              properties:
                grant_type: {type: string}
                scope: {type: array, items: {type: string}}
      responses: {'200': {description: ok}}
  /upload:
    post:
      operationId: upload
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties: {file: {type: string, format: binary}, note: {type: string}}
      responses: {'200': {description: ok}}
  /proto:
    post:
      operationId: protobuf_only
      requestBody: {content: {application/x-protobuf: {schema: {type: object}}}}
      responses: {'200': {description: ok}}
"#,
    );
    let t = tool(&c, "issue_token");
    let b = t.body.as_ref().unwrap();
    assert_eq!(b.encoding, BodyEncoding::Form);
    assert!(matches!(&b.layout, BodyLayout::Flattened { fields } if fields.len() == 2));
    assert_eq!(t.input_schema["required"], json!(["grant_type"]));
    assert_eq!(t.parameters[0].location, ParamLocation::Cookie);
    assert_eq!(t.parameters[0].style, ParamStyle::Form);
    let u = tool(&c, "upload");
    assert_eq!(
        u.body.as_ref().unwrap().file_fields,
        vec!["file".to_string()]
    );
    assert_eq!(
        u.input_schema["properties"]["file"]["contentEncoding"],
        "base64"
    );
    assert_eq!(c.skipped[0].reason.code, "W_UNSUPPORTED_MEDIA_TYPE");
    assert_eq!(
        c.skipped[0].reason.pointer,
        "#/paths/~1proto/post/requestBody"
    );
}

#[test]
fn c17_server_variables() {
    let c = conv(
        r#"
openapi: 3.0.3
info: {title: t, version: "1"}
servers:
  - url: https://{region}.api.example.com/{basePath}
    variables:
      region:   {default: eu, enum: [eu, us]}
      basePath: {default: v2}
paths: {}
"#,
    );
    let s = &c.servers[0];
    let mut v = BTreeMap::new();
    assert_eq!(s.resolve(&v).unwrap(), "https://eu.api.example.com/v2");
    v.insert("region".to_string(), "us".to_string());
    assert_eq!(s.resolve(&v).unwrap(), "https://us.api.example.com/v2");
    v.insert("region".to_string(), "ap".to_string());
    assert_eq!(
        s.resolve(&v).unwrap_err(),
        "server variable 'region' must be one of [eu, us]"
    );
    let mut v = BTreeMap::new();
    v.insert("zone".to_string(), "x".to_string());
    assert!(
        s.resolve(&v)
            .unwrap_err()
            .contains("unknown server variable 'zone'")
    );
    let bad = Server {
        url: "https://{x}.e".into(),
        description: None,
        variables: BTreeMap::new(),
    };
    assert!(bad.resolve(&BTreeMap::new()).is_err());
    assert_eq!(
        conv("openapi: 3.1.0\ninfo: {title: t, version: '1'}\n").servers[0].url,
        "/"
    );
}

#[test]
fn arguments_collisions_refs_security_adapters() {
    let doc = r#"
openapi: 3.1.0
info: {title: t, version: "1"}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-API-Key}
  parameters:
    Id: {$ref: '#/components/parameters/Id2'}
    Id2: {name: id, in: query, schema: {type: integer}}
  schemas:
    Node:
      type: object
      properties:
        id: {type: string, readOnly: true}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
security: [{key: []}]
paths:
  /items/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
    post:
      operationId: put_item
      parameters:
        - $ref: '#/components/parameters/Id'
        - {name: X-API-Key, in: header, schema: {type: string}}
        - {name: Accept, in: header, schema: {type: string}}
        - {name: a b, in: query, schema: {type: string}}
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: array, items: {type: string}}}}}
  /missing:
    get:
      operationId: missing
      parameters: [{$ref: '#/components/parameters/Nope'}]
      responses: {'200': {description: ok}}
  /ext:
    get:
      operationId: ext
      responses: {'200': {description: ok}}
      parameters: [{name: q, in: query, schema: {$ref: 'other.yaml#/Q'}}]
"#;
    let c = conv(doc);
    let t = tool(&c, "put_item");
    let args: Vec<&str> = t.parameters.iter().map(|p| p.arg.as_str()).collect();
    assert_eq!(args, ["path_id", "query_id", "a_b"]);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.code == "W_CREDENTIAL_PARAMETER")
    );
    // The recursive body cannot be flattened past `children`'s `$ref`, but it is an object.
    assert!(matches!(
        &t.body.as_ref().unwrap().layout,
        BodyLayout::Flattened { .. }
    ));
    assert!(
        t.input_schema["properties"].get("id").is_none(),
        "readOnly left out"
    );
    assert_eq!(
        t.input_schema["$defs"]["Node"]["properties"]["children"]["items"]["$ref"],
        "#/$defs/Node"
    );
    assert!(t.output_wrapped);
    assert_eq!(
        t.security,
        vec![BTreeMap::from([("key".to_string(), vec![])])]
    );
    assert_exportable(t);
    let codes: Vec<&str> = c.skipped.iter().map(|s| s.reason.code.as_str()).collect();
    assert_eq!(codes, ["E_UNRESOLVED_REF", "W_EXTERNAL_REF"]);
    assert_eq!(
        c.skipped[0].reason.pointer,
        "#/paths/~1missing/get/parameters/0"
    );

    let adapters: Vec<Adapter> = serde_json::from_value(json!([
        {"tools": ["put_*"], "arguments": {"query_id": {"value": "7"}, "a_b": {"rename": "ab"},
          "path_id": {"drop": true}, "nope": {"default": 1}}},
    ]))
    .unwrap();
    let o = ConvertOptions {
        adapters,
        ..ConvertOptions::default()
    };
    let c = convert(&Document::from_text(doc, "t").unwrap(), &o).unwrap();
    let t = tool(&c, "put_item");
    let props = t.input_schema["properties"].as_object().unwrap();
    assert!(
        !props.contains_key("query_id")
            && props.contains_key("ab")
            && props.contains_key("path_id")
    );
    assert_eq!(t.fills[0].from, FillFrom::Value("7".into()));
    assert!(
        t.parameters
            .iter()
            .any(|p| p.arg == "ab" && p.name == "a b")
    );
    let adapter_warnings = c.warnings.iter().filter(|w| w.code == "W_ADAPTER").count();
    assert_eq!(adapter_warnings, 2, "{:#?}", c.warnings);
}

#[test]
fn filters_versions_and_bundling() {
    let doc = r#"
openapi: 3.2.0
info: {title: t, version: "1"}
paths:
  /pets/{id}:
    get: {operationId: a, tags: [pets], responses: {'200': {description: ok}}}
    query: {operationId: q, responses: {'200': {description: ok}}}
  /admin/x/y:
    get: {operationId: b, responses: {'200': {description: ok}}}
"#;
    let mut o = ConvertOptions::default();
    o.exclude.paths.push("/admin/**".into());
    let c = convert(&Document::from_text(doc, "t").unwrap(), &o).unwrap();
    assert_eq!((c.operations, c.excluded, c.tools.len()), (3, 1, 2));
    assert!(
        names::path_matches("/pets/*", "/pets/{id}")
            && !names::path_matches("/pets/*", "/pets/a/b")
    );
    let e = Document::from_text("swagger: '2.0'\ninfo: {}", "s.yaml").unwrap_err();
    assert!(
        matches!(&e, OpenApiError::Version { message, .. } if message.contains("swagger2openapi"))
    );
    let e = Document::from_text("openapi: 3.0.0\ninfo: [a\n", "bad.yaml").unwrap_err();
    assert!(e.to_string().contains("line"), "{e}");

    let dir = std::env::temp_dir().join(format!("toolgate-openapi-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    std::fs::write(
        dir.join("schemas/pet.yaml"),
        "type: object\nproperties:\n  name: {type: string}\n  tag: {$ref: 'tag.json'}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("schemas/tag.json"),
        r#"{"type": "string", "maxLength": 9}"#,
    )
    .unwrap();
    std::fs::write(dir.join("api.yaml"), "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /p:\n    post:\n      operationId: p\n      requestBody: {content: {application/json: {schema: {$ref: './schemas/pet.yaml'}}}}\n      responses: {'200': {description: ok}}\n").unwrap();
    let d = Document::from_file(dir.join("api.yaml")).unwrap();
    assert_eq!(d.files.len(), 2);
    let c = convert(&d, &ConvertOptions::default()).unwrap();
    let t = &c.tools[0];
    assert!(
        t.input_schema["properties"]["name"].is_object(),
        "{}",
        t.input_schema
    );
    assert_exportable(t);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The conversions of the two big documents, shared by the tests of one binary.
pub(super) fn big() -> &'static [(String, Conversion)] {
    static BIG: OnceLock<Vec<(String, Conversion)>> = OnceLock::new();
    BIG.get_or_init(|| {
        [
            "github/github-api.github.com-octokit-openapi-23.0.2.json",
            "stripe/stripe-spec3-2023-09-12.yaml",
        ]
        .iter()
        .map(|f| {
            let d = Document::from_file(real::dir().join(f)).unwrap();
            (
                f.to_string(),
                convert(&d, &ConvertOptions::default()).unwrap(),
            )
        })
        .collect()
    })
}

pub(super) fn check_conversion(file: &str, c: &Conversion, expected_ops: Option<usize>) {
    assert_eq!(
        c.tools.len() + c.skipped.len() + c.excluded,
        c.operations,
        "{file}"
    );
    if let Some(n) = expected_ops {
        assert_eq!(c.operations, n, "{file}");
    }
    let mut seen = HashSet::new();
    for t in &c.tools {
        assert!(
            !t.name.is_empty()
                && t.name.len() <= 64
                && t.name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-'),
            "{file}: {}",
            t.name
        );
        assert!(seen.insert(t.name.clone()), "{file}: duplicate {}", t.name);
        jsonschema::validator_for(&t.input_schema)
            .unwrap_or_else(|e| panic!("{file} {}: {e}\n{}", t.name, t.input_schema));
        if let Some(o) = &t.output_schema {
            jsonschema::validator_for(o)
                .unwrap_or_else(|e| panic!("{file} {} output: {e}", t.name));
        }
        assert_exportable(t);
    }
    let _: Value = serde_json::to_value(c).unwrap();
}
