//! Request building without a network: fills, required arguments, path placeholders, bodies,
//! server URLs.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use toolgate_model::config::{ContextField, Secret};
use toolgate_model::openapi::{
    BodyEncoding, BodyField, BodyLayout, Fill, FillFrom, ParamLocation, ParamStyle, RequestBody,
    Server, ServerVariable,
};

use super::super::request::{Body, Part, apply_fills, base_url, build, decode_base64};
use super::super::style::param;
use super::op;
use crate::{ErrorKind, ToolContext};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn c11_path_values_are_single_segments() {
    let mut o = op("get_file", "GET", "/repos/{owner}/{name}/files/{path}");
    for n in ["owner", "name", "path"] {
        let mut p = param(n, ParamLocation::Path, ParamStyle::Simple, false);
        p.required = true;
        o.parameters.push(p);
    }
    let parts = build(
        "t",
        &o,
        &obj(json!({"owner": "acme", "name": "web site", "path": "docs/a?b#c%.md"})),
    )
    .unwrap();
    assert_eq!(
        parts.path,
        "/repos/acme/web%20site/files/docs%2Fa%3Fb%23c%25.md"
    );
    let err = build("t", &o, &obj(json!({"owner": "acme", "name": "x"}))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert!(
        err.message().contains("missing path parameter 'path'"),
        "{err}"
    );
    // a placeholder no parameter declares is caught too
    let o = op("x", "GET", "/a/{undeclared}");
    let err = build("t", &o, &Map::new()).unwrap_err();
    assert!(
        err.message()
            .contains("missing path parameter 'undeclared'"),
        "{err}"
    );
}

#[test]
fn required_parameters_fail_before_any_request() {
    let mut o = op("s", "GET", "/s");
    let mut p = param("q", ParamLocation::Query, ParamStyle::Form, true);
    p.required = true;
    o.parameters.push(p);
    let err = build("svc.s", &o, &Map::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert_eq!(err.argument_errors()[0].pointer, "/q");
    // null counts as missing
    assert!(build("svc.s", &o, &obj(json!({"q": null}))).is_err());
}

#[test]
fn fills_value_context_and_default() {
    let mut o = op("s", "GET", "/s");
    let mut tenant = param("tenant", ParamLocation::Query, ParamStyle::Form, true);
    tenant.required = true;
    o.parameters.push(tenant);
    o.parameters
        .push(param("org", ParamLocation::Query, ParamStyle::Form, true));
    o.parameters.push(param(
        "per_page",
        ParamLocation::Query,
        ParamStyle::Form,
        true,
    ));
    o.fills = vec![
        Fill {
            arg: "org".into(),
            from: FillFrom::Value("${ORG}".into()),
        },
        Fill {
            arg: "tenant".into(),
            from: FillFrom::Context(ContextField::Caller),
        },
        Fill {
            arg: "per_page".into(),
            from: FillFrom::Default(json!(30)),
        },
    ];
    let values = BTreeMap::from([("org".to_string(), Secret::new("acme"))]);
    let ctx = ToolContext::builder().caller("alice").build();
    let mut args = Map::new();
    apply_fills("t", &o, &values, &mut args, &ctx).unwrap();
    assert_eq!(
        Value::Object(args.clone()),
        json!({"org": "acme", "tenant": "alice", "per_page": 30})
    );
    let parts = build("t", &o, &args).unwrap();
    assert_eq!(parts.query, ["tenant=alice", "org=acme", "per_page=30"]);
    // a default does not override what the model gave
    let mut args = obj(json!({"per_page": 5}));
    apply_fills("t", &o, &values, &mut args, &ctx).unwrap();
    assert_eq!(args["per_page"], 5);
    // a required context fill without the context fails, naming the argument
    let err = apply_fills("t", &o, &values, &mut Map::new(), &ToolContext::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert_eq!(err.argument_errors()[0].pointer, "/tenant");
}

fn body(encoding: BodyEncoding, media: &str, layout: BodyLayout) -> RequestBody {
    RequestBody {
        media_type: media.into(),
        encoding,
        required: true,
        layout,
        file_fields: Vec::new(),
        encodings: Default::default(),
        xml: None,
    }
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

#[test]
fn bodies_by_encoding() {
    let mut o = op("p", "POST", "/p");
    o.body = Some(body(
        BodyEncoding::Json,
        "application/json",
        flat(&["a", "b"]),
    ));
    let parts = build("t", &o, &obj(json!({"a": 1, "b": [true]}))).unwrap();
    assert_eq!(
        parts.body,
        Some((
            "application/json".into(),
            Body::Json(json!({"a": 1, "b": [true]}))
        ))
    );

    o.body = Some(body(
        BodyEncoding::Form,
        "application/x-www-form-urlencoded",
        flat(&["grant_type", "scope"]),
    ));
    let parts = build(
        "t",
        &o,
        &obj(json!({"grant_type": "client_credentials", "scope": ["read", "write"]})),
    )
    .unwrap();
    assert_eq!(
        parts.body.unwrap().1,
        Body::Form("grant_type=client_credentials&scope=read&scope=write".into())
    );

    o.body = Some(body(
        BodyEncoding::Text,
        "text/plain",
        BodyLayout::Property { arg: "body".into() },
    ));
    let parts = build("t", &o, &obj(json!({"body": "hello"}))).unwrap();
    assert_eq!(parts.body.unwrap().1, Body::Text("hello".into()));

    o.body = Some(body(
        BodyEncoding::Binary,
        "image/png",
        BodyLayout::Property { arg: "body".into() },
    ));
    let parts = build("t", &o, &obj(json!({"body": "AAEC"}))).unwrap();
    assert_eq!(parts.body.unwrap().1, Body::Binary(vec![0, 1, 2]));
    let err = build("t", &o, &obj(json!({"body": "!!"}))).unwrap_err();
    assert_eq!(err.argument_errors()[0].pointer, "/body");
    let err = build("t", &o, &Map::new()).unwrap_err();
    assert!(err.message().contains("request body is required"), "{err}");

    let mut mp = body(
        BodyEncoding::Multipart,
        "multipart/form-data",
        flat(&["file", "meta", "tags"]),
    );
    mp.file_fields = vec!["file".into()];
    o.body = Some(mp);
    let parts = build(
        "t",
        &o,
        &obj(json!({"file": "aGk=", "meta": {"k": 1}, "tags": ["a", "b"]})),
    )
    .unwrap();
    assert_eq!(
        parts.body.unwrap().1,
        Body::Multipart(vec![
            Part::File {
                name: "file".into(),
                bytes: b"hi".to_vec(),
                content_type: "application/octet-stream".into(),
            },
            Part::Text {
                name: "meta".into(),
                value: r#"{"k":1}"#.into(),
                content_type: Some("application/json".into()),
            },
            Part::Text {
                name: "tags".into(),
                value: "a".into(),
                content_type: None,
            },
            Part::Text {
                name: "tags".into(),
                value: "b".into(),
                content_type: None,
            },
        ])
    );
}

#[test]
fn base64_alphabets() {
    assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
    assert_eq!(decode_base64("aGk").unwrap(), b"hi");
    assert_eq!(decode_base64("data:text/plain;base64,aGk=").unwrap(), b"hi");
    assert_eq!(decode_base64("-_8").unwrap(), vec![0xfb, 0xff]);
    assert!(decode_base64("%%").is_none());
}

fn server(url: &str) -> Server {
    Server {
        url: url.into(),
        description: None,
        variables: BTreeMap::new(),
    }
}

#[test]
fn server_urls() {
    let none = BTreeMap::new();
    // config wins; the trailing slash goes so that the path appends to the base path
    let u = base_url(
        Some("https://api.x/v2/"),
        &[],
        &[server("https://other")],
        &none,
        None,
    )
    .unwrap();
    assert_eq!(
        super::super::request::full_url(&u, "/pets", &[])
            .unwrap()
            .as_str(),
        "https://api.x/v2/pets"
    );
    // operation servers win over the document's
    let u = base_url(
        None,
        &[server("https://op.x")],
        &[server("https://doc.x")],
        &none,
        None,
    )
    .unwrap();
    assert_eq!(u.host_str(), Some("op.x"));
    // relative: against the document URL, or an error
    let spec: reqwest::Url = "https://specs.x/apis/petstore.json".parse().unwrap();
    let u = base_url(None, &[], &[server("/api")], &none, Some(&spec)).unwrap();
    assert_eq!(u.as_str(), "https://specs.x/api");
    let err = base_url(None, &[], &[server("/api")], &none, None).unwrap_err();
    assert!(err.contains("relative"), "{err}");
    // never a host with `{`
    let err = base_url(Some("https://{region}.x"), &[], &[], &none, None).unwrap_err();
    assert!(err.contains('{'), "{err}");
    // a server with variables goes through Server::resolve; its errors are kept
    let mut s = server("https://{region}.api.example.com/v2");
    s.variables.insert(
        "region".into(),
        ServerVariable {
            default: "eu".into(),
            allowed: vec!["eu".into(), "us".into()],
            description: None,
        },
    );
    let r = base_url(
        None,
        &[],
        &[s],
        &BTreeMap::from([("region".to_string(), "ap".to_string())]),
        None,
    );
    assert!(r.is_err());
}
