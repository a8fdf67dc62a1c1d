//! `toolgate serve --stdio` driven with raw JSON-RPC lines, as a client process would: framing
//! (server side), protocol-version negotiation, calls and failed calls
//!, and the end of the session (stdin closed, SIGTERM).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{self, BIN};
use crate::mcp_errors::logged;

/// How long any one answer may take.
const ANSWER_BOUND: Duration = Duration::from_secs(30);

/// A running `toolgate --config … serve --stdio`, its stdout read line by line by a thread.
/// Dropping it kills the process.
pub(crate) struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every stdout line so far.
    seen: Vec<String>,
    _dir: tempfile::TempDir,
}

impl StdioServer {
    /// Starts the server on the repository's tools.yaml with `extra` appended; its log (at
    /// `RUST_LOG=debug`, to show that nothing of it reaches stdout) goes to a file.
    pub(crate) fn start(extra: &str) -> Self {
        Self::start_with("", extra)
    }

    /// [`start`](Self::start) with the MCP server entries `mcp` (YAML lines under `mcp:`).
    pub(crate) fn start_with(mcp: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("tools.yaml");
        std::fs::write(&config, harness::tools_yaml(mcp, extra)).unwrap();
        let log = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .args(["serve", "--stdio"])
            .env("RUST_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start toolgate serve --stdio");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            _dir: dir,
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// Writes `bytes` as they are (no newline added).
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `message` as one line.
    fn send(&mut self, message: &Value) {
        self.write(format!("{message}\n").as_bytes());
    }

    /// The next stdout line, raw.
    fn next_line(&mut self) -> String {
        let line = self.lines.recv_timeout(ANSWER_BOUND).unwrap_or_else(|e| {
            panic!(
                "no stdout line within {ANSWER_BOUND:?} ({e})\n{}",
                self.log()
            )
        });
        self.seen.push(line.clone());
        line
    }

    /// The next message that is not a notification.
    pub(crate) fn answer(&mut self) -> Value {
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Sends `initialize` for `version` (and `notifications/initialized`); the result.
    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1"}}}),
        );
        let answer = self.answer();
        assert_eq!(answer["id"], "init", "{answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer["result"].clone()
    }

    /// Closes stdin and waits (bounded) for the process to exit; its exit status and the time
    /// it took.
    fn close_stdin_and_wait(&mut self, bound: Duration) -> (std::process::ExitStatus, Duration) {
        drop(self.stdin.take());
        self.wait(bound)
    }

    fn wait(&mut self, bound: Duration) -> (std::process::ExitStatus, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, start.elapsed());
            }
            assert!(
                start.elapsed() < bound,
                "toolgate serve --stdio still running {bound:?} later\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The rest of stdout (after the process exited), every line checked to be one JSON-RPC
    /// message, and all lines seen so far checked likewise.
    fn rest_of_stdout(&mut self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line.clone());
            rest.push(line);
        }
        for line in &self.seen {
            let message: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
        }
        rest.iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// Junk on stdin (server side) and failed calls: bad lines are answered and the session goes on; calls work and a
/// failed call is an `isError` result; stdout carries nothing but JSON-RPC lines.
#[test]
fn bad_lines_are_answered_and_the_session_goes_on() {
    let mut server = StdioServer::start("");

    server.write(b"not json\n");
    assert_eq!(
        server.next_line(),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
    );

    // A notification before `initialize` ends rmcp's handshake; the session goes on.
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // A BOM, and the initialize request split across writes.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stdio-test", "version": "1"}}})
    .to_string();
    let (head, tail) = init.split_at(init.len() / 2);
    server.write(b"\xEF\xBB\xBF");
    server.write(head.as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    server.write(format!("{tail}\n").as_bytes());
    let answer = server.answer();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-06-18",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "toolgate",
        "{answer}"
    );

    // Blank lines are skipped; several messages in one write (one with CRLF) are all read.
    let batch = format!(
        "\n   \n{}\r\n{}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        call(3, "calc", json!({"expression": "2+3"})),
    );
    server.write(batch.as_bytes());
    let mut answers = [server.answer(), server.answer()];
    answers.sort_by_key(|a| a["id"].as_u64());
    let names: Vec<&str> = answers[0]["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", answers[0]))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"calc") && names.contains(&"read_file"),
        "{names:?}"
    );
    assert_eq!(
        answers[1]["result"]["structuredContent"]["value"], 5,
        "{}",
        answers[1]
    );
    assert_ne!(answers[1]["result"]["isError"], true, "{}", answers[1]);

    // JSON that is no JSON-RPC message: -32600 with the id when there is one; a request whose
    // params do not fit its method: -32602 (not rmcp's "method not found").
    let cases = [
        (json!({"jsonrpc": "2.0", "id": 4}), json!(4), -32600),
        (
            json!({"jsonrpc": "1.0", "id": "five", "method": "ping"}),
            json!("five"),
            -32600,
        ),
        (
            json!([{"jsonrpc": "2.0", "id": 6, "method": "ping"}]),
            Value::Null,
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}),
            json!(7),
            -32602,
        ),
    ];
    for (message, id, code) in cases {
        server.send(&message);
        let answer = server.answer();
        assert_eq!(answer["id"], id, "{message} -> {answer}");
        assert_eq!(answer["error"]["code"], code, "{message} -> {answer}");
    }

    // Failures are results with isError, not JSON-RPC errors.
    server.send(&call(8, "calc", json!({"expression": "1/"})));
    server.send(&call(9, "no_such_tool", json!({})));
    let mut failed = [server.answer(), server.answer()];
    failed.sort_by_key(|a| a["id"].as_u64());
    for answer in &failed {
        assert!(answer.get("error").is_none(), "{answer}");
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(
            answer["result"]["content"][0]["text"].is_string(),
            "{answer}"
        );
    }

    // Still alive after all that.
    server.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}));
    assert_eq!(
        server.answer(),
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );

    let (status, _) = server.close_stdin_and_wait(Duration::from_secs(10));
    assert!(status.success(), "{status}\n{}", server.log());
    assert!(server.rest_of_stdout().is_empty());
    assert!(
        server.log().contains("DEBUG") || server.log().contains("WARN"),
        "the log went to stderr: {}",
        server.log()
    );
}

/// A line over the 64 MiB frame cap is answered (for the id it starts with) and skipped, not
/// buffered whole: the process stays far below the line's size.
#[test]
fn an_oversized_line_is_answered_and_skipped_without_being_buffered() {
    const LINE_BYTES: usize = 160 << 20;
    let mut server = StdioServer::start("");
    server.initialize("2025-06-18");
    let head = r#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"1+1","pad":""#;
    let tail = "\"}}}\n";
    let mut line = Vec::with_capacity(LINE_BYTES);
    line.extend_from_slice(head.as_bytes());
    line.resize(LINE_BYTES - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    server.write(&line);
    drop(line);
    let answer = server.answer();
    assert_eq!(answer["id"], 77, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit"),
        "{answer}"
    );
    let peak = peak_rss_mib(server.child.id());
    assert!(peak < 140, "peak RSS {peak} MiB for a 160 MiB line");

    server.send(&call(78, "calc", json!({"expression": "6*7"})));
    let answer = server.answer();
    assert_eq!(
        answer["result"]["structuredContent"]["value"], 42,
        "{answer}"
    );
}

/// The process's peak resident set (VmHWM), in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let mut status = String::new();
    std::fs::File::open(format!("/proc/{pid}/status"))
        .and_then(|mut f| f.read_to_string(&mut status))
        .expect("read /proc/PID/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"));
    kib / 1024
}

/// Protocol versions (server side): a supported version is echoed; an unknown one gets our newest.
#[test]
fn the_clients_protocol_version_is_echoed_when_supported() {
    for version in ["2025-06-18", "2024-11-05"] {
        let mut server = StdioServer::start("");
        let result = server.initialize(version);
        assert_eq!(result["protocolVersion"], version, "{result}");
        assert!(result["capabilities"]["tools"].is_object(), "{result}");
    }
    let mut server = StdioServer::start("");
    let result = server.initialize("2023-01-01");
    let newest = result["protocolVersion"].as_str().unwrap_or_default();
    assert!(newest >= "2025-06-18", "{result}");
}

/// A client that sends its requests and closes stdin (`printf … | toolgate serve --stdio`)
/// still gets every answer; then the process exits 0, promptly.
#[test]
fn stdin_closed_answers_what_was_read_then_exits() {
    let mut server = StdioServer::start("");
    let requests = format!(
        "{}\n{}\n{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2, "calc", json!({"expression": "10*10"})),
        // The last line has no newline: it is read too.
        call(3, "calc", json!({"expression": "1+2"}))
            .to_string()
            .trim_end(),
    );
    server.write(requests.trim_end().as_bytes());
    let (status, took) = server.close_stdin_and_wait(Duration::from_secs(10));
    assert!(status.success(), "{status}\n{}", server.log());
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    let mut answers: Vec<Value> = server
        .rest_of_stdout()
        .into_iter()
        .filter(|m| m.get("id").is_some())
        .collect();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(answers.len(), 3, "{answers:?}\n{}", server.log());
    assert_eq!(
        answers[1]["result"]["structuredContent"]["value"], 100,
        "{answers:?}"
    );
    assert_eq!(
        answers[2]["result"]["structuredContent"]["value"], 3,
        "{answers:?}"
    );

    // An idle session: EOF ends it at once.
    let mut server = StdioServer::start("");
    server.initialize("2025-06-18");
    let (status, took) = server.close_stdin_and_wait(Duration::from_secs(10));
    assert!(status.success(), "{status}\n{}", server.log());
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
}

/// SIGTERM while stdin is still open: the session ends and the process exits 0 within the
/// grace period.
#[test]
fn sigterm_ends_the_session() {
    let mut server = StdioServer::start("gateway: {shutdown_grace_ms: 3000}");
    server.initialize("2025-06-18");
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let (status, took) = server.wait(Duration::from_secs(10));
    assert!(status.success(), "{status}\n{}", server.log());
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    server.rest_of_stdout();
}

/// Started where there is no tools.yaml (as a desktop client may start it, in `/`), the
/// binary shares no directory: it says so on stderr, and `read_file` refuses even a file next
/// to it (the compiled-in tools.yaml's `files.root: .` meant that file's folder, not the
/// working directory).
#[test]
fn without_a_tools_yaml_no_directory_is_shared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.txt"), "not for models").unwrap();
    let log = dir.path().join("stderr.log");
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio"])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start toolgate serve --stdio");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut send = |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let answer = |id: u64| loop {
        let line = lines.recv_timeout(ANSWER_BOUND).expect("an answer");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (id, tool, path) in [(2, "read_file", "secret.txt"), (3, "list_dir", ".")] {
        send(call(id, tool, json!({"path": path})));
        let result = answer(id)["result"].clone();
        assert_eq!(result["isError"], true, "{tool}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("file access is off"), "{tool}: {result}");
        assert!(!text.contains("not for models"), "{tool}: {result}");
        assert_eq!(
            result["_meta"]["toolgate/error"]["kind"], "permission_denied",
            "{tool}: {result}"
        );
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        stderr.contains("read_file and list_dir are off"),
        "no start-up line about the shared directory: {stderr}"
    );
}

/// With the repository's tools.yaml (`files.root: .`, relative to that file), the start-up
/// line names the directory served.
#[test]
fn the_start_up_line_names_the_directory_served() {
    let mut server = StdioServer::start("");
    server.initialize("2025-06-18");
    let (_, _) = server.close_stdin_and_wait(Duration::from_secs(30));
    let root = std::fs::canonicalize(harness::repo_root()).unwrap();
    let log = server.log();
    assert!(
        log.contains(&format!("read_file and list_dir serve {}", root.display())),
        "{log}"
    );
}

/// A client that cancels a call with a reason: the MCP server behind the gateway is cancelled
/// with the client's words, not the gateway's.
#[test]
fn a_clients_reason_for_cancelling_reaches_the_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("behind.jsonl");
    let entry = crate::mcp_http::fault_entry(
        "faulty",
        "hang",
        &[("FAULT_LOG", &log.display().to_string())],
    );
    let mut server = StdioServer::start_with(&entry, "");
    server.initialize("2025-06-18");
    server.send(&call(7, "faulty__hang", json!({})));
    // The call reached the server behind; now the client gives up on it.
    logged(&log, "hanging");
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user pressed stop"}}),
    );
    let cancelled = logged(&log, "notifications/cancelled");
    assert_eq!(
        cancelled["params"]["reason"],
        "the user pressed stop",
        "{cancelled}\n{}",
        server.log()
    );
}
