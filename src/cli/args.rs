//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit codes of the `toolgate` command.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The tool call failed (a `ToolError`, or a result with `isError: true`).
    pub const TOOL_ERROR: u8 = 1;
    /// Bad command-line usage: unknown command or option, unreadable or non-JSON `ARGS`.
    pub const USAGE: u8 = 2;
    /// The configuration is invalid (`toolgate check` found errors, or `--config` cannot be loaded).
    pub const CONFIG: u8 = 3;
    /// No tool of that name.
    pub const NOT_FOUND: u8 = 4;
    /// The tool (an A2A agent) asks for more input (`input_required`): its question and the
    /// `taskId` / `contextId` to continue with are printed as the result.
    pub const INPUT_REQUIRED: u8 = 5;
    /// `toolgate serve` cannot start: its address is taken or cannot be listened on.
    pub const CANNOT_SERVE: u8 = 6;
    /// Interrupted by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it). `toolgate serve`
    /// takes Ctrl-C and SIGTERM as its way to stop and exits 0 after its graceful shutdown.
    pub const INTERRUPTED: u8 = 130;
}

const AFTER_HELP: &str = "\
Exit codes:
  0  success
  1  the tool call failed (its error kind and message are printed on stderr)
  2  bad usage: unknown command or option, ARGS that is not JSON, or JSON of
     another type than an object (or a string holding one)
  3  invalid configuration (toolgate check found errors, or --config cannot be loaded)
  4  no tool of that name
  5  the tool (an A2A agent) asks for more input: the question and the taskId to continue
     with are printed; call again with {\"text\": <answer>, \"taskId\": <taskId>}
  6  toolgate serve cannot start: its address is taken or cannot be listened on
  130 interrupted (Ctrl-C or SIGTERM); remote sessions are closed first
     (toolgate serve stops on Ctrl-C or SIGTERM after its graceful shutdown: exit 0)";

/// toolgate: an LLM agent's whole action space behind one typed toolset.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// The tools.yaml to read settings, policies and remote sources from (or an `mcpServers`
    /// JSON file as Claude Desktop, Cursor and VS Code write it). Default: ./tools.yaml if it
    /// exists, otherwise the tools.yaml the binary was built from.
    #[arg(long, global = true, value_name = "FILE", env = "TOOLGATE_CONFIG")]
    pub config: Option<PathBuf>,

    /// More log lines on stderr: `-v` info, `-vv` debug, `-vvv` trace (default: warnings).
    /// `RUST_LOG` wins when set.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "log_level")]
    pub verbose: u8,

    /// The log level on stderr: error, warn, info, debug or trace (default warn). `RUST_LOG`
    /// wins when set.
    #[arg(long, global = true, value_enum, value_name = "LEVEL")]
    pub log_level: Option<LogLevel>,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the tools: name, category and description (or every descriptor with --json).
    List {
        /// Print every tool's full descriptor (with its input and output schema) as JSON.
        #[arg(long)]
        json: bool,
        /// Only tools of this category.
        #[arg(long, value_name = "C")]
        category: Option<String>,
        /// Only tools of this source (its id: `local`, an MCP server's id, ...); repeatable.
        #[arg(long, value_name = "ID")]
        source: Vec<String>,
        /// Only tools with this tag; repeatable (a tool with any of them is listed).
        #[arg(long, value_name = "T")]
        tag: Vec<String>,
    },
    /// Search the tools: the ones that fit QUERY best, with their scores and the fields that
    /// matched (BM25 over each tool's name, title, description, arguments, tags, category and
    /// source). Only tools `toolgate list` shows are found. A query with nothing to search for
    /// (empty, only stop words) is a usage error (exit code 2).
    Search {
        /// What to look for, in words: `toolgate search create a github issue`.
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// At most N tools.
        #[arg(short = 'k', value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
        k: u64,
        /// Print the hits as JSON: name, exported name, score, matched fields, description,
        /// category, source.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool's descriptor: description, input and output schema, annotations, metadata.
    Describe {
        /// The tool's name.
        name: String,
    },
    /// Print the definition of one tool, or of all tools, in a provider's dialect.
    ///
    /// The definitions go to stdout as JSON. Every change the dialect made to what a schema
    /// accepts (a constraint it cannot express, a fallback to non-strict) is printed to stderr
    /// as a `note:` line; arguments are still checked against the original schema. With
    /// `--all`, a tool the dialect cannot express at all is an `error:` line and is left out;
    /// the others are printed and the exit code is 1.
    Schema {
        /// The tool's name.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        name: Option<String>,
        /// Every tool, as a JSON array.
        #[arg(long)]
        all: bool,
        /// The dialect.
        #[arg(long, value_enum, default_value_t = DialectArg::Mcp)]
        dialect: DialectArg,
        /// With `--all`: the tools array for the provider's own deferred tool loading (anthropic,
        /// openai, openai-strict): the provider's tool-search tool first, then every
        /// definition with `"defer_loading": true`.
        #[arg(long)]
        defer_loading: bool,
        /// With `--defer-loading`: a tool to keep loaded (not deferred); repeatable.
        #[arg(long = "loaded", value_name = "TOOL", requires = "defer_loading")]
        loaded: Vec<String>,
        /// With `--defer-loading` and `--dialect anthropic`: which of Anthropic's tool-search
        /// tools the model gets.
        #[arg(long, value_enum, default_value_t = SearchToolArg::Bm25)]
        search_tool: SearchToolArg,
    },
    /// Call a tool. ARGS is a JSON object as text, `@file` to read it from a file, or `-` for stdin.
    Call {
        /// The tool's name.
        name: String,
        /// The arguments: JSON text, `@path`, or `-` (default: `{}`).
        #[arg(default_value = "{}")]
        args: String,
        /// Print the whole result (content parts, structuredContent, isError) as JSON.
        #[arg(long)]
        json: bool,
        /// Give up after this many milliseconds (default: the tool's timeout).
        #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
        timeout_ms: Option<u64>,
    },
    /// Contact every source (MCP servers, lazy ones too) and show its status: state, tool
    /// count, time taken, protocol version, and the error of a source that failed. Exit code 1
    /// when a source failed.
    Discover {
        /// Print every source's status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve remote tools as they are now (tool pinning, `policy.pinning`): record the hash
    /// of their name, description and schemas in the approvals file, so that a tool withheld
    /// because it is new or changed since its approval is listed and callable again.
    Approve {
        /// The tools to approve (either name form: `server.tool` or `server__tool`).
        #[arg(
            value_name = "TOOL",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        tools: Vec<String>,
        /// Every tool withheld now.
        #[arg(long)]
        all: bool,
    },
    /// Connect to one MCP server without a config: list its tools, or call one. TARGET is a
    /// URL (streamable HTTP; a URL whose path ends in `/sse` uses the legacy HTTP+SSE
    /// transport) or, after `--`, a command that starts a stdio server.
    Probe {
        /// Call this tool (its name on the server) instead of listing.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The call's arguments: a JSON object, `@file`, or `-` for stdin.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// An HTTP header for a URL target, `Name: value` (repeatable), e.g.
        /// `--header "Authorization: Bearer $TOKEN"`.
        #[arg(long, value_name = "HEADER")]
        header: Vec<String>,
        /// Give up after this many milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 30000, value_parser = clap::value_parser!(u64).range(1..))]
        timeout_ms: u64,
        /// Print JSON: the server's name and version, the protocol version and every tool's
        /// descriptor; with `--call`, the whole result.
        #[arg(long)]
        json: bool,
        /// The server: a URL, or a command and its arguments.
        #[arg(required = true, num_args = 1.., value_name = "TARGET")]
        target: Vec<String>,
    },
    /// Print a tools.yaml `tools: mcp:` section made from an `mcpServers` JSON file (Claude
    /// Desktop, Cursor, VS Code `mcp.json`). `--config FILE` reads such a file directly too.
    ImportMcp {
        /// The JSON file.
        file: PathBuf,
    },
    /// Serve the whole toolset as an MCP server and a REST API (the gateway).
    ///
    /// `--http` (the default) listens on ADDR (default: gateway.listen in tools.yaml, else
    /// 127.0.0.1:8787) with MCP streamable HTTP at /mcp, legacy HTTP+SSE at /sse, the REST API
    /// at /tools and /sources, /healthz, /readyz and /openapi.json. `--stdio` speaks MCP on
    /// stdin/stdout (logs go to stderr). Both may be given. Remote sources are discovered in
    /// the background; /readyz answers 200 once that is done. Ctrl-C or SIGTERM: calls in
    /// flight get gateway.shutdown_grace_ms (default 10 s), remote sessions are closed, exit 0.
    /// SIGHUP (or a change of the file with `--watch`) reloads the tools.yaml: a file with an
    /// error is refused with its line and the running configuration stays.
    Serve {
        /// Speak MCP on stdin/stdout.
        #[arg(long)]
        stdio: bool,
        /// Listen for HTTP on ADDR (host:port; default 127.0.0.1:8787).
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "", conflicts_with = "port")]
        http: Option<String>,
        /// Listen for HTTP on this port, on gateway.listen's host (default 127.0.0.1); 0 takes
        /// a free port, which the start-up line names.
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
        /// Reload the tools.yaml whenever it changes (checked every second), as on SIGHUP:
        /// policy, sources, settings and API keys, without dropping sessions or calls.
        #[arg(long)]
        watch: bool,
    },
    /// Check a tools.yaml (default ./tools.yaml): shape, names, functions, state, sources.
    ///
    /// A tools.yaml beside a Cargo.toml is a crate's: its local tools are looked up in the
    /// crate's sources, as `cargo build` does. Anywhere else it is checked as a run-time config
    /// of this binary (`serve --config FILE`): its local tools are the binary's own (a warning
    /// for one it lacks), its settings and store are checked as `serve` loads them.
    Check {
        /// The tools.yaml to check.
        file: Option<PathBuf>,
    },
    /// Print the JSON Schema of tools.yaml (for editors and CI checks).
    SchemaConfig,
    /// Write a commented tools.yaml to start from: the binary's own tools, every other
    /// section (MCP servers, A2A agents, OpenAPI documents, policies, API keys) an example in
    /// a comment. `toolgate check` passes on it. An existing file is kept (exit code 2)
    /// unless `--force`.
    Init {
        /// The file to write.
        #[arg(default_value = "tools.yaml")]
        file: PathBuf,
        /// Replace the file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Add this gateway to a desktop MCP client: an `mcpServers` entry that starts this binary
    /// with `serve --stdio` (and `--config`, as an absolute path, when one is given or
    /// ./tools.yaml exists), merged into the client's configuration file (other servers kept,
    /// one of the same name replaced). Restart the client afterwards.
    Install {
        /// The client.
        #[arg(value_enum)]
        client: McpClient,
        /// Print the entry (as `{"mcpServers": {...}}`) instead of writing it.
        #[arg(long)]
        print: bool,
        /// The client's configuration file (default: where the client keeps it: Claude
        /// Desktop's claude_desktop_config.json in its settings folder, Cursor's
        /// ~/.cursor/mcp.json).
        #[arg(long, value_name = "FILE", conflicts_with = "print")]
        file: Option<PathBuf>,
        /// The server's name in the client.
        #[arg(long, default_value = "toolgate")]
        name: String,
    },
    /// OpenAPI documents: see what toolgate makes of one, without a config.
    Openapi {
        #[command(subcommand)]
        command: OpenapiCommand,
    },
    /// Agent Skills of tools.yaml's `tools.skills`: list them, show one's instructions and
    /// files, read one file (confined to the skill's folder). Exit code 3 for a broken
    /// SKILL.md (with its line), 4 for an unknown skill or file.
    Skills {
        #[command(subcommand)]
        command: SkillsCommand,
    },
}

/// `toolgate skills ...`.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill's name and description (what a model sees before it loads one).
    List {
        /// Print `{"skills": [{"name", "description"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// One skill's description, instructions and files (what `load_skill` returns).
    Show {
        /// The skill's name.
        name: String,
        /// Print `{name, description, instructions, files}`.
        #[arg(long)]
        json: bool,
    },
    /// Print one file of a skill (what `read_skill_file` returns): `..`, absolute paths and
    /// symlinks out of the skill's folder are refused.
    Read {
        /// The skill's name.
        name: String,
        /// The file's path inside the skill's folder, e.g. `references/guide.md`.
        path: String,
    },
}

/// `toolgate openapi ...`.
#[derive(Debug, Subcommand)]
pub enum OpenapiCommand {
    /// Convert an OpenAPI 3.x document into tools and show them: each tool's name, method and
    /// path, its arguments and where each is sent (path, query, header, cookie, body), and
    /// every warning and skipped operation. Exit code 0 when the document converts (even with
    /// warnings), 2 when it cannot be read or converted.
    Inspect {
        /// The document: a file (JSON or YAML) or an http(s) URL (fetched, 30 s timeout).
        spec: String,
        /// Print one JSON object: `document`, `tools` (with their input schemas), `warnings`,
        /// `skipped`.
        #[arg(long)]
        json: bool,
        /// Show each tool's input schema as exported in this dialect (JSON output: default mcp).
        #[arg(long, value_enum)]
        dialect: Option<DialectArg>,
    },
}

/// A desktop MCP client `toolgate install` writes the configuration of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpClient {
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
}

impl McpClient {
    /// The client's name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "Claude Desktop",
            Self::Cursor => "Cursor",
        }
    }
}

/// A log level on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Errors and warnings (the default).
    Warn,
    /// Also what the gateway does: sources discovered, coercions of arguments.
    Info,
    /// Also details for debugging.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The `tracing` filter directive.
    pub fn directive(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }

    /// The level of `-v` given `count` times.
    pub fn from_verbosity(count: u8) -> Option<Self> {
        match count {
            0 => None,
            1 => Some(Self::Info),
            2 => Some(Self::Debug),
            _ => Some(Self::Trace),
        }
    }
}

/// Anthropic's tool-search tool, for `toolgate schema --defer-loading`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchToolArg {
    /// `tool_search_tool_bm25`: natural-language queries.
    Bm25,
    /// `tool_search_tool_regex`: regular expressions.
    Regex,
}

/// A schema dialect on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DialectArg {
    /// MCP `Tool` objects.
    Mcp,
    /// OpenAI function tools.
    Openai,
    /// OpenAI function tools with `"strict": true` (structured outputs rules).
    OpenaiStrict,
    /// Anthropic tools.
    Anthropic,
    /// Gemini function declarations (OpenAPI 3.0 subset).
    Gemini,
}

impl From<DialectArg> for toolgate::Dialect {
    fn from(d: DialectArg) -> Self {
        match d {
            DialectArg::Mcp => toolgate::Dialect::Mcp,
            DialectArg::Openai => toolgate::Dialect::OpenAi,
            DialectArg::OpenaiStrict => toolgate::Dialect::OpenAiStrict,
            DialectArg::Anthropic => toolgate::Dialect::Anthropic,
            DialectArg::Gemini => toolgate::Dialect::Gemini,
        }
    }
}
