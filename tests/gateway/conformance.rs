//! The MCP conformance suite's server scenarios, run in one go against server-everything
//! directly and against `toolgate serve` fronting it (mounted without prefix): toolgate must pass
//! every scenario server-everything passes, plus `dns-rebinding-protection`, which toolgate
//! itself must pass. Both totals are printed.
//!
//! The suite and server-everything listen on every interface, so everything runs in a network
//! namespace of its own (`unshare -rn`) where only loopback exists.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{self, BIN, peers};

/// Scenario name → (checks passed, checks failed), from the suite's `-o` folder (one
/// `<prefix>-<scenario>-<timestamp>/checks.json` per scenario).
fn results(dir: &Path) -> BTreeMap<String, (usize, usize)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("checks.json")) else {
            continue;
        };
        let Ok(Value::Array(checks)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        // `server-<scenario>-2026-11-29T23-51-16-855Z`
        let name = entry.file_name().to_string_lossy().into_owned();
        let name = name.strip_prefix("server-").unwrap_or(&name);
        let scenario = scenario_of(name).to_string();
        let passed = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        let failed = checks.iter().filter(|c| c["status"] == "FAILURE").count();
        out.insert(scenario, (passed, failed));
    }
    out
}

/// `<scenario>-2026-11-29T23-51-16-855Z` → `<scenario>`: cut at the first `-YYYY-MM-DDT`
/// (a search for `-20` would also stop at a time or milliseconds part such as `-20-` or `-204Z`,
/// and the direct and gateway runs would then name the scenario differently).
fn scenario_of(name: &str) -> &str {
    let bytes = name.as_bytes();
    let is_stamp = |i: usize| {
        let s = &bytes[i + 1..];
        s.len() >= 11
            && s[..4].iter().all(u8::is_ascii_digit)
            && s[4] == b'-'
            && s[5..7].iter().all(u8::is_ascii_digit)
            && s[7] == b'-'
            && s[8..10].iter().all(u8::is_ascii_digit)
            && s[10] == b'T'
    };
    (0..bytes.len())
        .find(|&i| bytes[i] == b'-' && is_stamp(i))
        .map_or(name, |i| &name[..i])
}

#[test]
fn scenario_names_lose_their_timestamp_whatever_its_digits() {
    for (folder, scenario) in [
        (
            "logging-set-level-2026-11-30T14-36-48-204Z",
            "logging-set-level",
        ),
        ("tools-list-2026-11-30T14-20-20-020Z", "tools-list"),
        (
            "server-sse-multiple-streams-2026-01-02T03-04-05-678Z",
            "server-sse-multiple-streams",
        ),
        ("no-stamp", "no-stamp"),
    ] {
        assert_eq!(scenario_of(folder), scenario, "{folder}");
    }
}

fn total(results: &BTreeMap<String, (usize, usize)>) -> (usize, usize) {
    results
        .values()
        .fold((0, 0), |(p, f), (a, b)| (p + a, f + b))
}

#[test]
fn toolgate_in_front_of_everything_passes_what_everything_passes_and_dns_rebinding() {
    let dir = tempfile::tempdir().unwrap();
    let entry = harness::everything_stdio_entry("everything", "prefix: false");
    let yaml = harness::tools_yaml(&entry, "");
    let config = dir.path().join("tools.yaml");
    std::fs::write(&config, yaml).unwrap();
    let direct = dir.path().join("direct");
    let gateway = dir.path().join("gateway");
    let node22 = peers::node22();
    let conformance = peers::conformance_js();
    let script = format!(
        r#"set -u
ip link set lo up
cd {root}
PORT=3001 {node} {everything} streamableHttp > {dir}/everything.log 2>&1 &
{bin} --config {config} serve --http 127.0.0.1:8787 > {dir}/toolgate.log 2>&1 &
for i in $(seq 1 600); do
  if {node} -e 'require("net").connect(3001,"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))' 2>/dev/null \
     && {node} -e 'require("http").get("http://127.0.0.1:8787/readyz",r=>process.exit(r.statusCode==200?0:1)).on("error",()=>process.exit(1))' 2>/dev/null; then break; fi
  sleep 0.1
done
echo "== direct"
{node22} {conformance} server --url http://127.0.0.1:3001/mcp -o {direct} 2>&1 | grep -E '^Total'
echo "== toolgate"
{node22} {conformance} server --url http://127.0.0.1:8787/mcp -o {gateway} 2>&1 | grep -E '^Total'
kill %1 %2 2>/dev/null
wait
"#,
        root = harness::repo_root().display(),
        node = peers::node().display(),
        everything = peers::everything_js().display(),
        bin = BIN,
        config = config.display(),
        dir = dir.path().display(),
        node22 = node22.display(),
        conformance = conformance.display(),
        direct = direct.display(),
        gateway = gateway.display(),
    );
    let started = Instant::now();
    let output = Command::new("timeout")
        .args(["900", "unshare", "-rn", "bash", "-c", &script])
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let log = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    let context = format!(
        "--- script output ---\n{stdout}\n{}\n--- toolgate log ---\n{}\n--- everything log (tail) ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        log("toolgate.log"),
        log("everything.log")
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let direct = results(&direct);
    let through = results(&gateway);
    assert!(
        direct.len() >= 30 && through.len() >= 30,
        "the suite did not run every scenario ({} direct, {} through toolgate) in {:?}\n{context}",
        direct.len(),
        through.len(),
        started.elapsed()
    );
    let (dp, df) = total(&direct);
    let (tp, tf) = total(&through);
    println!("conformance server scenarios, checks passed / failed:");
    println!("  server-everything directly:       {dp} passed, {df} failed");
    println!("  toolgate in front of it:          {tp} passed, {tf} failed");
    let mut regressions = Vec::new();
    for (scenario, (passed, failed)) in &direct {
        let clean = *failed == 0 && *passed > 0;
        let ours = through.get(scenario).copied().unwrap_or((0, 1));
        println!(
            "  {scenario:40} direct {passed}/{failed}  toolgate {}/{}",
            ours.0, ours.1
        );
        if clean && ours.1 > 0 {
            regressions.push(scenario.clone());
        }
    }
    assert!(
        regressions.is_empty(),
        "scenarios server-everything passes but toolgate in front of it fails: {regressions:?}\n{context}"
    );
    let dns = through.get("dns-rebinding-protection").copied();
    assert!(
        matches!(dns, Some((p, 0)) if p > 0),
        "toolgate must pass dns-rebinding-protection: {dns:?}\n{context}"
    );
    assert!(
        tp >= dp,
        "toolgate passed fewer checks ({tp}) than server-everything ({dp})\n{context}"
    );
    // The whole run is bounded (the suite has its own timeouts; this catches a hang).
    assert!(started.elapsed() < Duration::from_secs(600));
}

/// The checks of one client scenario's run (its `-o` folder): id → every status it got.
fn client_checks(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // `<dir>/auth/<scenario>-<timestamp>/checks.json`
    let runs = std::fs::read_dir(dir.join("auth"))
        .into_iter()
        .flatten()
        .flatten();
    for entry in runs {
        let Ok(text) = std::fs::read_to_string(entry.path().join("checks.json")) else {
            continue;
        };
        let Ok(Value::Array(checks)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        for c in checks {
            if let (Some(id), Some(status)) = (c["id"].as_str(), c["status"].as_str()) {
                out.entry(id.to_string())
                    .or_default()
                    .push(status.to_string());
            }
        }
    }
    out
}

#[test]
fn toolgate_as_an_oauth_client_passes_the_suite_s_client_credentials_and_discovery_scenarios() {
    // toolgate (`list`, through runtime/tests/peers/conformance_oauth_client.py) is the client
    // of each scenario's MCP server, with the scenario's client id and secret and no token
    // URL: the token endpoint is discovered. `client-credentials-basic`, `client-credentials-jwt`
    // (`private_key_jwt` with the scenario's ES256 key) and `resource-mismatch` must pass whole; the `metadata-*` scenarios (the metadata at each place a server may put
    // it) must see toolgate find the authorization server and ask it for a token (their
    // authorization-code checks need a user's login, which toolgate does not do).
    let dir = tempfile::tempdir().unwrap();
    let client = harness::repo_root().join("runtime/tests/peers/conformance_oauth_client.py");
    let scenarios = [
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
        "auth/resource-mismatch",
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
    ];
    let mut script = String::from("set -u\nip link set lo up\n");
    for s in scenarios {
        let out = dir.path().join(s.replace('/', "_"));
        script.push_str(&format!(
            "{node22} {conformance} client --command '{python} {client}' --scenario {s} -o {out} > {out}.log 2>&1\n",
            node22 = peers::node22().display(),
            conformance = peers::conformance_js().display(),
            python = peers::python3().display(),
            client = client.display(),
            out = out.display(),
        ));
    }
    let output = Command::new("timeout")
        .args(["600", "unshare", "-rn", "bash", "-c", &script])
        .env("TOOLGATE_BIN", BIN)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run unshare");
    let log = |s: &str| {
        std::fs::read_to_string(dir.path().join(format!("{}.log", s.replace('/', "_"))))
            .unwrap_or_default()
    };
    for s in scenarios {
        let checks = client_checks(&dir.path().join(s.replace('/', "_")));
        let context = format!(
            "{s}: {checks:?}\n{}\n{}",
            String::from_utf8_lossy(&output.stderr),
            log(s)
        );
        assert!(!checks.is_empty(), "no checks recorded\n{context}");
        let passed = |id: &str| {
            checks
                .get(id)
                .is_some_and(|v| v.iter().all(|st| st == "SUCCESS"))
        };
        if s.starts_with("auth/metadata-") {
            for id in [
                "authorization-server-metadata",
                "token-request",
                "valid-bearer-token",
            ] {
                assert!(passed(id), "{id}\n{context}");
            }
        } else {
            let failed: Vec<_> = checks
                .iter()
                .filter(|(_, v)| v.iter().any(|st| st == "FAILURE" || st == "WARNING"))
                .map(|(id, _)| id.clone())
                .collect();
            assert!(failed.is_empty(), "failed: {failed:?}\n{context}");
        }
        println!("{s}: {} checks, the ones asked for passed", checks.len());
    }
}
