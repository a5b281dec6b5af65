//! Reading many datagrams with one system call (`recvmmsg`), each with
//! its kernel receive time, the local address it was sent to and the
//! socket's count of kernel drops: under a flood the system call, not the
//! work per datagram, is most of what reading costs.

use std::io;
use std::net::SocketAddr;

use std::os::fd::AsRawFd;

use tokio::io::unix::AsyncFd;
use tokio::net::UdpSocket;

use super::reply::LocalAddr;

/// Largest datagram read.
const BUF: usize = 65_535;

/// What [`recv_batch`] learns about one datagram.
pub struct Meta {
    /// Which buffer of the batch holds it.
    pub slot: usize,
    pub len: usize,
    pub from: SocketAddr,
    /// How long ago the kernel received it (zero without a timestamp).
    pub age: std::time::Duration,
    /// The local address it was sent to (IP_PKTINFO).
    pub local: Option<LocalAddr>,
    /// The socket's running total of datagrams the kernel dropped for want
    /// of buffer space (`SO_RXQ_OVFL`), if the kernel said.
    pub kernel_drops: Option<u32>,
}

/// Asks the kernel to report, with every datagram, how many it dropped on
/// this socket because the receive buffer was full (`SO_RXQ_OVFL`).
/// Best effort.
pub fn enable_rxq_ovfl(sock: &UdpSocket) {
    let on: libc::c_int = 1;
    // SAFETY: plain setsockopt on an open socket with a c_int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Datagrams read with one `recvmmsg` call: under a flood the system call,
/// not the work per datagram, is most of what reading costs. 64 (was 16)
/// takes a quarter of the calls; the buffers are 64 x 64 KiB, allocated
/// once.
pub const RECV_BATCH: usize = 64;

/// Buffers for one `recvmmsg` call.
pub struct Batch {
    pub bufs: Vec<Vec<u8>>,
    /// Datagrams the next call reads at most (at most `bufs.len()`): a
    /// reader within a budget reads no more than it has left.
    pub limit: usize,
    addrs: Vec<libc::sockaddr_storage>,
    cmsgs: Vec<[u64; 16]>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` point into the batch's own
// buffers and are rewritten before every use; nothing else shares them.
unsafe impl Send for Batch {}

impl Batch {
    pub fn new(n: usize) -> Batch {
        Batch::with_buffers(n, BUF)
    }

    /// `n` buffers of `len` bytes, for a socket whose filter lets no
    /// longer datagram through (a longer one would be cut).
    pub fn with_buffers(n: usize, len: usize) -> Batch {
        Batch {
            bufs: (0..n).map(|_| vec![0u8; len]).collect(),
            limit: n,
            // SAFETY: an all-zero sockaddr_storage is valid.
            addrs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
            cmsgs: vec![[0u64; 16]; n],
            iovs: (0..n)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            // SAFETY: an all-zero mmsghdr is valid (null pointers, zero lengths).
            hdrs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }
}

/// A socket the reactor watches only while it is wanted: registered with
/// the runtime by [`Watched::watch`] and deregistered when the
/// [`AsyncFd`] is dropped (the socket itself stays open, shared).
///
/// Why: a socket registered with epoll wakes the runtime for every
/// datagram that arrives, whether or not a task means to read it. The
/// server's handshake socket is read within a budget; under a flood, the
/// few places its reads free in the buffer fill again at once, and each
/// arrival used to wake the runtime's thread only to find nothing to do
/// (thousands of wake-ups a second). Deregistered while the budget or
/// the handshake queue keeps it closed, the socket only fills in the
/// kernel, and a full buffer drops without waking anyone.
#[derive(Debug, Clone)]
pub struct Watched(pub std::sync::Arc<std::net::UdpSocket>);

impl std::os::fd::AsRawFd for Watched {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

impl Watched {
    /// Registers the socket with the runtime's reactor for reading.
    pub fn watch(&self) -> io::Result<AsyncFd<Watched>> {
        // SAFETY: the AsyncFd owns a reference to the socket, which keeps
        // its file descriptor open and the same for the AsyncFd's life.
        unsafe { AsyncFd::register_with_interest(self.clone(), tokio::io::Interest::READABLE) }
            .map_err(|e| e.into_parts().1)
    }
}

/// [`recv_batch`] on a socket registered with [`AsyncFd`] (see
/// [`Watched`]), or never without one.
pub async fn recv_from(
    fd: Option<&AsyncFd<Watched>>,
    b: &mut Batch,
    out: &mut Vec<Meta>,
) -> io::Result<()> {
    let Some(fd) = fd else {
        return std::future::pending().await;
    };
    loop {
        let mut ready = fd.readable().await?;
        // Would-block clears the readiness and waits for the next datagram.
        if let Ok(r) = ready.try_io(|f| recv_now(f.get_ref().as_raw_fd(), b, out)) {
            return r;
        }
    }
}

/// Reads up to [`RECV_BATCH`] datagrams into `b` with one `recvmmsg`,
/// each with its kernel timestamp (as [`super::net::recv_from_stamped`])
/// and the socket's `SO_RXQ_OVFL` count; `out` describes them.
pub async fn recv_batch(sock: &UdpSocket, b: &mut Batch, out: &mut Vec<Meta>) -> io::Result<()> {
    let fd = sock.as_raw_fd();
    // A `move` closure captures the references whole, not the fields of
    // the batch one by one (which hold raw pointers and are not `Send`).
    sock.async_io(tokio::io::Interest::READABLE, move || {
        recv_now(fd, &mut *b, &mut *out)
    })
    .await
}

/// One `recvmmsg` on `fd` into `b`, without waiting: [`recv_batch`]'s
/// work once the socket is readable (`WouldBlock` if it was not).
fn recv_now(fd: std::os::fd::RawFd, b: &mut Batch, out: &mut Vec<Meta>) -> io::Result<()> {
    let n = b.limit.clamp(1, b.bufs.len());
    for i in 0..n {
        b.iovs[i] = libc::iovec {
            iov_base: b.bufs[i].as_mut_ptr() as *mut libc::c_void,
            iov_len: b.bufs[i].len(),
        };
        // The pointers refer to the batch's buffers, alive for the call.
        let h = super::net::recv_header(&mut b.addrs[i], &mut b.iovs[i], &mut b.cmsgs[i]);
        b.hdrs[i] = libc::mmsghdr {
            msg_hdr: h,
            msg_len: 0,
        };
    }
    // SAFETY: `hdrs` holds `n` headers whose buffers live in `b`.
    let r = unsafe {
        libc::recvmmsg(
            fd,
            b.hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    out.clear();
    for i in 0..r as usize {
        let msg = &b.hdrs[i].msg_hdr;
        let mut stamp = None;
        let mut kernel_drops = None;
        let mut local = None;
        // SAFETY: the CMSG macros walk the control buffer recvmmsg
        // filled in for this message.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(msg);
            while !c.is_null() {
                if let Some(l) = super::reply::pktinfo_of(&*c) {
                    local = Some(l);
                }
                if (*c).cmsg_level == libc::SOL_SOCKET {
                    if (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                        stamp = Some(std::ptr::read_unaligned(
                            libc::CMSG_DATA(c) as *const libc::timespec
                        ));
                    } else if (*c).cmsg_type == libc::SO_RXQ_OVFL {
                        kernel_drops =
                            Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32));
                    }
                }
                c = libc::CMSG_NXTHDR(msg, c);
            }
        }
        let Some(from) = super::net::sockaddr_to_std(&b.addrs[i]) else {
            continue;
        };
        out.push(Meta {
            slot: i,
            len: b.hdrs[i].msg_len as usize,
            from,
            age: stamp.map_or(std::time::Duration::ZERO, super::net::age_of),
            local,
            kernel_drops,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// Whether `recv_from` reads something within `ms` milliseconds.
    async fn reads_within(
        fd: Option<&AsyncFd<Watched>>,
        b: &mut Batch,
        out: &mut Vec<Meta>,
        ms: u64,
    ) -> bool {
        tokio::time::timeout(Duration::from_millis(ms), recv_from(fd, b, out))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    #[tokio::test]
    async fn a_socket_watched_again_is_read_with_what_arrived_unwatched() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_nonblocking(true).unwrap();
        let addr = sock.local_addr().unwrap();
        let w = Watched(Arc::new(sock));
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (mut b, mut out) = (Batch::new(4), Vec::new());
        // Watched: a datagram is read as it arrives; then nothing is left.
        let fd = w.watch().unwrap();
        tx.send_to(b"one", addr).unwrap();
        assert!(reads_within(Some(&fd), &mut b, &mut out, 1000).await);
        assert_eq!(&b.bufs[out[0].slot][..out[0].len], b"one");
        assert!(!reads_within(Some(&fd), &mut b, &mut out, 50).await);
        // Unwatched: what arrives waits in the kernel, and nothing reads.
        drop(fd);
        tx.send_to(b"two", addr).unwrap();
        tx.send_to(b"three", addr).unwrap();
        assert!(!reads_within(None, &mut b, &mut out, 50).await);
        // Watched again, the socket is ready at once with both (the
        // reactor learns of data that arrived before it watched).
        let fd = w.watch().unwrap();
        assert!(reads_within(Some(&fd), &mut b, &mut out, 1000).await);
        let got: Vec<&[u8]> = out.iter().map(|m| &b.bufs[m.slot][..m.len]).collect();
        assert_eq!(got, [&b"two"[..], &b"three"[..]]);
    }
}
