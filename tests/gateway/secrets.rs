//! No configured secret leaves `toolgate serve`. Every kind of credential tools.yaml can hold (an
//! MCP server's env value, literal and `${ENV}`; an HTTP MCP server's header and bearer token;
//! an OpenAPI source's API keys, bearer token and basic credentials; an A2A agent's credentials;
//! a gateway API key) is echoed back by real upstreams every way they can (a result, an error
//! result, a JSON-RPC error, a log notification, a stderr line cut at 1,000 characters, an HTTP
//! error body, the headers they were sent), and none of it shows in the gateway's log (stdout and
//! stderr, at `RUST_LOG=trace` and at the default level), a REST or MCP response body or
//! `/metrics`: not as is, JSON-escaped, Debug-escaped, percent-encoded or base64'd, and no part of
//! it either. Every canary holds a `"` and a `\`.
//!
//! Also: a stdio server writing an endless stderr line does not grow the gateway's memory.

use serde_json::{Value, json};

use crate::harness::{Served, peers, request, request_full, serve_with_env, tools_yaml};

/// One configured secret: its value, and where it is configured.
struct Canary {
    value: &'static str,
    what: &'static str,
}

/// Each canary is `cnry-<label>-"Q\<hex>`: the label and the hex are unique, so that any part
/// of a canary that leaks (a cut, an encoding the list of forms missed) is found as well.
const ENV_LITERAL: Canary = Canary {
    value: r#"cnry-envlit-"Q\8f1d3a6b"#,
    what: "a stdio server's literal env value (API_TOKEN)",
};
const ENV_INTERP: Canary = Canary {
    value: r#"cnry-envint-"Q\2b7c9e4f0a11"#,
    what: "a stdio server's env value from ${CANARY_ENV} (under a plain name, MODE_X)",
};
const MCP_HEADER: Canary = Canary {
    value: r#"cnry-mcphdr-"Q\5e0a7b3c"#,
    what: "an HTTP MCP server's literal X-Api-Key header",
};
const MCP_BEARER: Canary = Canary {
    value: r#"cnry-mcpbrr-"Q\c4d19e2a"#,
    what: "an HTTP MCP server's bearer_token from ${CANARY_MCP_BEARER}",
};
const OAS_QUERY_KEY: Canary = Canary {
    value: r#"cnry-oasqky-"Q\91ab0c7d"#,
    what: "an OpenAPI source's literal api_key in the query",
};
const OAS_HEADER_KEY: Canary = Canary {
    value: r#"cnry-oashky-"Q\3f6e2d18"#,
    what: "an OpenAPI source's header apiKey scheme from ${CANARY_OAS_HKEY}",
};
const OAS_BEARER: Canary = Canary {
    value: r#"cnry-oasbrr-"Q\7a0f4c9e"#,
    what: "an OpenAPI source's bearer token from ${CANARY_OAS_BEARER}",
};
const OAS_USER: Canary = Canary {
    value: r#"cnry-oasusr-"Q\0d8b5a61"#,
    what: "an OpenAPI source's literal basic username",
};
const OAS_PASSWORD: Canary = Canary {
    value: r#"cnry-oaspwd-"Q\e61c3b07"#,
    what: "an OpenAPI source's basic password from ${CANARY_OAS_PASSWORD}",
};
const A2A_TOKEN: Canary = Canary {
    value: r#"cnry-a2abrr-"Q\48d2f0b9"#,
    what: "an A2A agent's Authorization: Bearer ${CANARY_A2A}",
};
const A2A_KEY: Canary = Canary {
    value: r#"cnry-a2akey-"Q\b3e97c05"#,
    what: "an A2A agent's literal X-Agent-Key header",
};
const GW_KEY: Canary = Canary {
    value: r#"cnry-gwkey-"Q\6c05e8d3a2"#,
    what: "the gateway's API key from ${CANARY_GW}",
};

const ALL: [&Canary; 12] = [
    &ENV_LITERAL,
    &ENV_INTERP,
    &MCP_HEADER,
    &MCP_BEARER,
    &OAS_QUERY_KEY,
    &OAS_HEADER_KEY,
    &OAS_BEARER,
    &OAS_USER,
    &OAS_PASSWORD,
    &A2A_TOKEN,
    &A2A_KEY,
    &GW_KEY,
];

/// The texts a leaked `secret` may show as: as is, JSON-escaped (once, and twice: JSON in a
/// JSON string), Debug-escaped, Python-repr-escaped, percent-encoded (upper- and lower-case
/// hex), and its label and hex on their own (any part of it).
fn forms(secret: &str) -> Vec<String> {
    let unquote = |s: String| s[1..s.len() - 1].to_string();
    let json = unquote(serde_json::to_string(secret).unwrap());
    let json2 = unquote(serde_json::to_string(&json).unwrap());
    let debug = unquote(format!("{secret:?}"));
    // Python's repr (a Python server's `%r` log line): `\` doubled, `"` as is.
    let repr = secret.replace('\\', "\\\\");
    let pct: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let pct_lower: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02x}"),
        })
        .collect();
    let (label, hex) = secret
        .split_once(r#"-"Q\"#)
        .expect("a canary is cnry-<label>-\"Q\\<hex>");
    vec![
        secret.to_string(),
        json,
        json2,
        debug,
        repr,
        pct,
        pct_lower,
        label.to_string(),
        hex.to_string(),
    ]
}

/// Panics naming the canary, its form and the output when `text` holds any form of any canary
/// (or the base64 of the basic credentials).
fn assert_no_canary(where_: &str, text: &str) {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", OAS_USER.value, OAS_PASSWORD.value));
    for canary in ALL {
        for form in forms(canary.value) {
            if let Some(at) = text.find(&form) {
                let from = text[..at]
                    .char_indices()
                    .rev()
                    .nth(300)
                    .map_or(0, |(i, _)| i);
                let to = (at + form.len() + 300).min(text.len());
                let to = (to..=text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                panic!(
                    "{where_} shows {} as `{form}`:\n…{}…",
                    canary.what,
                    &text[from..to]
                );
            }
        }
    }
    assert!(
        !text.contains(&basic),
        "{where_} shows the base64 of the basic credentials"
    );
}

/// The environment the gateway gets: every `${ENV}` canary.
fn canary_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("CANARY_ENV", ENV_INTERP.value),
        ("CANARY_MCP_BEARER", MCP_BEARER.value),
        ("CANARY_OAS_HKEY", OAS_HEADER_KEY.value),
        ("CANARY_OAS_BEARER", OAS_BEARER.value),
        ("CANARY_OAS_PASSWORD", OAS_PASSWORD.value),
        ("CANARY_A2A", A2A_TOKEN.value),
        ("CANARY_GW", GW_KEY.value),
    ]
}

/// The upstreams of the canary run: the OpenAPI echo API, the HTTP MCP server, the A2A agent.
struct Upstreams {
    api: peers::PeerProcess,
    mcp: peers::PeerProcess,
    agent: peers::PeerProcess,
}

fn upstreams() -> Upstreams {
    let api = peers::spawn_http_peer_retry(
        peers::python3(),
        &[peers::echo_http_py().to_str().unwrap(), "{port}"],
        &[],
    );
    let mcp = peers::spawn_http_peer_retry(
        peers::venv_python(),
        &[peers::leaky_server_py().to_str().unwrap(), "http", "{port}"],
        &[],
    );
    let agent = peers::a2a_echo("v1", &["--token", A2A_TOKEN.value, "--no-streaming"]);
    Upstreams { api, mcp, agent }
}

/// A stdio `mcp` entry for leaky_server.py, as a YAML list item (JSON flow style, so that the
/// canaries need no YAML escaping).
fn leaky_stdio_entry(id: &str, env: Value) -> String {
    let names: Vec<&str> = env
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut args = vec![
        peers::leaky_server_py().display().to_string(),
        "stdio".to_string(),
    ];
    args.extend(names.iter().map(|n| n.to_string()));
    let entry = json!({
        "id": id,
        "stdio": {
            "command": peers::venv_python().display().to_string(),
            "args": args,
            "env": env,
        },
    });
    format!("    - {entry}\n")
}

/// The tools.yaml of the canary run: every kind of secret, each upstream.
fn canary_yaml(up: &Upstreams) -> String {
    let mut mcp = leaky_stdio_entry(
        "leaky",
        json!({"API_TOKEN": ENV_LITERAL.value, "MODE_X": "${CANARY_ENV}", "LEAKY_ANNOUNCE": "1"}),
    );
    let http = json!({
        "id": "leakyhttp",
        "http": {
            "url": up.mcp.url("/mcp"),
            "headers": {"X-Api-Key": MCP_HEADER.value},
            "bearer_token": "${CANARY_MCP_BEARER}",
        },
    });
    mcp.push_str(&format!("    - {http}\n"));
    let spec = up.api.url("/openapi.json");
    let openapi = [
        json!({"id": "oas_qkey", "auth": {"api_key": {"in": "query", "name": "api_key", "value": OAS_QUERY_KEY.value}}}),
        json!({"id": "oas_hkey", "auth": {"schemes": {"hkey": "${CANARY_OAS_HKEY}"}}}),
        json!({"id": "oas_bearer", "auth": {"bearer": "${CANARY_OAS_BEARER}"}}),
        json!({"id": "oas_basic", "auth": {"basic": {"username": OAS_USER.value, "password": "${CANARY_OAS_PASSWORD}"}}}),
    ];
    let mut sources = format!("  mcp:\n{mcp}  openapi:\n");
    for mut entry in openapi {
        entry["spec"] = json!(spec);
        entry["load"] = json!("runtime");
        entry["allow_private"] = json!(true);
        sources.push_str(&format!("    - {entry}\n"));
    }
    let agent = json!({
        "id": "agent",
        "url": up.agent.url(""),
        "streaming": false,
        "auth": {"headers": {
            "Authorization": "Bearer ${CANARY_A2A}",
            "X-Agent-Key": A2A_KEY.value,
        }},
    });
    sources.push_str(&format!("  a2a:\n    - {agent}\n"));
    let gateway = json!({"api_keys": [{"name": "ops", "key": "${CANARY_GW}"}]});
    tools_yaml("", &format!("gateway: {gateway}\n")).replacen(
        "\ntools:\n",
        &format!("\ntools:\n{sources}"),
        1,
    )
}

/// Every response the run got, to be searched for canaries.
#[derive(Default)]
struct Seen {
    outputs: Vec<(String, String)>,
}

impl Seen {
    fn add(&mut self, what: impl Into<String>, text: impl Into<String>) -> String {
        let text = text.into();
        self.outputs.push((what.into(), text.clone()));
        text
    }
}

fn auth() -> String {
    format!("Bearer {}", GW_KEY.value)
}

/// `POST /tools/{tool}/call` with `args` and the gateway's API key; (status, body).
fn call(served: &Served, seen: &mut Seen, tool: &str, args: Value) -> (u16, String) {
    let path = format!("/tools/{tool}/call");
    let auth = auth();
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    let (status, text) = request(
        served.port(),
        "POST",
        &path,
        &headers,
        Some(&args.to_string()),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    (status, seen.add(format!("POST {path}"), text))
}

/// One JSON-RPC request to the gateway's `/mcp` (streamable HTTP); (status, head, body).
fn mcp_post(served: &Served, session: Option<&str>, message: &Value) -> (u16, String, String) {
    let auth = auth();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    request_full(
        served.port(),
        "POST",
        "/mcp",
        &headers,
        Some(&message.to_string()),
    )
    .unwrap_or_else(|e| panic!("POST /mcp: {e}\n{}", served.log()))
}

/// An MCP session with the gateway over raw HTTP (toolgate's own client would redact what it
/// gets itself, hiding what the gateway sent); the tools/call answers, as sent.
fn mcp_calls(served: &Served, seen: &mut Seen, calls: &[(&str, Value)]) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "canary", "version": "1"}}});
    let (status, head, body) = mcp_post(served, None, &init);
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id in\n{head}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    mcp_post(served, Some(&session), &initialized);
    for (i, (tool, args)) in calls.iter().enumerate() {
        let message = json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let (status, head, body) = mcp_post(served, Some(&session), &message);
        assert_eq!(status, 200, "{head}\n{body}");
        assert!(body.contains("[redacted]"), "MCP tools/call {tool}: {body}");
        seen.add(format!("MCP tools/call {tool}"), format!("{head}\n{body}"));
    }
}

/// Acceptance: every kind of configured secret, echoed back every way, is in no output of the
/// gateway at `RUST_LOG=trace`.
#[test]
fn no_configured_secret_leaves_the_gateway_in_any_form() {
    let up = upstreams();
    let mut env = canary_env();
    env.push(("RUST_LOG", "trace"));
    let served = serve_with_env(&canary_yaml(&up), &[], &env);
    let mut seen = Seen::default();
    let log = || served.log();

    // Results that echo what the upstream knows: redacted, but there.
    for tool in [
        "leaky.reveal",
        "leakyhttp.reveal",
        "oas_qkey.echo",
        "oas_hkey.echo",
        "oas_bearer.echo",
        "oas_basic.echo",
    ] {
        let (status, body) = call(&served, &mut seen, tool, json!({}));
        assert_eq!(status, 200, "{tool}: {body}\n{}", log());
        assert!(body.contains("[redacted]"), "{tool} echoes: {body}");
    }
    let (status, body) = call(&served, &mut seen, "agent.echo", json!({"text": "headers"}));
    assert_eq!(status, 200, "agent.echo headers: {body}\n{}", log());
    assert!(body.contains("[redacted]"), "the agent echoes: {body}");

    // Errors that quote it: an error result, a JSON-RPC error, an HTTP error body, a failed task.
    for tool in [
        "leaky.fail",
        "leaky.rpc_error",
        "leakyhttp.fail",
        "leakyhttp.rpc_error",
        "oas_qkey.fail",
        "oas_hkey.fail",
        "oas_bearer.fail",
        "oas_basic.fail",
    ] {
        let (status, body) = call(&served, &mut seen, tool, json!({}));
        assert_ne!(status, 0, "{tool}");
        assert!(body.contains("[redacted]"), "{tool} quotes it: {body}");
    }
    let (_, body) = call(
        &served,
        &mut seen,
        "agent.echo",
        json!({"text": "fail-headers"}),
    );
    assert!(
        body.contains("[redacted]"),
        "the failed task quotes it: {body}"
    );

    // Log notifications (logged by the gateway at WARN).
    for tool in ["leaky.log", "leakyhttp.log"] {
        let (status, body) = call(&served, &mut seen, tool, json!({}));
        assert_eq!(status, 200, "{tool}: {body}");
    }

    // A stderr line with the secret across its 1,000th character, then the process exits: the
    // error quotes the server's last stderr lines.
    let (status, body) = call(&served, &mut seen, "leaky.spill", json!({"name": "MODE_X"}));
    assert_ne!(status, 200, "{body}");
    assert!(
        body.contains("its last stderr lines") && body.contains("pppppppp"),
        "the error quotes the stderr lines: {body}"
    );

    // A caller's argument that happens to be the gateway's key is not echoed back either.
    let (status, body) = call(
        &served,
        &mut seen,
        "jq",
        json!({"filter": ".", "input": {"k": GW_KEY.value}}),
    );
    assert_eq!(status, 200, "{body}");

    // The same over MCP (streamable HTTP, raw).
    mcp_calls(
        &served,
        &mut seen,
        &[
            ("leaky__reveal", json!({})),
            ("leakyhttp__fail", json!({})),
            ("oas_basic__echo", json!({})),
            ("agent__echo", json!({"text": "fail-headers"})),
        ],
    );

    // Sources, tools, metrics.
    let auth = auth();
    for path in ["/sources", "/tools", "/metrics"] {
        let (status, text) = harness_get(&served, path, &auth);
        assert_eq!(status, 200, "GET {path}: {text}");
        seen.add(format!("GET {path}"), text);
    }

    for (what, text) in &seen.outputs {
        assert_no_canary(what, text);
    }
    let log = served.log();
    assert!(
        log.lines().count() > 100,
        "RUST_LOG=trace logs the run:\n{log}"
    );
    assert!(
        log.contains("[redacted]"),
        "the log shows where secrets were:\n{log}"
    );
    assert_no_canary("the gateway's log (stdout and stderr)", &log);
}

fn harness_get(served: &Served, path: &str, auth: &str) -> (u16, String) {
    crate::harness::get(served.port(), path, &[("Authorization", auth)])
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Finding 4: a secret configured as a literal (an imported `mcpServers` entry's `env`, a
/// literal header), quoted by the upstream in a JSON-RPC error, is in no line of the log at the
/// default level (WARN shows the error) and in no response.
#[test]
fn a_literal_secret_quoted_by_an_upstream_is_in_no_warning() {
    let up = upstreams();
    let mut mcp = leaky_stdio_entry("leaky", json!({"API_TOKEN": ENV_LITERAL.value}));
    let http = json!({"id": "leakyhttp", "http": {
        "url": up.mcp.url("/mcp"), "headers": {"X-Api-Key": MCP_HEADER.value}}});
    mcp.push_str(&format!("    - {http}\n"));
    // The binary's default filter (what an operator runs with): the harness's, `warn,rmcp=off`.
    let served = serve_with_env(&tools_yaml(&mcp, ""), &[], &[]);
    let mut seen = Seen::default();
    for tool in ["leaky.rpc_error", "leakyhttp.rpc_error"] {
        let (_, body) = call(&served, &mut seen, tool, json!({}));
        assert!(body.contains("refused: "), "{tool}: {body}");
    }
    let log = served.log();
    assert!(
        log.contains("JSON-RPC error"),
        "the WARN line is there:\n{log}"
    );
    for (what, text) in &seen.outputs {
        assert_no_canary(what, text);
    }
    assert_no_canary("the gateway's log", &log);
}

/// Finding 5: a stdio server's stderr line is redacted before it is cut to 1,000 characters: a
/// secret across the cut leaves no part of itself in the error quoting the line.
#[test]
fn a_secret_across_the_stderr_cut_leaves_no_part_in_the_error() {
    let served = serve_with_env(
        &tools_yaml(
            &leaky_stdio_entry("leaky", json!({"MODE_X": "${CANARY_ENV}"})),
            "",
        ),
        &[],
        &[("CANARY_ENV", ENV_INTERP.value)],
    );
    let mut seen = Seen::default();
    let (status, body) = call(&served, &mut seen, "leaky.spill", json!({"name": "MODE_X"}));
    assert_eq!(status, 502, "{body}\n{}", served.log());
    assert!(
        body.contains("its last stderr lines") && body.contains("pppppppp"),
        "{body}"
    );
    assert_no_canary("the error", &body);
    assert_no_canary("the gateway's log", &served.log());
}

/// The peak resident memory of process `pid`, in bytes (`VmHWM` of /proc/PID/status).
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024
}

/// Finding 8: a stdio server writing a 256 MiB stderr line (no newline until its end) does not
/// grow the gateway: the line buffer keeps a bounded tail. The server keeps working.
#[test]
fn an_endless_stderr_line_does_not_grow_the_gateway() {
    let entry = format!(
        "    - id: noisy\n      stdio:\n        command: {}\n        args: [\"{}\", stderr]\n",
        peers::python3().display(),
        peers::fault_server_py().display()
    );
    let served = serve_with_env(&tools_yaml(&entry, ""), &[], &[]);
    let mut seen = Seen::default();
    let (status, body) = call(&served, &mut seen, "noisy.echo", json!({"message": "warm"}));
    assert_eq!(status, 200, "{body}");
    let before = peak_rss(served.process.pid());
    let (status, body) = call(&served, &mut seen, "noisy.flood", json!({"mb": 256}));
    assert_eq!(status, 200, "{body}\n{}", served.log());
    let (status, body) = call(
        &served,
        &mut seen,
        "noisy.echo",
        json!({"message": "after"}),
    );
    assert_eq!(status, 200, "{body}");
    let after = peak_rss(served.process.pid());
    assert!(
        after < before + 64 * 1024 * 1024,
        "the gateway's peak memory grew from {} MiB to {} MiB",
        before >> 20,
        after >> 20
    );
}
