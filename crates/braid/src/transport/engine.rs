//! The transport's two modes behind one face: MPLOT (paper 002, the
//! default) and R-MTP (paper 004, `--transport rmtp`).
//!
//! The handshake, encryption and control messages (FIN, DONE, ABORT) are
//! the same for both; only the frames inside transport packets differ, and
//! each mode has its own [`Kind`] byte (`Kind::Mplot`, `Kind::Rmtp`). The
//! receiver needs no option: it takes the mode of the first frame of a
//! transfer and refuses frames of the other mode for the rest of it. R-MTP
//! frames carry their own layout version (`braid_core::rmtp::wire::VERSION`),
//! checked on decode.

use braid_core::time::Instant;
use braid_core::{mplot, rmtp};

use super::{Kind, OVERHEAD};

/// Which transport carries the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// MPLOT: block FEC across paths, per-path ECN/loss windows.
    #[default]
    Mplot,
    /// R-MTP: rate-based channels from packet pairs, jitter-trend
    /// congestion detection, SACK-bitmap window.
    Rmtp,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Mplot => "mplot",
            Mode::Rmtp => "rmtp",
        }
    }
    pub(crate) fn kind(self) -> Kind {
        match self {
            Mode::Mplot => Kind::Mplot,
            Mode::Rmtp => Kind::Rmtp,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s.to_ascii_lowercase().as_str() {
            "mplot" => Ok(Mode::Mplot),
            "rmtp" | "r-mtp" => Ok(Mode::Rmtp),
            _ => Err(format!("unknown transport {s:?}; use mplot or rmtp")),
        }
    }
}

/// R-MTP payload per frame: with its 24-byte header, the transport's 26
/// bytes and 28 of UDP/IPv4 (48 for IPv6) a datagram stays under 1300
/// bytes, below any path MTU of 1500 less a tunnel or two.
pub const RMTP_FRAME_PAYLOAD: usize = 1200;
/// R-MTP's negotiated *maximum rate* per channel (§3.4 (1)): 1 Gbit/s of
/// frames. Packet pairs over loopback can read microseconds, and the cap
/// stops the probe at a rate a socket can take.
pub const RMTP_MAX_RATE_BPS: f64 = 1e9;

/// What a sender of either mode reports at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub packets: u64,
    pub lost: u64,
    pub timeouts: u64,
}

/// One frame to send, written into the caller's buffer.
pub struct Out {
    pub path: usize,
    /// Bytes written (kind byte included).
    pub len: usize,
    /// Bytes this frame puts on its path, for progress.
    pub size: u64,
}

/// The sending half of either mode.
pub enum SendEngine {
    Mplot(Box<mplot::Sender>),
    Rmtp(Box<rmtp::Sender>),
}

impl SendEngine {
    pub fn new(mode: Mode, paths: usize) -> Result<SendEngine, String> {
        Ok(match mode {
            Mode::Mplot => {
                // Why each setting: `SenderConfig::for_files`.
                let cfg = mplot::SenderConfig::for_files(paths, OVERHEAD);
                SendEngine::Mplot(Box::new(
                    mplot::Sender::new(cfg).map_err(|e| format!("MPLOT sender: {e}"))?,
                ))
            }
            Mode::Rmtp => {
                let mut cfg = rmtp::SenderConfig::new(paths);
                cfg.frame_payload = RMTP_FRAME_PAYLOAD;
                let wire = (RMTP_FRAME_PAYLOAD + rmtp::wire::DATA_HEADER_LEN + OVERHEAD) as f64;
                cfg.rate.max_rate_fps = RMTP_MAX_RATE_BPS / (wire * 8.0);
                SendEngine::Rmtp(Box::new(
                    rmtp::Sender::new(cfg).map_err(|e| format!("R-MTP sender: {e}"))?,
                ))
            }
        })
    }

    pub fn buffered(&self) -> u64 {
        match self {
            SendEngine::Mplot(s) => s.buffered(),
            SendEngine::Rmtp(s) => s.buffered(),
        }
    }

    pub fn write(&mut self, b: &[u8]) -> Result<(), String> {
        match self {
            SendEngine::Mplot(s) => s.write(b).map_err(|e| e.to_string()),
            SendEngine::Rmtp(s) => s.write(b).map_err(|e| e.to_string()),
        }
    }

    pub fn finish(&mut self) {
        match self {
            SendEngine::Mplot(s) => s.finish(),
            SendEngine::Rmtp(s) => s.finish(),
        }
    }

    /// The next frame due, written into `buf` after its kind byte.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Result<Option<Out>, String> {
        match self {
            SendEngine::Mplot(s) => {
                let Some(t) = s.poll_transmit(now).map_err(|e| format!("MPLOT: {e}"))? else {
                    return Ok(None);
                };
                buf[0] = Kind::Mplot as u8;
                let n = mplot::wire::emit_data(&t.header, &t.shard, &mut buf[1..])
                    .map_err(|e| format!("MPLOT frame: {e}"))?;
                Ok(Some(Out {
                    path: t.path,
                    len: 1 + n,
                    size: t.size as u64,
                }))
            }
            SendEngine::Rmtp(s) => {
                let Some(t) = s.poll_transmit(now) else {
                    return Ok(None);
                };
                buf[0] = Kind::Rmtp as u8;
                let n = rmtp::wire::emit_data(&t.header, &t.payload, &mut buf[1..])
                    .map_err(|e| format!("R-MTP frame: {e}"))?;
                Ok(Some(Out {
                    path: t.channel,
                    len: 1 + n,
                    size: (1 + n + OVERHEAD) as u64,
                }))
            }
        }
    }

    /// A frame of this mode from the receiver (an acknowledgement).
    pub fn handle_frame(&mut self, now: Instant, kind: Kind, b: &[u8]) {
        match self {
            SendEngine::Mplot(s) if kind == Kind::Mplot => {
                if let Ok(mplot::Frame::Ack(a)) = mplot::wire::decode(b) {
                    s.handle_ack(now, &a);
                }
            }
            SendEngine::Rmtp(s) if kind == Kind::Rmtp => {
                if let Ok(rmtp::Frame::Ack(a)) = rmtp::wire::decode(b) {
                    s.handle_ack(now, &a);
                }
            }
            _ => {}
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            SendEngine::Mplot(s) => s.handle_timeout(now),
            SendEngine::Rmtp(s) => s.handle_timeout(now),
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due (a
    /// retransmission timer, or a pacer's next slot).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            SendEngine::Mplot(s) => s.poll_timeout(),
            SendEngine::Rmtp(s) => s.poll_timeout(),
        }
    }

    /// What the progress line shows of path `i` beyond its rate: MPLOT's
    /// window, RTT, window cuts and timeouts; R-MTP's paced rate, the
    /// packet-pair (ideal) rate and the congestion cuts.
    pub fn path_detail(&self, i: usize) -> String {
        match self {
            SendEngine::Mplot(s) => {
                let cc = s.path(i);
                format!(
                    " (window {:.0} kB, rtt {:.0} ms (min {:.0}), {} cuts, {} drains, {} RTOs)",
                    cc.window() / 1e3,
                    cc.srtt().as_secs_f64() * 1e3,
                    cc.rtt().min_rtt().unwrap_or_default().as_secs_f64() * 1e3,
                    cc.ce_cuts,
                    cc.delay_cuts,
                    cc.timeouts
                )
            }
            SendEngine::Rmtp(s) => {
                let Some(c) = s.channel_controller(i) else {
                    return String::new();
                };
                let wire = (RMTP_FRAME_PAYLOAD + rmtp::wire::DATA_HEADER_LEN + OVERHEAD) as f64;
                let mbit = |fps: f64| fps * wire * 8e-6;
                format!(
                    " (paced {:.1}, pairs {:.1} Mb/s, {} cuts)",
                    mbit(c.rate_fps()),
                    mbit(c.ideal_fps().unwrap_or(0.0)),
                    c.cuts
                )
            }
        }
    }

    /// Every byte is acknowledged.
    pub fn is_done(&self) -> bool {
        match self {
            SendEngine::Mplot(s) => s.is_done(),
            SendEngine::Rmtp(s) => s.is_done(),
        }
    }

    pub fn stats(&self) -> EngineStats {
        match self {
            SendEngine::Mplot(s) => EngineStats {
                packets: s.stats.packets_sent,
                lost: s.stats.lost,
                timeouts: s.stats.timeouts,
            },
            SendEngine::Rmtp(s) => {
                let st = s.stats();
                EngineStats {
                    packets: st.frames_sent,
                    lost: st.lost_marker + st.lost_timeout,
                    timeouts: st.lost_timeout,
                }
            }
        }
    }
}

/// The receiving half of either mode.
pub enum RecvEngine {
    Mplot(Box<mplot::Receiver>),
    Rmtp {
        rx: Box<rmtp::Receiver>,
        delivered: u64,
    },
}

impl RecvEngine {
    /// The receiver for a transfer whose first frame is of `kind`.
    pub fn for_kind(kind: Kind, paths: usize, seed: u64) -> Option<RecvEngine> {
        match kind {
            Kind::Mplot => Some(RecvEngine::Mplot(Box::new(mplot::Receiver::new(
                mplot::ReceiverConfig::for_files(paths, seed),
            )))),
            Kind::Rmtp => {
                let mut cfg = rmtp::ReceiverConfig::new();
                cfg.max_payload = RMTP_FRAME_PAYLOAD.max(1500);
                Some(RecvEngine::Rmtp {
                    rx: Box::new(rmtp::Receiver::new(cfg)),
                    delivered: 0,
                })
            }
            _ => None,
        }
    }

    pub fn mode(&self) -> Mode {
        match self {
            RecvEngine::Mplot(_) => Mode::Mplot,
            RecvEngine::Rmtp { .. } => Mode::Rmtp,
        }
    }

    /// A data frame (of this engine's mode), `ce` if its datagram arrived
    /// marked Congestion Experienced: returns the forward path it came on,
    /// or `None` if it was refused. Both modes echo the mark: MPLOT's
    /// window and R-MTP's rate (besides its jitter trend) react to it.
    pub fn handle_data(&mut self, now: Instant, ce: bool, b: &[u8]) -> Option<usize> {
        match self {
            RecvEngine::Mplot(rx) => {
                let Ok(mplot::Frame::Data(v)) = mplot::wire::decode(b) else {
                    return None;
                };
                rx.handle_data(now, ce, &v).ok()?;
                Some(usize::from(v.header.path))
            }
            RecvEngine::Rmtp { rx, .. } => {
                let Ok(rmtp::Frame::Data(v)) = rmtp::wire::decode(b) else {
                    return None;
                };
                rx.handle_data_ecn(now, &v, ce).ok()?;
                Some(usize::from(v.header.channel))
            }
        }
    }

    /// The next acknowledgement, written into `buf` after its kind byte:
    /// the path to send it on and the length.
    pub fn poll_ack(&mut self, buf: &mut [u8]) -> Option<(usize, usize)> {
        match self {
            RecvEngine::Mplot(rx) => {
                let (path, ack) = rx.poll_ack()?;
                buf[0] = Kind::Mplot as u8;
                let n = mplot::wire::emit_ack(&ack, &mut buf[1..]).ok()?;
                Some((path, 1 + n))
            }
            RecvEngine::Rmtp { rx, .. } => {
                let ack = rx.poll_ack()?;
                buf[0] = Kind::Rmtp as u8;
                let n = rmtp::wire::emit_ack(&ack, &mut buf[1..]).ok()?;
                Some((usize::from(ack.channel), 1 + n))
            }
        }
    }

    /// The next in-order bytes.
    pub fn poll_read(&mut self) -> Option<Vec<u8>> {
        match self {
            RecvEngine::Mplot(rx) => rx.poll_read().map(|c| c.data),
            RecvEngine::Rmtp { rx, delivered } => {
                let c = rx.poll_read()?;
                *delivered += c.payload.len() as u64;
                Some(c.payload)
            }
        }
    }

    pub fn delivered(&self) -> u64 {
        match self {
            RecvEngine::Mplot(rx) => rx.delivered(),
            RecvEngine::Rmtp { delivered, .. } => *delivered,
        }
    }

    /// The whole stream has been read.
    pub fn is_complete(&self) -> bool {
        match self {
            RecvEngine::Mplot(rx) => rx.is_complete(),
            RecvEngine::Rmtp { rx, .. } => rx.is_finished(),
        }
    }
}

/// Buffer size for one frame of either mode (kind byte included).
pub const FRAME_BUF: usize = 2048;

// Checked when compiling: an R-MTP data frame fits the buffer and, with
// the transport's overhead and UDP/IPv6, 1300 bytes; the largest ACK fits
// the buffer.
const _: () = {
    let data = 1 + RMTP_FRAME_PAYLOAD + rmtp::wire::DATA_HEADER_LEN;
    assert!(data <= FRAME_BUF);
    assert!(data + OVERHEAD - 1 + 48 <= 1300);
    assert!(1 + rmtp::wire::ACK_FIXED_LEN + 4 * rmtp::wire::MAX_WORDS <= FRAME_BUF);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_with_a_clear_error() {
        assert_eq!("rmtp".parse(), Ok(Mode::Rmtp));
        assert_eq!("MPLOT".parse(), Ok(Mode::Mplot));
        let e = "tcp".parse::<Mode>().unwrap_err();
        assert!(e.contains("mplot or rmtp"), "{e}");
    }
}
