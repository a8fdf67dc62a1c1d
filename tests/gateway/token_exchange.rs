//! Token exchange on behalf of the caller (RFC 8693, `oauth2: {grant: token_exchange}`),
//! through the real binary, against real peers: the callers' tokens come from the OpenID
//! provider (runtime/tests/peers/oidc_issuer.mjs), the gateway exchanges them at an
//! authorization server implementing RFC 8693 (runtime/tests/peers/token_exchange.mjs, npm
//! `@jmondi/oauth2-server`, which verifies each subject token against the provider's JWKS),
//! and the upstream — an MCP server on the Python SDK, and the same server's plain HTTP route
//! as an OpenAPI source — takes only the exchange server's tokens for itself
//! (runtime/tests/peers/oauth_mcp_server.py). The upstream sees the caller as `sub` in a token
//! meant for it, never the caller's own token; one exchange serves a caller's calls until the
//! token nears its end; a 401 costs one new exchange; a caller with an API key is refused.

use serde_json::{Value, json};

use crate::harness::{Served, peers, request, serve_with_env, tools_yaml};

const SECRET: &str = "gw-exchange-secret-4c1d9e";
const RESOURCE: &str = "http://gw.test/mcp";
const KEY: &str = "ci-key-exchange-0987";

/// The peers of one test: the provider, the exchange server (tokens living `ttl` s), the
/// upstream taking the exchange server's tokens.
struct Peers {
    provider: peers::PeerProcess,
    exchange: peers::PeerProcess,
    upstream: peers::PeerProcess,
}

fn start(ttl: u64) -> Peers {
    start_for(ttl, RESOURCE, "streamable-http")
}

/// [`start`], the exchange server taking subject tokens for `audience` only, the MCP server
/// speaking `transport`.
fn start_for(ttl: u64, audience: &str, transport: &str) -> Peers {
    let provider = peers::oidc_issuer();
    let exchange = peers::token_exchange(&provider.url(""), audience, &format!("gw:{SECRET}"), ttl);
    let upstream = peers::oauth_mcp_server(&exchange.url(""), transport);
    Peers {
        provider,
        exchange,
        upstream,
    }
}

/// The gateway: callers by the provider's tokens (or the API key `ci`), the MCP server
/// `tickets` and the OpenAPI source `api` both with a token exchange for the upstream.
fn serve(p: &Peers, spec_dir: &std::path::Path) -> Served {
    serve_over(p, spec_dir, "http", "/mcp")
}

/// [`serve`], the MCP server reached over `key` (`http` or `sse`) at `path`.
fn serve_over(p: &Peers, spec_dir: &std::path::Path, key: &str, path: &str) -> Served {
    let url = p.upstream.url(path);
    let resource = p.upstream.url("/mcp");
    let oauth2 = format!(
        "{{grant: token_exchange, token_url: \"{}\", client_id: gw, client_secret: \"${{GW_SECRET}}\", resource: \"{resource}\", scopes: [tickets.read]}}",
        p.exchange.url("/token")
    );
    let spec = spec_dir.join("api.yaml");
    std::fs::write(
        &spec,
        format!(
            "openapi: 3.0.3\ninfo: {{title: whoami, version: '1'}}\nservers: [{{url: \"{}\"}}]\npaths:\n  /api/whoami:\n    get:\n      operationId: whoami\n      security: [{{bearer: []}}]\n      responses:\n        '200': {{description: the token's claims}}\ncomponents:\n  securitySchemes:\n    bearer: {{type: http, scheme: bearer}}\n",
            p.upstream.url("")
        ),
    )
    .unwrap();
    let entry = format!(
        "    - id: tickets\n      {key}:\n        url: \"{url}\"\n        oauth2: {oauth2}\n"
    );
    let extra = format!(
        "gateway:\n  api_keys:\n    - {{name: ci, key: \"${{TG_KEY}}\", roles: [admin]}}\n  auth:\n    oauth:\n      resource: {RESOURCE}\n      issuers:\n        - issuer: {}\n",
        p.provider.url("")
    );
    let yaml = tools_yaml(&entry, &extra).replacen(
        "tools:\n",
        &format!(
            "tools:\n  openapi:\n    - id: api\n      spec: \"{}\"\n      allow_private: true\n      auth: {{oauth2: {oauth2}}}\n",
            spec.display()
        ),
        1,
    );
    serve_with_env(&yaml, &[], &[("GW_SECRET", SECRET), ("TG_KEY", KEY)])
}

/// A token of the provider for the gateway, naming `sub` as the caller.
fn caller_token(p: &Peers, sub: &str) -> String {
    let body = json!({"kid": "k1", "claims": {"sub": sub, "aud": RESOURCE}}).to_string();
    let (status, token) = request(
        p.provider.port(),
        "POST",
        "/admin/token",
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .unwrap();
    assert_eq!(status, 200, "{token}");
    token
}

/// `POST /tools/{tool}/call` with `{}` and `auth` (a header): (status, body).
fn call(served: &Served, tool: &str, auth: (&str, &str)) -> (u16, Value) {
    let (status, text) = request(
        served.port(),
        "POST",
        &format!("/tools/{tool}/call"),
        &[("Content-Type", "application/json"), auth],
        Some("{}"),
    )
    .unwrap_or_else(|e| panic!("call {tool}: {e}\n{}", served.log()));
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The claims of the token the upstream saw for `tool` called with `token`.
fn whoami(served: &Served, tool: &str, token: &str) -> Value {
    let bearer = format!("Bearer {token}");
    let (status, body) = call(served, tool, ("Authorization", &bearer));
    assert_eq!(status, 200, "{body}\n{}", served.log());
    let text = body["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("{tool} answered {body}"))
}

/// How many exchanges the exchange server answered with `status` (for subject `sub`, or any).
fn exchanges(p: &Peers, sub: Option<&str>, status: u16) -> usize {
    let end = format!("status={status}");
    p.exchange
        .log()
        .lines()
        .filter(|l| l.starts_with("TX-TOKEN grant=exchange client=gw ") && l.ends_with(&end))
        .filter(|l| sub.is_none_or(|s| l.contains(&format!(" sub={s} "))))
        .count()
}

fn refused(p: &Peers, what: &str) -> usize {
    let prefix = format!("RS-TOKEN refused{what}");
    p.upstream
        .log()
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .count()
}

fn assert_nothing_secret(served: &Served, tokens: &[&str]) {
    let log = served.log();
    assert!(
        !log.contains(SECRET),
        "the client secret is in the gateway's output"
    );
    for t in tokens {
        assert!(
            !log.contains(t),
            "a caller's token is in the gateway's output"
        );
    }
}

#[test]
fn an_mcp_server_sees_the_exchanged_token_of_each_caller_and_one_exchange_serves_many_calls() {
    let p = start(3600);
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&p, dir.path());
    let alice = caller_token(&p, "alice");
    let bob = caller_token(&p, "bob");

    // The upstream saw a token of the exchange server (it takes no other), for itself, naming
    // alice, obtained by `gw`: not alice's own token (whose audience is the gateway).
    let claims = whoami(&served, "tickets.whoami", &alice);
    assert_eq!(claims["sub"], "alice", "{claims}");
    assert_eq!(claims["aud"], json!(p.upstream.url("/mcp")), "{claims}");
    assert_eq!(claims["client_id"], "gw", "{claims}");
    assert_eq!(claims["scope"], "tickets.read", "{claims}");
    assert_eq!(exchanges(&p, Some("alice"), 200), 1, "{}", p.exchange.log());

    // Alice's second call reuses her exchanged token; bob gets his own.
    assert_eq!(whoami(&served, "tickets.whoami", &alice), claims);
    assert_eq!(exchanges(&p, Some("alice"), 200), 1, "{}", p.exchange.log());
    let theirs = whoami(&served, "tickets.whoami", &bob);
    assert_eq!(theirs["sub"], "bob", "{theirs}");
    assert_eq!(exchanges(&p, Some("bob"), 200), 1, "{}", p.exchange.log());
    assert_eq!(refused(&p, ""), 0, "{}", p.upstream.log());

    // The upstream stops taking the tokens it has seen: alice's next call is refused once
    // (HTTP 401), exchanged again, sent again, and succeeds.
    let (status, body) =
        request(p.upstream.port(), "POST", "/admin/revoke", &[], Some("")).unwrap();
    assert_eq!(status, 200, "{body}");
    let again = whoami(&served, "tickets.whoami", &alice);
    assert_eq!(again["sub"], "alice", "{again}");
    assert!(refused(&p, " revoked") >= 1, "{}", p.upstream.log());
    assert_eq!(exchanges(&p, Some("alice"), 200), 2, "{}", p.exchange.log());
    assert_nothing_secret(&served, &[&alice, &bob]);
}

#[test]
fn an_openapi_source_sends_the_exchanged_token_and_an_api_key_caller_is_told_why_not() {
    let p = start(3600);
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&p, dir.path());
    let carol = caller_token(&p, "carol");

    let (status, body) = call(
        &served,
        "api.whoami",
        ("Authorization", &format!("Bearer {carol}")),
    );
    assert_eq!(status, 200, "{body}\n{}", served.log());
    let claims = body
        .get("structuredContent")
        .cloned()
        .or_else(|| {
            body["content"][0]["text"]
                .as_str()
                .and_then(|t| serde_json::from_str(t).ok())
        })
        .unwrap_or_else(|| panic!("api.whoami answered {body}"));
    assert_eq!(claims["sub"], "carol", "{claims}");
    assert_eq!(claims["aud"], json!(p.upstream.url("/mcp")), "{claims}");
    let (status, _) = call(
        &served,
        "api.whoami",
        ("Authorization", &format!("Bearer {carol}")),
    );
    assert_eq!(status, 200);
    assert_eq!(exchanges(&p, Some("carol"), 200), 1, "{}", p.exchange.log());

    // An API key has no token to exchange: refused before anything is sent, saying so.
    for tool in ["api.whoami", "tickets.whoami"] {
        let (status, body) = call(&served, tool, ("X-API-Key", KEY));
        assert_eq!(status, 403, "{tool}: {body}");
        assert_eq!(body["kind"], "permission_denied", "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("token_exchange") && message.contains("without one"),
            "{body}"
        );
    }
    assert_eq!(exchanges(&p, None, 200), 1, "{}", p.exchange.log());
    assert_nothing_secret(&served, &[&carol]);
}

#[test]
fn an_exchanged_token_is_replaced_before_it_expires() {
    // The exchange server's tokens live 6 s; the gateway keeps one for half that, so after
    // 3.5 s the caller's next call is exchanged again, and the upstream never sees an expired
    // token.
    let p = start(6);
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&p, dir.path());
    let dave = caller_token(&p, "dave");
    let before = whoami(&served, "tickets.whoami", &dave);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let after = whoami(&served, "tickets.whoami", &dave);
    let iat = |c: &Value| c["iat"].as_u64().unwrap_or_else(|| panic!("no iat: {c}"));
    assert!(iat(&after) > iat(&before), "{before} then {after}");
    assert_eq!(exchanges(&p, Some("dave"), 200), 2, "{}", p.exchange.log());
    assert_eq!(refused(&p, ""), 0, "{}", p.upstream.log());
}

#[test]
fn a_subject_token_the_exchange_server_refuses_is_the_call_s_permission_denied() {
    // The exchange server takes subject tokens for another audience only: the gateway accepts
    // the caller's token, the exchange server answers `invalid_grant`; the call is
    // `permission_denied` naming the server, showing neither the caller's token nor the secret.
    let p = start_for(3600, "http://someone-else.test/", "streamable-http");
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&p, dir.path());
    let eve = caller_token(&p, "eve");
    let (status, body) = call(
        &served,
        "tickets.whoami",
        ("Authorization", &format!("Bearer {eve}")),
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["kind"], "permission_denied", "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("MCP server `tickets`: OAuth2 token exchange (RFC 8693)")
            && message.contains("invalid_grant"),
        "{body}"
    );
    assert_eq!(exchanges(&p, Some("-"), 400), 1, "{}", p.exchange.log());
    assert!(
        p.exchange
            .log()
            .contains("TX-REFUSED ERR_JWT_CLAIM_VALIDATION_FAILED"),
        "{}",
        p.exchange.log()
    );

    // An expired caller token never reaches the exchange: the gateway refuses it (401).
    let body =
        json!({"kid": "k1", "claims": {"sub": "eve", "aud": RESOURCE, "exp": 1}}).to_string();
    let (_, expired) = request(
        p.provider.port(),
        "POST",
        "/admin/token",
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .unwrap();
    let (status, _) = call(
        &served,
        "tickets.whoami",
        ("Authorization", &format!("Bearer {expired}")),
    );
    assert_eq!(status, 401);
    assert_eq!(exchanges(&p, None, 400), 1, "{}", p.exchange.log());
    assert_nothing_secret(&served, &[&eve, &expired]);
}

#[test]
fn a_legacy_sse_server_gets_each_caller_s_exchanged_token_on_its_own_stream() {
    let p = start_for(3600, RESOURCE, "sse");
    let dir = tempfile::tempdir().unwrap();
    let served = serve_over(&p, dir.path(), "sse", "/sse");
    let frank = caller_token(&p, "frank");
    let grace = caller_token(&p, "grace");
    let claims = whoami(&served, "tickets.whoami", &frank);
    assert_eq!(
        (&claims["sub"], &claims["aud"]),
        (&json!("frank"), &json!(p.upstream.url("/mcp"))),
        "{claims}"
    );
    assert_eq!(whoami(&served, "tickets.whoami", &grace)["sub"], "grace");
    assert_eq!(whoami(&served, "tickets.whoami", &frank)["sub"], "frank");
    assert_eq!(exchanges(&p, None, 200), 2, "{}", p.exchange.log());
    assert_nothing_secret(&served, &[&frank, &grace]);
}
