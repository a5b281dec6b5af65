//! The data sender: ns-2 `Agent/TCP/Newreno`, optionally with SACK.
//!
//! State follows ns-2's names translated to "next expected" ACK semantics:
//!
//! | here        | ns-2 (tcp.h)          | meaning                                   |
//! |-------------|-----------------------|-------------------------------------------|
//! | `snd_una`   | `highest_ack_ + 1`    | oldest unacknowledged packet              |
//! | `snd_nxt`   | `t_seqno_`            | next packet `send_much` will transmit     |
//! | `snd_max`   | `maxseq_ + 1`         | one past the highest packet ever sent     |
//! | `cwnd`      | `cwnd_`               | congestion window, packets (fractional)   |
//! | `dupwnd`    | `dupwnd_`             | fast-recovery inflation, packets          |
//! | `recover`   | `recover_ + 1`        | `snd_max` when the last recovery started  |
//!
//! `snd_nxt` can fall below `snd_max`: after a timeout ns-2 goes back N and
//! retransmits from `snd_una`.
//!
//! Where this model knowingly differs from ns-2 2.1b9a/2.35 defaults:
//! - ssthresh on loss is max(FlightSize/2, 2) with FlightSize =
//!   `snd_nxt - snd_una` (RFC 5681 eq. (4)); ns-2 halves `window()`. The two
//!   agree whenever the sender is window-limited, which a bulk FTP source is.
//! - Entering fast recovery sets cwnd = ssthresh + 3 even when ssthresh was
//!   raised to its floor of 2 (ns-2 sets `cwnd_` to the unfloored half).
//! - Leaving fast recovery sets cwnd = ssthresh explicitly (RFC 6582 step
//!   3); ns-2 keeps `cwnd_`, which equals ssthresh unless partial-ACK
//!   deflation ate into it.
//! - `max_burst` bounds everything sent in response to one ACK, the
//!   partial-ACK retransmission included, also during fast recovery (ns-2
//!   NewReno uses a burst of 2 there and does not count the retransmission).
//! - RTT samples count clock ticks without ns-2's random `boot_time_`
//!   phase, so runs are deterministic without a random source.

use std::collections::VecDeque;

use braid_core::time::{Duration, Instant};

use super::bitring::BitRing;
use super::cubic::Cubic;
use super::rto::RtoEstimator;
use super::{Ack, Segment, TcpConfig};

mod newreno;
mod pacing;
mod prism;
mod rack;
mod reorder;
mod sack;
mod spurious_rto;

use sack::Scoreboard;

/// Counters and a snapshot of the congestion state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpSenderStats {
    /// Data packets handed to the network, retransmissions included
    /// (ns-2 `ndatapack_`).
    pub segments_sent: u64,
    /// Packets sent that had been sent before (ns-2 `nrexmitpack_`).
    pub retransmits: u64,
    /// Duplicate ACKs received (ACK equal to `snd_una` with data
    /// outstanding).
    pub dupacks: u64,
    /// Fast-retransmit episodes entered (not counting NewReno's
    /// partial-ACK retransmissions).
    pub fast_retransmits: u64,
    /// Retransmission-timer expiries with data outstanding.
    pub timeouts: u64,
    /// Window reductions for ECN-Echo (RFC 3168 Section 6.1.2).
    pub ecn_reductions: u64,
    /// TCP-PRISM: ACKs carrying a NACK acted on.
    pub nacks: u64,
    /// Recoveries undone as spurious (Linux reordering response).
    pub undos: u64,
    /// Timeouts undone as spurious (`TcpConfig::rto_undo`).
    pub rto_undos: u64,
    /// Packets cumulatively acknowledged.
    pub packets_acked: u64,
    /// Congestion window now, packets.
    pub cwnd: f64,
    /// Slow-start threshold now, packets.
    pub ssthresh: u64,
    /// Timeout that would be armed now (backoff included).
    pub rto: Duration,
    /// Current RTO backoff multiplier (1 = not backed off).
    pub backoff: u32,
    /// Smoothed RTT, once sampled.
    pub srtt: Option<Duration>,
}

/// TCP data sender; see the module documentation.
///
/// Plain data in, plain data out: every call that may transmit appends the
/// packets to `out` (which the caller reuses), and the caller owns the
/// clock, waking the sender at [`Self::poll_timeout`].
#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    flow: u32,
    /// Packets the application will ever hand over (u64::MAX = infinite
    /// FTP source, ns-2 `TCP_MAXSEQ`).
    total: u64,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    cwnd: f64,
    ssthresh: u64,
    dupwnd: u64,
    dupacks: u64,
    recover: u64,
    /// A congestion response happened at least once; until then fast
    /// retransmit is always allowed (ns-2 special-cases a loss of the very
    /// first packets with `bugfix_ss_`).
    had_congestion: bool,
    /// In fast recovery (ns-2 `last_cwnd_action_ == CWND_ACTION_DUPACK`).
    in_recovery: bool,
    rto: RtoEstimator,
    rtx_deadline: Option<Instant>,
    /// The one packet being timed (ns-2 `rtt_seq_`, `rtt_ts_`).
    timed: Option<(u64, Instant)>,
    sb: Option<Scoreboard>,
    /// CUBIC's state when it is the congestion controller.
    cubic: Option<Box<Cubic>>,
    /// Latest transmission time of every packet from `sent_base` on, and
    /// whether it was retransmitted (Karn), for per-ACK RTT samples.
    sent_at: VecDeque<(Instant, bool)>,
    sent_base: u64,
    /// ECN: `snd_max` at the last reduction for ECE. Another reduction
    /// needs an ECE on an ACK *beyond* it, one that acknowledges a packet
    /// sent after the reduction (once per window of data; ns-2
    /// `TcpAgent::ecn`: `seqno > recover_`). The ACK of exactly this point
    /// answers the last packet sent before the reduction, which the
    /// receiver got before the CWR packet, so its ECE still echoes the
    /// mark already answered. And CWR to set on the next new packet.
    ecn_recover: u64,
    cwr_pending: bool,
    /// TCP-PRISM: `snd_max` at the last timeout. A NACK naming only packets
    /// sent before it retransmits but does not reduce the window again: the
    /// timeout already answered that congestion.
    rto_recover: u64,
    /// Linux's reordering metric, packets (0 until reordering is seen).
    reordering: u64,
    /// The current recovery's state before it began, while it may be undone.
    undo: Option<reorder::Undo>,
    /// The current loss episode's state before its first timeout, while
    /// it may be undone (`TcpConfig::rto_undo`).
    rto_undo: Option<reorder::Undo>,
    /// With `TcpConfig::pacing`: when the next new packet may leave.
    pace_next: Option<Instant>,
    /// RACK (`TcpConfig::rack`): the latest transmission (time, then
    /// sequence number) among the packets known delivered, and that
    /// packet's round trip.
    rack_xmit: Option<(Instant, u64)>,
    rack_rtt: Duration,
    stats: TcpSenderStats,
}

impl TcpSender {
    /// A sender for `flow` that will transfer `total_packets` packets, or
    /// forever if `None`. Allocates the SACK scoreboard (two bits per
    /// packet of `max_cwnd_pkts`, rounded up to a power of two) when SACK is
    /// on; nothing is allocated afterwards.
    pub fn new(cfg: TcpConfig, flow: u32, total_packets: Option<u64>) -> Self {
        let cfg = cfg.sanitized();
        let rto = RtoEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.tick,
            cfg.max_backoff,
        )
        .with_min_rto_on_variation(cfg.min_rto_on_variation);
        let sb = cfg.sack.then(|| Scoreboard {
            sacked: BitRing::new(u64::from(cfg.max_cwnd_pkts)),
            retx: BitRing::new(u64::from(cfg.max_cwnd_pkts)),
            high_rxt: 0,
            high_sacked: 0,
            partial_lost: 0,
        });
        TcpSender {
            flow,
            total: total_packets.unwrap_or(u64::MAX),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: f64::from(cfg.init_cwnd_pkts),
            ssthresh: u64::from(cfg.init_ssthresh_pkts),
            dupwnd: 0,
            dupacks: 0,
            recover: 0,
            had_congestion: false,
            in_recovery: false,
            rto,
            rtx_deadline: None,
            timed: None,
            sb,
            cubic: (cfg.congestion == super::Congestion::Cubic).then(Box::default),
            sent_at: VecDeque::new(),
            sent_base: 0,
            ecn_recover: 0,
            cwr_pending: false,
            rto_recover: 0,
            reordering: 0,
            undo: None,
            rto_undo: None,
            pace_next: None,
            rack_xmit: None,
            rack_rtt: Duration::ZERO,
            stats: TcpSenderStats::default(),
            cfg,
        }
    }

    /// Opens the connection: sends the initial window (at most `max_burst`
    /// packets, as ns-2's `sendmsg` calls `send_much` with `maxburst_`).
    /// There is no handshake; ns-2's one-way TCP has none either.
    pub fn start(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let budget = self.burst_budget();
        self.send_much(now, out, budget);
    }

    /// Processes one ACK (ns-2 `NewRenoTcpAgent::recv`) and appends what it
    /// clocks out to `out`.
    pub fn on_ack(&mut self, now: Instant, ack: &Ack, out: &mut Vec<Segment>) {
        if ack.flow != self.flow || ack.ack > self.snd_max {
            return; // not ours, or acknowledges data never sent
        }
        let a = ack.ack;
        let first_out = out.len();
        if self.cfg.ecn && ack.ece && !self.in_recovery && a > self.ecn_recover {
            // RFC 3168 Section 6.1.2: halve (CUBIC: β) as for a loss, at
            // most once per window, retransmit nothing, say CWR.
            self.ecn_recover = self.snd_max;
            self.ssthresh = self.loss_ssthresh();
            self.cwnd = self.ssthresh as f64;
            self.cwr_pending = true;
            self.stats.ecn_reductions += 1;
        }
        if self.cfg.rack {
            self.rack_advance(now, ack);
        }
        if self.sb.is_some() {
            self.note_reordering(ack);
            self.update_scoreboard(ack);
        }
        if self.cfg.prism && ack.nack.n > 0 {
            self.prism_nack(now, &ack.nack, out);
        }
        self.try_undo(ack);
        self.try_undo_rto(ack);
        if a > self.snd_una {
            self.stats.packets_acked += a - self.snd_una;
            self.rtt_sample_per_ack(now, a, ack.tsecr);
            if self.in_recovery && a < self.recover {
                self.partial_ack(now, a, out);
            } else {
                if self.in_recovery {
                    self.exit_recovery();
                }
                self.new_ack(now, a);
            }
        } else if a == self.snd_una {
            if self.snd_max == self.snd_una {
                return; // nothing outstanding: not a duplicate (RFC 5681 Section 2)
            }
            self.stats.dupacks += 1;
            self.dupacks += 1;
            if self.sb.is_some() {
                self.sack_dupack(now, a, out);
            } else {
                self.newreno_dupack(now, a, out);
            }
        } else {
            return; // stale: ns-2 sends nothing on an invalid ACK
        }
        if self.cfg.rack {
            self.rack(now, out);
        }
        let budget = self.burst_budget().saturating_sub(out.len() - first_out);
        if self.in_recovery && self.sb.is_some() {
            self.sack_send(now, out, budget);
        } else if self.dupacks == 0 || self.dupacks >= self.dupthresh() {
            // Nothing on the first dupthresh-1 duplicates (no limited
            // transmit; ns-2 since 2001 sends one on each, `singledup_`:
            // module doc, known differences).
            self.send_much(now, out, budget);
        }
    }

    /// Retransmission timer (ns-2 `RenoTcpAgent::timeout`); a no-op unless
    /// the deadline from [`Self::poll_timeout`] has been reached.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Segment>) {
        if self.paced_send_at().is_some_and(|t| t <= now) {
            let budget = self.burst_budget();
            self.send_much(now, out, budget);
        }
        match self.rtx_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        self.rtx_deadline = None;
        if self.snd_una == self.snd_max {
            return;
        }
        self.stats.timeouts += 1;
        self.arm_rto_undo(now);
        // RFC 5681 eq. (4), RFC 6582 Section 3.2 step 1 timeout branch: halve
        // what is in flight. A timeout of a retransmission the timer
        // already sent (the timer still backed off: nothing new was
        // acknowledged with a sample since) holds ssthresh (RFC 5681
        // Section 3.1's note after eq. (4); Linux's `tcp_enter_loss`
        // recomputes it only while `icsk_retransmits` is 0). ns-2 halves
        // again, window()/2 of the one retransmission in flight, and left
        // ssthresh at 2: change set 2/20 of `lab/sweep-changes.sh 40 2`
        // (12.29 Mbit/s 172 ms away dark for 0.6 s, beside 2.7 Mbit/s 8 ms
        // away) then grew its window by a packet a round trip for the last
        // 5 s of the run, where ssthresh held at 356 lets slow start
        // restore it.
        if self.rto.backoff() <= 1 {
            self.ssthresh = self.loss_ssthresh();
        }
        self.cwnd = 1.0; // RFC 5681 loss window, ns-2 wnd_restart_
        self.dupwnd = 0;
        self.dupacks = 0;
        self.in_recovery = false;
        self.undo = None;
        // ns-2 bugfix: no fast retransmit until everything sent before the
        // timeout is acknowledged (RFC 6582 Section 3.2 step 1, RFC 6675
        // Section 5.1).
        self.recover = self.snd_max;
        self.rto_recover = self.snd_max;
        self.had_congestion = true;
        self.rto.back_off(); // RFC 6298 (5.5)
        self.rtx_deadline = Some(now + self.rto.rto()); // (5.6)
        self.snd_nxt = self.snd_una; // go back N (ns-2 reset_rtx_timer(0, 1))
        self.timed = None; // Karn: nothing in flight may be timed now
        if let Some(sb) = self.sb.as_mut() {
            sb.retx.clear_range(self.snd_una, self.snd_max);
            sb.high_rxt = self.snd_una;
            sb.partial_lost = 0;
        }
        let budget = self.burst_budget();
        self.send_much(now, out, budget);
    }

    /// When [`Self::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.rtx_deadline, self.paced_send_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn stats(&self) -> TcpSenderStats {
        let mut s = self.stats;
        s.cwnd = self.cwnd;
        s.ssthresh = self.ssthresh;
        s.rto = self.rto.rto();
        s.srtt = self.rto.srtt();
        s.backoff = self.rto.backoff();
        s
    }

    /// A finite transfer has been fully acknowledged.
    pub fn is_done(&self) -> bool {
        self.snd_una >= self.total
    }

    pub fn flow(&self) -> u32 {
        self.flow
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// In fast recovery (NewReno or SACK).
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Oldest unacknowledged packet.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// One past the highest packet sent.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// Usable window (ns-2 `RenoTcpAgent::window`): the congestion window
    /// plus the fast-recovery inflation, capped at the receiver window.
    pub fn window(&self) -> u64 {
        ((self.cwnd as u64) + self.dupwnd).min(u64::from(self.cfg.max_cwnd_pkts))
    }

    // ----- internals -------------------------------------------------------

    fn burst_budget(&self) -> usize {
        match self.cfg.max_burst {
            0 => usize::MAX,
            b => b as usize,
        }
    }

    /// max(FlightSize / 2, 2), FlightSize counted from `snd_nxt` (ns-2's
    /// `t_seqno_ - highest_ack_ - 1`).
    fn half_flight(&self) -> u64 {
        ((self.snd_nxt - self.snd_una) / 2).max(2)
    }

    /// ns-2 "bugfix" (`bug_fix_`, careful variant of RFC 6582 Section 3.2
    /// step 1 / Section 4.1): duplicate ACKs that do not cover everything
    /// outstanding when the last congestion response began belong to that
    /// episode and must not trigger another. ns-2 requires
    /// `highest_ack_ > recover_`, i.e. `ack > recover` here.
    fn fast_retransmit_allowed(&self, a: u64) -> bool {
        !self.had_congestion || a > self.recover
    }

    /// Transmits `seq` (ns-2 `TcpAgent::output`).
    fn output(&mut self, now: Instant, seq: u64, out: &mut Vec<Segment>) {
        let nothing_outstanding = self.snd_una == self.snd_max;
        let retransmit = seq < self.snd_max;
        if retransmit {
            self.stats.retransmits += 1;
            if let Some(sb) = self.sb.as_mut() {
                sb.retx.set(seq);
            }
            if let Some(e) = seq
                .checked_sub(self.sent_base)
                .and_then(|i| self.sent_at.get_mut(i as usize))
            {
                *e = (now, true);
            }
        } else {
            if self.cubic.is_some() || self.cfg.timestamps {
                if self.sent_at.is_empty() {
                    self.sent_base = seq;
                }
                self.sent_at.push_back((now, false));
            }
            self.snd_max = seq + 1;
            // Time one new packet per RTT; retransmissions are never timed
            // (Karn's algorithm, RFC 6298 Section 3).
            if self.timed.is_none() {
                self.timed = Some((seq, now));
            }
        }
        self.stats.segments_sent += 1;
        out.push(Segment {
            flow: self.flow,
            seq,
            payload_bytes: self.cfg.mss_bytes,
            wire_bytes: self.cfg.wire_bytes(),
            retransmit,
            ect: self.cfg.ecn,
            ce: false,
            cwr: !retransmit && std::mem::take(&mut self.cwr_pending),
            tsval: if self.cfg.timestamps {
                (now.as_nanos() / 1_000_000) as u32
            } else {
                0
            },
        });
        // RFC 6298 (5.1): start the timer if it is not running.
        if self.rtx_deadline.is_none() || nothing_outstanding {
            self.rtx_deadline = Some(now + self.rto.rto());
        }
    }

    /// Sends what the window allows, at most `budget` packets (ns-2
    /// `send_much` with `maxburst`). With SACK, a go-back-N after a timeout
    /// skips packets the receiver already holds.
    fn send_much(&mut self, now: Instant, out: &mut Vec<Segment>, budget: usize) {
        let win = self.window();
        let mut sent = 0;
        while sent < budget && self.snd_nxt < self.snd_una + win && self.snd_nxt < self.total {
            let seq = self.snd_nxt;
            if seq < self.snd_max && self.sb.as_ref().is_some_and(|sb| sb.sacked.get(seq)) {
                self.snd_nxt += 1;
                continue;
            }
            if !self.pace_allows(now) {
                break;
            }
            self.output(now, seq, out);
            self.pace_sent(now);
            self.snd_nxt += 1;
            sent += 1;
        }
    }

    /// RFC 6298 (5.2)/(5.3) as ns-2 `newtimer`: restart the timer while data
    /// is outstanding, stop it otherwise.
    fn restart_timer(&mut self, now: Instant) {
        self.rtx_deadline = (self.snd_max > self.snd_una).then(|| now + self.rto.rto());
    }

    /// ns-2 `opencwnd` (`wnd_option_` 1): +1 per ACK in slow start, +1/cwnd
    /// per ACK in congestion avoidance (RFC 5681 eq. (3)), both per ACK and
    /// not per packet acknowledged, then the window ceiling. With CUBIC:
    /// slow start grows by the packets acknowledged (Linux
    /// `tcp_slow_start`), congestion avoidance follows RFC 9438.
    fn open_cwnd(&mut self, now: Instant, acked: u64) {
        let ss = self.ssthresh as f64;
        if let Some(c) = self.cubic.as_mut() {
            if self.cwnd < ss {
                self.cwnd = (self.cwnd + acked as f64).min(ss.max(self.cwnd + 1.0));
            } else {
                self.cwnd = c.on_ack_ca(now, self.cwnd, acked);
            }
        } else if self.cwnd < ss {
            self.cwnd += 1.0;
        } else {
            self.cwnd += 1.0 / self.cwnd;
        }
        self.cwnd = self.cwnd.min(f64::from(self.cfg.max_cwnd_pkts));
    }

    /// ssthresh after a congestion event: max(FlightSize/2, 2) for NewReno
    /// (RFC 5681 eq. (4)), max(β cwnd, 2) for CUBIC (RFC 9438 Section 4.6).
    fn loss_ssthresh(&mut self) -> u64 {
        match self.cubic.as_mut() {
            Some(c) => (c.on_congestion(self.cwnd) as u64).max(2),
            None => self.half_flight(),
        }
    }

    /// With CUBIC or timestamps: forgets the send times below `a`. With
    /// timestamps the RTO estimator gets an RTT sample per ACK as Linux
    /// takes it (`tcp_clean_rtx_queue`, `tcp_ack_update_rtt`): from the
    /// oldest packet `a` newly covers if none of them was retransmitted
    /// (Karn, RFC 6298 Section 3), else from the echoed timestamp `tsecr`
    /// (RFC 7323 Section 4); a sample ends the backoff. Timing the ACK
    /// from the latest transmission of what it covers instead, as this
    /// model once did, times an original's ACK from its retransmission:
    /// after a spurious timeout the samples shrink below the path's RTT,
    /// the RTO with them, and every RTT brings another spurious timeout
    /// (found by the swarm, seed 1585: one 1 Mbit/s path of 280 ms RTT
    /// measured at 104 ms, 966 timeouts in 300 s). HyStart gets the RTT
    /// of the newest packet covered unless it was retransmitted.
    fn rtt_sample_per_ack(&mut self, now: Instant, a: u64, tsecr: Option<u32>) {
        if self.cubic.is_none() && !self.cfg.timestamps {
            return;
        }
        let mut last = None;
        let mut first: Option<Instant> = None;
        let mut retransmitted = false;
        while self.sent_base < a {
            let Some(e) = self.sent_at.pop_front() else {
                self.sent_base = a;
                break;
            };
            self.sent_base += 1;
            first.get_or_insert(e.0);
            retransmitted |= e.1;
            last = Some(e);
        }
        if self.cfg.timestamps {
            let sent = match (first, retransmitted, tsecr) {
                (Some(t), false, _) => Some(t),
                (_, true, Some(ms)) => Some(Instant::from_millis(u64::from(ms))),
                _ => None,
            };
            if let Some(t) = sent.filter(|&t| t <= now) {
                self.rto.reset_backoff();
                self.rto.sample(t, now);
            }
        }
        let Some((sent, false)) = last else { return };
        let slow_start = self.cfg.hystart && !self.in_recovery && self.cwnd < self.ssthresh as f64;
        let (cwnd, snd_max) = (self.cwnd, self.snd_max);
        if let Some(c) = self.cubic.as_mut() {
            if c.on_rtt_sample(now - sent, slow_start, cwnd, a, snd_max) {
                self.ssthresh = (cwnd as u64).max(2);
            }
        }
    }

    /// CUBIC's state, if it is the congestion controller.
    pub fn cubic(&self) -> Option<&Cubic> {
        self.cubic.as_deref()
    }

    /// An ACK of new data outside recovery (ns-2 `newack` +
    /// `recv_newack_helper`).
    fn new_ack(&mut self, now: Instant, a: u64) {
        self.dupacks = 0;
        let acked = a - self.snd_una;
        self.snd_una = a;
        self.snd_nxt = self.snd_nxt.max(a);
        if let Some((seq, sent)) = self.timed {
            if a > seq {
                // A valid (Karn) sample ends the backoff (ns-2 resets
                // t_backoff_ exactly here).
                self.rto.reset_backoff();
                self.rto.sample(sent, now);
                self.timed = None;
            }
        }
        self.open_cwnd(now, acked);
        self.restart_timer(now);
    }
}

/// Packet `seq`'s entry in `sent_at`, which starts at `sent_base`: its
/// latest transmission time and whether it was a retransmission. A
/// function of the two fields, not of the sender, so that it can be read
/// while the scoreboard is borrowed mutably.
fn sent_entry(
    sent_at: &VecDeque<(Instant, bool)>,
    sent_base: u64,
    seq: u64,
) -> Option<(Instant, bool)> {
    seq.checked_sub(sent_base)
        .and_then(|i| sent_at.get(i as usize))
        .copied()
}
