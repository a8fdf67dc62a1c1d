//! `call` of every built-in tool on real input.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::harness::*;

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

/// Where there is no tools.yaml, the binary's own (compiled-in) configuration shares no
/// directory: a file next to it is not readable (its `files.root: .` meant the folder of the
/// tools.yaml it was built from, never the working directory).
#[test]
fn without_a_tools_yaml_read_file_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.txt"), "not for models").unwrap();
    let run = toolgate_in(
        dir.path(),
        &["call", "read_file", r#"{"path": "secret.txt"}"#],
        None,
    );
    run.code(1).stderr_has(&[
        "permission_denied",
        "file access is off",
        "settings.files.root",
    ]);
    assert!(!run.stdout.contains("not for models"), "{}", run.context());
    toolgate_in(dir.path(), &["call", "list_dir", "{}"], None)
        .code(1)
        .stderr_has(&["file access is off"]);
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
