//! Feedback from the receiver (the paper's SIG-ACK): each entry reports
//! one packet's arrival time. It acknowledges the packet, declares the
//! packets sent before it on the same path lost (paths are FIFO), and
//! feeds the path's estimators: RTT, relative one-way delay, the
//! scheduler's delivery prediction, and the packet-pair bandwidth sample
//! (PET/BMP Section V-A).

use super::{slot, Fate, LossCause, Record, Sender};
use crate::path::PathId;
use crate::sched::PairRole;
use crate::time::{tx_time, Duration, Instant};
use crate::wire::{self, FeedbackEntry};

/// How long a path's delay must stay above its base before the base
/// follows it, at least; the path's smoothed RTT if that is longer (a
/// pacing sender only, [`crate::path::OwdEstimator::follow_rise`]).
const RISE_HOLD: Duration = Duration::from_millis(200);

/// The smallest rise of a path's delay the base follows before the
/// minimum filter's window: more than the jitter of a radio link that
/// retransmits (`lab/jitter.toml`, `lab/cellular.toml`: tens of ms).
const RISE_MIN: Duration = Duration::from_millis(50);

/// How much sooner than the path's smallest one-way delay an arrival must
/// come after a copy left to be an earlier copy's (`Sender::earlier_copy`):
/// more than the base estimate's error, a packet's serialisation on a thin
/// path and a timer's granularity.
const EARLY_MARGIN: Duration = Duration::from_millis(20);

impl<P> Sender<P> {
    /// Processes the entries of one feedback frame.
    pub fn handle_feedback(
        &mut self,
        now: Instant,
        entries: impl IntoIterator<Item = FeedbackEntry>,
    ) {
        for e in entries {
            let seq = self.entry_seq(&e);
            self.on_entry(now, None, seq, e);
        }
    }

    /// Processes the entries of one feedback frame that reports arrivals
    /// on `path` (the frame's path field). With repair a packet may have
    /// copies on two paths; an entry from another path than the packet's
    /// latest copy acknowledges it without applying the FIFO rule or
    /// taking delay samples on the wrong path.
    pub fn handle_feedback_on(
        &mut self,
        now: Instant,
        path: PathId,
        entries: impl IntoIterator<Item = FeedbackEntry>,
    ) {
        let mut newest = None;
        for e in entries {
            let seq = self.entry_seq(&e);
            newest = newest.max(Some(seq));
            self.on_entry(now, Some(path), seq, e);
        }
        if let Some(seq) = newest {
            self.quiet_reported(now, path, seq);
        }
        self.rescue_stranded(now);
        self.requeue_waiting(now);
    }

    /// The full sequence number an entry's 32-bit one stands for.
    fn entry_seq(&self, e: &FeedbackEntry) -> u64 {
        wire::seq::extend(e.seq, self.next_seq.saturating_sub(1))
    }

    /// Whether an arrival at `rx_ns` (receiver clock) on `path` came
    /// sooner after `sent_at` than the path has ever carried a packet: by
    /// more than [`EARLY_MARGIN`] under its smallest one-way delay. A
    /// report of a repaired packet whose latest copy left at `sent_at` is
    /// then an earlier copy's.
    ///
    /// Why: a repair on the path its original took makes a report from
    /// there ambiguous, and the sender took it for the repair's. Change
    /// set 7/24 of `lab/sweep-changes.sh` (1.18 Mbit/s 7 ms away moving to
    /// 198 ms, beside 19.6 Mbit/s 145 ms away): a packet that had arrived
    /// at 7.098 s was given up at 7.298 (its report came the slow way) and
    /// repaired on its own path; its report then placed the arrival behind
    /// the 20 packets sent on the path in between, and the FIFO rule
    /// declared all of them lost: with nothing dropped, 39 losses, 30 of
    /// them by the FIFO rule. Read as the original's, the report declares
    /// nothing: 33 losses, 6 by the FIFO rule; the set goes 17.97 ->
    /// 18.03 Mbit/s, and the change sweeps 5034.1 -> 5040.7 (four sets
    /// better by more than 3 %, up to 25.68 -> 29.19 on 3/20; 7/8 5.12 ->
    /// 4.78). The loss the repair was for stays counted: the 27 timeouts
    /// of packets sent just after the step keep the path's loss estimate
    /// at 0.37 and the thin rule (`PetConfig::thin_share`) keeps it out.
    /// Taking such losses back from the estimate gained nothing on the
    /// sweeps (5040.4) and moved PRISM's baselines in
    /// `crates/braid-sim/tests/prism.rs` past their bounds.
    fn earlier_copy(&self, path: PathId, sent_at: Instant, rx_ns: u64) -> bool {
        let Some(base) = self.path(path).and_then(|p| p.owd.base_raw_ns()) else {
            return false;
        };
        let raw = (rx_ns as i64).saturating_sub(sent_at.as_nanos() as i64);
        raw < base.saturating_sub(EARLY_MARGIN.as_nanos() as i64)
    }

    /// Processes entry `e`, whose full sequence number is `seq`.
    fn on_entry(&mut self, now: Instant, on: Option<PathId>, seq: u64, e: FeedbackEntry) {
        let Some(rec) = self.record_mut(seq).copied() else {
            self.stats.feedback_unmatched += 1;
            return;
        };
        if seq >= self.next_seq {
            self.stats.feedback_unmatched += 1;
            return;
        }
        if let Some(on) = on {
            self.per_path[slot(on)]
                .spacing
                .on_report(e.rx_time_ns, rec.len);
        }
        // Every report from the latest copy's path counts towards the
        // copies sent there; the one that completes the count is the
        // latest copy's own (`Record::report_here`).
        let latest_copy =
            on == Some(rec.path) && self.record_mut(seq).is_some_and(|r| r.report_here());
        if matches!(rec.fate, Fate::Acked { .. }) {
            // Acknowledged by a repair already; the original may still
            // measure its path, and so may the last of several copies on
            // one path.
            if let Some(on) = on {
                self.late_original(now, on, seq, rec, e.rx_time_ns);
            }
            if latest_copy {
                self.stats.latest_copy_samples += 1;
                self.measure_copy(now, rec.path, rec.sent_at, rec.len, e.rx_time_ns);
            }
            self.stats.feedback_unmatched += 1;
            return;
        }
        if let Some(on) = on.filter(|&p| p != rec.path) {
            self.ack_other_copy(now, on, seq, rec, e.rx_time_ns);
            return;
        }
        let was_in_flight = rec.fate == Fate::InFlight;
        // A repair on the path its original took: a report that arrived
        // before the repair could have is the original's (`earlier_copy`).
        let earlier = was_in_flight
            && rec.attempts > 0
            && self.earlier_copy(rec.path, rec.sent_at, e.rx_time_ns);
        if earlier {
            // The FIFO rule would read the arrival at the repair's place
            // on the path and declare lost everything sent between the
            // two copies. The loss the repair was for was none.
            if let Some(i) = self.position(rec.path, seq) {
                self.per_path[slot(rec.path)].unacked.remove(i);
            }
            self.stats.spurious_losses += 1;
        } else if was_in_flight {
            // Paths are FIFO: anything sent before this on the same path and
            // still unreported was lost (PRISM §5.2.3, threshold 1).
            if let Some(i) = self.position(rec.path, seq) {
                self.declare_lost_front(rec.path, i, now, LossCause::Fifo);
                self.per_path[slot(rec.path)].unacked.pop_front();
            }
        } else {
            // Given up too early (the path is slower than its timeout
            // assumed): the report still measures the path.
            self.stats.spurious_losses += 1;
        }
        if let Some(r) = self.record_mut(seq) {
            r.fate = Fate::Acked {
                rx_ns: e.rx_time_ns,
            };
        }
        self.stats.acked += 1;
        self.rack_on_delivered(rec.sent_at);

        let Some(p) = self.paths.iter_mut().find(|p| p.id == rec.path) else {
            return;
        };
        if was_in_flight {
            p.in_flight_packets = p.in_flight_packets.saturating_sub(1);
            p.in_flight_bytes = p.in_flight_bytes.saturating_sub(rec.len as u64);
            p.loss.on_delivered(1);
        }
        p.acked_packets += 1;
        p.acked_bytes += rec.len as u64;
        p.last_feedback = Some(now);
        if rec.attempts > 0 {
            // Karn: a repaired packet's report may belong to either copy.
            return;
        }
        self.per_path[slot(rec.path)]
            .spacing
            .on_arrival(seq, rec.sent_at, e.rx_time_ns, rec.len);
        self.measure_path(now, rec.path, rec.sent_at, rec.len, e.rx_time_ns);
        if let Some(eta) = rec.eta_ns {
            // Arrival in the scheduler's frame (relative delays): receiver
            // clock minus the smallest base offset of any path.
            if let Some(min_base) = self.paths.iter().filter_map(|q| q.owd.base_raw_ns()).min() {
                let p = self
                    .paths
                    .iter()
                    .find(|p| p.id == rec.path)
                    .expect("found above");
                self.sched
                    .on_delivery(p, eta, (e.rx_time_ns as i64).saturating_sub(min_base));
            }
        }

        // Packet pair: dispersion of the two arrivals (PET/BMP Section V-A).
        let Some(partner) = rec.partner else { return };
        let Some(other) = self.record_mut(partner).copied() else {
            return;
        };
        let Fate::Acked { rx_ns: other_rx } = other.fate else {
            return;
        };
        let (first, second, rx1, rx2) = if rec.pair == PairRole::Second {
            (other, rec, other_rx, e.rx_time_ns)
        } else {
            (rec, other, e.rx_time_ns, other_rx)
        };
        if rx2 <= rx1 {
            return;
        }
        let dispersion = Duration::from_nanos(rx2 - rx1);
        let tx_gap = second.sent_at.saturating_since(first.sent_at);
        // Only a gap the bottleneck created measures it: if the sender
        // spaced the packets more than they arrived, they never queued together.
        if dispersion <= tx_gap
            || tx_gap.as_secs_f64() > dispersion.as_secs_f64() * self.cfg.pair_gap_fraction
            || self.compressed_pair(&first, &second, rx1, dispersion)
        {
            return;
        }
        let p = self
            .paths
            .iter_mut()
            .find(|p| p.id == rec.path)
            .expect("path checked above");
        if let Some(sample) = p.bw.on_pair(second.len, dispersion) {
            self.stats.pair_samples += 1;
            self.take_pace_sample(slot(rec.path), sample, second.len, now);
        }
    }

    /// Takes the report of one copy of a repaired packet, whose copy is
    /// known (`Sender::late_original`, `Record::report_here`): it left on
    /// `path` at `sent_at` and arrived at `rx_ns`. The path has reported,
    /// and the report is a sound sample of it.
    pub(super) fn measure_copy(
        &mut self,
        now: Instant,
        path: PathId,
        sent_at: Instant,
        len: u32,
        rx_ns: u64,
    ) {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == path) {
            p.last_feedback = Some(now);
        }
        self.measure_path(now, path, sent_at, len, rx_ns);
    }

    /// Takes one packet's report as a sample of `path`: its round trip
    /// (RFC 6298), the share's growth, and its relative one-way delay with
    /// the queueing-delay classifier. `sent_at` is when the reported copy
    /// left on `path`, `rx_ns` when it arrived (receiver clock).
    pub(super) fn measure_path(
        &mut self,
        now: Instant,
        path: PathId,
        sent_at: Instant,
        len: u32,
        rx_ns: u64,
    ) {
        // Only a pacing sender's samples show the path's delay rather than
        // its own backlog (`OwdEstimator::follow_rise`).
        let paced = self.cfg.pacing;
        let Some(p) = self.paths.iter_mut().find(|p| p.id == path) else {
            return;
        };
        p.rtt.update(now.saturating_since(sent_at));
        let ps = &mut self.per_path[slot(path)];
        let capacity = ps.pair_samples.paced(self.cfg.pacing_gain);
        ps.share.grow(now, p.rtt.srtt(), capacity);
        // Relative one-way delay: receiver clock minus sender clock, less
        // this packet's own serialisation so that D_l is the wireline part.
        let ser =
            p.bw.estimate_bps()
                .map(|r| tx_time(len, r).as_nanos() as i64)
                .unwrap_or(0);
        // Saturating: `rx_ns` is the peer's clock, any 64-bit value.
        let raw = (rx_ns as i64)
            .saturating_sub(sent_at.as_nanos() as i64)
            .saturating_sub(ser);
        if paced
            && p.owd
                .follow_rise(now, raw, p.rtt.srtt().max(RISE_HOLD), RISE_MIN)
        {
            self.stats.delay_rises += 1;
            // Its old smallest round trip no longer describes it.
            p.rtt.restart_min();
        }
        p.owd.on_sample(now, raw);
        let queueing = p.owd.queueing_delay();
        self.per_path[slot(path)]
            .classifier
            .on_queueing_sample(now, queueing);
    }

    /// Whether the pair whose first packet is `first` (arrived at `rx1`)
    /// came in a burst released after a hold: the packet sent before it
    /// on the path arrived less than a quarter of their departure gap
    /// before it. A bottleneck spaces the packets it serves by their
    /// service time and never brings two closer than they left it, so
    /// without a hold after the bottleneck that gap is at least about half
    /// the departure gap (paced pairs leave two service times apart; an
    /// unpaced burst leaves no gap to compare). A radio link that
    /// retransmits a block and delivers in sequence (cellular HARQ/RLC)
    /// holds the packets behind it and releases them together, microseconds
    /// apart: a pair among them measures the device, not the path. In the
    /// lab (`lab/jitter.toml`: one block in ten retransmitted 8 ms later)
    /// such pairs made up most samples at times, the pacing median rose to
    /// hundreds of Mbit/s on a 12 Mbit/s path, and the pacer dumped its
    /// queue into the path's buffer. Unknown when the earlier packet's
    /// arrival is not reported (lost, or not yet): the pair counts.
    ///
    /// Only on a paced path: the pacer sends at the path's rate, so the
    /// bottleneck holds no standing queue of the tunnel's to drain. An
    /// unpaced sender (the papers' model) relies on the bottleneck's
    /// queue, which, draining, serves packets that left far apart one
    /// service time apart: a sound pair then fails the test (PRISM Fig 6's
    /// PET-BMP at 100 ms fell from 0.97 to 0.12 of the sum with it).
    ///
    /// The first packet may itself be the one retransmitted: then it came
    /// late, the second queued behind it and followed it out microseconds
    /// later. So a pair whose dispersion is under a sixteenth of the second
    /// packet's service time at the median of the path's samples counts as
    /// released together too. A sixteenth, not more: a bound near the
    /// service time would keep a path whose median had fallen low from
    /// ever measuring its real rate again (a quarter did, on one seed of
    /// `lab/jitter.toml` in simulation: 0.61 of the sum).
    pub(super) fn compressed_pair(
        &self,
        first: &Record,
        second: &Record,
        rx1: u64,
        dispersion: Duration,
    ) -> bool {
        let s = slot(first.path);
        let (Some(_), Some(median)) = (self.pacing_rate(s), self.per_path[s].pair_samples.median())
        else {
            return false;
        };
        if dispersion < tx_time(second.len, median) / 16 {
            return true;
        }
        // The previous packet must still be the one sent on this path (a
        // repair copy re-sends a record, perhaps on another path).
        let Some(prev) = first
            .prev_on_path
            .and_then(|q| self.record(q))
            .filter(|p| p.path == first.path && p.attempts == 0)
        else {
            return false;
        };
        let Fate::Acked { rx_ns: prev_rx } = prev.fate else {
            return false;
        };
        let left = first.sent_at.saturating_since(prev.sent_at).as_nanos() as u64;
        let arrived = rx1.saturating_sub(prev_rx);
        arrived < left / 4
    }
}
