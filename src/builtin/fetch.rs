//! `fetch`: GET (or HEAD) a web page or API response as text.
//!
//! Built on `reqwest` 0.13 with rustls (no OpenSSL). Where it may connect:
//!
//! The host guard is the shared [`toolgate_runtime::net`] module:
//!
//! - only hosts in [`FetchSettings::allow_hosts`]; an empty list refuses everything. The
//!   check happens before any connection and again on every redirect (at most
//!   [`MAX_REDIRECTS`]); a refused redirect fails the call rather than returning the 3xx.
//!   (A redirect to another scheme, e.g. `file:`, is not followed: it is refused as `NotAllowed`.)
//! - every redirect is also checked against the `policy.arguments` URL rules (`deny_hosts`,
//!   `allow_hosts`, `deny_paths`) that checked the call's `url`
//!   ([`toolgate::ToolContext::check_followed_url`]): a redirect cannot lead where the caller
//!   could not have pointed `url` (`PolicyDenied`).
//! - a host named exactly in the allowlist (`intranet.local`, `127.0.0.1`) may resolve to any
//!   address: the operator named it. A host matched by a wildcard (`*.example.com`, `*`) must
//!   resolve only to public addresses (no loopback, private, link-local, CGNAT, ...), unless
//!   [`FetchSettings::allow_private`] is set. The check runs inside the DNS resolver on the
//!   addresses actually connected to, so DNS rebinding cannot bypass it.
//! - proxies from the environment are ignored (a proxy would resolve names itself).
//!
//! The body is streamed and reading stops at `max_bytes`. Text types (`text/*`, JSON, XML,
//! JavaScript, YAML, ...) are decoded with the charset the server declares (UTF-8 by default,
//! invalid bytes replaced); other types are not downloaded: `text` then holds a one-line
//! description. A 4xx or 5xx status is an error carrying the status and a body excerpt.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::{Method, StatusCode, Url, header};
use serde::{Deserialize, Serialize};

mod body;

use body::{decode, essence, excerpt, is_text, read_body};
use toolgate::ToolContext;
use toolgate_runtime::net::{Blocked, HostRules};

/// Most redirects followed (the shared guard's limit, [`toolgate_runtime::net::MAX_REDIRECTS`]).
pub const MAX_REDIRECTS: usize = toolgate_runtime::net::MAX_REDIRECTS;

/// The host guard of `fetch` (shared with the OpenAPI sources: [`toolgate_runtime::net`]):
/// exactly listed hosts may resolve to any address, wildcard ones only to public addresses.
fn rules(settings: &FetchSettings) -> HostRules {
    HostRules::new(&settings.allow_hosts, settings.allow_private).label("fetch allowlist")
}
/// Most bytes of an error response's body quoted in [`FetchError::Http`].
const EXCERPT_BYTES: usize = 512;

/// Settings of `fetch` (`settings.fetch` in `tools.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FetchSettings {
    /// Hosts that may be fetched: exact names or IP addresses ("api.example.com",
    /// "127.0.0.1"), `*.example.com` for any subdomain (not example.com itself), or `*` for
    /// any host. Ports are not part of an entry. Empty (the default) refuses everything.
    pub allow_hosts: Vec<String>,
    /// Most body bytes read per response; the rest is cut (`truncated`). Default 1 MiB.
    pub max_bytes: usize,
    /// Time limit for a whole call, redirects and body included, in milliseconds.
    /// Default 10000.
    pub timeout_ms: u64,
    /// Let wildcard-matched hosts resolve to loopback, private or link-local addresses.
    /// Default false (exactly listed hosts are always allowed to).
    pub allow_private: bool,
}

impl Default for FetchSettings {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            max_bytes: 1024 * 1024,
            timeout_ms: 10_000,
            allow_private: false,
        }
    }
}

/// Arguments of `fetch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// Absolute http or https URL, e.g. "https://example.com/docs/page.html". Only hosts
    /// the operator allowed can be fetched.
    pub url: String,
    /// "GET" (default) for the content, or "HEAD" for status and content type only.
    #[serde(default)]
    pub method: FetchMethod,
    /// Most body bytes to read (the rest is cut and `truncated` is true). Optional: defaults
    /// to, and cannot exceed, the operator's limit (1 MiB unless configured otherwise).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// HTTP method of a fetch.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum FetchMethod {
    /// Fetch the content.
    #[default]
    Get,
    /// Fetch the status and headers only.
    Head,
}

/// A fetched response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FetchResult {
    /// The final URL, after redirects.
    pub url: String,
    /// HTTP status code, e.g. 200.
    pub status: u16,
    /// The Content-Type header, e.g. "text/html; charset=utf-8", if the server sent one.
    pub content_type: Option<String>,
    /// The body as text. Empty for HEAD. For content that is not text (images, PDF, archives,
    /// ...) a bracketed one-line description such as "[image/png content not shown: 5120
    /// bytes]", since it is not downloaded.
    pub text: String,
    /// True if the body was longer than the byte limit and was cut.
    pub truncated: bool,
    /// Number of body bytes read (0 for HEAD and for content that is not text).
    pub bytes: usize,
}

/// Why `fetch` failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL (or a redirect's target) is not allowed by the operator's settings.
    #[error("fetch not allowed: {host}: {reason}")]
    NotAllowed {
        /// The refused host.
        host: String,
        /// Why, e.g. "host is not in the fetch allowlist".
        reason: String,
    },
    /// The URL cannot be fetched as given.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL, as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The call took longer than the time limit.
    #[error("timed out after {timeout_ms} ms")]
    Timeout {
        /// The limit, in milliseconds.
        timeout_ms: u64,
    },
    /// Connecting or reading failed (DNS, refused connection, TLS, reset, ...).
    #[error("network error: {message}")]
    Network {
        /// What failed.
        message: String,
    },
    /// The server answered with a 4xx or 5xx status, or with a redirect without a `Location`.
    #[error("HTTP {status} from {url}: {excerpt}")]
    Http {
        /// The status code, e.g. 404.
        status: u16,
        /// The URL that answered.
        url: String,
        /// The start of the response body, as text.
        excerpt: String,
    },
    /// A redirect's target is refused by the URL rules of `policy.arguments` that checked the
    /// call's `url` ([`toolgate::ToolContext::check_followed_url`]).
    #[error("fetch refused by policy: {reason}")]
    PolicyDenied {
        /// Which redirect, which host or path, and which rule.
        reason: String,
    },
    /// The server redirected more than [`MAX_REDIRECTS`] times.
    #[error("too many redirects (more than {MAX_REDIRECTS})")]
    TooManyRedirects,
}

/// A client that enforces `settings`' allowlist in its DNS resolver; it follows no redirects
/// ([`fetch`] does, checking each).
/// Build it once and reuse it (it pools connections); pass the same settings to [`fetch`].
pub fn client(settings: &FetchSettings) -> Result<reqwest::Client, FetchError> {
    Arc::new(rules(settings))
        .client_builder()
        // `fetch` follows redirects itself, checking each hop (host guard and argument rules).
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("toolgate-fetch/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_millis(settings.timeout_ms))
        .build()
        .map_err(|e| FetchError::Network {
            message: format!("cannot build the HTTP client: {}", chain(&e)),
        })
}

/// Fetch `args.url` with a client made by [`client`] from the same `settings`.
///
/// Redirects are followed here, one hop at a time (at most [`MAX_REDIRECTS`]): each target must
/// be an http(s) URL, pass the host guard, and pass `ctx`'s
/// [`check_followed_url`](toolgate::ToolContext::check_followed_url), the `policy.arguments` URL
/// rules that checked the call's `url`. `settings.timeout_ms` bounds the whole call, redirects
/// and body included.
///
/// # Errors
/// [`FetchError`]: `NotAllowed` (host guard, or a redirect that cannot be followed),
/// `PolicyDenied` (a redirect the argument rules refuse), `InvalidUrl`, `Timeout`, `Network`,
/// `Http` (4xx / 5xx), `TooManyRedirects`.
pub async fn fetch(
    settings: &FetchSettings,
    client: &reqwest::Client,
    args: FetchArgs,
    ctx: &ToolContext,
) -> Result<FetchResult, FetchError> {
    let guard = rules(settings);
    let mut url = parse_url(&args.url)?;
    guard.check_url(&url).map_err(not_allowed)?;
    let limit = args
        .max_bytes
        .map_or(settings.max_bytes, |m| m.min(settings.max_bytes));
    let method = match args.method {
        FetchMethod::Get => Method::GET,
        FetchMethod::Head => Method::HEAD,
    };
    let timeout_ms = settings.timeout_ms;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let err = |e: reqwest::Error| map_error(e, timeout_ms);
    let mut redirects = 0;
    let mut response = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Timeout { timeout_ms });
        }
        let response = client
            .request(method.clone(), url.clone())
            .timeout(left)
            .send()
            .await
            .map_err(err)?;
        if !response.status().is_redirection() || response.status() == StatusCode::NOT_MODIFIED {
            break response;
        }
        url = redirect_target(&response)?;
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(FetchError::TooManyRedirects);
        }
        guard.check_url(&url).map_err(not_allowed)?;
        ctx.check_followed_url(&url)
            .map_err(|e| FetchError::PolicyDenied {
                reason: e.message().to_owned(),
            })?;
    };

    let status = response.status();
    let final_url = response.url().to_string();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if status.is_client_error() || status.is_server_error() {
        let (body, _) = read_body(&mut response, EXCERPT_BYTES)
            .await
            .unwrap_or_default();
        return Err(FetchError::Http {
            status: status.as_u16(),
            url: final_url,
            excerpt: excerpt(status, &decode(&body, content_type.as_deref(), true)),
        });
    }
    let mut result = FetchResult {
        url: final_url,
        status: status.as_u16(),
        content_type,
        text: String::new(),
        truncated: false,
        bytes: 0,
    };
    if args.method == FetchMethod::Head {
        return Ok(result);
    }
    if let Some(ct) = result.content_type.as_deref().filter(|ct| !is_text(ct)) {
        let size = response
            .content_length()
            .map_or("size unknown".to_owned(), |n| format!("{n} bytes"));
        result.text = format!("[{} content not shown: {size}]", essence(ct));
        return Ok(result);
    }
    let (body, truncated) = read_body(&mut response, limit).await.map_err(err)?;
    if result.content_type.is_none() && body.iter().take(1024).any(|&b| b == 0) {
        result.text = "[binary content without a content type, not shown]".into();
        return Ok(result);
    }
    result.text = decode(&body, result.content_type.as_deref(), truncated);
    result.truncated = truncated;
    result.bytes = body.len();
    Ok(result)
}

/// Where a 3xx `response` sends us: its `Location`, resolved against the response's URL.
///
/// # Errors
/// `Http` (an upstream error) when there is no `Location` to follow; `NotAllowed` when it is not
/// a valid URL or leads to a scheme other than http(s) (`file:`, `ftp:`...): fetch refuses
/// rather than report an empty success. (The host guard checks the target afterwards.)
fn redirect_target(response: &reqwest::Response) -> Result<Url, FetchError> {
    let from = response.url();
    let refused = |reason: String| FetchError::NotAllowed {
        host: from.host_str().unwrap_or_default().to_owned(),
        reason,
    };
    let Some(location) = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Err(FetchError::Http {
            status: response.status().as_u16(),
            url: from.to_string(),
            excerpt: "a redirect without a Location header to follow".to_owned(),
        });
    };
    let shown = toolgate_model::text::cut(location, 200);
    let target = from
        .join(location)
        .map_err(|e| refused(format!("redirect to `{shown}` is not a valid URL: {e}")))?;
    if !matches!(target.scheme(), "http" | "https") {
        return Err(refused(format!(
            "redirect to `{shown}` was not followed (only http and https URLs may be fetched)"
        )));
    }
    Ok(target)
}

fn parse_url(raw: &str) -> Result<Url, FetchError> {
    let invalid = |reason: &str| FetchError::InvalidUrl {
        url: raw.to_owned(),
        reason: reason.to_owned(),
    };
    let url = Url::parse(raw.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("only http and https URLs can be fetched"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("the URL has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("credentials in URLs are not supported"));
    }
    Ok(url)
}

fn not_allowed(blocked: Blocked) -> FetchError {
    FetchError::NotAllowed {
        host: blocked.host,
        reason: blocked.reason,
    }
}

fn map_error(e: reqwest::Error, timeout_ms: u64) -> FetchError {
    if let Some(blocked) = toolgate_runtime::net::blocked_in(&e) {
        return not_allowed(blocked);
    }
    if toolgate_runtime::net::too_many_redirects_in(&e) {
        return FetchError::TooManyRedirects;
    }
    if e.is_timeout() {
        return FetchError::Timeout { timeout_ms };
    }
    if e.is_builder() {
        return FetchError::InvalidUrl {
            url: e.url().map(Url::to_string).unwrap_or_default(),
            reason: chain(&e),
        };
    }
    FetchError::Network { message: chain(&e) }
}

/// An error and its causes, "a: b: c", without repeats.
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests;
