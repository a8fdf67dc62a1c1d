//! `list`, `describe`, `schema`, `schema-config`.

use std::collections::BTreeSet;
use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// list, describe, schema, schema-config
// ---------------------------------------------------------------------------------------------

#[test]
fn list_prints_a_table_of_every_builtin() {
    let run = toolgate(&["list"]);
    let out = run.ok();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: BTreeSet<&str> = rows.iter().filter_map(|r| r.first().copied()).collect();
    for b in BUILTINS {
        assert!(names.contains(b), "`{b}` missing from the table\n{out}");
    }
    // name, category, then the first line of the description.
    let calc = rows
        .iter()
        .find(|r| r.first() == Some(&"calc"))
        .expect("a calc row");
    assert_eq!(calc[1], "compute", "{out}");
    assert!(
        calc[2..]
            .join(" ")
            .starts_with("Evaluate an arithmetic expression"),
        "{out}"
    );
    let read_file = rows
        .iter()
        .find(|r| r.first() == Some(&"read_file"))
        .unwrap();
    assert_eq!(read_file[1], "files", "{out}");
}

#[test]
fn list_leaves_out_a_tool_that_call_may_not_call() {
    // A rule keeps `calc` for admins; `toolgate call` calls without roles, so `toolgate list`
    // (like an MCP or REST listing for such a caller) must not show it.
    let dir = tempfile::tempdir().unwrap();
    let repo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tools.yaml")).unwrap();
    let config = repo.replacen(
        "\npolicy:\n",
        "\npolicy:\n  rules:\n    - {tools: [calc], roles: [admin]}\n",
        1,
    );
    assert_ne!(config, repo, "tools.yaml has a policy section");
    std::fs::write(dir.path().join("tools.yaml"), config).unwrap();
    let listed = toolgate_in(dir.path(), &["list"], None);
    let out = listed.ok();
    assert!(out.contains("current_time"), "{out}");
    assert!(!out.contains("calc"), "{out}");
    let called = toolgate_in(
        dir.path(),
        &["call", "calc", r#"{"expression": "1+1"}"#],
        None,
    );
    assert_ne!(called.code, Some(0), "{}", called.context());
    assert!(
        called.stderr.contains("permission_denied"),
        "{}",
        called.context()
    );
}

#[test]
fn search_ranks_the_tools_that_fit_a_query() {
    let run = toolgate(&["search", "evaluate", "an", "arithmetic", "expression"]);
    let out = run.ok();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // score, name, matched fields, then the first line of the description.
    let first = rows.first().unwrap_or_else(|| panic!("no hit\n{out}"));
    assert_eq!(first[1], "calc", "{out}");
    assert!(first[0].parse::<f64>().is_ok_and(|s| s > 0.0), "{out}");
    assert!(first[2].split(',').any(|f| f == "description"), "{out}");
    assert!(
        first[3..]
            .join(" ")
            .starts_with("Evaluate an arithmetic expression"),
        "{out}"
    );

    let one = toolgate(&["search", "read a file", "-k", "1"]);
    let out = one.ok();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("read_file"), "{out}");

    let json = toolgate(&[
        "search",
        "--json",
        "-k",
        "3",
        "list the entries of a directory",
    ])
    .json();
    let hits = json.as_array().expect("a JSON array");
    assert!(!hits.is_empty() && hits.len() <= 3, "{json}");
    assert_eq!(hits[0]["name"], "list_dir", "{json}");
    assert_eq!(hits[0]["exported_name"], "list_dir");
    assert_eq!(hits[0]["source"], "local");
    assert!(hits[0]["score"].as_f64().is_some_and(|s| s > 0.0), "{json}");
    assert!(
        hits[0]["matched"].as_array().is_some_and(|m| !m.is_empty()),
        "{json}"
    );
    assert!(hits[0]["description"].is_string(), "{json}");

    // A query that fits nothing is an empty success.
    let none = toolgate(&["search", "--json", "zebra"]).json();
    assert_eq!(none, json!([]));
}

#[test]
fn search_leaves_out_a_tool_that_call_may_not_call() {
    // As `toolgate list` does: a rule keeps `calc` for admins, the CLI calls without roles.
    let dir = tempfile::tempdir().unwrap();
    let repo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tools.yaml")).unwrap();
    let config = repo.replacen(
        "\npolicy:\n",
        "\npolicy:\n  rules:\n    - {tools: [calc], roles: [admin]}\n",
        1,
    );
    assert_ne!(config, repo, "tools.yaml has a policy section");
    std::fs::write(dir.path().join("tools.yaml"), config).unwrap();
    let found = toolgate_in(
        dir.path(),
        &["search", "--json", "arithmetic expression"],
        None,
    );
    let out = found.ok();
    let hits: Value = serde_json::from_str(out).expect("JSON");
    let names: Vec<&str> = hits
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    assert!(!names.contains(&"calc"), "{out}");
}

#[test]
fn search_without_words_to_search_for_is_a_usage_error() {
    for query in ["the of a", "   ", "?!"] {
        let run = toolgate(&["search", query]);
        run.code(2)
            .stderr_has(&["invalid_arguments", "search query"]);
    }
    toolgate(&["search", "file", "-k", "0"]).code(2);
    toolgate(&["search"]).code(2);
}

#[test]
fn list_json_gives_descriptors_with_object_input_schemas() {
    let run = toolgate(&["list", "--json"]);
    run.ok();
    let v = run.json();
    let tools = v.as_array().expect("an array of descriptors");
    let mut names = BTreeSet::new();
    for t in tools {
        let name = t["name"].as_str().expect("a name");
        names.insert(name.to_string());
        let description = t["description"].as_str().unwrap_or("");
        assert!(
            description.len() > 20,
            "`{name}` needs a real description: {t}"
        );
        let schema = &t["input_schema"];
        assert_eq!(schema["type"], "object", "`{name}` input_schema: {schema}");
        assert!(
            schema["properties"].is_object(),
            "`{name}` has no properties: {schema}"
        );
    }
    for b in BUILTINS {
        assert!(
            names.contains(b),
            "`{b}` missing from list --json: {names:?}"
        );
    }
    // The arguments of a tool are in its schema, with descriptions.
    let calc = tools.iter().find(|t| t["name"] == "calc").unwrap();
    assert_eq!(calc["input_schema"]["required"], json!(["expression"]));
    assert!(calc["input_schema"]["properties"]["expression"]["description"].is_string());
}

#[test]
fn list_filters_by_category() {
    let run = toolgate(&["list", "--category", "files"]);
    let out = run.ok();
    let names: BTreeSet<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, BTreeSet::from(["list_dir", "read_file"]), "{out}");

    let run = toolgate(&["list", "--json", "--category", "compute"]);
    run.ok();
    let names: BTreeSet<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["category"], "compute", "{t}");
            t["name"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(names, BTreeSet::from(["calc".into(), "jq".into()]));

    let run = toolgate(&["list", "--json", "--category", "no-such-category"]);
    run.ok();
    assert_eq!(run.json(), json!([]));
}

#[test]
fn describe_shows_description_facts_and_schemas() {
    let run = toolgate(&["describe", "read_file"]);
    let out = run.ok();
    assert_eq!(out.lines().next(), Some("read_file"), "{out}");
    for needle in [
        "Read a UTF-8 text file inside the configured root directory.",
        "source: local",
        "category: files",
        "read_only",
        "input schema:",
        "output schema:",
        "\"path\"",
        "\"max_bytes\"",
    ] {
        assert!(out.contains(needle), "describe lacks {needle:?}\n{out}");
    }
    // The input schema is printed as JSON between its label and the output schema's.
    let input = out
        .split("input schema:")
        .nth(1)
        .and_then(|s| s.split("output schema:").next())
        .unwrap();
    let input: Value = serde_json::from_str(input).expect("the input schema is JSON");
    assert_eq!(input["required"], json!(["path"]));

    toolgate(&["describe", "no_such_tool"])
        .code(4)
        .stderr_has(&["not_found", "no_such_tool"]);
}

#[test]
fn schema_of_one_tool_in_each_dialect() {
    let run = toolgate(&["schema", "calc", "--dialect", "openai"]);
    run.ok();
    let v = run.json();
    assert_eq!(v["type"], "function");
    assert_eq!(v["name"], "calc");
    assert_eq!(v["parameters"]["type"], "object");
    assert!(
        v["parameters"]["properties"]["expression"].is_object(),
        "{v}"
    );
    assert!(v["parameters"].get("$schema").is_none(), "{v}");
    assert!(v.get("inputSchema").is_none() && v.get("input_schema").is_none());

    let run = toolgate(&["schema", "calc", "--dialect", "anthropic"]);
    run.ok();
    let v = run.json();
    assert_eq!(v["name"], "calc");
    assert_eq!(v["input_schema"]["type"], "object");
    assert!(
        v["input_schema"]["properties"]["expression"].is_object(),
        "{v}"
    );
    assert!(v["input_schema"].get("$schema").is_none(), "{v}");
    assert!(
        v.get("type").is_none() && v.get("parameters").is_none(),
        "{v}"
    );

    for args in [
        &["schema", "calc", "--dialect", "mcp"][..],
        &["schema", "calc"][..], // mcp is the default
    ] {
        let run = toolgate(args);
        run.ok();
        let v = run.json();
        assert_eq!(v["name"], "calc");
        assert_eq!(v["inputSchema"]["type"], "object");
        assert_eq!(v["outputSchema"]["type"], "object");
        assert_eq!(v["annotations"]["readOnlyHint"], true, "{v}");
    }

    let run = toolgate(&["schema", "calc", "--dialect", "openai-strict"]);
    run.ok();
    let v = run.json();
    assert_eq!(v["strict"], true, "{v}");
    assert_eq!(v["parameters"]["additionalProperties"], false, "{v}");
    let run = toolgate(&["schema", "calc", "--dialect", "gemini"]);
    run.code(0);
    let v = run.json();
    assert_eq!(v["parameters"]["type"], "object", "{v}");
    assert!(v["parameters"].get("additionalProperties").is_none(), "{v}");
    // What the dialect dropped is said on stderr (stdout stays one JSON document).
    run.stderr_has(&[
        "note: calc (gemini): /: removed `additionalProperties: false` (not supported by Gemini)",
    ]);
    // jq's `input` takes any JSON value, which strict mode cannot express: it is carried as
    // JSON text (`input_json`), so jq is strict too.
    let run = toolgate(&["schema", "jq", "--dialect", "openai-strict"]);
    run.code(0).stderr_has(&[
        "note: jq (openai-strict): /properties/input:",
        "exported as `input_json`",
    ]);
    let v = run.json();
    assert_eq!(v["strict"], true, "{v}");
    assert_eq!(
        v["parameters"]["properties"]["input_json"]["type"], "string",
        "{v}"
    );
    // No notes where nothing changed.
    let run = toolgate(&["schema", "calc", "--dialect", "mcp"]);
    run.ok();
    assert!(!run.stderr.contains("note:"), "{}", run.stderr);
    toolgate(&["schema", "calc", "--dialect", "klingon"]).code(2);
    toolgate(&["schema", "nope"]).code(4);
}

/// `toolgate schema --all` in every dialect: every built-in is there, and every definition obeys
/// the dialect's published rules (`toolgate::model::dialect::check`, each rule with its source).
#[test]
fn schema_all_in_each_dialect() {
    for (dialect, schema_key) in [
        ("mcp", "inputSchema"),
        ("openai", "parameters"),
        ("openai-strict", "parameters"),
        ("anthropic", "input_schema"),
        ("gemini", "parameters"),
    ] {
        let run = toolgate(&["schema", "--all", "--dialect", dialect]);
        run.code(0);
        let v = run.json();
        let all = v.as_array().expect("an array");
        let names: BTreeSet<&str> = all.iter().filter_map(|t| t["name"].as_str()).collect();
        for b in BUILTINS {
            assert!(names.contains(b), "{dialect}: `{b}` missing: {names:?}");
        }
        let parsed: toolgate::Dialect = dialect.parse().unwrap();
        for t in all {
            assert_eq!(t[schema_key]["type"], "object", "{dialect}: {t}");
            let violations = toolgate::model::dialect::check::check(parsed, t);
            assert!(violations.is_empty(), "{dialect}: {violations:?}\n{t:#}");
        }
    }
}

/// `--defer-loading`: the provider's tool-search tool first, then every tool deferred except
/// those named with `--loaded` (either name form); a dialect without deferred loading is a
/// usage error, and so is `--defer-loading` without `--all`.
#[test]
fn schema_defer_loading_gives_each_providers_tool_search_array() {
    for (args, first) in [
        (
            &["--dialect", "anthropic"][..],
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}),
        ),
        (
            &["--dialect", "anthropic", "--search-tool", "regex"][..],
            json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}),
        ),
        (&["--dialect", "openai"][..], json!({"type": "tool_search"})),
    ] {
        let mut all = vec!["schema", "--all", "--defer-loading", "--loaded", "calc"];
        all.extend_from_slice(args);
        let run = toolgate(&all);
        run.code(0);
        let v = run.json();
        let tools = v.as_array().expect("an array");
        assert_eq!(tools[0], first, "{args:?}");
        for b in BUILTINS {
            let t = tools[1..]
                .iter()
                .find(|t| t["name"] == *b)
                .unwrap_or_else(|| panic!("{args:?}: `{b}` missing"));
            let deferred = t.get("defer_loading") == Some(&json!(true));
            assert_eq!(deferred, b != "calc", "{args:?}: {t}");
        }
    }
    let run = toolgate(&["schema", "--all", "--defer-loading", "--dialect", "gemini"]);
    run.code(2).stderr_has(&["no deferred tool loading"]);
    toolgate(&["schema", "calc", "--defer-loading", "--dialect", "openai"]).code(2);
}

#[test]
fn schema_config_prints_the_json_schema_of_tools_yaml() {
    let run = toolgate(&["schema-config"]);
    run.ok();
    let schema = run.json();
    assert!(
        schema["$schema"]
            .as_str()
            .is_some_and(|s| s.contains("json-schema.org")),
        "{schema}"
    );
    jsonschema::meta::validate(&schema).expect("a valid JSON Schema");
    for key in ["version", "tools", "policy", "settings"] {
        assert!(
            schema["properties"][key].is_object(),
            "no `{key}` property in the config schema"
        );
    }
    // It describes real configurations: a JSON twin of a small tools.yaml passes, a typo fails.
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let good = json!({
        "version": 1,
        "tools": {"local": [{"fn": "crate::tools::forecast", "category": "weather"}]},
        "policy": {
            "defaults": {"timeout_ms": 10000, "guardrails": ["pii"]},
            "guardrails": {
                "pii": {"mask": {"detectors": ["email", "card", "secrets"], "arguments": true}},
                "sql": {"deny": [{"name": "drop", "pattern": "(?i)drop table", "argument": "query"}]},
                "hook": {"webhook": {"url": "https://guard.example.com/check", "fail": "open"}}
            },
            "rules": [
                {"tools": ["file_write"], "cel": "'admin' in caller.roles", "reason": "admins only"},
                {"rego_file": "policies/fetch.rego", "timeout_ms": 50}
            ]
        },
        "gateway": {"servers": [{"id": "gh", "tools": {"include": [{"source": "github", "annotations": {"readOnlyHint": true}}]}, "roles": ["reader"], "prefix": "gh_"}]}
    });
    let errors: Vec<String> = validator
        .iter_errors(&good)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "a valid config is rejected: {errors:?}");
    assert!(!validator.is_valid(&json!({"version": 1, "tols": {}})));
    let unknown_detector =
        json!({"version": 1, "policy": {"guardrails": {"g": {"mask": {"detectors": ["ssn"]}}}}});
    assert!(!validator.is_valid(&unknown_detector));
    assert!(
        !validator.is_valid(&json!({"version": 1, "policy": {"rules": [{"cel_text": "true"}]}}))
    );
    assert!(!validator.is_valid(
        &json!({"version": 1, "gateway": {"servers": [{"id": "gh", "tools": {"include": [{"sorce": "github"}]}}]}})
    ));
}

#[test]
fn closed_stdout_ends_quietly() {
    // `toolgate list --json | head -1`: the reader goes away; the command must not panic.
    for args in [
        &["schema-config"][..],
        &["list"][..],
        &["describe", "calc"][..],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader); // every write to stdout now fails with EPIPE
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(repo_root())
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolgate starts");
        let mut err = child.stderr.take().unwrap();
        let err = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let status = wait_until(&mut child, Instant::now() + COMMAND_TIMEOUT);
        let stderr = err.join().unwrap_or_default();
        let status = status.unwrap_or_else(|| panic!("toolgate {args:?} hung"));
        assert!(
            !stderr.contains("panicked") && status.code() != Some(101),
            "toolgate {args:?} with a closed stdout: {status}\n{stderr}"
        );
    }
}
