use std::path::Path;

use super::*;
use crate::config::{DisplayAll, Severity};

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/alice/Desktop",
        "/Users/alice/Downloads"
      ]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_pasted$secret"}
    },
    "notion": {"url": "https://mcp.notion.com/mcp"},
    "legacy": {"url": "http://127.0.0.1:3001/sse/"}
  },
  "globalShortcut": "Ctrl+Space"
}"#;

const CURSOR: &str = r#"{
  "mcpServers": {
    "context7": {
      "url": "https://mcp.context7.com/mcp",
      "headers": {"CONTEXT7_API_KEY": "${env:CONTEXT7_API_KEY}", "X-Client": "cursor"}
    },
    "linear": {
      "command": "npx",
      "args": ["-y", "mcp-remote", "https://mcp.linear.app/sse"],
      "disabled": true
    },
    "postgres": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-postgres", "${DATABASE_URL:-postgresql://localhost/dev}"],
      "env": {"PGPASSWORD": "${PGPASSWORD}"},
      "disabled": false,
      "autoApprove": ["query"]
    },
    "windsurf-style": {"serverUrl": "https://mcp.example.com/sse", "transport": "sse"}
  }
}"#;

const VSCODE: &str = r#"{
  // Inputs are prompted for on first server start.
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}
  ],
  "servers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": {"MEMORY_FILE_PATH": "${workspaceFolder}/.memory.json"},
      "envFile": "${workspaceFolder}/.env",
    },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}
    },
    /* A Python server run from the workspace. */
    "my tools": {
      "type": "stdio",
      "command": "${workspaceFolder}/.venv/bin/python",
      "args": ["-m", "tools", "--root", "${workspaceFolder}", "--home", "${userHome}"],
      "cwd": "${workspaceFolder}"
    },
  },
}"#;

const VSCODE_PATH: &str = "/home/alice/proj/.vscode/mcp.json";

fn parse(src: &str) -> McpJsonConfig {
    parse_mcp_json(src, Path::new("mcp.json")).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(src: &str) -> Vec<Diagnostic> {
    match parse_mcp_json(src, Path::new("mcp.json")) {
        Ok(c) => panic!("expected errors, got {c:?}"),
        Err(e) => e.diagnostics(),
    }
}

fn stdio(s: &McpServer) -> &StdioTransport {
    match &s.transport {
        McpTransport::Stdio(t) => t,
        other => panic!("{}: not stdio: {other:?}", s.id),
    }
}

fn raw(v: &[Interpolated]) -> Vec<&str> {
    v.iter().map(Interpolated::raw).collect()
}

#[test]
fn claude_desktop() {
    let c = parse(CLAUDE_DESKTOP);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let ids: Vec<_> = c.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["filesystem", "github", "notion", "legacy"]);
    let fs = stdio(&c.servers[0]);
    assert_eq!(fs.command, "npx");
    assert_eq!(
        raw(&fs.args),
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/Users/alice/Desktop",
            "/Users/alice/Downloads"
        ]
    );
    // A pasted secret stays a literal (its `$` escaped for toolgate's syntax).
    let token = &stdio(&c.servers[1]).env["GITHUB_PERSONAL_ACCESS_TOKEN"];
    assert!(token.is_literal());
    assert_eq!(
        token.resolve_with(|_| None).unwrap().expose(),
        "ghp_pasted$secret"
    );
    assert!(matches!(&c.servers[2].transport,
        McpTransport::Http(t) if t.url == "https://mcp.notion.com/mcp" && t.headers.is_empty()));
    assert!(matches!(&c.servers[3].transport,
        McpTransport::Sse(t) if t.url == "http://127.0.0.1:3001/sse/"));
}

#[test]
fn cursor() {
    let c = parse(CURSOR);
    let ids: Vec<_> = c.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["context7", "postgres", "windsurf-style"],
        "disabled skipped"
    );
    let McpTransport::Http(h) = &c.servers[0].transport else {
        panic!("{:?}", c.servers[0])
    };
    assert_eq!(h.headers["CONTEXT7_API_KEY"].raw(), "${CONTEXT7_API_KEY}");
    assert_eq!(h.headers["X-Client"].raw(), "cursor");
    let pg = stdio(&c.servers[1]);
    assert_eq!(
        raw(&pg.args)[2],
        "${DATABASE_URL:-postgresql://localhost/dev}"
    );
    assert_eq!(pg.env["PGPASSWORD"].variables(), ["PGPASSWORD"]);
    assert!(matches!(&c.servers[2].transport,
        McpTransport::Sse(t) if t.url == "https://mcp.example.com/sse"));
    // The skipped server is said, at its entry (line 7); `autoApprove` is Cursor's/Cline's
    // own: a warning at its key (line 17).
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    for (w, line, column, text) in [
        (
            &c.warnings[0],
            7,
            5,
            "server `linear`: skipped: `disabled` is true",
        ),
        (
            &c.warnings[1],
            17,
            7,
            "`autoApprove` is not used by toolgate",
        ),
    ] {
        assert_eq!(w.severity, Severity::Warning);
        assert_eq!(w.location, Some(Location::new(line, column)), "{w}");
        assert!(w.message.contains(text), "{w}");
    }
}

#[test]
fn vscode() {
    let c = parse_mcp_json(VSCODE, Path::new(VSCODE_PATH)).unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<_> = c.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["memory", "github", "my_tools"]);
    let memory = stdio(&c.servers[0]);
    assert_eq!(
        memory.env["MEMORY_FILE_PATH"].raw(),
        "/home/alice/proj/.memory.json"
    );
    let McpTransport::Http(gh) = &c.servers[1].transport else {
        panic!("{:?}", c.servers[1])
    };
    assert_eq!(gh.headers["Authorization"].raw(), "Bearer ${GITHUB_TOKEN}");
    let tools = stdio(&c.servers[2]);
    assert_eq!(tools.command, "/home/alice/proj/.venv/bin/python");
    assert_eq!(
        raw(&tools.args),
        [
            "-m",
            "tools",
            "--root",
            "/home/alice/proj",
            "--home",
            "${HOME}"
        ]
    );
    assert_eq!(tools.cwd.as_deref(), Some("/home/alice/proj"));
    // Warnings: `envFile` (line 12), the renamed id (line 20).
    let w: Vec<_> = c
        .warnings
        .iter()
        .map(|w| (w.location.unwrap().line, &*w.message))
        .collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[0].0, 12);
    assert!(w[0].1.contains("`envFile` is not read"), "{}", w[0].1);
    assert!(w[0].1.contains("\"${workspaceFolder}/.env\""), "{}", w[0].1);
    assert_eq!(w[1].0, 20);
    assert!(
        w[1].1
            .contains("server `my tools`: its source id is `my_tools`"),
        "{}",
        w[1].1
    );
}

#[test]
fn vscode_input_is_an_error_at_its_line() {
    let src = r#"{
  "inputs": [{"type": "promptString", "id": "perplexity-key", "password": true}],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}
    }
  }
}"#;
    let e = errors(src);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].location, Some(Location::new(8, 37)));
    assert!(e[0].message.contains("server `perplexity`"), "{}", e[0]);
    assert!(
        e[0].message.contains("`${input:perplexity-key}`"),
        "{}",
        e[0]
    );
    assert!(e[0].hint.as_deref().unwrap().contains("${env:NAME}"));
    assert!(
        e[0].to_string().starts_with("error: mcp.json:8:37: "),
        "{}",
        e[0]
    );
}

#[test]
fn ids_are_normalised_and_collisions_are_errors() {
    let src = r#"{"mcpServers": {
  "@scope/pkg server": {"command": "a"},
  "local": {"command": "b"},
  "Already-Fine_1": {"command": "c"},
  "a__b": {"command": "d"}
}}"#;
    let c = parse(src);
    let ids: Vec<_> = c.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["scope_pkg_server", "local_mcp", "Already-Fine_1", "a_b"]
    );
    let lines: Vec<_> = c
        .warnings
        .iter()
        .map(|w| w.location.unwrap().line)
        .collect();
    assert_eq!(lines, [2, 3, 5]);
    assert!(
        c.warnings[0]
            .message
            .contains("`@scope/pkg server`: its source id is `scope_pkg_server`")
    );

    let src = r#"{"mcpServers": {
  "my server": {"command": "a"},
  "my_server": {"command": "b"},
  "!!!": {"command": "c"}
}}"#;
    let e = errors(src);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].location, Some(Location::new(3, 16)));
    assert!(e[0].message.contains(
        "server `my_server`: its source id `my_server` is also that of `my server` (line 2)"
    ));
    assert_eq!(e[0].hint.as_deref(), Some("rename one of them"));
    assert_eq!(e[1].location.unwrap().line, 4);
    assert!(e[1].message.contains("cannot make a source id"), "{}", e[1]);
}

#[test]
fn unknown_and_misplaced_keys_are_warnings() {
    let src = r#"{"mcpServers": {
  "fs": {
    "command": "npx",
    "url": "https://ignored.example",
    "alwaysAllow": ["read"],
    "timeout": 60
  },
  "remote": {
    "type": "streamable-http",
    "url": "https://a.example/mcp",
    "serverUrl": "https://b.example/mcp",
    "env": {"A": "b"},
    "includeTools": ["search", "get_*"],
    "excludeTools": ["delete"]
  }
}}"#;
    let c = parse(src);
    let w: Vec<_> = c
        .warnings
        .iter()
        .map(|w| (w.location.unwrap().line, &*w.message))
        .collect();
    assert_eq!(w.len(), 5, "{w:?}");
    assert_eq!(w[0], (4, "server `fs`: `url` is not used by stdio servers"));
    assert_eq!(
        w[1],
        (5, "server `fs`: `alwaysAllow` is not used by toolgate")
    );
    assert_eq!(w[2].0, 6);
    assert!(w[2].1.contains("`timeout` is not used"), "{}", w[2].1);
    assert_eq!(
        w[3],
        (
            11,
            "server `remote`: `serverUrl` is not used (`url` gives the address)"
        )
    );
    assert_eq!(
        w[4],
        (12, "server `remote`: `env` is not used by http servers")
    );
    assert_eq!(c.servers[1].allow, ["search", "get_*"]);
    assert_eq!(c.servers[1].deny, ["delete"]);
}

#[test]
fn errors_point_at_their_node() {
    let src = r#"{
  "mcpServers": {
    "a": {"args": ["x"]},
    "b": {"command": 42},
    "c": {"command": "x", "args": ["ok", 7], "env": {"K": ["no"]}},
    "d": {"type": "websocket", "url": "wss://x"},
    "e": {"url": "ftp://x"},
    "f": {"command": "${env:HOME}/bin/server", "cwd": "${config:root}"},
    "g": "npx",
    "h": {"url": "https://x.example/mcp?key=${API_KEY}"}
  }
}"#;
    let e = errors(src);
    let at: Vec<_> = e.iter().map(|d| d.location.unwrap().to_string()).collect();
    let got: Vec<_> = e
        .iter()
        .zip(&at)
        .map(|(d, l)| (l.as_str(), &*d.message))
        .collect();
    let want = [
        ("3:10", "server `a`: neither `command` nor `url`"),
        ("4:22", "server `b`: `command` must be a string"),
        ("5:42", "server `c`: `args.1` must be a string"),
        ("5:59", "server `c`: `env.K` must be a string"),
        ("6:19", "server `d`: unknown transport `websocket`"),
        ("7:18", "server `e`: `ftp://x` is not an http(s) URL"),
    ];
    assert_eq!(&got[..want.len()], &want, "{got:#?}");
    let rest = &got[want.len()..];
    assert_eq!(rest.len(), 4, "{rest:#?}");
    assert_eq!(rest[0].0, "8:22");
    let m = "`${env:HOME}` in `command`: toolgate does not substitute";
    assert!(rest[0].1.contains(m), "{}", rest[0].1);
    assert_eq!(rest[1].0, "8:55");
    let m = "`${config:root}` in `cwd` is not supported";
    assert!(rest[1].1.contains(m), "{}", rest[1].1);
    assert_eq!(rest[2], ("9:10", "server `g`: expected an object"));
    assert_eq!(rest[3].0, "10:18");
    assert!(rest[3].1.contains("`${API_KEY}` in `url`"), "{}", rest[3].1);
}

#[test]
fn bad_json_and_missing_section() {
    let e =
        errors("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n    \"b\": {}\n  }\n}");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].location.map(|l| l.line), Some(4), "{}", e[0]);
    assert!(e[0].message.starts_with("invalid JSON: "), "{}", e[0]);
    assert!(!e[0].message.contains("at line"), "{}", e[0]);
    let e = errors("{\"mcpServers\": [1]}");
    assert_eq!(e[0].location, Some(Location::new(1, 16)));
    assert!(e[0].message.contains("`mcpServers` object"), "{}", e[0]);
}

#[test]
fn jsonc_keeps_lines_and_columns() {
    let src = "{ // c\n  \"a\": [1, 2,], /* x\n y */ \"b\": \"// not a comment\",\n}";
    let out = strip_jsonc(src);
    assert_eq!(out.lines().count(), src.lines().count());
    for (o, s) in out.lines().zip(src.lines()) {
        assert_eq!(o.chars().count(), s.chars().count(), "{o:?} vs {s:?}");
    }
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["b"], "// not a comment");
    assert_eq!(v["a"], serde_json::json!([1, 2]));
    assert_eq!(strip_jsonc("\u{feff}{}"), "{}");
}

#[test]
fn literal_dollars_are_kept() {
    let src = r#"{"mcpServers": {"x": {"command": "run$1", "args": ["a$$b", "${", "$HOME"]}}}"#;
    let c = parse(src);
    let t = stdio(&c.servers[0]);
    assert_eq!(t.command, "run$1");
    let resolved: Vec<_> = t
        .args
        .iter()
        .map(|a| a.resolve_with(|_| None).unwrap().into_inner())
        .collect();
    assert_eq!(resolved, ["a$$b", "${", "$HOME"]);
}

#[test]
fn detection() {
    assert!(is_mcp_json(CLAUDE_DESKTOP));
    assert!(is_mcp_json(CURSOR));
    assert!(is_mcp_json(VSCODE));
    assert!(is_mcp_json(r#"{"mcpServers": {}}"#));
    // A tools.yaml, in YAML or written as JSON.
    assert!(!is_mcp_json(crate::config::tests::FULL));
    assert!(!is_mcp_json(r#"{"version": 1, "tools": {"mcp": []}}"#));
    assert!(!is_mcp_json(r#"{"version": 1, "servers": {}}"#));
    // A JSON Schema, an OpenAPI document (`servers` is a list), not JSON at all.
    let schema = crate::config::ToolsConfig::json_schema().to_string();
    assert!(!is_mcp_json(&schema));
    assert!(!is_mcp_json(
        r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"servers": {"type": "object"}}}"#
    ));
    assert!(!is_mcp_json(
        r#"{"openapi": "3.1.0", "servers": [{"url": "https://x"}]}"#
    ));
    assert!(!is_mcp_json("mcpServers:\n  a: {command: x}\n"));
    assert!(!is_mcp_json(r#"[{"mcpServers": {}}]"#));
}

#[test]
fn yaml_round_trip() {
    let mut servers = parse(CLAUDE_DESKTOP).servers;
    servers.extend(parse(CURSOR).servers);
    servers.extend(
        parse_mcp_json(VSCODE, Path::new(VSCODE_PATH))
            .unwrap()
            .servers,
    );
    // Values that need quoting.
    let src = r##"{"mcpServers": {"odd": {"command": "C:\\Program Files\\node.exe",
        "args": ["--port", "3000", "true", "-", "--", "a: b", "#x", "line\nbreak \"q\"", "tab\t\u007f", "", "y", "~", "[x]", "{y}", "@at", "a,b", "é"],
        "env": {"1KEY": "null", "K": "${A:-x y}"}, "includeTools": ["get_*"]}}}"##;
    servers.extend(parse(src).servers);
    let dup = servers.iter().rposition(|s| s.id == "github").unwrap();
    servers[dup].id = "copilot".into();
    servers[0].timeout_ms = Some(5000);
    servers[0].lazy = true;
    servers[2].transport = McpTransport::Http(HttpTransport {
        url: "https://x.example/mcp".into(),
        headers: BTreeMap::new(),
        bearer_token: Some(Interpolated::new("${TOKEN}").unwrap()),
        oauth2: None,
    });

    let yaml = to_tools_yaml(&servers, Path::new("/home/alice/.cursor/mcp.json"));
    assert!(
        yaml.starts_with(
            "# Generated from /home/alice/.cursor/mcp.json by `toolgate import-mcp`.\n\
             version: 1\ntools:\n  mcp:\n    - id: filesystem\n      stdio:\n        command: npx\n"
        ),
        "{yaml}"
    );
    let memory_args = "\n        args: [-y, \"@modelcontextprotocol/server-memory\"]\n";
    assert!(yaml.contains(memory_args), "{yaml}");
    let long_args = "\n        args:\n          - -y\n          - \"@model";
    assert!(yaml.contains(long_args), "{yaml}");
    let loaded = ToolsConfig::from_yaml_str(&yaml, Path::new("tools.yaml"))
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(loaded.tools.mcp, servers, "{yaml}");
    assert_eq!(loaded.config, to_tools_config(servers));

    let empty = to_tools_yaml(&[], Path::new("mcp.json"));
    let loaded = ToolsConfig::from_yaml_str(&empty, Path::new("tools.yaml")).unwrap();
    assert!(loaded.tools.mcp.is_empty());
}

#[test]
fn load_reads_mcp_json() {
    let dir = std::env::temp_dir().join(format!("toolgate-mcp-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("claude_desktop_config.json");
    std::fs::write(&path, CURSOR).unwrap();
    let loaded = ToolsConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(loaded.version, CONFIG_VERSION);
    assert_eq!(loaded.tools.mcp.len(), 3);
    assert!(loaded.tools.local.is_empty() && loaded.tools.openapi.is_empty());
    // The skipped `linear` server and `autoApprove` (see `cursor`).
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert_eq!(loaded.source, CURSOR);
    assert_eq!(
        loaded.locate("/mcpServers/postgres/command"),
        Location::new(13, 18)
    );
}

/// Found by the `mcp_json` fuzz target: a tool filter that is not a glob (`[` opens a range
/// that never closes) was read, then the tools.yaml `toolgate import-mcp` wrote from it did not
/// load. The reader now applies the tools.yaml rules, and says where.
#[test]
fn tool_filter_that_is_not_a_glob_is_an_error_at_its_line() {
    let text = r#"{"mcpServers": {
  "fs": {
    "command": "npx",
    "url": "https://ignored.example",
    "includeTools": ["read_*", "get[*"],
    "excludeTools": ["delete"]
  }
}}"#;
    let path = Path::new("/work/project/.vscode/mcp.json");
    let Err(ConfigError::Invalid(diagnostics)) = parse_mcp_json(text, path) else {
        panic!("a filter that is not a glob was accepted");
    };
    let all = DisplayAll(&diagnostics).to_string();
    assert_eq!(diagnostics.len(), 1, "{all}");
    assert!(
        all.contains("mcp.json:5:32")
            && all.contains("server `fs`: `get[*` is not a valid name or glob"),
        "{all}"
    );
}
