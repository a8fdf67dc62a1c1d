//! Wire-level cases: a real HTTP server on 127.0.0.1 records what the binding sends.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use toolgate_model::openapi::{
    BodyEncoding, BodyField, BodyLayout, ParamLocation, ParamStyle, RequestBody, SecurityScheme,
};

use super::server::TestServer;
use super::{call, config, conversion, op};
use crate::openapi::response::{failure, parse_retry_after};
use crate::openapi::style::param;
use crate::{ErrorKind, OpenApiSource, ToolSource};

#[tokio::test]
async fn c11_request_line_on_the_wire() {
    let server = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        b"{\"ok\":true}".to_vec(),
    )])
    .await;
    let mut o = op("get_file", "GET", "/repos/{owner}/{name}/files/{path}");
    for n in ["owner", "name", "path"] {
        let mut p = param(n, ParamLocation::Path, ParamStyle::Simple, false);
        p.required = true;
        o.parameters.push(p);
    }
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![o]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    let out = call(
        &source,
        "api.get_file",
        json!({"owner": "acme", "name": "web site", "path": "docs/a?b#c%.md"}),
    )
    .await
    .unwrap();
    assert_eq!(out.structured, Some(json!({"ok": true})));
    let err = call(
        &source,
        "api.get_file",
        json!({"owner": "acme", "name": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.message().contains("missing path parameter 'path'"),
        "{err}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "no request for the failed call");
    assert_eq!(
        reqs[0].line,
        "GET /repos/acme/web%20site/files/docs%2Fa%3Fb%23c%25.md HTTP/1.1"
    );
}

#[tokio::test]
async fn c15_form_body_and_cookie() {
    let server = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        b"{}".to_vec(),
    )])
    .await;
    let mut o = op("issue_token", "POST", "/oauth/token");
    o.parameters.push(param(
        "session",
        ParamLocation::Cookie,
        ParamStyle::Form,
        true,
    ));
    o.body = Some(RequestBody {
        media_type: "application/x-www-form-urlencoded".into(),
        encoding: BodyEncoding::Form,
        required: true,
        layout: BodyLayout::Flattened {
            fields: ["grant_type", "scope"]
                .iter()
                .map(|f| BodyField {
                    arg: (*f).into(),
                    name: (*f).into(),
                })
                .collect(),
        },
        file_fields: Vec::new(),
        encodings: Default::default(),
        xml: None,
    });
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![o]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    call(
        &source,
        "api.issue_token",
        json!({"grant_type": "client_credentials", "scope": ["read", "write"], "session": "abc"}),
    )
    .await
    .unwrap();
    let r = &server.requests()[0];
    assert_eq!(r.line, "POST /oauth/token HTTP/1.1");
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        r.text(),
        "grant_type=client_credentials&scope=read&scope=write"
    );
    assert_eq!(r.header("cookie"), Some("session=abc"));
}

fn c18_conversion(base: &str) -> toolgate_model::openapi::Conversion {
    let q = || param("q", ParamLocation::Query, ParamStyle::Form, true);
    let mut search = op("search", "GET", "/search");
    search.parameters.push(q());
    search.security = vec![BTreeMap::from([("keyH".to_string(), vec![])])];
    let mut export = op("export", "GET", "/export");
    export.parameters.push(q());
    export.security = vec![BTreeMap::from([("keyQ".to_string(), vec![])])];
    let ping = op("ping", "GET", "/ping");
    let mut c = conversion(base, vec![search, export, ping]);
    c.security_schemes.insert(
        "keyQ".into(),
        SecurityScheme::ApiKey {
            name: "api_key".into(),
            location: ParamLocation::Query,
        },
    );
    c.security_schemes.insert(
        "keyH".into(),
        SecurityScheme::ApiKey {
            name: "X-API-Key".into(),
            location: ParamLocation::Header,
        },
    );
    c
}

#[tokio::test]
async fn c18_api_keys_by_scheme() {
    let server = TestServer::start(vec![(
        "200 OK\r\nContent-Type: application/json",
        b"{}".to_vec(),
    )])
    .await;
    let cfg = config(json!({"auth": {"schemes": {"keyQ": "s3cr3t-q", "keyH": "s3cr3t-h"}}}));
    let source = OpenApiSource::builder("api", c18_conversion(&server.base))
        .config(&cfg)
        .build()
        .unwrap();
    // no tool schema holds a credential
    for d in source.tools().into_iter().map(|t| t.descriptor) {
        let schema = d.input_schema.to_string();
        assert!(
            !schema.contains("api_key") && !schema.contains("X-API-Key"),
            "{schema}"
        );
    }
    call(&source, "api.search", json!({"q": "x"}))
        .await
        .unwrap();
    call(&source, "api.export", json!({"q": "x"}))
        .await
        .unwrap();
    call(&source, "api.ping", json!({})).await.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs[0].line, "GET /search?q=x HTTP/1.1");
    assert_eq!(reqs[0].header("x-api-key"), Some("s3cr3t-h"));
    assert_eq!(reqs[1].line, "GET /export?q=x&api_key=s3cr3t-q HTTP/1.1");
    assert_eq!(reqs[1].header("x-api-key"), None);
    assert_eq!(reqs[2].line, "GET /ping HTTP/1.1");
    assert!(reqs[2].header("x-api-key").is_none() && reqs[2].header("authorization").is_none());
}

#[tokio::test]
async fn c18_secrets_are_redacted_from_logs_and_errors() {
    // the server echoes the key back in an error body
    let server = TestServer::start(vec![(
        "401 Unauthorized\r\nContent-Type: text/plain",
        b"bad key s3cr3t-q".to_vec(),
    )])
    .await;
    let cfg = config(json!({"auth": {"schemes": {"keyQ": "s3cr3t-q", "keyH": "s3cr3t-h"}}}));
    let source = OpenApiSource::builder("api", c18_conversion(&server.base))
        .config(&cfg)
        .build()
        .unwrap();
    let err = call(&source, "api.export", json!({"q": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    let shown = format!(
        "{err} {:?} {}",
        err.details(),
        serde_json::to_string(&err).unwrap()
    );
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    // the log line of a request masks the key wherever it goes
    let client = reqwest::Client::new();
    let req = client
        .get(format!("{}/export?q=x&api_key=s3cr3t-q", server.base))
        .header("X-API-Key", "s3cr3t-h")
        .build()
        .unwrap();
    let line = crate::openapi::call::describe(&req, &["api_key".into(), "X-API-Key".into()]);
    assert!(
        line.contains("api_key=***") && line.contains("x-api-key: ***"),
        "{line}"
    );
    assert!(!line.contains("s3cr3t"), "{line}");
    // a network error names the host, never the query with the key
    let dead = format!("http://127.0.0.1:{}", unused_port().await);
    let source = OpenApiSource::builder("api", c18_conversion(&dead))
        .config(&cfg)
        .build()
        .unwrap();
    let err = call(&source, "api.export", json!({"q": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert!(err.is_retryable());
    assert!(err.message().contains("127.0.0.1"), "{err}");
    assert!(
        !format!("{err:?}").contains("s3cr3t") && !err.message().contains("api_key"),
        "{err:?}"
    );
}

async fn unused_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn c19_empty_responses() {
    let server = TestServer::start(vec![
        (
            "204 No Content\r\nContent-Type: application/json",
            Vec::new(),
        ),
        ("200 OK\r\nContent-Type: application/json", Vec::new()),
        (
            "404 Not Found\r\nContent-Type: application/json",
            Vec::new(),
        ),
        (
            "404 Not Found\r\nContent-Type: application/json",
            b"{\"error\":\"no item 7\"}".to_vec(),
        ),
    ])
    .await;
    let mut del = op("delete_item", "DELETE", "/items/{id}");
    let mut id = param("id", ParamLocation::Path, ParamStyle::Simple, false);
    id.required = true;
    del.parameters.push(id);
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![del]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    let out = call(&source, "api.delete_item", json!({"id": "7"}))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(
        serde_json::to_value(&out).unwrap()["content"],
        json!([{"type": "text", "text": "HTTP 204 No Content"}])
    );
    let out = call(&source, "api.delete_item", json!({"id": "7"}))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(out.text_joined(), "HTTP 200 OK");
    let err = call(&source, "api.delete_item", json!({"id": "7"}))
        .await
        .unwrap_err();
    assert_eq!(err.message(), "HTTP 404 Not Found (empty body)");
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert!(err.into_output().is_error);
    let err = call(&source, "api.delete_item", json!({"id": "7"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        r#"HTTP 404 Not Found: {"error":"no item 7"}"#
    );
    assert_eq!(err.details().unwrap()["status"], 404);
    assert_eq!(server.requests()[0].line, "DELETE /items/7 HTTP/1.1");
}

#[test]
fn status_to_kind() {
    use reqwest::StatusCode as S;
    let cases = [
        (S::BAD_REQUEST, ErrorKind::Upstream, false),
        (S::UNPROCESSABLE_ENTITY, ErrorKind::Upstream, false),
        (S::NOT_FOUND, ErrorKind::Upstream, false),
        (S::UNAUTHORIZED, ErrorKind::PermissionDenied, false),
        (S::FORBIDDEN, ErrorKind::PermissionDenied, false),
        (S::REQUEST_TIMEOUT, ErrorKind::Timeout, true),
        (S::TOO_MANY_REQUESTS, ErrorKind::RateLimited, true),
        (S::INTERNAL_SERVER_ERROR, ErrorKind::Upstream, true),
        (S::SERVICE_UNAVAILABLE, ErrorKind::Upstream, true),
    ];
    for (status, kind, retryable) in cases {
        let e = failure(status, None, b"");
        assert_eq!((e.kind(), e.is_retryable()), (kind, retryable), "{status}");
    }
    let e = failure(S::TOO_MANY_REQUESTS, Some("12"), b"slow down");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(12)));
    assert_eq!(e.message(), "HTTP 429 Too Many Requests: slow down");
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
        Some(Duration::ZERO)
    );
    let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
    assert!(parse_retry_after(&later).unwrap() > Duration::from_secs(100));
    // a long body is cut to 2 KiB
    let e = failure(S::BAD_GATEWAY, None, "x".repeat(10_000).as_bytes());
    assert!(e.message().len() < 2200, "{}", e.message().len());
}

#[tokio::test]
async fn response_size_limit() {
    let server = TestServer::start(vec![(
        "200 OK\r\nContent-Type: text/plain",
        vec![b'a'; 5000],
    )])
    .await;
    let source = OpenApiSource::builder(
        "api",
        conversion(&server.base, vec![op("big", "GET", "/big")]),
    )
    .config(&config(json!({"max_response_bytes": 1000})))
    .build()
    .unwrap();
    let err = call(&source, "api.big", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upstream);
    assert!(err.message().contains("limit of 1000 bytes"), "{err}");
}

#[tokio::test]
async fn redirect_to_another_host_is_refused() {
    let server = TestServer::start(vec![(
        "302 Found\r\nLocation: http://169.254.169.254/latest/meta-data",
        Vec::new(),
    )])
    .await;
    let source =
        OpenApiSource::builder("api", conversion(&server.base, vec![op("r", "GET", "/r")]))
            .config(&config(json!({})))
            .build()
            .unwrap();
    let err = call(&source, "api.r", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("169.254.169.254"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn private_address_needs_allow_private() {
    let server = TestServer::start(vec![("200 OK", Vec::new())]).await;
    let cfg: toolgate_model::config::OpenApiSource =
        serde_json::from_value(json!({"id": "api", "spec": "api.yaml"})).unwrap();
    let source =
        OpenApiSource::builder("api", conversion(&server.base, vec![op("p", "GET", "/p")]))
            .config(&cfg)
            .build()
            .unwrap();
    let err = call(&source, "api.p", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert!(err.message().contains("non-public address"), "{err}");
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn content_types_map_to_content_parts() {
    let server = TestServer::start(vec![
        (
            "200 OK\r\nContent-Type: text/plain; charset=utf-8",
            b"hello".to_vec(),
        ),
        ("200 OK\r\nContent-Type: image/png", vec![1, 2, 3]),
        (
            "200 OK\r\nContent-Type: application/problem+json",
            b"[1,2]".to_vec(),
        ),
        ("200 OK\r\nContent-Type: application/pdf", vec![0, 1]),
    ])
    .await;
    let source =
        OpenApiSource::builder("api", conversion(&server.base, vec![op("g", "GET", "/g")]))
            .config(&config(json!({})))
            .build()
            .unwrap();
    assert_eq!(
        call(&source, "api.g", json!({}))
            .await
            .unwrap()
            .text_joined(),
        "hello"
    );
    let img = call(&source, "api.g", json!({})).await.unwrap();
    assert_eq!(
        serde_json::to_value(&img.content[0]).unwrap(),
        json!({"type": "image", "data": "AQID", "mimeType": "image/png"})
    );
    assert_eq!(
        call(&source, "api.g", json!({})).await.unwrap().structured,
        Some(json!({"result": [1, 2]}))
    );
    let pdf = call(&source, "api.g", json!({})).await.unwrap();
    assert_eq!(
        pdf.content[0].as_text(),
        Some("[application/pdf content: 2 bytes]")
    );
    assert!(matches!(pdf.content[1], crate::Content::Resource { .. }));
}

#[tokio::test]
async fn oauth2_token_is_fetched_cached_and_refreshed_on_401() {
    let token = TestServer::start(vec![
        (
            "200 OK\r\nContent-Type: application/json",
            br#"{"access_token":"tok-1","expires_in":3600}"#.to_vec(),
        ),
        (
            "200 OK\r\nContent-Type: application/json",
            br#"{"access_token":"tok-2","expires_in":3600}"#.to_vec(),
        ),
    ])
    .await;
    let api = TestServer::start(vec![
        ("200 OK\r\nContent-Type: application/json", b"{}".to_vec()),
        ("200 OK\r\nContent-Type: application/json", b"{}".to_vec()),
        ("401 Unauthorized", Vec::new()),
        ("200 OK\r\nContent-Type: application/json", b"{}".to_vec()),
    ])
    .await;
    let cfg = config(json!({"auth": {"oauth2": {
        "client_id": "me", "client_secret": "shh", "token_url": format!("{}/token", token.base), "scopes": ["a", "b"]
    }}}));
    let source = OpenApiSource::builder("api", conversion(&api.base, vec![op("g", "GET", "/g")]))
        .config(&cfg)
        .build()
        .unwrap();
    for _ in 0..3 {
        call(&source, "api.g", json!({})).await.unwrap();
    }
    let t = token.requests();
    assert_eq!(t.len(), 2, "cached once, refreshed once on 401");
    assert_eq!(t[0].line, "POST /token HTTP/1.1");
    assert_eq!(t[0].text(), "grant_type=client_credentials&scope=a%20b");
    assert_eq!(t[0].header("authorization"), Some("Basic bWU6c2ho"));
    let a = api.requests();
    let auth: Vec<_> = a
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        auth,
        [
            "Bearer tok-1",
            "Bearer tok-1",
            "Bearer tok-1",
            "Bearer tok-2"
        ]
    );
}

#[tokio::test]
async fn descriptors_and_build_errors() {
    let mut del = op("remove", "DELETE", "/x");
    del.tags = vec!["items".into()];
    del.deprecated = true;
    let get = op("list", "GET", "/x");
    let source = OpenApiSource::builder(
        "api",
        conversion("https://api.example.com/v1", vec![del, get]),
    )
    .config(&config(json!({"timeout_ms": 500})))
    .build()
    .unwrap();
    assert_eq!(source.kind(), "openapi");
    let d = source.descriptor("api.remove").unwrap();
    assert!(
        d.dangerous
            && d.tags.contains(&"deprecated".to_string())
            && d.description.starts_with("Deprecated.")
    );
    assert_eq!(d.category.as_deref(), Some("items"));
    assert_eq!(
        (
            d.annotations.destructive_hint,
            d.annotations.idempotent_hint
        ),
        (Some(true), Some(true))
    );
    assert_eq!(d.timeout, Some(Duration::from_millis(500)));
    let d = source.descriptor("api.list").unwrap();
    assert_eq!(d.annotations.read_only_hint, Some(true));
    assert_eq!(
        source.base_url("api.list").unwrap().as_str(),
        "https://api.example.com/v1"
    );
    // prefix: false
    let cfg = config(json!({"prefix": false}));
    let s = OpenApiSource::builder(
        "api",
        conversion("https://a.x", vec![op("list", "GET", "/x")]),
    )
    .config(&cfg)
    .build()
    .unwrap();
    assert!(s.descriptor("list").is_some() && !s.prefixed());
    // an unset secret names the source and the variable
    let cfg = config(json!({"auth": {"bearer": "${TOOLGATE_TEST_SURELY_UNSET}"}}));
    let err = OpenApiSource::builder("api", conversion("https://a.x", vec![]))
        .config(&cfg)
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`api`") && msg.contains("TOOLGATE_TEST_SURELY_UNSET"),
        "{msg}"
    );
    // a base URL with a `{` left
    let cfg = config(json!({"base_url": "https://{region}.x"}));
    let err = OpenApiSource::builder("api", conversion("https://a.x", vec![op("l", "GET", "/")]))
        .config(&cfg)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, crate::OpenApiSourceError::BaseUrl { .. }),
        "{err}"
    );
    // the embedded form round-trips
    let c = conversion("https://a.x", vec![op("l", "GET", "/")]);
    let back =
        crate::__private::embedded_openapi("api", &serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
    assert!(crate::__private::embedded_openapi("api", "{").is_err());
}
