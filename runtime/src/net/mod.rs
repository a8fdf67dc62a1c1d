//! Where outgoing HTTP requests may go: a host allowlist, the private-address rule, a DNS
//! resolver and a redirect policy that enforce them. Shared by the built-in `fetch` tool and the
//! OpenAPI sources' HTTP binding.
//!
//! * [`HostRules`] holds the allowlist: exact names or IP literals (`api.example.com`,
//!   `127.0.0.1`), `*.example.com` (any subdomain, not `example.com` itself) or `*` (any host).
//!   Ports are not part of an entry; entries are compared case-insensitively, without a trailing
//!   dot or IPv6 brackets.
//! * Non-public addresses (loopback, private, link-local, CGNAT, documentation, multicast, ...;
//!   see [`is_public`]) are refused unless `allow_private`. By default a host named *exactly*
//!   may resolve to any address (the operator named it; `fetch`'s rule); with
//!   [`HostRules::check_exact_hosts`] exact names are checked too (the OpenAPI rule: a server on
//!   `127.0.0.1` needs `allow_private`).
//! * [`GuardedResolver`] checks the addresses actually connected to, after DNS resolution, so DNS
//!   rebinding cannot slip a private address in between the check and the connection.
//! * [`HostRules::redirect_policy`] follows at most [`MAX_REDIRECTS`] redirects, each target
//!   re-checked; a refused redirect fails the request with [`Blocked`] in reqwest's error chain
//!   (find it with [`blocked_in`]).
//!
//! ```
//! use toolgate_runtime::net::HostRules;
//! let rules = HostRules::new(["api.example.com", "*.example.org"], false);
//! assert!(rules.check_url(&"https://api.example.com/v1".parse().unwrap()).is_ok());
//! assert!(rules.check_url(&"https://evil.example.net/".parse().unwrap()).is_err());
//! ```

pub mod oauth;
#[cfg(any(feature = "mcp", feature = "a2a"))]
pub(crate) mod sse;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::{
    Url,
    dns::{Addrs, Name, Resolve, Resolving},
    redirect,
};

/// Most redirects followed by a client using [`HostRules::redirect_policy`].
pub const MAX_REDIRECTS: usize = 5;

/// A refused destination. Travels through reqwest's error chain (see [`blocked_in`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host}: {reason}")]
pub struct Blocked {
    /// The refused host (never the path or query, which may hold secrets).
    pub host: String,
    /// Why, e.g. `host is not in the fetch allowlist`.
    pub reason: String,
}

/// More than [`MAX_REDIRECTS`] redirects. Travels through reqwest's error chain.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("more than {MAX_REDIRECTS} redirects")]
pub struct TooManyRedirects;

/// How a host matched the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Named exactly.
    Exact,
    /// Matched by `*` or `*.domain`: only public addresses, unless `allow_private`.
    Wildcard,
}

/// The allowlist and private-address rule, shared by the request check, the resolver and the
/// redirect policy.
#[derive(Debug, Clone)]
pub struct HostRules {
    exact: Vec<String>,
    suffixes: Vec<String>,
    any: bool,
    allow_private: bool,
    check_exact: bool,
    label: String,
}

impl HostRules {
    /// Rules allowing `hosts` (exact names, `*.domain`, `*`); `allow_private` lets hosts resolve
    /// to non-public addresses. Exact entries may resolve to any address unless
    /// [`check_exact_hosts`](Self::check_exact_hosts) is set.
    pub fn new<I, S>(hosts: I, allow_private: bool) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut rules = Self {
            exact: Vec::new(),
            suffixes: Vec::new(),
            any: false,
            allow_private,
            check_exact: false,
            label: "allowlist".to_string(),
        };
        for entry in hosts {
            rules.allow(entry.as_ref());
        }
        rules
    }

    /// Adds one allowlist entry.
    pub fn allow(&mut self, entry: &str) {
        let entry = normalize(entry);
        if entry == "*" {
            self.any = true;
        } else if let Some(domain) = entry.strip_prefix("*.") {
            self.suffixes.push(format!(".{domain}"));
        } else if !entry.is_empty() && !self.exact.contains(&entry) {
            self.exact.push(entry);
        }
    }

    /// Also refuse non-public addresses for exactly named hosts (unless `allow_private`).
    #[must_use]
    pub fn check_exact_hosts(mut self, check: bool) -> Self {
        self.check_exact = check;
        self
    }

    /// The allowlist's name in refusals (`host is not in the {label}`); default `allowlist`.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// How `host` matches the allowlist, if it does.
    pub fn matches(&self, host: &str) -> Option<Match> {
        let host = normalize(host);
        if self.exact.contains(&host) {
            Some(Match::Exact)
        } else if self.any || self.suffixes.iter().any(|s| host.ends_with(s.as_str())) {
            Some(Match::Wildcard)
        } else {
            None
        }
    }

    fn must_be_public(&self, how: Match) -> bool {
        !self.allow_private && (how == Match::Wildcard || self.check_exact)
    }

    fn not_listed(&self, host: &str) -> Blocked {
        Blocked {
            host: host.to_owned(),
            reason: format!("host is not in the {}", self.label),
        }
    }

    /// Checks a URL before connecting: `http`/`https` only, no credentials in the URL, the host
    /// in the allowlist and, for an IP literal, the private-address rule.
    ///
    /// # Errors
    /// [`Blocked`] naming the host and why.
    pub fn check_url(&self, url: &Url) -> Result<(), Blocked> {
        let host = url.host_str().unwrap_or_default();
        let blocked = |reason: &str| Blocked {
            host: host.to_owned(),
            reason: reason.to_owned(),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(blocked("only http and https URLs may be fetched"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(blocked("credentials in URLs are not supported"));
        }
        let Some(how) = self.matches(host) else {
            return Err(self.not_listed(host));
        };
        match normalize(host).parse::<IpAddr>() {
            Ok(ip) if self.must_be_public(how) => self.check_ip(host, ip),
            _ => Ok(()), // a name: checked after DNS resolution
        }
    }

    fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), Blocked> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            let fix = if self.check_exact {
                "set allow_private to allow it"
            } else {
                "list the host exactly (not by wildcard) in allow_hosts, or set allow_private, \
                 to allow it"
            };
            Err(Blocked {
                host: host.to_owned(),
                reason: format!("resolves to the non-public address {ip}; {fix}"),
            })
        }
    }

    /// The redirect policy: at most [`MAX_REDIRECTS`], each target re-checked with
    /// [`check_url`](Self::check_url).
    pub fn redirect_policy(self: Arc<Self>) -> redirect::Policy {
        redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(TooManyRedirects);
            }
            match self.check_url(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(blocked) => attempt.error(blocked),
            }
        })
    }

    /// The redirect policy of a client that sends credentials: like
    /// [`redirect_policy`](Self::redirect_policy), and also refusing what
    /// [`credential_redirect_refusal`] refuses (an `https` → `http` downgrade; with
    /// `same_origin_only`, any change of scheme, host or port).
    pub fn credential_redirect_policy(self: Arc<Self>, same_origin_only: bool) -> redirect::Policy {
        redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(TooManyRedirects);
            }
            if let Some(previous) = attempt.previous().last()
                && let Some(blocked) =
                    credential_redirect_refusal(previous, attempt.url(), same_origin_only)
            {
                return attempt.error(blocked);
            }
            match self.check_url(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(blocked) => attempt.error(blocked),
            }
        })
    }

    /// A `reqwest::ClientBuilder` that enforces these rules: the [`GuardedResolver`], the
    /// [`redirect_policy`](Self::redirect_policy), no proxy (a proxy would resolve names
    /// itself), no `Referer`.
    pub fn client_builder(self: Arc<Self>) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver(self.clone())))
            .redirect(self.redirect_policy())
            .referer(false)
            .no_proxy()
    }
}

/// Why a redirect from `from` to `to` must not be followed by a client sending credentials:
/// an `https` → `http` downgrade (credentials would travel in clear text); with
/// `same_origin_only` (credentials in headers reqwest does not strip, such as `X-API-Key`), a
/// different origin (scheme, host or port, RFC 6454). The refusal names the target's host and
/// port, never its path or query.
pub fn credential_redirect_refusal(
    from: &Url,
    to: &Url,
    same_origin_only: bool,
) -> Option<Blocked> {
    let host = match to.port() {
        Some(port) => format!("{}:{port}", to.host_str().unwrap_or_default()),
        None => to.host_str().unwrap_or_default().to_owned(),
    };
    if from.scheme() == "https" && to.scheme() != "https" {
        return Some(Blocked {
            host,
            reason: "redirect from https to http refused: credentials would be sent in clear \
                     text"
                .to_owned(),
        });
    }
    let same_origin = from.scheme() == to.scheme()
        && from.host_str().map(normalize) == to.host_str().map(normalize)
        && from.port_or_known_default() == to.port_or_known_default();
    if same_origin_only && !same_origin {
        return Some(Blocked {
            host,
            reason: "redirect to another origin refused: this source sends credentials in \
                     request headers"
                .to_owned(),
        });
    }
    None
}

/// Lowercase, without brackets around IPv6 literals or a trailing dot.
fn normalize(host: &str) -> String {
    let host = host.trim().trim_end_matches('.');
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.to_ascii_lowercase()
}

/// DNS resolution through the system resolver, refusing names the rules refuse, and checking
/// the resolved addresses (the ones connected to) against the private-address rule.
pub struct GuardedResolver(pub Arc<HostRules>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let rules = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let Some(how) = rules.matches(&host) else {
                return Err(rules.not_listed(&host).into());
            };
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if rules.must_be_public(how) {
                for addr in &addrs {
                    rules.check_ip(&host, addr.ip())?;
                }
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The [`Blocked`] refusal in an error's source chain (a reqwest error from a guarded client).
pub fn blocked_in(err: &(dyn std::error::Error + 'static)) -> Option<Blocked> {
    let mut source = Some(err);
    while let Some(e) = source {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Some(b.clone());
        }
        source = e.source();
    }
    None
}

/// Whether an error's source chain holds [`TooManyRedirects`].
pub fn too_many_redirects_in(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
    while let Some(e) = source {
        if e.is::<TooManyRedirects>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether an address is globally routable: not loopback, private, link-local, shared
/// (CGNAT), unspecified, broadcast, multicast, documentation, benchmarking or reserved,
/// including IPv4 addresses embedded in IPv6 (mapped, compatible, NAT64, 6to4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                   // "this network"
        || a == 10                             // private
        || a == 127                            // loopback
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 169 && b == 254)              // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0)      // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)      // documentation
        || (a == 192 && b == 168)              // private
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100)   // documentation
        || (a == 203 && b == 0 && c == 113)    // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        // ::, ::1 and the deprecated IPv4-compatible addresses
        return false;
    }
    if s[0] == 0x64 && s[1] == 0xff9b {
        // NAT64 (64:ff9b::/96 and 64:ff9b:1::/48): the IPv4 address is in the last 32 bits
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return is_public_v4(v4);
    }
    if s[0] == 0x2002 {
        // 6to4: the IPv4 address follows the prefix
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return is_public_v4(v4);
    }
    !((s[0] & 0xfe00) == 0xfc00              // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80         // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0         // site-local (deprecated) fec0::/10
        || (s[0] & 0xff00) == 0xff00         // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only 100::/64
}

/// A network failure: `network` (retryable), naming `host` only. reqwest's own message holds
/// the URL (with its query), so the URL is stripped first.
pub(crate) fn network_error(e: &reqwest::Error, host: &str) -> crate::ToolError {
    use crate::{ErrorKind, ToolError};
    if let Some(blocked) = crate::net::blocked_in(e) {
        return ToolError::permission_denied(format!(
            "request to `{}` refused: {}",
            blocked.host, blocked.reason
        ));
    }
    if crate::net::too_many_redirects_in(e) {
        return ToolError::upstream(format!(
            "`{host}` redirected more than {} times",
            crate::net::MAX_REDIRECTS
        ));
    }
    if e.is_timeout() {
        return ToolError::new(ErrorKind::Timeout, format!("request to `{host}` timed out"));
    }
    let stripped = reqwest_chain(e);
    ToolError::new(
        ErrorKind::Network,
        format!("cannot reach `{host}`: {stripped}"),
    )
}

/// The error's cause chain, without the URL reqwest puts in its own message.
pub(crate) fn reqwest_chain(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    if parts.is_empty() {
        if e.is_connect() {
            "connection failed".to_string()
        } else if e.is_body() || e.is_decode() {
            "the response body could not be read".to_string()
        } else {
            "request failed".to_string()
        }
    } else {
        parts.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn allowlist_entries() {
        let rules = HostRules::new(["API.example.com.", "*.example.org", "[::1]"], false);
        assert_eq!(rules.matches("api.example.com"), Some(Match::Exact));
        assert_eq!(rules.matches("[::1]"), Some(Match::Exact));
        assert_eq!(rules.matches("a.b.example.org"), Some(Match::Wildcard));
        assert_eq!(rules.matches("example.org"), None);
        assert_eq!(rules.matches("badexample.org"), None);
        assert_eq!(rules.matches("example.com"), None);
    }

    #[test]
    fn exact_private_hosts_follow_the_mode() {
        let url: Url = "http://127.0.0.1:8080/x".parse().unwrap();
        let trusting = HostRules::new(["127.0.0.1"], false);
        assert!(trusting.check_url(&url).is_ok());
        let strict = HostRules::new(["127.0.0.1"], false).check_exact_hosts(true);
        let err = strict.check_url(&url).unwrap_err();
        assert!(err.reason.contains("non-public address 127.0.0.1"), "{err}");
        let allowed = HostRules::new(["127.0.0.1"], true).check_exact_hosts(true);
        assert!(allowed.check_url(&url).is_ok());
        let other: Url = "http://10.0.0.1/".parse().unwrap();
        let err = allowed.check_url(&other).unwrap_err();
        assert_eq!(err.reason, "host is not in the allowlist");
    }
}
