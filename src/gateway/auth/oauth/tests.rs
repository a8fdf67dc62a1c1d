use serde_json::json;

use super::*;

fn config(resource: &str) -> OAuthConfig {
    serde_json::from_value(json!({
        "resource": resource,
        "issuers": [{
            "issuer": "http://127.0.0.1:9/idp",
            "roles_claim": "realm_access.roles",
            "role_map": {"tool-readers": "reader"},
            "scope_roles": {"tools:write": "writer"},
        }],
        "required_scopes": ["mcp"],
    }))
    .unwrap()
}

#[test]
fn a_bearer_value_is_taken_for_a_jwt_only_with_three_base64url_parts() {
    for jwt in ["eyJh.eyJz.c2ln", "a-b_c.d.e", "a.b."] {
        assert!(looks_like_jwt(jwt), "{jwt}");
    }
    for key in [
        "sk-live-1234",
        "a.b",
        "a.b.c.d",
        ".b.c",
        "a..c",
        "a b.c.d",
        "a.b.c/d",
    ] {
        assert!(!looks_like_jwt(key), "{key}");
    }
}

#[test]
fn roles_come_from_the_mapped_roles_claim_and_from_scopes() {
    let server =
        ResourceServer::new(&config("https://gw.example/mcp"), FetchLimits::default()).unwrap();
    let issuer = &server.issuers[0];
    let claims = json!({
        "realm_access": {"roles": ["tool-readers", "offline_access"]},
        "scope": "mcp tools:write",
    });
    let scopes = scopes(&claims);
    assert_eq!(scopes, ["mcp", "tools:write"]);
    // An unmapped claim value gives no role when a map is set.
    assert_eq!(issuer.roles(&claims, &scopes), ["reader", "writer"]);
    // `scp` as an array, and a roles claim whose name has a dot.
    let claims = json!({"scp": ["a", "b"], "realm_access.roles": "tool-readers"});
    assert_eq!(super::scopes(&claims), ["a", "b"]);
    assert_eq!(issuer.roles(&claims, &[]), ["reader"]);
}

#[test]
fn the_metadata_url_puts_the_well_known_path_before_the_resource_path() {
    let server =
        ResourceServer::new(&config("https://gw.example/mcp"), FetchLimits::default()).unwrap();
    assert_eq!(
        server.metadata.url(),
        "https://gw.example/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        server.challenge(Some(("invalid_token", "bad \"quote\" \n"))),
        "Bearer resource_metadata=\"https://gw.example/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\", error_description=\"bad 'quote' ?\""
    );
    let root = ResourceServer::new(&config("https://gw.example"), FetchLimits::default()).unwrap();
    assert_eq!(
        root.metadata.url(),
        "https://gw.example/.well-known/oauth-protected-resource"
    );
}

#[test]
fn hmac_and_unknown_algorithms_are_refused_when_the_gateway_is_built() {
    for alg in ["HS256", "none", "RS1"] {
        let mut c = config("https://gw.example/mcp");
        c.issuers[0].algorithms = vec![alg.into()];
        let e = ResourceServer::new(&c, FetchLimits::default()).unwrap_err();
        assert!(e.contains(alg), "{e}");
    }
}

#[tokio::test]
async fn an_unreachable_issuer_is_unavailable_and_a_foreign_one_invalid() {
    // Port 9 on loopback: nothing listens (discard is not run here), the connect is refused.
    let server = ResourceServer::new(
        &config("https://gw.example/mcp"),
        FetchLimits {
            timeout: Duration::from_secs(2),
            min_refresh: Duration::from_secs(60),
        },
    )
    .unwrap();
    let token = |claims: Value| {
        use base64::Engine as _;
        let e = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.c2ln",
            e(json!({"alg": "RS256", "kid": "k"})),
            e(claims)
        )
    };
    let e = server
        .authenticate(&token(json!({"iss": "http://127.0.0.1:9/idp"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, TokenError::Unavailable(m) if m.contains("http://127.0.0.1:9/idp")),
        "{e:?}"
    );
    let e = server
        .authenticate(&token(json!({"iss": "https://other.example"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, TokenError::Invalid(m) if m.contains("https://other.example")),
        "{e:?}"
    );
    let e = server
        .authenticate(&"a".repeat(MAX_TOKEN_BYTES + 1))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, TokenError::Invalid(m) if m.contains("longer")),
        "{e:?}"
    );
}
