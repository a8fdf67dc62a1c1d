//! Parameter serialization: OAS 3.1 §4.8.12.4 "Style Values" and "Style Examples", which follow
//! RFC 6570 (URI Template) level-4 expansion. Where the OAS 3.1.0 table and RFC 6570 disagree
//! (`label` without explode: `.blue,black,brown`), the RFC wins, as OAS 3.1.1 corrected.
//!
//! | style | explode | string | array | object |
//! | --- | --- | --- | --- | --- |
//! | matrix | no | `;color=blue` | `;color=blue,black` | `;color=R,100,G,200` |
//! | matrix | yes | `;color=blue` | `;color=blue;color=black` | `;R=100;G=200` |
//! | label | no | `.blue` | `.blue,black` | `.R,100,G,200` |
//! | label | yes | `.blue` | `.blue.black` | `.R=100.G=200` |
//! | simple | no | `blue` | `blue,black` | `R,100,G,200` |
//! | simple | yes | `blue` | `blue,black` | `R=100,G=200` |
//! | form | no | `color=blue` | `color=blue,black` | `color=R,100,G,200` |
//! | form | yes | `color=blue` | `color=blue&color=black` | `R=100&G=200` |
//! | spaceDelimited | no | – | `color=blue%20black` | `color=R%20100%20G%20200` |
//! | pipeDelimited | no | – | `color=blue\|black` | `color=R\|100\|G\|200` |
//! | deepObject | yes | – | – | `color[R]=100&color[G]=200` |
//!
//! Primitives print as JSON does (`true`, `1.5`), strings without quotes; `null` and missing
//! values send nothing; empty arrays and objects send nothing in a query. Items that are
//! themselves arrays or objects are sent as JSON text. A style that does not apply to the value
//! (`deepObject` for a string) falls back to the location's default (`form`).
//!
//! Encoding: path values are percent-encoded leaving only RFC 3986 *unreserved* characters
//! (`A-Z a-z 0-9 - . _ ~`), so each value stays one segment; query names and
//! values likewise (space as `%20`), except that `allowReserved` keeps RFC 3986 reserved
//! characters (`:/?[]@!$&'()*+,;=`, but not `#`, which would end the URL); header values are
//! sent as they are; cookie values are percent-encoded where RFC 6265 forbids a character
//! (controls, space, `"`, `,`, `;`, `\`, `%`).

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::Value;
use toolgate_model::openapi::{FieldEncoding, ParamStyle, Parameter};
use toolgate_model::uri::UNRESERVED;

/// [`UNRESERVED`] minus the RFC 3986 reserved characters (`allowReserved`), `#` excepted.
const RESERVED_KEPT: &AsciiSet = &UNRESERVED
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'[')
    .remove(b']')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=');

/// What RFC 6265 `cookie-octet` forbids.
const COOKIE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b',')
    .add(b';')
    .add(b'\\')
    .add(b'%');

/// Percent-encodes `s` as one path segment (only unreserved characters left).
pub(crate) fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}

/// Percent-encodes a query name or value.
pub(crate) fn encode_query(s: &str, allow_reserved: bool) -> String {
    let set = if allow_reserved {
        RESERVED_KEPT
    } else {
        UNRESERVED
    };
    utf8_percent_encode(s, set).to_string()
}

fn encode_cookie(s: &str) -> String {
    utf8_percent_encode(s, COOKIE).to_string()
}

/// A value seen as RFC 6570 sees it: a string, a list, or an associative array.
enum Shape {
    Prim(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

/// The text of a primitive: strings as they are, other values as JSON.
pub(crate) fn prim_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn shape(v: &Value) -> Shape {
    match v {
        Value::Array(items) => Shape::List(items.iter().map(prim_text).collect()),
        Value::Object(map) => {
            Shape::Map(map.iter().map(|(k, v)| (k.clone(), prim_text(v))).collect())
        }
        other => Shape::Prim(prim_text(other)),
    }
}

/// `k,v,k2,v2` (or `k=v,k2=v2` when `pairs`), each piece encoded.
fn join_map(
    map: &[(String, String)],
    enc: &dyn Fn(&str) -> String,
    pairs: bool,
    sep: &str,
) -> String {
    map.iter()
        .map(|(k, v)| {
            if pairs {
                format!("{}={}", enc(k), enc(v))
            } else {
                format!("{},{}", enc(k), enc(v))
            }
        })
        .collect::<Vec<_>>()
        .join(sep)
}

fn join_list(items: &[String], enc: &dyn Fn(&str) -> String, sep: &str) -> String {
    items.iter().map(|i| enc(i)).collect::<Vec<_>>().join(sep)
}

/// The expansion of a path parameter (`simple`, `label`, `matrix`), to replace `{name}`.
pub(crate) fn path_value(p: &Parameter, v: &Value) -> String {
    let enc = |s: &str| encode_segment(s);
    let name = encode_segment(&p.name);
    let v = content_value(p, v);
    match (p.style, shape(&v)) {
        (ParamStyle::Label, Shape::Prim(s)) => format!(".{}", enc(&s)),
        (ParamStyle::Label, Shape::List(l)) => {
            format!(
                ".{}",
                join_list(&l, &enc, if p.explode { "." } else { "," })
            )
        }
        (ParamStyle::Label, Shape::Map(m)) => {
            format!(
                ".{}",
                join_map(&m, &enc, p.explode, if p.explode { "." } else { "," })
            )
        }
        (ParamStyle::Matrix, Shape::Prim(s)) if s.is_empty() => format!(";{name}"),
        (ParamStyle::Matrix, Shape::Prim(s)) => format!(";{name}={}", enc(&s)),
        (ParamStyle::Matrix, Shape::List(l)) if p.explode => {
            l.iter().map(|i| format!(";{name}={}", enc(i))).collect()
        }
        (ParamStyle::Matrix, Shape::List(l)) => format!(";{name}={}", join_list(&l, &enc, ",")),
        (ParamStyle::Matrix, Shape::Map(m)) if p.explode => {
            format!(";{}", join_map(&m, &enc, true, ";"))
        }
        (ParamStyle::Matrix, Shape::Map(m)) => {
            format!(";{name}={}", join_map(&m, &enc, false, ","))
        }
        // simple, and anything else in a path
        (_, Shape::Prim(s)) => enc(&s),
        (_, Shape::List(l)) => join_list(&l, &enc, ","),
        (_, Shape::Map(m)) => join_map(&m, &enc, p.explode, ","),
    }
}

/// The query-string pieces of a parameter (`name=value`, already encoded), to join with `&`; a
/// [flag](Parameter::flag) set to `true` is its bare name.
pub(crate) fn query_pieces(p: &Parameter, v: &Value) -> Vec<String> {
    let ar = p.allow_reserved;
    let enc = move |s: &str| encode_query(s, ar);
    let name = encode_query(&p.name, false);
    if p.flag && *v == Value::Bool(true) {
        return vec![name];
    }
    let v = content_value(p, v);
    match (p.style, shape(&v)) {
        (_, Shape::Prim(s)) => vec![format!("{name}={}", enc(&s))],
        (_, Shape::List(l)) if l.is_empty() => Vec::new(),
        (_, Shape::Map(m)) if m.is_empty() => Vec::new(),
        (ParamStyle::SpaceDelimited, Shape::List(l)) if !p.explode => {
            vec![format!("{name}={}", join_list(&l, &enc, "%20"))]
        }
        (ParamStyle::SpaceDelimited, Shape::Map(m)) if !p.explode => {
            vec![format!(
                "{name}={}",
                join_map(&m, &enc, false, "%20").replace(',', "%20")
            )]
        }
        (ParamStyle::PipeDelimited, Shape::List(l)) if !p.explode => {
            vec![format!("{name}={}", join_list(&l, &enc, "|"))]
        }
        (ParamStyle::PipeDelimited, Shape::Map(m)) if !p.explode => vec![format!(
            "{name}={}",
            m.iter()
                .map(|(k, v)| format!("{}|{}", enc(k), enc(v)))
                .collect::<Vec<_>>()
                .join("|")
        )],
        (ParamStyle::DeepObject, Shape::Map(_)) => {
            let mut out = Vec::new();
            deep_object(&p.name, &v, &enc, &mut out);
            out
        }
        // form (and the delimited styles exploded, which the table leaves to form)
        (_, Shape::List(l)) if p.explode => {
            l.iter().map(|i| format!("{name}={}", enc(i))).collect()
        }
        (_, Shape::List(l)) => vec![format!("{name}={}", join_list(&l, &enc, ","))],
        (_, Shape::Map(m)) if p.explode => m
            .iter()
            .map(|(k, v)| format!("{}={}", encode_query(k, false), enc(v)))
            .collect(),
        (_, Shape::Map(m)) => vec![format!("{name}={}", join_map(&m, &enc, false, ","))],
    }
}

/// `name[k]=v`, recursing into nested objects (`name[a][b]=v`) and repeating arrays.
fn deep_object(prefix: &str, v: &Value, enc: &dyn Fn(&str) -> String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                deep_object(&format!("{prefix}[{k}]"), child, enc, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push(format!(
                    "{}={}",
                    encode_brackets(prefix),
                    enc(&prim_text(item))
                ));
            }
        }
        Value::Null => {}
        other => out.push(format!(
            "{}={}",
            encode_brackets(prefix),
            enc(&prim_text(other))
        )),
    }
}

/// A deepObject key: encoded, with its brackets kept as the OAS examples write them.
fn encode_brackets(key: &str) -> String {
    encode_query(key, false)
        .replace("%5B", "[")
        .replace("%5D", "]")
}

/// A form-urlencoded body's pieces for one field, per OAS 3.1 §4.8.15 "Encoding Object": the
/// field's `style` / `explode` / `allowReserved` when its encoding gives them, serialized as a
/// query parameter of that style would be; the defaults are `style: form`, `explode: true`
/// (arrays repeated). An object whose encoding gives neither `style` nor `explode` is sent as
/// `deepObject` (`a[b]=1`), what form-handling servers parse back into an object; with either
/// given it follows the style (`form` + explode: `b=1`).
pub(crate) fn form_field(name: &str, v: &Value, enc: Option<&FieldEncoding>) -> Vec<String> {
    if v.is_null() {
        return Vec::new();
    }
    let explicit = enc.is_some_and(|e| e.style.is_some() || e.explode.is_some());
    let style = enc.and_then(|e| e.style).unwrap_or(ParamStyle::Form);
    let style = if v.is_object() && !explicit {
        ParamStyle::DeepObject
    } else {
        style
    };
    let p = Parameter {
        name: name.to_string(),
        arg: name.to_string(),
        location: toolgate_model::openapi::ParamLocation::Query,
        style,
        explode: enc
            .and_then(|e| e.explode)
            .unwrap_or(style == ParamStyle::Form),
        allow_reserved: enc.is_some_and(|e| e.allow_reserved),
        required: false,
        content: None,
        flag: false,
    };
    query_pieces(&p, v)
}

/// A header's value (`simple`; not percent-encoded).
pub(crate) fn header_value(p: &Parameter, v: &Value) -> String {
    let same = |s: &str| s.to_string();
    match shape(&content_value(p, v)) {
        Shape::Prim(s) => s,
        Shape::List(l) => join_list(&l, &same, ","),
        Shape::Map(m) => join_map(&m, &same, p.explode, ","),
    }
}

/// A cookie parameter's `name=value` pairs (`form`), to join with `; ` in one `Cookie` header.
pub(crate) fn cookie_pairs(p: &Parameter, v: &Value) -> Vec<String> {
    let enc = |s: &str| encode_cookie(s);
    let name = encode_cookie(&p.name);
    match shape(&content_value(p, v)) {
        Shape::Prim(s) => vec![format!("{name}={}", enc(&s))],
        Shape::List(l) if p.explode => l.iter().map(|i| format!("{name}={}", enc(i))).collect(),
        Shape::List(l) => vec![format!("{name}={}", join_list(&l, &enc, ","))],
        Shape::Map(m) if p.explode => m
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect(),
        Shape::Map(m) => vec![format!("{name}={}", join_map(&m, &enc, false, ","))],
    }
}

/// A `content` parameter's value: JSON text (OAS 3.1 §4.8.12: `content` describes the value's
/// serialization as a media type); others unchanged.
fn content_value(p: &Parameter, v: &Value) -> Value {
    match &p.content {
        Some(_) => Value::String(v.to_string()),
        None => v.clone(),
    }
}

/// Whether the parameter's value is absent for serialization purposes (`null`).
pub(crate) fn is_absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// The parameter's default style where the model says nothing better (used in tests).
#[cfg(test)]
pub(crate) fn param(
    name: &str,
    location: toolgate_model::openapi::ParamLocation,
    style: ParamStyle,
    explode: bool,
) -> Parameter {
    Parameter {
        name: name.to_string(),
        arg: name.to_string(),
        location,
        style,
        explode,
        allow_reserved: false,
        required: false,
        content: None,
        flag: false,
    }
}
