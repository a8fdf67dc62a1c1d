//! The REST API against its own OpenAPI document: schemathesis (PyPI, a property-based API
//! tester; scripts/install-peers.sh installs it into `.peers/venv-schemathesis`) reads
//! `/openapi.json`, sends every operation the requests its schemas allow and some they do not,
//! and runs every check it has: no 5xx, documented statuses and content types, answers that
//! match their schemas, schema-valid requests accepted, schema-violating ones refused.
//!
//! Each tool is an operation of its own (`POST /tools/fetch/call`, its body fetch's input
//! schema), so this sends each built-in tool arguments its schema allows. Two settings in
//! `schemathesis/schemathesis.toml`, each with a check of ours in
//! `schemathesis/toolgate_checks.py` that keeps it narrow:
//! - a tool may refuse schema-valid arguments with 422 for reasons no schema says (calc's `1/0`),
//!   but never by the gateway's own schema check (which lists `details.errors`);
//! - a call given `?timeout_ms=1` may time out (504), which depends on the machine's speed;
//!   such a 504 must be the ToolError `timeout`.
//!
//! The seed is fixed, so a run generates the same requests every time.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Served, get, peers, repo_root, serve, tools_yaml};

/// The longest a schemathesis run may take (it takes about 15 s here).
const RUN_DEADLINE: Duration = Duration::from_secs(600);

/// Runs schemathesis with every check against `served`; (exit status, its output).
fn schemathesis(served: &Served) -> (Option<i32>, String) {
    let bin = peers::require_installed(
        peers::peers_root().join("venv-schemathesis/bin/schemathesis"),
        "schemathesis (PyPI) in .peers/venv-schemathesis",
    );
    let settings = repo_root().join("tests/gateway/schemathesis");
    let out = served.dir.path().join("schemathesis.log");
    let log = std::fs::File::create(&out).expect("create the log");
    let mut child = Command::new(bin)
        .arg("--config-file")
        .arg(settings.join("schemathesis.toml"))
        .args(["run", &served.url("/openapi.json")])
        .args(["--checks", "all", "--max-examples", "60", "--seed", "1"])
        .args(["--no-color"])
        // Hypothesis keeps its example database in the working directory: the temp dir.
        .current_dir(served.dir.path())
        .env("PYTHONPATH", &settings)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start schemathesis");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for schemathesis") {
            break status.code();
        }
        if started.elapsed() > RUN_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status, std::fs::read_to_string(&out).unwrap_or_default())
}

#[test]
fn schemathesis_finds_no_failure_with_every_check_against_the_default_toolset() {
    // The repository's tools.yaml, fetch kept to the loopback address: the URLs schemathesis
    // makes up are refused before any name is looked up.
    let yaml = tools_yaml("", "");
    let allow = "allow_hosts: [127.0.0.1, localhost, docs.rs, crates.io]";
    assert!(yaml.contains(allow), "tools.yaml's fetch allowlist moved");
    let served = serve(&yaml.replace(allow, "allow_hosts: [127.0.0.1]"), &[]);

    // The document describes each built-in tool as its own operation.
    let (status, text) = get(served.port(), "/openapi.json", &[]).expect("GET /openapi.json");
    assert_eq!(status, 200, "{text}");
    let doc: Value = serde_json::from_str(&text).expect("the document is JSON");
    let paths = doc["paths"].as_object().expect("paths");
    for tool in [
        "fetch",
        "read_file",
        "list_dir",
        "calc",
        "jq",
        "current_time",
    ] {
        assert!(
            paths.contains_key(&format!("/tools/{tool}/call")),
            "no operation for {tool}: {:?}",
            paths.keys().collect::<Vec<_>>()
        );
    }
    let operations: usize = paths
        .values()
        .filter_map(Value::as_object)
        .map(|item| {
            let methods = ["get", "put", "post", "delete", "patch", "head", "options"];
            item.keys()
                .filter(|k| methods.contains(&k.as_str()))
                .count()
        })
        .sum();

    let (status, said) = schemathesis(&served);
    assert_eq!(
        status,
        Some(0),
        "schemathesis found failures (or did not finish in {RUN_DEADLINE:?}):\n{said}\n{}",
        served.log()
    );
    // It tested every operation of the document, the tools' own among them, but the one that
    // serves the document itself (schemathesis leaves `GET /openapi.json` out).
    let tested = operations - 1;
    assert!(
        said.contains(&format!("Tested: {tested}")),
        "not {tested} of the {operations} operations were tested:\n{said}"
    );
}

#[test]
fn schemathesis_finds_no_failure_with_an_openapi_source_behind_the_gateway() {
    // The OpenAPI example petstore converted at start-up, its requests answered by prism, which
    // refuses any request that breaks the document: each of its operations is a tool, and so
    // an operation of the gateway's own document, whose body is the tool's input schema.
    // Whatever schemathesis makes of those schemas, the gateway answers inside its document.
    let spec = repo_root().join("tests/specs/oai-examples/oai-v3.0-petstore.yaml");
    let mut prism = crate::prism::Prism::start(&spec);
    let openapi = format!(
        "  openapi:\n    - id: pets\n      spec: {}\n      load: runtime\n      allow_private: true\n      base_url: {}\n",
        spec.display(),
        prism.url("")
    );
    let yaml = tools_yaml("", "").replacen("\ntools:\n", &format!("\ntools:\n{openapi}"), 1);
    assert!(yaml.contains("id: pets"), "{yaml}");
    let served = serve(&yaml, &[]);

    let (status, text) = get(served.port(), "/openapi.json", &[]).expect("GET /openapi.json");
    assert_eq!(status, 200, "{text}");
    let doc: Value = serde_json::from_str(&text).expect("the document is JSON");
    let paths = doc["paths"].as_object().expect("paths");
    for tool in ["pets__listPets", "pets__createPets", "pets__showPetById"] {
        assert!(
            paths.contains_key(&format!("/tools/{tool}/call")),
            "no operation for {tool}: {:?}",
            paths.keys().collect::<Vec<_>>()
        );
    }

    let (status, said) = schemathesis(&served);
    assert!(
        prism.is_running(),
        "prism stopped: {}",
        prism.crash_reason()
    );
    assert_eq!(
        status,
        Some(0),
        "schemathesis found failures (or did not finish in {RUN_DEADLINE:?}):\n{said}\n{}\nprism:\n{}",
        served.log(),
        prism.log_tail()
    );
}
