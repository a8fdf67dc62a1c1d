//! `tools.overrides` through `toolgate serve`: a local tool (current_time), an MCP tool
//! (server-everything's `echo` over stdio) and an OpenAPI tool (petstore's `getPetById`, its
//! base URL a recording HTTP server of this test) each renamed, redescribed and given a hidden
//! fixed argument. Each is exported under its new name without the argument in every dialect,
//! and the argument reaches the upstream: in current_time's result, in echo's answer, and in
//! the request line the recorder saw.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{self, Served, request};

const DIALECTS: [(&str, &str); 5] = [
    ("mcp", "/inputSchema"),
    ("openai", "/parameters"),
    ("openai-strict", "/parameters"),
    ("anthropic", "/input_schema"),
    ("gemini", "/parameters"),
];

/// An HTTP server on 127.0.0.1 that keeps each request line and answers every request with
/// one pet; it stops serving when the test ends (its thread waits with a deadline).
fn recorder() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(300);
        while Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // the rest of the head (a GET has no body)
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            record.lock().unwrap().push(line.trim_end().to_string());
            let body = r#"{"id":7,"name":"rex","photoUrls":[]}"#;
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

fn serve(api_port: u16) -> Served {
    let spec = harness::repo_root().join("tests/specs/petstore/swagger-petstore3-openapi.yaml");
    let mcp = format!(
        "{}  openapi:\n    - {{id: pets, spec: {}, base_url: \"http://127.0.0.1:{api_port}\", allow_private: true, include: {{operations: [getPetById]}}}}\n  overrides:\n    current_time:\n      name: tokyo_time\n      description: The time in Tokyo.\n      title: Tokyo clock\n      arguments: {{time_zone: {{value: Asia/Tokyo}}}}\n    ev.echo:\n      name: say\n      description: Says the configured words.\n      annotations: {{read_only_hint: true}}\n      arguments: {{message: {{value: fixed-by-gateway}}}}\n    pets.getPetById:\n      name: pet_seven\n      description: Reads pet 7.\n      arguments: {{petId: {{value: 7}}}}\n",
        harness::everything_stdio_entry("ev", ""),
        spec.display()
    );
    harness::serve(&harness::tools_yaml(&mcp, ""), &[])
}

fn json_of(served: &Served, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let headers: &[(&str, &str)] = &[("Content-Type", "application/json")];
    let (status, text) = request(served.port(), method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", served.log()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {path}: {status} {e}: {text}\n{}", served.log()));
    (status, value)
}

#[test]
fn renamed_tools_with_a_hidden_argument_export_the_new_shape_and_send_the_fixed_value() {
    let (api_port, seen) = recorder();
    let served = serve(api_port);
    let (status, list) = json_of(&served, "GET", "/tools", None);
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for new in ["tokyo_time", "say", "pet_seven"] {
        assert!(names.contains(&new), "{new} not listed: {names:?}");
    }
    for old in ["current_time", "ev__echo", "ev.echo", "pets__getPetById"] {
        assert!(!names.contains(&old), "{old} still listed: {names:?}");
    }

    let hidden = [
        ("tokyo_time", "time_zone", "The time in Tokyo."),
        ("say", "message", "Says the configured words."),
        ("pet_seven", "petId", "Reads pet 7."),
    ];
    for (tool, argument, description) in hidden {
        for (dialect, pointer) in DIALECTS {
            let path = format!("/tools/{tool}/schema?dialect={dialect}");
            let (status, export) = json_of(&served, "GET", &path, None);
            assert_eq!(status, 200, "{path}: {export}");
            let text = export["definition"].to_string();
            assert!(text.contains(&format!("\"{tool}\"")), "{path}: {text}");
            assert!(text.contains(description), "{path}: {text}");
            // (a dialect may leave out the parameters of a tool that has none left)
            let schema = export["definition"]
                .pointer(pointer)
                .unwrap_or(&Value::Null);
            assert!(
                schema["properties"].get(argument).is_none(),
                "{path}: {argument} still offered: {schema}"
            );
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            assert!(!required.contains(&json!(argument)), "{path}: {schema}");
        }
    }
    let (_, mcp) = json_of(&served, "GET", "/tools/tokyo_time/schema?dialect=mcp", None);
    assert_eq!(
        mcp["definition"]["annotations"]["title"], "Tokyo clock",
        "{mcp}"
    );
    let (_, openapi) = json_of(&served, "GET", "/openapi.json", None);
    let doc = openapi.to_string();
    assert!(
        doc.contains("/tools/say/call") || doc.contains("say"),
        "{doc}"
    );

    // The local tool: the fixed zone is in its result.
    let (status, out) = json_of(&served, "POST", "/tools/tokyo_time/call", Some("{}"));
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["structuredContent"]["time_zone"], "Asia/Tokyo", "{out}");

    // The MCP tool: server-everything echoes the message it received.
    let (status, out) = json_of(&served, "POST", "/tools/say/call", Some("{}"));
    assert_eq!(status, 200, "{out}");
    assert!(out.to_string().contains("Echo: fixed-by-gateway"), "{out}");

    // The OpenAPI tool: the request on the wire carries the fixed path parameter.
    let (status, out) = json_of(&served, "POST", "/tools/pet_seven/call", Some("{}"));
    assert_eq!(status, 200, "{out}\n{}", served.log());
    assert_eq!(out["structuredContent"]["name"], "rex", "{out}");
    assert_eq!(*seen.lock().unwrap(), ["GET /pet/7 HTTP/1.1"]);

    // A caller who sends a hidden argument anyway is refused, and nothing is sent.
    let (status, body) = json_of(
        &served,
        "POST",
        "/tools/pet_seven/call",
        Some(r#"{"petId": 8}"#),
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["kind"], "invalid_arguments", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`petId` is set by the gateway"),
        "{body}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);

    // The old names are no longer offered.
    for old in ["current_time", "ev.echo"] {
        let (status, body) = json_of(&served, "POST", &format!("/tools/{old}/call"), Some("{}"));
        assert_eq!(status, 404, "{old}: {body}");
    }
}
