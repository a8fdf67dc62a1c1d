//! Wire-level cases from the QA pass: dot segments in path values, credentials on
//! redirects, explicit `null` in JSON bodies, form / multipart `encoding`.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolgate_model::openapi::{
    BodyEncoding, BodyField, BodyLayout, FieldEncoding, ParamLocation, ParamStyle, RequestBody,
    SecurityScheme,
};

use super::server::TestServer;
use super::{call, config, conversion, op};
use crate::openapi::request::build;
use crate::openapi::style::{form_field, param};
use crate::{ErrorKind, OpenApiSource};

fn ok() -> (&'static str, Vec<u8>) {
    ("200 OK\r\nContent-Type: application/json", b"{}".to_vec())
}

fn flat(fields: &[&str]) -> BodyLayout {
    BodyLayout::Flattened {
        fields: fields
            .iter()
            .map(|f| BodyField {
                arg: (*f).into(),
                name: (*f).into(),
            })
            .collect(),
    }
}

fn body(encoding: BodyEncoding, media: &str, fields: &[&str]) -> RequestBody {
    RequestBody {
        media_type: media.into(),
        encoding,
        required: false,
        layout: flat(fields),
        file_fields: Vec::new(),
        encodings: BTreeMap::new(),
        xml: None,
    }
}

#[tokio::test]
async fn c11_dot_segments_and_empty_path_values_are_refused() {
    let server = TestServer::start(vec![ok()]).await;
    let mut o = op("get_file", "GET", "/repos/{owner}/{name}/files/{path}");
    for n in ["owner", "name", "path"] {
        let mut p = param(n, ParamLocation::Path, ParamStyle::Simple, false);
        p.required = true;
        o.parameters.push(p);
    }
    let base = format!("{}/api/v1", server.base);
    let source = OpenApiSource::builder("api", conversion(&base, vec![o]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    for (owner, name) in [("..", ".."), (".", "x"), ("x", "."), ("a", "..")] {
        let err = call(
            &source,
            "api.get_file",
            json!({"owner": owner, "name": name, "path": "x"}),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{err}");
        assert!(err.message().contains("dot segment"), "{err}");
    }
    let err = call(
        &source,
        "api.get_file",
        json!({"owner": "", "name": "x", "path": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        err.argument_errors()[0].message,
        "path parameter 'owner' is empty"
    );
    assert_eq!(err.argument_errors()[0].pointer, "/owner");
    assert!(server.requests().is_empty(), "nothing was sent");
    // dots that are not a whole segment stay as they are
    call(
        &source,
        "api.get_file",
        json!({"owner": "...", "name": ".a", "path": "b.."}),
    )
    .await
    .unwrap();
    assert_eq!(
        server.requests()[0].line,
        "GET /api/v1/repos/.../.a/files/b.. HTTP/1.1"
    );
}

#[test]
fn c11_label_and_array_values_making_a_dot_segment() {
    let mut o = op("t", "GET", "/x/{v}/y");
    let mut p = param("v", ParamLocation::Path, ParamStyle::Label, false);
    p.required = true;
    o.parameters.push(p);
    let args = |v: Value| match json!({ "v": v }) {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    // label `.` + `.` would be `..`
    let err = build("t", &o, &args(json!("."))).unwrap_err();
    assert!(err.message().contains("dot segment"), "{err}");
    assert_eq!(build("t", &o, &args(json!("a"))).unwrap().path, "/x/.a/y");
    o.parameters[0].style = ParamStyle::Simple;
    let err = build("t", &o, &args(json!([".."]))).unwrap_err();
    assert!(err.message().contains("dot segment"), "{err}");
    assert_eq!(
        build("t", &o, &args(json!(["..", ".."]))).unwrap().path,
        "/x/..,../y"
    );
    for empty in [json!(""), json!([]), json!({})] {
        let err = build("t", &o, &args(empty)).unwrap_err();
        assert_eq!(
            err.argument_errors()[0].message,
            "path parameter 'v' is empty"
        );
    }
}

/// A source whose `search` sends `X-API-Key` and whose `token` sends a bearer token.
fn keyed(base: &str) -> toolgate_model::openapi::Conversion {
    let mut search = op("search", "GET", "/search");
    search
        .parameters
        .push(param("q", ParamLocation::Query, ParamStyle::Form, true));
    search.security = vec![BTreeMap::from([("keyH".to_string(), vec![])])];
    let mut c = conversion(base, vec![search]);
    c.security_schemes.insert(
        "keyH".into(),
        SecurityScheme::ApiKey {
            name: "X-API-Key".into(),
            location: ParamLocation::Header,
        },
    );
    c
}

fn redirect_to(location: String) -> (&'static str, Vec<u8>) {
    let head = format!("302 Found\r\nLocation: {location}");
    (Box::leak(head.into_boxed_str()), Vec::new())
}

#[tokio::test]
async fn c18_header_key_is_not_sent_to_another_origin() {
    let target = TestServer::start(vec![ok()]).await;
    let port = target.base.rsplit(':').next().unwrap().to_string();
    let cfg = config(json!({
        "auth": {"schemes": {"keyH": "s3cr3t-h"}},
        "allow_hosts": ["localhost"],
    }));
    // same host, another port; another allowed host
    for location in [
        format!("http://127.0.0.1:{port}/landed?token=t0p"),
        format!("http://localhost:{port}/landed?token=t0p"),
    ] {
        let origin = TestServer::start(vec![redirect_to(location.clone())]).await;
        let source = OpenApiSource::builder("api", keyed(&origin.base))
            .config(&cfg)
            .build()
            .unwrap();
        let err = call(&source, "api.search", json!({"q": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
        let host = location.split('/').nth(2).unwrap();
        assert!(err.message().contains(host), "{err}");
        assert!(err.message().contains("another origin"), "{err}");
        assert!(
            !err.message().contains("t0p") && !err.message().contains("s3cr3t"),
            "{err}"
        );
        assert_eq!(origin.requests().len(), 1);
    }
    assert!(
        target.requests().is_empty(),
        "the key never reached the other origin"
    );
}

#[tokio::test]
async fn c18_same_origin_redirects_are_followed_and_bearer_may_move() {
    let origin = TestServer::start(vec![redirect_to("/moved".into()), ok()]).await;
    let cfg = config(json!({"auth": {"schemes": {"keyH": "s3cr3t-h"}}}));
    let source = OpenApiSource::builder("api", keyed(&origin.base))
        .config(&cfg)
        .build()
        .unwrap();
    call(&source, "api.search", json!({"q": "x"}))
        .await
        .unwrap();
    let reqs = origin.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].line, "GET /moved HTTP/1.1");
    assert_eq!(reqs[1].header("x-api-key"), Some("s3cr3t-h"));

    // a bearer token (Authorization, which reqwest strips) may follow to another origin
    let target = TestServer::start(vec![ok()]).await;
    let origin = TestServer::start(vec![redirect_to(format!("{}/landed", target.base))]).await;
    let source =
        OpenApiSource::builder("api", conversion(&origin.base, vec![op("p", "GET", "/p")]))
            .config(&config(json!({"auth": {"bearer": "tok3n"}})))
            .build()
            .unwrap();
    call(&source, "api.p", json!({})).await.unwrap();
    assert_eq!(
        origin.requests()[0].header("authorization"),
        Some("Bearer tok3n")
    );
    let landed = target.requests();
    assert_eq!(landed[0].line, "GET /landed HTTP/1.1");
    assert_eq!(landed[0].header("authorization"), None);
}

#[test]
fn c18_https_to_http_is_refused() {
    use crate::net::credential_redirect_refusal as refusal;
    let u = |s: &str| reqwest::Url::parse(s).unwrap();
    let b = refusal(&u("https://api.x/a"), &u("http://api.x/a?k=1"), false).unwrap();
    assert_eq!(b.host, "api.x");
    assert!(b.reason.contains("https to http"), "{}", b.reason);
    assert!(refusal(&u("https://api.x/a"), &u("https://other.x/b"), false).is_none());
    assert!(refusal(&u("https://api.x/a"), &u("https://other.x/b"), true).is_some());
    assert!(refusal(&u("https://api.x/a"), &u("https://API.x:443/b"), true).is_none());
    let b = refusal(&u("https://api.x/a"), &u("https://api.x:8443/b"), true).unwrap();
    assert_eq!(b.host, "api.x:8443");
    assert!(refusal(&u("http://api.x/a"), &u("https://api.x/a"), true).is_some());
}

#[tokio::test]
async fn c14_explicit_null_is_kept_in_json_bodies() {
    let server = TestServer::start(vec![ok()]).await;
    let mut o = op("set", "POST", "/level");
    o.body = Some(body(
        BodyEncoding::Json,
        "application/json",
        &["level", "note"],
    ));
    let mut f = op("form", "POST", "/form");
    f.body = Some(body(
        BodyEncoding::Form,
        "application/x-www-form-urlencoded",
        &["level", "note"],
    ));
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![o, f]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    call(&source, "api.set", json!({"level": null}))
        .await
        .unwrap();
    call(&source, "api.form", json!({"level": null, "note": "n"}))
        .await
        .unwrap();
    let reqs = server.requests();
    assert_eq!(reqs[0].text(), r#"{"level":null}"#);
    assert_eq!(reqs[1].text(), "note=n");
}

#[test]
fn c15_form_encoding_styles() {
    let enc = |style: Option<ParamStyle>, explode: Option<bool>| FieldEncoding {
        style,
        explode,
        ..FieldEncoding::default()
    };
    let tags = json!(["a", "b"]);
    let color = json!({"R": 100, "G": 200});
    assert_eq!(form_field("tags", &tags, None), ["tags=a", "tags=b"]);
    let e = enc(Some(ParamStyle::Form), Some(false));
    assert_eq!(form_field("tags", &tags, Some(&e)), ["tags=a,b"]);
    let e = enc(Some(ParamStyle::PipeDelimited), None);
    assert_eq!(form_field("tags", &tags, Some(&e)), ["tags=a|b"]);
    let e = enc(Some(ParamStyle::SpaceDelimited), Some(false));
    assert_eq!(form_field("tags", &tags, Some(&e)), ["tags=a%20b"]);
    // objects: deepObject unless the encoding says otherwise
    assert_eq!(
        form_field("color", &color, None),
        ["color[R]=100", "color[G]=200"]
    );
    let e = enc(Some(ParamStyle::Form), None);
    assert_eq!(form_field("color", &color, Some(&e)), ["R=100", "G=200"]);
    let e = enc(None, Some(false));
    assert_eq!(form_field("color", &color, Some(&e)), ["color=R,100,G,200"]);
    let e = FieldEncoding {
        allow_reserved: true,
        ..FieldEncoding::default()
    };
    assert_eq!(form_field("u", &json!("a/b?c"), Some(&e)), ["u=a/b?c"]);
    assert_eq!(form_field("u", &json!("a/b?c"), None), ["u=a%2Fb%3Fc"]);
}

#[tokio::test]
async fn c15_form_and_multipart_encoding_on_the_wire() {
    let server = TestServer::start(vec![ok()]).await;
    let mut f = op("form", "POST", "/form");
    let mut fb = body(
        BodyEncoding::Form,
        "application/x-www-form-urlencoded",
        &["tags", "name"],
    );
    fb.encodings.insert(
        "tags".into(),
        FieldEncoding {
            style: Some(ParamStyle::Form),
            explode: Some(false),
            ..FieldEncoding::default()
        },
    );
    f.body = Some(fb);
    let mut m = op("upload", "POST", "/upload");
    let mut mb = body(
        BodyEncoding::Multipart,
        "multipart/form-data",
        &["image", "meta", "note"],
    );
    mb.file_fields = vec!["image".into()];
    mb.encodings.insert(
        "image".into(),
        FieldEncoding {
            content_type: Some("image/png, image/jpeg".into()),
            ..FieldEncoding::default()
        },
    );
    m.body = Some(mb);
    let source = OpenApiSource::builder("api", conversion(&server.base, vec![f, m]))
        .config(&config(json!({})))
        .build()
        .unwrap();
    call(
        &source,
        "api.form",
        json!({"tags": ["a", "b"], "name": "n"}),
    )
    .await
    .unwrap();
    call(
        &source,
        "api.upload",
        json!({"image": "iVBORw==", "meta": {"k": [1]}, "note": "hi", "skip": null}),
    )
    .await
    .unwrap();
    let reqs = server.requests();
    assert_eq!(reqs[0].text(), "tags=a,b&name=n");
    let text = reqs[1].text();
    let part = |name: &str| {
        text.split("--")
            .find(|p| p.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("no part {name}: {text}"))
            .to_string()
    };
    assert!(
        part("image")
            .to_ascii_lowercase()
            .contains("content-type: image/png"),
        "{text}"
    );
    let meta = part("meta");
    assert!(
        meta.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{text}"
    );
    assert!(meta.contains(r#"{"k":[1]}"#), "{text}");
    assert!(
        !part("note").to_ascii_lowercase().contains("content-type"),
        "{text}"
    );
}
