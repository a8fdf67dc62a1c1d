//! Agent Skills through `toolgate serve`: the three skills of `tests/skills` (copied into a
//! temporary folder next to a file they must never reach, and a symlink pointing at it) listed,
//! loaded and read over REST, as tools, and as MCP resources by the official Python MCP SDK's
//! client (`runtime/tests/peers/py_skills_client.py`); paths leading out of a skill's folder
//! refused on every route.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::harness::{Served, get, peers, request, serve, tools_yaml};

const NAMES: [&str; 3] = ["csv-cleanup", "incident-report", "release-notes"];

/// A copy of the test skills in `dir/skills`, a secret in `dir/outside/secret.txt` and a
/// symlink `csv-cleanup/leak.md` pointing at it.
fn skills_folder(dir: &Path) {
    copy_dir(
        &crate::harness::repo_root().join("tests/skills"),
        &dir.join("skills"),
    );
    std::fs::create_dir(dir.join("outside")).unwrap();
    std::fs::write(dir.join("outside/secret.txt"), "the secret").unwrap();
    std::os::unix::fs::symlink(
        "../../outside/secret.txt",
        dir.join("skills/csv-cleanup/leak.md"),
    )
    .unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `toolgate serve` on the repository's tools.yaml plus `tools.skills: [{dir: <folder>}]`.
fn serve_skills(folder: &Path) -> Served {
    let yaml = tools_yaml("", "").replacen(
        "\ntools:\n",
        &format!("\ntools:\n  skills:\n    - dir: {}\n", folder.display()),
        1,
    );
    assert!(yaml.contains("skills:"), "{yaml}");
    serve(&yaml, &[])
}

fn get_json(served: &Served, path: &str) -> (u16, Value) {
    let (status, body) = get(served.port(), path, &[]).unwrap();
    let value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{path}: {body}"));
    (status, value)
}

#[test]
fn rest_lists_loads_and_reads_the_skills_and_refuses_paths_out() {
    let tmp = tempfile::tempdir().unwrap();
    skills_folder(tmp.path());
    let served = serve_skills(&tmp.path().join("skills"));

    let (status, list) = get_json(&served, "/skills");
    assert_eq!(status, 200, "{list}");
    let names: Vec<_> = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, NAMES);
    assert!(
        list["skills"][1]["description"]
            .as_str()
            .unwrap()
            .starts_with("Draft a blameless")
    );
    // Name and description only.
    assert_eq!(list["skills"][0].as_object().unwrap().len(), 2, "{list}");

    let (status, skill) = get_json(&served, "/skills/release-notes");
    assert_eq!(status, 200, "{skill}");
    assert!(
        skill["instructions"]
            .as_str()
            .unwrap()
            .starts_with("# Release notes")
    );
    assert_eq!(
        skill["files"],
        json!(["SKILL.md", "assets/template.md", "references/style.md"])
    );

    let (status, file) = get_json(&served, "/skills/csv-cleanup/files/scripts/clean.py");
    assert_eq!(status, 200, "{file}");
    assert!(file["text"].as_str().unwrap().contains("def main()"));

    for path in [
        "/skills/csv-cleanup/files/../incident-report/SKILL.md",
        "/skills/csv-cleanup/files/%2e%2e/%2e%2e/outside/secret.txt",
        "/skills/csv-cleanup/files/%2Fetc%2Fpasswd",
        "/skills/csv-cleanup/files/leak.md",
    ] {
        let (status, body) = get(served.port(), path, &[]).unwrap();
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("outside the skill's folder"),
            "{path}: {body}"
        );
        assert!(!body.contains("the secret"), "{body}");
    }
    let (status, _) = get_json(&served, "/skills/no-such-skill");
    assert_eq!(status, 404);
    let (status, _) = get_json(&served, "/skills/csv-cleanup/files/nothing.md");
    assert_eq!(status, 404);

    // The same through the tools, as a model calls them.
    let call = |tool: &str, args: Value| {
        let (status, body) = request(
            served.port(),
            "POST",
            &format!("/tools/{tool}/call"),
            &[("Content-Type", "application/json")],
            Some(&args.to_string()),
        )
        .unwrap();
        (status, serde_json::from_str::<Value>(&body).unwrap())
    };
    let (status, out) = call("load_skill", json!({"name": "incident-report"}));
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["structuredContent"]["files"],
        json!(["SKILL.md", "references/timeline.md"])
    );
    let (status, out) = call(
        "read_skill_file",
        json!({"skill": "csv-cleanup", "path": "leak.md"}),
    );
    assert_eq!(status, 403, "{out}");
    let (status, out) = call(
        "read_skill_file",
        json!({"skill": "release-notes", "path": "assets/template.md"}),
    );
    assert_eq!(status, 200, "{out}");
    assert!(
        out["structuredContent"]["text"]
            .as_str()
            .unwrap()
            .contains("### Fixed")
    );
}

/// Runs the Python client with `plan`; its JSON output.
fn run_client(served: &Served, plan: &Value) -> Value {
    let script = peers::test_peers_dir().join("py_skills_client.py");
    let mut child = Command::new("timeout")
        .arg("120")
        .arg(peers::venv_python())
        .arg(&script)
        .arg(served.url("/mcp"))
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
    assert!(
        out.status.success(),
        "the Python client failed: {}\n{}\ngateway log:\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr),
        served.log()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_python_sdk_lists_and_reads_skills_as_resources_and_calls_their_tools() {
    let tmp = tempfile::tempdir().unwrap();
    skills_folder(tmp.path());
    let served = serve_skills(&tmp.path().join("skills"));
    let plan = json!({
        "read": [
            "skill://incident-report/SKILL.md",
            "skill://csv-cleanup/references/rules.md",
            "skill://csv-cleanup/leak.md",
            // `%2F` survives URL normalization and is decoded by the gateway.
            "skill://csv-cleanup/references%2F..%2F..%2Frelease-notes%2FSKILL.md",
            "skill://no-such-skill/SKILL.md",
        ],
        "call": [
            {"name": "load_skill", "arguments": {"name": "release-notes"}},
            {"name": "read_skill_file", "arguments": {"skill": "csv-cleanup", "path": "../../outside/secret.txt"}},
        ],
    });
    let out = run_client(&served, &plan);

    let uris: Vec<_> = out["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .filter(|u| u.starts_with("skill://"))
        .collect();
    assert_eq!(
        uris,
        [
            "skill://csv-cleanup/SKILL.md",
            "skill://csv-cleanup/references/rules.md",
            "skill://csv-cleanup/scripts/clean.py",
            "skill://incident-report/SKILL.md",
            "skill://incident-report/references/timeline.md",
            "skill://release-notes/SKILL.md",
            "skill://release-notes/assets/template.md",
            "skill://release-notes/references/style.md",
        ],
        "the symlink is not listed: {out}"
    );
    let first = &out["resources"][0];
    assert_eq!(first["mimeType"], "text/markdown");
    assert!(
        first["description"]
            .as_str()
            .unwrap()
            .starts_with("Clean up a CSV")
    );

    let tools = out["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("load_skill")) && tools.contains(&json!("read_skill_file")));

    let read = out["read"].as_array().unwrap();
    let skill_md = read[0]["contents"][0]["text"].as_str().unwrap();
    assert!(
        skill_md.starts_with("---\nname: incident-report\n"),
        "{skill_md}"
    );
    assert!(skill_md.contains("blameless"), "{skill_md}");
    assert_eq!(
        read[0]["contents"][0]["uri"],
        "skill://incident-report/SKILL.md"
    );
    assert!(
        read[1]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Cleaning rules")
    );
    for refused in &read[2..4] {
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("outside the skill's folder"),
            "{refused}"
        );
    }
    assert_eq!(read[4]["error"]["code"], -32002, "{}", read[4]);

    let call = out["call"].as_array().unwrap();
    assert_eq!(call[0]["is_error"], false, "{}", call[0]);
    assert!(
        call[0]["structured"]["instructions"]
            .as_str()
            .unwrap()
            .contains("assets/template.md")
    );
    assert_eq!(call[1]["is_error"], true, "{}", call[1]);
    assert!(
        call[1]["text"]
            .as_str()
            .unwrap()
            .contains("outside the skill's folder")
    );
    assert!(!out.to_string().contains("the secret"));
}

#[test]
fn a_broken_skill_stops_serve_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    skills_folder(tmp.path());
    std::fs::write(
        tmp.path().join("skills/incident-report/SKILL.md"),
        "---\nname: incident-report\ndescription: ok\nversion: 2\n---\nbody\n",
    )
    .unwrap();
    let yaml = tools_yaml("", "").replacen(
        "\ntools:\n",
        &format!(
            "\ntools:\n  skills:\n    - dir: {}\n",
            tmp.path().join("skills").display()
        ),
        1,
    );
    let config = tmp.path().join("tools.yaml");
    std::fs::write(&config, yaml).unwrap();
    // `timeout`: a gateway that starts anyway is stopped, and the test fails.
    let out = Command::new("timeout")
        .arg("30")
        .arg(crate::harness::BIN)
        .args([
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--http",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("incident-report/SKILL.md:4:") && stderr.contains("version"),
        "{stderr}"
    );
}

#[test]
fn a_rule_that_keeps_load_skill_for_admins_hides_the_skills_from_others() {
    let tmp = tempfile::tempdir().unwrap();
    skills_folder(tmp.path());
    let gateway = "gateway:\n  api_keys:\n    - {name: reader, key: \"${TG_READER}\", roles: [reader]}\n    - {name: admin, key: \"${TG_ADMIN}\", roles: [admin]}\n";
    let yaml = tools_yaml("", gateway)
        .replacen(
            "\ntools:\n",
            &format!(
                "\ntools:\n  skills:\n    - dir: {}\n",
                tmp.path().join("skills").display()
            ),
            1,
        )
        .replacen(
            "\npolicy:\n",
            "\npolicy:\n  rules:\n    - {tools: [load_skill, read_skill_file], roles: [admin]}\n",
            1,
        );
    assert!(
        yaml.contains("tools: [load_skill, read_skill_file]") && yaml.contains("skills:"),
        "{yaml}"
    );
    let (reader, admin) = ("reader-key-skills-0123", "admin-key-skills-4567");
    let served =
        crate::harness::serve_with_env(&yaml, &[], &[("TG_READER", reader), ("TG_ADMIN", admin)]);
    let as_caller = |key: &str, path: &str| {
        let auth = format!("Bearer {key}");
        let (status, body) = get(served.port(), path, &[("Authorization", auth.as_str())]).unwrap();
        (
            status,
            serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
        )
    };
    let (status, list) = as_caller(admin, "/skills");
    assert_eq!(
        (status, list["skills"].as_array().map(Vec::len)),
        (200, Some(3)),
        "{list}"
    );
    let (status, list) = as_caller(reader, "/skills");
    assert_eq!(status, 200);
    assert_eq!(list["skills"], json!([]), "{list}");
    let (status, _) = as_caller(reader, "/skills/release-notes");
    assert_eq!(status, 404);
    let (status, _) = as_caller(reader, "/skills/release-notes/files/SKILL.md");
    assert_eq!(status, 404);
    let (status, file) = as_caller(admin, "/skills/release-notes/files/SKILL.md");
    assert_eq!(status, 200, "{file}");
}
