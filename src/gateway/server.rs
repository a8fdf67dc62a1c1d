//! The HTTP/1.1 server under [`Gateway::router`](super::Gateway::router): accepting
//! connections, bounding what each may hold, and closing them at shutdown.
//!
//! hyper's own connection settings do the per-connection work, with tokio's clock
//! (`hyper_util::rt::TokioTimer`; without a timer hyper applies no timeout at all):
//!
//! * **header timeout** (`gateway.header_timeout_ms`, hyper's `header_read_timeout`): a
//!   connection that has not sent a whole request head within it — counted from the moment the
//!   connection waits for one: accepted, or done answering its previous request — is closed.
//!   A client sending headers byte by byte, or not at all, holds a connection that long at most.
//! * **idle timeout** (`gateway.idle_timeout_ms`): a kept-alive connection that starts no new
//!   request within it after its last answer was sent is closed (hyper's graceful close: an
//!   idle connection closes at once). hyper has no setting of its own for this; each
//!   connection counts its requests in flight ([`Activity`]) and a watch on that count closes
//!   it.
//! * **connection limit** (`gateway.max_connections`): one permit of a `tokio::sync::Semaphore`
//!   per open connection, taken *before* `accept`, so that beyond the limit new connections
//!   wait in the kernel's listen queue (as Go's `netutil.LimitListener` does) instead of each
//!   taking a file descriptor.
//!
//! The body timeout is the request's, not the connection's: see `gateway::body`.
//!
//! At shutdown the listener is dropped (new connections are refused), every connection is told
//! to close gracefully (idle ones close at once, one answering a request closes after the
//! answer), and [`run`] returns once every connection is closed — the gateway bounds that wait
//! with its grace period.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// The default `gateway.header_timeout_ms`: 10 s for a whole request head.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default `gateway.body_timeout_ms`: 30 s for a whole request body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default `gateway.idle_timeout_ms`: 10 s for a kept-alive connection's next request.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default `gateway.max_connections`: 1024 connections at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long accepting pauses after an error that is not one connection's (e.g. `EMFILE`: the
/// process has no file descriptor left), so that the loop does not spin; hyper 0.14's and
/// axum's choice.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// What bounds each connection (from the gateway's settings).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Serves `app` on `listener` until `stop` is cancelled, then closes every connection
/// gracefully and returns once they are all closed (see the [module docs](self)).
pub(crate) async fn run(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    // A semaphore holds at most `MAX_PERMITS`, and `acquire_many` takes a u32.
    let max = limits
        .max_connections
        .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let permits = Arc::new(Semaphore::new(max));
    let mut full = false;
    loop {
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => {
                full = false;
                permit
            }
            Err(_) => {
                if !full {
                    tracing::warn!(
                        max_connections = max,
                        "gateway.max_connections reached: new connections wait until one closes"
                    );
                    full = true;
                }
                tokio::select! {
                    permit = Arc::clone(&permits).acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break, // never closed
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    tracing::error!("accept failed: {e}; accepting again in {ACCEPT_ERROR_PAUSE:?}");
                    tokio::select! {
                        () = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => continue,
                        () = stop.cancelled() => break,
                    }
                }
            },
            () = stop.cancelled() => break,
        };
        tokio::spawn(serve_connection(
            stream,
            remote,
            permit,
            app.clone(),
            limits,
            stop.clone(),
        ));
    }
    // New connections are refused from here on.
    drop(listener);
    // Every permit back: every connection closed.
    let _all = permits.acquire_many(max as u32).await;
}

/// Errors of one connection that was being accepted (the next one may be fine).
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it closes: the client closed it, a timeout did, or the gateway
/// shut down (then gracefully: the request being answered is answered first).
async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    permit: OwnedSemaphorePermit,
    app: axum::Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let _permit = permit;
    let activity = Arc::new(Activity::default());
    let service = {
        let activity = Arc::clone(&activity);
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let guard = activity.begin();
            let mut request = request.map(Body::new);
            // As `into_make_service_with_connect_info` does it.
            request.extensions_mut().insert(ConnectInfo(remote));
            let response = app.clone().oneshot(request);
            async move {
                let response: Response<Body> = match response.await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _guard: guard,
                }))
            }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let connection = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let idle = activity.idle_for(limits.idle_timeout);
    tokio::pin!(idle);
    let mut closing = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%remote, "connection closed: {e}");
                }
                return;
            }
            () = stop.cancelled(), if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
            () = &mut idle, if !closing => {
                tracing::debug!(%remote, idle_ms = limits.idle_timeout.as_millis() as u64, "closing an idle kept-alive connection");
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// One connection's requests: how many are being answered, how many were started.
#[derive(Default)]
struct Activity(watch::Sender<Counts>);

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    in_flight: usize,
    started: u64,
}

impl Activity {
    /// A request starts; it ends when the guard drops (with its answer's body).
    fn begin(self: &Arc<Self>) -> RequestGuard {
        self.0.send_modify(|c| {
            c.in_flight += 1;
            c.started += 1;
        });
        RequestGuard(Arc::clone(self))
    }

    /// Resolves once the connection has answered at least one request and then started none
    /// for `idle` (a fresh connection's first request is bounded by the header timeout).
    async fn idle_for(&self, idle: Duration) {
        let mut counts = self.0.subscribe();
        loop {
            let seen = counts
                .wait_for(|c| c.in_flight == 0 && c.started > 0)
                .await
                .map(|c| *c);
            let Ok(seen) = seen else {
                return std::future::pending().await;
            };
            if tokio::time::timeout(idle, counts.changed()).await.is_err() {
                let now = *counts.borrow();
                if now.in_flight == 0 && now.started == seen.started {
                    return;
                }
            }
        }
    }
}

/// Counts one request in flight while it lives.
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.0.send_modify(|c| c.in_flight -= 1);
    }
}

/// A response body that keeps its request counted in flight until hyper is done with it (the
/// whole answer written, or the connection gone): a long stream (SSE) is never "idle".
struct Tracked {
    body: Body,
    _guard: RequestGuard,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        hyper::body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> SizeHint {
        hyper::body::Body::size_hint(&self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_idle_only_between_requests() {
        let activity = Arc::new(Activity::default());
        let idle = Duration::from_secs(5);
        // Before any request: never idle (the header timeout bounds a fresh connection).
        let waiting = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.idle_for(idle).await }
        });
        tokio::time::sleep(idle * 3).await;
        assert!(!waiting.is_finished());
        // A request in flight (a stream): not idle however long it lasts.
        let request = activity.begin();
        tokio::time::sleep(idle * 3).await;
        assert!(!waiting.is_finished());
        // Answered: idle once `idle` has passed without a new request.
        drop(request);
        tokio::time::sleep(idle / 2).await;
        let next = activity.begin();
        drop(next);
        tokio::time::sleep(idle / 2 + Duration::from_millis(1)).await;
        assert!(!waiting.is_finished(), "a new request restarts the wait");
        tokio::time::sleep(idle).await;
        tokio::time::timeout(Duration::from_millis(1), waiting)
            .await
            .expect("idle after the last answer")
            .unwrap();
    }
}
