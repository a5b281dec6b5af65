//! Sockets and host configuration: one UDP socket per client path (bound
//! to the path's interface and/or source address), the server's socket,
//! routes into the client's TUN device, and the server's NAT rule.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;

use anyhow::{bail, Context, Result};
use braid_core::conn::Ipv4Net;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use super::reply::{pktinfo_of, LocalAddr};
use crate::config::PathSettings;

/// Socket buffers: several paths' worth of bursts.
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

fn udp_socket(domain: Domain) -> io::Result<Socket> {
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: the kernel caps these at net.core.*mem_max.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    Ok(s)
}

/// The socket of one client path: bound to `device` (SO_BINDTODEVICE) so
/// its packets leave through that interface whatever the routing table
/// says (the tunnel may hold the default route), and to `bind` as source
/// address. Not connected: an interface that is down at start must not
/// stop the daemon; datagrams from anyone but the server are ignored.
pub fn path_socket(p: &PathSettings) -> Result<UdpSocket> {
    let domain = Domain::for_address(p.server);
    let s = udp_socket(domain)
        .with_context(|| format!("path `{}`: cannot create a UDP socket", p.name))?;
    if let Some(dev) = &p.device {
        s.bind_device(Some(dev.as_bytes())).with_context(|| {
            format!(
                "path `{}`: cannot bind to device `{dev}` (`device`): does it exist? SO_BINDTODEVICE needs root or CAP_NET_RAW",
                p.name
            )
        })?;
    }
    let local = match (p.bind, p.server) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        (None, SocketAddr::V6(_)) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    };
    if local.is_ipv4() != p.server.is_ipv4() {
        bail!(
            "path `{}`: `bind` {} and the server {} are of different IP versions",
            p.name,
            local.ip(),
            p.server
        );
    }
    s.bind(&local.into()).with_context(|| {
        format!(
            "path `{}`: cannot bind to {} (`bind`): is that address configured on this host?",
            p.name,
            local.ip()
        )
    })?;
    s.set_nonblocking(true)?;
    Ok(UdpSocket::from_std(s.into())?)
}

/// Asks the kernel to stamp every received datagram with its arrival time
/// (SO_TIMESTAMPNS), read by [`recv_from_stamped`]. Best effort.
pub fn enable_rx_timestamps(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: plain setsockopt on an open socket with a c_int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn realtime_ns() -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// The longest wait in the socket's receive queue [`recv_from_stamped`]
/// reports; anything older is taken as a stamp from a stepped clock.
const MAX_RX_AGE: std::time::Duration = std::time::Duration::from_millis(200);

/// One datagram and how long ago the kernel received it (zero without a
/// kernel timestamp). Packet-pair dispersion and one-way delays are
/// measured from arrival times: the moment the daemon gets round to a
/// datagram lags the wire by a variable scheduling delay (the event loop
/// may be busy with a batch of TUN packets), which stretches or squeezes a
/// pair's dispersion. The age is taken against CLOCK_REALTIME right after
/// the read, so a clock step between stamp and read only matters within
/// [`MAX_RX_AGE`]. The last element is the local address the datagram was
/// sent to, on a socket with [`enable_pktinfo`] (the server replies from it).
pub async fn recv_from_stamped(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, std::time::Duration, Option<LocalAddr>)> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    // ERROR too: an ICMP error on a socket with IP_RECVERR (see
    // `super::icmp`) raises EPOLLERR alone, and must wake the reader.
    let interest = tokio::io::Interest::READABLE.add(tokio::io::Interest::ERROR);
    sock.async_io(interest, || {
        // SAFETY: all-zero bytes are a valid sockaddr_storage (plain data).
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut cmsg = [0u64; 16];
        let mut msg = recv_header(&mut addr, &mut iov, &mut cmsg);
        // SAFETY: every pointer in msg refers to a live local buffer of the given size.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut age = std::time::Duration::ZERO;
        let mut local = None;
        // SAFETY: the CMSG macros walk the control buffer recvmsg filled in.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if let Some(l) = pktinfo_of(&*c) {
                    local = Some(l);
                }
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    age = age_of(ts);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let from = sockaddr_to_std(&addr)
            .ok_or_else(|| io::Error::other("datagram from a non-IP address"))?;
        Ok((n as usize, from, age, local))
    })
    .await
}

/// How long ago a kernel receive timestamp (`SCM_TIMESTAMPNS`) was, as
/// [`recv_from_stamped`] computes it: zero for a stamp in the future or
/// older than [`MAX_RX_AGE`] (a stepped clock).
pub(crate) fn age_of(ts: libc::timespec) -> std::time::Duration {
    let stamp = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
    let d = realtime_ns() - stamp;
    if d > 0 && d < MAX_RX_AGE.as_nanos() as i128 {
        std::time::Duration::from_nanos(d as u64)
    } else {
        std::time::Duration::ZERO
    }
}

/// A `msghdr` for one `recvmsg`: the datagram into `iov`, its source
/// address into `addr`, control messages into `cmsg`. The pointers refer
/// to the caller's buffers, which must outlive the call that uses it.
pub(crate) fn recv_header(
    addr: &mut libc::sockaddr_storage,
    iov: &mut libc::iovec,
    cmsg: &mut [u64],
) -> libc::msghdr {
    // SAFETY: all-zero bytes are a valid msghdr (null pointers, zero
    // lengths); the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = addr as *mut _ as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(cmsg) as _;
    msg
}

pub(crate) fn sockaddr_to_std(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match a.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let v4 = unsafe { &*(a as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(v4.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let v6 = unsafe { &*(a as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(v6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The server's sockets on `listen`: a data and a handshake socket (see
/// [`super::steer`]), or one socket where the kernel refuses the pair.
pub fn server_socket(listen: SocketAddr) -> Result<super::steer::ServerSockets> {
    super::steer::ServerSockets::bind(listen, udp_socket).map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "`listen`: UDP port {} is in use by another process (another braid server? `ss -ulpn 'sport = :{}'` shows which); stop it or set another listen port",
            listen.port(),
            listen.port()
        ),
        _ => anyhow::anyhow!(
            "`listen`: cannot bind UDP {listen} ({e}); is {} an address of this host?",
            listen.ip()
        ),
    })
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output().map_err(|e| {
        io::Error::new(e.kind(), format!("cannot run {:?}: {e}", cmd.get_program()))
    })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{:?} {:?} failed: {}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Routes `net` into device `dev` (`ip route replace NET dev DEV`).
pub fn add_route(net: &Ipv4Net, dev: &str) -> io::Result<()> {
    run(Command::new("ip").args(["route", "replace", &net.to_string(), "dev", dev]))
}

/// The nftables table of the server instance whose TUN device is `tun`:
/// `braid_<tun>`, so that two servers on one host (two TUN devices) each
/// own one table and neither replaces or deletes the other's. Characters
/// nft does not take in a name become `_`.
pub fn nat_table(tun: &str) -> String {
    let safe: String = tun
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("braid_{safe}")
}

/// The nftables ruleset `[nat]` applies: masquerade the tunnel network
/// out of `out_interface`, in table `table` (also in docs/DEPLOY.md).
pub fn nat_ruleset(table: &str, network: &Ipv4Net, out_interface: &str) -> String {
    format!(
        "table ip {table} {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    ip saddr {network} oifname \"{out_interface}\" masquerade\n  }}\n}}\n"
    )
}

/// Enables IPv4 forwarding and installs the masquerade table `table`
/// (replacing an older one of the same name: this instance's, left by a
/// crash).
pub fn apply_nat(table: &str, network: &Ipv4Net, out_interface: &str) -> Result<()> {
    std::fs::write("/proc/sys/net/ipv4/ip_forward", "1\n")
        .context("`nat.enabled`: cannot enable IPv4 forwarding (needs root)")?;
    // Ignore the error: the table may not exist yet.
    let _ = run(Command::new("nft").args(["delete", "table", "ip", table]));
    let script = nat_ruleset(table, network, out_interface);
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("`nat.enabled`: cannot run nft (install nftables)")?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "`nat.enabled`: nft refused the masquerade rule: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Removes the table [`apply_nat`] installed.
pub fn remove_nat(table: &str) {
    let _ = run(Command::new("nft").args(["delete", "table", "ip", table]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruleset_text() {
        let n = Ipv4Net::parse("10.77.0.0/24").unwrap();
        assert_eq!(nat_table("braid0"), "braid_braid0");
        assert_eq!(nat_table("tun-a.1"), "braid_tun_a_1");
        let r = nat_ruleset("braid_x", &n, "eth0");
        assert!(r.starts_with("table ip braid_x {"));
        assert!(r.contains("ip saddr 10.77.0.0/24 oifname \"eth0\" masquerade"));
        assert!(r.contains("type nat hook postrouting priority srcnat"));
    }
}
