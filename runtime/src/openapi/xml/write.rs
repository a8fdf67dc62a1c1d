//! JSON value → XML text, by an [`XmlMapping`].

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use serde_json::{Map, Value};
use toolgate_model::openapi::{XmlKind, XmlMapping, XmlNode};

use super::{MAX_DEPTH, valid_name};

/// Writes `value` (a body argument, already checked against the input schema) as an XML
/// document: `<?xml version="1.0" encoding="UTF-8"?>` and the mapping's root element.
/// `null` values are left out (no element); object keys the schema does not name become
/// elements named by the key (`@name` keys attributes, `#text` the text, as [`decode`]
/// reads them).
///
/// # Errors
/// What is wrong, for an `invalid_arguments` error: the value lacks the document wrapper's
/// property, a key is not an XML name, or the value nests deeper than [`MAX_DEPTH`].
///
/// [`decode`]: super::decode
pub(crate) fn encode(mapping: &XmlMapping, value: &Value) -> Result<String, String> {
    let value = match &mapping.root_property {
        Some(p) => value
            .get(p)
            .filter(|v| !v.is_null())
            .ok_or_else(|| format!("the XML body needs `{p}` (its root element)"))?,
        None => value,
    };
    let root_name = mapping.root.name.clone().unwrap_or_else(|| "body".into());
    let mut enc = Encoder {
        m: mapping,
        w: Writer::new(Vec::new()),
    };
    enc.event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    enc.element(&root_name, &mapping.root, value, 0)?;
    String::from_utf8(enc.w.into_inner()).map_err(|e| e.to_string())
}

struct Encoder<'m> {
    m: &'m XmlMapping,
    w: Writer<Vec<u8>>,
}

/// `prefix:name` or `name`.
fn qualified(name: &str, prefix: Option<&str>) -> String {
    match prefix {
        Some(p) => format!("{p}:{name}"),
        None => name.to_string(),
    }
}

/// A scalar's text: strings as they are, numbers and booleans as JSON writes them.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Encoder<'_> {
    fn event(&mut self, e: Event<'_>) -> Result<(), String> {
        self.w.write_event(e).map_err(|e| e.to_string())
    }

    /// The start tag of `node` named `name`, with its namespace declaration.
    fn start(&self, name: &str, node: &XmlNode) -> Result<BytesStart<'static>, String> {
        if !valid_name(name) {
            return Err(format!("`{name}` is not an XML element name"));
        }
        let mut start = BytesStart::new(qualified(name, node.prefix.as_deref()));
        if let Some(ns) = &node.namespace {
            let attr = match &node.prefix {
                Some(p) => format!("xmlns:{p}"),
                None => "xmlns".to_string(),
            };
            start.push_attribute((attr.as_str(), ns.as_str()));
        }
        Ok(start)
    }

    /// `value` as the element(s) of property `prop` described by `node`.
    fn element(
        &mut self,
        prop: &str,
        node: &XmlNode,
        value: &Value,
        depth: usize,
    ) -> Result<(), String> {
        if value.is_null() {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err(format!(
                "the XML body nests deeper than {MAX_DEPTH} elements"
            ));
        }
        let n = self.m.resolve(node);
        let name = n.name.clone().unwrap_or_else(|| prop.to_string());
        match (&n.kind, value) {
            (XmlKind::Array { items }, Value::Array(values)) => {
                let item_named = self.m.resolve(items).name.is_some();
                if self.m.is_wrapped(&n) {
                    let start = self.start(&name, &n)?;
                    let end = BytesEnd::new(qualified(&name, n.prefix.as_deref()));
                    self.event(Event::Start(start))?;
                    for v in values {
                        self.element(prop, items, v, depth + 1)?;
                    }
                    self.event(Event::End(end))
                } else {
                    // Unwrapped: the items by their own name, else the array's, else the
                    // property's.
                    let item_prop = if item_named { prop } else { name.as_str() };
                    for v in values {
                        self.element(item_prop, items, v, depth + 1)?;
                    }
                    Ok(())
                }
            }
            (
                XmlKind::Object {
                    properties,
                    additional,
                },
                Value::Object(map),
            ) => {
                let mut start = self.start(&name, &n)?;
                let mut named: Vec<&str> = Vec::new();
                for p in properties {
                    let pn = self.m.resolve(&p.node);
                    named.push(&p.name);
                    if pn.attribute == Some(true)
                        && let Some(text) = map.get(&p.name).and_then(scalar_text)
                    {
                        let attr = pn.name.clone().unwrap_or_else(|| p.name.clone());
                        if !valid_name(&attr) {
                            return Err(format!("`{attr}` is not an XML attribute name"));
                        }
                        start.push_attribute((
                            qualified(&attr, pn.prefix.as_deref()).as_str(),
                            text.as_str(),
                        ));
                    }
                }
                for (k, v) in map.iter().filter(|(k, _)| !named.contains(&k.as_str())) {
                    if let Some(attr) = k.strip_prefix('@')
                        && let Some(text) = scalar_text(v)
                    {
                        if !valid_name(attr) {
                            return Err(format!("`{attr}` is not an XML attribute name"));
                        }
                        start.push_attribute((attr, text.as_str()));
                    }
                }
                let qname = qualified(&name, n.prefix.as_deref());
                self.event(Event::Start(start))?;
                for p in properties {
                    let attribute = self.m.resolve(&p.node).attribute == Some(true);
                    if let Some(v) = map.get(&p.name)
                        && !(attribute && scalar_text(v).is_some())
                    {
                        self.element(&p.name, &p.node, v, depth + 1)?;
                    }
                }
                let any = XmlNode::default();
                let other = additional.as_deref().unwrap_or(&any);
                for (k, v) in map.iter().filter(|(k, _)| !named.contains(&k.as_str())) {
                    if k == "#text" {
                        let text = scalar_text(v).unwrap_or_default();
                        self.event(Event::Text(BytesText::new(&text)))?;
                    } else if !k.starts_with('@') {
                        self.element(k, other, v, depth + 1)?;
                    }
                }
                self.event(Event::End(BytesEnd::new(qname)))
            }
            (_, Value::Array(values)) => {
                // Repeated elements of the same name (no schema says otherwise).
                let any = XmlNode {
                    name: Some(name.clone()),
                    ..XmlNode::default()
                };
                for v in values {
                    self.element(prop, &any, v, depth + 1)?;
                }
                Ok(())
            }
            (_, Value::Object(map)) => self.generic(&name, &n, map, depth),
            (_, scalar) => {
                let start = self.start(&name, &n)?;
                let qname = qualified(&name, n.prefix.as_deref());
                let text = scalar_text(scalar).unwrap_or_default();
                self.event(Event::Start(start))?;
                self.event(Event::Text(BytesText::new(&text)))?;
                self.event(Event::End(BytesEnd::new(qname)))
            }
        }
    }

    /// An object no schema describes: `@name` keys as attributes, `#text` as text, other keys
    /// as elements.
    fn generic(
        &mut self,
        name: &str,
        n: &XmlNode,
        map: &Map<String, Value>,
        depth: usize,
    ) -> Result<(), String> {
        let mut start = self.start(name, n)?;
        for (k, v) in map {
            if let Some(attr) = k.strip_prefix('@')
                && let Some(text) = scalar_text(v)
            {
                if !valid_name(attr) {
                    return Err(format!("`{attr}` is not an XML attribute name"));
                }
                start.push_attribute((attr, text.as_str()));
            }
        }
        self.event(Event::Start(start))?;
        let any = XmlNode::default();
        for (k, v) in map {
            if k.starts_with('@') {
                continue;
            }
            if k == "#text" {
                let text = scalar_text(v).unwrap_or_default();
                self.event(Event::Text(BytesText::new(&text)))?;
            } else {
                self.element(k, &any, v, depth + 1)?;
            }
        }
        let qname = qualified(name, n.prefix.as_deref());
        self.event(Event::End(BytesEnd::new(qname)))
    }
}
