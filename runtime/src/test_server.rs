//! A tiny HTTP/1.1 server on 127.0.0.1 for wire-level tests: records each raw request (request
//! line, headers, body) and answers with the scripted responses in turn (the last one repeats).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request as it arrived.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// `GET /path?query HTTP/1.1`.
    pub line: String,
    /// Header lines, as sent (`Name: value`).
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A running test server.
pub(crate) struct TestServer {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// Starts a server answering each request with the next of `responses` (raw HTTP text
    /// without `Content-Length`/`Connection`, which are added: `"204 No Content\r\nContent-Type:
    /// application/json"` + body).
    pub async fn start(responses: Vec<(&'static str, Vec<u8>)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        tokio::spawn(async move {
            let mut n = 0usize;
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (head, body) = read_request(&mut sock).await;
                let mut lines = head.split("\r\n");
                let line = lines.next().unwrap_or_default().to_string();
                let headers = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect();
                log.lock().unwrap().push(Recorded {
                    line,
                    headers,
                    body,
                });
                let (status, payload) = &responses[n.min(responses.len() - 1)];
                n += 1;
                let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
                if !status.starts_with("204") {
                    out.push_str(&format!("Content-Length: {}\r\n", payload.len()));
                }
                out.push_str("\r\n");
                let mut bytes = out.into_bytes();
                bytes.extend_from_slice(payload);
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
            }
        });
        Self { base, requests }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break buf.len();
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf
        .get(head_end + 4..)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    while body.len() < length {
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    (head, body)
}
