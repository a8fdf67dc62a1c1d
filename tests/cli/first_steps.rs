//! An operator's first steps with the binary: `check` of a run-time config kept anywhere,
//! `serve --port` and its start-up summary, a busy address, the log level flags, `list`
//! filters, "did you mean" for a mistyped tool, and the exit codes `--help` and the README
//! state.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::harness::*;

/// A tools.yaml outside any crate (no Cargo.toml beside it) naming the binary's own local tools
/// is checked as a run-time config: ok, where it used to fail on the missing `src/` folder. A
/// local tool the binary lacks is a warning (as `serve` gives), a bad setting an error with its
/// line.
#[test]
fn check_takes_a_run_time_config_kept_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.yaml");
    let config = "version: 1\ntools:\n  local:\n    - fn: crate::builtin::tools::calc\n    - fn: crate::builtin::tools::weather\nsettings:\n  files:\n    root: .\n";
    std::fs::write(&path, config).unwrap();
    let file = path.display().to_string();
    for args in [&["check", &file][..], &["--config", &file, "check"][..]] {
        let run = toolgate(args);
        run.code(0).stderr_has(&[
            "crate::builtin::tools::weather",
            "not compiled into this binary",
            "run-time config of this binary",
        ]);
    }

    // A setting of the wrong type: exit 3, at its line.
    let broken = config.replace("root: .", "root: [1]");
    std::fs::write(&path, broken).unwrap();
    let run = toolgate(&["check", &file]);
    run.code(3).stderr_has(&[&format!("{file}:8:")]);
    assert!(
        !run.stdout.contains("ok:"),
        "an error after an ok line\n{}",
        run.context()
    );
}

/// `toolgate check` of a run-time config applies its overrides of the binary's own tools as
/// `serve` would: an argument the tool lacks, or a new name another tool has, fails at the
/// override's line; an override of an MCP source's tool waits for that source's listing; a
/// policy keyed by a renamed tool's old name is a warning at its line.
#[test]
fn check_of_a_run_time_config_applies_its_overrides_of_the_binarys_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.yaml");
    let file = path.display().to_string();
    let check = |config: &str| {
        std::fs::write(&path, config).unwrap();
        toolgate(&["check", &file])
    };
    let head = "version: 1\ntools:\n  local:\n    - fn: crate::builtin::tools::calc\n";

    let run = check(&format!(
        "{head}  overrides:\n    calc:\n      arguments: {{nope: {{value: 1}}}}\n"
    ));
    run.code(3).stderr_has(&[&format!("{file}:7:"), "nope"]);

    let run = check(&format!("{head}  overrides:\n    calc:\n      name: jq\n"));
    run.code(3).stderr_has(&[&format!("{file}:7:"), "jq"]);

    // An MCP source's tool is overridden when the source lists it: nothing to check here.
    let run = check(
        "version: 1\ntools:\n  mcp:\n    - {id: gh, stdio: {command: gh-mcp}}\n  overrides:\n    gh.get_repo: {name: get_repo}\n",
    );
    run.code(0);

    let run = check(&format!(
        "{head}  overrides:\n    calc: {{name: compute}}\npolicy:\n  tools:\n    calc: {{timeout_ms: 100}}\n"
    ));
    run.code(0);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains(&format!("{file}:9:")) && said.contains("renames to `compute`"),
        "{}",
        run.context()
    );
}

/// A running `toolgate serve`, its stderr read line by line; killed when dropped.
struct Served {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Served {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(repo_root())
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolgate serve starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first stderr line containing `needle`, within the command deadline.
    fn line_with(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no stderr line with `{needle}` from toolgate serve; it printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}

impl Served {
    /// The address the start-up line says it listens on (`127.0.0.1:PORT`).
    fn address(&mut self) -> String {
        let listening = self.line_with("toolgate serve: http://");
        listening
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in `{listening}`"))
            .to_string()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --port 0` takes a free port on 127.0.0.1, names it, and says how many tools from how
/// many sources it serves once discovery is done. A second gateway on that port is refused
/// with exit code 6 (not 1, which means a tool failed) and a hint.
#[test]
fn serve_on_a_port_summarises_its_start_and_a_busy_port_is_its_own_exit_code() {
    let mut served = Served::start(&["serve", "--port", "0"]);
    let addr = served.address();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_ne!(addr, "127.0.0.1:0");
    let ready = served.line_with("ready:");
    assert!(
        ready.contains(&format!("{} tool(s) from 1 source(s)", BUILTINS.len())),
        "{ready}"
    );

    let port = addr.rsplit(':').next().unwrap();
    let run = toolgate(&["serve", "--port", port]);
    run.code(6)
        .stderr_has(&[&format!("cannot listen on {addr}"), "--port"]);

    // --port and --http name the same thing twice.
    toolgate(&["serve", "--port", "1", "--http", "127.0.0.1:2"]).code(2);
}

/// A `lazy` source is not contacted at start-up: the ready line counts it as not contacted yet,
/// and `/sources` shows it `pending` with `lazy: true` (its command, which does not exist, was
/// never started: it would be `failed` otherwise).
#[test]
fn a_lazy_source_shows_as_not_contacted_yet() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    std::fs::write(
        &config,
        "version: 1\ntools:\n  mcp:\n    - id: later\n      stdio: {command: /nonexistent/server}\n      lazy: true\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let mut served = Served::start(&["--config", &config, "serve", "--port", "0"]);
    let addr = served.address();
    let ready = served.line_with("ready:");
    assert!(
        ready.contains("from 2 source(s) (1 not contacted yet)"),
        "{ready}"
    );

    let answer = http_get(&addr, "/sources");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let sources: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("/sources is not JSON ({e}): {answer}"));
    let later = sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "later")
        .unwrap_or_else(|| panic!("{sources}"));
    assert_eq!(later["state"], "pending", "{sources}");
    assert_eq!(later["lazy"], true, "{sources}");
    let local = &sources["sources"][0];
    assert!(local.get("lazy").is_none(), "{sources}");
}

/// One HTTP/1.1 GET on loopback, the whole answer as text.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(COMMAND_TIMEOUT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// `--log-level` and `-v` set what stderr shows when `RUST_LOG` is not set: `error` hides the
/// warning a stripped argument gives by default, `-v` keeps it.
#[test]
fn log_level_and_verbose_set_the_log_without_rust_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = lenient_calc_config(dir.path());
    let args = CALC_WITH_AN_EXTRA_ARGUMENT;
    let warning = "unknown argument stripped before the call";
    let run = |flags: &[&str]| {
        let mut all = vec!["--config", config.as_str()];
        all.extend_from_slice(flags);
        all.extend_from_slice(&["call", "calc", args]);
        toolgate(&all)
    };
    run(&[]).code(0).stderr_has(&[warning]);
    let quiet = run(&["--log-level", "error"]);
    assert!(
        !quiet.code(0).stderr.contains(warning),
        "{}",
        quiet.context()
    );
    run(&["-v"]).code(0).stderr_has(&[warning]);
    run(&["--log-level", "loud"]).code(2);
    run(&["-v", "--log-level", "info"]).code(2);
}

/// `list --source` and `--tag` narrow the listing; within one flag any value matches.
#[test]
fn list_filters_by_source_and_tag() {
    let all = toolgate(&["list"]);
    let count = all.ok().lines().count();
    assert_eq!(count, BUILTINS.len(), "{}", all.context());
    let local = toolgate(&["list", "--source", "local"]);
    assert_eq!(local.ok().lines().count(), count, "{}", local.context());
    let none = toolgate(&["list", "--source", "nowhere"]);
    assert_eq!(none.ok().trim(), "", "{}", none.context());

    // A tag from the descriptors themselves: the tools that carry it, and only those.
    let descriptors = toolgate(&["list", "--json"]).json();
    let tagged = |tag: &str| -> Vec<String> {
        descriptors
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t == tag))
            })
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect()
    };
    let tag = descriptors
        .as_array()
        .unwrap()
        .iter()
        .find_map(|d| d["tags"].as_array()?.first()?.as_str().map(str::to_string))
        .expect("a built-in tool carries a tag");
    let run = toolgate(&["list", "--tag", &tag]);
    let listed: Vec<String> = run
        .ok()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(listed, tagged(&tag), "{}", run.context());
    assert!(listed.len() < count, "{}", run.context());
    let run = toolgate(&["list", "--tag", "no-such-tag"]);
    assert_eq!(run.ok().trim(), "", "{}", run.context());
}

/// A mistyped tool name is exit code 4 with the closest name the command line may call.
#[test]
fn an_unknown_tool_name_suggests_the_closest_one() {
    for args in [
        &["call", "calk", r#"{"expression": "1"}"#][..],
        &["describe", "calk"][..],
        &["schema", "calk"][..],
    ] {
        toolgate(args)
            .code(4)
            .stderr_has(&["no tool named `calk`", "did you mean `calc`?"]);
    }
    let run = toolgate(&["call", "zzzzzzzz"]);
    run.code(4).stderr_has(&["no tool named `zzzzzzzz`"]);
    assert!(!run.stderr.contains("did you mean"), "{}", run.context());
}

/// The exit codes `--help` lists are the README's, line for line, and include the busy-address
/// code.
#[test]
fn the_readme_lists_the_exit_codes_help_gives() {
    let help = toolgate(&["--help"]);
    let help = help.ok();
    let codes = help
        .split("Exit codes:\n")
        .nth(1)
        .expect("--help lists the exit codes");
    assert!(codes.contains("6  toolgate serve cannot start"), "{help}");
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block = format!("Exit codes:\n{}", codes.trim_end());
    assert!(
        readme.contains(&block),
        "README.md does not hold the exit codes as `toolgate --help` prints them:\n{block}"
    );
}

/// `init` writes a commented tools.yaml that `check` passes and `list` runs on; an existing file
/// is kept unless `--force`.
#[test]
fn init_writes_a_config_that_checks_and_keeps_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    toolgate_in(dir.path(), &["init"], None).code(0);
    let path = dir.path().join("tools.yaml");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.contains("# mcp:") || written.contains("  # mcp:"),
        "{written}"
    );
    toolgate_in(dir.path(), &["check"], None).code(0);
    let listed = toolgate_in(dir.path(), &["list"], None);
    assert_eq!(
        listed.ok().lines().count(),
        BUILTINS.len(),
        "{}",
        listed.context()
    );

    std::fs::write(&path, "version: 1\n# mine\n").unwrap();
    toolgate_in(dir.path(), &["init"], None)
        .code(2)
        .stderr_has(&["exists", "--force"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "version: 1\n# mine\n"
    );
    toolgate_in(dir.path(), &["init", "--force"], None).code(0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
}

/// `install claude-desktop` merges its entry into the client's file: the other servers and keys
/// stay, a second install replaces its own entry rather than adding one, and a file that is
/// not JSON is left as it was. The entry names this binary and the config by absolute paths.
#[test]
fn install_merges_the_entry_into_the_client_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &file,
        r#"{"theme": "dark", "mcpServers": {"other": {"command": "other-server"}}}"#,
    )
    .unwrap();
    let config = dir.path().join("gw.yaml");
    std::fs::write(&config, "version: 1\n").unwrap();
    let (file_arg, config_arg) = (file.display().to_string(), config.display().to_string());
    let install = || {
        toolgate_in(
            dir.path(),
            &[
                "--config",
                "gw.yaml",
                "install",
                "claude-desktop",
                "--file",
                &file_arg,
            ],
            None,
        )
    };
    install().code(0);
    install().code(0).ok();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["theme"], "dark", "{written}");
    assert_eq!(written["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(
        written["mcpServers"].as_object().unwrap().len(),
        2,
        "{written}"
    );
    let entry = &written["mcpServers"]["toolgate"];
    let bin = std::fs::canonicalize(BIN).unwrap().display().to_string();
    assert_eq!(entry["command"], bin.as_str(), "{written}");
    let canonical = std::fs::canonicalize(&config_arg)
        .unwrap()
        .display()
        .to_string();
    assert_eq!(
        entry["args"],
        serde_json::json!(["--config", canonical, "serve", "--stdio"]),
        "{written}"
    );

    // Its permissions stay: a 0600 file is not made readable by others.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    install().code(0);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "install changed the file's mode to {mode:o}");

    std::fs::write(&file, "{not json").unwrap();
    install()
        .code(3)
        .stderr_has(&["not JSON", "nothing written"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{not json");
}

/// The entry `install claude-desktop --print` gives works as a desktop client uses it: the
/// Python MCP SDK's stdio client starts the command with its arguments in an empty folder,
/// lists the tools and calls `calc` through the gateway.
#[test]
fn the_printed_claude_desktop_entry_serves_the_python_sdk_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    toolgate_in(dir.path(), &["init"], None).code(0);
    let run = toolgate_in(dir.path(), &["install", "claude-desktop", "--print"], None);
    let printed = run.json();
    assert!(
        printed["mcpServers"]["toolgate"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().is_some_and(|a| a.ends_with("tools.yaml"))),
        "the local tools.yaml is passed on: {printed}"
    );
    let file = dir.path().join("claude_desktop_config.json");
    std::fs::write(&file, printed.to_string()).unwrap();
    let run = run_with_deadline(
        Command::new(crate::mcp::peers::venv_python())
            .arg(crate::mcp::peers::test_peers_dir().join("py_desktop_client.py"))
            .arg(&file)
            .arg("toolgate"),
    );
    // The gateway's start-up lines go to stderr, which a desktop client logs.
    let out = run.code(0).stdout.clone();
    let line: serde_json::Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("not one JSON line ({e}): {}", run.context()));
    for b in BUILTINS {
        assert!(
            line["tools"].as_array().unwrap().iter().any(|t| t == b),
            "{line}"
        );
    }
    assert_eq!(line["calc"]["value"], 42, "{line}");
}

/// Every `toolgate openapi inspect FILE` the README shows names a file of the repository, and
/// runs.
#[test]
fn the_readme_s_openapi_inspect_example_runs() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut seen = 0;
    for (at, _) in readme.match_indices("toolgate openapi inspect ") {
        let rest = &readme[at + "toolgate openapi inspect ".len()..];
        let file: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '`')
            .collect();
        assert!(
            repo_root().join(&file).is_file(),
            "the README's `toolgate openapi inspect {file}` names no file of the repository"
        );
        toolgate(&["openapi", "inspect", &file]).code(0);
        seen += 1;
    }
    assert!(
        seen > 0,
        "the README shows no `toolgate openapi inspect` example"
    );
}
