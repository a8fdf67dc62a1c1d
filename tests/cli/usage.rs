//! ARGS, exit codes, `--config`, `check`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::{Content, ToolOutput};

use crate::harness::*;

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
        .stderr_has(&[
            "invalid_arguments",
            "unknown argument(s) 'expresion' for tool calc; allowed: expression",
            "/expression: required but missing",
        ]);
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
    toolgate(&["call", "calc", "{}"])
        .code(1)
        .stderr_has(&["invalid_arguments", "/expression"]);
    // ARGS that is JSON but neither an object nor a string is bad usage (exit 2), as `--help`
    // says.
    for not_an_object in ["[1, 2]", "42"] {
        toolgate(&["call", "calc", not_an_object])
            .code(2)
            .stderr_has(&["must be a JSON object"]);
    }
    // A JSON string is taken as the arguments sent as one string (some models do this), so a
    // string that does not hold JSON is the tool's refusal (exit 1), the same as on every front.
    toolgate(&["call", "calc", "\"x\""]).code(1).stderr_has(&[
        "invalid_arguments",
        "calc",
        "not valid JSON",
    ]);
    let ran = toolgate(&["call", "calc", r#""{\"expression\": \"2+3\"}""#]).json();
    assert_eq!(ran["value"], 5, "{ran}");
}

#[test]
fn a_timed_out_blocking_tool_does_not_hold_the_exit() {
    // jq runs on the blocking pool and cannot be interrupted; the CLI must still exit when the
    // timeout fires, not when the filter gives up on its own (2 s later).
    let started = Instant::now();
    toolgate(&[
        "call",
        "--timeout-ms",
        "200",
        "jq",
        r#"{"filter": "until(false; .)", "input": 1}"#,
    ])
    .code(1)
    .stderr_has(&["timeout", "200 ms"]);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
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

    // A copy of the crate (Cargo.toml + tools.yaml + src/) whose tools.yaml names a missing
    // function.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("src"), &dir.path().join("src"));
    std::fs::copy(
        repo_root().join("Cargo.toml"),
        dir.path().join("Cargo.toml"),
    )
    .unwrap();
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

/// `policy:` in a `--config` sets how arguments are checked; a stripped key is a warning on
/// stderr, and `--json` shows every change in `_meta`.
#[test]
fn config_policy_lenient_and_strip_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = lenient_calc_config(dir.path());
    let args = CALC_WITH_AN_EXTRA_ARGUMENT;
    // Without the policy: refused.
    toolgate(&["call", "calc", args])
        .code(1)
        .stderr_has(&["unknown argument(s) 'precise' for tool calc; allowed: expression"]);
    let run = toolgate(&["--config", &config, "call", "calc", args, "--json"]);
    run.code(0).stderr_has(&[
        "WARN",
        "unknown argument stripped before the call",
        "pointer=/precise",
    ]);
    let out = run.json();
    assert_eq!(out["structuredContent"]["value"], 42, "{out}");
    assert_eq!(
        out["_meta"]["toolgate/coercions"],
        json!([{"pointer": "/precise", "kind": "stripped", "from": true}])
    );
}

/// A `policy.tools` entry naming no tool would apply to nothing: a warning with the line and
/// the closest name.
#[test]
fn config_policy_for_an_unknown_tool_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    std::fs::write(
        &config,
        "version: 1\npolicy:\n  tools:\n    calcc: {validation: lenient}\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let run = toolgate(&[
        "--config",
        &config,
        "call",
        "calc",
        r#"{"expression": "1"}"#,
    ]);
    run.code(0).stderr_has(&[
        "tools.yaml:4:12: policy for `calcc`, which is not a tool of this toolset",
        "hint: did you mean `calc`?",
    ]);
}
