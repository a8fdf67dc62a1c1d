//! XML bodies and answers without a network: the XML Object's `name`, `namespace`, `prefix`,
//! `attribute` and `wrapped` when writing and reading, typed scalars, and answers that are
//! not XML, too deep, too big or an entity bomb.

use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use toolgate_model::openapi::{ConvertOptions, Document, Operation, XmlMapping, convert};

use super::super::request::{Body, build};
use super::super::response::success;
use super::super::xml::{MAX_DEPTH, MAX_ELEMENTS, decode, encode};
use crate::ErrorKind;

/// The operations of a small document.
fn ops(doc: &str) -> Vec<Operation> {
    let doc = Document::from_text(doc, "t.yaml").unwrap();
    convert(&doc, &ConvertOptions::default()).unwrap().tools
}

fn find<'a>(ops: &'a [Operation], name: &str) -> &'a Operation {
    ops.iter().find(|o| o.name == name).unwrap()
}

fn body_mapping(op: &Operation) -> &XmlMapping {
    op.body.as_ref().unwrap().xml.as_ref().unwrap()
}

const PETS: &str = r##"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  schemas:
    Pet:
      type: object
      xml: {name: pet, namespace: "https://example.com/ns", prefix: ex}
      properties:
        id: {type: integer, xml: {attribute: true}}
        name: {type: string}
        weight: {type: number}
        alive: {type: boolean}
        tags:
          type: array
          xml: {wrapped: true, name: tagList}
          items: {type: string, xml: {name: tag}}
        photos:
          type: array
          items: {type: string}
        children:
          type: array
          xml: {name: child}
          items: {$ref: "#/components/schemas/Pet"}
paths:
  /pets:
    put:
      operationId: put_pet
      requestBody:
        required: true
        content:
          application/xml: {schema: {$ref: "#/components/schemas/Pet"}}
      responses:
        '200':
          description: ok
          content: {application/xml: {schema: {$ref: "#/components/schemas/Pet"}}}
"##;

#[test]
fn a_body_is_written_with_attributes_namespaces_and_both_kinds_of_arrays() {
    let ops = ops(PETS);
    let m = body_mapping(find(&ops, "put_pet"));
    let xml = encode(
        m,
        &json!({"id": 7, "name": "Rex & <Co>", "alive": true, "weight": 1.5,
            "tags": ["a", "b"], "photos": ["p1", "p2"],
            "children": [{"id": 8, "name": "Pup"}], "nickname": null}),
    )
    .unwrap();
    assert_eq!(
        xml,
        concat!(
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            r#"<ex:pet xmlns:ex="https://example.com/ns" id="7">"#,
            "<name>Rex &amp; &lt;Co&gt;</name><weight>1.5</weight><alive>true</alive>",
            "<tagList><tag>a</tag><tag>b</tag></tagList>",
            "<photos>p1</photos><photos>p2</photos>",
            // The items' own name (the component's `xml.name`) wins over the array's.
            r#"<ex:pet xmlns:ex="https://example.com/ns" id="8"><name>Pup</name></ex:pet>"#,
            "</ex:pet>"
        )
    );
}

#[test]
fn an_answer_is_read_typed_by_the_schema() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    let got = decode(
        m,
        br#"<?xml version="1.0"?>
<p:pet xmlns:p="https://example.com/ns" id="7" color="brown">
  <name>Rex &amp; Co &#x263A;</name>
  <weight>2.25</weight>
  <alive>true</alive>
  <tagList><tag>a</tag></tagList>
  <photos>only-one</photos>
  <pet id="8"><name>Pup</name><alive>0</alive></pet>
  <extra><deep>x</deep></extra>
  <extra>y</extra>
</p:pet>"#,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({
            "id": 7,
            "name": "Rex & Co \u{263A}",
            "weight": 2.25,
            "alive": true,
            "tags": ["a"],
            "photos": ["only-one"],
            "children": [{"id": 8, "name": "Pup", "alive": false}],
            "@color": "brown",
            "extra": [{"deep": "x"}, "y"],
        })
    );
    // Text that is not of the declared type stays text; missing arrays stay missing.
    let got = decode(m, b"<pet id='seven'><weight>heavy</weight></pet>").unwrap();
    assert_eq!(got, json!({"id": "seven", "weight": "heavy"}));
}

const S3_LIKE: &str = r##"
openapi: 3.0.0
info: {title: s3-like, version: "1"}
components:
  schemas:
    Tag:
      type: object
      properties: {Key: {type: string}, Value: {type: string}}
    TagSet:
      type: array
      items:
        allOf: [{$ref: "#/components/schemas/Tag"}, {xml: {name: Tag}}]
    ObjectIdentifierList:
      type: array
      items: {$ref: "#/components/schemas/ObjectIdentifier"}
      xml: {wrapped: false}
    ObjectIdentifier:
      type: object
      properties: {Key: {type: string}, VersionId: {type: string}}
paths:
  /{Bucket}#tagging:
    put:
      operationId: PutBucketTagging
      parameters: [{name: Bucket, in: path, required: true, schema: {type: string}}]
      requestBody:
        required: true
        content:
          text/xml:
            schema:
              type: object
              required: [Tagging]
              properties:
                Tagging:
                  type: object
                  properties:
                    TagSet: {allOf: [{$ref: "#/components/schemas/TagSet"}, {description: tags}]}
      responses: {'200': {description: ok}}
  /{Bucket}#delete:
    post:
      operationId: DeleteObjects
      parameters:
        - {name: Bucket, in: path, required: true, schema: {type: string}}
        - {name: delete, in: query, required: true, allowEmptyValue: true,
           schema: {type: boolean, enum: [true]}}
      requestBody:
        required: true
        content:
          text/xml:
            schema:
              type: object
              properties:
                Delete:
                  type: object
                  properties:
                    Objects:
                      allOf:
                        - {$ref: "#/components/schemas/ObjectIdentifierList"}
                        - {xml: {name: Object}}
                    Quiet: {type: boolean}
      responses: {'200': {description: ok}}
"##;

#[test]
fn a_document_that_only_says_wrapped_false_wraps_its_other_arrays() {
    let ops = ops(S3_LIKE);
    let tagging = find(&ops, "PutBucketTagging");
    let xml = encode(
        body_mapping(tagging),
        &json!({"Tagging": {"TagSet": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]}}),
    )
    .unwrap();
    assert_eq!(
        xml,
        concat!(
            r#"<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>"#,
            "<Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag>",
            "</TagSet></Tagging>"
        )
    );
    // The unwrapped array's own name names its repeated elements.
    let delete = find(&ops, "DeleteObjects");
    let xml = encode(
        body_mapping(delete),
        &json!({"Delete": {"Objects": [{"Key": "a"}, {"Key": "b"}], "Quiet": true}}),
    )
    .unwrap();
    assert!(
        xml.ends_with(
            "<Delete><Object><Key>a</Key></Object><Object><Key>b</Key></Object>\
             <Quiet>true</Quiet></Delete>"
        ),
        "{xml}"
    );
    // Through the request builder: the flattened argument becomes the XML document.
    let mut args = Map::new();
    args.insert("Bucket".into(), json!("b"));
    args.insert("delete".into(), json!(true));
    args.insert("Delete".into(), json!({"Objects": [{"Key": "a"}]}));
    let parts = build("s3.DeleteObjects", delete, &args).unwrap();
    // The path's `#delete` is not sent; the flag is a bare `?delete`.
    assert_eq!(parts.path, "/b");
    assert_eq!(parts.query, ["delete"]);
    let (media, body) = parts.body.unwrap();
    assert_eq!(media, "text/xml");
    let Body::Text(text) = body else {
        panic!("{body:?}")
    };
    assert!(text.ends_with("<Delete><Object><Key>a</Key></Object></Delete>"));
    // Its only field left out: no body at all (not an empty root element).
    args.remove("Delete");
    assert_eq!(build("s3.DeleteObjects", delete, &args).unwrap().body, None);
}

#[test]
fn keys_that_are_not_xml_names_are_refused() {
    let ops = ops(PETS);
    let m = body_mapping(find(&ops, "put_pet"));
    let err = encode(m, &json!({"name": "x", "bad key": 1})).unwrap_err();
    assert!(
        err.contains("`bad key` is not an XML element name"),
        "{err}"
    );
    // Keys the schema does not name: `@name` an attribute, others elements, as read back.
    let xml = encode(
        m,
        &json!({"name": "x", "@color": "brown", "owner": {"@id": 3, "#text": "Ann"}}),
    )
    .unwrap();
    assert!(
        xml.ends_with(r#" color="brown"><name>x</name><owner id="3">Ann</owner></ex:pet>"#),
        "{xml}"
    );
}

#[test]
fn malformed_answers_are_clear_errors() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    for (body, want) in [
        (&b"<pet><name>x</pet>"[..], "not well-formed XML"),
        (b"<pet>", "ends inside <pet>"),
        (b"just text", "text outside the root element"),
        (b"", "no root element"),
        (b"<a/><b/>", "more than one root element"),
        (b"<pet>\xff</pet>", "not UTF-8"),
        (b"<pet><name>&nbsp;</name></pet>", "unknown entity `&nbsp;`"),
    ] {
        let err = decode(m, body).unwrap_err();
        assert!(err.contains(want), "{body:?}: {err}");
    }
    // Through the response: `upstream`, not retryable, with an excerpt.
    let err = success(
        StatusCode::OK,
        Some("text/xml; charset=utf-8"),
        b"<pet><name>x</pet>",
        false,
        Some(m),
        "api:/pets",
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert!(!err.is_retryable());
    assert!(
        err.message()
            .contains("declared `text/xml` but is not valid XML"),
        "{err}"
    );
}

#[test]
fn an_entity_bomb_is_refused_without_expanding_it() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    let mut bomb =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", i - 1)
        };
        bomb.push_str(&format!(
            " <!ENTITY lol{i} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    bomb.push_str("]>\n<pet><name>&lol9;</name></pet>");
    let err = decode(m, bomb.as_bytes()).unwrap_err();
    assert!(err.contains("unknown entity `&lol9;`"), "{err}");
}

#[test]
fn deep_and_big_answers_are_bounded() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    let depth = 100_000;
    let deep = format!("{}{}", "<a>".repeat(depth), "</a>".repeat(depth));
    let err = decode(m, deep.as_bytes()).unwrap_err();
    assert!(
        err.contains(&format!("nested deeper than {MAX_DEPTH}")),
        "{err}"
    );
    let big = format!("<pet>{}</pet>", "<x/>".repeat(MAX_ELEMENTS + 1));
    let err = decode(m, big.as_bytes()).unwrap_err();
    assert!(
        err.contains(&format!("more than {MAX_ELEMENTS} elements")),
        "{err}"
    );
    // Just under the depth bound still reads.
    let ok = format!(
        "<pet>{}{}</pet>",
        "<a>".repeat(MAX_DEPTH - 1),
        "</a>".repeat(MAX_DEPTH - 1)
    );
    assert!(decode(m, ok.as_bytes()).is_ok());
}

#[test]
fn an_xml_answer_is_structured_content_even_under_a_vague_type() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    for ct in [
        Some("application/xml"),
        Some("text/html; charset=utf-8"),
        None,
    ] {
        let out = success(
            StatusCode::OK,
            ct,
            b"<pet id=\"1\"><name>Rex</name></pet>",
            false,
            Some(m),
            "api:/pets",
        )
        .unwrap();
        assert_eq!(
            out.structured.as_ref(),
            Some(&json!({"id": 1, "name": "Rex"})),
            "{ct:?}"
        );
    }
    // Without a mapping (no XML in the document) XML stays text.
    let out = success(
        StatusCode::OK,
        Some("application/xml"),
        b"<pet/>",
        false,
        None,
        "api:/pets",
    )
    .unwrap();
    assert_eq!(out.structured, None::<Value>);
}

#[test]
fn every_cut_of_an_answer_reads_or_fails_without_a_panic() {
    let ops = ops(PETS);
    let m = find(&ops, "put_pet").output_xml.as_ref().unwrap();
    let answer = br#"<?xml version="1.0"?><!-- c --><p:pet xmlns:p="urn:x" id="7"><name>R&amp;x &#65;</name><![CDATA[<raw>]]><tagList><tag>a</tag></tagList><pet id="8"/></p:pet>"#;
    let mut read = 0;
    for end in 0..=answer.len() {
        if decode(m, &answer[..end]).is_ok() {
            read += 1;
        }
    }
    // Only the whole document reads: every shorter cut ends inside an element.
    assert_eq!(read, 1);
    assert_eq!(
        decode(m, answer).unwrap(),
        json!({"id": 7, "name": "R&x A", "tags": ["a"], "children": [{"id": 8}]})
    );
}
