//! The `toolgate` binary, run as a user runs it: every subcommand, every built-in tool on real
//! input (a file of this repository, a directory, an expression, a JSON document, a time zone, a
//! page served by a real local HTTP server), the ways to pass ARGS, and the documented exit codes
//! (0 success, 1 tool error, 2 usage, 3 configuration, 4 no such tool).
//!
//! Every command runs with the repository root as its working directory (so `./tools.yaml` is the
//! configuration and `files.root` is the repository), under a deadline, and is checked not to have
//! panicked (`RUST_BACKTRACE=1` is set so a panic would show up as a backtrace on stderr).

mod a2a;
mod calls;
mod fetch;
mod first_steps;
mod harness;
mod inspect;
mod mcp;
mod openapi;
mod skills;
mod usage;
