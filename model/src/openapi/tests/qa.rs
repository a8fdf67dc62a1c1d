//! Cases from the QA pass: output schema vs empty 2xx responses, the Encoding Object of
//! form / multipart bodies, `names:` keys that match nothing or disagree.

use serde_json::json;

use super::*;

#[test]
fn output_schema_only_when_every_2xx_has_json() {
    let c = conv(
        r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    get:
      operationId: both
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}}}}
        '204': {description: none}
  /b:
    get:
      operationId: range
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}}}}
        '2XX': {description: other, content: {text/plain: {schema: {type: string}}}}
  /c:
    get:
      operationId: json_only
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}}}}
        '201': {description: made, content: {application/json: {schema: {type: string}}}}
        '404': {description: none}
"#,
    );
    assert_eq!(tool(&c, "both").output_schema, None);
    assert_eq!(tool(&c, "range").output_schema, None);
    assert_eq!(
        tool(&c, "json_only").output_schema,
        Some(json!({"type": "object"}))
    );
}

#[test]
fn form_and_multipart_encoding_objects_are_kept() {
    let c = conv(
        r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /form:
    post:
      operationId: form
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                tags: {type: array, items: {type: string}}
                color: {type: object}
            encoding:
              tags: {style: form, explode: false}
              color: {style: deepObject, allowReserved: true}
              other: {style: weird}
      responses: {'204': {description: ok}}
  /upload:
    post:
      operationId: upload
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties:
                image: {type: string, format: binary}
            encoding:
              image: {contentType: image/png}
      responses: {'204': {description: ok}}
"#,
    );
    let form = tool(&c, "form").body.as_ref().unwrap();
    assert_eq!(
        form.encodings["tags"],
        FieldEncoding {
            style: Some(ParamStyle::Form),
            explode: Some(false),
            ..FieldEncoding::default()
        }
    );
    assert_eq!(
        form.encodings["color"],
        FieldEncoding {
            style: Some(ParamStyle::DeepObject),
            allow_reserved: true,
            ..FieldEncoding::default()
        }
    );
    assert!(
        !form.encodings.contains_key("other"),
        "an unknown style is left out"
    );
    let upload = tool(&c, "upload").body.as_ref().unwrap();
    assert_eq!(
        upload.encodings["image"].content_type.as_deref(),
        Some("image/png")
    );
    // serialized only when present: older embedded JSON (without it) still reads
    let json = serde_json::to_value(tool(&c, "upload").body.as_ref().unwrap()).unwrap();
    assert_eq!(
        json["encodings"]["image"],
        json!({"content_type": "image/png"})
    );
    let mut old = json;
    old.as_object_mut().unwrap().remove("encodings");
    let back: RequestBody = serde_json::from_value(old.clone()).unwrap();
    assert!(back.encodings.is_empty());
    assert_eq!(serde_json::to_value(&back).unwrap(), old);
}

#[test]
fn names_keys_any_method_case_unused_and_conflicting() {
    let doc = r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /y:
    get: {responses: {'200': {description: ok}}}
  /z:
    get: {operationId: getZ, responses: {'200': {description: ok}}}
"#;
    let mut o = ConvertOptions::default();
    o.names.insert("get /y".into(), "why".into());
    o.names.insert("GET /nothing".into(), "zzz".into());
    o.names.insert("getZ".into(), "zed".into());
    o.names.insert("Get /z".into(), "zee".into());
    let c = convert(&Document::from_text(doc, "t").unwrap(), &o).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["why", "zee"]);
    let unused: Vec<&Warning> = c
        .warnings
        .iter()
        .filter(|w| w.code == "W_NAMES_UNUSED")
        .collect();
    assert_eq!(unused.len(), 1, "{:?}", c.warnings);
    assert!(unused[0].message.contains("\"GET /nothing\""), "{unused:?}");
    let conflict = c
        .warnings
        .iter()
        .find(|w| w.code == "W_NAMES_CONFLICT")
        .unwrap_or_else(|| panic!("{:?}", c.warnings));
    assert!(
        conflict.message.contains("`zee`")
            && conflict.message.contains("`zed`")
            && conflict.message.contains("\"Get /z\" wins"),
        "{conflict:?}"
    );
    assert_eq!(conflict.pointer, "#/paths/~1z/get");
    // a key naming an excluded operation is not unused
    let mut o = ConvertOptions::default();
    o.names.insert("getZ".into(), "zed".into());
    o.exclude.operations = vec!["getZ".into()];
    let c = convert(&Document::from_text(doc, "t").unwrap(), &o).unwrap();
    assert!(
        c.warnings.iter().all(|w| w.code != "W_NAMES_UNUSED"),
        "{:?}",
        c.warnings
    );
}
