//! A recording HTTP proxy between the `OpenApiSource` and prism: forwards every request as is
//! and keeps each exchange — the request as it was on the wire (method, path and query,
//! headers, body) and prism's status, `sl-violations` header and body — so that a test sees
//! exactly what toolgate sent and what prism thought of it (the tool's result alone shows
//! neither the request nor prism's violations header).

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::prism::Violations;

/// One request through the proxy, and prism's answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    /// Path and query, as sent.
    pub uri: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub status: u16,
    pub violations: Violations,
    /// The raw `sl-violations` header.
    pub violations_header: Option<String>,
    pub response_body: Bytes,
}

impl Exchange {
    /// The request in one line-per-part text, body cut to `max` bytes.
    pub fn describe_request(&self, max: usize) -> String {
        let headers: Vec<String> = self
            .headers
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "host" | "accept-encoding" | "user-agent"))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!(
            "{} {}\n      {}\n      body: {}",
            self.method,
            self.uri,
            headers.join(" | "),
            cut(&String::from_utf8_lossy(&self.body), max)
        )
    }
}

/// Cuts `s` to `max` bytes (at a character boundary), marking the cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[{} bytes]", &s[..end], s.len())
}

struct Shared {
    upstream: Mutex<String>,
    client: reqwest::Client,
    log: Mutex<Vec<Exchange>>,
}

/// The proxy; stops when dropped.
pub struct Recorder {
    shared: Arc<Shared>,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    /// Listens on 127.0.0.1 (a port of the kernel's choice), forwarding to `upstream`
    /// (`http://127.0.0.1:PORT`, no trailing slash).
    pub async fn start(upstream: &str) -> Recorder {
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream.trim_end_matches('/').to_string()),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("reqwest client"),
            log: Mutex::new(Vec::new()),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Recorder { shared, port, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Forwards to another upstream from now on (prism restarted on another port).
    pub fn set_upstream(&self, upstream: &str) {
        *self
            .shared
            .upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = upstream.trim_end_matches('/').to_string();
    }

    /// How many exchanges so far.
    pub fn len(&self) -> usize {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// The exchanges from index `from` on.
    pub fn since(&self, from: usize) -> Vec<Exchange> {
        let log = self.shared.log.lock().unwrap_or_else(|e| e.into_inner());
        log.get(from..)
            .map(<[Exchange]>::to_vec)
            .unwrap_or_default()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let uri = parts.uri.path_and_query().map_or_else(
        || parts.uri.path().to_string(),
        |pq| pq.as_str().to_string(),
    );
    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "transfer-encoding" | "connection"
        ) {
            headers.append(name.clone(), value.clone());
        }
    }
    let mut exchange = Exchange {
        method: parts.method.to_string(),
        uri: uri.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.clone(),
        status: 0,
        violations: Violations::default(),
        violations_header: None,
        response_body: Bytes::new(),
    };
    let upstream = shared
        .upstream
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let sent = shared
        .client
        .request(parts.method.clone(), format!("{upstream}{uri}"))
        .headers(headers)
        .body(body)
        .send()
        .await;
    let response = match sent {
        Ok(upstream) => {
            let status = upstream.status();
            let headers = upstream.headers().clone();
            let bytes = upstream.bytes().await.unwrap_or_default();
            let violations_header = headers
                .get("sl-violations")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            exchange.status = status.as_u16();
            exchange.violations = Violations::parse(violations_header.as_deref());
            if violations_header.is_none() && status.as_u16() == 422 {
                // prism's own 422 carries the list in its body (`validation`), not the header.
                exchange.violations = Violations::from_problem(&bytes);
            }
            exchange.violations_header = violations_header;
            exchange.response_body = bytes.clone();
            let mut response = Response::builder().status(status);
            for (name, value) in &headers {
                if !matches!(
                    name.as_str(),
                    "content-length" | "transfer-encoding" | "connection"
                ) {
                    response = response.header(name, value);
                }
            }
            response
                .body(Body::from(bytes))
                .unwrap_or_else(|_| Response::new(Body::empty()))
        }
        Err(e) => {
            exchange.status = 599;
            exchange.response_body = Bytes::from(format!("proxy: prism unreachable: {e:?}"));
            Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(format!("proxy: prism unreachable: {e}")))
                .unwrap_or_else(|_| Response::new(Body::empty()))
        }
    };
    shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(exchange);
    response
}
