//! The §9.4 address guard: which destination addresses a callback may never reach.
//!
//! §9.4: "The Hub MUST refuse private/link-local/metadata IP ranges". This table is broader than
//! the letter of that sentence — anything that is not ordinary public unicast is refused — and it
//! is applied to the *resolved* address of every delivery attempt (`ma2h-delivery-http`), and to
//! a literal address an operator tries to bind (`admin bind-callback`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Refused IPv4 networks: (network, prefix length, why).
const FORBIDDEN_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (incl. 0.0.0.0 unspecified)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "RFC 1918 private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "RFC 6598 CGNAT shared space"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local (incl. 169.254.169.254 cloud metadata)"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "RFC 1918 private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "TEST-NET-1 documentation"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "deprecated 6to4 relay anycast"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "RFC 1918 private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "TEST-NET-2 documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "TEST-NET-3 documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved (incl. 255.255.255.255 broadcast)"),
];

/// Refused IPv6 networks *inside* global unicast 2000::/3 (everything outside 2000::/3 is refused
/// anyway, apart from the IPv4-embedding forms judged by their embedded address).
const FORBIDDEN_V6_GLOBAL: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "Teredo (embeds an obfuscated IPv4 address)"),
    (Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0), 48, "benchmarking"),
    (Ipv6Addr::new(0x2001, 0x10, 0, 0, 0, 0, 0, 0), 28, "deprecated ORCHID"),
    (Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28, "ORCHIDv2"),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation"),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation (RFC 9637)"),
];

/// Whether a callback may never be delivered to `ip` (§9.4), dev-mode exceptions aside.
///
/// Refused: IPv4 loopback, RFC 1918, CGNAT 100.64/10, link-local 169.254/16 (cloud metadata),
/// multicast, broadcast, unspecified / "this network" 0/8, documentation, benchmarking and
/// reserved ranges; IPv6 `::`, `::1`, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10,
/// multicast ff00::/8, and in fact everything outside global unicast 2000::/3, plus documentation,
/// benchmarking, ORCHID and Teredo space within it. IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`)
/// and 6to4 (`2002::/16`) addresses are judged by the IPv4 address they embed.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => is_forbidden_v6(v6),
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    FORBIDDEN_V4.iter().any(|&(net, prefix, _)| {
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        bits & mask == u32::from(net) & mask
    })
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    u128::from(ip) & mask == u128::from(net) & mask
}

/// The IPv4 address an IPv6 address carries, for the forms that route to it.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let low32 = Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32);
    let seg = ip.segments();
    let is = |net: Ipv6Addr, prefix: u8| in_v6(ip, net, prefix);
    if is(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96) // IPv4-mapped ::ffff:a.b.c.d
        || is(Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0), 96) // IPv4-translated ::ffff:0:a.b.c.d
        || is(Ipv6Addr::UNSPECIFIED, 96) // IPv4-compatible ::a.b.c.d (also :: and ::1)
        || is(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96)
    // NAT64 well-known prefix
    {
        return Some(low32);
    }
    if seg[0] == 0x2002 {
        // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
        let [a, b] = seg[1].to_be_bytes();
        let [c, d] = seg[2].to_be_bytes();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    None
}

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    if ip.is_unspecified() || ip.is_loopback() {
        return true;
    }
    if let Some(v4) = embedded_v4(ip) {
        // 6to4 is inside 2000::/3; the others are outside it and allowed only for a public v4.
        return is_forbidden_v4(v4);
    }
    // Fail closed: only global unicast 2000::/3 is reachable. This refuses ULA fc00::/7,
    // link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, discard-only 100::/64,
    // the local-use NAT64 prefix 64:ff9b:1::/48 and all unassigned space.
    if !in_v6(ip, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return true;
    }
    FORBIDDEN_V6_GLOBAL.iter().any(|&(net, prefix, _)| in_v6(ip, net, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_table() {
        // (address, forbidden?)
        let table: &[(&str, bool)] = &[
            // IPv4 refused
            ("127.0.0.1", true),
            ("127.255.255.254", true),
            ("10.0.0.1", true),
            ("10.255.255.255", true),
            ("172.16.0.1", true),
            ("172.31.255.255", true),
            ("192.168.1.1", true),
            ("100.64.0.1", true),
            ("100.127.255.255", true),
            ("169.254.169.254", true),
            ("169.254.0.1", true),
            ("0.0.0.0", true),
            ("0.1.2.3", true),
            ("224.0.0.1", true),
            ("239.255.255.250", true),
            ("255.255.255.255", true),
            ("240.0.0.1", true),
            ("192.0.0.8", true),
            ("192.0.2.10", true),
            ("198.18.0.1", true),
            ("198.19.255.255", true),
            ("198.51.100.7", true),
            ("203.0.113.9", true),
            ("192.88.99.1", true),
            // IPv4 allowed (public unicast, incl. the neighbours of refused ranges)
            ("93.184.216.34", false),
            ("8.8.8.8", false),
            ("1.1.1.1", false),
            ("172.15.255.255", false),
            ("172.32.0.0", false),
            ("100.63.255.255", false),
            ("100.128.0.0", false),
            ("169.253.255.255", false),
            ("198.17.255.255", false),
            ("198.20.0.0", false),
            ("11.0.0.1", false),
            ("223.255.255.255", false),
            // IPv6 refused
            ("::", true),
            ("::1", true),
            ("fc00::1", true),
            ("fd12:3456:789a::1", true),
            ("fe80::1", true),
            ("febf::1", true),
            ("fec0::1", true),
            ("ff02::1", true),
            ("ff0e::1", true),
            ("100::1", true),
            ("64:ff9b:1::1", true),
            ("2001:db8::1", true),
            ("2001::1", true),
            ("2001:2::1", true),
            ("2001:20::1", true),
            ("3fff::1", true),
            // IPv4 embedded in IPv6, forbidden inside
            ("::ffff:127.0.0.1", true),
            ("::ffff:7f00:1", true),
            ("::ffff:10.0.0.1", true),
            ("::ffff:169.254.169.254", true),
            ("::ffff:0:127.0.0.1", true),
            ("::127.0.0.1", true),
            ("::192.168.0.1", true),
            ("64:ff9b::127.0.0.1", true),
            ("64:ff9b::a9fe:a9fe", true),
            ("2002:7f00:1::", true),
            ("2002:c0a8:101::1", true),
            ("2002:a9fe:a9fe::1", true),
            // IPv6 allowed: global unicast, and the embedding forms around a public IPv4
            ("2606:4700:4700::1111", false),
            ("2a00:1450:4001:81c::200e", false),
            ("::ffff:93.184.216.34", false),
            ("64:ff9b::8.8.8.8", false),
            ("2002:5db8:d822::1", false),
        ];
        for &(addr, forbidden) in table {
            let ip: IpAddr = addr.parse().expect(addr);
            assert_eq!(is_forbidden(ip), forbidden, "{addr}");
        }
    }

    #[test]
    fn tables_are_well_formed() {
        for &(net, prefix, why) in FORBIDDEN_V4 {
            let mask = u32::MAX << (32 - prefix);
            assert_eq!(u32::from(net) & !mask, 0, "{net}/{prefix} ({why}) has host bits set");
        }
        for &(net, prefix, why) in FORBIDDEN_V6_GLOBAL {
            let mask = u128::MAX << (128 - prefix);
            assert_eq!(u128::from(net) & !mask, 0, "{net}/{prefix} ({why}) has host bits set");
        }
    }
}
