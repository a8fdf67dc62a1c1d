//! The `toolgate` binary, run as a user runs it: every subcommand, every built-in tool on real
//! input (a file of this repository, a directory, an expression, a JSON document, a time zone, a
//! page served by a real local HTTP server), the ways to pass ARGS, and the documented exit codes
//! (0 success, 1 tool error, 2 usage, 3 configuration, 4 no such tool).
//!
//! Every command runs with the repository root as its working directory (so `./tools.yaml` is the
//! configuration and `files.root` is the repository), under a deadline, and is checked not to have
//! panicked (`RUST_BACKTRACE=1` is set so a panic would show up as a backtrace on stderr).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use toolgate::{Content, ToolOutput};

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");
/// No command may take longer than this (the slowest is a `fetch` on 127.0.0.1).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

const BUILTINS: [&str; 6] = [
    "fetch",
    "read_file",
    "list_dir",
    "calc",
    "jq",
    "current_time",
];

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

/// What one run of the binary gave.
#[derive(Debug)]
struct Run {
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn context(&self) -> String {
        format!(
            "command: {}\nexit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }

    /// Asserts the exit code and returns `self` for more checks.
    #[track_caller]
    fn code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(expected),
            "unexpected exit code\n{}",
            self.context()
        );
        self
    }

    /// Asserts exit code 0 and an empty stderr; returns stdout.
    #[track_caller]
    fn ok(&self) -> &str {
        self.code(0);
        assert!(
            self.stderr.trim().is_empty(),
            "stderr should be empty on success\n{}",
            self.context()
        );
        &self.stdout
    }

    /// Asserts that stderr contains every one of `needles`.
    #[track_caller]
    fn stderr_has(&self, needles: &[&str]) -> &Self {
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "stderr should contain {n:?}\n{}",
                self.context()
            );
        }
        self
    }

    /// Stdout parsed as JSON.
    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", self.context()))
    }
}

/// Waits for `child` until `deadline`; kills it and returns `None` past the deadline.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Err(e) => panic!("cannot wait for a child process: {e}"),
        }
    }
}

/// Runs `toolgate ARGS` in `dir`, feeding `stdin` if given, under [`COMMAND_TIMEOUT`].
fn toolgate_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let command = format!("toolgate {}", args.join(" "));
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_CONFIG")
        .env("RUST_BACKTRACE", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let input = input.to_owned();
        thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = wait_until(&mut child, Instant::now() + COMMAND_TIMEOUT);
    let run = Run {
        command,
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "timed out after {COMMAND_TIMEOUT:?}\n{}",
        run.context()
    );
    // Errors print a kind and a message, never a Rust panic or backtrace.
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("stack backtrace"),
        "the binary panicked\n{}",
        run.context()
    );
    assert_ne!(
        run.code,
        Some(101),
        "the binary panicked\n{}",
        run.context()
    );
    run
}

fn toolgate(args: &[&str]) -> Run {
    toolgate_in(repo_root(), args, None)
}

/// `toolgate call NAME ARGS` (text output) that must succeed; its stdout parsed as JSON (the
/// built-in tools' structured results are printed as one JSON text part).
#[track_caller]
fn call_ok(name: &str, args: &Value) -> Value {
    let run = toolgate(&["call", name, &args.to_string()]);
    run.ok();
    run.json()
}

// ---------------------------------------------------------------------------------------------
// list, describe, schema, schema-config
// ---------------------------------------------------------------------------------------------

#[test]
fn list_prints_a_table_of_every_builtin() {
    let run = toolgate(&["list"]);
    let out = run.ok();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: BTreeSet<&str> = rows.iter().filter_map(|r| r.first().copied()).collect();
    for b in BUILTINS {
        assert!(names.contains(b), "`{b}` missing from the table\n{out}");
    }
    // name, category, then the first line of the description.
    let calc = rows
        .iter()
        .find(|r| r.first() == Some(&"calc"))
        .expect("a calc row");
    assert_eq!(calc[1], "compute", "{out}");
    assert!(
        calc[2..]
            .join(" ")
            .starts_with("Evaluate an arithmetic expression"),
        "{out}"
    );
    let read_file = rows
        .iter()
        .find(|r| r.first() == Some(&"read_file"))
        .unwrap();
    assert_eq!(read_file[1], "files", "{out}");
}

#[test]
fn list_json_gives_descriptors_with_object_input_schemas() {
    let run = toolgate(&["list", "--json"]);
    run.ok();
    let v = run.json();
    let tools = v.as_array().expect("an array of descriptors");
    let mut names = BTreeSet::new();
    for t in tools {
        let name = t["name"].as_str().expect("a name");
        names.insert(name.to_string());
        let description = t["description"].as_str().unwrap_or("");
        assert!(
            description.len() > 20,
            "`{name}` needs a real description: {t}"
        );
        let schema = &t["input_schema"];
        assert_eq!(schema["type"], "object", "`{name}` input_schema: {schema}");
        assert!(
            schema["properties"].is_object(),
            "`{name}` has no properties: {schema}"
        );
    }
    for b in BUILTINS {
        assert!(
            names.contains(b),
            "`{b}` missing from list --json: {names:?}"
        );
    }
    // The arguments of a tool are in its schema, with descriptions.
    let calc = tools.iter().find(|t| t["name"] == "calc").unwrap();
    assert_eq!(calc["input_schema"]["required"], json!(["expression"]));
    assert!(calc["input_schema"]["properties"]["expression"]["description"].is_string());
}

#[test]
fn list_filters_by_category() {
    let run = toolgate(&["list", "--category", "files"]);
    let out = run.ok();
    let names: BTreeSet<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, BTreeSet::from(["list_dir", "read_file"]), "{out}");

    let run = toolgate(&["list", "--json", "--category", "compute"]);
    run.ok();
    let names: BTreeSet<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["category"], "compute", "{t}");
            t["name"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(names, BTreeSet::from(["calc".into(), "jq".into()]));

    let run = toolgate(&["list", "--json", "--category", "no-such-category"]);
    run.ok();
    assert_eq!(run.json(), json!([]));
}

#[test]
fn describe_shows_description_facts_and_schemas() {
    let run = toolgate(&["describe", "read_file"]);
    let out = run.ok();
    assert_eq!(out.lines().next(), Some("read_file"), "{out}");
    for needle in [
        "Read a UTF-8 text file inside the configured root directory.",
        "source: local",
        "category: files",
        "read_only",
        "input schema:",
        "output schema:",
        "\"path\"",
        "\"max_bytes\"",
    ] {
        assert!(out.contains(needle), "describe lacks {needle:?}\n{out}");
    }
    // The input schema is printed as JSON between its label and the output schema's.
    let input = out
        .split("input schema:")
        .nth(1)
        .and_then(|s| s.split("output schema:").next())
        .unwrap();
    let input: Value = serde_json::from_str(input).expect("the input schema is JSON");
    assert_eq!(input["required"], json!(["path"]));

    toolgate(&["describe", "no_such_tool"])
        .code(4)
        .stderr_has(&["not_found", "no_such_tool"]);
}

#[test]
fn schema_of_one_tool_in_each_dialect() {
    let run = toolgate(&["schema", "calc", "--dialect", "openai"]);
    run.ok();
    let v = run.json();
    assert_eq!(v["type"], "function");
    assert_eq!(v["name"], "calc");
    assert_eq!(v["parameters"]["type"], "object");
    assert!(
        v["parameters"]["properties"]["expression"].is_object(),
        "{v}"
    );
    assert!(v["parameters"].get("$schema").is_none(), "{v}");
    assert!(v.get("inputSchema").is_none() && v.get("input_schema").is_none());

    let run = toolgate(&["schema", "calc", "--dialect", "anthropic"]);
    run.ok();
    let v = run.json();
    assert_eq!(v["name"], "calc");
    assert_eq!(v["input_schema"]["type"], "object");
    assert!(
        v["input_schema"]["properties"]["expression"].is_object(),
        "{v}"
    );
    assert!(v["input_schema"].get("$schema").is_none(), "{v}");
    assert!(
        v.get("type").is_none() && v.get("parameters").is_none(),
        "{v}"
    );

    for args in [
        &["schema", "calc", "--dialect", "mcp"][..],
        &["schema", "calc"][..], // mcp is the default
    ] {
        let run = toolgate(args);
        run.ok();
        let v = run.json();
        assert_eq!(v["name"], "calc");
        assert_eq!(v["inputSchema"]["type"], "object");
        assert_eq!(v["outputSchema"]["type"], "object");
        assert_eq!(v["annotations"]["readOnlyHint"], true, "{v}");
    }

    toolgate(&["schema", "calc", "--dialect", "gemini"]).code(2);
    toolgate(&["schema", "nope"]).code(4);
}

#[test]
fn schema_all_in_each_dialect() {
    for (dialect, schema_key) in [
        ("mcp", "inputSchema"),
        ("openai", "parameters"),
        ("anthropic", "input_schema"),
    ] {
        let run = toolgate(&["schema", "--all", "--dialect", dialect]);
        run.ok();
        let v = run.json();
        let all = v.as_array().expect("an array");
        let names: BTreeSet<&str> = all.iter().filter_map(|t| t["name"].as_str()).collect();
        for b in BUILTINS {
            assert!(names.contains(b), "{dialect}: `{b}` missing: {names:?}");
        }
        for t in all {
            assert_eq!(t[schema_key]["type"], "object", "{dialect}: {t}");
        }
    }
}

#[test]
fn schema_config_prints_the_json_schema_of_tools_yaml() {
    let run = toolgate(&["schema-config"]);
    run.ok();
    let schema = run.json();
    assert!(
        schema["$schema"]
            .as_str()
            .is_some_and(|s| s.contains("json-schema.org")),
        "{schema}"
    );
    jsonschema::meta::validate(&schema).expect("a valid JSON Schema");
    for key in ["version", "tools", "policy", "settings"] {
        assert!(
            schema["properties"][key].is_object(),
            "no `{key}` property in the config schema"
        );
    }
    // It describes real configurations: a JSON twin of a small tools.yaml passes, a typo fails.
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let good = json!({
        "version": 1,
        "tools": {"local": [{"fn": "crate::tools::forecast", "category": "weather"}]},
        "policy": {"defaults": {"timeout_ms": 10000}}
    });
    let errors: Vec<String> = validator
        .iter_errors(&good)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "a valid config is rejected: {errors:?}");
    assert!(!validator.is_valid(&json!({"version": 1, "tols": {}})));
}

#[test]
fn closed_stdout_ends_quietly() {
    // `toolgate list --json | head -1`: the reader goes away; the command must not panic.
    for args in [
        &["schema-config"][..],
        &["list"][..],
        &["describe", "calc"][..],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader); // every write to stdout now fails with EPIPE
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(repo_root())
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolgate starts");
        let mut err = child.stderr.take().unwrap();
        let err = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let status = wait_until(&mut child, Instant::now() + COMMAND_TIMEOUT);
        let stderr = err.join().unwrap_or_default();
        let status = status.unwrap_or_else(|| panic!("toolgate {args:?} hung"));
        assert!(
            !stderr.contains("panicked") && status.code() != Some(101),
            "toolgate {args:?} with a closed stdout: {status}\n{stderr}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// call: every built-in on real input
// ---------------------------------------------------------------------------------------------

#[test]
fn call_read_file_reads_a_file_of_the_repository() {
    let v = call_ok("read_file", &json!({"path": "Cargo.toml"}));
    let expected = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    assert_eq!(v["path"], "Cargo.toml");
    assert_eq!(v["text"].as_str(), Some(expected.as_str()));
    assert_eq!(v["bytes"], json!(expected.len()));

    // A size limit below the file's size refuses (it never cuts silently).
    toolgate(&[
        "call",
        "read_file",
        r#"{"path": "Cargo.toml", "max_bytes": 10}"#,
    ])
    .code(1)
    .stderr_has(&["invalid_arguments", "larger than the limit"]);
}

#[test]
fn call_read_file_errors() {
    for path in ["../../etc/passwd", "/etc/passwd", "src/../../Cargo.toml"] {
        let args = json!({ "path": path }).to_string();
        toolgate(&["call", "read_file", &args])
            .code(1)
            .stderr_has(&["permission_denied"]);
    }
    // A file that does not exist is the tool's `not_found`, exit 1 - not "no such tool" (4).
    toolgate(&["call", "read_file", r#"{"path": "no/such/file.txt"}"#])
        .code(1)
        .stderr_has(&["not_found", "no/such/file.txt"]);
}

#[test]
fn call_list_dir_lists_examples() {
    let v = call_ok("list_dir", &json!({"path": "examples"}));
    assert_eq!(v["path"], "examples");
    let entries = v["entries"].as_array().expect("entries");
    assert!(
        entries.contains(&json!({"kind": "dir", "name": "weather-agent"})),
        "{v}"
    );
    let v = call_ok("list_dir", &json!({"path": "examples/weather-agent"}));
    let names: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "entries are sorted by name");
    for n in ["Cargo.toml", "build.rs", "src", "tools.yaml"] {
        assert!(names.contains(&n), "{n} missing: {names:?}");
    }
}

#[test]
fn call_calc_evaluates_expressions() {
    let v = call_ok("calc", &json!({"expression": "2 * (3 + 4) ^ 2"}));
    assert_eq!(v["expression"], "2 * (3 + 4) ^ 2");
    assert_eq!(v["value"].as_f64(), Some(98.0), "{v}");
    let v = call_ok("calc", &json!({"expression": "6 * 7"}));
    assert_eq!(v["value"], json!(42));
    let v = call_ok("calc", &json!({"expression": "17 % 5 == 2 && pi > 3"}));
    assert_eq!(v["value"], json!(true));
    toolgate(&["call", "calc", r#"{"expression": "1 +"}"#])
        .code(1)
        .stderr_has(&["invalid_arguments"]);
}

#[test]
fn call_jq_runs_a_filter_on_a_json_document() {
    let args = json!({
        "filter": ".[] | select(.age > 30) | .name",
        "input": [{"name": "ada", "age": 36}, {"name": "bob", "age": 25}, {"name": "cy", "age": 41}]
    });
    let v = call_ok("jq", &args);
    assert_eq!(v["results"], json!(["ada", "cy"]));
    assert_eq!(v["truncated"], false);
    let v = call_ok(
        "jq",
        &json!({"filter": "{n: (.items | length), sum: (.items | add)}", "input": {"items": [1, 2, 3]}}),
    );
    assert_eq!(v["results"], json!([{"n": 3, "sum": 6}]));
    toolgate(&["call", "jq", r#"{"filter": ".[", "input": 1}"#])
        .code(1)
        .stderr_has(&["invalid_arguments"]);
}

#[test]
fn call_current_time_in_a_zone() {
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let v = call_ok("current_time", &json!({"time_zone": "Europe/Oslo"}));
    let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    assert_eq!(v["time_zone"], "Europe/Oslo");
    let offset = v["utc_offset"].as_str().expect("utc_offset");
    assert!(
        offset == "+01:00" || offset == "+02:00",
        "Oslo is CET/CEST: {v}"
    );
    let iso = v["iso8601"].as_str().expect("iso8601");
    assert!(iso.ends_with(offset), "{v}");
    let ms = u128::from(v["unix_ms"].as_u64().expect("unix_ms"));
    assert!(
        before.as_millis() <= ms && ms <= after.as_millis(),
        "unix_ms {ms} is not the current time ({before:?}..{after:?})"
    );
    let weekdays = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    assert!(
        weekdays.contains(&v["weekday"].as_str().unwrap_or("")),
        "{v}"
    );

    let v = call_ok("current_time", &json!({}));
    assert_eq!(v["time_zone"], "UTC");
    assert_eq!(v["utc_offset"], "+00:00");

    toolgate(&["call", "current_time", r#"{"time_zone": "Mars/Olympus"}"#])
        .code(1)
        .stderr_has(&["invalid_arguments", "Mars/Olympus"]);
}

/// `python3 -m http.server` on 127.0.0.1, killed when dropped (also when a test panics).
struct HttpServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    /// Serves `files` (name, content) from a fresh temporary folder.
    fn start(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let mut errors = Vec::new();
        // The free port is found by binding port 0; another process could take it before
        // python does, so try a few times.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let mut child = Command::new("python3")
                .args([
                    "-m",
                    "http.server",
                    "--bind",
                    "127.0.0.1",
                    &port.to_string(),
                ])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start `python3 -m http.server` (is python3 installed?)");
            match wait_ready(&mut child, port, Duration::from_secs(20)) {
                Ok(()) => {
                    return HttpServer {
                        child,
                        port,
                        _dir: dir,
                    };
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    errors.push(e);
                }
            }
        }
        panic!("the HTTP server did not start: {errors:?}");
    }
}

/// Until `child` accepts connections on `port`, or the deadline passes, or it exits.
fn wait_ready(child: &mut Child, port: u16, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("python3 -m http.server exited: {status}"));
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("port {port} not accepting after {within:?}"));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tools.yaml in a temp folder that allows `fetch` to reach 127.0.0.1 only.
fn fetch_config() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    std::fs::write(
        &path,
        "version: 1\nsettings:\n  fetch:\n    allow_hosts: [127.0.0.1]\n    timeout_ms: 10000\n",
    )
    .unwrap();
    (dir, path)
}

#[test]
fn call_fetch_against_a_real_local_server() {
    let page = "hello from the toolgate CLI test\nsecond line\n";
    let server = HttpServer::start(&[("hello.txt", page), ("data.json", r#"{"ok": true}"#)]);
    let (_cfg_dir, cfg) = fetch_config();
    let cfg = cfg.to_str().unwrap();

    let url = format!("http://127.0.0.1:{}/hello.txt", server.port);
    let args = json!({ "url": url }).to_string();
    let run = toolgate(&["--config", cfg, "call", "fetch", &args]);
    run.ok();
    let v = run.json();
    assert_eq!(v["status"], 200, "{v}");
    assert_eq!(v["text"], page, "{v}");
    assert_eq!(v["url"], url.as_str());
    assert_eq!(v["bytes"], json!(page.len()));
    assert_eq!(v["truncated"], false);
    assert!(
        v["content_type"]
            .as_str()
            .is_some_and(|c| c.starts_with("text/plain")),
        "{v}"
    );

    // A size limit cuts the body and says so.
    let args = json!({ "url": url, "max_bytes": 5 }).to_string();
    let run = toolgate(&["--config", cfg, "call", "fetch", &args]);
    run.ok();
    let v = run.json();
    assert_eq!(v["text"], "hello");
    assert_eq!(v["truncated"], true);

    // A JSON document comes back as its text.
    let args = json!({ "url": format!("http://127.0.0.1:{}/data.json", server.port) });
    let run = toolgate(&["--config", cfg, "call", "fetch", &args.to_string()]);
    run.ok();
    let text = run.json()["text"].as_str().unwrap().to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"ok": true})
    );

    // A 404 is an upstream error.
    let args = json!({ "url": format!("http://127.0.0.1:{}/missing.txt", server.port) });
    toolgate(&["--config", cfg, "call", "fetch", &args.to_string()])
        .code(1)
        .stderr_has(&["upstream", "404"]);

    // The same server under a name that is not on the allowlist is refused.
    let args = json!({ "url": format!("http://localhost:{}/hello.txt", server.port) });
    toolgate(&["--config", cfg, "call", "fetch", &args.to_string()])
        .code(1)
        .stderr_has(&["permission_denied", "localhost"]);
    drop(server);
}

#[test]
fn call_fetch_outside_the_allowlist_is_denied() {
    // The repository's tools.yaml allows 127.0.0.1, localhost, docs.rs and crates.io only.
    let run = toolgate(&["call", "fetch", r#"{"url": "http://example.com/"}"#]);
    run.code(1)
        .stderr_has(&["permission_denied", "example.com", "allowlist"]);
    assert!(run.stdout.trim().is_empty(), "{}", run.context());
    // With --json the error is printed as JSON on stdout as well.
    let run = toolgate(&[
        "call",
        "fetch",
        r#"{"url": "http://example.com/"}"#,
        "--json",
    ]);
    run.code(1).stderr_has(&["permission_denied"]);
    let v = run.json();
    assert_eq!(v["error"]["kind"], "permission_denied", "{v}");
    assert_eq!(v["error"]["retryable"], false, "{v}");
}

// ---------------------------------------------------------------------------------------------
// ARGS, exit codes, --json, --config, check
// ---------------------------------------------------------------------------------------------

#[test]
fn args_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"expression": "6 * 7"}"#).unwrap();
    let at = format!("@{}", file.display());
    let run = toolgate(&["call", "calc", &at]);
    run.ok();
    assert_eq!(run.json()["value"], 42);

    let run = toolgate_in(
        repo_root(),
        &["call", "calc", "-"],
        Some("{\"expression\": \"100 - 58\"}\n"),
    );
    run.ok();
    assert_eq!(run.json()["value"], 42);

    let missing = format!("@{}", dir.path().join("missing.json").display());
    toolgate(&["call", "calc", &missing])
        .code(2)
        .stderr_has(&["cannot read ARGS", "missing.json"]);
    toolgate_in(repo_root(), &["call", "calc", "-"], Some("not json"))
        .code(2)
        .stderr_has(&["stdin", "not valid JSON"]);
}

#[test]
fn invalid_json_args_is_a_usage_error() {
    toolgate(&["call", "calc", "{expression: 1"])
        .code(2)
        .stderr_has(&["not valid JSON"]);
    toolgate(&["call", "calc", "--no-such-option", "{}"]).code(2);
    toolgate(&["no-such-command"]).code(2);
}

#[test]
fn unknown_tool_exits_4() {
    toolgate(&["call", "no_such_tool", "{}"])
        .code(4)
        .stderr_has(&["not_found", "no_such_tool"]);
}

#[test]
fn bad_arguments_name_the_argument_path() {
    toolgate(&["call", "calc", r#"{"expresion": "1+1"}"#])
        .code(1)
        .stderr_has(&["invalid_arguments", "/expresion", "unknown field"]);
    toolgate(&[
        "call",
        "read_file",
        r#"{"path": "Cargo.toml", "max_bytes": "lots"}"#,
    ])
    .code(1)
    .stderr_has(&["invalid_arguments", "/max_bytes"]);
    toolgate(&["call", "calc", r#"{"expression": 5}"#])
        .code(1)
        .stderr_has(&["invalid_arguments", "/expression"]);
    toolgate(&["call", "calc", "{}"])
        .code(1)
        .stderr_has(&["invalid_arguments", "expression"]);
    toolgate(&["call", "calc", "[1, 2]"])
        .code(1)
        .stderr_has(&["invalid_arguments", "object"]);
}

#[test]
fn call_json_output_is_a_tool_output() {
    let run = toolgate(&["call", "calc", r#"{"expression": "1 + 2"}"#, "--json"]);
    run.ok();
    let raw = run.json();
    assert!(raw["content"].is_array(), "{raw}");
    assert!(raw["structuredContent"].is_object(), "{raw}");
    assert!(raw.get("isError").is_none_or(|e| e == false), "{raw}");
    let out: ToolOutput = serde_json::from_value(raw.clone())
        .unwrap_or_else(|e| panic!("not a ToolOutput: {e}: {raw}"));
    assert!(!out.is_error);
    assert_eq!(
        out.structured,
        Some(json!({"expression": "1 + 2", "value": 3}))
    );
    // The structured result is mirrored as one JSON text part.
    match out.content.as_slice() {
        [Content::Text { text }] => {
            assert_eq!(serde_json::from_str::<Value>(text).ok(), out.structured);
        }
        other => panic!("expected one text part, got {other:?}"),
    }

    // Every built-in is a structured tool.
    for (name, args) in [
        ("read_file", json!({"path": "tools.yaml"})),
        ("list_dir", json!({"path": "."})),
        ("jq", json!({"filter": ".a", "input": {"a": 1}})),
        ("current_time", json!({"time_zone": "UTC"})),
    ] {
        let run = toolgate(&["call", name, &args.to_string(), "--json"]);
        run.ok();
        let out: ToolOutput = serde_json::from_value(run.json()).expect("a ToolOutput");
        assert!(
            out.structured.as_ref().is_some_and(Value::is_object),
            "{name}: {}",
            run.stdout
        );
        assert!(!out.content.is_empty(), "{name}: {}", run.stdout);
    }
}

#[test]
fn invalid_config_exits_3_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.yaml");
    let text = "version: 1\n# a typo below\npolcy:\n  defaults: {}\n";
    std::fs::write(&path, text).unwrap();
    let line = text.lines().position(|l| l.starts_with("polcy")).unwrap() + 1;
    let cfg = path.to_str().unwrap();
    let expected = format!("{cfg}:{line}:1");
    for args in [
        &["--config", cfg, "list"][..],
        &["--config", cfg, "call", "calc", r#"{"expression": "1"}"#][..],
    ] {
        toolgate(args).code(3).stderr_has(&[&expected, "polcy"]);
    }

    // A YAML syntax error is located too.
    let text = "version: 1\ntools:\n  local:\n    - fn: [\n";
    std::fs::write(&path, text).unwrap();
    toolgate(&["--config", cfg, "list"])
        .code(3)
        .stderr_has(&[&format!("{cfg}:4:")]);

    // A missing file.
    let missing = dir.path().join("nope.yaml");
    toolgate(&["--config", missing.to_str().unwrap(), "list"])
        .code(3)
        .stderr_has(&["nope.yaml"]);
}

/// Copies a folder tree (files and folders only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn check_the_repository_toolset_and_a_broken_copy() {
    for args in [&["check"][..], &["check", "tools.yaml"][..]] {
        let run = toolgate(args);
        let out = run.ok();
        let listed = out.lines().filter(|l| l.starts_with("  tool ")).count();
        assert!(
            out.contains(&format!("ok: {listed} local tool(s)")) && listed >= BUILTINS.len(),
            "{}",
            run.context()
        );
        for b in BUILTINS {
            assert!(out.contains(&format!("tool {b} ")), "{}", run.context());
        }
    }

    // A copy of the crate (tools.yaml + src/) whose tools.yaml names a missing function.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("src"), &dir.path().join("src"));
    let original = std::fs::read_to_string(repo_root().join("tools.yaml")).unwrap();
    let good = "fn: crate::builtin::tools::calc\n";
    let bad = "fn: crate::builtin::tools::calk\n";
    assert!(original.contains(good), "the repo's tools.yaml changed");
    let broken = original.replacen(good, bad, 1);
    let path = dir.path().join("tools.yaml");
    std::fs::write(&path, &broken).unwrap();
    let (line, col) = broken
        .lines()
        .enumerate()
        .find_map(|(i, l)| {
            l.find("crate::builtin::tools::calk")
                .map(|c| (i + 1, c + 1))
        })
        .unwrap();
    let expected = format!("{}:{line}:{col}", path.display());
    toolgate(&["check", path.to_str().unwrap()])
        .code(3)
        .stderr_has(&[&expected, "unknown function", "crate::builtin::tools::calc"]);
    // `check` with no file reads ./tools.yaml.
    let run = toolgate_in(dir.path(), &["check"], None);
    run.code(3)
        .stderr_has(&[&format!("tools.yaml:{line}:{col}"), "unknown function"]);
}
