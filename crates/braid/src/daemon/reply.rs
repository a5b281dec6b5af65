//! Replies from the address the client used.
//!
//! A server listening on a wildcard address (`0.0.0.0:51820`, the
//! examples' value) with more than one address of its own (a secondary,
//! floating or failover address, two uplinks) must answer a client from
//! the address that client sent to: a plain `send_to` lets the kernel pick
//! the source by route, and the client, or any stateful firewall or NAT on
//! its way, sees a reply from a stranger. As WireGuard does, the server
//! asks the kernel for each datagram's destination address (IP_PKTINFO /
//! IPV6_PKTINFO on receive) and names it as the source of what it sends
//! back (the same control message on send).
//!
//! [`ReplySources`] remembers that address per remote endpoint. It learns
//! only for endpoints the server actually answers (a [`ReplySources::source_for`]
//! lookup in the same pass of the event loop as the datagram), so spoofed
//! datagrams that the core drops leave no state behind, and it forgets
//! endpoints that have been silent for longer than a client's idle timeout.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

/// Where a datagram arrived: the local address it was sent to and the
/// interface it came in on (needed to answer from an IPv6 link-local
/// address).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LocalAddr {
    pub ip: IpAddr,
    pub ifindex: u32,
}

/// Asks the kernel to report each datagram's destination address
/// (IP_PKTINFO for an IPv4 socket, IPV6_RECVPKTINFO for an IPv6 one, which
/// also covers IPv4 datagrams on a dual-stack socket as mapped addresses).
pub fn enable_pktinfo(sock: &UdpSocket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (level, name) = match sock.local_addr()? {
        SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_PKTINFO),
        SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO),
    };
    let on: libc::c_int = 1;
    // SAFETY: plain setsockopt on an open socket with a c_int option value.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The destination address in one received control message, if it is an
/// IP_PKTINFO or IPV6_PKTINFO one.
///
/// # Safety
/// `c` must be a control message header filled in by `recvmsg`, followed
/// by its data.
pub unsafe fn pktinfo_of(c: &libc::cmsghdr) -> Option<LocalAddr> {
    if c.cmsg_level == libc::IPPROTO_IP && c.cmsg_type == libc::IP_PKTINFO {
        // `ipi_spec_dst` is the local address the kernel would answer
        // from (the destination itself for unicast), as wireguard-go uses.
        // SAFETY: the kernel wrote an in_pktinfo after this header.
        let p = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::in_pktinfo) };
        return Some(LocalAddr {
            ip: IpAddr::V4(Ipv4Addr::from(u32::from_be(p.ipi_spec_dst.s_addr))),
            ifindex: p.ipi_ifindex as u32,
        });
    }
    if c.cmsg_level == libc::IPPROTO_IPV6 && c.cmsg_type == libc::IPV6_PKTINFO {
        // SAFETY: the kernel wrote an in6_pktinfo after this header.
        let p = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::in6_pktinfo) };
        return Some(LocalAddr {
            ip: IpAddr::V6(Ipv6Addr::from(p.ipi6_addr.s6_addr)),
            ifindex: p.ipi6_ifindex,
        });
    }
    None
}

/// Sends `buf` to `dest` from local address `src` (or from whatever the
/// kernel picks when `None`).
pub async fn send_from(
    sock: &UdpSocket,
    buf: &[u8],
    dest: SocketAddr,
    src: Option<LocalAddr>,
) -> io::Result<usize> {
    let Some(src) = src else {
        return sock.send_to(buf, dest).await;
    };
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    let v6_socket = sock.local_addr()?.is_ipv6();
    let to = socket2::SockAddr::from(dest);
    sock.async_io(tokio::io::Interest::WRITABLE, || {
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut cmsg = [0u64; 8];
        // SAFETY: msghdr is plain data; every pointer set below refers to a
        // live local of the stated size.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = to.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = to.len();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr() as *mut libc::c_void;
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe {
            libc::CMSG_SPACE(if v6_socket {
                std::mem::size_of::<libc::in6_pktinfo>()
            } else {
                std::mem::size_of::<libc::in_pktinfo>()
            } as u32)
        } as usize;
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer is 64 bytes, more than one
        // CMSG_SPACE(in6_pktinfo) = 40; CMSG_FIRSTHDR points into it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            if v6_socket {
                let ip = match src.ip {
                    IpAddr::V6(a) => a,
                    IpAddr::V4(a) => a.to_ipv6_mapped(),
                };
                // The interface matters only for a link-local source; for
                // any other, let the routing table choose it.
                let link_local = (ip.segments()[0] & 0xffc0) == 0xfe80;
                (*c).cmsg_level = libc::IPPROTO_IPV6;
                (*c).cmsg_type = libc::IPV6_PKTINFO;
                (*c).cmsg_len =
                    libc::CMSG_LEN(std::mem::size_of::<libc::in6_pktinfo>() as u32) as _;
                let info = libc::in6_pktinfo {
                    ipi6_addr: libc::in6_addr {
                        s6_addr: ip.octets(),
                    },
                    ipi6_ifindex: if link_local { src.ifindex } else { 0 },
                };
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in6_pktinfo, info);
            } else {
                let IpAddr::V4(ip) = src.ip else {
                    return Err(io::Error::from_raw_os_error(libc::EAFNOSUPPORT));
                };
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_PKTINFO;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::in_pktinfo>() as u32) as _;
                let info = libc::in_pktinfo {
                    ipi_ifindex: 0,
                    ipi_spec_dst: libc::in_addr {
                        s_addr: u32::from(ip).to_be(),
                    },
                    ipi_addr: libc::in_addr { s_addr: 0 },
                };
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in_pktinfo, info);
            }
        }
        // SAFETY: msg and everything it points to live until the call returns.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    })
    .await
}

/// Whether a failed [`send_from`] means the remembered source address is
/// no longer usable (removed from the host), so the reply should go out
/// with a kernel-chosen source instead.
pub fn source_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::EADDRNOTAVAIL) | Some(libc::EAFNOSUPPORT)
    )
}

/// Remote endpoints idle this long are forgotten: longer than the
/// server's per-client idle timeout (`REJECT_AFTER_TIME`, 180 s), after
/// which the client must handshake again anyway.
const FORGET_AFTER: Duration = Duration::from_secs(240);
/// Most endpoints remembered; beyond it the idle ones are swept first and
/// new ones are answered with a kernel-chosen source.
const MAX_ENDPOINTS: usize = 65_536;

/// The local address to answer each remote endpoint from.
#[derive(Debug, Default)]
pub struct ReplySources {
    /// Endpoints the server answered: local address and last use.
    known: HashMap<SocketAddr, (LocalAddr, Instant)>,
    /// Arrivals of the current pass of the event loop from endpoints not
    /// yet known (at most one batch of datagrams).
    fresh: HashMap<SocketAddr, LocalAddr>,
}

impl ReplySources {
    /// A datagram from `from` arrived at local address `local`.
    pub fn arrived(&mut self, from: SocketAddr, local: Option<LocalAddr>, now: Instant) {
        let Some(local) = local else { return };
        match self.known.get_mut(&from) {
            Some(k) => *k = (local, now),
            None => {
                self.fresh.insert(from, local);
            }
        }
    }

    /// The address to send to `dest` from; remembers `dest` if it wrote
    /// in the current pass.
    pub fn source_for(&mut self, dest: SocketAddr, now: Instant) -> Option<LocalAddr> {
        if let Some(local) = self.fresh.remove(&dest) {
            if self.known.len() >= MAX_ENDPOINTS {
                self.known
                    .retain(|_, (_, t)| now.duration_since(*t) < FORGET_AFTER);
            }
            if self.known.len() < MAX_ENDPOINTS {
                self.known.insert(dest, (local, now));
            }
            return Some(local);
        }
        self.known.get(&dest).map(|(l, _)| *l)
    }

    /// Sending from `dest`'s remembered address failed: use the kernel's
    /// choice until `dest` writes again.
    pub fn forget(&mut self, dest: SocketAddr) {
        self.known.remove(&dest);
    }

    /// End of a pass of the event loop: arrivals nobody was answered for
    /// are not remembered.
    pub fn end_pass(&mut self) {
        self.fresh.clear();
    }

    /// Endpoints remembered.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: [u8; 4]) -> LocalAddr {
        LocalAddr {
            ip: IpAddr::V4(Ipv4Addr::from(ip)),
            ifindex: 0,
        }
    }

    #[test]
    fn learns_only_endpoints_it_answers() {
        let mut r = ReplySources::default();
        let now = Instant::now();
        let (a, b): (SocketAddr, SocketAddr) = (
            "10.0.0.5:4000".parse().unwrap(),
            "10.0.0.6:4000".parse().unwrap(),
        );
        r.arrived(a, Some(at([10, 0, 0, 2])), now);
        r.arrived(b, Some(at([10, 0, 0, 3])), now);
        assert_eq!(r.source_for(a, now), Some(at([10, 0, 0, 2])));
        r.end_pass();
        // b was never answered: a later reply to it gets no remembered source.
        assert_eq!(r.source_for(b, now), None);
        assert_eq!(r.len(), 1);
        // a known endpoint follows the address it writes to.
        r.arrived(a, Some(at([10, 0, 0, 9])), now);
        r.end_pass();
        assert_eq!(r.source_for(a, now), Some(at([10, 0, 0, 9])));
        r.forget(a);
        assert_eq!(r.source_for(a, now), None);
        assert!(r.is_empty());
    }

    /// The server socket bound to 0.0.0.0 answers a datagram sent to
    /// 127.0.0.2 from 127.0.0.2, although the kernel's own choice of
    /// source for a reply to 127.0.0.1 is 127.0.0.1.
    #[tokio::test(flavor = "current_thread")]
    async fn replies_from_the_address_written_to() {
        let server = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        enable_pktinfo(&server).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client.send_to(b"hi", ("127.0.0.2", port)).await.unwrap();
        let mut buf = [0u8; 64];
        let (n, from, _, local) = super::super::net::recv_from_stamped(&server, &mut buf)
            .await
            .unwrap();
        assert_eq!(&buf[..n], b"hi");
        let local = local.expect("IP_PKTINFO reported the destination");
        assert_eq!(local.ip, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        // Kernel's choice first: 127.0.0.1.
        send_from(&server, b"plain", from, None).await.unwrap();
        let (_, src) = client.recv_from(&mut buf).await.unwrap();
        assert_eq!(src.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        send_from(&server, b"reply", from, Some(local))
            .await
            .unwrap();
        let (n, src) = client.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"reply");
        assert_eq!(src, SocketAddr::new(local.ip, port));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn replies_from_the_address_written_to_on_a_dual_stack_socket() {
        let Ok(server) = UdpSocket::bind("[::]:0").await else {
            return; // no IPv6 on this host
        };
        enable_pktinfo(&server).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client.send_to(b"hi", ("127.0.0.3", port)).await.unwrap();
        let mut buf = [0u8; 64];
        let (_, from, _, local) = super::super::net::recv_from_stamped(&server, &mut buf)
            .await
            .unwrap();
        let local = local.expect("IPV6_PKTINFO reported the destination");
        assert_eq!(
            local.ip,
            IpAddr::V6(Ipv4Addr::new(127, 0, 0, 3).to_ipv6_mapped())
        );
        send_from(&server, b"reply", from, Some(local))
            .await
            .unwrap();
        let (_, src) = client.recv_from(&mut buf).await.unwrap();
        assert_eq!(
            src,
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)), port)
        );
    }
}
