//! `braid send` / `braid recv`: one file over several UDP paths with
//! braid's own multipath transport, instead of through the tunnel: MPLOT
//! (`braid_core::mplot`, paper 002; `SPECS.md` §2) by default, or R-MTP
//! (`braid_core::rmtp`, paper 004; `SPECS.md` §4) with `--transport rmtp`
//! (`engine.rs`).
//!
//! Every datagram is protected exactly as the tunnel's: a
//! `Noise_IK_25519_ChaChaPoly_BLAKE2s` handshake with the keys of
//! `braid keygen` (`braid_core::crypto`), then transport packets under the
//! session it yields. One session per transfer: the sender is the Noise
//! initiator and names the file, its size and its path count in the
//! handshake payload; the receiver answers in its reply payload whether
//! it takes the file (so "disk too small" or "file exists" reach the
//! sender as a clear error before any byte moves).
//!
//! Inside a transport packet the first byte says what follows ([`Kind`]):
//! an MPLOT or an R-MTP frame (DATA sender to receiver, ACK back; the
//! receiver takes the mode of a transfer's first frame), or one of the three
//! control messages that close the transfer: FIN (size and SHA-256 of what
//! was sent, after every block is acknowledged), DONE (the receiver's
//! verdict) and ABORT (either side gives up, with the reason).
//!
//! The sender has one socket per path, bound to an address or an interface;
//! the receiver one socket. The MPLOT DATA header names its forward path,
//! so the receiver learns each path's source address from the packets and
//! sends each ACK to the path the sans-IO receiver drew for it.
//!
//! The I/O is plain non-blocking `std` sockets polled in a loop that
//! sleeps briefly when idle: two or three sockets and one file, so no
//! runtime is needed.

mod ecn;
pub(crate) mod engine;
mod recv;
mod send;

use std::time::Duration;

pub use engine::Mode;
pub use recv::{Listener, ReceiveOptions, Received};
pub use send::{send_file, Path, SendOptions, Sent};

/// Why a transfer failed. Each message names what went wrong and what to
/// do about it.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// Nothing answered the handshake: the receiver is down or unreachable,
    /// or a key does not match (a receiver drops handshakes it cannot
    /// authenticate without replying, as the tunnel does).
    #[error(
        "no handshake reply from {peer} within {} s: is `braid recv` running there and reachable \
         on every path? If it is, the keys do not match: --peer-key must be the receiver's public \
         key and the receiver must list this sender's public key with --allow",
        .waited.as_secs_f64()
    )]
    NoReply {
        peer: std::net::SocketAddr,
        waited: Duration,
    },
    /// The receiver authenticated us and refused the file.
    #[error("the receiver refused the file: {0}")]
    Refused(String),
    /// The other side gave up during the transfer.
    #[error("the {side} aborted the transfer: {reason}")]
    Aborted { side: &'static str, reason: String },
    /// The peer stopped answering.
    #[error("no packet from the {side} for {} s; the transfer is abandoned", .idle.as_secs_f64())]
    Silent { side: &'static str, idle: Duration },
    /// The file changed while it was being sent.
    #[error("{0} changed while it was sent (size or modification time differ); the receiver discarded it, send it again")]
    Changed(String),
    /// The receiver's verdict: what arrived is not what was sent.
    #[error("verification failed: {0}")]
    Verify(String),
    /// Bad option or local I/O failure (opening the file, binding a socket, writing).
    #[error("{0}")]
    Local(String),
}

/// Shorthand for local failures with context.
pub(crate) fn local(what: impl std::fmt::Display, e: impl std::fmt::Display) -> TransferError {
    TransferError::Local(format!("{what}: {e}"))
}

/// The first byte of every decrypted packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// An MPLOT frame (`braid_core::mplot::wire`).
    Mplot = 0,
    /// Sender to receiver: `size: u64, sha256: [u8; 32]`.
    Fin = 1,
    /// Receiver to sender: `ok: u8`, then a UTF-8 message.
    Done = 2,
    /// Either way: a UTF-8 reason.
    Abort = 3,
    /// An R-MTP frame (`braid_core::rmtp::wire`).
    Rmtp = 4,
}

impl Kind {
    pub(crate) fn of(b: &[u8]) -> Option<(Kind, &[u8])> {
        let (&k, rest) = b.split_first()?;
        let k = match k {
            0 => Kind::Mplot,
            1 => Kind::Fin,
            2 => Kind::Done,
            3 => Kind::Abort,
            4 => Kind::Rmtp,
            _ => return None,
        };
        Some((k, rest))
    }
}

/// Magic and version at the start of the handshake payload.
const OFFER_MAGIC: &[u8; 8] = b"braidtx1";
/// Longest file name carried (bytes); the handshake payload is at most 512.
pub const MAX_NAME: usize = 255;

/// What the sender offers in its handshake payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Offer {
    pub paths: u8,
    pub size: u64,
    pub name: String,
}

impl Offer {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = OFFER_MAGIC.to_vec();
        v.push(self.paths);
        v.extend_from_slice(&self.size.to_be_bytes());
        v.push(self.name.len() as u8);
        v.extend_from_slice(self.name.as_bytes());
        v
    }

    /// Checked: nothing from the network panics.
    pub(crate) fn decode(b: &[u8]) -> Result<Offer, String> {
        let rest = b
            .strip_prefix(OFFER_MAGIC)
            .ok_or("not a braid send offer (wrong magic or version)")?;
        if rest.len() < 10 {
            return Err("offer truncated".into());
        }
        let paths = rest[0];
        let size = u64::from_be_bytes(rest[1..9].try_into().expect("8 bytes"));
        let n = usize::from(rest[9]);
        let name = rest.get(10..10 + n).ok_or("offer name truncated")?;
        let name = std::str::from_utf8(name)
            .map_err(|_| "file name is not UTF-8")?
            .to_string();
        Ok(Offer { paths, size, name })
    }
}

/// Size of every socket's kernel buffers (best effort; capped by
/// net.core.rmem_max/wmem_max): a window of several hundred packets per
/// path arrives in bursts.
pub(crate) const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Bytes around the MPLOT frame in a datagram: the kind byte and the
/// transport packet's 9-byte header and 16-byte tag (defined in
/// braid-core, which the simulator's `braid-send` mode shares).
pub(crate) const OVERHEAD: usize = braid_core::mplot::FILE_OVERHEAD;

/// Hex of a digest, as `sha256sum` prints it.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The monotonic clock mapped onto the core's nanosecond [`Instant`]
/// (zero when the transfer starts).
pub(crate) struct Clock(std::time::Instant);

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock(std::time::Instant::now())
    }
    pub(crate) fn now(&self) -> braid_core::time::Instant {
        braid_core::time::Instant::from_nanos(self.0.elapsed().as_nanos() as u64)
    }
}

/// Waits until one of `socks` has a datagram to read or `timeout` has
/// passed (`ppoll(2)`, nanosecond timeout), so a send or receive loop
/// wakes for an ACK or a data packet the moment it arrives, and for a
/// pacer's slot on time. A loop that slept a fixed interval instead added
/// that interval, and on a loaded host the scheduler's delay on top, to
/// every RTT sample it took: MPLOT reads a standing queue from RTT
/// samples (`mplot::PathCc::on_standing_queue`), and the host's delay read
/// as a queue keeps the windows short.
pub(crate) fn wait_readable(socks: &[std::net::UdpSocket], timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = socks
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that
    // lives across the call, `ts` a valid timespec, and a null signal mask
    // pointer means the mask is left as it is. An error (EINTR) only ends
    // the wait early, which the callers' loops tolerate.
    unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        );
    }
}

/// Wall-clock TAI64N for the handshake's replay protection.
pub(crate) fn tai64n_now() -> braid_core::crypto::Tai64n {
    braid_core::crypto::Tai64n::from_unix_nanos(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_round_trip_and_refuse_garbage() {
        let o = Offer {
            paths: 3,
            size: 1 << 40,
            name: "report.pdf".into(),
        };
        assert_eq!(Offer::decode(&o.encode()), Ok(o.clone()));
        let e = o.encode();
        for cut in 0..e.len() {
            assert!(Offer::decode(&e[..cut]).is_err(), "cut at {cut}");
        }
        assert!(Offer::decode(b"braidtx2xxxxxxxxxxxxxxxx").is_err());
    }
}
