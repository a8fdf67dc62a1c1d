//! The built-in tools: thin `#[tool]` wrappers over the logic in the sibling modules, and the
//! mapping of each module's error type to a [`ToolError`] kind.

use toolgate::{ErrorKind, State, ToolContext, ToolError, tool};

use super::Builtins;
use super::calc::{self, CalcArgs, CalcError, CalcResult};
use super::clock::{self, ClockArgs, ClockError, ClockResult};
use super::fetch::{self, FetchArgs, FetchError, FetchResult};
use super::files::{self, FilesError, ListDirArgs, ListDirResult, ReadFileArgs, ReadFileResult};
use super::jq::{JqArgs, JqError, JqResult};

/// Fetch a web page or API response over HTTP(S) and return its text.
///
/// Only hosts on the operator's allowlist can be reached; the body is cut at a size limit
/// (`truncated` says so). Use it to read documentation, JSON APIs or pages a user names.
#[tool(read_only, category = "web", tags = ["http"], timeout = "30s")]
pub async fn fetch(
    ctx: &ToolContext,
    State(builtins): State<Builtins>,
    args: FetchArgs,
) -> Result<FetchResult, ToolError> {
    let client = builtins.http_client()?;
    tokio::select! {
        r = fetch::fetch(&builtins.settings.fetch, client, args, ctx) => r.map_err(ToolError::from),
        () = ctx.cancellation().cancelled() => Err(ToolError::cancelled("fetch")),
    }
}

/// Read a UTF-8 text file inside the configured root directory.
///
/// Paths are relative to the root; `..`, absolute paths and symlinks that lead outside it are
/// refused. Binary files are refused; large files are refused past the size limit.
#[tool(read_only, category = "files", tags = ["fs"], blocking)]
pub fn read_file(
    State(builtins): State<Builtins>,
    args: ReadFileArgs,
) -> Result<ReadFileResult, FilesError> {
    files::read_file(&builtins.settings.files, args)
}

/// List the entries of a directory inside the configured root directory, sorted by name.
#[tool(read_only, category = "files", tags = ["fs"], blocking)]
pub fn list_dir(
    State(builtins): State<Builtins>,
    args: ListDirArgs,
) -> Result<ListDirResult, FilesError> {
    files::list_dir(&builtins.settings.files, args)
}

/// Evaluate an arithmetic expression.
///
/// Supports + - * / % ^, parentheses, comparisons and functions such as sqrt, min, max, abs,
/// floor, ceil, round. Example: `2 * (3 + 4) ^ 2`. Integer operands give integer division
/// (`7 / 2` is 3; write `7.0 / 2` for 3.5) and `^` groups left to right (`2 ^ 3 ^ 2` is 64).
#[tool(read_only, category = "compute", tags = ["math"])]
pub fn calc(args: CalcArgs) -> Result<CalcResult, CalcError> {
    calc::calc(args)
}

/// Run a jq filter on a JSON document and return every result.
///
/// The filter language is jq's (`.items[] | select(.age > 30) | .name`).
#[tool(read_only, category = "compute", tags = ["json"], blocking)]
pub fn jq(
    ctx: &ToolContext,
    State(builtins): State<Builtins>,
    args: JqArgs,
) -> Result<JqResult, JqError> {
    builtins.jq.run_cancellable(args, &|| ctx.is_cancelled())
}

/// The current date and time in an IANA time zone (default UTC).
#[tool(name = "current_time", read_only, category = "time")]
pub fn current_time(args: ClockArgs) -> Result<ClockResult, ClockError> {
    clock::clock(args)
}

impl From<FetchError> for ToolError {
    fn from(e: FetchError) -> Self {
        let kind = match &e {
            FetchError::NotAllowed { .. } => ErrorKind::PermissionDenied,
            FetchError::PolicyDenied { .. } => ErrorKind::PolicyDenied,
            FetchError::InvalidUrl { .. } => ErrorKind::InvalidArguments,
            FetchError::Timeout { .. } => ErrorKind::Timeout,
            FetchError::Network { .. } => ErrorKind::Network,
            FetchError::Http { status, .. } => {
                return ToolError::upstream(e.to_string())
                    .with_retryable(*status >= 500 || *status == 408 || *status == 429);
            }
            FetchError::TooManyRedirects => ErrorKind::Upstream,
        };
        ToolError::new(kind, e.to_string())
    }
}

impl From<FilesError> for ToolError {
    fn from(e: FilesError) -> Self {
        let kind = match &e {
            FilesError::NotFound { .. } => ErrorKind::NotFound,
            FilesError::Escape { .. } | FilesError::NoRoot { .. } => ErrorKind::PermissionDenied,
            FilesError::NotText { .. }
            | FilesError::TooLarge { .. }
            | FilesError::NotAFile { .. }
            | FilesError::NotADirectory { .. } => ErrorKind::InvalidArguments,
            // A path the OS refuses (a NUL byte, a symlink loop) is the caller's to fix.
            FilesError::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidFilename
                ) || source.raw_os_error() == Some(40) =>
            {
                ErrorKind::InvalidArguments
            }
            FilesError::Io { .. } => ErrorKind::Internal,
        };
        let message = e.to_string();
        ToolError::new(kind, message).with_source(e)
    }
}

impl From<CalcError> for ToolError {
    fn from(e: CalcError) -> Self {
        ToolError::new(ErrorKind::InvalidArguments, e.to_string())
    }
}

impl From<ClockError> for ToolError {
    fn from(e: ClockError) -> Self {
        ToolError::new(ErrorKind::InvalidArguments, e.to_string())
    }
}

impl From<JqError> for ToolError {
    fn from(e: JqError) -> Self {
        let kind = match &e {
            // A filter that fails at run time (`.a` on an array, `error("x")`) or produces too
            // much is the caller's to fix, like a filter that does not parse.
            // So is one that needs too much memory or nests too deeply.
            JqError::Rejected { .. }
            | JqError::Parse { .. }
            | JqError::Runtime { .. }
            | JqError::OutputTooLarge { .. }
            | JqError::MemoryLimit { .. }
            | JqError::StackOverflow => ErrorKind::InvalidArguments,
            JqError::Timeout { .. } => ErrorKind::Timeout,
            JqError::Busy => ErrorKind::RateLimited,
            JqError::Cancelled => ErrorKind::Cancelled,
            JqError::Crashed { .. } | JqError::Unavailable { .. } => ErrorKind::Internal,
        };
        ToolError::new(kind, e.to_string())
    }
}
