//! Result size limits: a remote tool's huge result is cut to fit a model's
//! context, and kept in full where the caller can still read it.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use crate::{Content, ResourceContents, ToolOutput};

/// The URI scheme of results kept in full: `toolgate://results/{source}/{n}`.
pub const RESULT_URI_PREFIX: &str = "toolgate://results/";

/// Cuts `out` to about `max` bytes in all, or returns `None` when it fits.
///
/// Parts are kept in order while they fit. The text part (or embedded text resource) that
/// crosses the limit is cut head + tail (two thirds, one third of what is left) on UTF-8
/// character boundaries, with the marker `[… truncated <N> bytes; full result: <uri>]`;
/// later text parts, and images, audio or blobs that do not fit, become a note naming their
/// size and the URI. `structuredContent` is never cut inside its JSON: over the limit, it is
/// left out whole (with its text mirror) and a note says so.
pub(crate) fn cut(out: &ToolOutput, max: usize, uri: &str) -> Option<ToolOutput> {
    let structured_json = out.structured.as_ref().map(Value::to_string);
    let structured_over = structured_json.as_ref().is_some_and(|s| s.len() > max);
    let total: usize = out.content.iter().map(part_size).sum();
    if total <= max && !structured_over {
        return None;
    }
    let mut budget = max;
    let mut content = Vec::with_capacity(out.content.len());
    for part in &out.content {
        let size = part_size(part);
        let is_mirror = structured_over
            && matches!(part, Content::Text { text } if Some(text) == structured_json.as_ref());
        if is_mirror {
            continue;
        }
        if size <= budget {
            budget -= size;
            content.push(part.clone());
            continue;
        }
        let left = budget;
        budget = 0;
        match part {
            Content::Text { text } if left >= MIN_KEPT => {
                content.push(Content::text(head_and_tail(text, left, uri)));
            }
            Content::Resource {
                resource:
                    ResourceContents::Text {
                        uri: r,
                        mime_type,
                        text,
                    },
            } if left >= MIN_KEPT => content.push(Content::Resource {
                resource: ResourceContents::Text {
                    uri: r.clone(),
                    mime_type: mime_type.clone(),
                    text: head_and_tail(text, left, uri),
                },
            }),
            other => content.push(Content::text(format!(
                "[{} of {size} bytes left out: over the {max}-byte result limit; full result: {uri}]",
                what(other)
            ))),
        }
    }
    let mut cut_out = out.clone();
    cut_out.content = content;
    if structured_over {
        cut_out.structured = None;
        let len = structured_json.map_or(0, |s| s.len());
        cut_out.content.push(Content::text(format!(
            "[structuredContent of {len} bytes left out: over the {max}-byte result limit; full result: {uri}]"
        )));
    }
    Some(cut_out)
}

/// Whether `out` is over `max` bytes (cheap: structured content is measured as compact JSON
/// without writing it, and only up to `max`).
pub(crate) fn over(out: &ToolOutput, max: usize) -> bool {
    out.content.iter().map(part_size).sum::<usize>() > max
        || out.structured.as_ref().is_some_and(|v| json_over(v, max))
}

/// Whether `v` as compact JSON (`Value::to_string`) is longer than `max` bytes: the bytes are
/// counted as they are written, and writing stops past `max`.
fn json_over(v: &Value, max: usize) -> bool {
    struct Count {
        n: usize,
        max: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.max {
                return Err(std::io::Error::other("over"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { n: 0, max };
    serde_json::to_writer(&mut count, v).is_err()
}

/// Below this many bytes of room, a text part is replaced by a note rather than cut.
const MIN_KEPT: usize = 256;

fn part_size(part: &Content) -> usize {
    match part {
        Content::Text { text } => text.len(),
        Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
        Content::Resource {
            resource: ResourceContents::Text { text, .. },
        } => text.len(),
        Content::Resource {
            resource: ResourceContents::Blob { blob, .. },
        } => blob.len(),
        Content::ResourceLink { uri, name, .. } => uri.len() + name.len(),
    }
}

fn what(part: &Content) -> String {
    match part {
        Content::Text { .. } => "a text part".to_string(),
        Content::Image { mime_type, .. } => format!("an image ({mime_type})"),
        Content::Audio { mime_type, .. } => format!("audio ({mime_type})"),
        Content::Resource { resource } => match resource {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => {
                format!("resource {uri}")
            }
        },
        Content::ResourceLink { uri, .. } => format!("a link to {uri}"),
    }
}

fn head_and_tail(text: &str, max: usize, uri: &str) -> String {
    let head_end = toolgate_model::text::floor_char_boundary(text, max * 2 / 3);
    let tail_start = toolgate_model::text::ceil_char_boundary(text, text.len() - max / 3);
    let left_out = tail_start - head_end;
    format!(
        "{}\n[… truncated {left_out} bytes; full result: {uri}]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// Full results of cut calls, the newest kept within a count and a byte budget.
#[derive(Debug)]
pub(crate) struct ResultStore {
    entries: Mutex<Store>,
}

#[derive(Debug, Default)]
struct Store {
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

    /// A new URI for a stored result: `toolgate://results/{source}/{uuid v4}`. Random, not a
    /// counter: whoever knows the URI can read the result (through the gateway too), so
    /// another caller must not be able to guess it.
    pub(crate) fn next_uri(&self, source: &str) -> String {
        format!(
            "{RESULT_URI_PREFIX}{source}/{}",
            uuid::Uuid::new_v4().simple()
        )
    }

    /// Keeps `out` under `uri` (from [`next_uri`](Self::next_uri)), evicting the oldest.
    pub(crate) fn put(&self, uri: String, out: ToolOutput, size: usize) {
        let mut store = self.entries.lock().unwrap_or_else(|p| p.into_inner());
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
    out.content.iter().map(part_size).sum::<usize>()
        + out.structured.as_ref().map_or(0, |v| v.to_string().len())
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
            t.contains("[… truncated 150002 bytes; full result: toolgate://results/s/"),
            "{}",
            &t[33_000..33_500]
        );
        assert!(t.starts_with('é') && t.ends_with('é'));
    }

    #[test]
    fn structured_size_is_its_compact_json_length() {
        let v = json!({"a": [1, 2.5, "é\"\n"], "b": null, "c": {"d": true}});
        let len = v.to_string().len();
        for max in [0, 1, len - 1, len, len + 1, 10 * len] {
            assert_eq!(json_over(&v, max), len > max, "max {max}, len {len}");
            let out = ToolOutput {
                structured: Some(v.clone()),
                ..ToolOutput::default()
            };
            assert_eq!(over(&out, max), len > max);
        }
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
    fn the_limit_is_for_the_whole_result() {
        let out = ToolOutput::from_content(
            (0..100)
                .map(|i| Content::text(format!("{i}:{}", "x".repeat(600))))
                .chain([Content::Image {
                    data: "A".repeat(5000),
                    mime_type: "image/png".into(),
                }])
                .collect(),
        );
        let cut_out = cut(&out, 10_000, "u").unwrap();
        let total: usize = cut_out.content.iter().map(part_size).sum();
        assert!(total < 10_000 + 100 * 120, "{total}");
        // The parts that fit are kept whole and in order; the image is named, not sent.
        assert_eq!(cut_out.content[0], out.content[0]);
        let last = cut_out.content.last().unwrap().as_text().unwrap();
        assert!(
            last.starts_with("[an image (image/png) of 5000 bytes left out"),
            "{last}"
        );
    }

    #[test]
    fn the_text_mirror_of_big_structured_content_is_never_cut_mid_json() {
        let value = json!({"rows": (0..2000).collect::<Vec<_>>()});
        let out = ToolOutput::structured(value);
        let cut_out = cut(&out, 1000, "u").unwrap();
        assert_eq!(cut_out.content.len(), 1, "{:?}", cut_out.content);
        assert!(
            cut_out.content[0]
                .as_text()
                .unwrap()
                .starts_with("[structuredContent of")
        );
    }

    #[test]
    fn store_keeps_the_newest() {
        let store = ResultStore::new();
        let mut uris = Vec::new();
        for i in 0..40 {
            let uri = store.next_uri("s");
            uris.push(uri.clone());
            store.put(uri, ToolOutput::text(i.to_string()), 1);
        }
        assert!(store.get(&uris[0]).is_none());
        assert_eq!(store.get(&uris[39]).unwrap(), ToolOutput::text("39"));
        // Ids are random, never a guessable counter.
        assert!(uris[0].starts_with("toolgate://results/s/") && !uris[0].ends_with("/0"));
        assert_ne!(uris[0], uris[1]);
    }
}
