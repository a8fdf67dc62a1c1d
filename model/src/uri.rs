//! Percent-encoding sets (RFC 3986) shared by the OpenAPI request builder and the forms a secret
//! may travel in.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// RFC 3986 §2.3: everything but the unreserved characters (`A-Z a-z 0-9 - . _ ~`) encoded: a
/// path segment or a query value encoded strictly (Python's `quote(s, safe='')`, Go's
/// `url.PathEscape`).
pub const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
