//! What an OAuth access token costs per gateway call (`gateway.auth.oauth`), keys cached:
//! `POST /tools/greet/call` through the gateway's router in process (no sockets; every layer
//! of the HTTP front: Host check, credential, body, REST call, the default policy layers), with
//! no credential required, with an API key, and with an ES256 JWT checked against a JWKS
//! fetched once from a local HTTP server before the measurement: a token the gateway has
//! checked before (found by digest), and a new token each call (every check runs).
//!
//! Run: `cargo bench -p toolgate-benches --bench auth` (criterion; groups `auth/…`).

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpListener;

use axum::body::Body;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::gateway::Gateway;
use tower::ServiceExt as _;

/// A P-256 key made for this benchmark only (`openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256`); it signs the benchmark's tokens and nothing else.
const BENCH_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6lEOmY80d0iNCCMO\n5A934ZZbV4iSGpCcrcr+WASj5yOhRANCAARczMPFkQqbD1RPBkq9ZIocsUIXv/8U\neCtk9DTF1aOF5v2kuI3iZd+vFrvhgIn2Ooh0dG8Q5OoyAdkXUGRqIcyB\n-----END PRIVATE KEY-----";

const API_KEY: &str = "bench-api-key-0123456789";
const RESOURCE: &str = "http://gw.bench/mcp";
const ISSUER: &str = "http://bench-issuer.invalid";

/// Serves `jwks` to every GET on a loopback port (a thread, for the benchmark's lifetime).
fn serve_jwks(jwks: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{jwks}",
                jwks.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

fn gateway(rt: &tokio::runtime::Runtime, oauth: Option<u16>, key: bool) -> Gateway {
    let toolset = rt.block_on(async {
        toolgate_benches::toolset::toolset()
            .build()
            .expect("toolset")
    });
    let mut builder = Gateway::builder(toolset);
    if key {
        builder = builder.api_key("bench", API_KEY, ["user"]);
    }
    if let Some(port) = oauth {
        let config: toolgate::model::config::OAuthConfig = serde_json::from_value(json!({
            "resource": RESOURCE,
            "issuers": [{"issuer": ISSUER, "jwks_uri": format!("http://127.0.0.1:{port}/jwks")}],
        }))
        .expect("oauth config");
        builder = builder.oauth(&config).expect("oauth");
    }
    builder.build()
}

fn call(rt: &tokio::runtime::Runtime, router: &axum::Router, credential: Option<&str>) -> u16 {
    let mut request = axum::http::Request::post("/tools/greet/call")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json");
    if let Some(c) = credential {
        request = request.header("authorization", format!("Bearer {c}"));
    }
    let request = request
        .body(Body::from(r#"{"name":"ada","times":2}"#))
        .expect("request");
    rt.block_on(async {
        let response = router.clone().oneshot(request).await.expect("infallible");
        let status = response.status().as_u16();
        let _ = axum::body::to_bytes(response.into_body(), 1 << 20).await;
        status
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let key = jsonwebtoken::EncodingKey::from_ec_pem(BENCH_KEY.as_bytes()).expect("the key");
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::ES256)
        .expect("its JWK");
    jwk.common.key_id = Some("bench".into());
    let jwks = json!({"keys": [jwk]}).to_string();
    let port = serve_jwks(jwks);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let claims: Value = json!({
        "iss": ISSUER, "sub": "agent-7", "aud": RESOURCE, "exp": now + 86_400,
        "scope": "mcp tools:read", "roles": ["user"],
    });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("bench".into());
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("a token");

    let open = gateway(&rt, None, false).router();
    let keyed = gateway(&rt, None, true).router();
    let oauth = gateway(&rt, Some(port), true).router();
    // Each answers 200 once before it is measured (the JWKS fetched, the validator compiled).
    assert_eq!(call(&rt, &open, None), 200);
    assert_eq!(call(&rt, &keyed, Some(API_KEY)), 200);
    assert_eq!(call(&rt, &oauth, Some(&token)), 200);
    assert_eq!(call(&rt, &oauth, Some(API_KEY)), 200);
    assert_eq!(call(&rt, &oauth, Some("e30.e30.c2ln")), 401);

    let mut group = c.benchmark_group("auth");
    group.bench_function("no credential required", |b| {
        b.iter(|| black_box(call(&rt, &open, None)));
    });
    group.bench_function("API key", |b| {
        b.iter(|| black_box(call(&rt, &keyed, Some(API_KEY))));
    });
    group.bench_function("ES256 access token, seen before", |b| {
        b.iter(|| black_box(call(&rt, &oauth, Some(&token))));
    });
    // A new token each time (a distinct `jti`; signed outside the measurement): every check
    // runs, the signature's included, with the issuer's keys cached.
    let mut n = 0u64;
    group.bench_function("ES256 access token, first use, keys cached", |b| {
        b.iter_batched(
            || {
                n += 1;
                let mut claims = claims.clone();
                claims["jti"] = json!(n);
                jsonwebtoken::encode(&header, &claims, &key).expect("a token")
            },
            |token| black_box(call(&rt, &oauth, Some(&token))),
            criterion::BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
