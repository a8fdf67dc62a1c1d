//! Compile-fail tests of the `#[tool]` attribute: every misuse must fail with a message that
//! points at the user's code (the offending parameter, type, name or option).
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p toolgate --test
//! macro_errors`, then read every `.stderr` file before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
