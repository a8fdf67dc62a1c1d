//! The `mcpServers` JSON of Claude Desktop, Cursor, Windsurf, Cline or Claude Code and the
//! `servers` JSON of VS Code (`.vscode/mcp.json`), read as toolgate's MCP configuration so an
//! existing file works unchanged ([`ToolsConfig::load`](super::ToolsConfig::load) accepts it).
//!
//! * An entry with `command` (`args`, `env`, `cwd`) is a stdio server; one with `url` (Windsurf:
//!   `serverUrl`, Gemini: `httpUrl`) and `headers` is streamable HTTP, or legacy SSE when the
//!   URL's path ends with `/sse`. `type` (or `transport`, `transportType`): `stdio`, `http`,
//!   `streamable-http`, `streamableHttp` or `sse` overrides the guess.
//! * `"disabled": true` skips the entry; `includeTools`/`excludeTools` become `allow`/`deny`;
//!   any other key is a warning (these files carry editor-specific keys).
//! * `${NAME}` and `${NAME:-default}` are kept, `${env:NAME}` becomes `${NAME}` and `${userHome}`
//!   `${HOME}`; `${workspaceFolder}` is the file's folder (its parent for a file in `.vscode/` or
//!   `.cursor/`), `${workspaceFolderBasename}` its name, `${pathSeparator}`/`${/}` the separator.
//!   `${input:ID}` (a VS Code prompt), other editor variables, and environment variables in
//!   `command`, `cwd` and `url` (which toolgate does not interpolate) are errors. Literal values
//!   (a pasted key) are kept as they are; a literal `$` is written `$$`.
//! * Comments and trailing commas (JSONC, which VS Code allows) are accepted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Display;
use std::path::Path;

use serde_json::{Map, Value};

use super::location::{LocationMap, escape};
use super::{
    CONFIG_VERSION, ConfigError, Diagnostic, HttpTransport, Interpolated, LoadedConfig, Location,
    McpServer, McpTransport, Severity, SseTransport, StdioTransport, ToolsConfig, ToolsSection,
};
use crate::names::{LOCAL_SOURCE_ID, MAX_TOOL_NAME_LEN, is_name_char, validate_source_id};

mod jsonc;
mod vars;
mod yaml;

use jsonc::strip_jsonc;
use vars::workspace_folder;

pub use yaml::to_tools_yaml;

/// The MCP servers of an editor's JSON file, and what is worth a look in it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpJsonConfig {
    /// The enabled servers, in file order; each `id` is its key made a valid source id.
    pub servers: Vec<McpServer>,
    /// Ignored keys, renamed ids, unsupported settings.
    pub warnings: Vec<Diagnostic>,
}

/// Whether `text` is an editor's MCP JSON file: JSON (comments allowed) whose root object has an
/// `mcpServers` object, or a `servers` object and no `version` or `tools` key.
pub fn is_mcp_json(text: &str) -> bool {
    let Ok(Value::Object(root)) = serde_json::from_str(&strip_jsonc(text)) else {
        return false;
    };
    let object = |k: &str| root.get(k).is_some_and(Value::is_object);
    object("mcpServers")
        || (object("servers") && !root.contains_key("version") && !root.contains_key("tools"))
}

/// Reads the servers of an editor's MCP JSON file; `path` names the file in diagnostics and
/// gives `${workspaceFolder}`.
///
/// # Errors
/// [`ConfigError::Invalid`] with every problem (bad JSON, wrong type, no `command` or `url`,
/// `${input:...}`, two keys giving one id...), each at its `path:line:column`.
pub fn parse_mcp_json(text: &str, path: &Path) -> Result<McpJsonConfig, ConfigError> {
    parse(text, path).map(|(config, _)| config)
}

/// A tools.yaml model with only these MCP servers.
pub fn to_tools_config(servers: Vec<McpServer>) -> ToolsConfig {
    let tools = ToolsSection {
        mcp: servers,
        ..ToolsSection::default()
    };
    ToolsConfig {
        version: CONFIG_VERSION,
        state: Vec::new(),
        tools,
        policy: Default::default(),
        gateway: Default::default(),
        store: Default::default(),
        settings: BTreeMap::new(),
    }
}

/// [`ToolsConfig::load`](super::ToolsConfig::load) for a file [`is_mcp_json`] accepts.
pub(super) fn load(src: &str, path: &Path) -> Result<LoadedConfig, ConfigError> {
    let (parsed, locations) = parse(src, path)?;
    Ok(LoadedConfig {
        config: to_tools_config(parsed.servers),
        path: path.to_path_buf(),
        source: src.to_string(),
        locations,
        warnings: parsed.warnings,
    })
}

fn parse(text: &str, path: &Path) -> Result<(McpJsonConfig, LocationMap), ConfigError> {
    let text = strip_jsonc(text);
    let root: Value = serde_json::from_str(&text).map_err(|e| {
        let message = e.to_string();
        let message = message.rsplit_once(" at line ").map_or(&*message, |m| m.0);
        let location = (e.line() > 0).then(|| Location::new(e.line(), e.column().max(1)));
        let message = format!("invalid JSON: {message}");
        ConfigError::Invalid(vec![Diagnostic::error(path, location, message)])
    })?;
    let mut cx = Cx {
        path,
        locations: LocationMap::from_yaml(&text),
        workspace: workspace_folder(path),
        server: String::new(),
        base: String::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let servers = cx.servers(&root);
    if !cx.errors.is_empty() {
        return Err(ConfigError::Invalid(cx.errors));
    }
    let warnings = cx.warnings;
    Ok((McpJsonConfig { servers, warnings }, cx.locations))
}

const TYPE_KEYS: [&str; 3] = ["type", "transport", "transportType"];
const URL_KEYS: [&str; 3] = ["url", "serverUrl", "httpUrl"];
const STDIO_KEYS: [&str; 5] = ["command", "args", "env", "cwd", "envFile"];

/// The reader: diagnostics, and the server being read (`server`, at pointer `base`).
struct Cx<'a> {
    path: &'a Path,
    locations: LocationMap,
    workspace: String,
    server: String,
    base: String,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn diagnostic(&self, loc: Location, message: impl Display, hint: Option<&str>) -> Diagnostic {
        let message = match self.server.as_str() {
            "" => message.to_string(),
            s => format!("server `{s}`: {message}"),
        };
        let mut d = Diagnostic::error(self.path, Some(loc), message);
        d.hint = hint.map(str::to_string);
        d
    }

    /// An error at the node at `ptr`.
    fn error(&mut self, ptr: &str, message: impl Display, hint: Option<&str>) {
        let d = self.diagnostic(self.locations.locate(ptr), message, hint);
        self.errors.push(d);
    }

    /// A warning at the key of `ptr`.
    fn warning(&mut self, ptr: &str, message: impl Display, hint: Option<&str>) {
        let loc = self
            .locations
            .key(ptr)
            .unwrap_or_else(|| self.locations.locate(ptr));
        let mut d = self.diagnostic(loc, message, hint);
        d.severity = Severity::Warning;
        self.warnings.push(d);
    }

    /// `args.1`, `env.KEY`: where `ptr` is in the current server.
    fn label(&self, ptr: &str) -> String {
        let rel = ptr
            .strip_prefix(&self.base)
            .unwrap_or(ptr)
            .trim_start_matches('/');
        rel.replace('/', ".").replace("~1", "/").replace("~0", "~")
    }

    fn servers(&mut self, root: &Value) -> Vec<McpServer> {
        let found = ["mcpServers", "servers"]
            .into_iter()
            .find_map(|k| root.get(k).map(|v| (k, v)));
        let Some((key, Value::Object(entries))) = found else {
            let ptr = format!("/{}", found.map_or("", |f| f.0));
            let message = "expected an `mcpServers` object (Claude Desktop, Cursor...) or a \
                           `servers` object (VS Code)";
            self.error(&ptr, message, None);
            return Vec::new();
        };
        let mut ids: HashMap<String, (&str, String)> = HashMap::new();
        let mut servers = Vec::new();
        for (name, entry) in entries {
            (self.server, self.base) = (name.clone(), format!("/{key}/{}", escape(name)));
            let ptr = self.base.clone();
            let Value::Object(obj) = entry else {
                self.error(&ptr, "expected an object", None);
                continue;
            };
            match obj.get("disabled") {
                Some(Value::Bool(true)) => {
                    let hint = "drop `disabled` (or set it false) to import it";
                    self.warning(&ptr, "skipped: `disabled` is true", Some(hint));
                    continue;
                }
                None | Some(Value::Bool(false)) => {}
                Some(_) => self.error(&format!("{ptr}/disabled"), "`disabled`: not a bool", None),
            }
            let Some(id) = source_id(name) else {
                let hint = "rename it with letters, digits, `_` or `-`";
                self.error(&ptr, "cannot make a source id of this name", Some(hint));
                continue;
            };
            if let Some((first, first_ptr)) = ids.get(&id) {
                let line = self.locations.locate(first_ptr).line;
                let msg = format!("its source id `{id}` is also that of `{first}` (line {line})");
                self.error(&ptr, msg, Some("rename one of them"));
                continue;
            }
            if id != *name {
                let msg = format!("its source id is `{id}` (tools `{id}.*`)");
                let hint = "source ids use letters, digits, `_` and `-`, without `__`";
                self.warning(&ptr, msg, Some(hint));
            }
            ids.insert(id.clone(), (name, ptr));
            let before = self.errors.len();
            let server = self.server(id, obj);
            if let Some(server) = server.filter(|_| self.errors.len() == before) {
                self.check_as_tools_yaml(&server);
                servers.extend((self.errors.len() == before).then_some(server));
            }
        }
        self.server.clear();
        servers
    }

    /// The rules of tools.yaml, applied to a server the reader built: what this file gives must
    /// load as tools.yaml (`toolgate import-mcp` writes it), so a rule the reader does not check
    /// itself is reported here, at the server.
    fn check_as_tools_yaml(&mut self, server: &McpServer) {
        let loaded = LoadedConfig {
            config: to_tools_config(vec![server.clone()]),
            path: self.path.to_path_buf(),
            source: String::new(),
            locations: LocationMap::default(),
            warnings: Vec::new(),
        };
        let base = self.base.clone();
        for d in super::validate::validate(&loaded).0 {
            let message = format!("not a valid tools.yaml server: {}", d.message);
            self.error(&base, message, d.hint.as_deref());
        }
    }

    /// The server at `self.base` (when it pushes errors, its result is not used).
    fn server(&mut self, id: String, obj: &Map<String, Value>) -> Option<McpServer> {
        let base = self.base.clone();
        let at = |k: &str| format!("{base}/{}", escape(k));
        let mut used: HashSet<&str> = ["disabled", "includeTools", "excludeTools"].into();
        used.extend(TYPE_KEYS);
        let type_key = TYPE_KEYS.into_iter().find(|k| obj.contains_key(*k));
        let kind = match type_key.map(|k| (k, self.string(&at(k), &obj[k]))) {
            Some((k, Some(s))) => match s.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
                "stdio" => Some("stdio"),
                "http" | "streamablehttp" | "streamable" => Some("http"),
                "sse" => Some("sse"),
                _ => {
                    let hint = "use `stdio`, `http` (streamable HTTP) or `sse`";
                    self.error(&at(k), format_args!("unknown transport `{s}`"), Some(hint));
                    return None;
                }
            },
            Some((_, None)) => return None,
            None => None,
        };
        let url_key = URL_KEYS.into_iter().find(|k| obj.contains_key(*k));
        let kind = match (kind, url_key) {
            (Some(kind), _) => kind,
            (None, _) if obj.contains_key("command") => "stdio",
            (None, Some("httpUrl")) => "http",
            (None, Some(k)) if obj[k].as_str().is_some_and(is_sse_path) => "sse",
            (None, Some(_)) => "http",
            (None, None) => {
                let hint = "a local server needs `command` (and `args`), a remote one `url`";
                self.error(&base, "neither `command` nor `url`", Some(hint));
                return None;
            }
        };
        let transport = if kind == "stdio" {
            used.extend(["command", "args", "env", "cwd"]);
            let command = match obj.get("command") {
                Some(v) => self.plain(&at("command"), v),
                None => {
                    self.error(&base, "a stdio server needs `command`", None);
                    None
                }
            };
            if command.as_ref().is_some_and(|c| c.trim().is_empty()) {
                self.error(&at("command"), "`command` is empty", None);
            }
            let args = self.strings(&at("args"), obj.get("args"));
            let args = args
                .into_iter()
                .filter_map(|(p, s)| self.interpolated(&p, s))
                .collect();
            McpTransport::Stdio(StdioTransport {
                command: command.unwrap_or_default(),
                args,
                env: self.map(&at("env"), obj.get("env")),
                cwd: obj.get("cwd").and_then(|v| self.plain(&at("cwd"), v)),
            })
        } else {
            let k = url_key.unwrap_or("url");
            used.extend([k, "headers"]);
            let url = match obj.get(k) {
                Some(v) => self.plain(&at(k), v),
                None => {
                    self.error(&base, "a remote server needs `url`", None);
                    None
                }
            };
            let url = url.unwrap_or_else(|| "http://".into()); // otherwise, an error already
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                self.error(&at(k), format_args!("`{url}` is not an http(s) URL"), None);
            }
            let headers = self.map(&at("headers"), obj.get("headers"));
            let bearer_token = None;
            match kind {
                "http" => McpTransport::Http(HttpTransport {
                    url,
                    headers,
                    bearer_token,
                    oauth2: None,
                }),
                _ => McpTransport::Sse(SseTransport {
                    url,
                    headers,
                    bearer_token,
                    oauth2: None,
                }),
            }
        };
        let mut tools = |k: &str| -> Vec<String> {
            let items = self.strings(&at(k), obj.get(k));
            for (ptr, item) in &items {
                if let Some(message) = super::validate::glob_error(item) {
                    self.error(ptr, message, None);
                }
            }
            items.into_iter().map(|(_, s)| s.to_string()).collect()
        };
        let (allow, deny) = (tools("includeTools"), tools("excludeTools"));
        for k in obj.keys().filter(|k| !used.contains(k.as_str())) {
            self.unused(kind, url_key, k, &obj[k]);
        }
        let (timeout_ms, lazy) = (None, false);
        Some(McpServer {
            id,
            transport,
            allow,
            deny,
            timeout_ms,
            connect_timeout_ms: None,
            idle_timeout_ms: None,
            lazy,
            max_result_bytes: None,
            prefix: true,
            require: None,
        })
    }

    fn unused(&mut self, kind: &str, url_key: Option<&str>, k: &str, v: &Value) {
        let ptr = format!("{}/{}", self.base, escape(k));
        let (msg, hint) = match k {
            "envFile" if kind == "stdio" => (
                format!("`envFile` is not read: the variables of {v} are not passed"),
                Some("the server inherits toolgate's environment: set them there or in `env`"),
            ),
            "timeout" => (
                "`timeout` is not used by toolgate (editors differ on its unit)".into(),
                Some("set `timeout_ms` on the server in tools.yaml (`toolgate import-mcp`)"),
            ),
            _ if URL_KEYS.contains(&k) && kind != "stdio" => {
                let used = url_key.unwrap_or("url");
                (
                    format!("`{k}` is not used (`{used}` gives the address)"),
                    None,
                )
            }
            _ if STDIO_KEYS.contains(&k) || URL_KEYS.contains(&k) || k == "headers" => {
                (format!("`{k}` is not used by {kind} servers"), None)
            }
            _ => (format!("`{k}` is not used by toolgate"), None),
        };
        self.warning(&ptr, msg, hint);
    }

    fn string<'v>(&mut self, ptr: &str, v: &'v Value) -> Option<&'v str> {
        if v.as_str().is_none() {
            let msg = format!("`{}` must be a string", self.label(ptr));
            self.error(ptr, msg, None);
        }
        v.as_str()
    }

    /// The strings of an array, with their pointers; an error for anything else.
    fn strings<'v>(&mut self, ptr: &str, v: Option<&'v Value>) -> Vec<(String, &'v str)> {
        let items = match v {
            None => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => {
                let msg = format!("`{}` must be an array of strings", self.label(ptr));
                self.error(ptr, msg, None);
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = format!("{ptr}/{i}");
            out.extend(self.string(&p, item).map(|s| (p, s)));
        }
        out
    }

    /// `env` or `headers`: an object of strings (numbers and booleans are taken as text).
    fn map(&mut self, ptr: &str, v: Option<&Value>) -> BTreeMap<String, Interpolated> {
        let entries = match v {
            None => return BTreeMap::new(),
            Some(Value::Object(entries)) => entries,
            Some(_) => {
                let msg = format!("`{}` must be an object of strings", self.label(ptr));
                self.error(ptr, msg, None);
                return BTreeMap::new();
            }
        };
        let mut out = BTreeMap::new();
        for (k, v) in entries {
            let p = format!("{ptr}/{}", escape(k));
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => v.to_string(),
                Value::Null if ptr.ends_with("/env") => {
                    let msg = format!("`{}` is null (unset): ignored", self.label(&p));
                    self.warning(&p, msg, Some("toolgate cannot unset an inherited variable"));
                    continue;
                }
                _ => {
                    self.error(
                        &p,
                        format_args!("`{}` must be a string", self.label(&p)),
                        None,
                    );
                    continue;
                }
            };
            out.extend(self.interpolated(&p, &text).map(|i| (k.clone(), i)));
        }
        out
    }
}

/// Whether a URL's path ends with `/sse` (the legacy transport's usual endpoint).
fn is_sse_path(url: &str) -> bool {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].trim_end_matches('/').ends_with("/sse")
}

/// A JSON key as a source id: itself when valid; else other characters become `_`, runs of `_`
/// one, leading and trailing `_` go, at most 64 characters, `local` becomes `local_mcp`.
fn source_id(name: &str) -> Option<String> {
    if validate_source_id(name).is_ok() {
        return Some(name.to_string());
    }
    let mut id = String::new();
    for c in name.chars().map(|c| if is_name_char(c) { c } else { '_' }) {
        if !(c == '_' && id.ends_with('_')) {
            id.push(c);
        }
    }
    let mut id: String = id
        .trim_matches('_')
        .chars()
        .take(MAX_TOOL_NAME_LEN)
        .collect();
    id.truncate(id.trim_end_matches('_').len());
    if id == LOCAL_SOURCE_ID {
        id.push_str("_mcp");
    }
    validate_source_id(&id).is_ok().then_some(id)
}

#[cfg(test)]
mod tests;
