//! toolgate's shared model, used both at build time (by `toolgate-codegen`) and at run time (by
//! `toolgate-runtime` and the CLI): the `tools.yaml` model and loader ([`config`]), the schema
//! dialects tools are exported in, the name rules ([`names`]), Agent Skills' `SKILL.md` ([`skill`]), configured secrets and their
//! redaction ([`secrets`]) and the one way to cut a text for a message ([`text`]).
//!
//! Pure data and functions: no async runtime, no syn.

#![warn(missing_docs)]

pub mod config;
pub mod dialect;
pub mod import;
pub mod names;
pub mod openapi;
pub mod policy_code;
pub mod secrets;
pub mod skill;
pub mod text;
pub mod uri;

pub use config::{ConfigError, Diagnostic, LoadedConfig, Location, ToolsConfig};
pub use names::{NameError, validate_source_id, validate_tool_name};
