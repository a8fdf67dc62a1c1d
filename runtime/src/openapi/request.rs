//! From a tool call's arguments to the parts of an HTTP request (OAS 3.1 §4.8.10 "Operation
//! Object", §4.8.12 "Parameter Object", §4.8.13 "Request Body Object"). Pure: nothing is sent
//! here, so each rule is unit-tested without a network.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};
use toolgate_model::config::{ContextField, Secret};
use toolgate_model::openapi::{
    BodyEncoding, BodyLayout, FillFrom, Operation, ParamLocation, RequestBody, Server,
};

use super::style;
use crate::{ArgumentError, ToolContext, ToolError};

/// A request body, encoded but not yet handed to reqwest (multipart parts are not `Clone`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// `application/json` (or `+json`): the value serialized.
    Json(Value),
    /// `application/x-www-form-urlencoded`: the encoded text.
    Form(String),
    /// `multipart/form-data`: the parts in order.
    Multipart(Vec<Part>),
    /// `text/*`.
    Text(String),
    /// Any other type: raw bytes.
    Binary(Vec<u8>),
}

/// One multipart part.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// A text field (objects as JSON text). `content_type`: the Encoding Object's
    /// `contentType`, else `application/json` for JSON text, else none (`text/plain`).
    Text {
        name: String,
        value: String,
        content_type: Option<String>,
    },
    /// A file part (decoded from base64), sent as `content_type` (the Encoding Object's
    /// `contentType`, else `application/octet-stream`).
    File {
        name: String,
        bytes: Vec<u8>,
        content_type: String,
    },
}

/// The parts of an HTTP request built from arguments, before authentication.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parts {
    /// The path, every placeholder filled and encoded (`/repos/acme/web%20site`).
    pub path: String,
    /// Query pieces (`name=value`, encoded), to join with `&`.
    pub query: Vec<String>,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Cookie pairs (`name=value`), to join with `; ` in one `Cookie` header.
    pub cookies: Vec<String>,
    /// The body, with its media type.
    pub body: Option<(String, Body)>,
}

fn arg_error(tool: &str, arg: &str, message: impl Into<String>) -> ToolError {
    ToolError::invalid_arguments(
        tool,
        vec![ArgumentError {
            pointer: format!("/{}", arg.replace('~', "~0").replace('/', "~1")),
            message: message.into(),
        }],
    )
}

/// Whether the operation's input schema lists `arg` as required.
fn schema_requires(op: &Operation, arg: &str) -> bool {
    op.input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|a| a == arg))
}

/// Applies the operation's fills to `args` (OAS has no notion of them: tools.yaml `adapters`).
/// `values` holds the resolved `value:` fills by argument. A `from_context` fill the context
/// cannot give fails with `invalid_arguments` naming the argument when it is required.
///
/// # Errors
/// `invalid_arguments` as said.
pub(crate) fn apply_fills(
    tool: &str,
    op: &Operation,
    values: &BTreeMap<String, Secret>,
    args: &mut Map<String, Value>,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    for fill in &op.fills {
        match &fill.from {
            FillFrom::Value(_) => {
                if let Some(v) = values.get(&fill.arg) {
                    args.insert(fill.arg.clone(), Value::String(v.expose().to_string()));
                }
            }
            FillFrom::Context(field) => {
                let (value, what) = match field {
                    ContextField::Caller => (ctx.caller(), "caller"),
                    ContextField::Agent => (ctx.agent(), "agent"),
                };
                match value {
                    Some(v) => {
                        args.insert(fill.arg.clone(), Value::String(v.to_string()));
                    }
                    None => {
                        let required = op
                            .parameters
                            .iter()
                            .any(|p| p.arg == fill.arg && p.required)
                            || schema_requires(op, &fill.arg);
                        if required {
                            return Err(arg_error(
                                tool,
                                &fill.arg,
                                format!(
                                    "`{}` is filled from the caller's {what} name, and this \
                                     call has none",
                                    fill.arg
                                ),
                            ));
                        }
                    }
                }
            }
            FillFrom::Default(default) => {
                if style::is_absent(args.get(&fill.arg)) {
                    args.insert(fill.arg.clone(), default.clone());
                }
            }
        }
    }
    Ok(())
}

/// Builds the request parts of `op` from (filled) `args`.
///
/// Path values are expanded per their style and encoded as single segments; the template's
/// `#fragment`, if any, is left out; a `{...}` left in the path fails with `missing path parameter '<name>'` before anything is sent.
///
/// # Errors
/// `invalid_arguments`: a required parameter or body missing, a path placeholder left, bad
/// base64 in a binary or file argument.
pub(crate) fn build(
    tool: &str,
    op: &Operation,
    args: &Map<String, Value>,
) -> Result<Parts, ToolError> {
    let mut parts = Parts {
        path: String::new(),
        query: Vec::new(),
        headers: Vec::new(),
        cookies: Vec::new(),
        body: None,
    };
    // Path values by placeholder name, expanded and encoded; substituted segment by segment
    // below so that a value making a whole dot segment is refused.
    let mut expanded: Vec<(&str, &str, String)> = Vec::new();
    for p in &op.parameters {
        let value = args.get(&p.arg);
        if style::is_absent(value) {
            if p.required && p.location != ParamLocation::Path {
                return Err(arg_error(
                    tool,
                    &p.arg,
                    format!("missing required argument `{}`", p.arg),
                ));
            }
            continue;
        }
        let value = value.unwrap_or(&Value::Null);
        match p.location {
            ParamLocation::Path => {
                if is_empty_value(value) {
                    return Err(arg_error(
                        tool,
                        &p.arg,
                        format!("path parameter '{}' is empty", p.name),
                    ));
                }
                expanded.push((&p.name, &p.arg, style::path_value(p, value)));
            }
            ParamLocation::Query => parts.query.extend(style::query_pieces(p, value)),
            ParamLocation::Header => parts
                .headers
                .push((p.name.clone(), style::header_value(p, value))),
            ParamLocation::Cookie => parts.cookies.extend(style::cookie_pairs(p, value)),
        }
    }
    // A `#fragment` of the template is never sent (APIs.guru's AWS documents tell operations
    // on one path apart this way: `/{Bucket}#tagging`); values are encoded, so only the
    // template's own `#` counts.
    let template = op.path.split('#').next().unwrap_or_default();
    let path = fill_path(tool, template, &expanded)?;
    if let Some(name) = placeholder(&path) {
        return Err(arg_error(
            tool,
            name,
            format!("missing path parameter '{name}'"),
        ));
    }
    parts.path = path;
    if let Some(body) = &op.body {
        parts.body = body_of(tool, body, args)?.map(|b| (body.media_type.clone(), b));
    }
    Ok(parts)
}

/// An empty string, array or object: no path segment can hold it.
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Whether a path segment is a dot segment as URL parsers see it (WHATWG URL: `.`, `..` and
/// their `%2e` spellings, which `reqwest::Url` resolves too).
fn is_dot_segment(seg: &str) -> bool {
    matches!(
        seg.to_ascii_lowercase().as_str(),
        "." | "%2e" | ".." | ".%2e" | "%2e." | "%2e%2e"
    )
}

/// The path template with each `{name}` replaced by its expansion, segment by segment. A
/// segment made of values that comes out as a dot segment (`..`, or `.` from a `label` value
/// `.`) is refused: the URL parser would resolve it and change the route, and no
/// percent-encoding survives it (`%2E%2E` is a dot segment to URL parsers too).
///
/// # Errors
/// `invalid_arguments` naming the first parameter of such a segment.
fn fill_path(
    tool: &str,
    template: &str,
    values: &[(&str, &str, String)],
) -> Result<String, ToolError> {
    let mut out = Vec::new();
    for seg in template.split('/') {
        let mut filled = seg.to_string();
        let mut first: Option<(&str, &str)> = None;
        for (name, arg, value) in values {
            let ph = format!("{{{name}}}");
            if seg.contains(&ph) {
                filled = filled.replace(&ph, value);
                first = first.or(Some((name, arg)));
            }
        }
        if let Some((name, arg)) = first
            && is_dot_segment(&filled)
        {
            return Err(arg_error(
                tool,
                arg,
                format!(
                    "path parameter '{name}' cannot make the path segment `{filled}`: a dot \
                     segment would change the route"
                ),
            ));
        }
        out.push(filled);
    }
    Ok(out.join("/"))
}

/// The name inside the first `{...}` left in `path`.
fn placeholder(path: &str) -> Option<&str> {
    let start = path.find('{')?;
    let rest = &path[start + 1..];
    Some(rest.find('}').map_or(rest, |end| &rest[..end]))
}

/// The body's value from the arguments: the flattened fields gathered into an object, or the
/// one body argument. `None` when nothing of it was given.
///
/// A field given as `null` is kept in a JSON body (`{"level": null}`: a nullable field set to
/// null); a field left out stays out. In form and multipart bodies, as for parameters,
/// `null` means not sent.
fn body_value(body: &RequestBody, args: &Map<String, Value>) -> Option<Value> {
    let keep_null = body.encoding == BodyEncoding::Json;
    match &body.layout {
        BodyLayout::Property { arg } => args.get(arg).filter(|v| !v.is_null()).cloned(),
        BodyLayout::Flattened { fields } => {
            let mut obj = Map::new();
            for f in fields {
                if let Some(v) = args.get(&f.arg).filter(|v| keep_null || !v.is_null()) {
                    obj.insert(f.name.clone(), v.clone());
                }
            }
            (!obj.is_empty()).then_some(Value::Object(obj))
        }
    }
}

fn body_arg(body: &RequestBody) -> &str {
    match &body.layout {
        BodyLayout::Property { arg } => arg,
        BodyLayout::Flattened { .. } => "",
    }
}

fn body_of(
    tool: &str,
    body: &RequestBody,
    args: &Map<String, Value>,
) -> Result<Option<Body>, ToolError> {
    let Some(value) = body_value(body, args) else {
        // An XML body whose fields (flattened) are all left out is not sent: an empty root
        // element is not what such a body means.
        let flat_xml = body.encoding == BodyEncoding::Xml
            && matches!(body.layout, BodyLayout::Flattened { .. });
        if body.required && body.encoding != BodyEncoding::Json && !flat_xml {
            return Err(arg_error(
                tool,
                body_arg(body),
                "the request body is required",
            ));
        }
        // A required JSON body whose fields are all optional is sent as `{}`.
        return Ok((body.required && !flat_xml).then(|| Body::Json(Value::Object(Map::new()))));
    };
    Ok(Some(match body.encoding {
        BodyEncoding::Json => Body::Json(value),
        BodyEncoding::Form => {
            let mut pieces = Vec::new();
            if let Value::Object(map) = &value {
                for (k, v) in map {
                    pieces.extend(style::form_field(k, v, body.encodings.get(k)));
                }
            } else {
                return Err(arg_error(
                    tool,
                    body_arg(body),
                    "a form body must be an object",
                ));
            }
            Body::Form(pieces.join("&"))
        }
        BodyEncoding::Multipart => {
            let Value::Object(map) = &value else {
                return Err(arg_error(
                    tool,
                    body_arg(body),
                    "a multipart body must be an object",
                ));
            };
            let mut out = Vec::new();
            for (k, v) in map {
                if v.is_null() {
                    continue;
                }
                let is_file = body.file_fields.iter().any(|f| f == k)
                    || field_arg(body, k).is_some_and(|a| body.file_fields.iter().any(|f| f == a));
                let arg = field_arg(body, k).unwrap_or(k);
                let declared = body
                    .encodings
                    .get(k)
                    .and_then(|e| e.content_type.as_deref())
                    .and_then(part_content_type);
                // An array is one part per item, each by its own type (OAS 3.1.1 §4.8.15.1).
                let items: Vec<&Value> = match v {
                    Value::Array(items) => items.iter().filter(|i| !i.is_null()).collect(),
                    other => vec![other],
                };
                for item in items {
                    if is_file {
                        let text = item.as_str().unwrap_or_default();
                        let bytes = decode_base64(text)
                            .ok_or_else(|| arg_error(tool, arg, "must be base64 data (a file)"))?;
                        out.push(Part::File {
                            name: k.clone(),
                            bytes,
                            content_type: declared
                                .clone()
                                .unwrap_or_else(|| "application/octet-stream".to_string()),
                        });
                    } else {
                        // Objects (and nested arrays) as JSON text, `application/json` unless
                        // the encoding says otherwise.
                        let json = matches!(item, Value::Object(_) | Value::Array(_));
                        out.push(Part::Text {
                            name: k.clone(),
                            value: style::prim_text(item),
                            content_type: declared
                                .clone()
                                .or_else(|| json.then(|| "application/json".to_string())),
                        });
                    }
                }
            }
            Body::Multipart(out)
        }
        BodyEncoding::Xml => {
            let Some(mapping) = &body.xml else {
                return Err(arg_error(
                    tool,
                    body_arg(body),
                    "the operation's XML body has no XML layout (convert the document again)",
                ));
            };
            Body::Text(
                super::xml::encode(mapping, &value)
                    .map_err(|e| arg_error(tool, body_arg(body), e))?,
            )
        }
        BodyEncoding::Text => Body::Text(style::prim_text(&value)),
        BodyEncoding::Binary => {
            let text = value.as_str().unwrap_or_default();
            let bytes = decode_base64(text)
                .ok_or_else(|| arg_error(tool, body_arg(body), "must be base64 data"))?;
            Body::Binary(bytes)
        }
    }))
}

/// The part `Content-Type` from an Encoding Object's `contentType`: the first of a list
/// (`image/png, image/jpeg`); none for a wildcard (`image/*`), which names no actual type.
fn part_content_type(declared: &str) -> Option<String> {
    let first = declared.split(',').next().unwrap_or("").trim();
    (!first.is_empty() && !first.contains('*')).then(|| first.to_string())
}

fn field_arg<'a>(body: &'a RequestBody, name: &str) -> Option<&'a str> {
    match &body.layout {
        BodyLayout::Flattened { fields } => fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.arg.as_str()),
        BodyLayout::Property { .. } => None,
    }
}

/// Base64 in any of the usual alphabets, padded or not (a `data:` URL's payload too).
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let text = text
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,").map(|(_, data)| data))
        .unwrap_or(text)
        .trim();
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
}

/// The base URL of `op` (OAS 3.1 §4.8.5 "Server Object", §4.8.10 `servers`): the config's
/// `base_url` wins, else the operation's (path's) servers, else the document's; the first
/// entry, with its variables filled from `values` (else their defaults). A relative URL is
/// resolved against `spec_url` (the document's own URL). A trailing `/` is removed, so that the
/// operation's path is appended to the base path (`https://api.x/v2` + `/pets`).
///
/// # Errors
/// A message: a server variable value not allowed, a relative URL without a document URL, a URL
/// that does not parse or still contains `{`.
pub(crate) fn base_url(
    config: Option<&str>,
    op_servers: &[Server],
    doc_servers: &[Server],
    values: &BTreeMap<String, String>,
    spec_url: Option<&reqwest::Url>,
) -> Result<reqwest::Url, String> {
    let raw = match config {
        Some(url) => url.to_string(),
        None => {
            let server = op_servers
                .first()
                .or_else(|| doc_servers.first())
                .ok_or("the document has no servers; set base_url")?;
            if server.variables.is_empty() && !server.url.contains('{') {
                server.url.clone()
            } else {
                // Only this server's variables: tools.yaml may set one that another server of
                // the document has (unknown names are refused when the source is built).
                let own: BTreeMap<String, String> = values
                    .iter()
                    .filter(|(k, _)| server.variables.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                server.resolve(&own)?
            }
        }
    };
    if raw.contains('{') || raw.contains('}') {
        return Err(format!(
            "the base URL `{raw}` still contains a `{{variable}}`"
        ));
    }
    let url = match reqwest::Url::parse(&raw) {
        Ok(url) => url,
        Err(_) if !raw.contains("://") => {
            let base = spec_url.ok_or_else(|| {
                format!(
                    "the server URL `{raw}` is relative and the document was not read from a \
                     URL to resolve it against; set base_url"
                )
            })?;
            base.join(&raw)
                .map_err(|e| format!("the server URL `{raw}` does not resolve: {e}"))?
        }
        Err(e) => return Err(format!("the base URL `{raw}` is not a valid URL: {e}")),
    };
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "the base URL `{url}` is not an http(s) URL with a host"
        ));
    }
    let mut url = url;
    url.set_query(None);
    url.set_fragment(None);
    let trimmed = url.path().trim_end_matches('/').to_string();
    url.set_path(&trimmed);
    Ok(url)
}

/// The full URL: `base` + `path` + `?query` (pieces already encoded).
pub(crate) fn full_url(
    base: &reqwest::Url,
    path: &str,
    query: &[String],
) -> Result<reqwest::Url, String> {
    let mut text = base.as_str().trim_end_matches('/').to_string();
    if !path.starts_with('/') {
        text.push('/');
    }
    text.push_str(path);
    if !query.is_empty() {
        text.push('?');
        text.push_str(&query.join("&"));
    }
    reqwest::Url::parse(&text).map_err(|e| format!("the request URL is not valid: {e}"))
}
