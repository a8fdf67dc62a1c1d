//! Hot reload of the sources: `toolgate serve --watch` on a tools.yaml rewritten while an MCP
//! client is connected and calls are running. The new file keeps one MCP server as it was,
//! removes another, adds a third and changes the policy. The calls in flight on the kept and
//! on the removed server both finish with their results; the client's session goes on, hears
//! `tools/list_changed` and calls the added server; the kept server's process is the same one
//! (it booted once), the removed one's process ends; the new rule refuses `calc`. A file that
//! does not load is refused and the gateway goes on serving. The servers are
//! runtime/tests/peers/slow_server.py (Python MCP SDK over stdio), each logging its boots.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Served, mcp_client_at, peers, request, serve, tools_yaml};
use crate::mcp_http::runtime;

/// slow_server.py as MCP source `id`, logging to `log`.
fn slow(id: &str, log: &Path) -> String {
    let script = peers::test_peers_dir().join("slow_server.py");
    format!(
        "    - id: {id}\n      stdio:\n        command: {}\n        args: [\"{}\", \"{}\"]\n",
        peers::venv_python().display(),
        script.display(),
        log.display()
    )
}

/// The repository's tools.yaml with `mcp` entries and `rules` as `policy.rules`.
fn yaml(mcp: &str, rules: &str) -> String {
    let base = tools_yaml(mcp, "");
    let old = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(old), "tools.yaml's policy section moved");
    if rules.is_empty() {
        return base;
    }
    base.replace(old, &format!("{old}  rules:\n{rules}"))
}

/// Rewrites the served tools.yaml and waits (30 s at most) until the log has one more line
/// containing `outcome` than before; `--watch` notices the change (no signal is sent).
fn rewrite(served: &Served, text: &str, outcome: &str) {
    let before = served.log().matches(outcome).count();
    std::fs::write(served.dir.path().join("tools.yaml"), text).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while served.log().matches(outcome).count() == before {
        assert!(
            Instant::now() < deadline,
            "no `{outcome}` within 30 s of the change\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lines of `log` that start with `event`.
fn events(log: &Path, event: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(event))
        .map(str::to_string)
        .collect()
}

/// Waits (30 s at most) until `done` holds.
fn until(what: &str, served: &Served, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within 30 s\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn calc_status(served: &Served) -> u16 {
    request(
        served.port(),
        "POST",
        "/tools/calc/call",
        &[("Content-Type", "application/json")],
        Some(r#"{"expression": "1+2"}"#),
    )
    .expect("POST /tools/calc/call")
    .0
}

#[test]
fn a_reload_adds_and_removes_sources_while_sessions_and_calls_in_flight_go_on() {
    let logs = tempfile::tempdir().unwrap();
    let [kept_log, gone_log, added_log] =
        ["kept.log", "gone.log", "added.log"].map(|n| logs.path().join(n));
    let start = yaml(&(slow("kept", &kept_log) + &slow("gone", &gone_log)), "");
    let mut served = serve(&start, &["--watch"]);
    assert_eq!(calc_status(&served), 200);

    let rt = runtime();
    let (_backend, client) = rt.block_on(mcp_client_at(&served, "/mcp", &[]));
    let mut heard = client.watch_tools();
    for tool in ["gw.kept__slow", "gw.gone__slow"] {
        assert!(client.contains(tool), "{tool}: {:?}", client.tools());
    }
    // One call on each server, running when the file changes.
    let in_flight = ["kept", "gone"].map(|source| {
        let client = client.clone();
        rt.spawn(async move {
            client
                .call(
                    &format!("gw.{source}__slow"),
                    json!({"tag": format!("{source}-1"), "ms": 3000}),
                )
                .await
        })
    });
    until("both calls reached their servers", &served, || {
        events(&kept_log, "start").len() == 1 && events(&gone_log, "start").len() == 1
    });
    let gone_pid: u32 = events(&gone_log, "boot")[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();

    let next = yaml(
        &(slow("kept", &kept_log) + &slow("added", &added_log)),
        "    - {tools: [calc], cel: \"false\", reason: calc is off after the reload}\n",
    );
    rewrite(&served, &next, "toolgate serve: reloaded");
    let log = served.log();
    assert!(log.contains("sources added: `added`"), "{log}");
    assert!(log.contains("sources removed: `gone`"), "{log}");
    assert!(log.contains("kept their sessions"), "{log}");
    // `/sources` and `/metrics` name the configuration generation.
    let (status, body) = crate::harness::get(served.port(), "/sources", &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    let sources: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(sources["generation"], 1, "{sources}");
    let (_, metrics) = crate::harness::get(served.port(), "/metrics", &[]).unwrap();
    assert!(
        metrics.lines().any(|l| l == "toolgate_config_generation 1"),
        "{metrics}"
    );

    // Both calls in flight finish with their results.
    for (call, source) in in_flight.into_iter().zip(["kept", "gone"]) {
        let out = rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), call).await })
            .expect("the call in flight ends within 30 s")
            .unwrap()
            .unwrap_or_else(|e| panic!("the call on `{source}` failed: {e}\n{}", served.log()));
        assert_eq!(out.text_joined(), format!("done {source}-1"));
    }

    // The same MCP client hears the change, and lists and calls the new server's tool.
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while client.contains("gw.gone__slow") || !client.contains("gw.added__slow") {
            tokio::time::timeout_at(deadline, heard.changed())
                .await
                .expect("tools/list_changed within 30 s");
        }
    });
    let out = rt
        .block_on(client.call("gw.added__slow", json!({"tag": "added-1", "ms": 10})))
        .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
    assert_eq!(out.text_joined(), "done added-1");
    let out = rt
        .block_on(client.call("gw.kept__slow", json!({"tag": "kept-2", "ms": 10})))
        .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
    assert_eq!(out.text_joined(), "done kept-2");
    let err = rt
        .block_on(client.call("gw.gone__slow", json!({"tag": "gone-2", "ms": 10})))
        .unwrap_err();
    assert!(err.message().contains("gone__slow"), "{err}");

    // The kept server is the process it was; the removed one's process has ended.
    assert_eq!(
        events(&kept_log, "boot").len(),
        1,
        "the kept server restarted"
    );
    assert_eq!(events(&added_log, "boot").len(), 1);
    until("the removed server's process ended", &served, || {
        !Path::new(&format!("/proc/{gone_pid}")).exists()
    });
    // The new policy is in force.
    assert_eq!(calc_status(&served), 403);

    // A file that does not load: refused, and everything goes on as it was.
    rewrite(&served, "version: 1\ntools: [\n", "refused");
    assert!(served.log().contains("the running configuration stays"));
    let out = rt
        .block_on(client.call("gw.added__slow", json!({"tag": "added-2", "ms": 10})))
        .unwrap_or_else(|e| panic!("{e}\n{}", served.log()));
    assert_eq!(out.text_joined(), "done added-2");
    assert_eq!(calc_status(&served), 403);
    assert!(served.process.exit_status().is_none(), "{}", served.log());
}
