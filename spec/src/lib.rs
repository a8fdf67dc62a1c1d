//! toolgate's shared model, used both at build time (by `toolgate-codegen`) and at run time (by
//! `toolgate-runtime` and the CLI): the schema dialects tools are exported in.
//!
//! Pure data and functions: no async runtime, no syn.

pub mod dialect;
