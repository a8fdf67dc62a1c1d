//! Acceptance point 3, by really running cargo: a copy of `examples/weather-agent` whose
//! tools.yaml names a missing function, or declares two tools with one name, fails `cargo build`
//! with a message that names the tools.yaml path and the line and column of the offending entry;
//! a skill of its `tools.skills` folder with a broken `SKILL.md` fails it at that file's line.
//! A control case checks that the unmodified copy compiles, so the failures are not an artefact
//! of the test setup.
//!
//! Each case is a standalone copy under `<target>/build-failure-tests/<case>/`: its own workspace
//! (the example's manifest is kept as is and gets the root manifest's `[workspace.package]` and
//! `[workspace.dependencies]` tables, with `path` dependencies made absolute, so `x.workspace =
//! true` resolves to the same concrete path/version dependencies), and a copy of the workspace
//! `Cargo.lock`. Every case builds with `--offline` into one shared `CARGO_TARGET_DIR`
//! (`<target>/build-failure-tests/target`), so dependencies are compiled once (the first run takes
//! a few minutes on two cores; later runs seconds).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// A cold build of the dependencies on a slow machine stays well under this.
const CARGO_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// One cargo at a time: they share a target folder (cargo would block on its lock anyway, but
/// then the waiting time would count against the timeout of the waiting case).
static CARGO: Mutex<()> = Mutex::new(());

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/build-failure-tests`, in the target folder this test was built into.
fn work_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")); // <target>/tmp
    tmp.parent().unwrap_or(tmp).join("build-failure-tests")
}

/// The body of the `[name]` table of a TOML file (up to the next table header).
fn toml_table(text: &str, name: &str) -> String {
    let header = format!("[{name}]");
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed == header;
            continue;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(
        !out.trim().is_empty(),
        "the root Cargo.toml has no (or an empty) `{header}` table"
    );
    out
}

/// Rewrites every `path = "rel"` in `deps` to an absolute TOML literal string under `root`.
fn absolute_paths(deps: &str, root: &Path) -> String {
    let mut out = String::new();
    for line in deps.lines() {
        let mut line = line.to_string();
        if let Some(start) = line.find("path = \"") {
            let value_start = start + "path = \"".len();
            let len = line[value_start..]
                .find('"')
                .unwrap_or_else(|| panic!("unterminated path in `{line}`"));
            let rel = &line[value_start..value_start + len];
            let abs = root.join(rel);
            let abs = abs.canonicalize().unwrap_or(abs);
            let abs = abs.to_str().expect("a UTF-8 path");
            assert!(!abs.contains('\''), "cannot quote {abs}");
            line = format!(
                "{}path = '{abs}'{}",
                &line[..start],
                &line[value_start + len + 1..]
            );
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Copies a folder tree (files and folders only), skipping `target`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == "target" {
            continue;
        }
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A fresh standalone copy of the example in `<work>/<case>`; returns its folder.
fn prepare(case: &str) -> PathBuf {
    let dir = work_dir().join(case);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    copy_dir(&repo_root().join("examples/weather-agent"), &dir);
    let root_manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("[workspace]"),
        "the example's manifest already has a [workspace] table"
    );
    let manifest = format!(
        "{manifest}\n\
         # Added by tests/build_failures.rs: a workspace of its own, with the definitions the\n\
         # example inherits from the toolgate workspace (path dependencies made absolute).\n\
         [workspace]\n\n\
         [workspace.package]\n{}\n\
         [workspace.dependencies]\n{}",
        toml_table(&root_manifest, "workspace.package"),
        absolute_paths(
            &toml_table(&root_manifest, "workspace.dependencies"),
            repo_root()
        ),
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

/// What one cargo run gave.
struct CargoRun {
    command: String,
    success: bool,
    stderr: String,
    seconds: f64,
}

impl CargoRun {
    fn context(&self) -> String {
        format!(
            "command: {} ({:.0} s)\n--- cargo's stderr ---\n{}",
            self.command, self.seconds, self.stderr
        )
    }
}

/// `cargo <subcommand> --offline --quiet` in `dir`, into the shared target folder.
fn cargo(dir: &Path, subcommand: &str) -> CargoRun {
    let _one_at_a_time = CARGO
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let command = format!(
        "cargo {subcommand} --offline --quiet (in {})",
        dir.display()
    );
    let started = Instant::now();
    let mut child = Command::new(&cargo)
        .args([subcommand, "--offline", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", work_dir().join("target"))
        .env("CARGO_TERM_COLOR", "never")
        .env("CARGO_INCREMENTAL", "0")
        // Set for this test process by the outer cargo; they must not leak into the inner one.
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
    let mut err = child.stderr.take().unwrap();
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = started + CARGO_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(200)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => panic!("cannot wait for {command}: {e}"),
        }
    };
    let run = CargoRun {
        command,
        success: status.is_some_and(|s| s.success()),
        // After a kill, rustc processes cargo started may hold the pipe a little longer.
        stderr: reader.join().unwrap_or_default(),
        seconds: started.elapsed().as_secs_f64(),
    };
    assert!(
        status.is_some(),
        "timed out after {CARGO_TIMEOUT:?}\n{}",
        run.context()
    );
    eprintln!("{} took {:.1} s", run.command, run.seconds);
    run
}

/// 1-based line and column of the first occurrence of `needle` in `text` at or after line
/// `from_line` (1-based).
fn locate(text: &str, needle: &str, from_line: usize) -> (usize, usize) {
    text.lines()
        .enumerate()
        .skip(from_line - 1)
        .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
        .unwrap_or_else(|| panic!("{needle:?} not in the tools.yaml written:\n{text}"))
}

/// Asserts the build failed and cargo's stderr names `tools.yaml:LINE:COL` of the copy and
/// contains `message`.
fn assert_fails_at(run: &CargoRun, dir: &Path, line: usize, col: usize, message: &str) {
    assert!(
        !run.success,
        "the build should have failed\n{}",
        run.context()
    );
    let yaml = dir.join("tools.yaml");
    let mut accepted = vec![format!("{}:{line}:{col}", yaml.display())];
    if let Ok(real) = yaml.canonicalize() {
        accepted.push(format!("{}:{line}:{col}", real.display()));
    }
    assert!(
        accepted.iter().any(|a| run.stderr.contains(a.as_str())),
        "cargo's stderr should name {}\n{}",
        accepted[0],
        run.context()
    );
    assert!(
        run.stderr.contains(message),
        "cargo's stderr should say {message:?}\n{}",
        run.context()
    );
}

#[test]
fn control_the_unmodified_copy_compiles() {
    let dir = prepare("control");
    let run = cargo(&dir, "check");
    assert!(
        run.success,
        "the unmodified copy of examples/weather-agent must compile, or the failure cases \
         prove nothing\n{}",
        run.context()
    );
}

#[test]
fn unknown_function_fails_the_build_with_the_line() {
    let dir = prepare("unknown-function");
    let yaml = std::fs::read_to_string(dir.join("tools.yaml")).unwrap();
    let good = "- fn: crate::tools::save_note\n";
    assert!(
        yaml.contains(good),
        "the example's tools.yaml changed:\n{yaml}"
    );
    let yaml = yaml.replacen(good, "- fn: crate::tools::send_note\n", 1);
    std::fs::write(dir.join("tools.yaml"), &yaml).unwrap();
    let (line, col) = locate(&yaml, "crate::tools::send_note", 1);

    let run = cargo(&dir, "build");
    assert_fails_at(
        &run,
        &dir,
        line,
        col,
        "unknown function `crate::tools::send_note`",
    );
}

#[test]
fn duplicate_tool_name_fails_the_build_with_the_line() {
    let dir = prepare("duplicate-name");
    let yaml = std::fs::read_to_string(dir.join("tools.yaml")).unwrap();
    // Two entries, one name: `weather`.
    let mut edited = yaml.clone();
    for f in [
        "crate::tools::forecast",
        "crate::tools::convert_temperature",
    ] {
        let entry = format!("    - fn: {f}\n");
        assert!(
            edited.contains(&entry),
            "the example's tools.yaml changed:\n{yaml}"
        );
        edited = edited.replacen(&entry, &format!("{entry}      name: weather\n"), 1);
    }
    std::fs::write(dir.join("tools.yaml"), &edited).unwrap();
    // The second `name: weather` is the offending one.
    let (first, _) = locate(&edited, "name: weather", 1);
    let (line, col) = locate(&edited, "name: weather", first + 1);
    let col = col + "name: ".len();

    let run = cargo(&dir, "build");
    assert_fails_at(&run, &dir, line, col, "duplicate tool name `weather`");
}

/// A crate with only local `#[tool]` functions (the example, which asks for no feature of
/// `toolgate`) pulls in neither the MCP client (rmcp) nor an HTTP client (reqwest): remote
/// sources are the `mcp`, `openapi` and `a2a` features, `fetch` is `builtin`.
#[test]
fn a_crate_of_local_tools_pulls_no_remote_stack() {
    let dir = prepare("dependency-tree");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .current_dir(&dir)
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo tree: {e}"));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tree.contains("toolgate-runtime"),
        "cargo tree failed\n{tree}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for remote in ["rmcp ", "reqwest "] {
        assert!(
            !tree.lines().any(|l| l.starts_with(remote)),
            "`{}` is in the dependency tree of a crate with only local tools:\n{tree}",
            remote.trim()
        );
    }
}

#[test]
fn broken_skill_front_matter_fails_the_build_with_its_line() {
    let dir = prepare("broken-skill");
    let yaml = std::fs::read_to_string(dir.join("tools.yaml")).unwrap();
    assert!(
        yaml.contains("\ntools:\n"),
        "the example's tools.yaml changed:\n{yaml}"
    );
    let yaml = yaml.replacen("\ntools:\n", "\ntools:\n  skills:\n    - dir: skills\n", 1);
    std::fs::write(dir.join("tools.yaml"), &yaml).unwrap();
    // An unknown key on line 4 of the skill's SKILL.md.
    let skill = dir.join("skills/forecast-help");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: forecast-help\ndescription: Explains a forecast.\nauthor: someone\n---\n# Steps\n",
    )
    .unwrap();

    let run = cargo(&dir, "build");
    assert!(
        !run.success,
        "the build should have failed\n{}",
        run.context()
    );
    let file = skill.join("SKILL.md");
    let mut accepted = vec![format!("{}:4:1", file.display())];
    if let Ok(real) = file.canonicalize() {
        accepted.push(format!("{}:4:1", real.display()));
    }
    assert!(
        accepted.iter().any(|a| run.stderr.contains(a.as_str())),
        "cargo's stderr should name {}\n{}",
        accepted[0],
        run.context()
    );
    assert!(run.stderr.contains("author"), "{}", run.context());
}
