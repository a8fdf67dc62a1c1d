//! The REST API of `toolgate serve`, over plain HTTP against the real binary: listing and
//! filters, descriptors and dialects, calls of a built-in tool and of server-everything's tools
//! behind the gateway, the ToolError JSON of every error (the request's own included), Host and
//! API-key checks, the body size limit, and `/openapi.json` (validated by openapi-spec-validator,
//! pinned by a snapshot).

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::harness::{
    Served, everything_stdio_entry, peers, request, serve, serve_with_env, tools_yaml,
};

/// A request whose answer must be JSON: (status, body).
fn call_json(
    served: &Served,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let (status, text) = request(served.port(), method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("{method} {path} answered {status} with a body that is not JSON ({e}): {text:?}")
    });
    (status, value)
}

fn get_json(served: &Served, path: &str) -> (u16, Value) {
    call_json(served, "GET", path, &[], None)
}

fn post_json(served: &Served, path: &str, body: &str) -> (u16, Value) {
    call_json(
        served,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body),
    )
}

/// Checks that `body` is a ToolError of `kind` and returns its message.
fn tool_error<'a>(body: &'a Value, kind: &str, context: &str) -> &'a str {
    assert_eq!(body["kind"], kind, "{context}: {body}");
    assert!(body["retryable"].is_boolean(), "{context}: {body}");
    body["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{context}: no message in {body}"))
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no `tools` array in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn builtin() -> Served {
    serve(&tools_yaml("", ""), &[])
}

#[test]
fn tools_are_listed_and_filtered() {
    let served = builtin();
    let (status, all) = get_json(&served, "/tools");
    assert_eq!(status, 200, "{all}");
    let all_names = names(&all);
    for expected in [
        "fetch",
        "read_file",
        "list_dir",
        "calc",
        "jq",
        "current_time",
    ] {
        assert!(
            all_names.iter().any(|n| n == expected),
            "{expected} missing: {all}"
        );
    }
    let calc = all["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "calc"))
        .expect("calc listed");
    assert_eq!(calc["exported_name"], "calc");
    assert_eq!(calc["source"], "local");
    assert_eq!(calc["source_kind"], "local");
    assert_eq!(calc["category"], "compute");
    assert_eq!(calc["tags"], json!(["math"]));
    assert_eq!(calc["annotations"]["readOnlyHint"], true, "{calc}");
    assert!(
        calc["description"]
            .as_str()
            .is_some_and(|d| d.contains("arithmetic"))
    );
    assert!(all.get("definitions").is_none(), "no dialect asked: {all}");

    let cases: &[(&str, &[&str])] = &[
        ("/tools?category=compute", &["calc", "jq"]),
        ("/tools?tag=fs", &["read_file", "list_dir"]),
        ("/tools?category=compute&tag=math", &["calc"]),
        ("/tools?category=compute&tag=fs", &[]),
        ("/tools?q=ARITHMETIC", &["calc"]),
        ("/tools?category=files&q=nothing-like-this", &[]),
        ("/tools?source=nowhere", &[]),
    ];
    for (path, expected) in cases {
        let (status, list) = get_json(&served, path);
        assert_eq!(status, 200, "{path}: {list}");
        assert_eq!(names(&list), *expected, "{path}: {list}");
    }
    let (_, found) = get_json(&served, "/tools?q=jq%20filter");
    assert_eq!(
        names(&found).first().map(String::as_str),
        Some("jq"),
        "{found}"
    );
    let (_, local) = get_json(&served, "/tools?source=local");
    assert_eq!(names(&local), all_names);

    // With a dialect: the listed tools' definitions, in the same order.
    let (status, openai) = get_json(&served, "/tools?category=compute&dialect=openai");
    assert_eq!(status, 200, "{openai}");
    assert_eq!(openai["dialect"], "openai");
    let definitions = openai["definitions"].as_array().expect("definitions");
    let defined: Vec<&str> = definitions
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(defined, ["calc", "jq"], "{openai}");

    // The request's own errors, as ToolError JSON naming what was wrong.
    let (status, body) = get_json(&served, "/tools?categroy=compute");
    assert_eq!(status, 400, "{body}");
    let message = tool_error(&body, "invalid_arguments", "unknown parameter");
    assert!(message.contains("categroy"), "{message}");
    let (status, body) = get_json(&served, "/tools?dialect=klingon");
    assert_eq!(status, 400, "{body}");
    let message = tool_error(&body, "invalid_arguments", "unknown dialect");
    assert!(
        message.contains("klingon") && message.contains("openai-strict"),
        "{message}"
    );
}

#[test]
fn tools_are_searched_with_q_ranked_and_filtered_for_the_caller() {
    // Two API keys; a rule keeps `calc` for admins.
    let keys = "gateway:\n  api_keys:\n    - {name: reader, key: \"${TG_READER}\", roles: [reader]}\n    - {name: admin, key: \"${TG_ADMIN}\", roles: [admin]}\n";
    let base = tools_yaml("", keys);
    let yaml = base.replacen(
        "\npolicy:\n",
        "\npolicy:\n  rules:\n    - {tools: [calc], roles: [admin]}\n",
        1,
    );
    assert_ne!(yaml, base, "tools.yaml has a policy section");
    let served = serve_with_env(
        &yaml,
        &[],
        &[
            ("TG_READER", "reader-key-0123"),
            ("TG_ADMIN", "admin-key-4567"),
        ],
    );
    let get = |path: &str, key: &str| {
        let bearer = format!("Bearer {key}");
        call_json(&served, "GET", path, &[("Authorization", &bearer)], None)
    };

    // Ranked hits, best first, with the listing's fields plus score and matched fields.
    let (status, found) = get(
        "/tools?q=evaluate%20an%20arithmetic%20expression",
        "admin-key-4567",
    );
    assert_eq!(status, 200, "{found}");
    let tools = found["tools"].as_array().expect("tools");
    let first = &tools[0];
    assert_eq!(first["name"], "calc", "{found}");
    assert_eq!(first["exported_name"], "calc");
    assert_eq!(first["source_kind"], "local");
    assert_eq!(first["category"], "compute");
    assert!(first["score"].as_f64().is_some_and(|s| s > 0.0), "{first}");
    let matched = first["matched"].as_array().expect("matched");
    assert!(matched.contains(&json!("description")), "{first}");
    let scores: Vec<f64> = tools.iter().filter_map(|t| t["score"].as_f64()).collect();
    assert_eq!(scores.len(), tools.len(), "every hit has a score: {found}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{found}");

    // The same query for a caller without the role: `calc` is never a hit.
    let (status, found) = get(
        "/tools?q=evaluate%20an%20arithmetic%20expression",
        "reader-key-0123",
    );
    assert_eq!(status, 200, "{found}");
    assert!(!names(&found).contains(&"calc".to_string()), "{found}");

    // `k`, and the listing's filters on top of the query.
    let (status, found) = get("/tools?q=read%20a%20file&k=1", "reader-key-0123");
    assert_eq!(status, 200, "{found}");
    assert_eq!(names(&found), ["read_file"], "{found}");
    let (_, found) = get("/tools?q=file&category=compute", "admin-key-4567");
    assert!(
        names(&found).iter().all(|n| n == "calc" || n == "jq"),
        "{found}"
    );
    let (_, found) = get("/tools?q=file&source=nowhere", "admin-key-4567");
    assert_eq!(names(&found), Vec::<String>::new(), "{found}");
    // With a dialect, the hits' definitions in the same order.
    let (_, found) = get("/tools?q=directory&k=1&dialect=anthropic", "admin-key-4567");
    assert_eq!(names(&found), ["list_dir"], "{found}");
    assert_eq!(found["definitions"][0]["name"], "list_dir", "{found}");
    // Without `q` the listing is as before: no scores.
    let (_, all) = get("/tools", "admin-key-4567");
    assert!(all["tools"][0].get("score").is_none(), "{all}");

    // A query with nothing to search for finds nothing, and says why (the document allows any
    // string up to 1000 characters, so it is no 400).
    for (path, why) in [
        ("/tools?q=", "search query is empty"),
        ("/tools?q=%20%20", "search query is empty"),
        ("/tools?q=the%20of%20a", "only stop words"),
        ("/tools?q=%21%3F", "punctuation"),
    ] {
        let (status, body) = get(path, "admin-key-4567");
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(body["tools"], json!([]), "{path}: {body}");
        let note = body["note"].as_str().unwrap_or_default();
        assert!(note.contains("`q`") && note.contains(why), "{path}: {body}");
    }
    // Without `q`, `k` keeps the first k tools of the listing.
    let (status, first) = get("/tools?k=2", "admin-key-4567");
    assert_eq!(status, 200, "{first}");
    assert_eq!(names(&first), names(&all)[..2], "{first}");
    // A bad `k`, and a `q` over the length limit: 400 with the ToolError body.
    let long = format!("/tools?q={}", "word%20".repeat(600));
    for (path, param) in [
        ("/tools?q=file&k=0", "`k`"),
        ("/tools?k=0", "`k`"),
        ("/tools?k=1.5", "not a whole number"),
        (long.as_str(), "`q`"),
    ] {
        let (status, body) = get(path, "admin-key-4567");
        assert_eq!(status, 400, "{path}: {body}");
        let message = tool_error(&body, "invalid_arguments", path);
        assert!(message.contains(param), "{path}: {message}");
    }
    let (status, body) = get("/tools?q=file&k=many", "admin-key-4567");
    assert_eq!(status, 400, "{body}");
}

#[test]
fn tools_are_described_in_every_dialect() {
    let served = builtin();
    let (status, calc) = get_json(&served, "/tools/calc");
    assert_eq!(status, 200, "{calc}");
    assert_eq!(calc["name"], "calc");
    assert_eq!(calc["input_schema"]["type"], "object", "{calc}");
    assert!(
        calc["input_schema"]["properties"]["expression"].is_object(),
        "{calc}"
    );
    assert!(calc["output_schema"].is_object(), "{calc}");

    let (status, body) = get_json(&served, "/tools/no_such_tool");
    assert_eq!(status, 404, "{body}");
    assert!(tool_error(&body, "not_found", "unknown tool").contains("no_such_tool"));
    for sub in ["schema", "metadata"] {
        let (status, body) = get_json(&served, &format!("/tools/no_such_tool/{sub}"));
        assert_eq!(status, 404, "{sub}: {body}");
        tool_error(&body, "not_found", sub);
    }

    // Where each dialect keeps the arguments' schema.
    let dialects = [
        ("mcp", "/inputSchema"),
        ("openai", "/parameters"),
        ("openai-strict", "/parameters"),
        ("anthropic", "/input_schema"),
        ("gemini", "/parameters"),
    ];
    for (dialect, pointer) in dialects {
        let path = format!("/tools/calc/schema?dialect={dialect}");
        let (status, export) = get_json(&served, &path);
        assert_eq!(status, 200, "{path}: {export}");
        assert_eq!(export["name"], "calc");
        assert_eq!(export["dialect"], dialect);
        assert!(export["notes"].is_array(), "{path}: {export}");
        let schema = export["definition"].pointer(pointer);
        assert!(
            schema.is_some_and(|s| s["properties"]["expression"].is_object()),
            "{path}: no arguments schema at {pointer}: {export}"
        );
    }
    let (_, strict) = get_json(&served, "/tools/calc/schema?dialect=openai-strict");
    assert_eq!(strict["definition"]["strict"], true, "{strict}");
    let (status, default) = get_json(&served, "/tools/calc/schema");
    assert_eq!(
        (status, &default["dialect"]),
        (200, &json!("mcp")),
        "{default}"
    );
    let (status, body) = get_json(&served, "/tools/calc/schema?dialect=openapi");
    assert_eq!(status, 400, "{body}");
    let message = tool_error(&body, "invalid_arguments", "unknown dialect");
    for accepted in ["mcp", "openai", "openai-strict", "anthropic", "gemini"] {
        assert!(message.contains(accepted), "{message}");
    }

    let (status, meta) = get_json(&served, "/tools/fetch/metadata");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["name"], "fetch");
    assert_eq!(meta["exported_name"], "fetch");
    assert_eq!(meta["timeout_ms"], 30000, "fetch declares 30 s: {meta}");
    assert_eq!(meta["category"], "web");
    assert_eq!(meta["tags"], json!(["http"]));
    assert_eq!(meta["annotations"]["readOnlyHint"], true);
    assert_eq!(meta["source"], "local");
    assert_eq!(meta["source_status"]["id"], "local");
    assert_eq!(meta["source_status"]["state"], "ready");
    assert_eq!(meta["dangerous"], false);
}

#[test]
fn calls_answer_with_the_output_or_the_error_and_its_status() {
    let served = builtin();
    let (status, out) = post_json(&served, "/tools/calc/call", r#"{"expression":"2+3"}"#);
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["value"], 5, "{out}");
    assert!(
        out["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains('5')),
        "{out}"
    );
    assert!(out.get("isError").is_none(), "{out}");

    // Without a Content-Type, and with a short timeout that is not reached.
    let (status, out) = call_json(
        &served,
        "POST",
        "/tools/calc/call?timeout_ms=10000",
        &[],
        Some(r#"{"expression":"6*7"}"#),
    );
    assert_eq!(
        (status, &out["structuredContent"]["value"]),
        (200, &json!(42)),
        "{out}"
    );
    // An empty body is no arguments (current_time's are all optional).
    let (status, out) = call_json(&served, "POST", "/tools/current_time/call", &[], None);
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["time_zone"], "UTC", "{out}");

    let (status, body) = post_json(&served, "/tools/calc/call", r#"{"expression":5}"#);
    assert_eq!(status, 422, "{body}");
    tool_error(&body, "invalid_arguments", "wrong type");
    let errors = body["details"]["errors"]
        .as_array()
        .expect("details.errors");
    assert!(
        errors.iter().any(|e| e["pointer"] == "/expression"),
        "{body}"
    );
    let (status, body) = post_json(&served, "/tools/calc/call", "{}");
    assert_eq!(status, 422, "{body}");
    assert!(tool_error(&body, "invalid_arguments", "missing").contains("expression"));

    let (status, body) = post_json(&served, "/tools/calc/call", r#"{"expression": "2+"#);
    assert_eq!(status, 400, "{body}");
    let message = tool_error(&body, "invalid_arguments", "not JSON");
    assert!(
        message.contains("not valid JSON") && message.contains("column"),
        "{message}"
    );
    let (status, body) = post_json(&served, "/tools/calc/call", r#"["2+3"]"#);
    assert_eq!(status, 422, "{body}");
    assert!(tool_error(&body, "invalid_arguments", "array").contains("not an array"));
    assert_eq!(body["details"]["errors"][0]["pointer"], "", "{body}");
    let (status, body) = call_json(
        &served,
        "POST",
        "/tools/calc/call",
        &[("Content-Type", "text/plain")],
        Some(r#"{"expression":"2+3"}"#),
    );
    assert_eq!(status, 415, "{body}");
    assert!(tool_error(&body, "invalid_arguments", "415").contains("text/plain"));

    let (status, body) = post_json(&served, "/tools/no_such_tool/call", "{}");
    assert_eq!(status, 404, "{body}");
    tool_error(&body, "not_found", "unknown tool");
    let (status, body) = post_json(&served, "/tools/calc/call?timeout_ms=0", "{}");
    assert_eq!(status, 400, "{body}");
    assert!(tool_error(&body, "invalid_arguments", "timeout 0").contains("timeout_ms"));

    // axum's own refusals come as ToolError JSON too.
    let (status, body) = get_json(&served, "/tools/calc/call");
    assert_eq!(status, 405, "{body}");
    assert!(tool_error(&body, "not_found", "405").contains("GET"));
    let (status, body) = get_json(&served, "/no/such/route");
    assert_eq!(status, 404, "{body}");
    assert!(tool_error(&body, "not_found", "route").contains("/no/such/route"));
    let (status, body) = call_json(&served, "DELETE", "/tools", &[], None);
    assert_eq!(status, 405, "{body}");
}

#[test]
fn tools_of_an_mcp_server_behind_the_gateway() {
    let yaml = tools_yaml(&everything_stdio_entry("everything", ""), "");
    let served = serve(&yaml, &[]);

    let (status, sources) = get_json(&served, "/sources");
    assert_eq!(status, 200, "{sources}");
    let everything = sources["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "everything"))
        .unwrap_or_else(|| panic!("no everything in {sources}"));
    assert_eq!(everything["kind"], "mcp", "{everything}");
    assert_eq!(everything["state"], "ready", "{everything}");
    assert!(
        everything["tools"].as_u64().is_some_and(|n| n > 0),
        "{everything}"
    );
    assert!(everything.get("error").is_none(), "{everything}");

    let (status, list) = get_json(&served, "/tools?source=everything");
    assert_eq!(status, 200, "{list}");
    let echo = list["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "everything.echo"))
        .unwrap_or_else(|| panic!("no everything.echo in {list}"));
    assert_eq!(echo["exported_name"], "everything__echo");
    assert_eq!(echo["source_kind"], "mcp");
    assert_eq!(
        names(&list).len() as u64,
        everything["tools"].as_u64().unwrap_or_default(),
        "/tools?source= and /sources disagree"
    );
    let (_, found) = get_json(&served, "/tools?q=ECHO&source=everything");
    assert_eq!(
        names(&found).first().map(String::as_str),
        Some("everything.echo"),
        "{found}"
    );

    for name in ["everything.echo", "everything__echo"] {
        let (status, d) = get_json(&served, &format!("/tools/{name}"));
        assert_eq!(status, 200, "{name}: {d}");
        assert_eq!(d["name"], "everything.echo");
        assert!(
            d["input_schema"]["properties"]["message"].is_object(),
            "{d}"
        );
        let (status, out) = post_json(
            &served,
            &format!("/tools/{name}/call"),
            r#"{"message":"hi"}"#,
        );
        assert_eq!(status, 200, "{name}: {out}");
        let text = out["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("hi"), "{name}: {out}");
    }
    let (status, meta) = get_json(&served, "/tools/everything__echo/metadata");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["source_status"]["kind"], "mcp", "{meta}");
    let (status, body) = post_json(&served, "/tools/everything.echo/call", r#"{"message":3}"#);
    assert_eq!(status, 422, "{body}");
    tool_error(&body, "invalid_arguments", "remote tool, bad arguments");
    let (status, body) = get_json(&served, "/tools/everything.no_such_tool");
    assert_eq!(status, 404, "{body}");
}

#[test]
fn host_header_and_api_keys_are_checked() {
    let key = "rest-test-key-8c1f";
    let yaml = tools_yaml(
        "",
        "gateway:\n  allowed_hosts: [10.0.0.0/8]\n  api_keys:\n    - {name: ci, key: \"${TOOLGATE_TEST_KEY}\", roles: [reader]}\n",
    );
    let served = serve_with_env(&yaml, &[], &[("TOOLGATE_TEST_KEY", key)]);
    let bearer = format!("Bearer {key}");

    // An address in a listed network is a Host like a listed name (a scrape by pod IP); one
    // outside it is refused, and the refusal names the networks.
    let (status, body) = call_json(
        &served,
        "GET",
        "/tools",
        &[("Host", "10.0.0.7:8787"), ("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = call_json(
        &served,
        "GET",
        "/tools",
        &[("Host", "11.0.0.7:8787"), ("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        tool_error(&body, "permission_denied", "host").contains("addresses in 10.0.0.0/8"),
        "{body}"
    );

    let (status, body) = get_json(&served, "/tools");
    assert_eq!(status, 401, "{body}");
    assert!(tool_error(&body, "permission_denied", "no key").contains("API key"));
    let (status, body) = call_json(
        &served,
        "GET",
        "/tools",
        &[("Authorization", "Bearer nope")],
        None,
    );
    assert_eq!(status, 401, "{body}");
    let (status, body) = post_json(&served, "/tools/calc/call", r#"{"expression":"2+3"}"#);
    assert_eq!(status, 401, "calls need the key too: {body}");

    let (status, list) = call_json(
        &served,
        "GET",
        "/tools",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 200, "{list}");
    let (status, out) = call_json(
        &served,
        "POST",
        "/tools/calc/call",
        &[("X-API-Key", key), ("Content-Type", "application/json")],
        Some(r#"{"expression":"2+3"}"#),
    );
    assert_eq!(
        (status, &out["structuredContent"]["value"]),
        (200, &json!(5)),
        "{out}"
    );

    // The probes answer without a key, whatever the Host.
    let (status, body) = get_json(&served, "/healthz");
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let (status, body) = call_json(&served, "GET", "/readyz", &[("Host", "pod-10-0-0-7")], None);
    assert_eq!(
        (status, body),
        (200, json!({"status": "ready", "pending": []}))
    );

    // Any other Host is refused before the key is looked at.
    let (status, body) = call_json(
        &served,
        "GET",
        "/tools",
        &[("Host", "evil.example:8787"), ("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 403, "{body}");
    assert!(tool_error(&body, "permission_denied", "host").contains("evil.example"));
    let (status, body) = call_json(
        &served,
        "GET",
        "/sources",
        &[
            ("Origin", "https://evil.example"),
            ("Authorization", &bearer),
        ],
        None,
    );
    assert_eq!(status, 403, "{body}");

    // The document says a key is needed, except for the probes.
    let (status, doc) = call_json(
        &served,
        "GET",
        "/openapi.json",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 200, "{doc}");
    assert_eq!(
        doc["security"],
        json!([{"bearer": []}, {"apiKey": []}]),
        "{}",
        doc["security"]
    );
    assert_eq!(doc["paths"]["/healthz"]["get"]["security"], json!([{}]));
    assert!(doc["paths"]["/tools"]["get"]["responses"]["401"].is_object());
}

#[test]
fn an_allowed_hosts_entry_that_is_no_network_stops_the_gateway_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.yaml");
    std::fs::write(
        &config,
        tools_yaml("", "gateway:\n  allowed_hosts: [10.0.0.0/33]\n"),
    )
    .unwrap();
    let out = std::process::Command::new(crate::harness::BIN)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("tools.yaml:")
            && stderr.contains("`10.0.0.0/33` is not a network in CIDR notation"),
        "{stderr}"
    );
}

#[test]
fn bodies_over_the_limit_are_refused_with_413() {
    let yaml = tools_yaml("", "gateway:\n  max_body_bytes: 1024\n");
    let served = serve(&yaml, &[]);
    let small = format!(r#"{{"expression":"1+1","pad":"{}"}}"#, "x".repeat(900));
    let (status, body) = post_json(&served, "/tools/calc/call", &small);
    assert_eq!(
        status, 422,
        "under the limit, refused only for the unknown `pad`: {body}"
    );
    let big = format!(r#"{{"expression":"1+1","pad":"{}"}}"#, "x".repeat(4096));
    let (status, body) = post_json(&served, "/tools/calc/call", &big);
    assert_eq!(status, 413, "{body}");
    let message = tool_error(&body, "invalid_arguments", "413");
    assert!(
        message.contains("1024") && message.contains("max_body_bytes"),
        "{message}"
    );
}

#[test]
fn the_openapi_document_validates_and_describes_every_route() {
    let served = builtin();
    let (status, doc) = get_json(&served, "/openapi.json");
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "toolgate");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        doc["servers"],
        json!([{"url": "/", "description": "The gateway that serves this document."}])
    );

    // Every operation: a unique operationId, served (not the 404 fallback), and every error
    // response described by the ToolError schema.
    let mut ids = HashSet::new();
    let paths = doc["paths"].as_object().expect("paths");
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path}"));
            assert!(ids.insert(id.to_string()), "operationId {id} twice");
            let concrete = path.replace("{name}", "calc").replace("{path}", "SKILL.md");
            let (status, body) = request(
                served.port(),
                &method.to_uppercase(),
                &concrete,
                &[],
                Some("{\"expression\":\"1\"}"),
            )
            .expect("request");
            // This gateway has no skills: a skill route answers its own 404, not the fallback's.
            let fallback =
                status == 404 && (!path.starts_with("/skills") || body.contains("no route"));
            assert!(
                !fallback && status != 405,
                "{method} {path} is documented but answers {status}: {body}"
            );
            for (code, response) in op["responses"].as_object().expect("responses") {
                if code.starts_with('2') || path == "/readyz" {
                    continue;
                }
                let schema = match response.get("$ref").and_then(Value::as_str) {
                    Some(r) => {
                        let name = r.trim_start_matches("#/components/responses/");
                        doc["components"]["responses"][name]["content"]["application/json"]["schema"].clone()
                    }
                    None => response["content"]["application/json"]["schema"].clone(),
                };
                assert_eq!(
                    schema,
                    json!({"$ref": "#/components/schemas/ToolError"}),
                    "{method} {path} {code}"
                );
            }
        }
    }
    let expected = [
        "listTools",
        "getTool",
        "getToolSchema",
        "getToolMetadata",
        // One operation per tool, in place of the template `callTool`.
        "call_fetch",
        "call_read_file",
        "call_list_dir",
        "call_calc",
        "call_jq",
        "call_current_time",
        "callTools",
        "listSources",
        "getHealth",
        "getReadiness",
        "getOpenApi",
        "listSkills",
        "getSkill",
        "getSkillFile",
    ];
    assert_eq!(
        ids,
        expected
            .iter()
            .map(|s| s.to_string())
            .collect::<HashSet<_>>()
    );
    // Every $ref resolves.
    let text = doc.to_string();
    for r in text.split("\"$ref\":\"").skip(1) {
        let target = &r[..r.find('"').unwrap_or(0)];
        let pointer = target.trim_start_matches('#');
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {target}");
    }

    // openapi-spec-validator (PyPI), installed by scripts/install-peers.sh.
    let python = peers::require_installed(
        peers::peers_root().join("venv-fastmcp/bin/python"),
        "the fastmcp venv (openapi-spec-validator)",
    );
    let file = crate::harness::scratch(&served, "openapi.json");
    std::fs::write(&file, serde_json::to_string_pretty(&doc).expect("JSON")).expect("write");
    let out = std::process::Command::new(python)
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .expect("run openapi_spec_validator");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim_end().ends_with(": OK"),
        "openapi-spec-validator:\n{said}"
    );

    let mut pinned = doc.clone();
    pinned["info"]["version"] = json!("[version]");
    insta::assert_json_snapshot!("rest_openapi", pinned);
}
