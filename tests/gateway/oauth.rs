//! The gateway as an OAuth 2.1 resource server (`gateway.auth.oauth`), against a real OpenID
//! provider (runtime/tests/peers/oidc_issuer.mjs, npm oauth2-mock-server): tokens it issues are
//! checked against its discovery document and JWKS; each kind of bad token gets its 401 (or 403
//! for a missing scope) with the RFC 6750 challenge naming the RFC 9728 metadata; a key the
//! provider adds later is picked up without a restart; API keys keep working beside tokens.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::harness::{self, Served, peers, request_full, serve_with_env, tools_yaml};

const RESOURCE: &str = "http://gw.test/mcp";
const METADATA: &str = "http://gw.test/.well-known/oauth-protected-resource/mcp";
const KEY: &str = "ci-key-0123456789";

/// tools.yaml: `calc` only for role `admin`; an API key `ci` (role admin); OAuth with the
/// issuer at `issuer`, roles from the `roles` claim, scope `tools:admin` → role admin, scope
/// `mcp` required; `extra` more lines of the `oauth:` mapping.
fn yaml(issuer: &str, extra: &str) -> String {
    let gateway = format!(
        "gateway:\n  api_keys:\n    - {{name: ci, key: \"${{TG_KEY}}\", roles: [admin]}}\n  auth:\n    oauth:\n      resource: {RESOURCE}\n      required_scopes: [mcp]\n      issuers:\n        - issuer: {issuer}\n          roles_claim: roles\n          scope_roles: {{\"tools:admin\": admin}}\n{extra}"
    );
    let base = tools_yaml("", &gateway);
    let old = "policy:\n  defaults:\n    timeout_ms: 30000\n";
    assert!(base.contains(old), "tools.yaml's policy section moved");
    base.replace(
        old,
        &format!("{old}  rules:\n    - {{tools: [calc], roles: [admin]}}\n"),
    )
}

fn serve(issuer: &peers::PeerProcess, extra: &str) -> Served {
    serve_with_env(&yaml(&issuer.url(""), extra), &[], &[("TG_KEY", KEY)])
}

/// A token from the provider's admin route: signed with key `kid`, `claims` over the defaults
/// (iss, iat, exp in an hour, nbf), `header` over the protected header.
fn mint(issuer: &peers::PeerProcess, kid: &str, claims: Value, header: Value) -> String {
    let body = json!({"kid": kid, "claims": claims, "header": header}).to_string();
    let (status, _, token) = request_full(
        issuer.port(),
        "POST",
        "/admin/token",
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .expect("the provider mints a token");
    assert_eq!(status, 200, "{token}\n{}", issuer.log());
    token
}

/// `v` as unpadded base64url JSON: one part of a hand-made token.
fn b64(v: Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

/// The value of header `name` in a response head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The claims of a token the gateway should accept, `over` set on top.
fn good(over: Value) -> Value {
    let mut claims = json!({"sub": "alice", "aud": RESOURCE, "scope": "mcp", "roles": ["reader"]});
    for (k, v) in over.as_object().unwrap() {
        claims[k] = v.clone();
    }
    claims
}

/// (status, WWW-Authenticate, body) of `method path` with `Authorization: Bearer token`.
fn with_token(
    served: &Served,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> (u16, String, String) {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    if path == "/mcp" {
        headers.push(("Accept", "application/json, text/event-stream"));
    }
    let (status, head, body) = request_full(served.port(), method, path, &headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", served.log()));
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    (status, challenge, body)
}

fn listed(served: &Served, token: &str) -> Vec<String> {
    let (status, _, body) = with_token(served, "GET", "/tools", token, None);
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn calc(served: &Served, token: &str) -> (u16, Value) {
    let (status, _, body) = with_token(
        served,
        "POST",
        "/tools/calc/call",
        token,
        Some(r#"{"expression": "6*7"}"#),
    );
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

#[test]
fn a_token_s_roles_and_scopes_decide_what_its_caller_lists_and_calls_and_api_keys_still_work() {
    let issuer = peers::oidc_issuer();
    let served = serve(&issuer, "");

    // A reader (roles claim) sees the tools but not calc, and may not call it.
    let reader = mint(&issuer, "k1", good(json!({})), json!({}));
    let tools = listed(&served, &reader);
    assert!(tools.contains(&"current_time".to_string()), "{tools:?}");
    assert!(!tools.contains(&"calc".to_string()), "{tools:?}");
    let (status, body) = calc(&served, &reader);
    assert_eq!(
        (status, body["kind"].as_str()),
        (403, Some("permission_denied")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("admin"),
        "{body}"
    );

    // The scope tools:admin maps to role admin: calc is listed and runs. The token comes from
    // the provider's own token endpoint (client credentials, audience = the resource), signed
    // with its EC key or its RSA key (it takes them in turn): both kinds verify.
    for _ in 0..2 {
        let form = format!(
            "grant_type=client_credentials&client_id=agent-7&scope=mcp%20tools:admin&aud={}",
            RESOURCE
        );
        let (status, _, answer) = request_full(
            issuer.port(),
            "POST",
            "/token",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(&form),
        )
        .unwrap();
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let admin = answer["access_token"].as_str().unwrap();
        assert!(listed(&served, admin).contains(&"calc".to_string()));
        let (status, body) = calc(&served, admin);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["structuredContent"]["value"], json!(42), "{body}");
    }

    // The API key still works, by either header.
    let (status, body) = calc(&served, KEY);
    assert_eq!(status, 200, "{body}");
    let (status, _, _) =
        request_full(served.port(), "GET", "/tools", &[("X-API-Key", KEY)], None).unwrap();
    assert_eq!(status, 200);

    // The same token over MCP: initialize opens a session, bound to this caller. Another
    // subject's token (even with the same `sub` claim value as an API key's name) and the API
    // key are refused on it; a session id nobody opened is not found.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let bearer = format!("Bearer {reader}");
    let (status, head, body) = request_full(
        served.port(),
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(init),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serverInfo"), "{body}");
    let session = header(&head, "mcp-session-id").expect("a session id");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let on_session = |credential: &str, id: &str| {
        let bearer = format!("Bearer {credential}");
        request_full(
            served.port(),
            "POST",
            "/mcp",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", id),
                ("Mcp-Protocol-Version", "2025-06-18"),
            ],
            Some(list),
        )
        .unwrap()
        .0
    };
    assert_eq!(on_session(&reader, &session), 200);
    let bob = mint(&issuer, "k1", good(json!({"sub": "bob"})), json!({}));
    let ci = mint(&issuer, "k1", good(json!({"sub": "ci"})), json!({}));
    assert_eq!(on_session(&bob, &session), 403);
    assert_eq!(on_session(&ci, &session), 403);
    assert_eq!(on_session(KEY, &session), 403);
    assert_eq!(on_session(&reader, "not-a-session-anyone-opened"), 404);

    // Two credential headers: which one counts is not guessed.
    let (status, _, body) = request_full(
        served.port(),
        "GET",
        "/tools",
        &[("Authorization", &bearer), ("Authorization", "Bearer nope")],
        None,
    )
    .unwrap();
    assert_eq!(status, 400, "{body}");
    let (status, head, body) = request_full(
        served.port(),
        "GET",
        "/tools",
        &[("X-API-Key", KEY), ("X-API-Key", "another")],
        None,
    )
    .unwrap();
    assert_eq!(status, 400, "{body}");
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"invalid_request\""),
        "{challenge}"
    );

    // A token without `kid`, signed with the issuer's only RSA key: that key is the one.
    let kidless = mint(&issuer, "k1", good(json!({})), json!({"kid": null}));
    assert!(!kidless.is_empty());
    let (status, _, body) = with_token(&served, "GET", "/tools", &kidless, None);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn each_kind_of_bad_token_gets_a_401_or_403_that_says_why_and_points_at_the_metadata() {
    let issuer = peers::oidc_issuer();
    // A second provider: its keys are not the first one's.
    let rogue = peers::oidc_issuer();
    let served = serve(&issuer, "");
    let now = now();
    let real = mint(&issuer, "k1", good(json!({})), json!({}));
    let claims_part = real.split('.').nth(1).unwrap().to_string();
    // HS256 "signed" with the provider's public RSA modulus as the secret: the classic
    // algorithm confusion. And an unsigned token.
    let jwks: Value = serde_json::from_str(
        &request_full(issuer.port(), "GET", "/jwks", &[], None)
            .unwrap()
            .2,
    )
    .unwrap();
    let n = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|k| k["n"].as_str())
        .expect("an RSA key in the JWKS")
        .to_string();
    let hs256 = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: Some("k1".into()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
        },
        &good(json!({"iss": issuer.url(""), "exp": now + 600})),
        &jsonwebtoken::EncodingKey::from_secret(n.as_bytes()).unwrap(),
    )
    .unwrap();
    let none = format!(
        "{}.{claims_part}.",
        b64(json!({"alg": "none", "typ": "JWT"}))
    );
    let forged_iss = mint(
        &rogue,
        "k1",
        good(json!({"iss": issuer.url("")})),
        json!({}),
    );

    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "expired",
            mint(&issuer, "k1", good(json!({"exp": now - 3600})), json!({})),
            401,
            "expired",
        ),
        (
            "not yet valid",
            mint(&issuer, "k1", good(json!({"nbf": now + 3600})), json!({})),
            401,
            "not valid yet",
        ),
        (
            "another issuer",
            mint(&rogue, "k1", good(json!({})), json!({})),
            401,
            "are not accepted",
        ),
        (
            "another audience",
            mint(
                &issuer,
                "k1",
                good(json!({"aud": "http://other.test"})),
                json!({}),
            ),
            401,
            "audience",
        ),
        (
            "no audience",
            mint(&issuer, "k1", good(json!({"aud": null})), json!({})),
            401,
            "`aud`",
        ),
        (
            "no expiry",
            mint(&issuer, "k1", good(json!({"exp": null})), json!({})),
            401,
            "`exp`",
        ),
        (
            "a key the issuer never had",
            mint(&issuer, "k1", good(json!({})), json!({"kid": "made-up"})),
            401,
            "no key `made-up`",
        ),
        (
            "signed by another provider's key",
            forged_iss,
            401,
            "signature",
        ),
        ("algorithm confusion", hs256, 401, "HS256"),
        ("unsigned", none, 401, "alg: none"),
        ("malformed", "abc.def.ghi".into(), 401, "not a JWS"),
        (
            "oversized",
            format!("{}.{}.sig", "a".repeat(20_000), claims_part),
            401,
            "longer than",
        ),
        (
            "no subject",
            mint(&issuer, "k1", good(json!({"sub": null})), json!({})),
            401,
            "`sub`",
        ),
        (
            "an empty subject",
            mint(&issuer, "k1", good(json!({"sub": ""})), json!({})),
            401,
            "`sub`",
        ),
        (
            "without the required scope",
            mint(&issuer, "k1", good(json!({"scope": "other"})), json!({})),
            403,
            "`mcp`",
        ),
    ];
    for (what, token, want, reason) in &cases {
        for path in ["/tools", "/mcp"] {
            let method = if path == "/mcp" { "POST" } else { "GET" };
            let body =
                (path == "/mcp").then_some(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            let (status, challenge, body) = with_token(&served, method, path, token, body);
            assert_eq!(status, *want, "{what} on {path}: {body}");
            assert!(body.contains(reason), "{what} on {path}: {body}");
            assert!(
                challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA}\"")),
                "{what}: {challenge}"
            );
            let code = if *want == 403 {
                "insufficient_scope"
            } else {
                "invalid_token"
            };
            assert!(
                challenge.contains(&format!("error=\"{code}\"")),
                "{what}: {challenge}"
            );
            if *want == 403 {
                assert!(challenge.contains("scope=\"mcp\""), "{challenge}");
            }
            // Nothing of the token comes back.
            let signature = token.rsplit('.').next().unwrap_or_default();
            assert!(
                signature.len() < 8 || !body.contains(signature),
                "{what}: the answer holds the token: {body}"
            );
        }
    }

    // No credential at all: 401 with the challenge and no error code (RFC 6750 §3.1).
    let (status, head, _) = request_full(served.port(), "GET", "/tools", &[], None).unwrap();
    assert_eq!(status, 401);
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains(METADATA) && !challenge.contains("error="),
        "{challenge}"
    );
    // Only the metadata's own URL is open: a path that merely starts like it is not.
    for path in [
        "/.well-known/oauth-protected-resourceX",
        "/.well-known/oauth-protected-resource/mcp/tools",
    ] {
        let (status, _, body) = request_full(served.port(), "GET", path, &[], None).unwrap();
        assert_eq!(status, 401, "{path}: {body}");
    }

    // The metadata itself needs no credential.
    let (status, _, body) = request_full(
        served.port(),
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["resource"], RESOURCE);
    assert_eq!(doc["authorization_servers"], json!([issuer.url("")]));
    assert_eq!(doc["scopes_supported"], json!(["mcp", "tools:admin"]));
    // Nothing about a token is in the gateway's log either.
    let log = served.log();
    for (_, token, _, _) in &cases {
        let signature = token.rsplit('.').next().unwrap_or_default();
        assert!(signature.len() < 8 || !log.contains(signature), "{log}");
    }
}

fn jwks_fetches(issuer: &peers::PeerProcess) -> usize {
    issuer.log().matches("OIDC-REQ GET /jwks").count()
}

#[test]
fn a_key_the_provider_adds_later_is_used_without_a_restart_and_made_up_keys_do_not_flood_it() {
    let issuer = peers::oidc_issuer();
    // A second between fetches (the fetch deadline is the floor, so it is a second too).
    let served = serve(
        &issuer,
        "      jwks_min_refresh_s: 1\n      jwks_timeout_ms: 1000\n      clock_skew_s: 0\n",
    );
    let first = mint(&issuer, "k1", good(json!({})), json!({}));
    assert!(!listed(&served, &first).is_empty());
    // A token that expires in two seconds: accepted now (and so remembered as checked).
    let short_exp = now() + 2;
    let short = mint(&issuer, "k1", good(json!({"exp": short_exp})), json!({}));
    assert!(!listed(&served, &short).is_empty());
    assert_eq!(jwks_fetches(&issuer), 1, "{}", issuer.log());

    let (status, _, _) = request_full(
        issuer.port(),
        "POST",
        "/admin/rotate",
        &[("Content-Type", "application/json")],
        Some(r#"{"kid": "k2", "alg": "RS256"}"#),
    )
    .unwrap();
    assert_eq!(status, 204);
    // The least time between two fetches (1 s here) passes: the new key is fetched on the
    // first token that names it.
    std::thread::sleep(Duration::from_millis(1100));
    let rotated = mint(&issuer, "k2", good(json!({})), json!({}));
    let (status, _, body) = with_token(&served, "GET", "/tools", &rotated, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(jwks_fetches(&issuer), 2, "{}", issuer.log());

    // Tokens naming made-up keys, one after another: refused, and at most one more fetch per
    // second that passes (here one second between fetches), not one each.
    let flood = std::time::Instant::now();
    for i in 0..8 {
        let token = mint(
            &issuer,
            "k1",
            good(json!({})),
            json!({"kid": format!("x{i}")}),
        );
        let (status, _, body) = with_token(&served, "GET", "/tools", &token, None);
        assert_eq!(status, 401, "{body}");
    }
    let allowed = 2 + 1 + flood.elapsed().as_secs() as usize;
    assert!(jwks_fetches(&issuer) <= allowed, "{}", issuer.log());
    // The old key still works.
    let (status, _, _) = with_token(&served, "GET", "/tools", &first, None);
    assert_eq!(status, 200);

    // The short token expires: though remembered as checked, it is refused.
    while now() <= short_exp {
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, _, body) = with_token(&served, "GET", "/tools", &short, None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("expired"), "{body}");

    // The provider makes a new key under the old `kid` (k1): a token signed with it does not
    // verify with the key held, which makes the gateway fetch the JWKS again (once due).
    let (status, _, _) = request_full(
        issuer.port(),
        "POST",
        "/admin/rotate",
        &[("Content-Type", "application/json")],
        Some(r#"{"kid": "k1", "alg": "RS256"}"#),
    )
    .unwrap();
    assert_eq!(status, 204);
    std::thread::sleep(Duration::from_millis(1100));
    let fetches = jwks_fetches(&issuer);
    let renewed = mint(&issuer, "k1", good(json!({"jti": "renewed"})), json!({}));
    let (status, _, body) = with_token(&served, "GET", "/tools", &renewed, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(jwks_fetches(&issuer), fetches + 1, "{}", issuer.log());
}

#[test]
fn an_issuer_whose_keys_cannot_be_fetched_gets_a_503_naming_it() {
    // A port nothing listens on (taken, then let go).
    let closed = peers::free_port();
    let issuer = format!("http://127.0.0.1:{closed}");
    let served = serve_with_env(
        &yaml(&issuer, "      jwks_timeout_ms: 2000\n"),
        &[],
        &[("TG_KEY", KEY)],
    );
    let token = format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(json!({"alg": "RS256", "kid": "k1"})),
        b64(good(json!({"iss": issuer})))
    );
    let (status, _, body) = with_token(&served, "GET", "/tools", &token, None);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(&issuer), "{body}");
    // The API key does not depend on the provider.
    let (status, _) = calc(&served, KEY);
    assert_eq!(status, 200);
    drop(harness::get(served.port(), "/healthz", &[]));
}

#[test]
fn an_issuer_that_never_answers_gets_a_503_within_the_fetch_deadline() {
    // A provider that takes connections and never answers them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let issuer = format!("http://127.0.0.1:{port}");
    let served = serve_with_env(
        &yaml(&issuer, "      jwks_timeout_ms: 1000\n"),
        &[],
        &[("TG_KEY", KEY)],
    );
    let token = format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(json!({"alg": "ES256", "kid": "e1"})),
        b64(good(json!({"iss": issuer})))
    );
    // Several at once: they share the one fetch and each gets its answer.
    let answers: Vec<(u16, String)> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let (status, _, body) = with_token(&served, "GET", "/tools", &token, None);
                    (status, body)
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for (status, body) in answers {
        assert_eq!(status, 503, "{body}");
        assert!(body.contains(&issuer), "{body}");
    }
    let (status, _) = calc(&served, KEY);
    assert_eq!(status, 200);
}
