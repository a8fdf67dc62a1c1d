//! Result size limits (cases.md C30): a remote tool's huge result is cut to fit a model's
//! context, and kept in full where the caller can still read it.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::{Content, ToolOutput};

/// The URI scheme of results kept in full: `toolgate://results/{source}/{n}`.
pub const RESULT_URI_PREFIX: &str = "toolgate://results/";

/// Cuts `out` so that no text part exceeds `max` bytes and `structuredContent` (never cut in the
/// middle of its JSON) is dropped when its JSON exceeds `max`, with a note. Returns `None` when
/// nothing had to change.
///
/// A text part is cut head + tail (two thirds, one third) on UTF-8 character boundaries, with
/// the marker `[… truncated <N> bytes; full result: <uri>]` between them.
pub(crate) fn cut(out: &ToolOutput, max: usize, uri: &str) -> Option<ToolOutput> {
    let structured_len = out
        .structured
        .as_ref()
        .map_or(0, |v| serde_json::to_string(v).map_or(0, |s| s.len()));
    let over = out
        .content
        .iter()
        .any(|c| c.as_text().is_some_and(|t| t.len() > max))
        || structured_len > max;
    if !over {
        return None;
    }
    let mut cut_out = out.clone();
    for part in &mut cut_out.content {
        if let Content::Text { text } = part
            && text.len() > max
        {
            *text = head_and_tail(text, max, uri);
        }
    }
    if structured_len > max {
        cut_out.structured = None;
        cut_out.content.push(Content::text(format!(
            "[structuredContent of {structured_len} bytes left out: over the {max}-byte result limit; full result: {uri}]"
        )));
    }
    Some(cut_out)
}

fn head_and_tail(text: &str, max: usize, uri: &str) -> String {
    let head_end = floor_boundary(text, max * 2 / 3);
    let tail_start = ceil_boundary(text, text.len() - max / 3);
    let left_out = tail_start - head_end;
    format!(
        "{}\n[… truncated {left_out} bytes; full result: {uri}]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Full results of cut calls, the newest kept within a count and a byte budget.
#[derive(Debug)]
pub(crate) struct ResultStore {
    entries: Mutex<Store>,
}

#[derive(Debug, Default)]
struct Store {
    next: u64,
    bytes: usize,
    items: VecDeque<(String, usize, ToolOutput)>,
}

impl ResultStore {
    /// At most this many results are kept.
    const MAX_ITEMS: usize = 32;
    /// At most this many bytes of results (64 MiB).
    const MAX_BYTES: usize = 64 << 20;

    pub(crate) fn new() -> Self {
        Self {
            entries: Mutex::new(Store::default()),
        }
    }

    /// The URI the next stored result will have.
    pub(crate) fn next_uri(&self, source: &str) -> String {
        let store = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        format!("{RESULT_URI_PREFIX}{source}/{}", store.next)
    }

    /// Keeps `out` under `uri` (from [`next_uri`](Self::next_uri)), evicting the oldest.
    pub(crate) fn put(&self, uri: String, out: ToolOutput, size: usize) {
        let mut store = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        store.next += 1;
        store.bytes += size;
        store.items.push_back((uri, size, out));
        while store.items.len() > Self::MAX_ITEMS
            || (store.bytes > Self::MAX_BYTES && store.items.len() > 1)
        {
            if let Some((_, size, _)) = store.items.pop_front() {
                store.bytes -= size;
            }
        }
    }

    pub(crate) fn get(&self, uri: &str) -> Option<ToolOutput> {
        let store = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        store
            .items
            .iter()
            .find(|(u, _, _)| u == uri)
            .map(|(_, _, o)| o.clone())
    }
}

/// The approximate size of a result in bytes (text, base64 data, structured JSON).
pub(crate) fn size_of(out: &ToolOutput) -> usize {
    let parts: usize = out
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
            other => serde_json::to_string(other).map_or(0, |s| s.len()),
        })
        .sum();
    parts
        + out
            .structured
            .as_ref()
            .map_or(0, |v| serde_json::to_string(v).map_or(0, |s| s.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_cut_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(100_000); // 200 000 bytes
        let out = ToolOutput::text(text);
        let cut_out = cut(&out, 50_000, "toolgate://results/s/0").unwrap();
        let t = cut_out.content[0].as_text().unwrap();
        assert!(t.len() < 50_200, "{}", t.len());
        // 200 000 bytes, 33 332 kept in front and 16 666 behind (both on boundaries of 'é').
        assert!(
            t.contains("[… truncated 150002 bytes; full result: toolgate://results/s/0]"),
            "{}",
            &t[33_000..33_500]
        );
        assert!(t.starts_with('é') && t.ends_with('é'));
    }

    #[test]
    fn small_results_are_left_alone() {
        assert!(cut(&ToolOutput::text("hi"), 10, "u").is_none());
    }

    #[test]
    fn big_structured_content_is_dropped_whole_with_a_note() {
        let rows: Vec<_> = (0..2000).map(|i| json!({"row": i})).collect();
        let out = ToolOutput {
            structured: Some(json!({ "rows": rows })),
            ..ToolOutput::default()
        };
        let cut_out = cut(&out, 1000, "toolgate://results/s/1").unwrap();
        assert!(cut_out.structured.is_none());
        let note = cut_out.content.last().unwrap().as_text().unwrap();
        assert!(note.contains("structuredContent of") && note.contains("toolgate://results/s/1"));
    }

    #[test]
    fn store_keeps_the_newest() {
        let store = ResultStore::new();
        for i in 0..40 {
            let uri = store.next_uri("s");
            store.put(uri, ToolOutput::text(i.to_string()), 1);
        }
        assert!(store.get("toolgate://results/s/0").is_none());
        assert_eq!(
            store.get("toolgate://results/s/39").unwrap(),
            ToolOutput::text("39")
        );
    }
}
