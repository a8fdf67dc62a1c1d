//! Where `fetch` may connect: the host allowlist, the private-address rule, the DNS resolver
//! and the redirect policy that enforce them.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use reqwest::{
    Url,
    dns::{Addrs, Name, Resolve, Resolving},
    redirect,
};

use super::{FetchSettings, MAX_REDIRECTS};

/// A refused destination; travels through reqwest's error chain and becomes
/// [`super::FetchError::NotAllowed`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("{host}: {reason}")]
pub(super) struct Blocked {
    pub(super) host: String,
    pub(super) reason: String,
}

/// Too many redirects; becomes [`super::FetchError::TooManyRedirects`].
#[derive(Debug, thiserror::Error)]
#[error("more than {MAX_REDIRECTS} redirects")]
pub(super) struct TooManyRedirects;

/// How a host matched the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Match {
    /// Named exactly: any address it resolves to is accepted.
    Exact,
    /// Matched by `*` or `*.domain`: only public addresses, unless `allow_private`.
    Wildcard,
}

/// The allowlist and private-address rule, shared by the request check, the resolver and
/// the redirect policy.
#[derive(Debug, Clone)]
pub(super) struct Rules {
    exact: Vec<String>,
    suffixes: Vec<String>,
    any: bool,
    allow_private: bool,
}

impl Rules {
    pub(super) fn new(settings: &FetchSettings) -> Self {
        let mut rules = Rules {
            exact: Vec::new(),
            suffixes: Vec::new(),
            any: false,
            allow_private: settings.allow_private,
        };
        for entry in &settings.allow_hosts {
            let entry = normalize(entry);
            if entry == "*" {
                rules.any = true;
            } else if let Some(domain) = entry.strip_prefix("*.") {
                rules.suffixes.push(format!(".{domain}"));
            } else if !entry.is_empty() {
                rules.exact.push(entry);
            }
        }
        rules
    }

    pub(super) fn matches(&self, host: &str) -> Option<Match> {
        let host = normalize(host);
        if self.exact.contains(&host) {
            Some(Match::Exact)
        } else if self.any || self.suffixes.iter().any(|s| host.ends_with(s.as_str())) {
            Some(Match::Wildcard)
        } else {
            None
        }
    }

    /// Check a URL's host (and, for an IP literal, its address) before connecting.
    pub(super) fn check_url(&self, url: &Url) -> Result<(), Blocked> {
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
        match self.matches(host) {
            None => Err(blocked("host is not in the fetch allowlist")),
            Some(Match::Exact) => Ok(()),
            Some(Match::Wildcard) => match normalize(host).parse::<IpAddr>() {
                Ok(ip) => self.check_ip(host, ip),
                Err(_) => Ok(()), // a name: checked after DNS resolution
            },
        }
    }

    fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), Blocked> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(Blocked {
                host: host.to_owned(),
                reason: format!(
                    "resolves to the non-public address {ip}; list the host exactly (not by \
                     wildcard) in allow_hosts, or set allow_private, to allow it"
                ),
            })
        }
    }

    /// The redirect policy: at most [`MAX_REDIRECTS`], each target re-checked.
    pub(super) fn redirect_policy(self: Arc<Self>) -> redirect::Policy {
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

/// DNS resolution through the system resolver, refusing names that the rules refuse.
/// The addresses checked are the addresses connected to, so DNS rebinding cannot slip a
/// private address in between the check and the connection.
pub(super) struct GuardedResolver(pub(super) Arc<Rules>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let rules = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let Some(how) = rules.matches(&host) else {
                return Err(Blocked {
                    host,
                    reason: "host is not in the fetch allowlist".into(),
                }
                .into());
            };
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if how == Match::Wildcard {
                for addr in &addrs {
                    rules.check_ip(&host, addr.ip())?;
                }
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Whether an address is globally routable: not loopback, private, link-local, shared
/// (CGNAT), unspecified, broadcast, multicast, documentation, benchmarking or reserved,
/// including IPv4 addresses embedded in IPv6 (mapped, compatible, NAT64, 6to4).
pub(super) fn is_public(ip: IpAddr) -> bool {
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
        let settings = FetchSettings {
            allow_hosts: vec![
                "API.example.com.".into(),
                "*.example.org".into(),
                "[::1]".into(),
            ],
            ..FetchSettings::default()
        };
        let rules = Rules::new(&settings);
        assert_eq!(rules.matches("api.example.com"), Some(Match::Exact));
        assert_eq!(rules.matches("[::1]"), Some(Match::Exact));
        assert_eq!(rules.matches("a.b.example.org"), Some(Match::Wildcard));
        assert_eq!(rules.matches("example.org"), None);
        assert_eq!(rules.matches("badexample.org"), None);
        assert_eq!(rules.matches("example.com"), None);
    }
}
