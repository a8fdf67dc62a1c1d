//! W3C Trace Context (`traceparent`, `tracestate`) for calls: the gateway takes the caller's
//! (the `traceparent`/`tracestate` HTTP headers, an MCP request's `_meta.traceparent` /
//! `_meta.tracestate`) or [`generate`]s a `traceparent`, puts them in the call's
//! [`ToolContext`](crate::ToolContext), and the sources forward them: MCP servers in
//! `tools/call`'s `_meta`, OpenAPI operations and A2A agents in the headers. The `tool_call`
//! span carries the trace id as `trace_id`. With OpenTelemetry export on (the `otel` feature and
//! an OpenTelemetry layer installed), that span is a child of the caller's span and its own id
//! is what the backend receives as parent; otherwise the caller's values go on unchanged.
//!
//! The form (version `00`): `00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>`,
//! lowercase, neither id all zeros.

/// A new `traceparent`: version `00`, a random trace id and parent id, flags `01` (sampled).
pub fn generate() -> String {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let (span, _) = uuid::Uuid::new_v4().as_u64_pair();
    // A zero id is invalid; the chance is nil, but a constant costs nothing.
    let span = if span == 0 { 1 } else { span };
    format!("00-{trace}-{span:016x}-01")
}

/// Whether `value` is a `traceparent` toolgate accepts and forwards: the `00` form above (a
/// later version is accepted when it starts like it, as the spec asks).
pub fn is_valid(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 55 || (b.len() > 55 && (b[..2] == *b"00" || b[55] != b'-')) {
        return false;
    }
    let hex = |s: &[u8]| {
        s.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    let zeros = |s: &[u8]| s.iter().all(|c| *c == b'0');
    let (version, trace, parent, flags) = (&b[0..2], &b[3..35], &b[36..52], &b[53..55]);
    b[2] == b'-'
        && b[35] == b'-'
        && b[52] == b'-'
        && hex(version)
        && version != b"ff"
        && hex(trace)
        && !zeros(trace)
        && hex(parent)
        && !zeros(parent)
        && hex(flags)
}

/// The trace id of a valid `traceparent`.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    is_valid(traceparent).then(|| &traceparent[3..35])
}

/// A call's `traceparent` and its `tracestate`, if any.
#[cfg(feature = "a2a")]
pub(crate) type Current = (std::sync::Arc<str>, Option<std::sync::Arc<str>>);

#[cfg(feature = "a2a")]
tokio::task_local! {
    /// The trace context of the call this task runs, for code that sends requests without the
    /// call's context at hand (the A2A client scopes it around a call).
    pub(crate) static CURRENT: Option<Current>;
}

/// The trace context scoped by [`CURRENT`], if any.
#[cfg(feature = "a2a")]
pub(crate) fn current() -> Option<Current> {
    CURRENT.try_with(Clone::clone).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_values_are_valid_and_differ() {
        let a = generate();
        let b = generate();
        assert!(is_valid(&a), "{a}");
        assert_ne!(a, b);
        assert_eq!(trace_id(&a).map(str::len), Some(32));
    }

    #[test]
    fn malformed_values_are_refused() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        assert!(is_valid(good));
        assert_eq!(trace_id(good), Some("0af7651916cd43dd8448eb211c80319c"));
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra",
            "00_0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
        // A later version may carry more fields after a dash.
        assert!(is_valid(
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-more"
        ));
    }
}
