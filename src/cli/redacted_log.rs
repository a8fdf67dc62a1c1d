//! The CLI's log writer: stderr, every line passed through
//! [`toolgate_runtime::redact::scrub`] first, so that no log line (toolgate's or a library's, at
//! any level) shows a configured secret in any form (as is, JSON- or Debug-escaped,
//! percent-encoded: `toolgate_model::secrets`), or the value of a credential key (`password:
//! x`, `Authorization: Bearer x`).

use std::io::Write;

/// Makes the writer of each log event (tracing-subscriber formats an event into one buffer and
/// writes it at once).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RedactedStderr;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactedStderr {
    type Writer = Writer;

    fn make_writer(&'a self) -> Writer {
        Writer
    }
}

/// Writes one event, scrubbed, to stderr.
pub(super) struct Writer;

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = toolgate_runtime::redact::scrub(&text);
        std::io::stderr().lock().write_all(clean.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
