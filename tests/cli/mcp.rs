//! MCP servers through the binary: a config with the reference servers over all three
//! transports, `list` / `call` / `discover`, an `mcpServers` JSON file as the config,
//! `import-mcp`, `probe`, and the MCP conformance suite's client scenarios.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::*;

#[path = "../../runtime/tests/support/peers.rs"]
pub(crate) mod peers;

fn node() -> String {
    peers::node().display().to_string()
}

fn js(path: PathBuf) -> String {
    path.display().to_string()
}

/// A tools.yaml in a temp folder: server-everything over stdio, streamable HTTP and legacy SSE,
/// server-filesystem and server-memory over stdio, and one server that cannot start.
struct Setup {
    dir: tempfile::TempDir,
    _http: peers::PeerProcess,
    _sse: peers::PeerProcess,
}

impl Setup {
    fn new() -> Self {
        let http = peers::everything_http("streamableHttp");
        let sse = peers::everything_http("sse");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.txt"), "a note").unwrap();
        let yaml = format!(
            r#"version: 1
tools:
  mcp:
    - id: everything
      stdio: {{command: {node}, args: [{everything}, stdio]}}
    - id: web
      http: {{url: "{http}"}}
    - id: legacy
      sse: {{url: "{sse}"}}
    - id: fs
      stdio: {{command: {node}, args: [{fs}, "{dir}"]}}
    - id: memory
      stdio:
        command: {node}
        args: [{memory}]
        env: {{MEMORY_FILE_PATH: "{dir}/memory.jsonl"}}
      deny: ["delete_*"]
    - id: broken
      stdio: {{command: /nonexistent/server}}
"#,
            node = node(),
            everything = js(peers::everything_js()),
            fs = js(peers::filesystem_js()),
            memory = js(peers::memory_js()),
            http = http.url("/mcp"),
            sse = sse.url("/sse"),
            dir = dir.path().display(),
        );
        std::fs::write(dir.path().join("tools.yaml"), yaml).unwrap();
        Self {
            dir,
            _http: http,
            _sse: sse,
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        toolgate_in(self.dir.path(), args, None)
    }
}

#[test]
fn list_shows_every_server_s_tools_and_the_failed_one() {
    let setup = Setup::new();
    let run = setup.run(&["list"]);
    run.code(0);
    for name in [
        "everything.echo",
        "web.echo",
        "legacy.echo",
        "everything.get-tiny-image",
        "fs.read_text_file",
        "memory.read_graph",
    ] {
        assert!(
            run.stdout.lines().any(|l| l.starts_with(name)),
            "{name} missing\n{}",
            run.context()
        );
    }
    assert!(
        !run.stdout.contains("memory.delete_entities"),
        "denied tools are not listed\n{}",
        run.context()
    );
    assert!(
        run.stdout
            .contains("source `broken` (mcp): failed: cannot start MCP server `broken`"),
        "{}",
        run.context()
    );
}

#[test]
fn calls_through_each_transport_keep_every_part() {
    let setup = Setup::new();
    let out = setup
        .run(&["call", "everything.get-tiny-image", "--json"])
        .code(0)
        .json();
    let types: Vec<&str> = out["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "image", "text"]);
    for prefix in ["web", "legacy"] {
        let run = setup.run(&["call", &format!("{prefix}.get-sum"), r#"{"a": 2, "b": 3}"#]);
        assert!(run.code(0).stdout.contains('5'), "{}", run.context());
    }
    let out = setup
        .run(&[
            "call",
            "web__get-structured-content",
            r#"{"location": "New York"}"#,
            "--json",
        ])
        .code(0)
        .json();
    assert!(out["structuredContent"]["temperature"].is_number(), "{out}");
    // Progress reports reach stderr as they come.
    let run = setup.run(&[
        "call",
        "everything.trigger-long-running-operation",
        r#"{"duration": 1, "steps": 3}"#,
    ]);
    run.code(0)
        .stderr_has(&["progress: 1/3", "progress: 2/3", "progress: 3/3"]);
    assert!(run.stdout.contains("completed"), "{}", run.context());
    // Bad arguments are refused before they are sent (exit 1, invalid_arguments).
    let run = setup.run(&["call", "everything.get-sum", r#"{"a": "two"}"#]);
    run.code(1).stderr_has(&["invalid_arguments", "/a"]);
}

#[test]
fn discover_reports_each_source() {
    let setup = Setup::new();
    let run = setup.run(&["discover", "--json"]);
    run.code(1); // `broken` failed
    let statuses: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let state = |id: &str| {
        statuses
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id}\n{}", run.context()))
            .clone()
    };
    for id in ["everything", "web", "legacy", "fs", "memory"] {
        let s = state(id);
        assert_eq!(s["state"], "ready", "{s}");
        assert!(s["tools"].as_u64().unwrap() > 0, "{s}");
        assert!(s["discovery_ms"].is_number(), "{s}");
    }
    assert!(state("memory")["hidden"].as_u64().unwrap() >= 1);
    let broken = state("broken");
    assert_eq!(broken["state"], "failed");
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/server")
    );
}

fn claude_desktop_json(dir: &Path) -> String {
    json!({
        "mcpServers": {
            "everything": {"command": node(), "args": [js(peers::everything_js()), "stdio"]},
            "my files": {"command": node(), "args": [js(peers::filesystem_js()), dir.display().to_string()], "alwaysAllow": ["read_file"]},
            "off": {"command": "nothing", "disabled": true}
        }
    })
    .to_string()
}

#[test]
fn an_mcp_servers_json_file_works_as_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude_desktop_config.json");
    std::fs::write(&file, claude_desktop_json(dir.path())).unwrap();
    let config = file.to_str().unwrap();
    let run = toolgate_in(dir.path(), &["--config", config, "list"], None);
    run.code(0);
    assert!(run.stdout.contains("everything.echo"), "{}", run.context());
    assert!(
        run.stdout.contains("my_files.list_directory"),
        "{}",
        run.context()
    );
    run.stderr_has(&["my_files", "alwaysAllow"]);
    let run = toolgate_in(
        dir.path(),
        &[
            "--config",
            config,
            "call",
            "everything.echo",
            r#"{"message": "from json"}"#,
        ],
        None,
    );
    assert_eq!(run.code(0).stdout.trim(), "Echo: from json");

    // import-mcp turns it into a tools.yaml that gives the same toolset.
    let run = toolgate_in(dir.path(), &["import-mcp", config], None);
    run.code(0)
        .stderr_has(&["server `off`: skipped: `disabled` is true"]);
    assert!(run.stdout.contains("id: my_files"), "{}", run.context());
    std::fs::write(dir.path().join("tools.yaml"), &run.stdout).unwrap();
    let run = toolgate_in(dir.path(), &["list"], None);
    assert!(
        run.code(0).stdout.contains("my_files.list_directory"),
        "{}",
        run.context()
    );
}

#[test]
fn probe_lists_and_calls_a_server_without_a_config() {
    let everything = js(peers::everything_js());
    let run = toolgate(&["probe", "--", &node(), &everything, "stdio"]);
    assert!(
        run.code(0).stdout.contains("server.echo"),
        "{}",
        run.context()
    );
    let run = toolgate(&[
        "probe",
        "--call",
        "echo",
        "--args",
        r#"{"message": "probed"}"#,
        "--",
        &node(),
        &everything,
        "stdio",
    ]);
    assert_eq!(
        run.code(0).stdout.trim(),
        "Echo: probed",
        "{}",
        run.context()
    );

    // --json: who the server is, the protocol version spoken, and every tool's descriptor.
    let run = toolgate(&["probe", "--json", "--", &node(), &everything, "stdio"]);
    let out = run.json();
    assert!(
        out["server"].as_str().is_some_and(|s| !s.is_empty()),
        "{out}"
    );
    assert!(
        out["protocol"]
            .as_str()
            .is_some_and(|p| p.starts_with("mcp 20")),
        "{out}"
    );
    assert!(
        out["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "server.echo" && t["input_schema"].is_object()),
        "{out}"
    );
}

/// A remote tool named without its server, or in the exported form with a typo, is suggested
/// under its full name.
#[test]
fn an_unknown_name_suggests_the_remote_tool_meant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.yaml"),
        format!(
            "version: 1\ntools:\n  mcp:\n    - id: everything\n      stdio: {{command: {node}, args: [{everything}, stdio]}}\n",
            node = node(),
            everything = js(peers::everything_js()),
        ),
    )
    .unwrap();
    for name in ["echo", "everything__ecoh", "everything.ecoh"] {
        toolgate_in(dir.path(), &["describe", name], None)
            .code(4)
            .stderr_has(&["did you mean `everything.echo`?"]);
    }
}

/// With `policy.pinning.approve_new: false` a new remote tool is withheld; the hint to approve
/// it keeps the `--config` in use (the approvals file is that config's).
#[test]
fn the_approve_hint_keeps_the_config_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pinned.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\ntools:\n  mcp:\n    - id: everything\n      stdio: {{command: {node}, args: [{everything}, stdio]}}\npolicy:\n  pinning: {{file: approvals.json, approve_new: false}}\n",
            node = node(),
            everything = js(peers::everything_js()),
        ),
    )
    .unwrap();
    let config = path.display().to_string();
    let hint = format!("`toolgate --config {config} approve everything.echo`");
    toolgate(&["--config", &config, "list"])
        .code(0)
        .stderr_has(&["withheld:", &hint]);
    toolgate(&[
        "--config",
        &config,
        "call",
        "everything.echo",
        r#"{"message": "x"}"#,
    ])
    .code(1)
    .stderr_has(&[&hint]);
}

/// The MCP conformance suite's client scenarios, with `toolgate probe` as the client. The
/// suite's servers listen on every interface, so they run in a network namespace of their own
/// (`unshare -rn`), where only loopback exists.
#[test]
fn conformance_client_scenarios_pass() {
    let toolgate = BIN;
    // The suite runs the command through a shell: the arguments go in a file, unquoted.
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args.json");
    std::fs::write(&args, r#"{"a": 1, "b": 2}"#).unwrap();
    let args = args.display();
    for (scenario, command) in [
        ("initialize", format!("{toolgate} probe")),
        (
            "tools_call",
            format!("{toolgate} probe --call add_numbers --args @{args}"),
        ),
        (
            "sse-retry",
            format!("{toolgate} probe --call test_reconnection"),
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let script = format!(
            "ip link set lo up && exec {node22} {conformance} client --command '{command}' --scenario {scenario} -o {out}",
            node22 = peers::node22().display(),
            conformance = peers::conformance_js().display(),
            out = out.path().display(),
        );
        let run = run_with_deadline(
            std::process::Command::new("unshare").args(["-rn", "sh", "-c", &script]),
        );
        assert!(
            run.stderr.contains("OVERALL: PASSED") || run.stdout.contains("OVERALL: PASSED"),
            "conformance scenario {scenario} failed\n{}",
            run.context()
        );
    }
}

/// A stdio server sees only a safe part of toolgate's environment plus what its config gives
/// it, and a secret given to it never shows in an error, even when the server echoes it.
#[test]
fn stdio_servers_get_a_small_environment_and_secrets_stay_out_of_errors() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"version: 1
tools:
  mcp:
    - id: echoer
      stdio:
        command: sh
        args: ["-c", "echo inherited=$TOOLGATE_TEST_AMBIENT given=$GIVEN >&2; exec {python} {server} die"]
        env: {{GIVEN: "${{TOOLGATE_TEST_GIVEN}}"}}
"#,
        python = peers::python3().display(),
        server = peers::fault_server_py().display(),
    );
    std::fs::write(dir.path().join("tools.yaml"), yaml).unwrap();
    let run = run_with_deadline(
        std::process::Command::new(BIN)
            .args(["call", "echoer.die"])
            .current_dir(dir.path())
            .env("TOOLGATE_TEST_AMBIENT", "ambient-value-not-for-servers")
            .env("TOOLGATE_TEST_GIVEN", "given-secret-value")
            .env("RUST_LOG", "info"),
    );
    run.code(1);
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert!(
        all.contains("inherited= given=[redacted]"),
        "{}",
        run.context()
    );
    assert!(
        !all.contains("ambient-value-not-for-servers"),
        "{}",
        run.context()
    );
    assert!(!all.contains("given-secret-value"), "{}", run.context());
}
