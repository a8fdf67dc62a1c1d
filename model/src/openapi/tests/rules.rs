//! `readOnly` across `allOf` members, and the worked example of `docs/openapi.md`.

use serde_json::json;

use super::*;

#[test]
fn read_only_required_by_another_all_of_member() {
    // `id` is readOnly in `Base` (and in an inline member), required by another member or by
    // the schema beside `allOf`: it stays out of the input schema and its `required`, and is
    // kept (required) in the output schema.
    let c = conv(
        r#"
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  schemas:
    Base:
      type: object
      properties:
        id: {type: string, readOnly: true}
        name: {type: string}
    Pet:
      allOf:
        - $ref: '#/components/schemas/Base'
        - type: object
          required: [id, name]
          properties: {tag: {type: string}}
paths:
  /pets:
    post:
      operationId: create_pet
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
  /notes:
    post:
      operationId: create_note
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [id, text]
              allOf:
                - properties: {id: {type: integer, readOnly: true}}
                - properties: {text: {type: string}}
      responses: {'200': {description: ok}}
"#,
    );
    let t = tool(&c, "create_pet");
    assert_eq!(
        t.input_schema,
        json!({"type": "object",
            "properties": {"name": {"type": "string"}, "tag": {"type": "string"}},
            "required": ["name"], "additionalProperties": false})
    );
    let out = t.output_schema.as_ref().unwrap();
    let out = out.get("$defs").map_or(out, |d| &d["Pet"]);
    assert_eq!(out["properties"]["id"], json!({"type": "string"}), "{out}");
    assert_eq!(out["required"], json!(["id", "name"]));
    let n = tool(&c, "create_note");
    assert_eq!(
        n.input_schema,
        json!({"type": "object", "properties": {"text": {"type": "string"}},
            "required": ["text"], "additionalProperties": false})
    );
    assert_exportable(t);
    assert_exportable(n);
}

/// The worked example of `docs/openapi.md` (keep the two in sync).
#[test]
fn docs_worked_example() {
    let c = conv(
        r#"
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "https://api.example.com/v1"}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-API-Key}
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string, example: Rex}
        tag: {type: string, nullable: true}
security: [{key: []}]
paths:
  /owners/{ownerId}/pets:
    post:
      summary: Add a pet
      parameters:
        - {name: ownerId, in: path, required: true, schema: {type: string}}
        - {name: dry_run, in: query, schema: {type: boolean}}
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
      responses:
        '201':
          description: created
          content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
"#,
    );
    let t = &c.tools[0];
    assert_eq!(t.name, "post_owners_by_owner_id_pets");
    assert_eq!(c.warnings[0].code, "W_NO_OPERATION_ID");
    assert_eq!(
        t.input_schema,
        json!({"type": "object",
            "properties": {
                "ownerId": {"type": "string", "minLength": 1},
                "dry_run": {"type": "boolean"},
                "name": {"type": "string", "examples": ["Rex"]},
                "tag": {"type": ["string", "null"]}},
            "required": ["ownerId", "name"],
            "additionalProperties": false})
    );
    assert_eq!(
        t.output_schema,
        Some(json!({"type": "object", "required": ["id", "name"],
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string", "examples": ["Rex"]},
                "tag": {"type": ["string", "null"]}}}))
    );
    assert!(matches!(&t.body.as_ref().unwrap().layout,
        BodyLayout::Flattened { fields } if fields.len() == 2));
    assert!(!t.output_wrapped);
    assert_exportable(t);
}
