//! tools.yaml text for MCP servers read from an editor's JSON (`toolgate import-mcp`), written by
//! hand: readable (one block per server, short lists on one line) and quoted where YAML needs it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::config::{CONFIG_VERSION, Interpolated, McpServer, McpTransport};

/// A tools.yaml (`version: 1`, `tools: mcp:`) with these servers, one block each, under a comment
/// naming `source`, the file they come from.
/// [`ToolsConfig::from_yaml_str`](crate::config::ToolsConfig::from_yaml_str) gives them back.
pub fn to_tools_yaml(servers: &[McpServer], source: &Path) -> String {
    let from = source.display().to_string().replace(['\r', '\n'], " ");
    let mut y = format!("# Generated from {from} by `toolgate import-mcp`.\n");
    let _ = writeln!(y, "version: {CONFIG_VERSION}\ntools:");
    y.push_str(if servers.is_empty() {
        "  mcp: []\n"
    } else {
        "  mcp:\n"
    });
    for (i, s) in servers.iter().enumerate() {
        y.push_str(if i > 0 { "\n    - id: " } else { "    - id: " });
        y.push_str(&scalar(&s.id));
        let (kind, url, headers, token) = match &s.transport {
            McpTransport::Stdio(t) => {
                let _ = write!(
                    y,
                    "\n      stdio:\n        command: {}\n",
                    scalar(&t.command)
                );
                yaml_list(&mut y, 8, "args", t.args.iter().map(Interpolated::raw));
                yaml_map(&mut y, "env", &t.env);
                if let Some(cwd) = &t.cwd {
                    let _ = writeln!(y, "        cwd: {}", scalar(cwd));
                }
                ("", "", None, None)
            }
            McpTransport::Http(t) => ("http", &*t.url, Some(&t.headers), t.bearer_token.as_ref()),
            McpTransport::Sse(t) => ("sse", &*t.url, Some(&t.headers), t.bearer_token.as_ref()),
        };
        if let Some(headers) = headers {
            let _ = write!(y, "\n      {kind}:\n        url: {}\n", scalar(url));
            yaml_map(&mut y, "headers", headers);
        }
        if let Some(t) = token {
            let _ = writeln!(y, "        bearer_token: {}", scalar(t.raw()));
        }
        yaml_list(&mut y, 6, "allow", s.allow.iter().map(String::as_str));
        yaml_list(&mut y, 6, "deny", s.deny.iter().map(String::as_str));
        if let Some(ms) = s.timeout_ms {
            let _ = writeln!(y, "      timeout_ms: {ms}");
        }
        if s.lazy {
            y.push_str("      lazy: true\n");
        }
        if !s.prefix {
            y.push_str("      prefix: false\n");
        }
    }
    y
}

/// A YAML scalar: plain when unambiguous, else double-quoted.
fn scalar(s: &str) -> String {
    let b = s.as_bytes();
    let first = match b.first() {
        Some(b'-') => b
            .get(1)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-'),
        Some(c) => c.is_ascii_alphabetic() || matches!(c, b'_' | b'/'),
        None => false,
    };
    let plain = first
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_-./@+=".contains(c))
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        return s.to_string();
    }
    let mut q = String::from('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if c.is_control() || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}') => {
                let _ = write!(q, "\\u{:04X}", u32::from(c));
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `key: [a, b]`, or a block list when that line would be long.
fn yaml_list<'a>(y: &mut String, indent: usize, key: &str, items: impl Iterator<Item = &'a str>) {
    let items: Vec<String> = items.map(scalar).collect();
    if items.is_empty() {
        return;
    }
    let (pad, flow) = (" ".repeat(indent), items.join(", "));
    if indent + key.len() + flow.len() + 4 <= 100 {
        let _ = writeln!(y, "{pad}{key}: [{flow}]");
    } else {
        let _ = writeln!(y, "{pad}{key}:");
        for item in items {
            let _ = writeln!(y, "{pad}  - {item}");
        }
    }
}

/// `env:` or `headers:` of a transport, one entry a line.
fn yaml_map(y: &mut String, key: &str, map: &BTreeMap<String, Interpolated>) {
    if !map.is_empty() {
        let _ = writeln!(y, "        {key}:");
    }
    for (k, v) in map {
        let _ = writeln!(y, "          {}: {}", scalar(k), scalar(v.raw()));
    }
}
