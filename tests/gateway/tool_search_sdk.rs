//! Tool search as an agent on another stack meets it: the official Python MCP SDK's client
//! (PyPI `mcp` 2.x, `runtime/tests/peers/py_search_client.py`) against `toolgate serve` in
//! `meta` mode, in front of the GitHub REST API's OpenAPI document (about 1,100 operations,
//! converted at start-up) whose requests prism checks. The agent lists the tools (three meta
//! tools, nothing else), searches in plain words, describes what it found and calls it through
//! `call_tool`, and prism answers the request toolgate built. A tool that a rule keeps for
//! admins is never found by a reader, never described to it, and its call through `call_tool`
//! is refused as a direct call would be, while an admin finds and calls it.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::harness::{Served, peers, serve_with_env, tools_yaml};
use crate::prism::{self, Prism};

const READER: &str = "reader-key-sdk-0123";
const ADMIN: &str = "admin-key-sdk-4567";
const GITHUB: &str = "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json";

/// The tool this test calls (`GET /repos/{owner}/{repo}/readme`) and the one it keeps for admins
/// (`DELETE /repos/{owner}/{repo}`), as a model names them.
const README_TOOL: &str = "github__repos_get-readme";
const DELETE_TOOL: &str = "github__repos_delete";

/// Prism serving the request view of the GitHub document (the operations' own responses are
/// too big for prism to load in reasonable time; requests are checked the same).
fn github_prism(dir: &std::path::Path) -> Prism {
    let root = crate::harness::repo_root();
    let text = std::fs::read_to_string(root.join(GITHUB)).expect("GitHub document");
    let doc: Value = serde_json::from_str(&text).expect("GitHub document is JSON");
    let view = dir.join("github-view.json");
    std::fs::write(&view, prism::request_view(&doc).to_string()).expect("write the view");
    Prism::start(&view)
}

fn config(prism_url: &str) -> String {
    let spec = crate::harness::repo_root().join(GITHUB);
    let openapi = format!(
        "  openapi:\n    - id: github\n      spec: {}\n      load: runtime\n      allow_private: true\n      base_url: {prism_url}\n",
        spec.display()
    );
    let gateway = "gateway:\n  api_keys:\n    - {name: reader, key: \"${TG_READER}\", roles: [reader]}\n    - {name: admin, key: \"${TG_ADMIN}\", roles: [admin]}\n  tool_search: {mode: meta}\n";
    let base = tools_yaml("", gateway);
    let yaml = base
        .replacen("\ntools:\n", &format!("\ntools:\n{openapi}"), 1)
        .replacen(
            "\npolicy:\n",
            "\npolicy:\n  rules:\n    - {tools: [github.repos_delete], roles: [admin]}\n",
            1,
        );
    assert!(
        yaml.contains("id: github") && yaml.contains("repos_delete"),
        "{yaml}"
    );
    yaml
}

/// Runs the Python client with `plan` on stdin as the caller holding `key`; its JSON output.
fn run_client(served: &Served, key: &str, plan: &Value) -> Value {
    let script = peers::test_peers_dir().join("py_search_client.py");
    let mut child = Command::new("timeout")
        .arg("120")
        .arg(peers::venv_python())
        .arg(&script)
        .arg(served.url("/mcp"))
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(plan.to_string().as_bytes())
        .expect("write the plan");
    let out = child.wait_with_output().expect("the Python client ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed ({}):\n{stdout}\n{stderr}\n{}",
        out.status,
        served.log()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn hit_names(step: &Value) -> Vec<&str> {
    assert_eq!(step["is_error"], false, "{step}");
    step["structured"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {step}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

#[test]
fn the_python_sdk_searches_describes_and_calls_a_github_tool_in_meta_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prism = github_prism(dir.path());
    let served = serve_with_env(
        &config(&prism.url("")),
        &[],
        &[("TG_READER", READER), ("TG_ADMIN", ADMIN)],
    );
    let plan = json!({
        "search": [
            {"query": "get the README of a repository", "k": 5},
            {"query": "delete a repository", "k": 10},
        ],
        "describe": [[README_TOOL, DELETE_TOOL]],
        "call": [
            {"name": README_TOOL, "arguments": {"owner": "octocat", "repo": "hello-world"}},
            {"name": DELETE_TOOL, "arguments": {"owner": "octocat", "repo": "hello-world"}},
        ],
    });

    let reader = run_client(&served, READER, &plan);
    // The list is the three meta tools: none of GitHub's thousand definitions.
    assert_eq!(
        reader["list"],
        json!(["search_tools", "describe_tools", "call_tool"]),
        "{reader}"
    );
    // search → describe → call.
    let readme_hits = hit_names(&reader["search"][0]);
    assert!(
        readme_hits.contains(&README_TOOL),
        "{README_TOOL} not in the top 5: {readme_hits:?}"
    );
    let described = &reader["describe"][0]["structured"];
    assert_eq!(described["tools"][0]["name"], README_TOOL, "{described}");
    let schema = &described["tools"][0]["inputSchema"];
    for arg in ["owner", "repo"] {
        assert!(schema["properties"][arg].is_object(), "{arg}: {schema}");
    }
    let called = &reader["call"][0];
    assert_eq!(called["is_error"], false, "{called}\n{}", served.log());
    // Prism answers 200 only to a request that keeps to the document (a violation is a 422).
    assert!(
        called["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("HTTP 200")),
        "prism's answer is the result: {called}"
    );
    // The tool kept for admins: not found, not described, refused like a direct call.
    let delete_hits = hit_names(&reader["search"][1]);
    assert!(!delete_hits.is_empty(), "other repository tools are found");
    assert!(!delete_hits.contains(&DELETE_TOOL), "{delete_hits:?}");
    assert_eq!(described["not_found"], json!([DELETE_TOOL]), "{described}");
    let refused = &reader["call"][1];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(
        refused["text"]
            .as_str()
            .is_some_and(|t| t.contains("permission_denied")),
        "{refused}"
    );

    // An admin finds, describes and calls it.
    let admin = run_client(&served, ADMIN, &plan);
    assert!(
        hit_names(&admin["search"][1]).contains(&DELETE_TOOL),
        "{}",
        admin["search"][1]
    );
    let names: Vec<&Value> = admin["describe"][0]["structured"]["tools"]
        .as_array()
        .expect("described tools")
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(
        names,
        [README_TOOL, DELETE_TOOL],
        "{}",
        admin["describe"][0]
    );
    assert_eq!(admin["call"][1]["is_error"], false, "{}", admin["call"][1]);
}
