//! The gateway as an OAuth 2.0 client of its upstreams (`oauth2:` client credentials), against
//! a real OpenID provider (runtime/tests/peers/oidc_issuer.mjs, npm oauth2-mock-server, which
//! here accepts only the client `gw` with its secret), a real MCP resource server (the Python
//! SDK with a PyJWT token verifier, runtime/tests/peers/oauth_mcp_server.py) and a real A2A
//! agent (a2a-sdk): the upstream sees a token the provider issued to `gw` for that upstream;
//! one token serves many calls; it is replaced before it expires; an upstream's 401 costs one
//! new token and the call still succeeds; a wrong secret is the call's `permission_denied`
//! naming the server; the secret is in no output.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::harness::{self, Served, peers, request, serve_with_env, tools_yaml};

const SECRET: &str = "gw-secret-7f3a9c1e55";

/// How many token requests the provider answered with `status`.
fn tokens(issuer: &peers::PeerProcess, status: u16) -> usize {
    let end = format!("status={status}");
    issuer
        .log()
        .lines()
        .filter(|l| l.starts_with("OIDC-TOKEN client=gw ") && l.ends_with(&end))
        .count()
}

/// The lines the resource server printed about tokens it checked.
fn checked(server: &peers::PeerProcess, what: &str) -> usize {
    let prefix = format!("RS-TOKEN {what}");
    server
        .log()
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .count()
}

/// The `oauth2:` mapping (flow style) for client `gw` at `issuer`, asking for `resource`.
fn oauth2(issuer: &peers::PeerProcess, resource: &str) -> String {
    format!(
        "{{token_url: \"{}\", client_id: gw, client_secret: \"${{GW_SECRET}}\", resource: \"{resource}\", scopes: [tickets.read]}}",
        issuer.url("/token")
    )
}

fn serve_mcp(issuer: &peers::PeerProcess, transport: &str, url: &str, secret: &str) -> Served {
    let key = if transport == "sse" { "sse" } else { "http" };
    let entry = format!(
        "    - id: tickets\n      {key}:\n        url: \"{url}\"\n        oauth2: {}\n",
        oauth2(issuer, &resource_of(url))
    );
    serve_with_env(&tools_yaml(&entry, ""), &[], &[("GW_SECRET", secret)])
}

/// The resource the MCP server at `url` takes tokens for (its `/mcp` URL).
fn resource_of(url: &str) -> String {
    let base = url.rsplit_once('/').map_or(url, |(b, _)| b);
    format!("{base}/mcp")
}

/// `POST /tools/{tool}/call` with `{}`: (status, body).
fn call(served: &Served, tool: &str) -> (u16, Value) {
    let (status, text) = request(
        served.port(),
        "POST",
        &format!("/tools/{tool}/call"),
        &[("Content-Type", "application/json")],
        Some("{}"),
    )
    .unwrap_or_else(|e| panic!("call {tool}: {e}\n{}", served.log()));
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// The claims `tickets.whoami` reports for the token its call came with.
fn whoami(served: &Served) -> Value {
    let (status, body) = call(served, "tickets.whoami");
    assert_eq!(status, 200, "{body}\n{}", served.log());
    let text = body["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("whoami answered {body}"))
}

fn assert_no_secret(served: &Served) {
    assert!(
        !served.log().contains(SECRET),
        "the client secret is in the gateway's output"
    );
}

#[test]
fn an_mcp_server_over_streamable_http_gets_the_provider_s_token_and_a_fresh_one_after_a_401() {
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let url = server.url("/mcp");
    let served = serve_mcp(&issuer, "streamable-http", &url, SECRET);

    // Listing at start-up and two calls: the server saw a token the provider issued to `gw`,
    // for this server, with the scope asked; one token request served them all.
    let first = whoami(&served);
    let claims = whoami(&served);
    assert_eq!(first, claims);
    assert_eq!(
        (&claims["sub"], &claims["aud"], &claims["scope"]),
        (&json!("gw"), &json!(url), &json!("tickets.read")),
        "{claims}"
    );
    assert_eq!(tokens(&issuer, 200), 1, "{}", issuer.log());
    assert_eq!(checked(&server, "refused"), 0, "{}", server.log());

    // The server stops taking that token: the next call is refused once (HTTP 401), the
    // gateway fetches one new token and sends the request again; the call succeeds.
    let (status, body) = request(server.port(), "POST", "/admin/revoke", &[], Some("")).unwrap();
    assert_eq!(status, 200, "{body}");
    let again = whoami(&served);
    assert_eq!(again["sub"], "gw", "{again}");
    assert_eq!(checked(&server, "refused revoked"), 1, "{}", server.log());
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    // And the new token serves the calls after it.
    whoami(&served);
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    assert_no_secret(&served);
}

#[test]
fn a_token_is_replaced_before_it_expires_so_the_server_never_sees_an_expired_one() {
    // Tokens live 6 s; the gateway keeps one for half that (its margin is 30 s, at most half
    // the lifetime), so after 3.5 s the next call has a new token, which the server takes.
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}"), "--ttl", "6"]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let served = serve_mcp(&issuer, "streamable-http", &server.url("/mcp"), SECRET);

    let before = whoami(&served);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let after = whoami(&served);
    let iat = |c: &Value| c["iat"].as_u64().unwrap_or_else(|| panic!("no iat: {c}"));
    assert!(iat(&after) > iat(&before), "{before} then {after}");
    assert_eq!(checked(&server, "refused"), 0, "{}", server.log());
    assert!(tokens(&issuer, 200) >= 2, "{}", issuer.log());
}

#[test]
fn an_mcp_server_over_legacy_sse_gets_the_token_on_the_stream_and_on_every_message() {
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "sse");
    let served = serve_mcp(&issuer, "sse", &server.url("/sse"), SECRET);

    let claims = whoami(&served);
    assert_eq!(claims["sub"], "gw", "{claims}");
    assert_eq!(claims["aud"], json!(server.url("/mcp")), "{claims}");
    assert_eq!(tokens(&issuer, 200), 1, "{}", issuer.log());

    // A refused message is sent again once with a new token.
    let (status, body) = request(server.port(), "POST", "/admin/revoke", &[], Some("")).unwrap();
    assert_eq!(status, 200, "{body}");
    let again = whoami(&served);
    assert_eq!(again["sub"], "gw", "{again}");
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    assert_no_secret(&served);
}

#[test]
fn a_wrong_client_secret_fails_the_call_as_permission_denied_naming_the_server() {
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let wrong = "not-the-secret-b81d2e";
    let served = serve_mcp(&issuer, "streamable-http", &server.url("/mcp"), wrong);

    let (status, body) = call(&served, "tickets.whoami");
    assert_ne!(status, 200, "{body}");
    let message = body.to_string();
    // The server could not be listed at start-up: the call says why, as the kind the token
    // endpoint's refusal is (waiting will not help), naming the server; no secret shown.
    assert_eq!(body["kind"], "permission_denied", "{body}");
    assert!(
        message.contains("MCP server `tickets`") && message.contains("invalid_client"),
        "{body}"
    );
    assert!(!message.contains(wrong), "{body}");
    assert!(
        !served.log().contains(wrong),
        "the wrong secret is in the log"
    );
    assert!(tokens(&issuer, 401) >= 1, "{}", issuer.log());
    assert_eq!(checked(&server, "ok"), 0, "{}", server.log());
}

/// Calls `agent.echo`; the claims of the bearer token each JSON-RPC request carried, as the
/// agent logged them (the token itself is a secret: the gateway redacts it from the answer).
fn agent_call(served: &Served, agent: &peers::PeerProcess) -> Vec<Value> {
    let (status, text) = request(
        served.port(),
        "POST",
        "/tools/agent.echo/call",
        &[("Content-Type", "application/json")],
        Some(r#"{"text":"hello"}"#),
    )
    .unwrap();
    assert_eq!(status, 200, "{text}\n{}", served.log());
    agent
        .log()
        .lines()
        .filter(|l| l.starts_with("A2A-REQ POST "))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("jwt-claims="))
        })
        .map(|part| {
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .unwrap_or_else(|_| panic!("a POST without a JWT: {part}"));
            serde_json::from_slice(&bytes).expect("JSON claims")
        })
        .collect()
}

#[test]
fn an_a2a_agent_gets_the_token_on_every_request_and_its_401_costs_one_new_token() {
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    // The agent refuses the first JSON-RPC request it gets, whatever it carries.
    let agent = peers::a2a_echo("v1", &["--refuse-first", "1"]);
    let resource = agent.url("/");
    let entry = format!(
        "    - id: agent\n      url: \"{}\"\n      streaming: false\n      auth: {{oauth2: {}}}\n",
        agent.url(""),
        oauth2(&issuer, &resource)
    );
    let yaml =
        harness::tools_yaml("", "").replacen("tools:\n", &format!("tools:\n  a2a:\n{entry}"), 1);
    let served = serve_with_env(&yaml, &[], &[("GW_SECRET", SECRET)]);

    // The refused request and its second try both carried a token of the provider for `gw`
    // and this agent; the second a new one.
    let seen = agent_call(&served, &agent);
    assert_eq!(seen.len(), 2, "{}", agent.log());
    for claims in &seen {
        assert_eq!(claims["sub"], "gw", "{claims}");
        assert_eq!(claims["aud"], json!(resource), "{claims}");
        assert_eq!(claims["iss"], json!(issuer.url("")), "{claims}");
    }
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    // The next call uses the new token: no token request.
    let seen = agent_call(&served, &agent);
    assert_eq!(seen.len(), 3, "{}", agent.log());
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    assert_no_secret(&served);
}

#[test]
fn a_token_endpoint_that_went_away_fails_the_call_promptly_naming_the_server() {
    let mut issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let served = serve_mcp(&issuer, "streamable-http", &server.url("/mcp"), SECRET);
    whoami(&served);

    // The provider is gone and the server refuses the token it has: a new one cannot be had.
    issuer.kill();
    let (status, body) = request(server.port(), "POST", "/admin/revoke", &[], Some("")).unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(&served, "tickets.whoami");
    assert_ne!(status, 200, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("MCP server `tickets`: OAuth2 token request to `127.0.0.1`"),
        "{body}"
    );
    // `network`, not `timeout`: the refused connection ended the call, not its deadline.
    assert_eq!(body["kind"], "network", "{body}");
    assert_no_secret(&served);
}

#[test]
fn without_a_token_url_the_server_s_metadata_names_the_token_endpoint_and_the_resource() {
    // The MCP server publishes its protected resource metadata (RFC 9728), naming the
    // provider; the provider's metadata (RFC 8414 / OpenID Connect discovery) names its token
    // endpoint. The resource the metadata names is asked for.
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let url = server.url("/mcp");
    let entry = format!(
        "    - id: tickets\n      http:\n        url: \"{url}\"\n        oauth2: {{client_id: gw, client_secret: \"${{GW_SECRET}}\"}}\n"
    );
    let served = serve_with_env(&tools_yaml(&entry, ""), &[], &[("GW_SECRET", SECRET)]);
    let claims = whoami(&served);
    assert_eq!(claims["sub"], "gw", "{claims}");
    assert_eq!(claims["aud"], json!(url), "{claims}");
    assert_eq!(tokens(&issuer, 200), 1, "{}", issuer.log());
    assert_no_secret(&served);
}

#[test]
fn a_server_that_refuses_even_a_fresh_token_is_permission_denied_after_one_retry() {
    // The gateway asks for a token for another resource: the provider issues it, the server
    // refuses it (wrong `aud`), and refuses the fresh one too. One retry, then the call's
    // `permission_denied` saying the token is not good for the server (not a dropped
    // connection, which a caller would retry).
    let issuer = peers::oidc_issuer_with(&["--client", &format!("gw:{SECRET}")]);
    let server = peers::oauth_mcp_server(&issuer.url(""), "streamable-http");
    let entry = format!(
        "    - id: tickets\n      http:\n        url: \"{}\"\n        oauth2: {}\n",
        server.url("/mcp"),
        oauth2(&issuer, "http://127.0.0.1:1/another-resource")
    );
    let served = serve_with_env(&tools_yaml(&entry, ""), &[], &[("GW_SECRET", SECRET)]);
    let (status, body) = call(&served, "tickets.whoami");
    assert_ne!(status, 200, "{body}");
    assert_eq!(body["kind"], "permission_denied", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("refused a fresh OAuth2 access token too"),
        "{body}"
    );
    assert_eq!(tokens(&issuer, 200), 2, "{}", issuer.log());
    assert_eq!(checked(&server, "ok"), 0, "{}", server.log());
    assert_no_secret(&served);
}
