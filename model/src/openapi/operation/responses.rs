//! The output schema and `Accept` (OAS 3.0 §4.7.16 / 3.1 §4.8.16 "Responses Object").
//!
//! - `Accept`: the media types of every `2xx` / `2XX` response, in document order.
//! - Output schema: from the first `2xx` response (else `2XX`, else `default`) that has a JSON
//!   media type with a schema, else an XML one (`application/xml`, `text/xml`, `+xml`; its
//!   [`XmlMapping`](super::super::XmlMapping) kept to read the answer); none (e.g. `204`): no
//!   output schema. When any `2xx` / `2XX` response has no JSON or XML schema (a `200` with
//!   JSON next to a `204`), there is no output schema either: that response would return no
//!   structured content. An object
//!   schema is used as it is; anything else is wrapped as
//!   `{type: object, properties: {result: S}, required: [result]}` and the call's result is
//!   sent as `{"result": body}`. `writeOnly` properties are left out. Its `$defs` have a byte
//!   budget (`W_OUTPUT_SCHEMA_LOOSENED`).
//! - A response schema that cannot be converted (`E_UNRESOLVED_REF`, `W_EXTERNAL_REF`,
//!   `E_UNSATISFIABLE_SCHEMA`, `E_SCHEMA_TOO_DEEP`) is a warning: the tool has no output
//!   schema, it is not skipped.

use serde_json::{Value, json};

use super::super::XmlMapping;
use super::super::refs::{self, escape};
use super::super::schema::{Mode, SchemaError};
use super::super::xml::XmlBuilder;
use super::body::{is_json, is_xml};
use super::{OpContext, w};

/// What the responses give a tool.
#[derive(Default)]
pub(super) struct Responses {
    /// The output schema.
    pub output_schema: Option<Value>,
    /// The result is sent as `{"result": body}`.
    pub wrapped: bool,
    /// The 2xx media types.
    pub accept: Vec<String>,
    /// The output schema was loosened to fit the budget.
    pub loosened: bool,
    /// How the XML answer is read (the output schema came from an XML media type).
    pub xml: Option<XmlMapping>,
}

impl OpContext<'_, '_> {
    /// The output schema, whether it is wrapped, the 2xx media types, whether loosened, the
    /// XML mapping.
    pub(super) fn responses(
        &mut self,
        op: &Value,
        ptr: &str,
        warnings: &mut Vec<(String, String, String)>,
    ) -> Responses {
        let Some(responses) = op.get("responses").and_then(Value::as_object) else {
            return Responses::default();
        };
        let is_2xx =
            |k: &str| k.len() == 3 && k.starts_with('2') && k.bytes().all(|b| b.is_ascii_digit());
        let mut accept: Vec<String> = Vec::new();
        let mut resolved: Vec<(&str, &Value, String)> = Vec::new();
        for (code, r) in responses {
            let at = format!("{ptr}/responses/{}", escape(code));
            match refs::follow(self.root, r, &at) {
                Ok((r, target)) => resolved.push((code, r, target)),
                Err(e) => {
                    let e = SchemaError::from_ref(e, &at);
                    warnings.push(w(e.code, &e.pointer, e.message));
                }
            }
        }
        for (code, r, _) in &resolved {
            if (is_2xx(code) || code.eq_ignore_ascii_case("2XX"))
                && let Some(c) = r.get("content").and_then(Value::as_object)
            {
                for mt in c.keys() {
                    if !accept.contains(mt) {
                        accept.push(mt.clone());
                    }
                }
            }
        }
        let none = |accept: Vec<String>| Responses {
            accept,
            ..Responses::default()
        };
        // A 2xx without JSON or XML content (`204`, `202` with no body) would return no
        // structured content, which a declared output schema requires (MCP): no output schema
        // unless every 2xx / `2XX` response has a JSON or XML media type with a schema.
        let json_schema = |r: &Value| {
            r.get("content")
                .and_then(Value::as_object)
                .is_some_and(|c| {
                    c.iter()
                        .any(|(mt, m)| (is_json(mt) || is_xml(mt)) && m.get("schema").is_some())
                })
        };
        if resolved
            .iter()
            .any(|(c, r, _)| (is_2xx(c) || c.eq_ignore_ascii_case("2XX")) && !json_schema(r))
        {
            return none(accept);
        }
        let pick = resolved
            .iter()
            .find(|(c, _, _)| is_2xx(c))
            .or_else(|| {
                resolved
                    .iter()
                    .find(|(c, _, _)| c.eq_ignore_ascii_case("2XX"))
            })
            .or_else(|| resolved.iter().find(|(c, _, _)| *c == "default"));
        let Some((_, r, target)) = pick else {
            return none(accept);
        };
        let Some(content) = r.get("content").and_then(Value::as_object) else {
            return none(accept);
        };
        let with_schema = |f: fn(&str) -> bool| {
            content
                .iter()
                .find(|(mt, m)| f(mt) && m.get("schema").is_some())
        };
        let Some((mt, media)) = with_schema(is_json).or_else(|| with_schema(is_xml)) else {
            return none(accept);
        };
        let Some(s) = media.get("schema") else {
            return none(accept);
        };
        let xml = (!is_json(mt)).then(|| {
            XmlBuilder::new(self.root, self.xml_wrapped_default)
                .mapping(s)
                .0
        });
        let sp = format!("{target}/content/{}/schema", escape(mt));
        let result = (|| {
            let s = self.schemas.convert(s, &sp, Mode::Output)?;
            let s = self.schemas.deref_root(s, Mode::Output)?;
            let object = match s.get("type") {
                Some(Value::String(t)) => t == "object",
                None => {
                    s.get("properties").is_some()
                        && !["oneOf", "anyOf", "allOf", "not", "$ref"]
                            .iter()
                            .any(|k| s.get(*k).is_some())
                }
                _ => false,
            };
            let (mut root, wrapped) = if object {
                let mut s = s;
                if let Value::Object(m) = &mut s {
                    m.entry("type").or_insert_with(|| json!("object"));
                }
                (s, false)
            } else {
                (
                    json!({"type": "object", "properties": {"result": s}, "required": ["result"]}),
                    true,
                )
            };
            let loosened =
                self.schemas
                    .attach_defs(&mut root, Mode::Output, Some(self.max_output))?;
            Ok::<_, SchemaError>((root, wrapped, loosened))
        })();
        match result {
            Ok((root, wrapped, loosened)) => Responses {
                output_schema: Some(root),
                wrapped,
                accept,
                loosened,
                xml,
            },
            Err(e) => {
                warnings.push(w(
                    e.code,
                    &e.pointer,
                    format!("{}; the tool has no output schema", e.message),
                ));
                none(accept)
            }
        }
    }
}
