//! Every real document of `tests/specs/` (SOURCES.md lists them and their operation counts).

use std::path::PathBuf;

use super::*;

pub(super) fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/specs")
}

/// Paths × methods, counted independently of the converter.
fn count_ops(root: &Value) -> usize {
    let m = [
        "get", "put", "post", "delete", "options", "head", "patch", "trace", "query",
    ];
    root.get("paths")
        .and_then(Value::as_object)
        .map(|p| {
            p.values()
                .map(|item| m.iter().filter(|k| item.get(**k).is_some()).count())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn big_documents_convert() {
    for (file, c) in big() {
        let expected = if file.starts_with("github") {
            1223
        } else {
            468
        };
        check_conversion(file, c, Some(expected));
        assert!(
            c.tools.len() > expected * 9 / 10,
            "{file}: {:#?}",
            c.skipped
        );
    }
}

#[test]
fn every_small_document_converts() {
    let known = [
        ("petstore/swagger-petstore3-openapi.yaml", 19),
        ("apis-guru/apisguru-httpbin.org.json", 78),
        ("apis-guru/apisguru-spotify.com.json", 88),
        ("apis-guru/apisguru-slack.com.json", 174),
        ("apis-guru/apisguru-asana.com.json", 167),
        ("apis-guru/apisguru-digitalocean.com.json", 290),
        ("apis-guru/apisguru-xkcd.com.json", 2),
        ("oai-examples/oai-v3.2-3.2-tags-example.yaml", 4),
    ];
    let mut n = 0;
    for folder in [
        "petstore",
        "apis-guru",
        "oai-examples",
        "readme-oas-examples",
    ] {
        let mut files: Vec<_> = std::fs::read_dir(dir().join(folder))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let rel = format!("{folder}/{}", f.file_name().unwrap().to_string_lossy());
            let doc = Document::from_file(&f);
            if rel.contains("2.0") {
                let e = doc.unwrap_err();
                assert!(
                    matches!(&e, OpenApiError::Version { message, .. } if message.contains("OpenAPI 3") && message.contains("swagger2openapi")),
                    "{e}"
                );
                continue;
            }
            let doc = doc.unwrap_or_else(|e| panic!("{rel}: {e}"));
            let c =
                convert(&doc, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}"));
            let expected = known.iter().find(|(k, _)| *k == rel).map(|(_, n)| *n);
            assert_eq!(c.operations, count_ops(&doc.root), "{rel}");
            check_conversion(&rel, &c, expected);
            n += 1;
        }
    }
    assert!(n >= 25, "{n}");
}

/// Conversion times of the big documents (run with `--release -- --ignored --nocapture`).
#[test]
#[ignore = "timing, run in release mode"]
fn timing_big_documents() {
    for f in [
        "github/github-api.github.com-octokit-openapi-23.0.2.json",
        "stripe/stripe-spec3-2023-09-12.yaml",
    ] {
        let t0 = std::time::Instant::now();
        let d = Document::from_file(dir().join(f)).unwrap();
        let t1 = std::time::Instant::now();
        let c = convert(&d, &ConvertOptions::default()).unwrap();
        let t2 = std::time::Instant::now();
        println!(
            "{f}: parse {:?}, convert {:?}, {} tools, {} skipped, {} warnings",
            t1 - t0,
            t2 - t1,
            c.tools.len(),
            c.skipped.len(),
            c.warnings.len()
        );
    }
}
