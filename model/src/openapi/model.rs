//! The tool model of an OpenAPI document: what [`convert`](super::convert) produces, what the
//! code generator embeds and what the runtime's HTTP binding reads. Serializable (JSON) so that
//! the build-time and the run-time conversion give the same value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::xml::XmlMapping;

/// One OpenAPI document converted into tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversion {
    /// `info.title`.
    pub title: String,
    /// `info.version`.
    pub version: String,
    /// The document's `openapi` field (`3.0.3`, `3.1.0`, `3.2.0`).
    pub openapi: String,
    /// The document-level `servers` (`[{url: "/"}]` when it has none, as OAS 3 says).
    pub servers: Vec<Server>,
    /// `components.securitySchemes`, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// One entry per operation that became a tool, in document order (paths, then methods in
    /// the order get, put, post, delete, options, head, patch, trace, query).
    pub tools: Vec<Operation>,
    /// How many operations the document has (every path × method), before filters.
    pub operations: usize,
    /// Operations left out by `include` / `exclude`.
    #[serde(default)]
    pub excluded: usize,
    /// Operations that could not become tools, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// What the conversion changed or could not express, each at its JSON pointer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// A remark about the conversion, at a place in the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// A stable code: `W_NO_OPERATION_ID`, `W_NAME_SHORTENED`, `W_UNSUPPORTED_MEDIA_TYPE`,
    /// `E_UNSATISFIABLE_SCHEMA`, ... (listed in `docs/openapi.md`).
    pub code: String,
    /// JSON pointer into the document, as a URI fragment (`#/paths/~1pets/get`).
    pub pointer: String,
    /// What happened, for a person.
    pub message: String,
}

/// An operation that did not become a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path template.
    pub path: String,
    /// Its `operationId`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Why.
    pub reason: Warning,
}

/// A server (OAS 3 "Server Object").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// The URL template (`https://{region}.api.example.com/v2`, or relative: `/api`).
    pub url: String,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its variables, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, ServerVariable>,
}

/// A server variable (OAS 3 "Server Variable Object").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerVariable {
    /// The value used when the config gives none.
    pub default: String,
    /// The values allowed (empty: any).
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A security scheme (OAS 3 "Security Scheme Object"), as far as a call needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SecurityScheme {
    /// A key in a header, query parameter or cookie.
    ApiKey {
        /// The header, query parameter or cookie name.
        name: String,
        /// Where it goes.
        #[serde(rename = "in")]
        location: ParamLocation,
    },
    /// HTTP authentication (`bearer`, `basic`, ...).
    Http {
        /// The scheme, lowercase (`bearer`, `basic`).
        scheme: String,
    },
    /// OAuth2; only the client-credentials flow can be used by a gateway.
    #[serde(rename = "oauth2")]
    OAuth2 {
        /// The token URL of its `clientCredentials` flow, if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_url: Option<String>,
    },
    /// OpenID Connect discovery.
    OpenIdConnect {
        /// The discovery URL.
        url: String,
    },
    /// Mutual TLS.
    MutualTls,
}

/// One alternative of an operation's `security`: every scheme named must be satisfied, with
/// these scopes.
pub type SecurityRequirement = BTreeMap<String, Vec<String>>;

/// An operation that became a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// The tool name, without the source prefix: `^[a-zA-Z0-9_-]{1,N}$` with N leaving room for
    /// the prefix.
    pub name: String,
    /// Its `operationId`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// `GET`, `POST`, ... (uppercase).
    pub method: String,
    /// The path template (`/pets/{petId}`).
    pub path: String,
    /// Where the operation is in the document (`#/paths/~1pets~1{petId}/get`).
    pub pointer: String,
    /// From `summary` and `description`.
    pub description: String,
    /// Its tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Marked `deprecated`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// JSON Schema 2020-12 of the arguments: an object whose properties are the parameters'
    /// and the body's [`arg`](Parameter::arg) names, with `$defs` for shared and recursive
    /// schemas.
    pub input_schema: Value,
    /// JSON Schema 2020-12 of the structured result (the 2xx JSON response), an object root:
    /// wrapped as `{result: ...}` when the response is not an object (see
    /// [`output_wrapped`](Self::output_wrapped)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The response body is sent back as `{"result": body}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_wrapped: bool,
    /// How an XML response is read into JSON (when the output schema comes from an XML media
    /// type: `application/xml`, `text/xml`, `+xml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_xml: Option<XmlMapping>,
    /// Path, query, header and cookie parameters, in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// The request body, if the operation takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<RequestBody>,
    /// The effective `security` (operation-level, else document-level): any one alternative
    /// must be met. Empty: no credentials are sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<SecurityRequirement>,
    /// Path- or operation-level `servers`; empty: the document's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<Server>,
    /// Media types of the 2xx responses (for `Accept`), in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<String>,
    /// Arguments hidden from the model and filled at call time (from tools.yaml `adapters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fills: Vec<Fill>,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamLocation {
    /// A `{placeholder}` of the path template.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// The `Cookie` header.
    Cookie,
}

/// How a parameter value is serialized (OAS 3 "Style Values").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ParamStyle {
    /// `;name=value` (path).
    Matrix,
    /// `.value` (path).
    Label,
    /// `name=value` (query, cookie; the default there).
    Form,
    /// `value,value` (path, header; the default there).
    Simple,
    /// `a b` arrays (query).
    SpaceDelimited,
    /// `a|b` arrays (query).
    PipeDelimited,
    /// `name[key]=value` objects (query).
    DeepObject,
}

/// A path, query, header or cookie parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    /// The name on the wire.
    pub name: String,
    /// The argument (input-schema property) that holds its value: the name itself, or a
    /// renamed one when it collides or is not a valid property name (documented scheme).
    pub arg: String,
    /// Where it goes.
    #[serde(rename = "in")]
    pub location: ParamLocation,
    /// Its style (defaulted per location).
    pub style: ParamStyle,
    /// Its `explode` (defaulted per style).
    pub explode: bool,
    /// `allowReserved` (query): reserved characters are sent unencoded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_reserved: bool,
    /// Must be sent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The media type when the parameter is described by `content` (the value is then
    /// serialized as that type, e.g. JSON text) instead of `schema` + `style`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A query flag: `allowEmptyValue: true` and `enum: [true]` (how documents converted from
    /// AWS models write a sub-resource such as `?tagging`); `true` is sent as the bare name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flag: bool,
}

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyEncoding {
    /// `application/json` and `+json` types.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `multipart/form-data`.
    Multipart,
    /// `application/xml`, `text/xml` and `+xml` types: the JSON value written as XML by the
    /// body's [`XmlMapping`].
    Xml,
    /// `text/*`: the argument is the text.
    Text,
    /// Any other type (`application/octet-stream`, `image/png`): the argument is base64.
    Binary,
}

/// A request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestBody {
    /// The media type sent as `Content-Type` (the first the gateway can encode, JSON first).
    pub media_type: String,
    /// How it is encoded.
    pub encoding: BodyEncoding,
    /// Must be sent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// How its value is laid out in the arguments.
    pub layout: BodyLayout,
    /// Multipart fields sent as file parts (`format: binary` / `contentEncoding: base64`):
    /// their argument holds base64 data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_fields: Vec<String>,
    /// The media type's Encoding Object (OAS 3.1 §4.8.15), by body property name: how a form
    /// field or multipart part is serialized (form, multipart only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub encodings: BTreeMap<String, FieldEncoding>,
    /// How the value is written as XML (XML bodies only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<XmlMapping>,
}

/// How one property of a form or multipart body is serialized (OAS 3.1 §4.8.15 "Encoding
/// Object"). Unset fields keep the defaults (form: `style: form`, `explode: true` for arrays;
/// multipart: `text/plain` for primitives, `application/json` for objects and arrays,
/// `application/octet-stream` for files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldEncoding {
    /// `contentType`: the multipart part's `Content-Type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// `style` (form bodies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<ParamStyle>,
    /// `explode` (form bodies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explode: Option<bool>,
    /// `allowReserved` (form bodies): reserved characters are sent unencoded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_reserved: bool,
}

/// Where a request body's value is in the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyLayout {
    /// The body object's properties are arguments of their own (no collision with a parameter).
    Flattened {
        /// Each body property: its argument and its name in the body.
        fields: Vec<BodyField>,
    },
    /// The whole body is one argument (`body`, or `request_body` when a parameter is `body`).
    Property {
        /// The argument's name.
        arg: String,
    },
}

/// A body property flattened into the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyField {
    /// The argument.
    pub arg: String,
    /// The property name in the body.
    pub name: String,
}

/// An argument filled at call time: hidden from the model (a value or the caller's context), or
/// shown with a default that is sent when the model leaves it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    /// The argument filled (its name before the adapter hid it).
    pub arg: String,
    /// Where the value comes from.
    pub from: FillFrom,
}

/// Where a [`Fill`]'s value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FillFrom {
    /// A configured value (hidden): raw tools.yaml text, `${ENV}` resolved at run time.
    Value(String),
    /// The caller's context (hidden).
    Context(crate::config::ContextField),
    /// The default shown in the schema, sent when the argument is missing.
    Default(Value),
}
