//! The stdio MCP servers `toolgate serve` starts end with it, whatever they are doing: a server
//! still in its handshake when the gateway is told to stop (SIGTERM) is killed together with
//! the processes it started, instead of being left behind without a parent.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{self, BIN, peers};

/// Whether `pid` is a process that still runs (a zombie waiting to be reaped counts as ended).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses: `123 (sleep) S ...`.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// The two pids the mute server writes once started: its own and its child's.
fn wait_for_pids(file: &Path, log: impl Fn() -> String) -> (u32, u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<u32> = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if let [server, child] = pids[..] {
                return (server, child);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the stdio server did not start within 30 s\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the processes when the test ends, so that a failing run leaves nothing behind.
struct KillOnDrop([u32; 2]);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in self.0.iter().filter(|p| running(**p)) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// SIGTERM right after the server started: its session is still starting, so it is in no
/// source set the shutdown closes. Five times, as the window is short (it was left running
/// about one time in four before the fix).
#[test]
fn a_stdio_server_in_its_handshake_ends_with_the_gateway_and_so_do_its_children() {
    for _ in 0..5 {
        sigterm_during_the_handshake();
    }
}

fn sigterm_during_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // A server that never answers `initialize`: it starts a child of its own, writes both pids
    // (atomically, by a rename) and waits; the gateway's handshake with it is still running.
    let script = format!(
        // (`$$` is written `$$$$`: the config reads `$$` as a literal `$`.)
        "sleep 600 & echo $$$$ $! > {0}.tmp && mv {0}.tmp {0}; wait",
        pids.display()
    );
    let entry = format!(
        "    - id: mute\n      connect_timeout_ms: 120000\n      stdio:\n        command: sh\n        args: [\"-c\", {script:?}]\n"
    );
    let config = dir.path().join("tools.yaml");
    std::fs::write(&config, harness::tools_yaml(&entry, "")).unwrap();
    let config = config.display().to_string();
    let mut gateway = peers::spawn_http_peer_retry(
        BIN,
        &["--config", &config, "serve", "--http", "127.0.0.1:{port}"],
        &[("RUST_LOG", "warn,rmcp=off")],
    );
    let (server, child) = wait_for_pids(&pids, || gateway.log());
    let _cleanup = KillOnDrop([server, child]);
    assert!(running(server) && running(child), "{}", gateway.log());

    let status = std::process::Command::new("kill")
        .args(["-TERM", &gateway.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    while gateway.exit_status().is_none() {
        assert!(
            Instant::now() < deadline,
            "toolgate serve did not exit within 15 s of SIGTERM\n{}",
            gateway.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Once the gateway has exited, nothing it started may still run.
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(server) || running(child) {
        assert!(
            Instant::now() < deadline,
            "the stdio server ({server}: {}) or its child ({child}: {}) outlived the gateway\n{}",
            running(server),
            running(child),
            gateway.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
