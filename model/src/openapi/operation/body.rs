//! The request body (OAS 3.0 §4.7.13 / 3.1 §4.8.13 "Request Body Object"): which
//! media type is sent, how its value sits in the arguments, and file fields.
//!
//! - Media type: the first the gateway can encode, by class: JSON (`application/json`,
//!   `text/json`, `*/*+json`, RFC 6839 §3.1), then `application/x-www-form-urlencoded`, then
//!   `multipart/form-data`, then XML (`application/xml`, `text/xml`, `*/*+xml`, RFC 7303),
//!   then `text/*` (not `text/html`), then binary (`application/octet-stream`, `*/*`,
//!   `application/*`, PDF, zip, gzip, `image/*`, `audio/*`, `video/*`, `font/*`). None of
//!   them: the operation is skipped with `W_UNSUPPORTED_MEDIA_TYPE`.
//! - XML: the argument is typed by the body schema as for JSON; its XML layout (the XML
//!   Object's `name`, `namespace`, `prefix`, `attribute`, `wrapped`) is kept as an
//!   [`XmlMapping`](super::super::XmlMapping) (see `openapi::xml`).
//! - Flattening: a JSON, XML, form or multipart body whose schema (its root `$ref` followed) is a
//!   plain object — properties, no root `oneOf` / `anyOf` / `allOf` / `not` / `$ref` /
//!   `patternProperties` / `if`, `additionalProperties` absent, boolean or `{}`, every property
//!   a valid argument name not taken by a parameter — has its properties as arguments; they are
//!   required when the body is required and lists them. Otherwise the whole body is one
//!   argument `body` (`request_body` when a parameter took `body`; then `_2`, ...), required
//!   when the body is.
//! - Files: a form / multipart property with `format: binary` or `contentEncoding` (or an
//!   array of them) becomes a base64 string (array); a binary body is one base64 string;
//!   text is a string.
//! - Encoding: a form / multipart media type's `encoding` map (OAS 3.1 §4.8.15) is kept by
//!   property name (`contentType`, `style`, `explode`, `allowReserved`) for the runtime.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value, json};

use super::super::names::valid_arg;
use super::super::refs::escape;
use super::super::schema::{Mode, SchemaError};
use super::super::xml::XmlBuilder;
use super::super::{BodyEncoding, BodyField, BodyLayout, FieldEncoding, ParamStyle, RequestBody};
use super::{OpContext, unique, w};

impl OpContext<'_, '_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn body(
        &mut self,
        rb: &Value,
        at: &str,
        target: &str,
        taken: &mut HashSet<String>,
        properties: &mut Map<String, Value>,
        required: &mut Vec<Value>,
        warnings: &mut Vec<(String, String, String)>,
    ) -> Result<Option<RequestBody>, SchemaError> {
        let Some(content) = rb.get("content").and_then(Value::as_object) else {
            return Ok(None);
        };
        if content.is_empty() {
            return Ok(None);
        }
        let Some((mt, encoding)) = choose_media_type(content.keys().map(String::as_str)) else {
            let types: Vec<&str> = content.keys().map(String::as_str).collect();
            return Err(SchemaError {
                code: "W_UNSUPPORTED_MEDIA_TYPE",
                pointer: at.to_string(),
                message: format!(
                    "the request body is only offered as {} which the gateway cannot encode \
                     (JSON, form, multipart, XML, text or binary)",
                    types.join(", ")
                ),
            });
        };
        let body_required = rb.get("required").and_then(Value::as_bool).unwrap_or(false);
        let media = content.get(&mt).unwrap_or(&Value::Null);
        let description = rb.get("description").and_then(Value::as_str);
        let schema_ptr = format!("{target}/content/{}/schema", escape(&mt));
        let mut file_fields = Vec::new();
        let mut schema = match encoding {
            BodyEncoding::Binary => json!({"type": "string", "contentEncoding": "base64",
                "description": format!("The {mt} body, base64-encoded.")}),
            BodyEncoding::Text => json!({"type": "string"}),
            _ => match media.get("schema") {
                Some(s) => {
                    let s = self.schemas.convert(s, &schema_ptr, Mode::Input)?;
                    self.schemas.deref_root(s, Mode::Input)?
                }
                None => json!({}),
            },
        };
        if let (Some(d), Value::Object(m)) = (description, &mut schema)
            && !m.contains_key("description")
        {
            m.insert("description".into(), Value::String(d.to_string()));
        }
        if matches!(encoding, BodyEncoding::Multipart | BodyEncoding::Form)
            && let Some(Value::Object(props)) = schema.get_mut("properties")
        {
            for (name, p) in props.iter_mut() {
                if let Some(file) = file_schema(p) {
                    *p = file;
                    file_fields.push(name.clone());
                }
            }
        }
        let xml = if encoding == BodyEncoding::Xml {
            let raw = media.get("schema").cloned().unwrap_or(Value::Null);
            let (mapping, fallback) =
                XmlBuilder::new(self.root, self.xml_wrapped_default).mapping(&raw);
            if fallback {
                warnings.push(w(
                    "W_XML_ROOT_NAME",
                    &schema_ptr,
                    "the XML body's schema names no root element (no `xml.name`, not a \
                     component, not one property): it is sent as `<body>`",
                ));
            }
            Some(mapping)
        } else {
            None
        };
        let flat = matches!(
            encoding,
            BodyEncoding::Json | BodyEncoding::Xml | BodyEncoding::Form | BodyEncoding::Multipart
        ) && plain_object(&schema, taken);
        let layout = if flat {
            let mut fields = Vec::new();
            let req: Vec<Value> = schema
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, p) in props {
                    taken.insert(name.clone());
                    properties.insert(name.clone(), p.clone());
                    if body_required && req.iter().any(|r| r == name) {
                        required.push(Value::String(name.clone()));
                    }
                    fields.push(BodyField {
                        arg: name.clone(),
                        name: name.clone(),
                    });
                }
            }
            BodyLayout::Flattened { fields }
        } else {
            let base = if taken.contains("body") {
                "request_body"
            } else {
                "body"
            };
            let arg = unique(base, taken);
            taken.insert(arg.clone());
            properties.insert(arg.clone(), schema);
            if body_required {
                required.push(Value::String(arg.clone()));
            }
            if encoding == BodyEncoding::Binary {
                file_fields.push(arg.clone());
            }
            BodyLayout::Property { arg }
        };
        let encodings = if matches!(encoding, BodyEncoding::Form | BodyEncoding::Multipart) {
            field_encodings(media)
        } else {
            BTreeMap::new()
        };
        Ok(Some(RequestBody {
            media_type: mt,
            encoding,
            required: body_required,
            layout,
            file_fields,
            encodings,
            xml,
        }))
    }
}

/// The media type's `encoding` map (OAS 3.1 §4.8.15 "Encoding Object"): `contentType`,
/// `style`, `explode`, `allowReserved` by property. A `style` the model does not know is left
/// to the default.
fn field_encodings(media: &Value) -> BTreeMap<String, FieldEncoding> {
    let Some(map) = media.get("encoding").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(name, e)| {
            let e = e.as_object()?;
            let enc = FieldEncoding {
                content_type: e
                    .get("contentType")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                style: e
                    .get("style")
                    .and_then(|s| serde_json::from_value::<ParamStyle>(s.clone()).ok()),
                explode: e.get("explode").and_then(Value::as_bool),
                allow_reserved: e
                    .get("allowReserved")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            };
            (enc != FieldEncoding::default()).then(|| (name.clone(), enc))
        })
        .collect()
}

/// `application/json`, `*/*+json` (RFC 6839 §3.1), `text/json`.
pub(crate) fn is_json(mt: &str) -> bool {
    let base = mt
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    base == "application/json" || base == "text/json" || base.ends_with("+json")
}

/// `application/xml`, `text/xml`, `*/*+xml` (RFC 7303 §4.1, §9.2).
pub(crate) fn is_xml(mt: &str) -> bool {
    let base = mt
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    base == "application/xml" || base == "text/xml" || base.ends_with("+xml")
}

/// The body media type used: JSON first, then form, multipart, XML, text, binary.
pub(crate) fn choose_media_type<'a>(
    types: impl Iterator<Item = &'a str> + Clone,
) -> Option<(String, BodyEncoding)> {
    let class = |mt: &str| -> Option<BodyEncoding> {
        let base = mt
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if is_json(&base) {
            Some(BodyEncoding::Json)
        } else if base == "application/x-www-form-urlencoded" {
            Some(BodyEncoding::Form)
        } else if base == "multipart/form-data" {
            Some(BodyEncoding::Multipart)
        } else if is_xml(&base) {
            Some(BodyEncoding::Xml)
        } else if base.starts_with("text/") && base != "text/html" {
            Some(BodyEncoding::Text)
        } else if base == "application/octet-stream"
            || base == "*/*"
            || base == "application/*"
            || base == "application/pdf"
            || base == "application/zip"
            || base == "application/gzip"
            || ["image/", "audio/", "video/", "font/"]
                .iter()
                .any(|p| base.starts_with(p))
        {
            Some(BodyEncoding::Binary)
        } else {
            None
        }
    };
    for want in [
        BodyEncoding::Json,
        BodyEncoding::Form,
        BodyEncoding::Multipart,
        BodyEncoding::Xml,
        BodyEncoding::Text,
        BodyEncoding::Binary,
    ] {
        if let Some(mt) = types.clone().find(|mt| class(mt) == Some(want)) {
            return Some((mt.to_string(), want));
        }
    }
    None
}

/// A file field (`format: binary`, `contentEncoding`, or an array of them) as base64 text.
fn file_schema(p: &Value) -> Option<Value> {
    let is_file = |s: &Value| {
        s.get("format").and_then(Value::as_str) == Some("binary")
            || s.get("contentEncoding").is_some()
    };
    let desc = p
        .get("description")
        .and_then(Value::as_str)
        .map(|d| format!("{d} "))
        .unwrap_or_default();
    if is_file(p) {
        return Some(json!({"type": "string", "contentEncoding": "base64",
            "description": format!("{desc}(file contents, base64-encoded)")}));
    }
    if let Some(items) = p.get("items")
        && is_file(items)
    {
        return Some(
            json!({"type": "array", "items": {"type": "string", "contentEncoding": "base64"},
            "description": format!("{desc}(files, each base64-encoded)")}),
        );
    }
    None
}

/// Whether a body schema can be flattened into the arguments: an object with properties, no
/// root `oneOf` / `anyOf` / `allOf` / `not` / `$ref`, no extra-key schema, every property a
/// valid argument name not already taken.
fn plain_object(s: &Value, taken: &HashSet<String>) -> bool {
    let Some(m) = s.as_object() else { return false };
    let typed = match m.get("type") {
        Some(Value::String(t)) => t == "object",
        None => true,
        _ => false,
    };
    let Some(Value::Object(props)) = m.get("properties") else {
        return false;
    };
    typed
        && !props.is_empty()
        && ![
            "oneOf",
            "anyOf",
            "allOf",
            "not",
            "$ref",
            "patternProperties",
            "if",
        ]
        .iter()
        .any(|k| m.contains_key(*k))
        && m.get("additionalProperties")
            .is_none_or(|a| a.is_boolean() || a.as_object().is_some_and(Map::is_empty))
        && props.keys().all(|k| valid_arg(k) && !taken.contains(k))
}
