//! Minimal AF_PACKET raw socket, bound to one interface.
//!
//! The emulator is an L2 relay: it reads whole Ethernet frames from one veth
//! and writes them unchanged to the other, so ARP and anything else simply
//! passes and no IP configuration is needed inside `braid-emu`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `PACKET_IGNORE_OUTGOING` (Linux >= 4.20); not in every libc version.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `sll_pkttype` of frames the host itself transmits.
const PACKET_OUTGOING: u8 = 4;

/// A packet socket bound to a single interface (all ethertypes).
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    pub ifname: String,
    pub ifindex: i32,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt_int(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    val: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passing a pointer to a live c_int with its exact size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &val as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

impl PacketSocket {
    /// Open and bind to `ifname`. The socket is created with protocol 0 (it
    /// receives nothing) and only starts receiving at `bind`, so no frame of
    /// another interface can slip in between.
    pub fn open(ifname: &str, buf_bytes: usize) -> io::Result<PacketSocket> {
        let cname = CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad ifname"))?;
        // SAFETY: plain libc calls with valid arguments.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {ifname}: {}", io::Error::last_os_error()),
            ));
        }
        // SAFETY: socket(2) takes only integer arguments; the returned fd is
        // checked by `cvt` and owned right below.
        let raw =
            cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        // SAFETY: `raw` is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let _ = setsockopt_int(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            buf_bytes as libc::c_int,
        )
        .or_else(|_| {
            setsockopt_int(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                buf_bytes as libc::c_int,
            )
        });
        let _ = setsockopt_int(
            raw,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            buf_bytes as libc::c_int,
        )
        .or_else(|_| {
            setsockopt_int(
                raw,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                buf_bytes as libc::c_int,
            )
        });
        // Best effort; we also filter on sll_pkttype in recv.
        let _ = setsockopt_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
        // SAFETY: zeroed sockaddr_ll is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: `sll` is a live, initialised sockaddr_ll and the length
        // passed is its size; `raw` is our open socket.
        cvt(unsafe {
            libc::bind(
                raw,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        Ok(PacketSocket {
            fd,
            ifname: ifname.to_string(),
            ifindex,
        })
    }

    pub fn raw_fd(&self) -> libc::c_int {
        self.fd.as_raw_fd()
    }

    /// Non-blocking receive of one incoming frame. `Ok(None)` = nothing
    /// pending. Frames the host sent itself are skipped.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: zeroed sockaddr_ll is valid; buffers are live and sized.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` is a live mutable buffer of `buf.len()` bytes,
            // `sll`/`len` are valid out-parameters of the right size.
            let n = unsafe {
                libc::recvfrom(
                    self.raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) => Ok(None),
                    Some(libc::EINTR) => continue,
                    _ => Err(e),
                };
            }
            if sll.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }

    /// Send one frame out of the bound interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: frame is a live slice.
            let n = unsafe {
                libc::send(
                    self.raw_fd(),
                    frame.as_ptr() as *const libc::c_void,
                    frame.len(),
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            return Ok(());
        }
    }

    /// Wait until readable or until `timeout` (None = forever). Returns
    /// `Ok(true)` if readable. Uses ppoll for nanosecond timeouts.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: one valid pollfd, valid or null timespec.
        let r = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(e);
        }
        if pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
            && pfd.revents & libc::POLLIN == 0
        {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("{}: socket error (interface gone?)", self.ifname),
            ));
        }
        Ok(r > 0)
    }
}
