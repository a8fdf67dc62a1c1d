//! XML bodies (OAS 3.0 §4.7.25 / 3.1 §4.8.26 "XML Object"): how the JSON value of a request
//! body or a response maps onto XML, built from the document's schema (the JSON Schema the
//! model sees drops `xml`, so the mapping is kept beside it as an [`XmlMapping`]).
//!
//! - Names: an element (or attribute) is named by its `xml.name`, else its property name; an
//!   array's items by their own `xml.name`, else (unwrapped) the array's `xml.name`, else the
//!   property name. The spec ignores the `name` of an unwrapped array; documents converted from
//!   AWS models (APIs.guru) use it for the repeated elements, so it is used when the items have
//!   no name of their own.
//! - Root element: the body schema's `xml.name`, else its component name (`$ref:
//!   '#/components/schemas/Tagging'` → `<Tagging>`). An inline schema without a name that has
//!   exactly one property is a document wrapper: that property is the root element (how
//!   APIs.guru writes AWS request bodies: `{Tagging: {...}}`). Any other unnamed root is
//!   `<body>`, with a `W_XML_ROOT_NAME` warning.
//! - `wrapped`: arrays are unwrapped (repeated elements) unless `wrapped: true`. A document
//!   that marks some arrays `wrapped: false` and none `wrapped: true` writes as if wrapped were
//!   the default (APIs.guru's AWS documents): there, arrays without `wrapped` are wrapped
//!   (`W_XML_WRAPPED_DEFAULT`, once per document).
//! - `attribute: true` on a scalar property: an attribute of its parent element; `namespace`
//!   and `prefix`: an `xmlns` / `xmlns:prefix` declaration on the element and a prefixed name.
//! - `$ref`s stay references into [`XmlMapping::defs`] (recursion is not expanded); `allOf`
//!   members are merged (their `xml` fields, the later winning, and their object properties);
//!   `oneOf` / `anyOf` and schemas without a type are [`XmlKind::Any`] (mapped by the JSON
//!   value's own shape). Nesting deeper than [`MAX_XML_DEPTH`] is `Any`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::refs;

/// The deepest schema nesting the mapping follows below one definition; deeper is `Any`.
pub const MAX_XML_DEPTH: usize = 32;

/// How a body's (or a response's) JSON value is laid out as XML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XmlMapping {
    /// The root element; its `name` is always set.
    pub root: XmlNode,
    /// The JSON value is an object whose only property, this one, is the root element
    /// (a document wrapper, see the module docs); none: the value is the root element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_property: Option<String>,
    /// Arrays without `wrapped` are wrapped (the document's convention, see the module docs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wrapped_default: bool,
    /// Shared nodes by `$ref` (`#/components/schemas/Tag`), named by [`XmlKind::Ref`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub defs: BTreeMap<String, XmlNode>,
}

/// One schema's XML layout: its XML Object fields and its shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct XmlNode {
    /// `xml.name`: the element or attribute name (none: the property name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `xml.namespace`: declared on the element (`xmlns` or `xmlns:{prefix}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `xml.prefix`: the element or attribute is written `{prefix}:{name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// `xml.attribute`: a scalar written as an attribute of the parent element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute: Option<bool>,
    /// `xml.wrapped` (arrays): the items are inside one wrapper element (none: the mapping's
    /// [`wrapped_default`](XmlMapping::wrapped_default)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<bool>,
    /// Its shape.
    #[serde(default)]
    pub kind: XmlKind,
}

/// The shape of a schema, as far as XML needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum XmlKind {
    /// Unknown or mixed (`oneOf`, no `type`): laid out by the JSON value's own shape.
    #[default]
    Any,
    /// `type: string` (text as it is).
    String,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean` (`true` / `false`).
    Boolean,
    /// `type: object`: child elements (or attributes) by property, in schema order.
    Object {
        /// The properties, in schema order.
        properties: Vec<XmlProperty>,
        /// `additionalProperties` (a schema): other keys are elements named by the key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        additional: Option<Box<XmlNode>>,
    },
    /// `type: array`.
    Array {
        /// The items' node.
        items: Box<XmlNode>,
    },
    /// A `$ref` to an entry of [`XmlMapping::defs`]; this node's own XML fields win over the
    /// definition's.
    Ref {
        /// The key in `defs` (the reference as written).
        def: String,
    },
}

/// One property of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XmlProperty {
    /// The property name (the JSON key).
    pub name: String,
    /// Its node.
    pub node: XmlNode,
}

impl XmlMapping {
    /// `node` with its `$ref` chain followed: the referring nodes' XML fields win over the
    /// definitions'. A reference to nothing (or a chain longer than 32) is `Any`.
    #[must_use]
    pub fn resolve(&self, node: &XmlNode) -> XmlNode {
        let mut out = node.clone();
        for _ in 0..refs::MAX_REF_CHAIN {
            let XmlKind::Ref { def } = &out.kind else {
                return out;
            };
            let Some(target) = self.defs.get(def) else {
                out.kind = XmlKind::Any;
                return out;
            };
            out = overlay(target.clone(), &out);
        }
        out.kind = XmlKind::Any;
        out
    }

    /// Whether an array node (resolved) is wrapped.
    #[must_use]
    pub fn is_wrapped(&self, node: &XmlNode) -> bool {
        node.wrapped.unwrap_or(self.wrapped_default)
    }
}

/// `base` with the XML fields `top` sets, and `top`'s kind unless it is a reference (then the
/// base's).
fn overlay(mut base: XmlNode, top: &XmlNode) -> XmlNode {
    if top.name.is_some() {
        base.name.clone_from(&top.name);
    }
    if top.namespace.is_some() {
        base.namespace.clone_from(&top.namespace);
    }
    if top.prefix.is_some() {
        base.prefix.clone_from(&top.prefix);
    }
    if top.attribute.is_some() {
        base.attribute = top.attribute;
    }
    if top.wrapped.is_some() {
        base.wrapped = top.wrapped;
    }
    base
}

/// Whether a document writes `wrapped: false` somewhere and `wrapped: true` nowhere (so its
/// arrays are wrapped unless they say otherwise). Walks at most 1,000,000 values.
pub(crate) fn wrapped_by_default(root: &Value) -> bool {
    let (mut yes, mut no) = (false, false);
    let mut stack = vec![root];
    let mut budget = 1_000_000usize;
    while let Some(v) = stack.pop() {
        budget = budget.saturating_sub(1);
        if budget == 0 {
            break;
        }
        match v {
            Value::Object(m) => {
                if let Some(w) = m
                    .get("xml")
                    .and_then(|x| x.get("wrapped"))
                    .and_then(Value::as_bool)
                {
                    if w {
                        yes = true;
                    } else {
                        no = true;
                    }
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    no && !yes
}

/// Builds [`XmlMapping`]s from a document's schemas.
pub(crate) struct XmlBuilder<'a> {
    root: &'a Value,
    wrapped_default: bool,
    defs: BTreeMap<String, XmlNode>,
}

impl<'a> XmlBuilder<'a> {
    pub(crate) fn new(root: &'a Value, wrapped_default: bool) -> Self {
        Self {
            root,
            wrapped_default,
            defs: BTreeMap::new(),
        }
    }

    /// The mapping of a body or response `schema`; the second value is true when the root
    /// element had to be given the fallback name `body`.
    pub(crate) fn mapping(mut self, schema: &Value) -> (XmlMapping, bool) {
        let root = self.node(schema, 0);
        let mut out = XmlMapping {
            root,
            root_property: None,
            wrapped_default: self.wrapped_default,
            defs: std::mem::take(&mut self.defs),
        };
        let mut fallback = false;
        let resolved = out.resolve(&out.root);
        if resolved.name.is_some() {
            out.root.name = resolved.name;
        } else if let Some(c) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .filter(|n| !n.contains('/'))
        {
            out.root.name = Some(c.replace("~1", "/").replace("~0", "~"));
        } else if let XmlKind::Object { properties, .. } = &resolved.kind
            && let [only] = properties.as_slice()
        {
            let mut root = only.node.clone();
            root.name = out.resolve(&root).name.or_else(|| Some(only.name.clone()));
            out.root_property = Some(only.name.clone());
            out.root = root;
        } else {
            out.root.name = Some("body".into());
            fallback = true;
        }
        (out, fallback)
    }

    fn node(&mut self, s: &Value, depth: usize) -> XmlNode {
        let mut node = XmlNode::default();
        let Some(m) = s.as_object() else {
            return node;
        };
        if depth > MAX_XML_DEPTH {
            apply_xml(&mut node, m.get("xml"));
            return node;
        }
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            if r.starts_with('#') && !self.defs.contains_key(r) {
                // A placeholder first: a recursive reference finds it and stays a reference.
                self.defs.insert(r.to_string(), XmlNode::default());
                let def = match refs::lookup(self.root, r) {
                    Some(target) => self.node(target, depth + 1),
                    None => XmlNode::default(),
                };
                self.defs.insert(r.to_string(), def);
            }
            node.kind = XmlKind::Ref { def: r.to_string() };
        } else if let Some(Value::Array(all)) = m.get("allOf") {
            let members: Vec<XmlNode> = all.iter().map(|a| self.node(a, depth + 1)).collect();
            node = self.merge(members, depth);
            let own = self.shape(m, depth);
            if own != XmlKind::Any {
                node.kind = match std::mem::take(&mut node.kind) {
                    XmlKind::Any => own,
                    other => self.merge_kinds(other, own, depth),
                };
            }
        } else {
            node.kind = self.shape(m, depth);
        }
        apply_xml(&mut node, m.get("xml"));
        node
    }

    /// The kind of a schema without `$ref` / `allOf`.
    fn shape(&mut self, m: &serde_json::Map<String, Value>, depth: usize) -> XmlKind {
        let ty = match m.get("type") {
            Some(Value::String(t)) => Some(t.as_str()),
            Some(Value::Array(ts)) => {
                let real: Vec<&str> = ts
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|t| *t != "null")
                    .collect();
                (real.len() == 1).then(|| real[0])
            }
            _ => None,
        };
        let ty = ty.or_else(|| {
            if m.contains_key("properties") {
                Some("object")
            } else if m.contains_key("items") {
                Some("array")
            } else {
                None
            }
        });
        match ty {
            Some("string") => XmlKind::String,
            Some("integer") => XmlKind::Integer,
            Some("number") => XmlKind::Number,
            Some("boolean") => XmlKind::Boolean,
            Some("array") => XmlKind::Array {
                items: Box::new(
                    m.get("items")
                        .map(|i| self.node(i, depth + 1))
                        .unwrap_or_default(),
                ),
            },
            Some("object") => {
                let properties = m
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|props| {
                        props
                            .iter()
                            .map(|(name, p)| XmlProperty {
                                name: name.clone(),
                                node: self.node(p, depth + 1),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let additional = m
                    .get("additionalProperties")
                    .filter(|a| a.is_object())
                    .map(|a| Box::new(self.node(a, depth + 1)));
                XmlKind::Object {
                    properties,
                    additional,
                }
            }
            _ => XmlKind::Any,
        }
    }

    /// `allOf` members as one node: XML fields the later member wins; kinds merged.
    fn merge(&self, members: Vec<XmlNode>, depth: usize) -> XmlNode {
        let mut out = XmlNode::default();
        for m in members {
            let kind = m.kind.clone();
            out = overlay(out, &m);
            out.kind = match std::mem::take(&mut out.kind) {
                XmlKind::Any => kind,
                prev if kind == XmlKind::Any => prev,
                prev => self.merge_kinds(prev, kind, depth),
            };
        }
        out
    }

    /// Two kinds of one `allOf`: objects (references followed) have their properties joined;
    /// otherwise the first stays.
    fn merge_kinds(&self, a: XmlKind, b: XmlKind, depth: usize) -> XmlKind {
        let object = |k: &XmlKind| -> Option<XmlKind> {
            let mut k = k.clone();
            for _ in 0..refs::MAX_REF_CHAIN {
                match k {
                    XmlKind::Ref { def } => k = self.defs.get(&def)?.kind.clone(),
                    XmlKind::Object { .. } => return Some(k),
                    _ => return None,
                }
            }
            None
        };
        if depth > MAX_XML_DEPTH {
            return a;
        }
        match (object(&a), object(&b)) {
            (
                Some(XmlKind::Object {
                    mut properties,
                    additional,
                }),
                Some(XmlKind::Object {
                    properties: more,
                    additional: more_additional,
                }),
            ) => {
                for p in more {
                    match properties.iter_mut().find(|q| q.name == p.name) {
                        Some(q) => *q = p,
                        None => properties.push(p),
                    }
                }
                XmlKind::Object {
                    properties,
                    additional: more_additional.or(additional),
                }
            }
            _ => a,
        }
    }
}

/// Copies the XML Object's fields onto `node` (unknown fields and wrong types ignored).
fn apply_xml(node: &mut XmlNode, xml: Option<&Value>) {
    let Some(x) = xml.and_then(Value::as_object) else {
        return;
    };
    let text = |k: &str| {
        x.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(n) = text("name") {
        node.name = Some(n);
    }
    if let Some(n) = text("namespace") {
        node.namespace = Some(n);
    }
    if let Some(p) = text("prefix") {
        node.prefix = Some(p);
    }
    if let Some(a) = x.get("attribute").and_then(Value::as_bool) {
        node.attribute = Some(a);
    }
    if let Some(w) = x.get("wrapped").and_then(Value::as_bool) {
        node.wrapped = Some(w);
    }
}
