//! `gateway.code_mode`: model-written Python run in a sandbox, the toolset's tools as its
//! functions (docs/code-mode.md).

use serde::{Deserialize, Serialize};

/// `gateway.code_mode`: offers the tools `run_python` and `describe_code_api` (over MCP, REST
/// and `toolgate call`) when `enabled`.
///
/// ```yaml
/// gateway:
///   code_mode:
///     enabled: true
///     engine: monty                 # or wasi (a toolgate built with the `wasi` feature)
///     limits: {time_ms: 5000, memory_bytes: 67108864, output_bytes: 1048576, tool_calls: 100}
///     mounts:                       # read-only host folders the code may read
///       - {host: data, guest: /data}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeModeConfig {
    /// Whether the code-mode tools are offered (default `false`).
    #[serde(default)]
    pub enabled: bool,
    /// The engine that runs the code (default `monty`).
    #[serde(default)]
    pub engine: CodeEngine,
    /// What one run may use; each limit left out takes its default.
    #[serde(default, skip_serializing_if = "CodeLimits::is_empty")]
    pub limits: CodeLimits,
    /// Host folders the code may read (never write), each seen at its `guest` path. None by
    /// default: the code sees no host file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<CodeMount>,
}

impl CodeModeConfig {
    /// Whether nothing is set (the section is left out when written back).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The engine of `gateway.code_mode`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CodeEngine {
    /// pydantic's monty: a sandboxed Python interpreter in Rust, in process (microseconds to
    /// start a run).
    #[default]
    Monty,
    /// MicroPython built for WASI, run by wasmtime (a toolgate built with the `wasi` feature).
    Wasi,
}

impl CodeEngine {
    /// The engine's name as configured: `monty` or `wasi`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monty => "monty",
            Self::Wasi => "wasi",
        }
    }
}

/// `gateway.code_mode.limits`: what one run may use. Going over a limit ends the run with its
/// error (`timeout`, `memory`, `output`, `tool_calls`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeLimits {
    /// Wall-clock time of a run, tool calls included, in milliseconds (default 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
    /// Memory the code may hold, in bytes (default 64 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Bytes of output a run may print (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// Tool calls one run may make (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u32>,
}

impl CodeLimits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A read-only host folder of `gateway.code_mode.mounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeMount {
    /// The folder on the host, relative to the tools.yaml's folder.
    pub host: String,
    /// Where the code sees it: an absolute path such as `/data`.
    pub guest: String,
}
