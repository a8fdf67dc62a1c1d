//! Tests against a tiny HTTP server on 127.0.0.1; nothing leaves the machine.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use super::*;

struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn redirect(to: &str) -> Vec<u8> {
    response("302 Found", &[("location", to)], b"")
}

/// Routes of the test server. `port` is the server's own port, for absolute redirects.
fn route(path: &str, port: u16) -> Vec<u8> {
    let text = [("content-type", "text/plain; charset=utf-8")];
    match path {
        "/hello" => response("200 OK", &text, b"hello, world"),
        "/json" => response(
            "200 OK",
            &[("content-type", "application/json")],
            b"{\"a\":1}",
        ),
        "/latin1" => response(
            "200 OK",
            &[("content-type", "text/plain; charset=ISO-8859-1")],
            b"caf\xe9",
        ),
        "/utf8" => response("200 OK", &text, "ééé".as_bytes()),
        "/big" => response("200 OK", &text, &vec![b'x'; 3 * 1024 * 1024]),
        "/exact" => response("200 OK", &text, &[b'y'; 100]),
        "/png" => response(
            "200 OK",
            &[("content-type", "image/png")],
            &[0x89, b'P', 0, 1],
        ),
        "/untyped-binary" => response("200 OK", &[], &[1, 0, 2, 0]),
        "/untyped-text" => response("200 OK", &[], b"plain"),
        "/missing" => response("404 Not Found", &text, b"  not\n here  "),
        "/broken" => response("503 Service Unavailable", &[], b""),
        "/r1" => redirect("/hello"),
        "/loop" => redirect("/loop"),
        "/to-evil" => redirect("http://evil.invalid/steal"),
        "/to-ip" => redirect(&format!("http://127.0.0.1:{port}/hello")),
        "/to-file" => redirect("file:///etc/passwd"),
        "/no-location" => response("302 Found", &[], b""),
        p if p.starts_with("/chain/") => {
            let n: usize = p["/chain/".len()..].parse().unwrap();
            if n == 0 {
                redirect("/hello")
            } else {
                redirect(&format!("/chain/{}", n - 1))
            }
        }
        _ => response("404 Not Found", &[], b""),
    }
}

async fn handle(mut sock: TcpStream, port: u16) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16384 {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    match path {
        "/slow" => tokio::time::sleep(Duration::from_secs(5)).await,
        "/endless" => {
            // No length, so the client cannot know the size: it must stop reading itself.
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
            let _ = sock.write_all(head.as_bytes()).await;
            let chunk = vec![b'z'; 64 * 1024];
            for _ in 0..1024 {
                if sock.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        }
        _ => {
            let mut reply = route(path, port);
            if method == "HEAD" {
                let end = reply.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                reply.truncate(end);
            }
            let _ = sock.write_all(&reply).await;
        }
    }
    let _ = sock.shutdown().await;
}

async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handle(sock, addr.port()));
        }
    });
    Server { addr, hits }
}

fn settings(hosts: &[&str]) -> FetchSettings {
    FetchSettings {
        allow_hosts: hosts.iter().map(|h| h.to_string()).collect(),
        max_bytes: 1024 * 1024,
        timeout_ms: 3000,
        allow_private: false,
    }
}

async fn get(settings: &FetchSettings, url: &str) -> Result<FetchResult, FetchError> {
    let client = client(settings).unwrap();
    let args = FetchArgs {
        url: url.into(),
        method: FetchMethod::Get,
        max_bytes: None,
    };
    fetch(settings, &client, args, &ToolContext::default()).await
}

#[tokio::test]
async fn fetches_text() {
    let srv = server().await;
    let s = settings(&["127.0.0.1"]);
    let r = get(&s, &srv.url("/hello")).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.text, "hello, world");
    assert_eq!(r.bytes, 12);
    assert!(!r.truncated);
    assert_eq!(r.content_type.as_deref(), Some("text/plain; charset=utf-8"));
    assert_eq!(r.url, srv.url("/hello"));
    assert_eq!(get(&s, &srv.url("/json")).await.unwrap().text, "{\"a\":1}");
    assert_eq!(get(&s, &srv.url("/latin1")).await.unwrap().text, "café");
    assert_eq!(
        get(&s, &srv.url("/untyped-text")).await.unwrap().text,
        "plain"
    );
}

#[tokio::test]
async fn head_reads_no_body() {
    let srv = server().await;
    let s = settings(&["127.0.0.1"]);
    let args = FetchArgs {
        url: srv.url("/hello"),
        method: FetchMethod::Head,
        max_bytes: None,
    };
    let r = fetch(&s, &client(&s).unwrap(), args, &ToolContext::default())
        .await
        .unwrap();
    assert_eq!((r.status, r.text.as_str(), r.bytes), (200, "", 0));
}

#[tokio::test]
async fn allowlist_is_checked_before_connecting() {
    let srv = server().await;
    for hosts in [&[][..], &["example.com"], &["*.127.0.0.1"], &["127.0.0.2"]] {
        let err = get(&settings(hosts), &srv.url("/hello")).await.unwrap_err();
        assert!(matches!(&err, FetchError::NotAllowed { host, .. } if host == "127.0.0.1"));
    }
    // Wildcards match only public addresses: loopback literals and names are refused...
    let err = get(&settings(&["*"]), &srv.url("/hello"))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::NotAllowed { .. }), "{err:?}");
    let decimal = format!("http://2130706433:{}/hello", srv.addr.port());
    let err = get(&settings(&["*"]), &decimal).await.unwrap_err();
    assert!(matches!(err, FetchError::NotAllowed { .. }), "{err:?}");
    let by_name = format!("http://localhost:{}/hello", srv.addr.port());
    let err = get(&settings(&["*"]), &by_name).await.unwrap_err();
    assert!(err.to_string().contains("non-public address"), "{err}");
    assert_eq!(srv.hits(), 0, "no refused request reached the server");
    // ...unless allow_private, or the host is listed exactly.
    let mut open = settings(&["*"]);
    open.allow_private = true;
    assert!(get(&open, &srv.url("/hello")).await.is_ok());
    assert!(get(&open, &by_name).await.is_ok());
    assert!(get(&settings(&["LOCALHOST."]), &by_name).await.is_ok());
    assert_eq!(srv.hits(), 3);
}

#[tokio::test]
async fn redirects_are_rechecked() {
    let srv = server().await;
    let s = settings(&["127.0.0.1", "localhost"]);
    let r = get(&s, &srv.url("/r1")).await.unwrap();
    assert_eq!(
        (r.url, r.text),
        (srv.url("/hello"), "hello, world".to_owned())
    );
    let err = get(&s, &srv.url("/to-evil")).await.unwrap_err();
    assert!(matches!(&err, FetchError::NotAllowed { host, .. } if host == "evil.invalid"));
    // Redirects to other schemes are not followed; the unfollowed 3xx is refused.
    let err = get(&s, &srv.url("/to-file")).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::NotAllowed { reason, .. } if reason.contains("file:///etc/passwd")),
        "{err:?}"
    );
    // A redirect without a Location cannot be followed: an upstream error, not an empty
    // success.
    let err = get(&s, &srv.url("/no-location")).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::Http { status: 302, excerpt, .. } if excerpt.contains("without a Location")),
        "{err:?}"
    );
    // Allowed by exact name, redirected to an IP literal that is not listed.
    let only_name = settings(&["localhost"]);
    let start = format!("http://localhost:{}/to-ip", srv.addr.port());
    let err = get(&only_name, &start).await.unwrap_err();
    assert!(matches!(&err, FetchError::NotAllowed { host, .. } if host == "127.0.0.1"));
    // At most five redirects.
    assert!(get(&s, &srv.url("/chain/4")).await.is_ok());
    let err = get(&s, &srv.url("/chain/5")).await.unwrap_err();
    assert!(matches!(err, FetchError::TooManyRedirects), "{err:?}");
    let err = get(&s, &srv.url("/loop")).await.unwrap_err();
    assert!(matches!(err, FetchError::TooManyRedirects), "{err:?}");
}

#[tokio::test]
async fn bodies_are_cut_at_max_bytes() {
    let srv = server().await;
    let mut s = settings(&["127.0.0.1"]);
    s.max_bytes = 1000;
    let r = get(&s, &srv.url("/big")).await.unwrap();
    assert_eq!((r.text.len(), r.bytes, r.truncated), (1000, 1000, true));
    let r = get(&s, &srv.url("/endless")).await.unwrap();
    assert_eq!((r.text.len(), r.truncated), (1000, true));
    s.max_bytes = 100;
    let r = get(&s, &srv.url("/exact")).await.unwrap();
    assert_eq!((r.bytes, r.truncated), (100, false));
    // The argument lowers the limit but cannot raise it; a cut never splits a character.
    let c = client(&s).unwrap();
    let args = |path: &str, max| FetchArgs {
        url: srv.url(path),
        method: FetchMethod::Get,
        max_bytes: Some(max),
    };
    let r = fetch(&s, &c, args("/utf8", 5), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.truncated), ("éé", true));
    let r = fetch(&s, &c, args("/big", 1 << 30), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(r.bytes, 100);
}

#[tokio::test]
async fn binary_content_is_described() {
    let srv = server().await;
    let s = settings(&["127.0.0.1"]);
    let r = get(&s, &srv.url("/png")).await.unwrap();
    assert_eq!(r.text, "[image/png content not shown: 4 bytes]");
    assert_eq!(r.bytes, 0);
    let r = get(&s, &srv.url("/untyped-binary")).await.unwrap();
    assert!(r.text.starts_with("[binary"), "{}", r.text);
}

#[tokio::test]
async fn http_errors_carry_status_and_excerpt() {
    let srv = server().await;
    let s = settings(&["127.0.0.1"]);
    let err = get(&s, &srv.url("/missing")).await.unwrap_err();
    let FetchError::Http {
        status, excerpt, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*status, excerpt.as_str()), (404, "not here"));
    let err = get(&s, &srv.url("/broken")).await.unwrap_err();
    assert!(err.to_string().starts_with("HTTP 503"), "{err}");
    assert!(err.to_string().ends_with("Service Unavailable"), "{err}");
}

#[tokio::test]
async fn timeouts_and_network_errors() {
    let srv = server().await;
    let mut s = settings(&["127.0.0.1"]);
    s.timeout_ms = 300;
    let started = std::time::Instant::now();
    let err = get(&s, &srv.url("/slow")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::Timeout { timeout_ms: 300 }),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = get(&s, &format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Network { .. }), "{err:?}");
}

#[tokio::test]
async fn invalid_urls() {
    let s = settings(&["*"]);
    for url in [
        "not a url",
        "/relative",
        "ftp://example.com/x",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
        "https://",
        "http://[::1",
    ] {
        let err = get(&s, url).await.unwrap_err();
        assert!(
            matches!(err, FetchError::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
    }
}

#[test]
fn args_are_strict() {
    let a: FetchArgs = serde_json::from_str(r#"{"url":"https://example.com"}"#).unwrap();
    assert_eq!((a.method, a.max_bytes), (FetchMethod::Get, None));
    let a: FetchArgs = serde_json::from_str(r#"{"url":"x","method":"HEAD"}"#).unwrap();
    assert_eq!(a.method, FetchMethod::Head);
    assert!(serde_json::from_str::<FetchArgs>(r#"{"url":"x","method":"POST"}"#).is_err());
    assert!(serde_json::from_str::<FetchArgs>(r#"{"url":"x","headers":{}}"#).is_err());
}
