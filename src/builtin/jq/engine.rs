//! The jaq engine, in the current process: parse, check, compile and run one filter.
//!
//! Only the worker process runs filters (see [`super::worker`]); [`super::check_filter`] uses
//! the parsing half in-process. Everything here may recurse as deep as the filter's nesting
//! (bounded by [`MAX_FILTER_CHARS`](super::MAX_FILTER_CHARS)) or the data's nesting (bounded
//! only by [`MAX_VALUE_DEPTH`] where a check applies), so it runs on a thread with
//! [`STACK_BYTES`] of stack.

use jaq_core::{
    Compiler, Ctx, RunPtr, ValT as _, Vars, data,
    load::{self, Arena, File, Loader},
    native::{self, Fun, bome, v},
};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::Value;

use super::{JqError, JqResult, check, convert};

/// Stack of the thread a filter runs on. A stack overflow ends the worker process (reported
/// as [`JqError::StackOverflow`]); the depth checks below keep the common deep-data operations
/// well inside it.
pub(super) const STACK_BYTES: usize = 64 * 1024 * 1024;

/// Deepest value that `tojson`, `tostring` (and everything built on it: `@text`, `@json`,
/// `@html`, `@base64`, `join`, ...) and `walk` accept; deeper values are a jq error that `try`
/// can catch. These recurse over the data, using about 1.2 KiB of stack per level in a
/// release build: 10,000 levels stay far below [`STACK_BYTES`]. Same number as jq's own
/// parsing depth limit.
pub const MAX_VALUE_DEPTH: usize = 10_000;

type D = data::JustLut<Val>;

/// What one run may produce.
#[derive(Debug, Clone, Copy)]
pub(super) struct OutputLimits {
    /// Most results collected; more set `truncated`.
    pub(super) max_results: usize,
    /// Most bytes of JSON (approximately) over all results.
    pub(super) max_bytes: usize,
}

/// The natives and definitions filters see: jq's standard library without I/O, with depth
/// checks on the conversions that recurse over the data. The definitions are parsed once per
/// process ([`DEFS`]): parsing jaq's standard library took about five sixths of compiling a
/// small filter.
fn library() -> (
    impl Iterator<Item = Fun<D>>,
    impl Iterator<Item = load::parse::Def<&'static str>>,
) {
    // Natives that reach outside the filter are left out: `env` (secrets live in the
    // environment) and `stderr_empty` (replaced below by a definition that prints nothing).
    // `tojson` is replaced by a depth-checked one.
    let std_funs =
        jaq_std::funs::<D>().filter(|(name, _, _)| !matches!(*name, "env" | "stderr_empty"));
    let json_funs = jaq_json::funs::<D>().filter(|(name, _, _)| *name != "tojson");
    let funs = jaq_core::funs()
        .chain(std_funs)
        .chain(json_funs)
        .chain(checked_natives::<D>());
    (funs, DEFS.iter().cloned())
}

/// The definitions of [`library`], parsed on first use.
static DEFS: std::sync::LazyLock<Vec<load::parse::Def<&'static str>>> =
    std::sync::LazyLock::new(|| {
        let parse = |code| load::parse(code, |p| p.defs()).unwrap_or_default();
        // Definitions see only those before them: `stderr_empty` must precede jaq-std's
        // `stderr`.
        let quiet = parse("def stderr_empty: empty;");
        let ours = parse("def @text: tostring; def walk(f): _toolgate_depth_ok | .. |= f;");
        // Ours replace the library's `tostring` (a native now), `@text` and `walk`.
        let replaced = |d: &load::parse::Def<&str>| matches!(d.name, "tostring" | "@text" | "walk");
        jaq_core::defs()
            .chain(quiet)
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .filter(move |d| !replaced(d))
            .chain(ours)
            .collect()
    });

/// `tojson`, `tostring` and `_toolgate_depth_ok` (used by `walk`): refuse values nested deeper
/// than [`MAX_VALUE_DEPTH`] before recursing over them, and take them apart without recursion.
fn checked_natives<F: for<'a> jaq_core::DataT<V<'a> = Val>>() -> impl Iterator<Item = Fun<F>> {
    checked_filters().into_vec().into_iter().map(native::run)
}

fn checked_filters<F: for<'a> jaq_core::DataT<V<'a> = Val>>() -> Box<[native::Filter<RunPtr<F>>]> {
    Box::new([
        ("tojson", v(0), |cv| {
            let v = cv.1;
            let r = depth_ok(&v).map(|()| Val::utf8_str(v.to_string().into_bytes()));
            convert::dispose(v);
            bome(r)
        }),
        ("tostring", v(0), |cv| {
            let v = cv.1;
            match depth_ok(&v) {
                Ok(()) => bome(Ok(v.into_string())),
                Err(e) => {
                    convert::dispose(v);
                    bome(Err(e))
                }
            }
        }),
        ("_toolgate_depth_ok", v(0), |cv| {
            let v = cv.1;
            match depth_ok(&v) {
                Ok(()) => bome(Ok(v)),
                Err(e) => {
                    convert::dispose(v);
                    bome(Err(e))
                }
            }
        }),
    ])
}

fn depth_ok(v: &Val) -> Result<(), jaq_core::Error<Val>> {
    if convert::deeper_than(v, MAX_VALUE_DEPTH) {
        Err(jaq_core::Error::str(format_args!(
            "value nested deeper than {MAX_VALUE_DEPTH} levels"
        )))
    } else {
        Ok(())
    }
}

/// Parse, check and compile `code` without running it.
fn compile(code: &str) -> Result<jaq_core::Filter<D>, JqError> {
    let (funs, defs) = library();
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(&arena, File { code, path: () })
        .map_err(|errs| check::load_error(code, errs))?;
    check::no_recursion(code)?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| check::compile_error(code, errs))
}

/// The static checks of [`super::check_filter`], on the current thread.
pub(super) fn check(code: &str) -> Result<(), JqError> {
    compile(code).map(drop)
}

/// Parse, check, compile and run a filter on the current thread.
pub(super) fn run(code: &str, input: Value, limits: OutputLimits) -> Result<JqResult, JqError> {
    let filter = compile(code)?;
    let input = Val::deserialize(input).map_err(|e| JqError::Runtime {
        message: format!("invalid input: {e}"),
    })?;
    let ctx = Ctx::<D>::new(&filter.lut, Vars::new([]));
    let mut out = convert::Collector::new(limits.max_bytes);
    for item in filter.id.run((ctx, input)) {
        let value = item.map_err(|exn| match exn.get_err() {
            Ok(err) => JqError::Runtime {
                message: error_message(err),
            },
            Err(exn) => match exn.get_halt() {
                Ok(code) => JqError::Runtime {
                    message: format!("halt({code}) is not supported"),
                },
                Err(_) => JqError::Runtime {
                    message: "unexpected control flow".into(),
                },
            },
        })?;
        if out.results.len() == limits.max_results {
            out.truncated = true;
            convert::dispose(value);
            break;
        }
        let pushed = out.push(&value);
        convert::dispose(value);
        pushed?;
    }
    Ok(JqResult {
        results: out.results,
        truncated: out.truncated,
    })
}

/// Longest error message passed on, in bytes (`error("x" * 100000000)` is a filter's to make).
const MAX_MESSAGE_BYTES: usize = 4096;

/// jq shows a string error's text without quotes, anything else as JSON; cut at
/// [`MAX_MESSAGE_BYTES`].
fn error_message(err: jaq_core::Error<Val>) -> String {
    let mut text = match err.into_val() {
        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(&b).into_owned(),
        other if convert::deeper_than(&other, MAX_VALUE_DEPTH) => {
            convert::dispose(other);
            format!("(an error value nested deeper than {MAX_VALUE_DEPTH} levels)")
        }
        other => {
            let text = other.to_string();
            convert::dispose(other);
            text
        }
    };
    if text.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
