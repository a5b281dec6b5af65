//! Per-path pacing queues of the sender: with `SenderConfig::pacing`, a
//! path with a rate estimate is fed no faster than that rate, so that the
//! deep queue EDPF needs sits here, where its length is known exactly,
//! rather than in a bottleneck buffer of about one bandwidth-delay product.

use super::{slot, Paced, Sender, Transmit};
use crate::path::{PathId, MAX_PATHS};
use crate::sched::SendQueues;
use crate::time::{Duration, Instant};

/// Relative one-way delay of each path slot (`Pet::relative_delays`).
pub(super) type Delays = [Option<Duration>; MAX_PATHS];

impl<P> Sender<P> {
    /// The paths' relative one-way delays (`Pet::relative_delays`): what
    /// the pacing bound and the placement of copies are given as an
    /// argument, computed once per decision.
    pub(super) fn relative_delays(&self) -> Delays {
        crate::sched::Pet::relative_delays(&self.paths)
    }

    /// The usable paths' rate estimates together (bits per second; zero
    /// before any estimate).
    pub(super) fn usable_rate_bps(&self) -> f64 {
        self.paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.bw.estimate_bps())
            .sum()
    }

    /// The pacing queues as the scheduler is given them: on each path the
    /// sender paces (a pacing rate and a bandwidth estimate for the
    /// scheduler), when its queue is free (`now` if it has never queued).
    /// Computed for each decision, since it moves with every packet.
    pub(super) fn send_queues(&self, now: Instant) -> SendQueues {
        let mut queues = SendQueues::UNPACED;
        if self.cfg.pacing {
            for p in &self.paths {
                let s = slot(p.id);
                let paced = self.pacing_rate(s).is_some() && p.bw.estimate_bps().is_some();
                queues.set(
                    p.id,
                    paced.then(|| self.per_path[s].pacer_free.unwrap_or(now)),
                );
            }
        }
        queues
    }

    /// Counts `bytes` sent on `path` outside the data stream (feedback,
    /// keepalives) against its pacer, so that data plus the rest stays
    /// below the path's rate.
    ///
    /// A paced path whose pacer has queued no data yet is charged from
    /// `now`: a thin near path that PET gives little data can still be
    /// given a burst of repair copies, and uncharged they all counted as
    /// leaving at once (see [`Sender::resend`]).
    pub fn charge_pacer(&mut self, now: Instant, path: PathId, bytes: usize) {
        let s = slot(path);
        let Some(rate) = self.pacing_rate(s) else {
            return;
        };
        let free = self.per_path[s].pacer_free.unwrap_or(now);
        let gap = crate::time::tx_time(bytes as u32, rate);
        self.per_path[s].pacer_free = Some(free.max(now) + gap);
    }

    /// Releases the next paced packet that is due at `now` (earliest
    /// release time first) with its payload, or `None`. Call until `None` whenever
    /// `poll_timeout` is due and after `send_paced` queued a packet.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(Transmit, P)> {
        let s = (0..MAX_PATHS)
            .filter_map(|s| Some((s, self.per_path[s].paced.front()?.release_at)))
            .filter(|&(_, t)| t <= now)
            .min_by_key(|&(_, t)| t)?
            .0;
        let p = self.per_path[s].paced.pop_front()?;
        let late = now.saturating_since(p.release_at);
        let allowance = self.catch_up_allowance(s);
        if late > allowance
            && self.per_path[s].pacer_free.is_some()
            && self.pacing_rate(s).is_some()
        {
            self.slip_pacer(s, late - allowance);
        }
        // Timers and delay samples count from when the packet really left,
        // the original's own too (`Sender::late_original` measures from it).
        if let Some(r) = self.record_mut(p.tx.seq) {
            r.sent_at = now;
            if r.attempts == 0 {
                r.first_sent_at = now;
            }
        }
        Some((p.tx, p.payload))
    }

    /// How far behind its schedule path slot `s`'s pacer may catch up: a
    /// quarter of the path's smallest round trip (at least
    /// [`MIN_CATCH_UP`]; [`UNMEASURED_CATCH_UP`] before the first sample).
    ///
    /// A packet leaves late when the sending process did not run at its
    /// release time (a busy machine). Every packet whose time passed
    /// meanwhile is due at once, and because the pacing rate is the
    /// path's own rate (`pacing_gain` 0.995), a burst sent to catch up
    /// becomes a queue at the bottleneck that drains only at the half
    /// percent the pacer leaves free: one late wake-up after another
    /// stacks into the buffer until it overflows. On `lab/far.toml` with
    /// both CPUs busy, the client released more than half its packets over
    /// 2 ms late, by up to 30-110 ms a second; the near path's one-BDP
    /// buffer (40 ms) sat 20-45 kB full and dropped 77 packets in 50 s,
    /// the inner CUBIC's window stayed at 80-150 packets, short of the
    /// roughly 275 the far path needs (280 ms further away), and the far
    /// path carried 0.1 % of the bytes instead of 40 %. So the pacer
    /// catches up by at most this much (a burst of a quarter of a
    /// bandwidth-delay product, which the buffer of a path of any depth
    /// worth pacing holds) and the rest of its schedule slips: the
    /// bottleneck idles for the part of a stall beyond the allowance
    /// instead of dropping what the stall piled up. Linux's fq pacing
    /// likewise limits how much of a late packet's delay it makes up.
    pub(super) fn catch_up_allowance(&self, s: usize) -> Duration {
        self.paths
            .iter()
            .find(|p| slot(p.id) == s)
            .and_then(|p| p.rtt.min_rtt())
            .map_or(UNMEASURED_CATCH_UP, |rtt| (rtt / 4).max(MIN_CATCH_UP))
    }

    /// Moves the rest of path slot `s`'s pacing schedule `by` later: its
    /// queued packets, the instant its pacer is free and the release time
    /// of its open pair's first packet (its partner leaves with it).
    /// Costs one pass over the path's queue, and happens only when a
    /// packet left more than [`Sender::catch_up_allowance`] late.
    fn slip_pacer(&mut self, s: usize, by: Duration) {
        for q in self.per_path[s].paced.iter_mut() {
            q.release_at += by;
        }
        if let Some(free) = self.per_path[s].pacer_free.as_mut() {
            *free += by;
        }
        if let Some((_, t)) = self.per_path[s].last_release.as_mut() {
            *t += by;
        }
        self.stats.pacing_slips += 1;
        self.stats.pacing_slip_ns += by.as_nanos() as u64;
    }

    /// Puts repair copy `tx` (`len` bytes) in path slot `s`'s pacing queue
    /// ahead of the data, behind the copies already there (and behind the
    /// second packet of a pair whose first has left: the two must reach
    /// the bottleneck together). It takes the release time of the packet
    /// it goes before (the pacer's next free time if none), and that
    /// packet and everything behind it, the pacer's free time included,
    /// move one service time of the copy at `rate` later: the schedule
    /// the copy would have met had it been queued first. Returns the
    /// copy's release time.
    pub(super) fn queue_ahead_of_data(
        &mut self,
        now: Instant,
        s: usize,
        tx: Transmit,
        len: u32,
        rate: f64,
        payload: P,
    ) -> Instant {
        use crate::wire::DataFlags;
        let ahead = |q: &Paced<P>| {
            q.tx.header.flags.has(DataFlags::REPAIR)
                || q.tx.header.flags.has(DataFlags::PAIR_SECOND)
        };
        let ps = &mut self.per_path[s];
        let k = ps.paced.iter().take_while(|q| ahead(q)).count();
        let free = ps.pacer_free.unwrap_or(now).max(now);
        let at = ps.paced.get(k).map_or(free, |q| q.release_at).max(now);
        let gap = crate::time::tx_time(len, rate);
        let behind = ps.paced.get(k).map(|q| q.tx.seq);
        for q in ps.paced.iter_mut().skip(k) {
            q.release_at += gap;
            // The last packet queued moved: a partner sent after it
            // still leaves right behind it.
            if let Some((last, t)) = ps.last_release.as_mut() {
                if *last == q.tx.seq {
                    *t = q.release_at;
                }
            }
        }
        ps.pacer_free = Some(free.max(at) + gap);
        ps.paced.insert(
            k,
            Paced {
                tx,
                release_at: at,
                payload,
            },
        );
        // In send order on the path: before the data it goes ahead of.
        self.insert_unacked_before(tx.path, tx.seq, behind);
        self.stats.paced += 1;
        at
    }

    /// The rate `path` is paced at, `None` while it is not paced.
    pub fn path_pacing_rate(&self, path: PathId) -> Option<f64> {
        self.pacing_rate(slot(path))
    }

    /// Whether a pair of full-size packets (`SenderConfig::pacing_min_pair_len`)
    /// has measured `path`: a rate estimate from pairs of small packets
    /// alone can be far off (`sender/pace_samples.rs`).
    pub fn full_size_measured(&self, path: PathId) -> bool {
        self.per_path[slot(path)].pair_samples.median().is_some()
    }

    /// Packets waiting in pacing queues.
    pub fn paced_len(&self) -> usize {
        self.per_path.iter().map(|p| p.paced.len()).sum()
    }

    /// The rate a path is paced at: `pacing_gain` x the median of its
    /// latest full-size pair samples. Not the EWMA the scheduler uses: one
    /// pair whose packets the receiver happened to read together measured
    /// an 8 Mbit/s path at 200 Mbit/s, and an EWMA with weight 0.8 on it
    /// let the pacer dump its queue into the bottleneck buffer; the median
    /// ignores such outliers. Lower if the spacing of the path's latest
    /// arrivals shows its rate fell (`sender/spacing.rs`): the median
    /// follows a fall only once half its samples are new, and a thin
    /// path takes a second for that, while the pacer goes on filling its
    /// queue at the old rate. The spacing holds the pacer down until
    /// arrivals that keep up outnumber the stretched ones, also once the
    /// path has nothing in flight (unlike the stranded rule's
    /// `Sender::spacing_fall`): a path PET leaves after its fall carries
    /// no pairs, so its median stays the old rate, and when PET came back
    /// to it the pacer sent at that rate again. Change set 1/12 of
    /// `lab/sweep-changes.sh` (3.83 Mbit/s 94 ms away falling to 0.55
    /// beside 33.86 Mbit/s, the inner TCP paced as Linux paces): 1.6 s
    /// after the fall 40 packets went out at 3.8 Mbit/s, the resequencer
    /// held the stream behind them and the inner TCP timed out; 29.96 ->
    /// 31.88 Mbit/s, no timeout. `None` when the path is not to be
    /// paced.
    pub(super) fn pacing_rate(&self, s: usize) -> Option<f64> {
        if !self.cfg.pacing || !self.per_path[s].pace_ok {
            return None;
        }
        let mut rate = self.per_path[s].pair_samples.paced(self.cfg.pacing_gain)?;
        if let Some(spaced) = self.per_path[s].spacing.rate() {
            rate = rate.min(spaced * self.cfg.pacing_gain.max(0.01));
        }
        Some(match self.per_path[s].share.limit() {
            Some(cap) => rate.min(cap),
            None => rate,
        })
    }
}

/// Smallest catch-up allowance (see [`Sender::catch_up_allowance`]):
/// timers wake a little late on any machine, and a pacer that slipped on
/// every such wake-up would fall below its rate.
const MIN_CATCH_UP: Duration = Duration::from_millis(1);

/// Catch-up allowance of a path without a round-trip sample (one is taken
/// with its first feedback, long before it can be paced).
const UNMEASURED_CATCH_UP: Duration = Duration::from_millis(5);

/// Pair samples the pacing rate is the median of.
///
/// Why 31: a radio link that retransmits (cellular HARQ/RLC, `rlc` in a
/// lab file) delays one packet in ten by a retransmission interval and
/// delivers in sequence, which stretches about one pair in ten to a
/// fraction of the path's rate. With the median of nine, five such pairs
/// among nine (chance about 1e-3 per sample, a few times a second at
/// hundreds of pairs a second) dropped the pacing rate to a quarter for a
/// few samples; the queue the pacer then held went over its bound at once
/// and dropped a burst of the inner TCP's packets. Of 31, 16 would have
/// to be stretched (about 1e-8). A real change of rate moves the median
/// once it holds 16 samples: at 10 Mbit/s, tens of milliseconds (a path
/// that takes fewer pairs keeps only its recent ones, [`SAMPLE_MAX_AGE`]). On
/// `lab/jitter.toml` (one block in ten 8 ms late) braid-pet carried
/// 0.702-0.726 of the sum over six seeds in simulation; leaving out the
/// pairs a hold released together (`Sender::compressed_pair`) made it
/// 0.746-0.806, the median of 31 alone 0.715-0.756, both 0.908-0.914
/// (the first two measured with a build that also left such pairs out
/// before the path was paced, and did not yet leave out a pair whose
/// first packet was the late one).
pub(super) const PACING_SAMPLES: usize = 31;

/// Pair samples older than this leave the median ([`PairSamples::push`]),
/// once the newer ones number at least [`MIN_FRESH_SAMPLES`].
///
/// Why: 31 samples are tens of milliseconds of a busy path, but a thin
/// path takes a pair only when PET probes it (`probe_interval`, or a late
/// probe, `sched/pet/late.rs`), about once a second, and its samples span
/// the whole transfer: after its rate fell, the median moved only once
/// the new samples outnumbered every old one, and meanwhile the pacer fed
/// it at the old rate. Its bottleneck queue stayed full and every packet
/// PET placed there arrived hundreds of milliseconds late, holding the
/// stream in the peer's resequencer. Change set 7/12 of
/// `lab/sweep-changes.sh` (1.23 Mbit/s 5 ms away falling to 0.39 beside
/// 41 Mbit/s 48 ms away; two samples from before the fall): the pacing
/// rate reached the new rate 4.4 s after the fall, at the third sample
/// after it, with the stream stalling in bursts until then (34.46 Mbit/s
/// against 38.77 without the fall); with old samples aged out, at the
/// second, and with the path also found late sooner (`Pet::on_delivery`),
/// 1.2 s after the fall (36.03).
///
/// A path that takes fewer than 31 pairs a second now has a median of
/// fewer samples, which fewer pairs stretched by a radio link's
/// retransmission move (`PACING_SAMPLES`); the lab files, `jitter.toml`
/// among them, run identically in simulation and within their earlier
/// ranges in the lab.
const SAMPLE_MAX_AGE: Duration = Duration::from_secs(1);

/// Newest samples the median always takes, however old: so that one
/// sample never sets the rate alone (a pair stretched by a radio link's
/// retransmission, `PACING_SAMPLES`), and a path probed once a second
/// still has a median of three.
const MIN_FRESH_SAMPLES: usize = 3;

/// New pair samples a congestion cut ([`PairSamples::cut`]) stands for.
/// Nine, the window it was when cuts were tuned on the lossy lab files;
/// it is the cut's duration, not the median's breadth.
const CUT_SAMPLES: usize = 9;

/// The latest full-size pair samples of one path (bit/s) and their median,
/// computed when a sample arrives rather than for every packet sent, and
/// the cut a congestion loss put on it.
#[derive(Copy, Clone, Debug)]
pub(super) struct PairSamples {
    /// Newest at `[count % PACING_SAMPLES]`.
    samples: [f64; PACING_SAMPLES],
    /// When each sample was taken.
    taken: [Instant; PACING_SAMPLES],
    count: usize,
    median: Option<f64>,
    /// Factor on the median after a loss taken for congestion (1: none).
    cut: f64,
    /// New samples still to come before the cut is lifted.
    cut_left: usize,
}

impl Default for PairSamples {
    fn default() -> Self {
        PairSamples {
            samples: [0.0; PACING_SAMPLES],
            taken: [Instant::ZERO; PACING_SAMPLES],
            count: 0,
            median: None,
            cut: 1.0,
            cut_left: 0,
        }
    }
}

impl PairSamples {
    /// A loss the classifier takes for congestion lowers the path's rate
    /// (R-MTP §3.2) by `factor`, until [`CUT_SAMPLES`] new samples have
    /// measured the path again.
    ///
    /// Cuts do not compound: another congestion loss while a cut stands
    /// renews it at the same depth. Scaling the samples themselves at
    /// every such loss (once per round trip) took a path whose buffer
    /// held a standing queue, and whose datagrams were 4 % corrupted,
    /// towards no rate at all: the fault swarm's seed 122 made no
    /// progress for 32 s. The samples measure the path; the cut is only
    /// the response to its congestion.
    pub(super) fn cut(&mut self, factor: f64) {
        let f = if factor.is_finite() {
            factor.clamp(0.1, 1.0)
        } else {
            1.0
        };
        if f < 1.0 {
            self.cut = self.cut.min(f);
            self.cut_left = CUT_SAMPLES;
        }
    }

    /// The median of the latest samples, without any cut.
    pub(super) fn median(&self) -> Option<f64> {
        self.median
    }

    /// The median with the standing cut applied; `None` before any sample.
    pub(super) fn rate(&self) -> Option<f64> {
        self.median.map(|m| m * self.cut)
    }

    /// [`PairSamples::rate`] x `gain` (`SenderConfig::pacing_gain`): what
    /// the path is paced at when no share cap holds it lower, and where a
    /// share cap lifts.
    pub(super) fn paced(&self, gain: f64) -> Option<f64> {
        Some(self.rate()? * gain.max(0.01))
    }

    /// Takes a sample measured at `now` and recomputes the median: of the
    /// samples at most [`SAMPLE_MAX_AGE`] old, or of the newest
    /// [`MIN_FRESH_SAMPLES`] if fewer are.
    pub(super) fn push(&mut self, sample: f64, now: Instant) {
        let at = self.count % PACING_SAMPLES;
        self.samples[at] = sample;
        self.taken[at] = now;
        self.count += 1;
        let mut v = [0.0; PACING_SAMPLES];
        let mut n = 0;
        // Newest first: the newest few count however old they are.
        for k in 0..self.count.min(PACING_SAMPLES) {
            let i = (self.count - 1 - k) % PACING_SAMPLES;
            if k < MIN_FRESH_SAMPLES || now.saturating_since(self.taken[i]) <= SAMPLE_MAX_AGE {
                v[n] = self.samples[i];
                n += 1;
            }
        }
        let v = &mut v[..n];
        v.sort_by(|a, b| a.total_cmp(b));
        self.median = Some(v[n / 2]);
        if self.cut_left > 0 {
            self.cut_left -= 1;
            if self.cut_left == 0 {
                self.cut = 1.0;
            }
        }
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;

    /// A cut lowers the rate by its factor, does not compound, and is
    /// lifted once `CUT_SAMPLES` new samples have come in.
    #[test]
    fn a_congestion_cut_holds_for_a_window_of_samples_and_never_compounds() {
        let mut p = PairSamples::default();
        assert_eq!(p.rate(), None);
        for _ in 0..PACING_SAMPLES {
            p.push(10e6, Instant::ZERO);
        }
        assert_eq!(p.rate(), Some(10e6));
        for _ in 0..100 {
            p.cut(0.9);
        }
        assert_eq!(p.rate(), Some(9e6), "a hundred cuts are one");
        for _ in 0..CUT_SAMPLES - 1 {
            p.push(10e6, Instant::ZERO);
        }
        assert_eq!(p.rate(), Some(9e6));
        p.push(10e6, Instant::ZERO);
        assert_eq!(p.rate(), Some(10e6), "lifted after CUT_SAMPLES samples");
        p.cut(1.0);
        p.cut(f64::NAN);
        assert_eq!(p.rate(), Some(10e6), "no cut from 1 or NaN");
    }

    /// A radio link that retransmits one block in ten stretches about one
    /// pair in ten to a tenth of the rate; now and then several such pairs
    /// come close together. Eight low samples in a row leave the rate
    /// where it was (a median of nine fell with five), while a real change
    /// moves it once it holds more than half the window.
    #[test]
    fn a_cluster_of_stretched_pairs_does_not_move_the_rate_but_a_change_does() {
        let mut p = PairSamples::default();
        for _ in 0..PACING_SAMPLES {
            p.push(10e6, Instant::ZERO);
        }
        for _ in 0..8 {
            p.push(1e6, Instant::ZERO);
        }
        assert_eq!(p.rate(), Some(10e6), "eight stretched pairs in a row");
        let mut p = PairSamples::default();
        for _ in 0..PACING_SAMPLES {
            p.push(10e6, Instant::ZERO);
        }
        for _ in 0..PACING_SAMPLES / 2 {
            p.push(5e6, Instant::ZERO);
        }
        assert_eq!(p.rate(), Some(10e6), "not yet half the window");
        p.push(5e6, Instant::ZERO);
        assert_eq!(p.rate(), Some(5e6), "half the window and one");
    }

    /// A thin path measured once a second: its old samples leave the
    /// median after a second, so two samples at a fallen rate move it,
    /// where the full window needed sixteen; one alone does not. A busy
    /// path's samples, all recent, keep the whole window.
    #[test]
    fn old_samples_leave_the_median_of_a_path_measured_seldom() {
        let at = |ms: u64| Instant::from_millis(ms);
        let mut p = PairSamples::default();
        for k in 0..PACING_SAMPLES as u64 {
            p.push(1.2e6, at(k * 1000));
        }
        let t = PACING_SAMPLES as u64 * 1000;
        p.push(0.4e6, at(t));
        assert_eq!(p.rate(), Some(1.2e6), "one sample set the rate alone");
        p.push(0.4e6, at(t + 300));
        assert_eq!(p.rate(), Some(0.4e6), "two samples at the new rate");
        // Recent samples all count: eight low ones among 31 of a busy
        // path move nothing.
        let mut p = PairSamples::default();
        for k in 0..PACING_SAMPLES as u64 {
            p.push(10e6, at(k));
        }
        for k in 0..8 {
            p.push(1e6, at(100 + k));
        }
        assert_eq!(p.rate(), Some(10e6));
    }
}
