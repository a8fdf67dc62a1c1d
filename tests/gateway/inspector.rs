//! `@modelcontextprotocol/inspector-cli`, a real MCP client, lists and calls tools through
//! `toolgate serve` over stdio, streamable HTTP and legacy HTTP+SSE: a built-in tool (`calc`)
//! and a tool of a remote MCP server behind the gateway (server-everything's `echo`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{self, BIN, peers};

fn inspector_build_dir() -> PathBuf {
    peers::require_installed(
        peers::peers_root().join("node_modules/@modelcontextprotocol/inspector-cli/build"),
        "@modelcontextprotocol/inspector-cli",
    )
}

/// Runs inspector-cli with `args` (its working directory must be its build folder: it reads
/// `../package.json` from there) under a deadline; the parsed JSON it prints.
pub(crate) fn inspector(args: &[&str]) -> Value {
    let dir = inspector_build_dir();
    let mut child = Command::new(peers::node())
        .arg("index.js")
        .args(args)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start inspector-cli");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("inspector-cli {args:?} did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector-cli {args:?} failed ({})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("inspector-cli {args:?} printed no JSON ({e})\n{stdout}\n{stderr}")
    })
}

fn config() -> String {
    harness::tools_yaml(&harness::everything_stdio_entry("everything", ""), "")
}

/// Lists and calls through one transport, given as inspector-cli's target arguments: `pre`
/// before the method's options (a URL and `--transport`: `--tool-arg` takes every following
/// word), `post` after them (a server's command line).
fn lists_and_calls(pre: &[&str], post: &[&str], how: &str) {
    let list = inspector(&[pre, &["--method", "tools/list"], post].concat());
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{how}: no tools array: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in [
        "calc",
        "read_file",
        "everything__echo",
        "everything__get-sum",
    ] {
        assert!(
            names.contains(&want),
            "{how}: `{want}` not listed: {names:?}"
        );
    }

    let calc = inspector(
        &[
            pre,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "calc",
                "--tool-arg",
                "expression=2*(3+4)",
            ],
            post,
        ]
        .concat(),
    );
    assert_eq!(calc["structuredContent"]["value"], 14, "{how}: {calc}");
    assert_ne!(calc["isError"], true, "{how}: {calc}");

    let echo = inspector(
        &[
            pre,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "everything__echo",
                "--tool-arg",
                &format!("message=through {how}"),
            ],
            post,
        ]
        .concat(),
    );
    assert_eq!(
        echo["content"][0]["text"],
        format!("Echo: through {how}"),
        "{how}: {echo}"
    );

    let bad = inspector(
        &[
            pre,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "calc",
                "--tool-arg",
                "expression=1/",
            ],
            post,
        ]
        .concat(),
    );
    assert_eq!(
        bad["isError"], true,
        "{how}: a failed call is an isError result: {bad}"
    );
}

#[test]
fn over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("tools.yaml");
    std::fs::write(&config_path, config()).unwrap();
    let config_path = config_path.display().to_string();
    // The server's command line comes last (inspector-cli passes options it does not know on
    // to it); a `--` would make it miss its target.
    lists_and_calls(
        &[],
        &[
            "--transport",
            "stdio",
            BIN,
            "--config",
            &config_path,
            "serve",
            "--stdio",
        ],
        "stdio",
    );
}

#[test]
fn over_streamable_http() {
    let served = harness::serve(&config(), &[]);
    let url = served.url("/mcp");
    lists_and_calls(&[&url, "--transport", "http"], &[], "streamable HTTP");
}

#[test]
fn over_legacy_sse() {
    let served = harness::serve(&config(), &[]);
    let url = served.url("/sse");
    lists_and_calls(&[&url, "--transport", "sse"], &[], "legacy SSE");
}
