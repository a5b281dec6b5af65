//! ICMP errors on the client's path sockets: "port unreachable" (nothing
//! listens on the server's port), "host/network unreachable".
//!
//! An unconnected UDP socket hears of them only with IP_RECVERR (or
//! IPV6_RECVERR): the kernel then queues each one on the socket's error
//! queue, together with the destination of the datagram that caused it,
//! and fails the next receive with its errno. Without this a client aimed
//! at the wrong port shows only "handshaking" forever. The queue must be
//! drained, since what it holds counts against the receive buffer.

use std::io;
use std::net::SocketAddr;

use tokio::net::UdpSocket;

/// Asks the kernel to report ICMP errors for `sock` (best effort).
pub fn enable(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let (level, name) = match sock.local_addr() {
        Ok(SocketAddr::V6(_)) => (libc::IPPROTO_IPV6, libc::IPV6_RECVERR),
        _ => (libc::IPPROTO_IP, libc::IP_RECVERR),
    };
    let on: libc::c_int = 1;
    // SAFETY: plain setsockopt on an open socket with a c_int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Whether a failed receive reports an ICMP error (to be drained with
/// [`drain`]) rather than a fault of the socket.
pub fn is_report(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED)
            | Some(libc::EHOSTUNREACH)
            | Some(libc::ENETUNREACH)
            | Some(libc::EHOSTDOWN)
            | Some(libc::EMSGSIZE)
    )
}

/// One queued ICMP error: the datagram's destination and the error.
#[derive(Debug)]
pub struct Report {
    pub dest: Option<SocketAddr>,
    pub error: io::Error,
}

impl Report {
    /// What it means for a braid client, in words.
    pub fn explain(&self) -> &'static str {
        match self.error.raw_os_error() {
            Some(libc::ECONNREFUSED) => {
                "ICMP port unreachable: nothing listens on that UDP port; check the server address and port and that braid server runs there"
            }
            Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) | Some(libc::EHOSTDOWN) => {
                "ICMP host or network unreachable: check the path's route to the server"
            }
            Some(libc::EMSGSIZE) => {
                "ICMP fragmentation needed: the path's MTU is below the tunnel's; lower tun.mtu"
            }
            _ => "ICMP error",
        }
    }
}

/// Reads every queued ICMP error of `sock` (at most 64 per call).
pub fn drain(sock: &UdpSocket) -> Vec<Report> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    let mut out = Vec::new();
    for _ in 0..64 {
        // SAFETY: all-zero bytes are a valid sockaddr_storage (plain data).
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut data = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let mut cmsg = [0u64; 32];
        let mut msg = super::net::recv_header(&mut addr, &mut iov, &mut cmsg);
        // SAFETY: msg's pointers refer to the live locals above, of the
        // stated sizes; MSG_ERRQUEUE never blocks.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            break;
        }
        let mut errno = None;
        // SAFETY: the CMSG macros walk the control buffer recvmsg filled in.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let ip = (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_RECVERR;
                let ip6 =
                    (*c).cmsg_level == libc::IPPROTO_IPV6 && (*c).cmsg_type == libc::IPV6_RECVERR;
                if ip || ip6 {
                    let e = std::ptr::read_unaligned(
                        libc::CMSG_DATA(c) as *const libc::sock_extended_err
                    );
                    errno = Some(e.ee_errno as i32);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let Some(errno) = errno else { continue };
        out.push(Report {
            dest: super::net::sockaddr_to_std(&addr),
            error: io::Error::from_raw_os_error(errno),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram to a closed loopback port comes back as "port
    /// unreachable", naming the port.
    #[tokio::test(flavor = "current_thread")]
    async fn port_unreachable_is_reported_with_its_destination() {
        let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = closed.local_addr().unwrap();
        drop(closed);
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        enable(&sock);
        sock.send_to(b"x", dest).await.unwrap();
        let mut buf = [0u8; 16];
        let e = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            super::super::net::recv_from_stamped(&sock, &mut buf),
        )
        .await
        .expect("the error woke the reader")
        .unwrap_err();
        assert!(is_report(&e), "{e}");
        let reports = drain(&sock);
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert_eq!(reports[0].dest, Some(dest));
        assert_eq!(reports[0].error.raw_os_error(), Some(libc::ECONNREFUSED));
        assert!(reports[0].explain().contains("port unreachable"));
        assert!(drain(&sock).is_empty());
    }
}
