//! Cutting text for messages and logs: the one helper for "at most N characters, with `…`".
//!
//! Every cut is made on a character boundary and **after** [redaction](crate::secrets::redact):
//! a secret that a cut would split is masked whole first, so no part of it survives the cut.

use std::borrow::Cow;

use crate::secrets;

/// What marks a cut.
pub const ELLIPSIS: char = '…';

/// `text`, [redacted](secrets::redact), then cut to its first `max` characters with `…`
/// appended when anything was cut (so the result has at most `max + 1` characters). Borrowed
/// when nothing changed.
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    let text = secrets::redact(text);
    match text.char_indices().nth(max) {
        None => text,
        Some((end, _)) => Cow::Owned(format!("{}{ELLIPSIS}", &text[..end])),
    }
}

/// [`cut`] with a budget in bytes: the first at most `max` bytes (ending on a character
/// boundary), with `…` appended when anything was cut.
pub fn cut_bytes(text: &str, max: usize) -> Cow<'_, str> {
    let text = secrets::redact(text);
    if text.len() <= max {
        return text;
    }
    let end = floor_char_boundary(&text, max);
    Cow::Owned(format!("{}{ELLIPSIS}", &text[..end]))
}

/// `text`, [redacted](secrets::redact), then its last `max` characters with `…` in front when
/// anything was cut: for the end of something whose end matters (the tail of a long line).
pub fn cut_front(text: &str, max: usize) -> Cow<'_, str> {
    let text = secrets::redact(text);
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let start = text
        .char_indices()
        .nth(count - max)
        .map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{ELLIPSIS}{}", &text[start..]))
}

/// The largest character boundary of `text` at or before byte `i` (`text.len()` when `i` is
/// past the end).
pub fn floor_char_boundary(text: &str, i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    (0..=i)
        .rev()
        .find(|&j| text.is_char_boundary(j))
        .unwrap_or(0)
}

/// The smallest character boundary of `text` at or after byte `i` (`text.len()` when `i` is
/// past the end).
pub fn ceil_char_boundary(text: &str, i: usize) -> usize {
    (i..text.len())
        .find(|&j| text.is_char_boundary(j))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_character_boundaries_with_an_ellipsis() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert!(matches!(cut("héllo", 5), Cow::Borrowed(_)));
        assert_eq!(cut("héllo wörld", 5), "héllo…");
        assert_eq!(cut("", 0), "");
        assert_eq!(cut("ab", 0), "…");
        assert_eq!(cut_bytes("héllo", 2), "h…");
        assert_eq!(cut_bytes("héllo", 3), "hé…");
        assert_eq!(cut_bytes("héllo", 6), "héllo");
        assert_eq!(cut_front("héllo wörld", 5), "…wörld");
        assert_eq!(cut_front("wörld", 5), "wörld");
        assert_eq!(floor_char_boundary("é", 1), 0);
        assert_eq!(ceil_char_boundary("é", 1), 2);
        assert_eq!(floor_char_boundary("ab", 9), 2);
    }

    #[test]
    fn a_secret_across_the_cut_is_masked_whole_before_it() {
        crate::secrets::remember("text-rs-cut-secret-9d2f");
        let line = format!("{}text-rs-cut-secret-9d2f and more", "p".repeat(10));
        assert_eq!(cut(&line, 20), "pppppppppp[redacted]…");
        assert_eq!(cut_bytes(&line, 20), "pppppppppp[redacted]…");
        assert_eq!(cut_front(&line, 14), "…cted] and more");
    }
}
