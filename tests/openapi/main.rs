//! OpenAPI operations called for real: each document's operations converted into tools
//! (`toolgate_model::openapi::convert`), called through a `toolgate_runtime::OpenApiSource`
//! with schema-valid generated arguments, against prism (npm `@stoplight/prism-cli`, installed
//! by `scripts/install-peers.sh`) mocking the same document. Prism rejects any request that
//! breaks the document (path, query, headers, body, content type), so a clean run means every
//! HTTP request toolgate built was right.
//!
//! The documents are the vendored real ones (`tests/specs/`, see its SOURCES.md): the Swagger
//! petstore, every OAI example with operations, the readme parameter-style and form-data edge
//! cases, and fixed samples of GitHub (≥ 100 operations) and Stripe (≥ 50), recorded in
//! `tests/openapi/samples/`.
//!
//! `prism.rs` runs prism, `recorder.rs` sits between the source and prism and keeps every
//! request and prism's verdict, `args.rs` generates arguments, `acceptance.rs` runs a document.
#![cfg(feature = "gateway")]

mod acceptance;
mod args;
mod prism;
mod recorder;

use acceptance::{Case, Sample, run_all};
use prism::Prism;

fn petstore_path() -> std::path::PathBuf {
    acceptance::repo().join("tests/specs/petstore/swagger-petstore3-openapi.yaml")
}

/// The harness itself: prism accepts a valid petstore request (200, no violations) and flags
/// invalid ones (422 for a body that breaks the schema; the operation's own 400 with an
/// `sl-violations` header for a bad path parameter; 401 without credentials), and serves paths
/// without the server URL's `/api/v3` prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prism_flags_requests_that_break_the_spec() {
    let prism = tokio::task::spawn_blocking(|| Prism::start(&petstore_path()))
        .await
        .expect("start prism");
    let client = reqwest::Client::new();
    let send = |req: reqwest::RequestBuilder| async move {
        let r = req.send().await.expect("prism answers");
        let status = r.status().as_u16();
        let violations = r
            .headers()
            .get("sl-violations")
            .map(|v| v.to_str().unwrap_or_default().to_string());
        (status, violations)
    };

    let valid = client
        .post(prism.url("/pet"))
        .bearer_auth("token")
        .json(&serde_json::json!({"name": "rex", "photoUrls": ["https://example.com/rex.png"]}));
    assert_eq!(send(valid).await, (200, None), "a valid addPet");

    let bad_body = client
        .post(prism.url("/pet"))
        .bearer_auth("token")
        .json(&serde_json::json!({"name": 5}));
    let (status, violations) = send(bad_body).await;
    assert_eq!(status, 422, "addPet with a body that breaks the schema");
    let violations = prism::Violations::parse(violations.as_deref());
    assert!(
        violations.request.len() >= 2,
        "missing photoUrls and a non-string name: {violations:?}"
    );

    let bad_path = client.get(prism.url("/pet/abc")).header("api_key", "k");
    let (status, violations) = send(bad_path).await;
    assert_eq!(
        status, 400,
        "getPetById declares a 400 response, which prism uses"
    );
    let violations = prism::Violations::parse(violations.as_deref());
    assert_eq!(violations.request.len(), 1, "{violations:?}");

    let no_credentials = client.get(prism.url("/pet/findByStatus?status=sold"));
    let (status, violations) = send(no_credentials).await;
    assert_eq!(status, 401);
    let violations = prism::Violations::parse(violations.as_deref());
    assert!(violations.request.is_empty() && violations.security.len() == 1);

    let prefixed = client
        .get(prism.url("/api/v3/pet/1"))
        .header("api_key", "k");
    assert_eq!(
        send(prefixed).await.0,
        404,
        "prism does not serve the server URL's path"
    );
    let found = client.get(prism.url("/pet/1")).header("api_key", "k");
    assert_eq!(send(found).await, (200, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn petstore_every_operation() {
    let reports = run_all(
        "petstore",
        &[Case {
            label: "petstore",
            path: "tests/specs/petstore/swagger-petstore3-openapi.yaml".into(),
            view: false,
            sample: Sample::All,
            optional: false,
            known: &[],
        }],
    )
    .await;
    assert_eq!(reports[0].calls, 19, "every petstore operation is called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oai_examples_every_operation() {
    const DOCS: &[(&str, &str)] = &[
        ("oai30_api_with_examples", "oai-v3.0-api-with-examples.yaml"),
        ("oai30_callback", "oai-v3.0-callback-example.yaml"),
        ("oai30_link", "oai-v3.0-link-example.yaml"),
        ("oai30_petstore_expanded", "oai-v3.0-petstore-expanded.yaml"),
        ("oai30_petstore", "oai-v3.0-petstore.yaml"),
        ("oai30_uspto", "oai-v3.0-uspto.yaml"),
        ("oai31_non_oauth_scopes", "oai-v3.1-non-oauth-scopes.yaml"),
        ("oai31_tictactoe", "oai-v3.1-tictactoe.yaml"),
        ("oai31_webhook", "oai-v3.1-webhook-example.yaml"),
        ("oai32_tags", "oai-v3.2-3.2-tags-example.yaml"),
    ];
    let cases: Vec<Case> = DOCS
        .iter()
        .map(|(label, file)| Case {
            label,
            path: format!("tests/specs/oai-examples/{file}"),
            view: false,
            sample: Sample::All,
            optional: false,
            known: &[],
        })
        .collect();
    let reports = run_all("OAI examples", &cases).await;
    assert!(
        reports.len() >= 8,
        "documents with operations: {}",
        reports.len()
    );
}

/// `multipart/form-data` bodies of the readme parameter-style document. Its `encoding` entries
/// give `style` / `explode`, which OAS 3.0.3 says "SHALL be ignored if the request body media
/// type is not application/x-www-form-urlencoded" (this is a 3.0.3 document): toolgate sends an
/// object field as a JSON part and an array as one part per item; prism 5.14 applies the style
/// to multipart anyway ("Reserved characters used in request body" for the JSON text), reads a
/// one-item array as a string and a JSON part without a part `Content-Type` as a string.
const MULTIPART_STYLES: &[(&str, &str)] = &[
    (
        "POST /anything/form-data",
        "multipart: prism reads a 1-item array part and a JSON object part (no part Content-Type) as strings",
    ),
    (
        "POST /anything/form-data/deepObject",
        "multipart + encoding style: OAS 3.0.3 ignores style for multipart, prism applies it",
    ),
    (
        "POST /anything/form-data/form",
        "multipart + encoding style: OAS 3.0.3 ignores style for multipart, prism applies it",
    ),
    (
        "PUT /anything/form-data/form",
        "multipart + encoding style: OAS 3.0.3 ignores style for multipart, prism applies it",
    ),
    (
        "POST /anything/form-data/pipeDelimited",
        "multipart + encoding style: OAS 3.0.3 ignores style for multipart, prism applies it",
    ),
    (
        "POST /anything/form-data/spaceDelimited",
        "multipart + encoding style: OAS 3.0.3 ignores style for multipart, prism applies it",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_parameter_styles_and_form_data() {
    run_all(
        "readme edge cases",
        &[
            Case {
                label: "readme_param_style",
                path: "tests/specs/readme-oas-examples/readme-3.0-parameters-style.yaml".into(),
                view: false,
                sample: Sample::All,
                optional: true,
                known: MULTIPART_STYLES,
            },
            Case {
                label: "readme_form_data",
                path: "tests/specs/readme-oas-examples/readme-3.0-form-data.yaml".into(),
                view: false,
                sample: Sample::All,
                optional: true,
                known: &[],
            },
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_sample() {
    let reports = run_all(
        "GitHub sample",
        &[Case {
            label: "github",
            path: "tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json".into(),
            view: true,
            sample: Sample::Every { min: 100 },
            optional: false,
            known: &[],
        }],
    )
    .await;
    assert!(reports[0].calls >= 100, "calls: {}", reports[0].calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_sample() {
    let reports = run_all(
        "Stripe sample",
        &[Case {
            label: "stripe",
            path: "tests/specs/stripe/stripe-spec3-2023-09-12.yaml".into(),
            view: true,
            sample: Sample::Every { min: 50 },
            optional: false,
            known: &[],
        }],
    )
    .await;
    assert!(reports[0].calls >= 50, "calls: {}", reports[0].calls);
}
