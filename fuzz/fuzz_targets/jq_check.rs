//! The `jq` tool's checks before a filter runs: the length limit, jaq's lexer and parser, the
//! refusal of recursive definitions and compilation (every name defined). Never run here: what
//! a filter does when it runs is bounded elsewhere (its own process, limits). Never a panic;
//! an error names a position inside the filter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::builtin::jq::{JqError, check_filter};

fuzz_target!(|data: &[u8]| {
    let Ok(filter) = std::str::from_utf8(data) else {
        return;
    };
    match check_filter(filter) {
        Err(JqError::Parse {
            offset,
            line,
            column,
            message,
        }) => {
            assert!(
                offset <= filter.len(),
                "offset {offset} past the end: {message}"
            );
            assert!(line >= 1 && column >= 1);
        }
        Ok(()) | Err(_) => {}
    }
});
