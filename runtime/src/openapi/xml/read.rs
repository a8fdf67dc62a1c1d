//! XML text → JSON value, typed by an [`XmlMapping`].

use quick_xml::Reader;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use serde_json::{Map, Number, Value};
use toolgate_model::openapi::{XmlKind, XmlMapping, XmlNode, XmlProperty};

use super::{MAX_DEPTH, MAX_ELEMENTS};

/// One parsed element: local names (prefixes dropped, `xmlns` declarations left out).
#[derive(Debug, Default)]
struct Elem {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Elem>,
    text: String,
}

/// Reads an XML answer into JSON by `mapping`: the root element's content (its own name is not
/// checked: APIs name answers differently from their schemas) as the root node says, wrapped
/// as `{root_property: ...}` when the mapping has a document wrapper.
///
/// Typing: `integer` / `number` / `boolean` text becomes a JSON number / boolean (text that
/// does not parse stays a string); an array property collects every matching element (one
/// element is still an array; `wrapped` arrays read the wrapper's children, and an array not
/// found the way its `wrapped` says is tried the other way); elements and attributes the
/// schema does not name are kept by name (`@name` for attributes, repeated names as arrays).
///
/// # Errors
/// Why the text is not a readable XML document: not UTF-8, not well-formed (with the byte
/// position), an unknown entity reference (DTD entities are never expanded), more than
/// [`MAX_DEPTH`] nested or [`MAX_ELEMENTS`] elements, no root element.
pub(crate) fn decode(mapping: &XmlMapping, body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8: {e}"))?;
    let root = parse(text)?;
    let value = Typed { m: mapping }.value(&root, &mapping.root, 0);
    Ok(match &mapping.root_property {
        Some(p) => {
            let mut m = Map::new();
            m.insert(p.clone(), value);
            Value::Object(m)
        }
        None => value,
    })
}

fn local(name: &str) -> String {
    match name.rsplit_once(':') {
        Some((_, l)) => l.to_string(),
        None => name.to_string(),
    }
}

fn open(e: &BytesStart<'_>) -> Result<Elem, String> {
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|e| format!("bad attribute: {e}"))?;
        let key: String = a.key.as_ref().to_string();
        if key == "xmlns" || key.starts_with("xmlns:") {
            continue;
        }
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| format!("attribute `{key}`: {e}"))?;
        attrs.push((local(&key), value.into_owned()));
    }
    Ok(Elem {
        name: local(e.name().as_ref()),
        attrs,
        ..Elem::default()
    })
}

/// The document's root element, bounded in depth and element count.
fn parse(text: &str) -> Result<Elem, String> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Elem> = Vec::new();
    let mut root: Option<Elem> = None;
    let mut count = 0usize;
    let at = |r: &Reader<&[u8]>| r.buffer_position();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("not well-formed XML at byte {}: {e}", at(&reader)))?;
        let mut close = None;
        match event {
            Event::Start(e) => {
                count += 1;
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("nested deeper than {MAX_DEPTH} elements"));
                }
                if count > MAX_ELEMENTS {
                    return Err(format!("more than {MAX_ELEMENTS} elements"));
                }
                if root.is_some() {
                    return Err("more than one root element".into());
                }
                stack.push(open(&e)?);
            }
            Event::Empty(e) => {
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err(format!("more than {MAX_ELEMENTS} elements"));
                }
                if root.is_some() {
                    return Err("more than one root element".into());
                }
                close = Some(open(&e)?);
            }
            Event::End(_) => close = stack.pop(),
            Event::Text(t) => {
                let t = t.xml10_content();
                match stack.last_mut() {
                    Some(top) => top.text.push_str(&t),
                    None if t.trim().is_empty() => {}
                    None => return Err("text outside the root element".into()),
                }
            }
            Event::CData(c) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&c.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => match resolve_predefined_entity(&r) {
                        Some(s) => s.to_string(),
                        None => {
                            return Err(format!(
                                "unknown entity `&{};` at byte {} (DTD entities are not expanded)",
                                &*r,
                                at(&reader)
                            ));
                        }
                    },
                    Err(e) => return Err(format!("bad character reference: {e}")),
                };
                match stack.last_mut() {
                    Some(top) => top.text.push_str(&resolved),
                    None => return Err("a reference outside the root element".into()),
                }
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
        }
        if let Some(done) = close {
            match stack.last_mut() {
                Some(parent) => parent.children.push(done),
                None => root = Some(done),
            }
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!("the document ends inside <{}>", open.name));
    }
    root.ok_or_else(|| "no root element".to_string())
}

struct Typed<'m> {
    m: &'m XmlMapping,
}

/// Text as the schema's scalar type; text that does not parse stays a string.
fn scalar(text: &str, kind: &XmlKind) -> Value {
    let t = text.trim();
    match kind {
        XmlKind::Integer | XmlKind::Number => {
            if let Ok(i) = t.parse::<i64>() {
                return Value::Number(i.into());
            }
            if let Ok(u) = t.parse::<u64>() {
                return Value::Number(u.into());
            }
            if *kind == XmlKind::Number
                && let Some(n) = t.parse::<f64>().ok().and_then(Number::from_f64)
            {
                return Value::Number(n);
            }
            Value::String(text.to_string())
        }
        XmlKind::Boolean => match t {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => Value::String(text.to_string()),
        },
        _ => Value::String(text.to_string()),
    }
}

impl Typed<'_> {
    fn value(&self, e: &Elem, node: &XmlNode, depth: usize) -> Value {
        let n = self.m.resolve(node);
        if depth > MAX_DEPTH {
            return generic(e);
        }
        match &n.kind {
            XmlKind::Object {
                properties,
                additional,
            } => self.object(e, properties, additional.as_deref(), depth),
            XmlKind::Array { items } => Value::Array(
                e.children
                    .iter()
                    .map(|c| self.value(c, items, depth + 1))
                    .collect(),
            ),
            XmlKind::Any | XmlKind::Ref { .. } => generic(e),
            scalar_kind => scalar(&e.text, scalar_kind),
        }
    }

    fn object(
        &self,
        e: &Elem,
        properties: &[XmlProperty],
        additional: Option<&XmlNode>,
        depth: usize,
    ) -> Value {
        let mut out = Map::new();
        let mut used = vec![false; e.children.len()];
        let mut used_attrs = vec![false; e.attrs.len()];
        for p in properties {
            let pn = self.m.resolve(&p.node);
            let name = pn.name.clone().unwrap_or_else(|| p.name.clone());
            if pn.attribute == Some(true) {
                if let Some(i) = e.attrs.iter().position(|(k, _)| *k == name) {
                    used_attrs[i] = true;
                    out.insert(p.name.clone(), scalar(&e.attrs[i].1, &pn.kind));
                }
                continue;
            }
            let find = |want: &str, used: &[bool]| {
                e.children
                    .iter()
                    .enumerate()
                    .filter(|(i, c)| !used[*i] && c.name == want)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>()
            };
            if let XmlKind::Array { items } = &pn.kind {
                let item_name = self.m.resolve(items).name.unwrap_or_else(|| {
                    if self.m.is_wrapped(&pn) {
                        p.name.clone()
                    } else {
                        name.clone()
                    }
                });
                let wrapper = find(&name, &used).first().copied();
                let repeated = find(&item_name, &used);
                // As `wrapped` says, else the other way (a document may say it wrong).
                let wrapped = match (self.m.is_wrapped(&pn), wrapper) {
                    (true, Some(_)) => true,
                    (false, Some(w)) => {
                        repeated.is_empty()
                            && e.children[w].children.iter().any(|c| c.name == item_name)
                    }
                    _ => false,
                };
                let items_value: Vec<Value> = if wrapped {
                    let w = wrapper.unwrap_or_default();
                    used[w] = true;
                    e.children[w]
                        .children
                        .iter()
                        .map(|c| self.value(c, items, depth + 1))
                        .collect()
                } else if !repeated.is_empty() {
                    for &i in &repeated {
                        used[i] = true;
                    }
                    repeated
                        .iter()
                        .map(|&i| self.value(&e.children[i], items, depth + 1))
                        .collect()
                } else {
                    continue;
                };
                out.insert(p.name.clone(), Value::Array(items_value));
            } else if let Some(&i) = find(&name, &used).first() {
                used[i] = true;
                out.insert(
                    p.name.clone(),
                    self.value(&e.children[i], &p.node, depth + 1),
                );
            }
        }
        for (i, (k, v)) in e.attrs.iter().enumerate() {
            if !used_attrs[i] {
                out.entry(format!("@{k}"))
                    .or_insert_with(|| Value::String(v.clone()));
            }
        }
        let rest = e
            .children
            .iter()
            .enumerate()
            .filter(|(i, _)| !used[*i])
            .map(|(_, c)| {
                let v = match additional {
                    Some(a) => self.value(c, a, depth + 1),
                    None => generic(c),
                };
                (c.name.as_str(), v)
            })
            .collect();
        insert_grouped(&mut out, rest);
        Value::Object(out)
    }
}

/// Elements by name into `out`: one element is its value, a repeated name an array of them (a
/// key the schema already filled is left as it is).
fn insert_grouped(out: &mut Map<String, Value>, items: Vec<(&str, Value)>) {
    let mut groups: Vec<(&str, Vec<Value>)> = Vec::new();
    for (k, v) in items {
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((k, vec![v])),
        }
    }
    for (k, mut vs) in groups {
        let v = if vs.len() == 1 {
            vs.pop().unwrap_or_default()
        } else {
            Value::Array(vs)
        };
        out.entry(k.to_string()).or_insert(v);
    }
}

/// An element no schema describes: text when it has no attributes or children, else an object
/// (`@name` attributes, children by name, repeated names as arrays, `#text` for text beside
/// them).
fn generic(e: &Elem) -> Value {
    if e.children.is_empty() && e.attrs.is_empty() {
        return Value::String(e.text.clone());
    }
    let mut out = Map::new();
    for (k, v) in &e.attrs {
        out.insert(format!("@{k}"), Value::String(v.clone()));
    }
    insert_grouped(
        &mut out,
        e.children
            .iter()
            .map(|c| (c.name.as_str(), generic(c)))
            .collect(),
    );
    if !e.text.trim().is_empty() {
        out.insert("#text".into(), Value::String(e.text.clone()));
    }
    Value::Object(out)
}
