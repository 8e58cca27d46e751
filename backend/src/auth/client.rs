//! The client's address, which the login throttle keys on. Directly connected clients are
//! their socket's peer. Behind a reverse proxy every client would share the proxy's address, so
//! when the peer is one of the configured `trusted_proxies` the address comes from
//! `X-Forwarded-For` instead: the right-most entry that is not itself a trusted proxy. Entries
//! further left were written by the client and are never believed.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use ipnet::IpNet;

use crate::state::AppState;

/// The caller's address, `None` when the server was started without connect info (a router
/// driven in-process): never a rejection.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub Option<IpAddr>);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        Ok(ClientIp(client_address(
            peer,
            &parts.headers,
            &state.config.trusted_proxies,
        )))
    }
}

/// The client behind `peer`, following `X-Forwarded-For` only through trusted proxies.
pub fn client_address(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[IpNet]) -> Option<IpAddr> {
    let peer = peer?;
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(&canonical(*ip)));
    if !is_trusted(&peer) {
        if trusted.is_empty() && headers.contains_key("x-forwarded-for") {
            warn_once_about_an_unconfigured_proxy(peer);
        }
        return Some(peer);
    }
    // Every X-Forwarded-For header, in order, as one list; read from the right.
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match parse_hop(hop) {
            Some(ip) => {
                client = canonical(ip);
                if !is_trusted(&client) {
                    break;
                }
            }
            // A malformed entry: nothing at or left of it can be believed; the last trusted
            // hop is the best answer there is.
            None => {
                warn_once_about_an_unreadable_entry(hop);
                break;
            }
        }
    }
    Some(client)
}

/// A proxy sends `X-Forwarded-For` but none is trusted: every client behind it shares its
/// address, so one client's failed logins count against all. Said once per process, in the log.
fn warn_once_about_an_unconfigured_proxy(peer: IpAddr) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            peer = %peer,
            "a request carries X-Forwarded-For but trusted_proxies is empty: behind a reverse proxy every \
             client shares its address for the login throttle; set ANTEROOM_TRUSTED_PROXIES to its CIDR"
        );
    }
}

/// A trusted proxy wrote an entry that is no address: its clients then share the proxy's
/// bucket. Said once per process, in the log, so the proxy's format can be fixed.
fn warn_once_about_an_unreadable_entry(hop: &str) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let shown: String = hop.chars().take(64).collect();
        tracing::warn!(
            entry = %shown,
            "an X-Forwarded-For entry from a trusted proxy is not an address: the client is taken to be the proxy"
        );
    }
}

/// One `X-Forwarded-For` entry: an address, or an address with a port as some load balancers
/// write it (`203.0.113.9:5678`, `[2001:db8::1]:443`).
///
/// An IPv6 address with a port and no brackets (`2001:db8::1:51234`) is read by splitting off a
/// decimal port after the last colon, but only when the whole does not already read as an
/// address: `2001:db8::1:443` is a valid address on its own, so a proxy must write
/// `[v6]:port` for such addresses to be read as it meant.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| hop.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
        .or_else(|| {
            let (addr, port) = hop.rsplit_once(':')?;
            port.parse::<u16>().ok()?;
            addr.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
        })
}

/// IPv4-mapped IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) as plain IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn proxies() -> Vec<IpNet> {
        vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()]
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let got = client_address(Some(ip("10.0.0.5")), &xff(&["203.0.113.9"]), &[]);
        assert_eq!(got, Some(ip("10.0.0.5")));
    }

    #[test]
    fn a_client_that_is_not_a_trusted_proxy_cannot_choose_its_address() {
        let got = client_address(Some(ip("198.51.100.1")), &xff(&["203.0.113.9"]), &proxies());
        assert_eq!(got, Some(ip("198.51.100.1")));
    }

    #[test]
    fn behind_trusted_proxies_the_right_most_untrusted_entry_is_the_client() {
        // The client forged the first entry; proxy 10.0.0.7 appended the real one.
        let headers = xff(&["1.2.3.4, 203.0.113.9", "10.0.0.7"]);
        let got = client_address(Some(ip("10.0.0.8")), &headers, &proxies());
        assert_eq!(got, Some(ip("203.0.113.9")));
    }

    #[test]
    fn a_malformed_entry_stops_the_walk_at_the_last_trusted_hop() {
        let got = client_address(Some(ip("10.0.0.8")), &xff(&["bogus, 10.0.0.7"]), &proxies());
        assert_eq!(got, Some(ip("10.0.0.7")));
    }

    #[test]
    fn entries_with_ports_are_read_as_their_addresses() {
        let headers = xff(&["203.0.113.9:5678, [2001:db8::1]:443"]);
        let got = client_address(Some(ip("10.0.0.8")), &headers, &proxies());
        assert_eq!(got, Some(ip("2001:db8::1")));
        let got = client_address(Some(ip("10.0.0.8")), &xff(&["203.0.113.9:5678"]), &proxies());
        assert_eq!(got, Some(ip("203.0.113.9")));
        let got = client_address(Some(ip("10.0.0.8")), &xff(&["2001:db8::1:51234"]), &proxies());
        assert_eq!(got, Some(ip("2001:db8::1")), "an unbracketed IPv6 address with a port");
    }

    #[test]
    fn an_ipv4_mapped_peer_is_matched_against_ipv4_proxies() {
        let got = client_address(Some(ip("::ffff:10.0.0.8")), &xff(&["203.0.113.9"]), &proxies());
        assert_eq!(got, Some(ip("203.0.113.9")));
    }
}
