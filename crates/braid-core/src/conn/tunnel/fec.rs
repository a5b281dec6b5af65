//! FEC in the tunnel: the glue between the sender's and receiver's data
//! and the encoder ([`FecEncoder`]) and decoder ([`FecDecoder`]).
//!
//! Sending (modes `fec` and `auto`; see `RepairMode` for when):
//! - every first copy of a data packet goes into the encoder's blocks;
//! - at each block the code rate is eq 9's `x` from the aggregate loss
//!   mean and deviation (eqs 2-3, updated here once per block from the
//!   sender's per-path delivered and lost counts since the last block),
//!   and the block size is eq 12's `B^p` from each path's window
//!   (estimated bandwidth × smoothed RTT, in packets) and RTT;
//! - parity goes to the GOOD paths of eq 1's rank (above the median
//!   loss-free bandwidth), round robin in rank order, and is charged to
//!   their pacers like any other frame;
//! - a lost data packet that a kept block covers gets eq 10's reactive
//!   parity instead of a resend (on paths FEC serves).
//!
//! Receiving: parity and data go to the decoder, and what it rebuilds
//! fills the resequencer's gaps (`Receiver::handle_rebuilt`).

use super::{Outputs, Tunnel};
use crate::fec::mplot::{self, AggregateLoss};
use crate::path::{PathId, MAX_PATHS};
use crate::repair::fec::{FecDecoder, FecDecoderConfig};
use crate::repair::RepairMode;
use crate::sender::fec::{FecEncoder, FecEncoderConfig, ParityOut, MAX_BLOCK_DATA};
use crate::time::{Duration, Instant};
use crate::wire::{ParityHeader, PARITY_HEADER_LEN};

/// `B^p` when no path has estimates yet.
const DEFAULT_BLOCK: f64 = 32.0;
/// Fewest data packets a block waits for (unless `max_block_wait`
/// passes first). MPLOT sizes its packets so that a block has at least 5
/// (§III-C); a tunnel cannot resize the packets it carries, and with
/// `k = ⌈x F⌉` a block of 1 or 2 would cost a parity packet per data
/// packet.
const MIN_BLOCK_DATA: usize = 8;
/// Fewest resolved packets in one sample of eq 2.
const MIN_LOSS_SAMPLE: u64 = 32;

/// The FEC state of one tunnel.
pub(crate) struct TunnelFec {
    pub tx: FecEncoder,
    pub rx: FecDecoder,
    /// eqs 2-3.
    pub agg: AggregateLoss,
    /// Each path's (delivered, lost) counts at the last block.
    last_counts: [(u64, u64); MAX_PATHS],
    /// Rotates parity over the GOOD paths.
    next_good: usize,
}

impl TunnelFec {
    pub(crate) fn new(cfg: &super::ConnConfig) -> Self {
        let f = &cfg.fec;
        let max_age = cfg.sender.repair.max_age;
        TunnelFec {
            tx: FecEncoder::new(FecEncoderConfig {
                max_wait: f.max_block_wait,
                max_age,
                max_bytes: f.max_bytes,
            }),
            rx: FecDecoder::new(FecDecoderConfig {
                max_bytes: f.max_bytes,
                max_age: cfg
                    .receiver
                    .reorder
                    .max_hold
                    .max(Duration::from_millis(100)),
            }),
            agg: AggregateLoss::default(),
            last_counts: [(0, 0); MAX_PATHS],
            next_good: 0,
        }
    }
}

impl Tunnel {
    /// Whether FEC serves the path `id` now (mode `fec`: every path;
    /// `auto`: the rule of `FecConfig::fec_serves`).
    pub(super) fn fec_serves(&self, id: PathId) -> bool {
        match self.cfg.repair {
            RepairMode::Fec => true,
            RepairMode::Auto => self.sender.path(id).is_some_and(|p| {
                p.usable
                    && p.rtt.has_samples()
                    && self.cfg.fec.fec_serves(p.rtt.srtt(), p.loss.rate())
            }),
            RepairMode::Off | RepairMode::Arq => false,
        }
    }

    /// Whether parity is sent now: some usable path is served by FEC.
    fn fec_sending(&self) -> bool {
        match self.cfg.repair {
            RepairMode::Fec => true,
            RepairMode::Auto => self.links.iter().any(|l| l.up && self.fec_serves(l.id)),
            RepairMode::Off | RepairMode::Arq => false,
        }
    }

    /// A first copy of data packet `seq` went out.
    pub(super) fn fec_on_sent(&mut self, now: Instant, seq: u64, packet: &[u8], out: &mut Outputs) {
        if self.fec_sending() {
            self.fec.tx.on_sent(now, seq, packet);
        }
        self.fec_poll(now, out);
    }

    /// Closes due blocks and sends their proactive parity.
    pub(super) fn fec_poll(&mut self, now: Instant, out: &mut Outputs) {
        if self.fec.tx.poll_timeout().is_none() {
            return;
        }
        loop {
            let x = mplot::proactive_rate(self.fec.agg.mean(), self.fec.agg.deviation());
            let (f, _) = mplot::split_block(self.fec_block_size(), x, MAX_BLOCK_DATA);
            let f = f.max(MIN_BLOCK_DATA);
            let Some(parity) = self.fec.tx.poll_block(now, f, x) else {
                break;
            };
            self.fec_update_loss();
            self.send_parity(now, parity, out);
        }
    }

    /// eqs 2-3: one instantaneous aggregate loss per block, from what the
    /// paths delivered and lost since the previous sample. MPLOT takes
    /// `R_i(b)/S_i(b)` of one block; the sender here learns fates per
    /// packet and per path, not per block, so a sample is the packets
    /// resolved since the last one, and it waits for at least
    /// [`MIN_LOSS_SAMPLE`] of them: a block of a few packets gives a loss
    /// of 0 or 1/n, whose deviation (eq 3) would say nothing but noise and
    /// drive eq 9's rate towards its cap.
    fn fec_update_loss(&mut self) {
        let mut sd = Vec::new();
        for p in self.sender.paths() {
            let s = p.id.0 as usize % MAX_PATHS;
            let (d, l) = (p.loss.delivered(), p.loss.lost());
            let (d0, l0) = self.fec.last_counts[s];
            sd.push((s, d, l, d.saturating_sub(d0), l.saturating_sub(l0)));
        }
        let resolved: u64 = sd.iter().map(|x| x.3 + x.4).sum();
        if resolved < MIN_LOSS_SAMPLE {
            return;
        }
        for &(s, d, l, ..) in &sd {
            self.fec.last_counts[s] = (d, l);
        }
        let counts: Vec<(u64, u64)> = sd.iter().map(|x| (x.3 + x.4, x.3)).collect();
        if let Some(p) = mplot::block_loss(&counts) {
            self.fec.agg.update(p);
        }
    }

    /// Each usable path's window in packets and RTT in seconds. MPLOT's
    /// `w_i` is a congestion window; the tunnel has none, so the window
    /// is what the path carries in one smoothed RTT at its estimated
    /// rate, in packets of the mean size it has been sent (eq 12 counts
    /// packets, and a bond carrying small packets needs more of them per
    /// round trip).
    fn fec_path_windows(&self) -> Vec<(PathId, f64, f64, f64)> {
        let mtu = (self.cfg.inner_mtu as usize + super::super::OUTER_OVERHEAD) as f64;
        self.sender
            .paths()
            .iter()
            .filter(|p| p.usable && p.rtt.has_samples())
            .filter_map(|p| {
                let mean = if p.sent_packets > 0 {
                    (p.sent_bytes as f64 / p.sent_packets as f64).clamp(1.0, mtu)
                } else {
                    mtu
                };
                let pkt = mean * 8.0;
                let rtt = p.rtt.srtt().as_secs_f64();
                let w = p.bw.estimate_bps()? * rtt / pkt;
                Some((p.id, w, rtt, p.loss.rate()))
            })
            .collect()
    }

    /// eq 12's `B^p`.
    fn fec_block_size(&self) -> f64 {
        let w: Vec<(f64, f64)> = self
            .fec_path_windows()
            .iter()
            .map(|&(_, w, r, _)| (w, r))
            .collect();
        let b = mplot::block_size(&w);
        if b >= 1.0 {
            b
        } else {
            DEFAULT_BLOCK
        }
    }

    /// The GOOD paths of eq 1, best first; every usable path when none
    /// has estimates.
    fn fec_good_paths(&self) -> Vec<PathId> {
        let mut w = self.fec_path_windows();
        if w.is_empty() {
            return self
                .links
                .iter()
                .filter(|l| l.up && l.remote.is_some())
                .map(|l| l.id)
                .collect();
        }
        let ranks: Vec<f64> = w.iter().map(|&(_, w, r, p)| mplot::rank(w, p, r)).collect();
        let mut good = mplot::good_paths(&ranks);
        if !good.contains(&true) {
            // One path, or equal ranks: no path is worse than another.
            good.fill(true);
        }
        let mut ranked: Vec<(f64, PathId)> = w
            .drain(..)
            .zip(ranks)
            .zip(good)
            .filter(|(_, g)| *g)
            .map(|(((id, ..), r), _)| (r, id))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        ranked.into_iter().map(|(_, id)| id).collect()
    }

    /// Sends parity frames on the GOOD paths in turn.
    fn send_parity(&mut self, now: Instant, parity: Vec<ParityOut>, out: &mut Outputs) {
        if parity.is_empty() {
            return;
        }
        let good = self.fec_good_paths();
        if good.is_empty() {
            return;
        }
        let mut buf = Vec::new();
        for o in parity {
            let path = good[self.fec.next_good % good.len()];
            self.fec.next_good = self.fec.next_good.wrapping_add(1);
            let h = ParityHeader {
                path,
                first: o.first as u32,
                data: o.data,
                parity: o.parity,
                index: o.index,
            };
            buf.resize(PARITY_HEADER_LEN + o.shard.len(), 0);
            let Ok(n) = h.emit(&o.shard, &mut buf) else {
                continue;
            };
            self.sender
                .charge_pacer(now, path, n + super::super::OUTER_OVERHEAD);
            if self.transmit(now, path, &buf[..n], out) {
                self.counters.fec_parity_sent += 1;
                self.counters.fec_parity_reactive += o.reactive as u64;
                self.counters.fec_parity_bytes += n as u64;
            }
        }
    }

    /// A lost packet from the sender's repair queue: true if FEC takes it
    /// (its path is served by FEC and a kept block covers it), after
    /// sending the block's reactive parity if it needs more.
    pub(super) fn fec_takes_loss(&mut self, now: Instant, seq: u64, out: &mut Outputs) -> bool {
        let Some(path) = self.sender.sent_path(seq) else {
            return false;
        };
        if !self.fec_serves(path) {
            return false;
        }
        let p = self.fec.agg.mean();
        match self.fec.tx.on_lost(now, seq, p) {
            Some(parity) => {
                self.sender.repair_elsewhere(seq);
                self.send_parity(now, parity, out);
                true
            }
            None => false,
        }
    }

    /// A data frame arrived: keep it for rebuilding, and deliver what it
    /// completes.
    pub(super) fn fec_on_data(&mut self, now: Instant, path: PathId, seq32: u32, payload: &[u8]) {
        let rebuilt = self.fec.rx.on_data(now, seq32, payload);
        self.deliver_rebuilt(now, path, rebuilt);
    }

    /// A parity frame arrived on `path`.
    pub(super) fn fec_on_parity(
        &mut self,
        now: Instant,
        path: PathId,
        h: &ParityHeader,
        shard: &[u8],
    ) {
        self.counters.fec_parity_received += 1;
        let rebuilt = self.fec.rx.on_parity(now, h, shard);
        self.deliver_rebuilt(now, path, rebuilt);
    }

    fn deliver_rebuilt(&mut self, now: Instant, path: PathId, rebuilt: Vec<(u64, Vec<u8>)>) {
        for (seq, pkt) in rebuilt {
            self.counters.fec_rebuilt += 1;
            let len = pkt.len();
            self.receiver.handle_rebuilt(now, path, seq, len, pkt);
        }
    }

    /// When the encoder next closes a block without another packet.
    pub(super) fn fec_poll_timeout(&self) -> Option<Instant> {
        self.fec.tx.poll_timeout()
    }
}
