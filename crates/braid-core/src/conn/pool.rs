//! The tunnel network and address assignment.
//!
//! The server owns one IPv4 network (e.g. `10.77.0.0/24`). Its first host
//! address is the server's own (the gateway, on its TUN device); clients
//! get host addresses from the rest. Assignment is a pure function of the
//! configuration, done once: clients with a fixed address keep it, the
//! others take the lowest free addresses in configuration order. So a
//! client always gets the same address, across reconnections and server
//! restarts, and the pool can never run out at run time (too many clients
//! is a configuration error).

use std::net::Ipv4Addr;

/// An IPv4 network: address and prefix length, host bits zero.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Net {
    network: Ipv4Addr,
    prefix_len: u8,
}

/// Why a network or an assignment is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// Not of the form `a.b.c.d/n`.
    #[error("`{0}` is not an IPv4 network like 10.77.0.0/24")]
    Syntax(String),
    /// Host bits set in the network address.
    #[error("`{0}` has host bits set; use {1}")]
    HostBits(String, Ipv4Net),
    /// Prefix too long to hold a gateway and a client.
    #[error("prefix /{0} is too small: a tunnel network needs at least /30")]
    TooSmall(u8),
    /// A fixed address outside the network, the network or broadcast
    /// address, or the gateway.
    #[error("address {0} is not a usable client address of {1} (the gateway is {2})")]
    NotAssignable(Ipv4Addr, Ipv4Net, Ipv4Addr),
    /// Two clients with the same fixed address.
    #[error("address {0} is given to two clients")]
    Duplicate(Ipv4Addr),
    /// More clients than host addresses.
    #[error("{0} clients do not fit in {1} ({2} client addresses)")]
    Exhausted(usize, Ipv4Net, u32),
}

impl Ipv4Net {
    /// A network from its address and prefix length.
    pub fn new(network: Ipv4Addr, prefix_len: u8) -> Result<Ipv4Net, PoolError> {
        if prefix_len > 30 {
            return Err(PoolError::TooSmall(prefix_len));
        }
        let net = Ipv4Net {
            network: Ipv4Addr::from(u32::from(network) & mask(prefix_len)),
            prefix_len,
        };
        if net.network != network {
            return Err(PoolError::HostBits(format!("{network}/{prefix_len}"), net));
        }
        Ok(net)
    }

    /// Parses a route prefix `a.b.c.d/n`, any length /0 to /32 (a route
    /// may name one host; only an address pool needs room for hosts).
    pub fn parse_route(text: &str) -> Result<Ipv4Net, PoolError> {
        let err = || PoolError::Syntax(text.to_string());
        let (a, p) = text.trim().split_once('/').ok_or_else(err)?;
        let addr: Ipv4Addr = a.parse().map_err(|_| err())?;
        let prefix_len: u8 = p.parse().map_err(|_| err())?;
        if prefix_len > 32 {
            return Err(err());
        }
        let net = Ipv4Net {
            network: Ipv4Addr::from(u32::from(addr) & mask(prefix_len)),
            prefix_len,
        };
        if net.network != addr {
            return Err(PoolError::HostBits(text.trim().to_string(), net));
        }
        Ok(net)
    }

    /// Parses a tunnel network `a.b.c.d/n` (a pool: /30 or larger).
    pub fn parse(text: &str) -> Result<Ipv4Net, PoolError> {
        let net = Self::parse_route(text)?;
        Ipv4Net::new(net.network, net.prefix_len)
    }

    pub fn network(&self) -> Ipv4Addr {
        self.network
    }
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }
    /// The server's address: the first host.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + 1)
    }
    /// Whether `a` is in the network.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & mask(self.prefix_len) == u32::from(self.network)
    }
    /// Addresses clients can get: all hosts but the gateway.
    pub fn client_capacity(&self) -> u32 {
        // Network, broadcast and gateway are not for clients (a route
        // prefix from `parse_route` may be too small for any).
        ((1u64 << (32 - self.prefix_len)).saturating_sub(3)) as u32
    }
    /// Whether `a` can be a client's address.
    pub fn is_assignable(&self, a: Ipv4Addr) -> bool {
        let (n, x) = (u32::from(self.network), u32::from(a));
        let broadcast = n | !mask(self.prefix_len);
        self.contains(a) && x != n && x != broadcast && a != self.gateway()
    }

    /// Assigns an address to each client: `fixed[i]` if given, else the
    /// lowest free client address, in order.
    pub fn assign(&self, fixed: &[Option<Ipv4Addr>]) -> Result<Vec<Ipv4Addr>, PoolError> {
        if fixed.len() as u64 > self.client_capacity() as u64 {
            return Err(PoolError::Exhausted(
                fixed.len(),
                *self,
                self.client_capacity(),
            ));
        }
        let mut taken = std::collections::BTreeSet::new();
        for a in fixed.iter().flatten() {
            if !self.is_assignable(*a) {
                return Err(PoolError::NotAssignable(*a, *self, self.gateway()));
            }
            if !taken.insert(*a) {
                return Err(PoolError::Duplicate(*a));
            }
        }
        // Bounded: at most `fixed.len()` addresses are taken, so the scan
        // stops within `2 * fixed.len()` steps of the gateway.
        let mut next = u32::from(self.gateway()) + 1;
        let mut out = Vec::with_capacity(fixed.len());
        for f in fixed {
            let a = match f {
                Some(a) => *a,
                None => {
                    while taken.contains(&Ipv4Addr::from(next)) {
                        next += 1;
                    }
                    let a = Ipv4Addr::from(next);
                    taken.insert(a);
                    a
                }
            };
            out.push(a);
        }
        Ok(out)
    }
}

impl core::fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

fn mask(prefix_len: u8) -> u32 {
    if prefix_len == 0 {
        0
    } else {
        u32::MAX << (32 - prefix_len as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_may_be_single_hosts_pools_may_not() {
        assert_eq!(
            Ipv4Net::parse_route("10.78.0.2/32").unwrap().prefix_len(),
            32
        );
        assert_eq!(Ipv4Net::parse_route("0.0.0.0/0").unwrap().prefix_len(), 0);
        assert!(Ipv4Net::parse("10.78.0.2/32").is_err());
        assert!(
            Ipv4Net::parse_route("10.78.0.2/24").is_err(),
            "host bits set"
        );
        assert!(Ipv4Net::parse_route("10.78.0.2/33").is_err());
        let host = Ipv4Net::parse_route("10.78.0.2/32").unwrap();
        assert_eq!(host.client_capacity(), 0);
        assert!(host.assign(&[None]).is_err());
    }

    fn a(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_gateway() {
        let n = Ipv4Net::parse("10.77.0.0/24").unwrap();
        assert_eq!(n.gateway(), a("10.77.0.1"));
        assert_eq!(n.client_capacity(), 253);
        assert_eq!(n.to_string(), "10.77.0.0/24");
        assert!(matches!(
            Ipv4Net::parse("10.77.0.1/24"),
            Err(PoolError::HostBits(..))
        ));
        assert!(matches!(
            Ipv4Net::parse("10.77.0.0"),
            Err(PoolError::Syntax(_))
        ));
        assert!(matches!(
            Ipv4Net::parse("10.77.0.0/31"),
            Err(PoolError::TooSmall(31))
        ));
        assert!(matches!(
            Ipv4Net::parse("10.77.0.0/33"),
            Err(PoolError::Syntax(_))
        ));
    }

    #[test]
    fn assignment_keeps_fixed_and_fills_in_order() {
        let n = Ipv4Net::parse("10.77.0.0/29").unwrap();
        let got = n.assign(&[None, Some(a("10.77.0.3")), None, None]).unwrap();
        assert_eq!(
            got,
            vec![
                a("10.77.0.2"),
                a("10.77.0.3"),
                a("10.77.0.4"),
                a("10.77.0.5")
            ]
        );
        assert!(matches!(
            n.assign(&[Some(a("10.77.0.1"))]),
            Err(PoolError::NotAssignable(..))
        ));
        assert!(matches!(
            n.assign(&[Some(a("10.77.0.7"))]),
            Err(PoolError::NotAssignable(..))
        ));
        assert!(matches!(
            n.assign(&[Some(a("10.77.0.3")), Some(a("10.77.0.3"))]),
            Err(PoolError::Duplicate(_))
        ));
        assert!(matches!(
            n.assign(&[None; 6]),
            Err(PoolError::Exhausted(6, _, 5))
        ));
        assert_eq!(n.assign(&[None; 5]).unwrap().last(), Some(&a("10.77.0.6")));
    }
}
