//! Scopes per tool (`gateway.auth.oauth.tool_scopes`), through the real binary with tokens
//! of the real OpenID provider (runtime/tests/peers/oidc_issuer.mjs): a call of a tool whose
//! scopes the token lacks is answered `403` with `error="insufficient_scope"` and the scopes
//! the call needs in `WWW-Authenticate`, over REST, a REST batch and MCP; a token with them
//! calls it; other tools and API keys are not concerned.

use serde_json::{Value, json};

use crate::harness::{Served, peers, request_full, serve_with_env, tools_yaml};

const RESOURCE: &str = "http://gw.test/mcp";
const KEY: &str = "ci-key-scopes-5678";

fn serve(issuer: &peers::PeerProcess) -> Served {
    let gateway = format!(
        "gateway:\n  api_keys:\n    - {{name: ci, key: \"${{TG_KEY}}\", roles: [admin]}}\n  auth:\n    oauth:\n      resource: {RESOURCE}\n      required_scopes: [mcp]\n      tool_scopes: {{\"calc\": [\"tools:calc\"], \"c*\": [\"tools:c\"]}}\n      issuers:\n        - issuer: {}\n",
        issuer.url("")
    );
    serve_with_env(&tools_yaml("", &gateway), &[], &[("TG_KEY", KEY)])
}

/// A token of the provider for the gateway with `scope`.
fn token(issuer: &peers::PeerProcess, scope: &str) -> String {
    let body = json!({"kid": "k1", "claims": {"sub": "alice", "aud": RESOURCE, "scope": scope}})
        .to_string();
    let (status, _, token) = request_full(
        issuer.port(),
        "POST",
        "/admin/token",
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .unwrap();
    assert_eq!(status, 200, "{token}");
    token
}

/// `POST path` with `auth` (a header) and `body`: (status, WWW-Authenticate, body).
fn post(served: &Served, path: &str, auth: (&str, &str), body: &str) -> (u16, String, Value) {
    let headers = [
        auth,
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let (status, head, text) = request_full(served.port(), "POST", path, &headers, Some(body))
        .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", served.log()));
    let challenge = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("www-authenticate")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (
        status,
        challenge,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

const CALC: &str = r#"{"expression": "6*7"}"#;

#[test]
fn a_tool_s_own_scopes_are_required_over_rest_batches_and_mcp_with_a_step_up_challenge() {
    let issuer = peers::oidc_issuer();
    let served = serve(&issuer);
    let bearer = |t: &str| format!("Bearer {t}");
    let plain = bearer(&token(&issuer, "mcp"));
    let auth = ("Authorization", plain.as_str());

    // REST: 403, the challenge naming every scope the call needs (the gateway's and the
    // tool's, from both globs that match), the description the missing ones.
    let (status, challenge, body) = post(&served, "/tools/calc/call", auth, CALC);
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["kind"], "permission_denied", "{body}");
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp tools:c tools:calc\"")
            && challenge.contains("resource_metadata=\""),
        "{challenge}"
    );
    // A tool no glob names is not concerned.
    let (status, _, body) = post(
        &served,
        "/tools/jq/call",
        auth,
        r#"{"filter": ".", "input": {}}"#,
    );
    assert_eq!(status, 200, "{body}");

    // A batch holding the tool, and an MCP tools/call of it (either name form): the same.
    let batch = json!({"calls": [{"name": "jq", "arguments": {"filter": ".", "input": {}}}, {"name": "calc", "arguments": {"expression": "1"}}]}).to_string();
    let (status, challenge, _) = post(&served, "/calls", auth, &batch);
    assert_eq!(status, 403);
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    let mcp = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "calc", "arguments": {"expression": "1"}}}).to_string();
    let (status, challenge, _) = post(&served, "/mcp", auth, &mcp);
    assert_eq!(status, 403);
    assert!(
        challenge.contains("scope=\"mcp tools:c tools:calc\""),
        "{challenge}"
    );

    // The protected resource metadata lists the tools' scopes among those supported.
    let (status, meta) = crate::harness::get(
        served.port(),
        "/.well-known/oauth-protected-resource/mcp",
        &[],
    )
    .unwrap();
    assert_eq!(status, 200, "{meta}");
    let meta: Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(
        meta["scopes_supported"],
        json!(["mcp", "tools:c", "tools:calc"]),
        "{meta}"
    );

    // With the scopes, the call goes through; so does an API key's (its roles decide).
    let scoped = bearer(&token(&issuer, "mcp tools:calc tools:c"));
    let (status, _, body) = post(
        &served,
        "/tools/calc/call",
        ("Authorization", &scoped),
        CALC,
    );
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = post(&served, "/tools/calc/call", ("X-API-Key", KEY), CALC);
    assert_eq!(status, 200, "{body}");
    // One of the two scopes is not enough.
    let half = bearer(&token(&issuer, "mcp tools:calc"));
    let (status, _, body) = post(&served, "/tools/calc/call", ("Authorization", &half), CALC);
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`tools:c`"),
        "{body}"
    );
}

#[test]
fn check_refuses_a_tool_scopes_glob_that_does_not_compile_and_a_scope_with_a_space() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    let gateway = format!(
        "gateway:\n  auth:\n    oauth:\n      resource: {RESOURCE}\n      tool_scopes: {{\"[oops\": [a], \"calc\": [\"tools calc\"]}}\n      issuers:\n        - issuer: http://127.0.0.1:9\n"
    );
    std::fs::write(&config, tools_yaml("", &gateway)).unwrap();
    let out = std::process::Command::new(crate::harness::BIN)
        .args(["check", &config.display().to_string()])
        .env("RUST_LOG", "warn,rmcp=off")
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("`tool_scopes`: `[oops` is not a valid name or glob"),
        "{said}"
    );
    assert!(
        said.contains("`tool_scopes` of `calc`: give one or more scope names"),
        "{said}"
    );
}
