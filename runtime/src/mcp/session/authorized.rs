//! Streamable HTTP with OAuth2 client credentials: rmcp's reqwest client, with the current
//! access token put on every request (POST, GET, DELETE) and one more try with a fresh token
//! when the server answers HTTP 401.
//!
//! rmcp's transport holds one fixed token (`auth_header`); wrapping the client instead lets a
//! session outlive its token: a token near its expiry is replaced before it is sent
//! ([`ClientCredentials::token`]), and one the server refuses is replaced once
//! ([`ClientCredentials::refresh`]). A token request that fails ends the request with an
//! [`std::io::Error`] carrying the [`ToolError`] (found again by [`token_error_in`]), so the
//! call fails with the token endpoint's error kind, naming the server.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use crate::ToolError;
use crate::net::oauth::ClientCredentials;

type Error = StreamableHttpError<reqwest::Error>;

/// A reqwest client that authenticates each request with a client-credentials token.
#[derive(Clone)]
pub(crate) struct AuthorizedHttp {
    pub http: reqwest::Client,
    pub oauth: ClientCredentials,
}

/// Whether the server refused the token: HTTP 401, with a challenge or without one.
fn unauthorized(e: &Error) -> bool {
    match e {
        StreamableHttpError::AuthRequired(_) => true,
        StreamableHttpError::UnexpectedServerResponse(text) => text.starts_with("HTTP 401"),
        StreamableHttpError::Client(e) => e.status() == Some(reqwest::StatusCode::UNAUTHORIZED),
        _ => false,
    }
}

/// A failed token request as a transport error.
fn token_failure(e: ToolError) -> Error {
    StreamableHttpError::Io(std::io::Error::other(e))
}

/// The [`ToolError`] of a failed token request somewhere in `e`'s chain.
pub(crate) fn token_error_in<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a ToolError> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(t) = err.downcast_ref::<ToolError>() {
            return Some(t);
        }
        if let Some(t) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<ToolError>())
        {
            return Some(t);
        }
        current = err.source();
    }
    None
}

/// The [`ToolError`] of a failed token request that ended a handshake (rmcp's
/// `ClientInitializeError` does not chain its transport error as a `source`).
pub(crate) fn token_error_in_handshake(
    e: &rmcp::service::ClientInitializeError,
) -> Option<&ToolError> {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, .. } => token_error_in(error),
        E::LegacyFallbackFailed { discover, fallback } => {
            token_error_in_handshake(fallback).or_else(|| token_error_in_handshake(discover))
        }
        other => token_error_in(other),
    }
}

impl AuthorizedHttp {
    /// `send(token)` with the current token, once more with a fresh one after a 401; refused
    /// again, the call's `permission_denied` (not a dropped connection).
    async fn authorized<T, Fut>(&self, send: impl Fn(String) -> Fut) -> Result<T, Error>
    where
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let (answer, again) = self
            .oauth
            .send(
                |t| send(t.expose().to_string()),
                |a| a.as_ref().err().is_some_and(unauthorized),
            )
            .await
            .map_err(token_failure)?;
        if again {
            return Err(token_failure(self.oauth.refused_again()));
        }
        answer
    }
}

impl StreamableHttpClient for AuthorizedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.authorized(|token| {
            self.http.post_message_with_response_limits(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let token = self.oauth.token().await.map_err(token_failure)?;
        self.http
            .delete_session(
                uri,
                session_id,
                Some(token.expose().to_string()),
                custom_headers,
            )
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            None,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.authorized(|token| {
            self.http.get_stream_with_max_sse_event_size(
                Arc::clone(&uri),
                session_id.clone(),
                last_event_id.clone(),
                Some(token),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
