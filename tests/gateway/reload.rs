//! Hot reload on SIGHUP: `toolgate serve` on a tools.yaml that is rewritten while it runs.
//! A new rule takes effect over REST and MCP (an MCP client hears `tools/list_changed` and no
//! longer lists the tool); a file whose policy does not compile is refused with its line and the
//! running policy stays; the process never stops on SIGHUP. API keys are replaced (a dropped key
//! is refused, a new one admitted, no key in the log) and so are the built-in tools' settings
//! (`files.root` moved). Sources are in reload_sources.rs.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Served, serve_with_env};
use crate::policy_code::{ADMIN, KEYS, READER, call, listed, mcp_client, runtime, yaml};

/// A rule allowing everything: the starting policy.
const OPEN: &str = "    - {tools: [jq], cel: \"true\"}\n";
/// `calc` for admins only, as a CEL rule.
const CALC_FOR_ADMINS: &str =
    "    - {tools: [calc], cel: \"'admin' in caller.roles\", reason: calc is for admins}\n";
/// A CEL expression that does not parse.
const BROKEN: &str = "    - {tools: [calc], cel: \"'admin' in (\", reason: broken}\n";

/// Writes `rules` into the served tools.yaml, sends SIGHUP and waits until the log has one more
/// line containing `outcome` than before.
fn reload(served: &mut Served, rules: &str, outcome: &str) {
    reload_text(served, &yaml(rules), outcome);
}

/// [`reload`] with `text` as the whole tools.yaml.
fn reload_text(served: &mut Served, text: &str, outcome: &str) {
    let before = served.log().matches(outcome).count();
    std::fs::write(served.dir.path().join("tools.yaml"), text).unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &served.process.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while served.log().matches(outcome).count() == before {
        assert!(
            Instant::now() < deadline,
            "no `{outcome}` within 30 s after SIGHUP\n{}",
            served.log()
        );
        assert!(
            served.process.exit_status().is_none(),
            "SIGHUP stopped the gateway\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn calc(served: &Served, key: &str) -> (u16, serde_json::Value) {
    call(
        served,
        "POST",
        "/tools/calc/call",
        key,
        Some(json!({"expression": "1+2"})),
    )
}

#[test]
fn sighup_applies_a_new_policy_and_refuses_a_broken_one() {
    let mut served = serve_with_env(&yaml(OPEN), &[], KEYS);
    assert_eq!(calc(&served, READER).0, 200);
    let rt = runtime();
    let client = rt.block_on(mcp_client(&served, READER));
    assert!(client.contains("gw.calc"), "{:?}", client.tools());
    let mut heard = client.watch_tools();

    reload(&mut served, CALC_FOR_ADMINS, "toolgate serve: reloaded");
    let (status, body) = calc(&served, READER);
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("calc is for admins"),
        "{body}"
    );
    assert_eq!(calc(&served, ADMIN).0, 200);
    assert!(!listed(&served, READER).contains(&"calc".to_string()));
    // The MCP client was told the list changed, listed again and lost `calc`.
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while client.contains("gw.calc") {
            tokio::time::timeout_at(deadline, heard.changed())
                .await
                .expect("tools/list_changed within 30 s");
        }
    });

    // A policy that does not compile: refused with its line in tools.yaml, the running one
    // stays.
    reload(&mut served, BROKEN, "refused");
    let log = served.log();
    assert!(log.contains("the running configuration stays"), "{log}");
    let line = 1 + yaml(BROKEN)
        .lines()
        .position(|l| l.contains("'admin' in ("))
        .unwrap();
    assert!(
        log.contains(&format!(
            "tools.yaml:{line}:28: the CEL policy does not compile"
        )),
        "{log}"
    );
    assert_eq!(calc(&served, READER).0, 403);
    assert_eq!(calc(&served, ADMIN).0, 200);

    // A file that does not even load: refused too, with its line.
    let before = served.log().matches("refused").count();
    std::fs::write(
        served.dir.path().join("tools.yaml"),
        "version: 1\npolicy: [\n",
    )
    .unwrap();
    std::process::Command::new("kill")
        .args(["-HUP", &served.process.pid().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while served.log().matches("refused").count() == before {
        assert!(Instant::now() < deadline, "{}", served.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(served.log().contains("tools.yaml:"), "{}", served.log());
    assert_eq!(calc(&served, READER).0, 403);

    // Back to the open policy: calc is the reader's again.
    reload(&mut served, OPEN, "toolgate serve: reloaded");
    assert_eq!(calc(&served, READER).0, 200);
    assert!(served.process.exit_status().is_none());
}

#[test]
fn sighup_replaces_the_api_keys_and_the_built_in_tools_settings() {
    // A third key's variable is set from the start; the first file does not name it.
    const NEWCOMER: &str = "newcomer-key-8901";
    let mut env = KEYS.to_vec();
    env.push(("TG_NEWCOMER", NEWCOMER));
    let mut served = serve_with_env(&yaml(OPEN), &[], &env);
    let shared = tempfile::tempdir().unwrap();
    std::fs::write(shared.path().join("note.txt"), "read after the reload").unwrap();
    let read_note = |served: &Served, key: &str| {
        call(
            served,
            "POST",
            "/tools/read_file/call",
            key,
            Some(json!({"path": "note.txt"})),
        )
    };
    assert_eq!(calc(&served, NEWCOMER).0, 401);
    assert_ne!(
        read_note(&served, ADMIN).0,
        200,
        "note.txt is not under the first root"
    );

    // The reader's key is dropped, the newcomer's added, and files.root moves.
    let next = yaml(OPEN)
        .replace(
            "    - {name: reader, key: \"${TG_READER}\", roles: [reader]}\n",
            "    - {name: newcomer, key: \"${TG_NEWCOMER}\", roles: [reader]}\n",
        )
        .replacen(
            &format!("    root: {}", crate::harness::repo_root().display()),
            &format!("    root: {}", shared.path().display()),
            1,
        );
    assert!(next.contains("newcomer") && next.contains(&shared.path().display().to_string()));
    reload_text(&mut served, &next, "toolgate serve: reloaded");
    let log = served.log();
    assert!(log.contains("API keys"), "{log}");

    assert_eq!(calc(&served, READER).0, 401, "the dropped key still works");
    assert_eq!(calc(&served, NEWCOMER).0, 200);
    assert_eq!(calc(&served, ADMIN).0, 200);
    let (status, body) = read_note(&served, ADMIN);
    assert_eq!(status, 200, "{body}");
    assert!(body.to_string().contains("read after the reload"), "{body}");
    assert!(!log.contains(NEWCOMER) && !log.contains(READER), "{log}");
}
