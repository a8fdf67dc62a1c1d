//! Review findings on the wire: secrets echoed in encoded forms, adapter fills as arguments,
//! 2xx bodies declared JSON that do not parse, the size cap of a document read from a URL.

use std::collections::BTreeMap;

use serde_json::json;
use toolgate_model::openapi::{Fill, FillFrom, ParamLocation, ParamStyle, SecurityScheme};

use super::server::TestServer;
use super::{config, conversion, op};
use crate::openapi::style::param;
use crate::{ErrorKind, OpenApiSource, ToolContext, ToolError};

/// Everything of an error a model or a log may see.
fn shown(err: &ToolError) -> String {
    format!(
        "{err} {:?} {}",
        err.details(),
        serde_json::to_string(err).unwrap()
    )
}

#[tokio::test]
async fn oauth2_token_endpoint_echoing_basic_credentials_is_redacted() {
    // base64("myclient:CLIENTSECRET555") and base64("me:p%40ss%20w%2Frd") (form-encoded pair)
    let token = TestServer::start(vec![(
        "400 Bad Request\r\nContent-Type: application/json",
        br#"{"error":"invalid_client","headers":{"authorization":"Basic bXljbGllbnQ6Q0xJRU5UU0VDUkVUNTU1"},"form":"client_secret=CLIENTSECRET555"}"#.to_vec(),
    )])
    .await;
    let api = TestServer::start(vec![("200 OK", b"{}".to_vec())]).await;
    let cfg = config(json!({"auth": {"oauth2": {
        "client_id": "myclient", "client_secret": "CLIENTSECRET555",
        "token_url": format!("{}/token", token.base)
    }}}));
    let source = OpenApiSource::builder("api", conversion(&api.base, vec![op("g", "GET", "/g")]))
        .config(&cfg)
        .build()
        .unwrap();
    let err = source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        token.requests()[0].header("authorization"),
        Some("Basic bXljbGllbnQ6Q0xJRU5UU0VDUkVUNTU1")
    );
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    let text = shown(&err);
    assert!(
        !text.contains("bXljbGllbnQ6Q0xJRU5UU0VDUkVUNTU1") && !text.contains("CLIENTSECRET555"),
        "{text}"
    );
    assert!(text.contains("HTTP 400 Bad Request"), "{text}");

    // a secret with reserved characters: the form-encoded pair is what travels
    let token = TestServer::start(vec![(
        "400 Bad Request",
        b"got Basic bWU6cCU0MHNzJTIwdyUyRnJk and p%40ss%20w%2Frd".to_vec(),
    )])
    .await;
    let cfg = config(json!({"auth": {"oauth2": {
        "client_id": "me", "client_secret": "p@ss w/rd",
        "token_url": format!("{}/token", token.base)
    }}}));
    let source = OpenApiSource::builder("api", conversion(&api.base, vec![op("g", "GET", "/g")]))
        .config(&cfg)
        .build()
        .unwrap();
    let err = source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        token.requests()[0].header("authorization"),
        Some("Basic bWU6cCU0MHNzJTIwdyUyRnJk")
    );
    let text = shown(&err);
    assert!(
        !text.contains("bWU6cCU0MHNzJTIwdyUyRnJk") && !text.contains("p%40ss"),
        "{text}"
    );
}

#[tokio::test]
async fn basic_credentials_echoed_as_base64_are_redacted() {
    let server = TestServer::start(vec![(
        "400 Bad Request",
        // base64("user:pa ss") and its query encoding
        b"Authorization: Basic dXNlcjpwYSBzcw== / dXNlcjpwYSBzcw%3D%3D".to_vec(),
    )])
    .await;
    let cfg = config(json!({"auth": {"basic": {"username": "user", "password": "pa ss"}}}));
    let source =
        OpenApiSource::builder("api", conversion(&server.base, vec![op("g", "GET", "/g")]))
            .config(&cfg)
            .build()
            .unwrap();
    let err = source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Basic dXNlcjpwYSBzcw==")
    );
    let text = shown(&err);
    assert!(!text.contains("dXNlcjpwYSBzcw"), "{text}");
}

#[tokio::test]
async fn query_key_echoed_percent_encoded_is_redacted() {
    let server = TestServer::start(vec![(
        "400 Bad Request\r\nContent-Type: text/plain",
        b"unknown parameter api_key=Qs3cr%2Bet%2FKEY%3D (raw Qs3cr+et/KEY=, form Qs3cr%2Bet%2FKEY%3D)"
            .to_vec(),
    )])
    .await;
    let mut export = op("export", "GET", "/export");
    export.security = vec![BTreeMap::from([("keyQ".to_string(), vec![])])];
    let mut c = conversion(&server.base, vec![export]);
    c.security_schemes.insert(
        "keyQ".into(),
        SecurityScheme::ApiKey {
            name: "api_key".into(),
            location: ParamLocation::Query,
        },
    );
    let cfg = config(json!({"auth": {"schemes": {"keyQ": "Qs3cr+et/KEY="}}}));
    let source = OpenApiSource::builder("api", c)
        .config(&cfg)
        .build()
        .unwrap();
    let err = source
        .call_named("api.export", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        server.requests()[0].line,
        "GET /export?api_key=Qs3cr%2Bet%2FKEY%3D HTTP/1.1"
    );
    let text = shown(&err);
    assert!(!text.contains("Qs3cr"), "{text}");
    assert!(text.contains("api_key=[redacted]"), "{text}");
}

#[test]
fn secret_forms() {
    let f = toolgate_model::secrets::forms("a b+c/~*");
    for want in [
        "a b+c/~*",
        "a%20b%2Bc%2F~%2A",
        "a+b%2Bc%2F~%2A",
        "a+b%2Bc%2F%7E*",
    ] {
        assert!(f.iter().any(|s| s == want), "{want} not in {f:?}");
    }
    assert!(toolgate_model::secrets::forms("").is_empty());
}

#[tokio::test]
async fn adapter_fills_are_arguments_not_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    std::fs::write(&trace, "ADAPTERSECRET999").unwrap();
    let code = dir.path().join("code");
    std::fs::write(&code, "404").unwrap();
    let server = TestServer::start(vec![(
        "404 Not Found\r\nContent-Type: text/plain",
        b"no trace ADAPTERSECRET999 for code 404".to_vec(),
    )])
    .await;
    let mut o = op("g", "GET", "/g");
    o.parameters.push(param(
        "X-Trace",
        ParamLocation::Header,
        ParamStyle::Simple,
        false,
    ));
    o.parameters
        .push(param("code", ParamLocation::Query, ParamStyle::Form, true));
    o.fills = vec![
        Fill {
            arg: "X-Trace".into(),
            from: FillFrom::Value(format!("${{file:{}}}", trace.display())),
        },
        Fill {
            arg: "code".into(),
            from: FillFrom::Value(format!("${{file:{}}}", code.display())),
        },
    ];
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![o]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    let err = source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    let r = &server.requests()[0];
    assert_eq!(r.header("x-trace"), Some("ADAPTERSECRET999"));
    assert_eq!(r.line, "GET /g?code=404 HTTP/1.1");
    assert_eq!(
        err.message(),
        "HTTP 404 Not Found: no trace ADAPTERSECRET999 for code 404"
    );
    assert!(!shown(&err).contains("[redacted]"), "{}", shown(&err));
}

#[tokio::test]
async fn success_declared_json_that_does_not_parse_is_an_upstream_error() {
    let long = format!("{{not json {}", "x".repeat(10_000));
    let server = TestServer::start(vec![
        (
            "200 OK\r\nContent-Type: application/json",
            b"{not json".to_vec(),
        ),
        (
            "200 OK\r\nContent-Type: application/problem+json; charset=utf-8",
            long.into_bytes(),
        ),
        // no Content-Type: still text when it does not parse
        ("200 OK", b"plain words".to_vec()),
    ])
    .await;
    let source =
        OpenApiSource::builder("api", conversion(&server.base, vec![op("g", "GET", "/g")]))
            .config(&config(json!({})))
            .build()
            .unwrap();
    let ctx = ToolContext::default();
    let err = source
        .call_named("api.g", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert!(!err.is_retryable());
    assert!(err.message().contains("not valid JSON"), "{err}");
    assert!(err.message().contains("{not json"), "{err}");
    assert_eq!(err.details().unwrap()["status"], json!(200));
    let err = source
        .call_named("api.g", json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(err.message().contains("not valid JSON"), "{err}");
    assert!(
        err.message().len() < crate::openapi::EXCERPT_BYTES + 300,
        "excerpt bounded: {} bytes",
        err.message().len()
    );
    let out = source.call_named("api.g", json!({}), &ctx).await.unwrap();
    assert_eq!(out.content[0].as_text(), Some("plain words"));
}

#[tokio::test]
async fn document_from_url_is_capped() {
    let server = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/yaml",
        vec![b'a'; 100],
    )])
    .await;
    let get = || async {
        reqwest::get(format!("{}/openapi.yaml", server.base))
            .await
            .unwrap()
    };
    let err = crate::openapi::loader::read_capped(get().await, "http://x/openapi.yaml", "x", 10)
        .await
        .unwrap_err();
    assert!(err.contains("limit of 10 bytes"), "{err}");
    let ok = crate::openapi::loader::read_capped(get().await, "http://x/openapi.yaml", "x", 100)
        .await
        .unwrap();
    assert_eq!(ok.len(), 100);
    assert_eq!(crate::openapi::loader::MAX_DOCUMENT_BYTES, 64 * 1024 * 1024);
}

#[tokio::test]
async fn a_token_endpoint_s_redirect_is_not_followed_so_the_secret_stays_where_it_was_sent() {
    // The token endpoint answers 307 to another server: following it would hand that server
    // the client secret (a 307 keeps the method and the form).
    let elsewhere = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        br#"{"access_token":"stolen-1"}"#.to_vec(),
    )])
    .await;
    let token = TestServer::start(vec![(
        &*Box::leak(
            format!("307 Temporary Redirect\r\nLocation: {}/tok", elsewhere.base).into_boxed_str(),
        ),
        Vec::new(),
    )])
    .await;
    let api = TestServer::start(vec![("200 OK", b"{}".to_vec())]).await;
    let cfg = config(json!({"auth": {"oauth2": {
        "client_id": "me", "client_secret": "REDIRECTEDSECRET9", "client_auth": "post",
        "token_url": format!("{}/token", token.base)
    }}}));
    let source = OpenApiSource::builder("api", conversion(&api.base, vec![op("g", "GET", "/g")]))
        .config(&cfg)
        .build()
        .unwrap();
    let err = source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream, "{err}");
    assert!(err.message().contains("follow no redirects"), "{err}");
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
    assert!(
        api.requests().is_empty(),
        "the API was called without a token"
    );
}

#[tokio::test]
async fn auth_oauth2_without_a_token_url_uses_the_document_s_client_credentials_scheme() {
    let token = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        br#"{"access_token":"from-scheme-1","token_type":"Bearer"}"#.to_vec(),
    )])
    .await;
    let api = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        b"{}".to_vec(),
    )])
    .await;
    let mut g = op("g", "GET", "/g");
    g.security = vec![BTreeMap::from([("cc".to_string(), Vec::new())])];
    let mut conv = conversion(&api.base, vec![g]);
    conv.security_schemes.insert(
        "cc".into(),
        SecurityScheme::OAuth2 {
            token_url: Some(format!("{}/token", token.base)),
        },
    );
    let cfg = config(json!({"auth": {"oauth2": {"client_id": "me", "client_secret": "shh"}}}));
    let source = OpenApiSource::builder("api", conv)
        .config(&cfg)
        .build()
        .unwrap();
    source
        .call_named("api.g", json!({}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(token.requests().len(), 1);
    assert_eq!(
        api.requests()[0].header("authorization"),
        Some("Bearer from-scheme-1")
    );
}

#[test]
fn a_scheme_token_url_over_plain_http_to_another_host_is_refused_at_build() {
    // A document names where the client secret goes; plain http to another host is refused
    // before anything is sent, as it is for a configured `token_url`.
    let mut conv = conversion("http://127.0.0.1:9", vec![op("g", "GET", "/g")]);
    conv.security_schemes.insert(
        "cc".into(),
        SecurityScheme::OAuth2 {
            token_url: Some("http://idp.example.com/token".into()),
        },
    );
    let cfg =
        config(json!({"auth": {"schemes": {"cc": {"client_id": "me", "client_secret": "shh"}}}}));
    let err = OpenApiSource::builder("api", conv)
        .config(&cfg)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("plain http"), "{err}");
}
