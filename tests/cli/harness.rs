//! Running the binary: a deadline, captured output, no panics.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_toolgate");
/// No command may take longer than this (the slowest is a `fetch` on 127.0.0.1).
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) const BUILTINS: [&str; 6] = [
    "fetch",
    "read_file",
    "list_dir",
    "calc",
    "jq",
    "current_time",
];

pub(crate) fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

/// What one run of the binary gave.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) command: String,
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn context(&self) -> String {
        format!(
            "command: {}\nexit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }

    /// Asserts the exit code and returns `self` for more checks.
    #[track_caller]
    pub(crate) fn code(&self, expected: i32) -> &Self {
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
    pub(crate) fn ok(&self) -> &str {
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
    pub(crate) fn stderr_has(&self, needles: &[&str]) -> &Self {
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
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", self.context()))
    }
}

/// Waits for `child` until `deadline`; kills it and returns `None` past the deadline.
pub(crate) fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
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
pub(crate) fn toolgate_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let command = format!("toolgate {}", args.join(" "));
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_CONFIG")
        .env("RUST_BACKTRACE", "1");
    run_command(command, &mut cmd, stdin)
}

/// Runs any command under [`COMMAND_TIMEOUT`], with captured output (e.g. a peer's tool that
/// runs the binary itself).
pub(crate) fn run_with_deadline(cmd: &mut Command) -> Run {
    let command = format!("{cmd:?}");
    run_command(command, cmd, None)
}

fn run_command(command: String, cmd: &mut Command, stdin: Option<&str>) -> Run {
    let mut child = cmd
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

pub(crate) fn toolgate(args: &[&str]) -> Run {
    toolgate_in(repo_root(), args, None)
}

/// `toolgate call NAME ARGS` (text output) that must succeed; its stdout parsed as JSON (the
/// built-in tools' structured results are printed as one JSON text part).
#[track_caller]
pub(crate) fn call_ok(name: &str, args: &Value) -> Value {
    let run = toolgate(&["call", name, &args.to_string()]);
    run.ok();
    run.json()
}

/// `calc`'s arguments with one it does not take (`precise`).
pub(crate) const CALC_WITH_AN_EXTRA_ARGUMENT: &str = r#"{"expression": "6 * 7", "precise": true}"#;

/// Writes `dir/tools.yaml` whose policy checks `calc` leniently and strips unknown arguments
/// (with a warning); returns its path.
pub(crate) fn lenient_calc_config(dir: &Path) -> String {
    let config = dir.join("tools.yaml");
    std::fs::write(
        &config,
        "version: 1\npolicy:\n  tools:\n    calc: {validation: lenient, extra_arguments: strip}\n",
    )
    .unwrap();
    config.display().to_string()
}
