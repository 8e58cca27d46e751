//! The pure rules of notifications: which destinations the admins allow, how a delivery is
//! signed, and when a failed one is tried again. No I/O.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use ipnet::IpNet;
use sha2::Sha256;

/// Most hosts in the admins' list.
pub const MAX_DESTINATIONS: usize = anteroom_shared::api::notifications::MAX_DESTINATIONS;
/// Tries of one delivery before it is given up.
pub const MAX_ATTEMPTS: i32 = 10;
/// The first retry's delay; each next one doubles, up to [`MAX_RETRY_DELAY_SECONDS`].
pub const FIRST_RETRY_DELAY_SECONDS: i64 = 10;
/// The longest delay between two tries.
pub const MAX_RETRY_DELAY_SECONDS: i64 = 3_600;
/// The longest URL a subscription may name.
pub const MAX_URL_LENGTH: usize = 2_048;

/// One allowed destination: a host (or every subdomain of one) and optionally one port
/// (without one: 80 and 443 only, the ports of the web, never a database's or a kubelet's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// `true`: `*.host` — any subdomain of `host`, not `host` itself.
    wildcard: bool,
    /// Lowercase host name or IP literal.
    host: String,
    /// `None`: 80 and 443.
    port: Option<u16>,
}

/// Why a destination entry is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// Not `host`, `*.host`, optionally `:port`.
    #[error("not a host name, *.domain or IP address, optionally with :port")]
    Malformed,
}

impl Destination {
    /// Reads an admin's entry: `hooks.example.org`, `*.example.org`, `10.0.0.5:8443`.
    pub fn parse(text: &str) -> Result<Destination, DestinationError> {
        // Exactly `DESTINATION_PATTERN` (no blanks around, no sign or leading zero in a port):
        // the OpenAPI document states that pattern.
        if text.is_empty() || text.len() > anteroom_shared::api::notifications::DESTINATION_MAX_LENGTH {
            return Err(DestinationError::Malformed);
        }
        let text = text.to_ascii_lowercase();
        let (wildcard, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => {
                if port.is_empty() || port.starts_with('0') || !port.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(DestinationError::Malformed);
                }
                (
                    host,
                    Some(
                        port.parse::<u16>()
                            .ok()
                            .filter(|p| *p > 0)
                            .ok_or(DestinationError::Malformed)?,
                    ),
                )
            }
            None => (rest, None),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if host.is_empty() || !host.split('.').all(label_ok) {
            return Err(DestinationError::Malformed);
        }
        Ok(Destination {
            wildcard,
            host: host.to_owned(),
            port,
        })
    }

    /// Whether a URL with this host and port goes here.
    fn admits(&self, host: &str, port: u16) -> bool {
        let host_ok = if self.wildcard {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
        } else {
            host == self.host
        };
        host_ok && self.port.map_or(port == 80 || port == 443, |p| p == port)
    }

    /// Whether this entry is exactly `ip` (and admits `port`): the only way an internal
    /// address ([`is_internal`]) becomes reachable.
    fn is_exactly(&self, ip: IpAddr, port: u16) -> bool {
        !self.wildcard && self.host.parse::<IpAddr>().is_ok_and(|h| h == ip) && self.admits(&self.host, port)
    }
}

/// Whether a webhook may connect to `ip`: always for an address of the internet; for a
/// loopback, link-local, private (RFC 1918, ULA), CGNAT or otherwise special address, or one in
/// the cluster's own ranges (`cluster_networks`), only when an admin listed that exact address
/// (with the port). A host *name* the admins allow does not make the addresses it resolves to
/// allowed: a name can point anywhere, and change between the check and the connection.
pub fn may_connect(addr: SocketAddr, allowed: &[Destination], cluster_ranges: &[IpNet]) -> bool {
    let ip = canonical(addr.ip());
    !is_internal(ip, cluster_ranges) || allowed.iter().any(|d| d.is_exactly(ip, addr.port()))
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
/// as the IPv4 address it reaches, so `::ffff:127.0.0.1` is loopback too.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if let Some(v4) = v6.to_ipv4_mapped() {
                IpAddr::V4(v4)
            } else if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                IpAddr::V4(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                ))
            } else if s[0] == 0x2002 {
                IpAddr::V4(Ipv4Addr::new(
                    (s[1] >> 8) as u8,
                    s[1] as u8,
                    (s[2] >> 8) as u8,
                    s[2] as u8,
                ))
            } else {
                ip
            }
        }
        v4 => v4,
    }
}

/// Whether `ip` is no address of the internet, or one of the cluster's: loopback, unspecified,
/// private (RFC 1918), link-local (the clouds' metadata service at 169.254.169.254), CGNAT
/// (100.64.0.0/10), benchmarking, reserved, broadcast, multicast; IPv6 loopback, ULA
/// (fc00::/7), link-local, site-local, multicast, Teredo; and any of `cluster_ranges`.
pub fn is_internal(ip: IpAddr, cluster_ranges: &[IpNet]) -> bool {
    let ip = canonical(ip);
    if cluster_ranges.iter().any(|net| net.contains(&ip)) {
        return true;
    }
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || (s[0] == 0x2001 && s[1] == 0)
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
                || s[0..6] == [0, 0, 0, 0, 0, 0]
        }
    }
}

/// Why a subscription's URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// Not an absolute `http`/`https` URL without credentials, or too long.
    #[error("must be an http or https URL without credentials, at most 2,048 characters")]
    Malformed,
    /// Its host is not in the admins' list.
    #[error("its host is not among the destinations the admins allow")]
    NotAllowed,
}

/// Checks a subscription's URL against the admins' list.
pub fn check_url(url: &str, allowed: &[Destination]) -> Result<reqwest::Url, UrlProblem> {
    if url.len() > MAX_URL_LENGTH {
        return Err(UrlProblem::Malformed);
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| UrlProblem::Malformed)?;
    if !matches!(parsed.scheme(), "http" | "https")
        || !parsed.username().is_empty()
        || parsed.password().is_some()
        || parsed.fragment().is_some()
    {
        return Err(UrlProblem::Malformed);
    }
    let host = parsed.host_str().ok_or(UrlProblem::Malformed)?.to_ascii_lowercase();
    let port = parsed.port_or_known_default().ok_or(UrlProblem::Malformed)?;
    if allowed.iter().any(|d| d.admits(&host, port)) {
        Ok(parsed)
    } else {
        Err(UrlProblem::NotAllowed)
    }
}

/// `X-Anteroom-Signature` of `body` sent at `timestamp` (Unix seconds):
/// `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>" keyed by the secret>`. The
/// timestamp inside the signed text lets a receiver refuse old replays.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

/// A new subscription's secret: 32 random bytes, hex.
pub fn new_secret() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// When to try again after the `attempts`-th failed try at `now`; `None`: give up.
pub fn next_attempt(attempts: i32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let exponent = u32::try_from(attempts.saturating_sub(1).max(0)).unwrap_or(0).min(20);
    let delay = FIRST_RETRY_DELAY_SECONDS
        .saturating_mul(1_i64 << exponent)
        .min(MAX_RETRY_DELAY_SECONDS);
    Some(now + Duration::seconds(delay))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> Vec<Destination> {
        entries.iter().map(|e| Destination::parse(e).expect(e)).collect()
    }

    #[test]
    fn a_url_goes_only_where_the_admins_allow() {
        let list = allowed(&[
            "hooks.example.org",
            "*.corp.example",
            "10.0.0.5:8443",
            "ci.example.org:9000",
        ]);
        for ok in [
            "https://hooks.example.org/anteroom",
            "http://hooks.example.org/x",
            "https://ci.example.org:9000/x",
            "https://ci.corp.example/hook",
            "https://a.b.corp.example/",
            "https://10.0.0.5:8443/",
            "https://HOOKS.example.org/",
        ] {
            assert!(check_url(ok, &list).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("https://corp.example/", UrlProblem::NotAllowed),
            ("https://evilcorp.example/", UrlProblem::NotAllowed),
            ("https://hooks.example.org.evil.net/", UrlProblem::NotAllowed),
            ("https://10.0.0.5/", UrlProblem::NotAllowed),
            ("https://10.0.0.5:8444/", UrlProblem::NotAllowed),
            ("https://169.254.169.254/latest", UrlProblem::NotAllowed),
            // Listed without a port: the web's ports only.
            ("http://hooks.example.org:9000/x", UrlProblem::NotAllowed),
            ("http://hooks.example.org:6443/x", UrlProblem::NotAllowed),
            ("https://ci.corp.example:22/", UrlProblem::NotAllowed),
            ("https://ci.example.org/x", UrlProblem::NotAllowed),
            ("ftp://hooks.example.org/", UrlProblem::Malformed),
            ("https://user:pw@hooks.example.org/", UrlProblem::Malformed),
            ("hooks.example.org/x", UrlProblem::Malformed),
            ("", UrlProblem::Malformed),
        ] {
            assert_eq!(check_url(bad, &list).err(), Some(why), "{bad}");
        }
        assert_eq!(
            check_url(&format!("https://hooks.example.org/{}", "a".repeat(2_100)), &list).err(),
            Some(UrlProblem::Malformed)
        );
        assert_eq!(
            check_url("https://hooks.example.org/", &[]).err(),
            Some(UrlProblem::NotAllowed),
            "empty list: none"
        );
    }

    #[test]
    fn internal_addresses_are_reached_only_when_listed_exactly_with_their_port() {
        let sock = |s: &str| s.parse::<SocketAddr>().unwrap();
        let cluster: Vec<IpNet> = vec!["203.0.113.0/24".parse().unwrap()];
        let none: Vec<Destination> = Vec::new();
        for internal in [
            "127.0.0.1:80",
            "127.1.2.3:443",
            "0.0.0.0:80",
            "10.0.0.5:443",
            "172.16.0.1:80",
            "172.31.255.255:80",
            "192.168.1.1:80",
            "169.254.169.254:80",
            "100.64.0.1:80",
            "100.127.255.255:80",
            "198.18.0.1:80",
            "255.255.255.255:80",
            "224.0.0.1:80",
            "240.0.0.1:80",
            "203.0.113.9:443",
            "[::1]:80",
            "[::]:80",
            "[fd00::1]:80",
            "[fc00::1]:80",
            "[fe80::1]:80",
            "[::ffff:127.0.0.1]:80",
            "[::ffff:169.254.169.254]:80",
            "[64:ff9b::a9fe:a9fe]:80",
            "[2002:7f00:1::]:80",
        ] {
            assert!(!may_connect(sock(internal), &none, &cluster), "{internal}");
        }
        for public in [
            "93.184.216.34:443",
            "100.128.0.1:443",
            "172.32.0.1:80",
            "[2606:4700::1111]:443",
        ] {
            assert!(may_connect(sock(public), &none, &cluster), "{public}");
        }
        let listed = allowed(&["127.0.0.1:9000", "10.0.0.5", "hooks.internal"]);
        assert!(may_connect(sock("127.0.0.1:9000"), &listed, &cluster));
        assert!(!may_connect(sock("127.0.0.1:9001"), &listed, &cluster), "another port");
        assert!(may_connect(sock("10.0.0.5:443"), &listed, &cluster));
        assert!(
            !may_connect(sock("10.0.0.5:8080"), &listed, &cluster),
            "no port listed: 80/443"
        );
        assert!(
            !may_connect(sock("10.0.0.6:443"), &listed, &cluster),
            "a name is not an address"
        );
        assert!(!may_connect(sock("[::ffff:10.0.0.6]:443"), &listed, &cluster));
        assert!(
            may_connect(sock("[::ffff:10.0.0.5]:443"), &listed, &cluster),
            "the same address"
        );
    }

    #[test]
    fn an_entry_is_a_host_a_wildcard_or_an_address_with_an_optional_port() {
        for bad in [
            "",
            "*",
            "*.",
            "a..b",
            "-a.org",
            "a.org:0",
            "a.org:70000",
            "a.org:x",
            "http://a.org",
            "a/b",
            "a b",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad:?}");
        }
        for bad in [" a.org", "a.org ", "a.org:+80", "a.org:080", "a.org:"] {
            assert!(Destination::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Destination::parse("*.Example.ORG:443"),
            Ok(Destination {
                wildcard: true,
                host: "example.org".into(),
                port: Some(443)
            })
        );
    }

    proptest::proptest! {
        /// The server accepts exactly the entries the OpenAPI pattern describes.
        #[test]
        fn an_entry_is_accepted_exactly_when_the_documented_pattern_matches(
            text in proptest::prop_oneof![
                proptest::string::string_regex(anteroom_shared::api::notifications::DESTINATION_PATTERN.trim_start_matches('^').trim_end_matches('$')).unwrap(),
                "[a-zA-Z0-9.*:+ -]{0,20}",
                "(\\*\\.)?[a-z0-9-]{1,5}(\\.[a-z0-9-]{1,5}){0,2}(:[0-9+]{0,6})?",
            ]
        ) {
            let pattern = regex::Regex::new(anteroom_shared::api::notifications::DESTINATION_PATTERN).unwrap();
            let documented = pattern.is_match(&text) && text.len() <= anteroom_shared::api::notifications::DESTINATION_MAX_LENGTH;
            proptest::prop_assert_eq!(Destination::parse(&text).is_ok(), documented, "{:?}", text);
        }
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_the_timestamp_and_the_body() {
        // RFC 4231 test case 2 ("Jefe"), with the text split as the signature splits it.
        let sig = signature("Jefe", 0, b"what do ya want for nothing?");
        // HMAC-SHA256("Jefe", "0.what do ya want for nothing?") — computed independently:
        // the message differs from the RFC's by the "0." prefix, so check the RFC vector with
        // the MAC directly and the format here.
        assert!(sig.starts_with("t=0,v1="), "{sig}");
        assert_eq!(sig.len(), "t=0,v1=".len() + 64);
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // Another key or body, another signature.
        assert_ne!(sig, signature("Jefe", 0, b"what do ya want for nothing!"));
        assert_ne!(sig, signature("jefe", 0, b"what do ya want for nothing?"));
        assert_ne!(sig, signature("Jefe", 1, b"what do ya want for nothing?"));
        assert_eq!(new_secret().len(), 64);
        assert_ne!(new_secret(), new_secret());
    }

    #[test]
    fn retries_back_off_then_give_up() {
        let t = DateTime::UNIX_EPOCH;
        let delays: Vec<i64> = (1..MAX_ATTEMPTS)
            .map(|n| (next_attempt(n, t).unwrap() - t).num_seconds())
            .collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 320, 640, 1280, 2560]);
        assert_eq!(next_attempt(MAX_ATTEMPTS, t), None);
        assert_eq!((next_attempt(0, t).unwrap() - t).num_seconds(), 10);
    }
}
