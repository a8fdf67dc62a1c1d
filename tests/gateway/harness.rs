//! Running `toolgate serve` for one test: a tools.yaml in a temp dir, a free port on 127.0.0.1,
//! ready when `/readyz` answers 200, killed (whole process group) when dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "../../runtime/tests/support/peers.rs"]
pub(crate) mod peers;

pub(crate) use peers::PeerProcess;
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::remote::RemoteSource;
use toolgate::{SourceState, Toolset};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

pub(crate) fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A running `toolgate serve --http`.
pub(crate) struct Served {
    pub(crate) process: PeerProcess,
    /// Holds the tools.yaml (and whatever else the test put there) while the server runs.
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for Served {
    /// SIGTERM first, so that the gateway closes its remote sessions (its stdio servers run in
    /// process groups of their own, which the SIGKILL of the gateway's group does not reach);
    /// the process group is killed afterwards anyway when `process` drops.
    fn drop(&mut self) {
        if self.process.exit_status().is_some() {
            return;
        }
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.process.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.process.exit_status().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Served {
    /// `http://127.0.0.1:PORT{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        self.process.url(path)
    }

    pub(crate) fn port(&self) -> u16 {
        self.process.port()
    }

    pub(crate) fn log(&self) -> String {
        self.process.log()
    }
}

/// The repository's tools.yaml with `extra` appended (YAML text placed at the top level, e.g.
/// a `gateway:` section) and `mcp` (entries of `tools.mcp`, YAML list items indented by 4).
pub(crate) fn tools_yaml(mcp: &str, extra: &str) -> String {
    let base = std::fs::read_to_string(repo_root().join("tools.yaml")).expect("tools.yaml");
    let mut yaml = String::new();
    for line in base.lines() {
        yaml.push_str(line);
        yaml.push('\n');
        if line.trim_end() == "tools:" && !mcp.is_empty() {
            yaml.push_str("  mcp:\n");
            yaml.push_str(mcp);
            if !mcp.ends_with('\n') {
                yaml.push('\n');
            }
        }
    }
    // files.root `.` would be the temp dir: point it at the repository.
    let yaml = yaml.replace(
        "    root: .",
        &format!("    root: {}", repo_root().display()),
    );
    format!("{yaml}\n{extra}\n")
}

/// Starts `toolgate --config <dir>/tools.yaml serve --http 127.0.0.1:PORT` (plus `args`) with
/// `yaml` as the config, and waits until `/readyz` answers 200 (start-up discovery done).
pub(crate) fn serve(yaml: &str, args: &[&str]) -> Served {
    serve_with_env(yaml, args, &[])
}

/// [`serve`] with `env` (name, value) added to the process's environment (e.g. the variable an
/// API key's `${ENV}` names).
pub(crate) fn serve_with_env(yaml: &str, args: &[&str], env: &[(&str, &str)]) -> Served {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("tools.yaml");
    std::fs::write(&config, yaml).expect("write tools.yaml");
    let config = config.display().to_string();
    let mut all = vec!["--config", &config, "serve", "--http", "127.0.0.1:{port}"];
    all.extend_from_slice(args);
    // TOOLGATE_TEST_LOG=debug shows the gateway's own log in a failing test's output.
    let log = std::env::var("TOOLGATE_TEST_LOG").unwrap_or_else(|_| "warn,rmcp=off".into());
    let mut all_env = vec![("RUST_LOG", log.as_str())];
    all_env.extend_from_slice(env);
    let process = peers::spawn_http_peer_retry(BIN, &all, &all_env);
    let served = Served { process, dir };
    wait_ready(&served);
    served
}

fn wait_ready(served: &Served) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok((200, _)) = get(served.port(), "/readyz", &[]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "toolgate serve did not become ready within 60 s\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A plain HTTP/1.1 GET with `headers`; (status, body).
pub(crate) fn get(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(u16, String)> {
    request(port, "GET", path, headers, None)
}

/// A plain HTTP/1.1 request (connection closed after it); (status, body). Chunked bodies are
/// decoded.
pub(crate) fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    request_full(port, method, path, headers, body).map(|(status, _, body)| (status, body))
}

/// [`request`], with the response's head (status line and headers, as received) too:
/// (status, head, body).
pub(crate) fn request_full(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> std::io::Result<(u16, String, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if let Some(b) = body {
        stream.write_all(b.as_bytes())?;
    }
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, head.to_string(), body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// server-everything over stdio, as a tools.yaml `mcp` entry (list item, indented by 4) with
/// `extra` keys (e.g. `prefix: false`).
pub(crate) fn everything_stdio_entry(id: &str, extra: &str) -> String {
    let node = peers::node();
    let js = peers::everything_js();
    let mut entry = format!(
        "    - id: {id}\n      stdio:\n        command: {}\n        args: [\"{}\", stdio]\n",
        node.display(),
        js.display()
    );
    for line in extra.lines() {
        entry.push_str(&format!("      {line}\n"));
    }
    entry
}

/// Where a test's scratch files go.
pub(crate) fn scratch(served: &Served, name: &str) -> PathBuf {
    served.dir.path().join(name)
}

/// toolgate's own MCP client on the gateway's endpoint `path` (`/mcp`, `/mcp/{id}`) sending
/// `headers`, as source `gw` (arguments are not checked here: what the gateway answers is under
/// test), discovered; and its backend, for resources and prompts. Panics (with the gateway's
/// log) unless the source is ready.
pub(crate) async fn mcp_client_at(
    served: &Served,
    path: &str,
    headers: &[(&str, &str)],
) -> (McpBackend, Toolset) {
    let connection = McpConnection::Http {
        url: served.url(path),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        oauth2: None,
    };
    let backend = McpBackend::new("gw", connection, McpOptions::default());
    let tools = Toolset::builder()
        .validate_arguments(false)
        .source(RemoteSource::builder("gw", backend.clone()).build())
        .build()
        .expect("client toolset");
    let statuses = tools.discover(1).await;
    assert_eq!(
        statuses[0].state,
        SourceState::Ready,
        "{statuses:?}\n{}",
        served.log()
    );
    (backend, tools)
}
