//! Configured secrets: which configured values are secrets, the process-wide list of them, and
//! the one redactor that keeps them out of every text toolgate writes (log lines, error
//! messages, results, response bodies).
//!
//! * **What is a secret.** Where a value is configured says what of it is secret ([`Field`]):
//!   the whole value of a credential (a bearer token, an `auth:` credential, a gateway API key,
//!   an env var or header whose name says credential: [`is_secret_name`]), literal or
//!   `${ENV}`; what the `${NAME}` / `${file:...}` references of an env value or header
//!   resolve to; in other places (URLs, arguments, adapter values) only references whose name
//!   says secret. [`Interpolated::resolve_as`](crate::config::Interpolated::resolve_as) is the
//!   one resolver that applies these rules: every configured secret is remembered when it is
//!   resolved.
//! * **The list.** [`remember`] adds a secret (at least [`MIN_SECRET_LEN`] characters: shorter
//!   values are common words, and masking them would garble every log), [`remember_as`] one
//!   that replaces an earlier one (an OAuth2 access token that was refreshed),
//!   [`remember_public`] a configured id or name, which is never masked even when a secret
//!   equals it or contains it.
//! * **The redactor.** [`redact`] replaces every remembered secret, in every form it may
//!   travel in ([`forms`]: as is, JSON- and Debug-escaped, percent-encoded), by
//!   [`REDACTED`]. Text that is cut for a message is redacted first ([`crate::text`]), so that
//!   a cut never leaves a part of a secret.

mod forms;
mod names;
mod redactor;
mod registry;

pub use forms::forms;
pub use names::{is_credential_key, is_secret_name};
pub use redactor::{Redactor, current, redact, redact_in_place};
pub use registry::{MIN_SECRET_LEN, any, remember, remember_as, remember_public};

/// What a masked secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// What of a configured value is a secret, by where it is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// A credential: the whole value is a secret, literal or `${ENV}` (a bearer token, an
    /// `auth:` credential of an OpenAPI source or an A2A agent, a gateway API key, an env var
    /// or header whose name [says credential](is_secret_name)).
    Credential,
    /// A value that may carry a secret by reference (an env value or a header under a plain
    /// name): what each `${NAME}` and `${file:...}` resolves to is a secret, the literal text
    /// around them is not.
    References,
    /// A value that is no secret by its place (a URL, a command argument, an adapter's fixed
    /// value): only a `${NAME}` whose `NAME`, or a `${file:...}` whose path, [says
    /// credential](is_secret_name) resolves to a secret (`--token=${GITHUB_TOKEN}`), so that
    /// `${HOME}` or `${PORT}` does not mask every path or number in the log.
    Plain,
}

impl Field {
    /// The field of a value configured under `name` (an env var, a header): [`Credential`]
    /// when the name says credential, [`References`] otherwise.
    ///
    /// [`Credential`]: Self::Credential
    /// [`References`]: Self::References
    pub fn named(name: &str) -> Self {
        if is_secret_name(name) {
            Self::Credential
        } else {
            Self::References
        }
    }
}
