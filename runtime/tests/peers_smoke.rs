//! Smoke test of `support::peers`: the real server-everything starts over streamable HTTP and
//! legacy SSE on 127.0.0.1, answers a hand-written HTTP/1.1 request, and is gone after drop.
//! Needs `scripts/install-peers.sh`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::peers::{self, PeerProcess};

fn connect(peer: &PeerProcess) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", peer.port())).expect("connect to the peer");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// One HTTP/1.1 response: the head (status line and headers) and the body of Content-Length
/// bytes (to EOF when there is none).
fn read_response(stream: TcpStream) -> (String, String) {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("read the response head");
        assert!(n > 0, "connection closed inside the response head: {head}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("content-length").then(|| {
            value
                .trim()
                .parse::<usize>()
                .expect("a Content-Length number")
        })
    });
    let mut body = Vec::new();
    match length {
        Some(length) => {
            body.resize(length, 0);
            reader
                .read_exact(&mut body)
                .expect("read the response body");
        }
        None => {
            reader
                .read_to_end(&mut body)
                .expect("read the response body");
        }
    }
    (
        head.trim_end().to_string(),
        String::from_utf8(body).expect("UTF-8 body"),
    )
}

fn assert_loopback_only(peer: &PeerProcess) {
    let listeners = peers::group_listeners(peer.pid(), peer.port()).expect("/proc readable");
    assert!(
        !listeners.is_empty(),
        "the peer owns no listener on its port"
    );
    assert!(
        listeners.iter().all(|l| l.loopback),
        "non-loopback listener: {listeners:?}"
    );
}

fn assert_gone(pid: u32, port: u16) {
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still exists"
    );
    assert!(
        !peers::port_accepts(port),
        "port {port} still accepts connections"
    );
}

#[test]
fn everything_streamable_http_answers_initialize() {
    let mut peer = peers::everything_http("streamableHttp");
    assert_loopback_only(&peer);
    assert!(peer.url("/mcp").starts_with("http://127.0.0.1:"));

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"peers-smoke","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        peer.port(),
        body.len(),
        body
    );
    let mut stream = connect(&peer);
    stream.write_all(request.as_bytes()).unwrap();
    // Read by Content-Length, not to EOF: server-everything answers `connection: keep-alive`
    // even to `Connection: close` and holds the socket for Node's 5 s keep-alive timeout.
    let (head, payload) = read_response(stream);
    assert!(head.starts_with("HTTP/1.1 200"), "status: {head}");
    let head_lower = head.to_ascii_lowercase();
    assert!(
        head_lower.contains("\r\nmcp-session-id: "),
        "no session header: {head}"
    );
    // server-everything answers the POST as an SSE stream of one `message` event.
    let data = payload
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no SSE data line in {payload}"));
    let message: serde_json::Value = serde_json::from_str(data).expect("JSON-RPC response");
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        message["result"]["serverInfo"]["name"],
        "mcp-servers/everything"
    );

    let (pid, port) = (peer.pid(), peer.port());
    peer.kill();
    peer.kill(); // idempotent
    assert_gone(pid, port);
}

#[test]
fn everything_sse_sends_the_endpoint_event() {
    let peer = peers::everything_http("sse");
    assert_loopback_only(&peer);

    let mut stream = connect(&peer);
    write!(
        stream,
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\r\n",
        peer.port()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "status: {status}");
    let mut line = String::new();
    let mut seen = Vec::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("read the SSE stream");
        assert!(n > 0, "stream ended before `event: endpoint`; saw {seen:?}");
        if line.trim_end() == "event: endpoint" {
            break;
        }
        seen.push(line.clone());
    }
    line.clear();
    reader.read_line(&mut line).unwrap();
    let endpoint = line
        .trim_end()
        .strip_prefix("data: ")
        .expect("data line after event: endpoint");
    assert!(
        endpoint.starts_with("/message?sessionId="),
        "endpoint: {endpoint}"
    );

    let (pid, port) = (peer.pid(), peer.port());
    drop(reader);
    drop(peer);
    assert_gone(pid, port);
}

#[test]
fn free_ports_are_not_repeated() {
    let ports: std::collections::HashSet<u16> = (0..50).map(|_| peers::free_port()).collect();
    assert_eq!(ports.len(), 50);
}

#[test]
fn a_peer_that_exits_fails_with_its_log() {
    let port = peers::free_port();
    let err = peers::try_spawn_http_peer(
        "sh",
        &["-c", "echo 'cannot start: boom' >&2; exit 3"],
        &[],
        port,
    )
    .expect_err("the peer exits");
    assert!(err.contains("exited before it listened"), "{err}");
    assert!(err.contains("cannot start: boom"), "{err}");
}

#[test]
fn a_peer_on_all_interfaces_is_refused() {
    // python3's http.server binds 0.0.0.0 when told to: the helper must refuse it.
    let port = peers::free_port();
    let port_text = port.to_string();
    let python = peers::python3();
    let err = peers::try_spawn_http_peer(
        &python,
        &["-m", "http.server", "--bind", "0.0.0.0", &port_text],
        &[],
        port,
    )
    .expect_err("refused");
    assert!(err.contains("non-loopback"), "{err}");
    assert!(
        !peers::port_accepts(port),
        "the refused peer was not killed"
    );
}

#[test]
fn http_session_server_issues_and_checks_sessions() {
    let log =
        std::env::temp_dir().join(format!("toolgate-peers-smoke-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let peer = peers::http_session_server(Some(&log));
    assert_loopback_only(&peer);

    let post = |session: Option<&str>, body: &str| -> (String, String) {
        let mut stream = connect(&peer);
        let session = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{session}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        read_response(stream)
    };
    let (head, body) = post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .expect("session header")
        .to_string();
    assert!(body.contains("2025-06-18"), "{body}");

    let (head, body) = post(
        Some(&session),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}"#,
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains(&session), "{body}");
    let (head, _) = post(None, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");

    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 3, "{logged}");
    drop(peer);
    let _ = std::fs::remove_file(&log);
}
