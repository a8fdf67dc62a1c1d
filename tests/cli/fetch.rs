//! `fetch` against a real local HTTP server (`python3 -m http.server`).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

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
