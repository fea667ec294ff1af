//! The client's address behind a reverse proxy: `--trusted-proxy CIDR` (repeatable) names the proxies
//! whose `X-Forwarded-For` is believed. From a trusted peer, the client is the right-most address of that
//! header that is not itself a trusted proxy (each proxy appends the address it saw, so the left part is
//! whatever the client claimed); from any other peer the header is ignored.

use std::net::IpAddr;
use std::str::FromStr;

/// An IP network, `10.0.0.0/8` or `::1/128` (a bare address is its own /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let bad = || format!("{s:?} is not an address or a CIDR block (e.g. 10.0.0.0/8, ::1/128)");
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Cidr { addr, prefix })
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |a: IpAddr| -> (u128, u8) {
            match a {
                IpAddr::V4(v) => (u128::from(u32::from(v)) << 96, 32),
                IpAddr::V6(v) => (u128::from(v), 128),
            }
        };
        // An IPv4 client seen through an IPv6 socket (::ffff:a.b.c.d) is that IPv4 address.
        let ip = match ip {
            IpAddr::V6(v) => v.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let ((net, width), (host, host_width)) = (bits(self.addr), bits(ip));
        if width != host_width {
            return false;
        }
        let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
        net & mask == host & mask
    }
}

/// The client of a request that came from `peer` with these headers.
pub fn client_address(peer: IpAddr, headers: &axum::http::HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map_while(|a| a.trim().parse::<IpAddr>().ok())
        .collect();
    forwarded.into_iter().rev().find(|ip| !is_trusted(*ip)).unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_right_most_untrusted_forwarded_address_from_a_trusted_peer_only() {
        let trusted: Vec<Cidr> = ["10.0.0.0/8", "::1"].iter().map(|c| c.parse().unwrap()).collect();
        let mut h = axum::http::HeaderMap::new();
        h.insert("x-forwarded-for", "6.6.6.6, 203.0.113.7, 10.1.2.3".parse().unwrap());
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        assert_eq!(client_address(ip("10.9.9.9"), &h, &trusted), ip("203.0.113.7"), "the spoofed left part is ignored");
        assert_eq!(client_address(ip("198.51.100.1"), &h, &trusted), ip("198.51.100.1"), "an untrusted peer's header is ignored");
        assert_eq!(client_address(ip("::1"), &axum::http::HeaderMap::new(), &trusted), ip("::1"));
        assert_eq!(client_address(ip("10.0.0.1"), &h, &[]), ip("10.0.0.1"), "no trusted proxy: never the header");
        assert!("10.0.0.0/8".parse::<Cidr>().unwrap().contains(ip("::ffff:10.2.3.4")));
        assert!(!"10.0.0.0/8".parse::<Cidr>().unwrap().contains(ip("11.0.0.1")));
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("1.2.3.4")));
        for bad in ["10.0.0.0/33", "x", "10.0.0.0/", "::1/129"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
