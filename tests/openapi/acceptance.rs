//! One acceptance run: an OpenAPI document converted into tools, served by prism, every
//! (sampled) operation called through a real `OpenApiSource` with generated arguments, and
//! what prism thought of each request collected.
//!
//! A call *fails* when the request it sent breaks the document: status 422, or any
//! `sl-violations` entry besides missing credentials (prism answers a bad request with the
//! operation's own `400` when it declares one, so the header is what counts), or when toolgate
//! sent nothing at all for schema-valid arguments. Other statuses (401, 404, 400 without
//! violations, ...) are prism's normal answers and only counted. A generator failure (no
//! schema-valid arguments found) is reported separately: it is not a toolgate failure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_model::openapi::{Conversion, ConvertOptions, Document, SecurityScheme, convert};
use toolgate_runtime::{OpenApiSource, ToolContext, ToolSource};

use crate::args;
use crate::prism::{self, Prism};
use crate::recorder::{Exchange, Recorder, cut};

/// One document to run.
pub struct Case {
    /// Short name (source id, sample file name, summary row).
    pub label: &'static str,
    /// The document, relative to the repository root.
    pub path: String,
    /// Serve prism [`prism::request_view`] of the document instead of the document itself.
    pub view: bool,
    /// Which operations to call.
    pub sample: Sample,
    /// Fill optional arguments too (every parameter on the wire).
    pub optional: bool,
    /// Operations (`METHOD /path`) whose failure is a known disagreement, each with why:
    /// reported, not failed.
    pub known: &'static [(&'static str, &'static str)],
}

/// Which operations a case calls.
pub enum Sample {
    /// Every operation.
    All,
    /// A fixed sample of at least `min`: every k-th operation (k = operations / min) in
    /// `METHOD /path` order, recorded in `tests/openapi/samples/{label}.txt` the first time and
    /// read from there afterwards, so that it never moves silently.
    Every { min: usize },
}

/// What one case gave.
#[derive(Debug, Default)]
pub struct Report {
    pub label: String,
    /// Operations in the document.
    pub operations: usize,
    /// Tools the conversion made of them.
    pub tools: usize,
    /// Operations the conversion skipped.
    pub skipped: usize,
    /// Operations selected for calling.
    pub selected: usize,
    /// Calls made (selected minus generator failures and unconverted ones).
    pub calls: usize,
    pub ok_2xx: usize,
    /// Other statuses, by status.
    pub other: BTreeMap<u16, usize>,
    /// Calls whose request broke the document.
    pub violations: usize,
    /// Calls where toolgate sent nothing.
    pub not_sent: usize,
    /// Failure descriptions (violations, nothing sent, a sampled operation with no tool).
    pub failures: Vec<String>,
    /// Operations the generator found no valid arguments for.
    pub generator_failures: Vec<String>,
    /// Violations prism reports about parameters or body properties the request does not
    /// have at all (reported, not failed; see [`split_absent`]).
    pub prism_false_positives: Vec<String>,
    /// Failures listed in [`Case::known`] (reported, not failed).
    pub known_failures: Vec<String>,
    /// Valid requests prism crashed on (reported, not failed; prism is restarted).
    pub prism_crashes: Vec<String>,
    /// 2xx responses toolgate turned into an error (reported, not failed).
    pub errors_on_2xx: Vec<String>,
    /// The tail of prism's log, kept when a call failed.
    pub prism_log: String,
    pub prism_load: Duration,
    pub elapsed: Duration,
}

impl Report {
    pub fn row(&self) -> String {
        let other = self
            .other
            .iter()
            .map(|(s, n)| format!("{s}×{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "{:<24} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>5} {:>5} {:>4}  {:>6.1}s {:>6.1}s  {}",
            self.label,
            self.operations,
            self.tools,
            self.skipped,
            self.selected,
            self.calls,
            self.ok_2xx,
            self.other.values().sum::<usize>(),
            self.violations,
            self.generator_failures.len(),
            self.prism_load.as_secs_f64(),
            self.elapsed.as_secs_f64(),
            other
        )
    }

    pub fn header() -> String {
        format!(
            "{:<24} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>5} {:>5} {:>4}  {:>7} {:>7}  {}",
            "document",
            "ops",
            "tools",
            "skip",
            "sel",
            "calls",
            "2xx",
            "other",
            "viol",
            "gen!",
            "prism",
            "total",
            "other statuses"
        )
    }
}

/// The repository root (this package's manifest directory).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Credentials for every scheme the document declares that a gateway can send (`apiKey`,
/// `http` bearer / basic, `oauth2` and `openIdConnect` as a bearer token): prism checks that
/// they are present, not what they are.
fn test_credentials(conversion: &Conversion) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (name, scheme) in &conversion.security_schemes {
        let creds = match scheme {
            SecurityScheme::ApiKey { .. } => json!("test-api-key"),
            SecurityScheme::Http { scheme } if scheme.eq_ignore_ascii_case("bearer") => {
                json!("test-token")
            }
            SecurityScheme::Http { scheme } if scheme.eq_ignore_ascii_case("basic") => {
                json!({"username": "user", "password": "pass"})
            }
            SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. } => {
                json!("test-token")
            }
            _ => continue,
        };
        out.insert(name.clone(), creds);
    }
    out
}

/// `METHOD /path` of every operation of the document, sorted (independent of the conversion,
/// so that an operation it skipped still shows up in a sample).
fn operation_keys(root: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    for (path, item) in root
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for method in item.as_object().into_iter().flatten().map(|(k, _)| k) {
            if matches!(
                method.as_str(),
                "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
            ) {
                keys.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    keys.sort();
    keys
}

fn sample_file(label: &str) -> PathBuf {
    repo()
        .join("tests/openapi/samples")
        .join(format!("{label}.txt"))
}

/// The recorded sample, or (first run) a new one, written down.
fn sample(label: &str, all: &[String], min: usize) -> Vec<String> {
    let file = sample_file(label);
    if let Ok(text) = std::fs::read_to_string(&file) {
        return text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
    }
    let k = (all.len() / min).max(1);
    let picked: Vec<String> = all.iter().step_by(k).cloned().collect();
    let mut text = format!(
        "# The operations tests/openapi calls for `{label}`: every {k}th of the document's {} \
         operations in `METHOD /path` order ({} picked).\n# Generated on the first run; \
         delete this file to pick again.\n",
        all.len(),
        picked.len()
    );
    for key in &picked {
        text.push_str(key);
        text.push('\n');
    }
    std::fs::create_dir_all(file.parent().expect("samples dir")).expect("create samples dir");
    std::fs::write(&file, text).expect("write the sample file");
    picked
}

/// Runs one case; `None` when the document has no operations.
pub async fn run(case: &Case) -> Option<Report> {
    let started = Instant::now();
    let path = repo().join(&case.path);
    let doc = Document::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", case.path));
    let keys = operation_keys(&doc.root);
    if keys.is_empty() {
        return None;
    }
    let probe = convert(&doc, &ConvertOptions::default())
        .unwrap_or_else(|e| panic!("{}: convert: {e}", case.path));
    let creds = test_credentials(&probe);

    // prism, then the recorder in front of it.
    let tmp = tempfile::tempdir().expect("tempdir");
    let served = if case.view {
        let file = tmp.path().join(format!("{}-request-view.json", case.label));
        let view = prism::request_view(&doc.root);
        std::fs::write(&file, serde_json::to_vec(&view).expect("view JSON")).expect("write view");
        file
    } else {
        path.clone()
    };
    let served_again = served.clone();
    let mut prism = tokio::task::spawn_blocking(move || Prism::start(&served))
        .await
        .expect("prism start task");
    let recorder = Recorder::start(&prism.url("")).await;

    let mut config = json!({
        "id": case.label,
        "spec": &case.path,
        "base_url": recorder.url(),
        "allow_private": true,
        "timeout_ms": 30000,
    });
    if !creds.is_empty() {
        config["auth"] = json!({ "schemes": creds });
    }
    let config: toolgate_model::config::OpenApiSource =
        serde_json::from_value(config).expect("an OpenAPI source config");
    let conversion = convert(&doc, &ConvertOptions::for_source(&config))
        .unwrap_or_else(|e| panic!("{}: convert: {e}", case.path));
    let source = OpenApiSource::builder(case.label, conversion.clone())
        .config(&config)
        .build()
        .unwrap_or_else(|e| panic!("{}: build the source: {e}", case.path));

    // Tool name by `METHOD /path`.
    let mut by_key: BTreeMap<String, String> = BTreeMap::new();
    for d in source.tools().into_iter().map(|t| t.descriptor) {
        if let Some(op) = source.operation(&d.name) {
            by_key.insert(format!("{} {}", op.method, op.path), d.name.clone());
        }
    }
    let selected = match case.sample {
        Sample::All => keys.clone(),
        Sample::Every { min } => sample(case.label, &keys, min),
    };

    let mut report = Report {
        label: case.label.to_string(),
        operations: keys.len(),
        tools: conversion.tools.len(),
        skipped: conversion.skipped.len(),
        selected: selected.len(),
        prism_load: prism.load_time,
        ..Report::default()
    };
    let ctx = ToolContext::default();
    for key in &selected {
        let Some(name) = by_key.get(key) else {
            let why = conversion
                .skipped
                .iter()
                .find(|s| format!("{} {}", s.method, s.path) == *key)
                .map(|s| format!("skipped by the conversion: {}", s.reason.message))
                .unwrap_or_else(|| "no tool for it".into());
            if matches!(case.sample, Sample::Every { .. }) {
                report.failures.push(format!("{key}: sampled, but {why}"));
            } else {
                report.generator_failures.push(format!("{key}: {why}"));
            }
            continue;
        };
        let descriptor = source.descriptor(name).expect("descriptor");
        let arguments = match args::generate_with(&descriptor.input_schema, case.optional) {
            Ok(a) => a,
            Err(e) => {
                report
                    .generator_failures
                    .push(format!("{key} ({name}): {}", cut(&e.to_string(), 600)));
                continue;
            }
        };
        let before = recorder.len();
        let result = tokio::time::timeout(
            Duration::from_secs(40),
            source.call_named(name, arguments.clone(), &ctx),
        )
        .await;
        let exchanges = recorder.since(before);
        report.calls += 1;
        let outcome = match &result {
            Err(_) => "timed out".to_string(),
            Ok(Ok(out)) if out.is_error => format!("is_error: {}", cut(&out.text_joined(), 300)),
            Ok(Ok(_)) => "ok".to_string(),
            Ok(Err(e)) => format!("{:?}: {}", e.kind(), cut(e.message(), 300)),
        };
        let Some(exchange) = exchanges.last() else {
            report.not_sent += 1;
            report.failures.push(format!(
                "{key} ({name}): nothing sent for schema-valid arguments\n    args: {}\n    result: {outcome}",
                cut(&arguments.to_string(), 800)
            ));
            continue;
        };
        if exchange.status == 599 && prism_died(&mut prism).await {
            // Prism died of this (valid) request: its bug, not toolgate's. Noted, and prism
            // is started again for the next calls.
            report.prism_crashes.push(format!(
                "{key} ({name}): {}\n    sent: {}",
                prism.crash_reason(),
                exchange.describe_request(300)
            ));
            let spec = served_again.clone();
            prism = tokio::task::spawn_blocking(move || Prism::start(&spec))
                .await
                .expect("prism restart task");
            recorder.set_upstream(&prism.url(""));
            continue;
        }
        record(&mut report, key, name, &arguments, exchange, &outcome);
    }
    let (known, failures): (Vec<String>, Vec<String>) = std::mem::take(&mut report.failures)
        .into_iter()
        .partition(|f| {
            case.known
                .iter()
                .any(|(k, _)| f.starts_with(&format!("{k} (")))
        });
    report.failures = failures;
    for f in known {
        let why = case
            .known
            .iter()
            .find(|(k, _)| f.starts_with(&format!("{k} (")))
            .map_or("", |(_, why)| why);
        report
            .known_failures
            .push(format!("{} — {why}", f.lines().next().unwrap_or_default()));
    }
    report.elapsed = started.elapsed();
    if !report.failures.is_empty() {
        report.prism_log = prism.log_tail();
    }
    drop(recorder);
    drop(prism);
    Some(report)
}

fn record(
    report: &mut Report,
    key: &str,
    name: &str,
    arguments: &Value,
    exchange: &Exchange,
    outcome: &str,
) {
    if exchange.status == 599 {
        report.failures.push(format!(
            "{key} ({name}): the recorder could not forward the request to prism\n    args: {}\n    sent: {}\n    error: {}",
            cut(&arguments.to_string(), 800),
            exchange.describe_request(800),
            String::from_utf8_lossy(&exchange.response_body),
        ));
        return;
    }
    let (real, absent) = split_absent(exchange);
    if !absent.is_empty() {
        report.prism_false_positives.push(format!(
            "{key} ({name}): prism {} for parameters/properties not sent: {}",
            exchange.status,
            absent.join("; ")
        ));
    }
    let broke = !real.is_empty() || (exchange.status == 422 && absent.is_empty());
    if broke {
        report.violations += 1;
        let mut text = String::new();
        let _ = write!(
            text,
            "{key} ({name}): prism {}\n    args: {}\n    sent: {}\n    violations: {}\n    body: {}",
            exchange.status,
            cut(&arguments.to_string(), 800),
            exchange.describe_request(800),
            exchange.violations_header.as_deref().unwrap_or("-"),
            cut(&String::from_utf8_lossy(&exchange.response_body), 800),
        );
        report.failures.push(text);
    }
    if (200..300).contains(&exchange.status) {
        report.ok_2xx += 1;
        if outcome != "ok" {
            report.errors_on_2xx.push(format!(
                "{key} ({name}): prism {} → {outcome}",
                exchange.status
            ));
        }
    } else {
        *report.other.entry(exchange.status).or_default() += 1;
    }
}

/// Runs `cases` (in order, one prism at a time within this call), prints the table and every
/// failure, and panics when any call broke its document.
pub async fn run_all(title: &str, cases: &[Case]) -> Vec<Report> {
    let mut reports = Vec::new();
    for case in cases {
        match run(case).await {
            Some(r) => reports.push(r),
            None => eprintln!("{title}: {} has no operations: skipped", case.path),
        }
    }
    let mut out = format!("\n== {title} ==\n{}\n", Report::header());
    for r in &reports {
        out.push_str(&r.row());
        out.push('\n');
    }
    for r in &reports {
        for g in &r.generator_failures {
            let _ = writeln!(out, "[generator] {}: {g}", r.label);
        }
        for k in &r.known_failures {
            let _ = writeln!(out, "[known] {}: {k}", r.label);
        }
        for c in &r.prism_crashes {
            let _ = writeln!(out, "[prism crashed] {}: {c}", r.label);
        }
        for p in &r.prism_false_positives {
            let _ = writeln!(out, "[prism false positive] {}: {p}", r.label);
        }
        for e in &r.errors_on_2xx {
            let _ = writeln!(out, "[2xx but error] {}: {e}", r.label);
        }
    }
    let failures: Vec<String> = reports
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("[{}] {f}", r.label)))
        .collect();
    for f in &failures {
        let _ = writeln!(out, "FAIL {f}");
    }
    for r in reports.iter().filter(|r| !r.prism_log.is_empty()) {
        let _ = writeln!(out, "--- prism log tail ({}) ---\n{}", r.label, r.prism_log);
    }
    eprintln!("{out}");
    assert!(
        failures.is_empty(),
        "{title}: {} call(s) broke their document (see above)",
        failures.len()
    );
    reports
}

/// Splits an exchange's request violations into real ones and prism's false positives about
/// something the request does not contain: prism 5.14 validates an *absent* optional
/// `deepObject` query parameter, or an absent object property of a form body, as if it were
/// `{}` and reports its required properties as missing (reproduced with plain curl against the
/// Stripe document: `GET /v1/checkout/sessions` with no query at all gets a 422 "query
/// parameter customer_details must have required property 'email'"). A violation counts as
/// such only when it is a `required` violation at `[query|body, NAME, ...]` and NAME appears
/// nowhere in the query string or body (percent-decoded) as `NAME=`, `NAME[` or `"NAME"`.
fn split_absent(exchange: &Exchange) -> (Vec<String>, Vec<String>) {
    let query = exchange.uri.split_once('?').map_or("", |(_, q)| q);
    let wire = format!(
        "&{}&{}",
        args::percent_decode(&query.replace('+', " ")),
        args::percent_decode(&String::from_utf8_lossy(&exchange.body))
    );
    let mut real = Vec::new();
    let mut absent = Vec::new();
    for v in &exchange.violations.request {
        let text = v.to_string();
        let location: Vec<&str> = v
            .get("location")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let required = v.get("code").and_then(Value::as_str) == Some("required");
        let missing_container = match location.as_slice() {
            ["request", "query" | "body", name, ..] if required => {
                !wire.contains(&format!("&{name}="))
                    && !wire.contains(&format!("&{name}["))
                    && !wire.contains(&format!("\"{name}\""))
            }
            _ => false,
        };
        if missing_container {
            absent.push(
                v.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(&text)
                    .to_string(),
            );
        } else {
            real.push(text);
        }
    }
    (real, absent)
}

/// Whether prism has exited (or does within a second: a crash mid-request closes the
/// connection a moment before the process is gone).
async fn prism_died(prism: &mut Prism) -> bool {
    for _ in 0..20 {
        if !prism.is_running() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
