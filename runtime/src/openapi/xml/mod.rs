//! XML request bodies and answers (OAS 3.1 §4.8.26 "XML Object"), laid out by the operation's
//! [`XmlMapping`](toolgate_model::openapi::XmlMapping) (built from the document's schema, see
//! `toolgate_model::openapi`): [`encode`] writes a body argument's JSON value as XML,
//! [`decode`] reads an XML answer into JSON typed by the response schema.
//!
//! Reading is bounded: at most [`MAX_DEPTH`] nested elements and [`MAX_ELEMENTS`] elements;
//! entity references other than the five predefined ones and character references are an
//! error (a DTD's `<!ENTITY>` is never expanded, so an entity bomb is refused, not expanded).
//! quick-xml does the tokenising and escaping (a maintained streaming parser and writer).

mod read;
mod write;

pub(crate) use read::decode;
pub(crate) use write::encode;

/// The deepest element nesting read or written.
pub const MAX_DEPTH: usize = 64;
/// The most elements an XML answer may have.
pub const MAX_ELEMENTS: usize = 200_000;

/// Whether `name` can be an XML element or attribute name (`prefix:local` allowed): a letter or
/// `_` first, then letters, digits, `-`, `_`, `.`, `:`.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The media type (without parameters) is XML: `application/xml`, `text/xml`, `*/*+xml`.
pub(crate) fn is_xml(essence: &str) -> bool {
    essence == "application/xml" || essence == "text/xml" || essence.ends_with("+xml")
}
