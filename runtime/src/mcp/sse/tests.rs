use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Connects to `url` with short timeouts.
async fn connect(url: String, connect_ms: u64) -> Result<SseClientTransport, SseError> {
    let (connect_timeout, post_timeout) =
        (Duration::from_millis(connect_ms), Duration::from_secs(5));
    let (headers, server) = (HeaderMap::new(), "fake".into());
    let config = SseConfig {
        url,
        headers,
        connect_timeout,
        connect_until: None,
        post_timeout,
        max_frame_bytes: 1 << 16,
        server,
        oauth: None,
    };
    SseClientTransport::connect(reqwest::Client::new(), config).await
}

/// An HTTP/1.1 server on 127.0.0.1 answering a GET with `events` (then holding the stream
/// open) and a POST with the raw answer `post`; returns its base URL.
async fn fake(events: String, post: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let events = events.clone();
            tokio::spawn(async move {
                let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n @ 1..) = socket.read(&mut buf).await else {
                        return;
                    };
                    seen.extend_from_slice(&buf[..n]);
                }
                if seen.starts_with(b"GET") {
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                    let _ = socket.write_all(format!("{head}{events}").as_bytes()).await;
                    std::future::pending::<()>().await;
                }
                let _ = socket.write_all(post.as_bytes()).await;
                let _ = socket.shutdown().await;
                while socket.read(&mut buf).await.is_ok_and(|n| n > 0) {}
            });
        }
    });
    base
}

/// Relative endpoints resolve against the SSE URL; another origin is refused.
#[tokio::test]
async fn resolves_relative_endpoints_and_refuses_other_origins() {
    let cases = [
        ("/message?sessionId=x", "/message?sessionId=x"),
        ("message?x=1", "/base/message?x=1"),
    ];
    for (data, want) in cases {
        let base = fake(format!("event: endpoint\ndata: {data}\n\n"), "").await;
        let transport = connect(format!("{base}/base/sse"), 2000).await.unwrap();
        assert_eq!(transport.message_url().as_str(), format!("{base}{want}"));
    }
    let base = fake(
        "event: endpoint\ndata: http://elsewhere.test/m\n\n".into(),
        "",
    )
    .await;
    let error = connect(format!("{base}/sse"), 2000)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with("another origin (http://elsewhere.test)"),
        "{error}"
    );
}

/// Junk and oversized events are skipped, a later `endpoint` moves POSTs, close ends it.
#[tokio::test]
async fn skips_junk_and_oversized_events() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"p":"{}"}}}}"#,
        "x".repeat(1 << 17)
    );
    let events = format!(
        ": hi\n\nevent: endpoint\ndata: /m?s=1\n\nevent: message\ndata: not json\n\n\
         data: {{\"foo\":1}}\n\nevent: ping\ndata: 1\n\nevent: message\ndata: {big}\n\n\
         event: endpoint\r\ndata: /m?s=2\r\n\r\n\
         event: message\r\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\r\n\r\n"
    );
    let base = fake(events, "").await;
    let mut transport = connect(format!("{base}/sse"), 2000).await.unwrap();
    let message = transport.receive().await.unwrap();
    assert_eq!(serde_json::to_value(&message).unwrap()["id"], 1);
    assert_eq!(transport.message_url().as_str(), format!("{base}/m?s=2"));
    transport.close().await.unwrap();
    assert!(transport.receive().await.is_none());
}

/// Without an `endpoint` event, connect fails once connect_timeout is over. The deadline
/// covers the answer's headers too, so it is long enough (3 s) for a loaded machine to get
/// them first: with 300 ms the fake's headers were sometimes late and the error was "no
/// answer" instead. How long it took is not asserted; the outer bound only turns a missing
/// deadline into a failure rather than a hang.
#[tokio::test]
async fn no_endpoint_event_is_a_timely_error() {
    let base = fake(": keep-alive\n\nevent: other\ndata: 1\n\n".into(), "").await;
    let connect = connect(format!("{base}/sse"), 3000);
    let error = tokio::time::timeout(Duration::from_secs(60), connect)
        .await
        .expect("connect gave up at its own deadline")
        .unwrap_err();
    let want = format!("MCP server `fake`: GET {base}/sse: no `endpoint` event within 3000 ms");
    assert_eq!(error.to_string(), want);
}

/// A closed port gives an error that says the connection was refused.
#[tokio::test]
async fn refused_connection_is_an_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = connect(format!("http://127.0.0.1:{port}/sse"), 2000)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("refused"), "{error}");
}

/// A non-2xx POST answer gives its status and body.
#[tokio::test]
async fn post_failure_reports_status_and_body() {
    let answer = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\nboom";
    let base = fake("event: endpoint\ndata: /m\n\n".into(), answer).await;
    let mut transport = connect(format!("{base}/sse"), 2000).await.unwrap();
    let message = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let error = transport
        .send(serde_json::from_value(message).unwrap())
        .await
        .unwrap_err();
    let want = format!("MCP server `fake`: POST {base}/m: HTTP 500 Internal Server Error: boom");
    assert_eq!(error.to_string(), want);
}
