//! What a connection to `toolgate serve --http` may hold, checked on raw TCP: a request head
//! must arrive within `gateway.header_timeout_ms`, a body within `body_timeout_ms`, a
//! kept-alive connection's next request within `idle_timeout_ms`; at most `max_connections`
//! are served at once; and none of it keeps other clients from being served meanwhile.
//!
//! Lower bounds on when a connection closes are exact (the gateway's timer starts after the
//! client connected); an upper bound is only a generous deadline for the test not to hang.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{self, Served};

/// The longest the test waits for anything the gateway is expected to do.
const DEADLINE: Duration = Duration::from_secs(60);

/// Raises this process's soft `RLIMIT_NOFILE` towards `wanted` (up to the hard limit); the
/// gateway started afterwards inherits it. Returns the soft limit now in force.
fn raise_open_files(wanted: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit / setrlimit read or write the one struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < wanted {
            let raised = libc::rlimit {
                rlim_cur: (wanted.min(limit.rlim_max)) as libc::rlim_t,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

fn connect(served: &Served) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", served.port()))
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", served.log()));
    stream.set_nodelay(true).unwrap();
    stream
}

/// Whether the gateway has closed `stream` (a read finds its end, or a reset), without
/// waiting: `false` while it is open and silent.
fn closed_now(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let closed = match (&mut &*stream).read(&mut byte) {
        Ok(0) => true,
        Ok(_) => panic!("the gateway sent data on a connection that sent no whole request"),
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

/// Waits (at most [`DEADLINE`]) until the gateway closes `stream`; whatever it sent before
/// closing.
fn wait_closed(stream: &mut TcpStream, served: &Served) -> Vec<u8> {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => panic!(
                "the gateway did not close the connection within {DEADLINE:?}\n{}",
                served.log()
            ),
            Err(_) => return got, // reset: closed too
        }
    }
}

/// Reads one HTTP response with a `Content-Length` body from a kept-alive connection: (status,
/// head, body).
fn read_response(stream: &mut TcpStream) -> (u16, String, String) {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).expect("a response head");
        assert!(n > 0, "the connection closed before a response head");
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("the response body");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// A REST call of `calc` on a connection of its own: its value.
fn calc(served: &Served, expression: &str) -> Value {
    let body = serde_json::json!({ "expression": expression }).to_string();
    let (status, text) = harness::request(
        served.port(),
        "POST",
        "/tools/calc/call",
        &[("Content-Type", "application/json")],
        Some(&body),
    )
    .unwrap_or_else(|e| panic!("calc: {e}\n{}", served.log()));
    assert_eq!(status, 200, "{text}\n{}", served.log());
    let v: Value = serde_json::from_str(&text).unwrap();
    v["structuredContent"]["value"].clone()
}

/// The number of file descriptors the gateway's process has open.
fn open_fds(served: &Served) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", served.process.pid()))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Acceptance: a thousand connections sending partial headers are all closed at the header
/// timeout (not before), their file descriptors released, while other clients' calls are
/// served meanwhile. A partial head is the request line and one header, never the empty line
/// that ends it.
#[test]
fn a_thousand_partial_heads_are_closed_at_the_header_timeout_while_others_are_served() {
    const WANTED: usize = 1000;
    let header_timeout = Duration::from_millis(4000);
    // Both ends of each connection are in processes with this limit (the test's sockets here,
    // the gateway's, started below, inherit it).
    let limit = raise_open_files(2 * WANTED as u64 + 512);
    let held = WANTED.min((limit as usize).saturating_sub(256));
    if held < WANTED {
        eprintln!(
            "note: RLIMIT_NOFILE is {limit} here (hard limit too low to raise): holding {held} connections, not {WANTED}"
        );
    }
    let served = harness::serve(
        &harness::tools_yaml(
            "",
            &format!(
                "gateway:\n  header_timeout_ms: {}\n  max_connections: {}\n",
                header_timeout.as_millis(),
                held + 64
            ),
        ),
        &[],
    );
    let before = open_fds(&served);
    let start = Instant::now();
    let mut slow: Vec<TcpStream> = (0..held)
        .map(|i| {
            let mut s = connect(&served);
            write!(
                s,
                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-{i}: "
            )
            .unwrap();
            s
        })
        .collect();
    // Others are served meanwhile, each on a new connection.
    for i in 0..10 {
        assert_eq!(calc(&served, &format!("{i} + 1")), i + 1);
    }
    let served_meanwhile = start.elapsed() < header_timeout;
    if served_meanwhile {
        // Still within the header timeout of every slow connection: none may be closed yet.
        let closed = slow.iter_mut().filter(|s| closed_now(s)).count();
        assert_eq!(
            closed, 0,
            "slow connections closed before the header timeout"
        );
    }
    let held_fds = open_fds(&served);
    for (i, s) in slow.iter_mut().enumerate() {
        let sent = wait_closed(s, &served);
        assert!(
            sent.is_empty(),
            "connection {i} got an answer to a partial head: {}",
            String::from_utf8_lossy(&sent)
        );
    }
    assert!(
        start.elapsed() >= header_timeout,
        "closed after {:?}, before the {header_timeout:?} header timeout",
        start.elapsed()
    );
    // The gateway's descriptors of those connections are released (it closes a socket as it
    // sends the end of the stream, so this is a matter of moments).
    let deadline = Instant::now() + DEADLINE;
    while open_fds(&served) > before + 32 {
        assert!(
            Instant::now() < deadline,
            "the gateway still has {} descriptors open ({before} before the slow connections, {held_fds} while they were held)",
            open_fds(&served)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "{held} slow connections: the calls were served {} their header timeout; the gateway had {held_fds} descriptors open then ({before} before; the rest were still in the listen queue)",
        if served_meanwhile {
            "within"
        } else {
            "after (a slow machine)"
        }
    );
    // And the gateway still serves.
    assert_eq!(calc(&served, "6 * 7"), 42);
}

/// A connection that answered a request and sends no next one is closed at the idle timeout;
/// one that never sent a request is bounded by the header timeout instead (much longer here).
#[test]
fn a_kept_alive_connection_without_a_next_request_is_closed_at_the_idle_timeout() {
    let idle = Duration::from_millis(400);
    let served = harness::serve(
        &harness::tools_yaml(
            "",
            "gateway:\n  header_timeout_ms: 120000\n  idle_timeout_ms: 400\n",
        ),
        &[],
    );
    let fresh = connect(&served);
    let mut kept = connect(&served);
    let sent = Instant::now();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let (status, head, _) = read_response(&mut kept);
    assert_eq!(status, 200, "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("connection: close"),
        "kept alive: {head}"
    );
    assert!(wait_closed(&mut kept, &served).is_empty());
    // The gateway's idle wait starts when it has sent the answer, after the request was sent.
    assert!(
        sent.elapsed() >= idle,
        "closed {:?} after the last request was sent, before the idle timeout",
        sent.elapsed()
    );
    assert!(
        !closed_now(&fresh),
        "a connection that has not sent its first request is bounded by the header timeout, not the idle one"
    );
}

/// A body that does not arrive whole within the body timeout is answered 408 (a ToolError of
/// kind `timeout`) and the connection closed, on every route.
#[test]
fn a_body_that_does_not_arrive_in_time_is_answered_408() {
    let body_timeout = Duration::from_millis(500);
    let served = harness::serve(
        &harness::tools_yaml("", "gateway:\n  body_timeout_ms: 500\n"),
        &[],
    );
    for path in ["/tools/calc/call", "/mcp", "/calls"] {
        let mut s = connect(&served);
        let start = Instant::now();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"expression\":"
        )
        .unwrap();
        let (status, head, body) = read_response(&mut s);
        assert_eq!(status, 408, "{path}: {head}{body}");
        assert!(
            start.elapsed() >= body_timeout,
            "{path}: answered after {:?}",
            start.elapsed()
        );
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{path}: {head}"
        );
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["kind"], "timeout", "{path}: {body}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("gateway.body_timeout_ms"),
            "{path}: {body}"
        );
        wait_closed(&mut s, &served);
    }
    // A body that arrives whole is read as before.
    assert_eq!(calc(&served, "1 + 1"), 2);
}

/// With `max_connections` connections open, another one is not served (it waits in the
/// listen queue) until one of them closes; then it is.
#[test]
fn connections_beyond_the_limit_wait_until_one_closes() {
    const MAX: usize = 3;
    let served = harness::serve(
        &harness::tools_yaml(
            "",
            &format!(
                "gateway:\n  max_connections: {MAX}\n  header_timeout_ms: 120000\n  idle_timeout_ms: 120000\n"
            ),
        ),
        &[],
    );
    // Each of these was answered once (so it was accepted and holds a place), then keeps a
    // partial next request open.
    let mut held: Vec<TcpStream> = (0..MAX)
        .map(|_| {
            let mut s = connect(&served);
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .unwrap();
            assert_eq!(read_response(&mut s).0, 200);
            s.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    let mut waiting = connect(&served);
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    // Not served while the others hold every place (a wrong gateway would answer at once).
    waiting
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut byte = [0u8; 1];
    match waiting.read(&mut byte) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a connection over the limit was served: {other:?}"),
    }
    // One place frees: the waiting connection is served.
    drop(held.pop());
    let (status, _, body) = read_response(&mut waiting);
    assert_eq!(status, 200, "{body}");
}
