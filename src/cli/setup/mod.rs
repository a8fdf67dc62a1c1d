//! First steps: `toolgate init` writes a commented tools.yaml to start from, and `toolgate
//! install CLIENT` adds the gateway to a desktop MCP client's configuration (the `mcpServers`
//! object Claude Desktop and Cursor read), or prints the entry.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::args::{McpClient, exit};
use super::{CmdResult, Failure, output};

/// The file `toolgate init` writes: a run-time config (no local `fn:` entries: the binary's
/// own tools come with it) that `toolgate check` passes, every other section a commented
/// example.
const INIT_TOOLS_YAML: &str = include_str!("tools.yaml");

/// `toolgate init [FILE] [--force]`.
pub(super) fn init(file: &Path, force: bool) -> CmdResult {
    if file.exists() && !force {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "error: `{}` exists; nothing written (add --force to replace it)",
                file.display()
            ),
        ));
    }
    std::fs::write(file, INIT_TOOLS_YAML).map_err(|e| {
        Failure::new(
            exit::TOOL_ERROR,
            format!("error: cannot write `{}`: {e}", file.display()),
        )
    })?;
    output::print_text(&format!(
        "wrote {f}; check it with `toolgate check {f}`, serve it with `toolgate --config {f} serve`\n",
        f = file.display()
    ));
    Ok(exit::OK)
}

/// What `toolgate install` was asked.
pub(super) struct Install<'a> {
    /// The desktop client.
    pub client: McpClient,
    /// The server's name in `mcpServers`.
    pub name: &'a str,
    /// Print the entry instead of writing it.
    pub print: bool,
    /// The client's configuration file, instead of its usual place.
    pub file: Option<PathBuf>,
    /// The tools.yaml the gateway is to run on (`--config`, else ./tools.yaml if there is one).
    pub config: Option<&'a Path>,
}

impl Install<'_> {
    /// Prints the entry, or merges it into the client's file (other servers and keys kept; one
    /// of the same name replaced), written whole through a temporary file and a rename.
    pub(super) fn run(&self) -> CmdResult {
        let entry = self.entry()?;
        if self.print {
            let mut servers = Map::new();
            servers.insert(self.name.to_string(), entry);
            output::print_json(&json!({ "mcpServers": servers }));
            return Ok(exit::OK);
        }
        let file = match &self.file {
            Some(file) => file.clone(),
            None => default_file(self.client)?,
        };
        // A symbolic link is followed: its target is the file the client reads.
        let file = std::fs::canonicalize(&file).unwrap_or(file);
        let mut document = read_document(&file)?;
        let servers = document
            .as_object_mut()
            .map(|o| {
                o.entry("mcpServers")
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .and_then(Value::as_object_mut)
            .ok_or_else(|| {
                Failure::new(
                    exit::CONFIG,
                    format!(
                        "error: `{}`: its `mcpServers` is not an object; nothing written",
                        file.display()
                    ),
                )
            })?;
        let replaced = servers.insert(self.name.to_string(), entry).is_some();
        write_document(&file, &document)?;
        output::print_text(&format!(
            "{} `{}` {} {} ({}); restart {} to load it\n",
            if replaced { "replaced" } else { "added" },
            self.name,
            if replaced { "in" } else { "to" },
            file.display(),
            self.client.title(),
            self.client.title(),
        ));
        Ok(exit::OK)
    }

    /// `{"command": <this binary>, "args": ["--config", <absolute>, "serve", "--stdio"]}`:
    /// absolute paths, since a desktop client starts servers in a folder of its own.
    fn entry(&self) -> Result<Value, Failure> {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| {
                Failure::new(
                    exit::TOOL_ERROR,
                    format!("error: cannot tell where this binary is: {e}"),
                )
            })?;
        let mut args = Vec::new();
        if let Some(config) = super::config::config_path(self.config) {
            let absolute = std::fs::canonicalize(&config).map_err(|e| {
                Failure::new(
                    exit::CONFIG,
                    format!("error: cannot read `{}`: {e}", config.display()),
                )
            })?;
            args.push("--config".to_string());
            args.push(absolute.display().to_string());
        }
        args.extend(["serve".to_string(), "--stdio".to_string()]);
        Ok(json!({ "command": exe.display().to_string(), "args": args }))
    }
}

/// Where the client keeps its MCP servers: Claude Desktop's `claude_desktop_config.json` in its
/// settings folder (macOS `~/Library/Application Support/Claude`, Windows `%APPDATA%\Claude`,
/// elsewhere `$XDG_CONFIG_HOME/Claude` or `~/.config/Claude`, as its docs give); Cursor's global
/// `~/.cursor/mcp.json`.
fn default_file(client: McpClient) -> Result<PathBuf, Failure> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME").or_else(|| var("USERPROFILE"));
    let missing = || {
        Failure::new(
            exit::USAGE,
            "error: no home folder known (HOME is not set): give the file with --file",
        )
    };
    Ok(match client {
        McpClient::ClaudeDesktop => {
            let folder = if cfg!(target_os = "macos") {
                home.ok_or_else(missing)?
                    .join("Library/Application Support")
            } else if cfg!(windows) {
                var("APPDATA").ok_or_else(missing)?
            } else {
                var("XDG_CONFIG_HOME")
                    .or_else(|| home.map(|h| h.join(".config")))
                    .ok_or_else(missing)?
            };
            folder.join("Claude").join("claude_desktop_config.json")
        }
        McpClient::Cursor => home.ok_or_else(missing)?.join(".cursor").join("mcp.json"),
    })
}

/// The client's file as JSON: an empty object when there is none yet; an error (nothing
/// written) when it is not a JSON object.
fn read_document(file: &Path) -> Result<Value, Failure> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({})),
        Err(e) => {
            return Err(Failure::new(
                exit::CONFIG,
                format!("error: cannot read `{}`: {e}", file.display()),
            ));
        }
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(Failure::new(
            exit::CONFIG,
            format!(
                "error: `{}` is not a JSON object; nothing written",
                file.display()
            ),
        )),
        Err(e) => Err(Failure::new(
            exit::CONFIG,
            format!(
                "error: `{}`:{}:{}: not JSON ({e}); nothing written",
                file.display(),
                e.line(),
                e.column()
            ),
        )),
    }
}

/// Writes `document` to `file` whole: a temporary file beside it, then a rename, so that the
/// client never reads half a file.
fn write_document(file: &Path, document: &Value) -> Result<(), Failure> {
    let fail = |e: std::io::Error| {
        Failure::new(
            exit::TOOL_ERROR,
            format!("error: cannot write `{}`: {e}", file.display()),
        )
    };
    let folder = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(fail)?;
    let mut text = serde_json::to_string_pretty(document).map_err(|e| fail(e.into()))?;
    text.push('\n');
    let temp = folder.join(format!(
        ".{}.toolgate-{}",
        file.file_name()
            .map_or_else(|| "config".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    std::fs::write(&temp, text).map_err(fail)?;
    // The file keeps its permissions (a client's file may hold tokens: 0600 stays 0600).
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, file).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail(e)
    })
}
