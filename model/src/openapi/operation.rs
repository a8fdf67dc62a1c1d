//! One operation → one tool's arguments and binding (OAS 3.0 §4.7.10 / 3.1 §4.8.10 "Operation
//! Object", §4.7.12 / §4.8.12 "Parameter Object"). The request body is in [`body`], the output
//! schema and `Accept` in [`responses`].
//!
//! Arguments (one input object): path-level parameters merged with operation-level ones (the
//! operation wins by `name` + `in`, OAS 3.0 §4.7.9); `Accept`, `Content-Type` and
//! `Authorization` header parameters ignored (OAS 3.0 §4.7.12); a parameter that is an `apiKey`
//! scheme's credential dropped (`W_CREDENTIAL_PARAMETER`); one without `name` or
//! with an `in` other than `path` / `query` / `header` / `cookie` ignored (`W_PARAMETER`).
//! A query parameter with `allowEmptyValue: true` and `enum: [true]` is a flag (sent as
//! `?name`). Path parameters are always required; `style` defaults to `form` (query, cookie) or `simple`
//! (path, header), `explode` to `style == form` (OAS 3.0 §4.7.12.4).
//!
//! Argument names: the wire name when it is a valid property name (`^[a-zA-Z0-9_.-]{1,64}$`)
//! and unique; a name used in two locations becomes `{in}_{name}` for each of them (`path_id`,
//! `query_id`); invalid characters become `_`; then `_2`, `_3` while still taken.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::names::{arg_name, valid_arg};
use super::refs::{self, escape};
use super::schema::{Mode, SchemaError, Schemas};
use super::{
    ParamLocation, ParamStyle, Parameter, RequestBody, SecurityRequirement, SecurityScheme,
};

mod body;
mod responses;

/// What converting one operation gave besides the tool.
pub(crate) struct OpParts {
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub output_wrapped: bool,
    pub output_xml: Option<super::XmlMapping>,
    pub parameters: Vec<Parameter>,
    pub body: Option<RequestBody>,
    pub accept: Vec<String>,
    /// Warnings about this operation.
    pub warnings: Vec<(String, String, String)>,
    /// The output schema was loosened to fit the budget.
    pub loosened: bool,
}

/// The document context an operation is converted in.
pub(crate) struct OpContext<'a, 'b> {
    pub root: &'a Value,
    pub schemas: &'b mut Schemas<'a>,
    pub schemes: &'b std::collections::BTreeMap<String, SecurityScheme>,
    pub max_output: usize,
    /// The document's arrays are wrapped unless they say otherwise (see `openapi::xml`).
    pub xml_wrapped_default: bool,
}

fn w(code: &str, pointer: &str, message: impl Into<String>) -> (String, String, String) {
    (code.to_string(), pointer.to_string(), message.into())
}

/// One resolved parameter before argument naming.
struct RawParam {
    param: Parameter,
    schema: Value,
    description: Option<String>,
    deprecated: bool,
}

impl OpContext<'_, '_> {
    /// Converts the operation `op` at `ptr`, with the path item's `parameters`.
    pub(crate) fn convert(
        &mut self,
        op: &Value,
        ptr: &str,
        path_params: Option<(&Value, String)>,
        security: &[SecurityRequirement],
    ) -> Result<OpParts, SchemaError> {
        let mut warnings = Vec::new();
        // Parameters: path-level first, the operation's replacing them by (name, in).
        let mut raw: Vec<RawParam> = Vec::new();
        let mut lists: Vec<(&Value, String)> = Vec::new();
        if let Some(p) = path_params {
            lists.push(p);
        }
        if let Some(p) = op.get("parameters") {
            lists.push((p, format!("{ptr}/parameters")));
        }
        let credentials: Vec<(ParamLocation, String)> = security
            .iter()
            .flat_map(|req| req.keys())
            .filter_map(|name| match self.schemes.get(name) {
                Some(SecurityScheme::ApiKey { name, location }) => Some((*location, name.clone())),
                _ => None,
            })
            .collect();
        for (list, at) in lists {
            let Some(list) = list.as_array() else {
                continue;
            };
            for (i, p) in list.iter().enumerate() {
                let pp = format!("{at}/{i}");
                let (p, target) =
                    refs::follow(self.root, p, &pp).map_err(|e| SchemaError::from_ref(e, &pp))?;
                let Some(rp) = self.parameter(p, &target, &pp, &credentials, &mut warnings)? else {
                    continue;
                };
                match raw.iter_mut().find(|r| {
                    r.param.name == rp.param.name && r.param.location == rp.param.location
                }) {
                    Some(prev) => *prev = rp,
                    None => raw.push(rp),
                }
            }
        }
        // Argument names.
        let mut taken: HashSet<String> = HashSet::new();
        let mut parameters = Vec::new();
        let mut properties = Map::new();
        let mut required: Vec<Value> = Vec::new();
        for (i, r) in raw.iter().enumerate() {
            let twice = raw
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.param.name == r.param.name);
            let base = if twice {
                arg_name(&format!("{}_{}", loc_name(r.param.location), r.param.name))
            } else if valid_arg(&r.param.name) {
                r.param.name.clone()
            } else {
                arg_name(&r.param.name)
            };
            let arg = unique(&base, &taken);
            taken.insert(arg.clone());
            let mut schema = r.schema.clone();
            if let Value::Object(m) = &mut schema {
                if let Some(d) = &r.description {
                    m.insert("description".into(), Value::String(d.clone()));
                }
                if r.deprecated {
                    m.insert("deprecated".into(), Value::Bool(true));
                }
            }
            properties.insert(arg.clone(), schema);
            if r.param.required {
                required.push(Value::String(arg.clone()));
            }
            let mut p = r.param.clone();
            p.arg = arg;
            parameters.push(p);
        }
        // Body.
        let mut body = None;
        if let Some(rb) = op.get("requestBody") {
            let at = format!("{ptr}/requestBody");
            let (rb, target) =
                refs::follow(self.root, rb, &at).map_err(|e| SchemaError::from_ref(e, &at))?;
            body = self.body(
                rb,
                &at,
                &target,
                &mut taken,
                &mut properties,
                &mut required,
                &mut warnings,
            )?;
        }
        let mut input = json!({"type": "object", "properties": properties});
        if !required.is_empty()
            && let Value::Object(m) = &mut input
        {
            m.insert("required".into(), Value::Array(required));
        }
        if let Value::Object(m) = &mut input {
            m.insert("additionalProperties".into(), Value::Bool(false));
        }
        self.schemas.attach_defs(&mut input, Mode::Input, None)?;
        // Responses.
        let responses = self.responses(op, ptr, &mut warnings);
        Ok(OpParts {
            input_schema: input,
            output_schema: responses.output_schema,
            output_wrapped: responses.wrapped,
            output_xml: responses.xml,
            parameters,
            body,
            accept: responses.accept,
            warnings,
            loosened: responses.loosened,
        })
    }

    fn parameter(
        &mut self,
        p: &Value,
        target: &str,
        at: &str,
        credentials: &[(ParamLocation, String)],
        warnings: &mut Vec<(String, String, String)>,
    ) -> Result<Option<RawParam>, SchemaError> {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            warnings.push(w(
                "W_PARAMETER",
                at,
                "a parameter without `name` is ignored",
            ));
            return Ok(None);
        };
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") => ParamLocation::Path,
            Some("query") => ParamLocation::Query,
            Some("header") => ParamLocation::Header,
            Some("cookie") => ParamLocation::Cookie,
            other => {
                warnings.push(w(
                    "W_PARAMETER",
                    at,
                    format!(
                        "parameter `{name}` has `in: {}`, not an OAS 3 location; ignored",
                        other.unwrap_or("?")
                    ),
                ));
                return Ok(None);
            }
        };
        if location == ParamLocation::Header
            && ["accept", "content-type", "authorization"]
                .contains(&name.to_ascii_lowercase().as_str())
        {
            return Ok(None);
        }
        if credentials.iter().any(|(l, n)| {
            *l == location
                && (n == name
                    || (location == ParamLocation::Header && n.eq_ignore_ascii_case(name)))
        }) {
            warnings.push(w(
                "W_CREDENTIAL_PARAMETER",
                at,
                format!("parameter `{name}` is the credential of an apiKey security scheme: not an argument, sent from `auth`"),
            ));
            return Ok(None);
        }
        let style = match p.get("style").and_then(Value::as_str) {
            Some("matrix") => ParamStyle::Matrix,
            Some("label") => ParamStyle::Label,
            Some("form") => ParamStyle::Form,
            Some("simple") => ParamStyle::Simple,
            Some("spaceDelimited") => ParamStyle::SpaceDelimited,
            Some("pipeDelimited") => ParamStyle::PipeDelimited,
            Some("deepObject") => ParamStyle::DeepObject,
            _ => match location {
                ParamLocation::Query | ParamLocation::Cookie => ParamStyle::Form,
                ParamLocation::Path | ParamLocation::Header => ParamStyle::Simple,
            },
        };
        let explode = p
            .get("explode")
            .and_then(Value::as_bool)
            .unwrap_or(style == ParamStyle::Form);
        let mut content = None;
        let schema = if let Some(s) = p.get("schema") {
            self.schemas
                .convert(s, &format!("{target}/schema"), Mode::Input)?
        } else if let Some(Value::Object(c)) = p.get("content") {
            match c.iter().next() {
                Some((mt, media)) => {
                    content = Some(mt.clone());
                    match media.get("schema") {
                        Some(s) => self.schemas.convert(
                            s,
                            &format!("{target}/content/{}/schema", escape(mt)),
                            Mode::Input,
                        )?,
                        None => json!({}),
                    }
                }
                None => json!({}),
            }
        } else {
            json!({})
        };
        let mut schema = schema;
        if location == ParamLocation::Path {
            non_empty(&mut schema);
        }
        let required = location == ParamLocation::Path
            || p.get("required").and_then(Value::as_bool).unwrap_or(false);
        Ok(Some(RawParam {
            param: Parameter {
                name: name.to_string(),
                arg: String::new(),
                location,
                style,
                explode,
                allow_reserved: p
                    .get("allowReserved")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                required,
                content,
                flag: location == ParamLocation::Query
                    && p.get("allowEmptyValue").and_then(Value::as_bool) == Some(true)
                    && p.get("schema").and_then(|s| s.get("enum"))
                        == Some(&Value::Array(vec![Value::Bool(true)])),
            },
            schema,
            description: p
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            deprecated: p
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }))
    }
}

/// Says in a path parameter's schema that its value is not empty. The value fills a path
/// segment, and an empty one would call another path (`/pets/` for `/pets/{petId}`), so the
/// request builder refuses it (`path parameter 'petId' is empty`); with `minLength` /
/// `minItems` / `minProperties` of 1 for the types the schema allows (all three when it says
/// no type: each keyword holds only for its own type, JSON Schema 2020-12 validation §6.3-6.5),
/// a caller who follows the schema is never refused for it. A bound the document sets stays.
fn non_empty(schema: &mut Value) {
    let Value::Object(m) = schema else {
        return;
    };
    let allows = |ty: &str| match m.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(list)) => list.iter().any(|t| t == ty),
        _ => true,
    };
    let bounds: Vec<&str> = [
        ("string", "minLength"),
        ("array", "minItems"),
        ("object", "minProperties"),
    ]
    .into_iter()
    .filter(|(ty, keyword)| allows(ty) && !m.contains_key(*keyword))
    .map(|(_, keyword)| keyword)
    .collect();
    for keyword in bounds {
        m.insert(keyword.into(), json!(1));
    }
}

fn loc_name(l: ParamLocation) -> &'static str {
    match l {
        ParamLocation::Path => "path",
        ParamLocation::Query => "query",
        ParamLocation::Header => "header",
        ParamLocation::Cookie => "cookie",
    }
}

/// `base`, or `base_2`, `base_3`, ... when taken.
pub(crate) fn unique(base: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|c| !taken.contains(c))
        .unwrap_or_else(|| base.to_string())
}
