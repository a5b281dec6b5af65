//! Data before handshakes, in the kernel: two UDP sockets share the
//! server's listen address (`SO_REUSEPORT`), and a classic BPF program
//! attached to the pair (`SO_ATTACH_REUSEPORT_CBPF`) picks the socket for
//! each datagram by its first byte and length.
//!
//! - Socket 0, the *data* socket, gets transport datagrams (type
//!   [`TYPE_TRANSPORT`], at least [`TRANSPORT_MIN_LEN`] bytes), the
//!   initiations whose source (IPv4 or IPv6) is the address of a
//!   connected client's path (the program lists them), and initiations
//!   that carry a MAC2, i.e. retries after a cookie reply
//!   ([`steering_program`]). It keeps the 4 MiB receive buffer and is
//!   read first.
//! - Socket 1, the *handshake* socket, gets everything else: initiations
//!   from other addresses, and whatever is neither (cookie replies and
//!   responses, which no client sends a server, garbage). Its receive
//!   buffer is small ([`HANDSHAKE_RCVBUF`]) and a second program on it
//!   (`SO_ATTACH_FILTER`, [`junk_filter`]) drops in the kernel what cannot
//!   be an initiation by type and length. So a flood of initiations or
//!   garbage overflows a small kernel queue, at the kernel's cost of a
//!   few hundred nanoseconds per datagram and no system call, instead of
//!   the 4 MiB queue that established tunnels' data waits in; the kernel
//!   counts what it dropped on that socket ([`kernel_drops`], exported as
//!   `drop_kernel_handshake`).
//!
//! Why the connected addresses ride with the data: a client that restarts
//! during a flood sends its first initiation from the address its old
//! session used, and waits `REKEY_TIMEOUT` (5 s) before the next one. In
//! the handshake socket's queue that initiation would be one among a
//! flood's hundreds of thousands a second, most of them dropped; in the
//! data socket it is read at once and passes the reader's admission
//! check as a known address ([`super::intake`]). A flood spoofing a
//! connected address is no worse than it was with one socket.
//!
//! Offsets: the reuseport program sees the UDP payload at offset 0 (the
//! kernel pulls the UDP header before running it) and its length as the
//! packet's, and the IP header (IPv4 or IPv6, whichever the datagram came
//! in) through the `SKF_NET_OFF` base; a socket filter sees the UDP
//! header at offset 0 and the payload at 8. The loopback tests below send
//! real datagrams through a real pair, on 127.0.0.1, on ::1 and on a
//! dual-stack wildcard, to check all of them.
//!
//! A kernel that refuses any step (no `SO_REUSEPORT`, no cBPF) leaves the
//! server on one socket, as before, with a logged warning
//! ([`ServerSockets::bind`]).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use braid_core::crypto::cookie::MAC_LEN;
use braid_core::crypto::handshake::{INIT_MAX_LEN, INIT_MIN_LEN};
use braid_core::crypto::packet::{TRANSPORT_MIN_LEN, TYPE_HANDSHAKE_INIT, TYPE_TRANSPORT};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;
use tracing::warn;

/// The handshake socket's receive buffer (the kernel doubles it for its
/// bookkeeping): a few hundred initiations, a few milliseconds of a flood.
pub const HANDSHAKE_RCVBUF: usize = 128 << 10;
/// Connected IPv4 addresses the steering program lists at most (two
/// instructions each; a classic BPF program has at most 4096).
pub const MAX_STEERED: usize = 1024;
/// Connected IPv6 addresses it lists at most (nine instructions each).
pub const MAX_STEERED_V6: usize = 200;

/// The reuseport group's sockets: index 0 is the data socket.
pub const DATA_INDEX: u32 = 0;
pub const HANDSHAKE_INDEX: u32 = 1;

// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h): class | size
// | mode, or class | operation | source.
/// BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at k.
const LD_W_ABS: u16 = 0x20;
/// BPF_LD | BPF_B | BPF_ABS: A = the byte at k.
const LD_B_ABS: u16 = 0x30;
/// BPF_LD | BPF_W | BPF_LEN: A = the packet's length.
const LD_W_LEN: u16 = 0x80;
/// BPF_LD | BPF_W | BPF_IND: A = the 32-bit word at X + k.
const LD_W_IND: u16 = 0x40;
/// BPF_ALU | BPF_RSH | BPF_K: A >>= k.
const ALU_RSH_K: u16 = 0x74;
/// BPF_ALU | BPF_SUB | BPF_K: A -= k.
const ALU_SUB_K: u16 = 0x14;
/// BPF_MISC | BPF_TAX: X = A.
const TAX: u16 = 0x07;
/// BPF_JMP | BPF_JA: jump k instructions ahead (any distance; the
/// conditional jumps reach 255 at most).
const JA: u16 = 0x05;
/// BPF_JMP | BPF_JEQ / BPF_JGT / BPF_JGE | BPF_K.
const JEQ_K: u16 = 0x15;
const JGT_K: u16 = 0x25;
const JGE_K: u16 = 0x35;
/// BPF_RET | BPF_K: return k.
const RET_K: u16 = 0x06;
/// Base of loads relative to the network (IP) header.
const SKF_NET_OFF: u32 = (-0x100000i32) as u32;
/// A UDP header, before the payload in a socket filter's view.
const UDP_HEADER: u32 = 8;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The reuseport steering program: transport datagrams, initiations that
/// carry a MAC2, and initiations from `known` sources (IPv4, v4-mapped
/// or IPv6), to [`DATA_INDEX`]; all else to [`HANDSHAKE_INDEX`]. At most
/// [`MAX_STEERED`] IPv4 and [`MAX_STEERED_V6`] IPv6 addresses of `known`
/// are used.
///
/// Why an initiation with a MAC2 rides with the data: its sender got a
/// cookie reply, so it receives at its address; it is the retry of a
/// client the server turned away under load, most likely a brand-new one
/// that beat a spoofed flood into the handshake socket once. Sent back
/// into that socket, it would have to beat the flood a second time. A
/// flood that forges MAC2s gains nothing it did not have: any datagram
/// with the transport type byte reaches the data socket too, and the
/// reader admits MAC2 initiations in their own budget
/// ([`super::intake`]) before the core checks the MAC (no DH without a
/// valid one).
pub fn steering_program(known: &[IpAddr]) -> Vec<libc::sock_filter> {
    let mut v4: Vec<u32> = Vec::new();
    let mut v6: Vec<[u32; 4]> = Vec::new();
    for ip in known {
        match ip {
            IpAddr::V4(a) => v4.push(u32::from(*a)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                // A dual-stack socket sees IPv4 senders as v4-mapped; the
                // datagram's own header is IPv4.
                Some(m) => v4.push(u32::from(m)),
                None => v6.push(std::array::from_fn(|i| {
                    let o = a.octets();
                    u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
                })),
            },
        }
    }
    v4.truncate(MAX_STEERED);
    v6.truncate(MAX_STEERED_V6);
    let mut p = vec![
        // A datagram too short for a transport header is no data.
        op(LD_W_LEN, 0, 0, 0),
        op(JGE_K, 1, 0, TRANSPORT_MIN_LEN as u32),
        op(RET_K, 0, 0, HANDSHAKE_INDEX),
        op(LD_B_ABS, 0, 0, 0),
        op(JEQ_K, 0, 1, TYPE_TRANSPORT as u32),
        op(RET_K, 0, 0, DATA_INDEX),
        op(JEQ_K, 1, 0, TYPE_HANDSHAKE_INIT as u32),
        op(RET_K, 0, 0, HANDSHAKE_INDEX),
        // An initiation of an initiation's length (else the handshake
        // socket's filter drops it)...
        op(LD_W_LEN, 0, 0, 0),
        op(JGE_K, 0, 1, INIT_MIN_LEN as u32),
        op(JGT_K, 0, 1, INIT_MAX_LEN as u32),
        op(RET_K, 0, 0, HANDSHAKE_INDEX),
        // ... with a MAC2 (its last 16 bytes, not all zero)?
        op(ALU_SUB_K, 0, 0, MAC_LEN as u32),
        op(TAX, 0, 0, 0),
        op(LD_W_IND, 0, 0, 0),
        op(JEQ_K, 1, 0, 0),
        op(RET_K, 0, 0, DATA_INDEX),
        op(LD_W_IND, 0, 0, 4),
        op(JEQ_K, 1, 0, 0),
        op(RET_K, 0, 0, DATA_INDEX),
        op(LD_W_IND, 0, 0, 8),
        op(JEQ_K, 1, 0, 0),
        op(RET_K, 0, 0, DATA_INDEX),
        op(LD_W_IND, 0, 0, 12),
        op(JEQ_K, 1, 0, 0),
        op(RET_K, 0, 0, DATA_INDEX),
        // No MAC2: from a connected address? IPv4 (version nibble 4)
        // here, IPv6 past the IPv4 list.
        op(LD_B_ABS, 0, 0, SKF_NET_OFF),
        op(ALU_RSH_K, 0, 0, 4),
        op(JEQ_K, 1, 0, 4),
        op(JA, 0, 0, 2 * v4.len() as u32 + 2),
        // Its source address, host order as the comparisons below.
        op(LD_W_ABS, 0, 0, SKF_NET_OFF + 12),
    ];
    for a in &v4 {
        p.push(op(JEQ_K, 0, 1, *a));
        p.push(op(RET_K, 0, 0, DATA_INDEX));
    }
    p.push(op(RET_K, 0, 0, HANDSHAKE_INDEX));
    // IPv6: the source address is the four words from offset 8 of the
    // header; each listed address is compared word by word.
    p.push(op(JEQ_K, 1, 0, 6));
    p.push(op(RET_K, 0, 0, HANDSHAKE_INDEX));
    for w in &v6 {
        for (i, word) in w.iter().enumerate() {
            p.push(op(LD_W_ABS, 0, 0, SKF_NET_OFF + 8 + 4 * i as u32));
            // On a mismatch, on to the next address (past this one's
            // remaining loads and compares, and its return).
            p.push(op(JEQ_K, 0, (7 - 2 * i) as u8, *word));
        }
        p.push(op(RET_K, 0, 0, DATA_INDEX));
    }
    p.push(op(RET_K, 0, 0, HANDSHAKE_INDEX));
    p
}

/// The handshake socket's filter: keeps a datagram only if it has an
/// initiation's type byte and a length between the smallest and largest
/// initiation; the kernel drops the rest before queueing it.
pub fn junk_filter() -> Vec<libc::sock_filter> {
    vec![
        op(LD_W_LEN, 0, 0, 0),
        op(JGE_K, 0, 4, UDP_HEADER + INIT_MIN_LEN as u32),
        op(JGT_K, 3, 0, UDP_HEADER + INIT_MAX_LEN as u32),
        op(LD_B_ABS, 0, 0, UDP_HEADER),
        op(JEQ_K, 0, 1, TYPE_HANDSHAKE_INIT as u32),
        op(RET_K, 0, 0, u32::MAX),
        op(RET_K, 0, 0, 0),
    ]
}

/// Attaches `prog` with socket option `name` (`SO_ATTACH_FILTER` or
/// `SO_ATTACH_REUSEPORT_CBPF`); a second call replaces the program.
fn attach(fd: &impl AsRawFd, name: libc::c_int, prog: &mut [libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: `fprog` points at `prog`, alive for the call; the kernel
    // copies the program.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            &fprog as *const libc::sock_fprog as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Installs [`steering_program`] for `known` on the group `sock` is in.
pub fn steer(sock: &impl AsRawFd, known: &[IpAddr]) -> io::Result<()> {
    attach(
        sock,
        libc::SO_ATTACH_REUSEPORT_CBPF,
        &mut steering_program(known),
    )
}

/// The running total of datagrams the kernel dropped on `sock` (receive
/// buffer full, or refused by its filter): `SK_MEMINFO_DROPS` of
/// `SO_MEMINFO`, readable at any time, unlike `SO_RXQ_OVFL`, which only
/// arrives with a datagram that got through.
pub fn kernel_drops(sock: &impl AsRawFd) -> Option<u32> {
    let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0 && len as usize >= std::mem::size_of_val(&info))
        .then_some(info[libc::SK_MEMINFO_DROPS as usize])
}

/// The server's sockets on its listen address.
pub struct ServerSockets {
    /// Transport data (and everything, without a handshake socket).
    pub data: UdpSocket,
    /// Initiations from unconnected addresses; `None` where the kernel
    /// refused the pair.
    pub handshake: Option<UdpSocket>,
}

impl ServerSockets {
    /// Binds the data and handshake sockets on `listen`, or the one socket
    /// of old where the kernel refuses the pair (logged). `make` creates
    /// an unbound socket with the usual buffers.
    pub fn bind(
        listen: SocketAddr,
        make: impl Fn(Domain) -> io::Result<Socket>,
    ) -> io::Result<ServerSockets> {
        // The port must be free: members of a reuseport group share it, so
        // a second server would otherwise join this one's group instead of
        // failing. A plain socket tells (it cannot bind while the port is
        // taken) and is closed again at once.
        if listen.port() != 0 {
            drop(bind_plain(listen, &make)?);
        }
        match bind_pair(listen, &make) {
            Ok(s) => Ok(s),
            Err(e) => {
                warn!(error = %e, listen = %listen, "cannot split the listen socket into a data and a handshake socket (SO_REUSEPORT with a classic BPF program); a handshake flood then shares the data's receive queue");
                Ok(ServerSockets {
                    data: bind_plain(listen, &make)?,
                    handshake: None,
                })
            }
        }
    }
}

fn bind_plain(
    listen: SocketAddr,
    make: &impl Fn(Domain) -> io::Result<Socket>,
) -> io::Result<UdpSocket> {
    let s = make(Domain::for_address(listen))?;
    s.bind(&listen.into())?;
    s.set_nonblocking(true)?;
    UdpSocket::from_std(s.into())
}

fn bind_pair(
    listen: SocketAddr,
    make: &impl Fn(Domain) -> io::Result<Socket>,
) -> io::Result<ServerSockets> {
    let domain = Domain::for_address(listen);
    let data = make(domain)?;
    data.set_reuse_port(true)?;
    data.bind(&listen.into())?;
    // With port 0 the kernel picked one: the second socket takes the same.
    let bound = data
        .local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("the data socket has no IP address"))?;
    let hs = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if let (IpAddr::V6(_), Ok(v6only)) = (listen.ip(), data.only_v6()) {
        hs.set_only_v6(v6only)?;
    }
    hs.set_reuse_port(true)?;
    let _ = hs.set_recv_buffer_size(HANDSHAKE_RCVBUF);
    let _ = hs.set_send_buffer_size(HANDSHAKE_RCVBUF);
    attach(&hs, libc::SO_ATTACH_FILTER, &mut junk_filter())?;
    hs.bind(&bound.into())?;
    steer(&data, &[])?;
    data.set_nonblocking(true)?;
    hs.set_nonblocking(true)?;
    Ok(ServerSockets {
        data: UdpSocket::from_std(data.into())?,
        handshake: Some(UdpSocket::from_std(hs.into())?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn make(d: Domain) -> io::Result<Socket> {
        Socket::new(d, Type::DGRAM, Some(Protocol::UDP))
    }

    /// Every datagram readable on `s` within a short wait.
    fn drain(s: &UdpSocket) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 2048];
        let deadline = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < deadline {
            // SAFETY: recv writes at most `buf.len()` bytes into `buf`.
            let n = unsafe {
                libc::recv(
                    s.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                out.push(buf[..n as usize].to_vec());
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        out
    }

    fn datagram(kind: u8, len: usize) -> Vec<u8> {
        let mut d = vec![0xab; len];
        d[0] = kind;
        d
    }

    /// Sends samples through a real pair on `listen` and checks where
    /// each lands (or that the kernel dropped it).
    async fn classify_on(listen: &str, from: &str) {
        let socks = ServerSockets::bind(listen.parse().unwrap(), make).unwrap();
        let hs = socks.handshake.as_ref().expect("the kernel took the pair");
        let to = socks.data.local_addr().unwrap();
        let to = SocketAddr::new(from.parse().unwrap(), to.port());
        let tx = std::net::UdpSocket::bind(SocketAddr::new(from.parse().unwrap(), 0)).unwrap();
        let transport = datagram(TYPE_TRANSPORT, 100);
        let short_transport = datagram(TYPE_TRANSPORT, TRANSPORT_MIN_LEN - 1);
        // No MAC2: an initiation's last 16 bytes are zero until its
        // sender has a cookie.
        let unstamped = |len| {
            let mut d = datagram(TYPE_HANDSHAKE_INIT, len);
            d[len - MAC_LEN..].fill(0);
            d
        };
        let init = unstamped(INIT_MIN_LEN + 5);
        let init_short = datagram(TYPE_HANDSHAKE_INIT, INIT_MIN_LEN - 1);
        let init_long = unstamped(INIT_MAX_LEN + 1);
        let cookie = datagram(0x13, 64);
        let junk = datagram(0x55, INIT_MIN_LEN + 5);
        let drops0 = kernel_drops(hs).unwrap();
        for d in [
            &transport,
            &short_transport,
            &init,
            &init_short,
            &init_long,
            &cookie,
            &junk,
        ] {
            tx.send_to(d, to).unwrap();
        }
        // Data: the transport datagram only. Handshake: the initiation;
        // the kernel dropped the five that cannot be one.
        assert_eq!(drain(&socks.data), vec![transport.clone()]);
        assert_eq!(drain(hs), vec![init.clone()]);
        assert_eq!(kernel_drops(hs).unwrap() - drops0, 5);
        assert_eq!(kernel_drops(&socks.data), Some(0));
        // Initiations from a connected address ride with the data, as the
        // server lists it: the address it saw the datagrams come from
        // (v4-mapped on a dual-stack socket). The decoys differ from it in
        // the first or only in the last word.
        let seen: IpAddr = match (from.parse::<IpAddr>().unwrap(), listen.starts_with('[')) {
            (IpAddr::V4(a), true) => IpAddr::V6(a.to_ipv6_mapped()),
            (ip, _) => ip,
        };
        let decoys: [IpAddr; 4] = [
            "192.0.2.1".parse().unwrap(),
            "127.0.0.2".parse().unwrap(),
            "::2".parse().unwrap(),
            "2001:db8::1".parse().unwrap(),
        ];
        let mut listed = decoys.to_vec();
        listed.push(seen);
        steer(&socks.data, &listed).unwrap();
        tx.send_to(&init, to).unwrap();
        tx.send_to(&transport, to).unwrap();
        assert_eq!(drain(&socks.data), vec![init.clone(), transport.clone()]);
        assert!(drain(hs).is_empty());
        // And no longer once it is off the list.
        steer(&socks.data, &decoys).unwrap();
        tx.send_to(&init, to).unwrap();
        assert!(drain(&socks.data).is_empty());
        assert_eq!(drain(hs), vec![init.clone()]);
        // An initiation with a MAC2 (a retry after a cookie reply) rides
        // with the data from any address, whichever of its words is set;
        // one too long for an initiation does not.
        for word in 0..4 {
            let mut stamped = init.clone();
            let at = stamped.len() - MAC_LEN + 4 * word;
            stamped[at..].fill(0);
            stamped[at] = 1;
            tx.send_to(&stamped, to).unwrap();
            assert_eq!(drain(&socks.data), vec![stamped], "MAC2 word {word}");
        }
        let mut long = init_long.clone();
        *long.last_mut().unwrap() = 1;
        tx.send_to(&long, to).unwrap();
        assert!(drain(&socks.data).is_empty());
        assert!(drain(hs).is_empty());
    }

    #[tokio::test]
    async fn pair_classifies_datagrams_on_ipv4() {
        classify_on("127.0.0.1:0", "127.0.0.1").await;
    }

    #[tokio::test]
    async fn pair_classifies_datagrams_on_ipv6() {
        if std::net::UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("no IPv6 loopback; skipped");
            return;
        }
        classify_on("[::1]:0", "::1").await;
    }

    #[tokio::test]
    async fn pair_classifies_datagrams_dual_stack() {
        // The examples' wildcard, dual-stack: IPv4 senders (v4-mapped on
        // the socket) and IPv6 ones.
        if std::net::UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("no IPv6 loopback; skipped");
            return;
        }
        classify_on("[::]:0", "127.0.0.1").await;
        classify_on("[::]:0", "::1").await;
    }

    #[tokio::test]
    async fn a_taken_port_is_refused_not_joined() {
        let first = ServerSockets::bind("127.0.0.1:0".parse().unwrap(), make).unwrap();
        assert!(first.handshake.is_some());
        let port = first.data.local_addr().unwrap();
        let e = ServerSockets::bind(port, make).err().expect("port in use");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn programs_fit_the_kernel_limits() {
        let many: Vec<IpAddr> = (0..5000u32)
            .map(|i| IpAddr::V4(Ipv4Addr::from(i)))
            .chain((0..5000u128).map(|i| IpAddr::V6(std::net::Ipv6Addr::from(i << 64 | 7))))
            .collect();
        let p = steering_program(&many);
        assert!(p.len() <= 4096, "{}", p.len());
        assert_eq!(p.len(), 35 + 2 * MAX_STEERED + 9 * MAX_STEERED_V6);
        assert_eq!(p.last().unwrap().k, HANDSHAKE_INDEX);
        // Every jump lands inside the program, and the jump past the IPv4
        // list lands on the IPv6 version check.
        for prog in [p.clone(), steering_program(&[]), junk_filter()] {
            for (i, o) in prog.iter().enumerate() {
                if o.code == JA {
                    let to = i + 1 + o.k as usize;
                    assert!(to < prog.len());
                    assert_eq!((prog[to].code, prog[to].k), (JEQ_K, 6));
                } else if o.code & 0x07 == 0x05 {
                    assert!(i + 1 + (o.jt.max(o.jf) as usize) < prog.len());
                }
            }
        }
    }
}
