//! ECN on the transport's UDP sockets (RFC 3168; MPLOT §II-C).
//!
//! MPLOT's per-path windows halve on an ECN-Echo and ignore a loss that
//! carries no mark: on a lossy wireless path a loss says nothing about the
//! queue. That needs both halves of ECN on real sockets:
//! - the sender's path sockets send ECT(0) (`IP_TOS` / `IPV6_TCLASS`), so a
//!   marking queue (RED/CoDel with ECN, the lab's `ecn_mark_bytes`) sets CE
//!   instead of dropping;
//! - the receiver reads each datagram's ECN field (`IP_RECVTOS` /
//!   `IPV6_RECVTCLASS`, one control message per datagram from `recvmsg`) and
//!   passes CE to `mplot::Receiver::handle_data`, which echoes it per
//!   forward path in its ACKs.
//!
//! The receive side is written against `libc::recvmsg` rather than
//! `quinn-udp`: that crate switches on UDP GRO and path-MTU probing on the
//! socket it wraps, which would change what both transport modes receive;
//! here only the one control message is asked for.

use std::io;
use std::mem::{size_of, zeroed, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

use socket2::Socket;

/// ECN field values (the low two bits of the IPv4 TOS / IPv6 traffic class).
#[cfg(test)]
pub const NOT_ECT: u8 = 0b00;
pub const ECT0: u8 = 0b10;
pub const CE: u8 = 0b11;

/// Make every datagram `s` sends ECN-capable, ECT(0). Failing is not an
/// error for the transfer (it then runs as if no queue marked), so the
/// caller may ignore it.
pub fn send_ect0(s: &Socket, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        s.set_tclass_v6(u32::from(ECT0))
    } else {
        s.set_tos_v4(u32::from(ECT0))
    }
}

/// Ask for each received datagram's TOS / traffic class as a control
/// message. On an IPv6 socket IPv4-mapped senders report through `IP_TOS`,
/// so both are asked for there (the IPv4 one may fail on v6-only sockets).
pub fn receive_tos(s: &Socket, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        let _ = s.set_recv_tos_v4(true);
        s.set_recv_tclass_v6(true)
    } else {
        s.set_recv_tos_v4(true)
    }
}

/// One datagram from a non-blocking socket: its length, source and ECN
/// field (`None` if the kernel gave none, e.g. `receive_tos` was not set).
/// `WouldBlock` when nothing is queued.
pub fn recv_from(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<u8>)> {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut addr: libc::sockaddr_storage = unsafe { zeroed() };
    // Room for one IPV6_TCLASS (int) or IP_TOS (byte) message and more.
    let mut control = [MaybeUninit::<u64>::uninit(); 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; 8]>() as _;
    // SAFETY: `msg` points at live buffers of the stated lengths for the
    // duration of the call.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let from = sockaddr(&addr).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidData, "datagram from a non-IP address")
    })?;
    let mut ecn = None;
    // SAFETY: the CMSG_* walk stays within msg_control/msg_controllen as
    // the kernel filled them; data is read unaligned at its stated length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            let data = libc::CMSG_DATA(c);
            let len = h.cmsg_len as usize - (data as usize - c as usize);
            let tos = match (h.cmsg_level, h.cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TOS) if len >= 1 => Some(*data),
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if len >= size_of::<libc::c_int>() => {
                    Some(std::ptr::read_unaligned(data.cast::<libc::c_int>()) as u8)
                }
                _ => None,
            };
            if let Some(t) = tos {
                ecn = Some(t & 0b11);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, from, ecn))
}

fn sockaddr(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(a.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let v4 = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let v6 = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Type};

    fn socket(ipv6: bool) -> Option<Socket> {
        let (d, any) = if ipv6 {
            (Domain::IPV6, "[::1]:0")
        } else {
            (Domain::IPV4, "127.0.0.1:0")
        };
        let s = Socket::new(d, Type::DGRAM, Some(Protocol::UDP)).ok()?;
        s.bind(&any.parse::<SocketAddr>().unwrap().into()).ok()?;
        Some(s)
    }

    /// Over loopback nothing marks, so the receiver sees exactly what the
    /// sender set: ECT(0) from a socket that sends it, Not-ECT otherwise,
    /// and the source address and bytes as `recv_from` gives them.
    #[test]
    fn the_receiver_reads_the_senders_ecn_field() {
        for ipv6 in [false, true] {
            let (Some(rx), Some(tx), Some(plain)) = (socket(ipv6), socket(ipv6), socket(ipv6))
            else {
                assert!(ipv6, "IPv4 loopback sockets");
                continue; // no IPv6 loopback here
            };
            receive_tos(&rx, ipv6).unwrap();
            send_ect0(&tx, ipv6).unwrap();
            let rx: UdpSocket = rx.into();
            rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let to = rx.local_addr().unwrap();
            let tx: UdpSocket = tx.into();
            let plain: UdpSocket = plain.into();
            tx.send_to(b"marked", to).unwrap();
            plain.send_to(b"plain", to).unwrap();
            let mut buf = [0u8; 64];
            let (n, from, ecn) = recv_from(&rx, &mut buf).unwrap();
            assert_eq!(&buf[..n], b"marked");
            assert_eq!(from, tx.local_addr().unwrap());
            assert_eq!(ecn, Some(ECT0), "ipv6 {ipv6}");
            let (n, from, ecn) = recv_from(&rx, &mut buf).unwrap();
            assert_eq!(&buf[..n], b"plain");
            assert_eq!(from, plain.local_addr().unwrap());
            assert_eq!(ecn, Some(NOT_ECT), "ipv6 {ipv6}");
        }
    }

    #[test]
    fn an_empty_non_blocking_socket_would_block() {
        let rx: UdpSocket = socket(false).unwrap().into();
        rx.set_nonblocking(true).unwrap();
        let e = recv_from(&rx, &mut [0u8; 16]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
