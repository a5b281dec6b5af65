//! PET's tuning ([`PetConfig`]): the paper's parameters and the
//! departures from it that the lab and the simulator showed necessary,
//! each with the measurement that called for it.

use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct PetConfig {
    /// A usable path that has not had a pair for this long gets the next
    /// one (packets sent unpaired, such as repair copies, measure nothing).
    pub probe_interval: Duration,
    /// Round-robin pairs a path gets in the initial phase before PET gives
    /// up waiting for its estimate and only probes it periodically. The
    /// paper gives no number. Every initial pair on a slow path delays
    /// in-order delivery during slow start (on a 50 kbit/s path a pair is
    /// half a second), while one pair may yield no valid sample; two is the
    /// smallest count that gets every path an estimate in our scenarios.
    pub initial_pairs: u32,
    /// A probe pair is sent only if EDPF predicts it to arrive at most this
    /// much later than on the best path. A probe that arrives later than
    /// the receiver's loss timer (BMP's 0.5 s) would be given up as lost
    /// and make TCP halve its window, so the slack is half that timer. On
    /// a path with a large delay disparity (PET/BMP Section IV's 1 s case)
    /// this means probing only while the fast paths' queues are deep.
    pub probe_slack: Duration,
    /// Before any path has a rate estimate, the first flight of a transfer
    /// pairs round robin only over paths whose known delay (from
    /// keepalives) exceeds the nearest one's by at most this much. Not in
    /// the paper. A pair on a path 280 ms further away held the stream in
    /// the resequencer for longer than the inner TCP's minimum RTO (200 ms
    /// on Linux), which timed out spuriously; half that RTO keeps any such
    /// hold short of it, while paths a few tens of milliseconds apart
    /// still all get their first pairs (and so their estimates) at once.
    pub first_flight_lateness: Duration,
    /// A packet that arrives this much later than PET predicted marks its
    /// path's estimate as due a probe pair (`Pet::note_late`). Not in the
    /// paper. In the simulated lab files a packet on a path whose rate is
    /// as estimated never arrives more than 20 ms late, save one in
    /// 36 000 on `lab/jitter.toml` (radio retransmissions) beyond 50 ms;
    /// one whose rate fell to a sixth arrives 100-270 ms late. Zero turns
    /// it off; so does `queue_correction` 0 (the papers' open-loop PET
    /// compares no prediction with its outcome).
    pub late_probe: Duration,
    /// Gain of the virtual-queue correction (0 = the paper's open-loop PET).
    /// Under fair queueing with changing cross traffic a path's share moves
    /// faster than packet-pair estimates settle, so EDPF's A_l drifts from
    /// the real queue: one base station starves while another holds the
    /// window. Each feedback compares the delivery time EDPF predicted with
    /// the measured one and moves A_l by `gain` x the part of the error not
    /// already corrected since the packet was sent.
    pub queue_correction: f64,
    /// Without a queue to pair behind, the longest gap between the two
    /// packets of a pair.
    pub max_pair_gap: Duration,
    /// Keep each path's virtual backlog within the queueing delay observed
    /// on it (see `Pet::edpf`); false = the paper's unbounded queues.
    pub queue_cap: bool,
    /// With `queue_cap`: the most virtual backlog a path may have to take a
    /// packet only because the earliest-delivery path is full (a *spill*);
    /// at least three packets' service time on that path. Not in the
    /// paper. A spill path is further away than the full one, so every
    /// packet queued on it behind the first few arrives later still and
    /// holds the whole stream in the resequencer: with a slow far path's
    /// buffer (200 ms on a 2 Mbit/s link) TCP's round trip grew to 300 ms
    /// and its window, not the paths, set the rate. A few packets keep the
    /// spill path busy; what TCP sends beyond every path's rate goes to
    /// the earliest path and overflows its buffer, the loss TCP needs to
    /// back off.
    pub spill_backlog: Duration,
    /// With `queue_cap`: a spill goes only to a path where the packet would
    /// arrive at most this much later than on the full path. Not in the
    /// paper. Every packet on a path further away than the near path's
    /// buffer holds the whole stream in the resequencer; used only now and
    /// then (when the near buffer is full) such a path added little rate
    /// but kept TCP's round trip, and with it the RTO, inflated: in the
    /// lab a 2 Mbit/s path 80 ms further away left TCP slower than the
    /// 10 Mbit/s path alone.
    pub spill_max_lateness: Duration,
    /// With `queue_cap`: EDPF compares delivery times as if no path were
    /// further than this fraction of the nearest path's buffer (its largest
    /// observed queueing delay) beyond it; <= 0 disables. Not in the paper.
    /// Eq. (1) only turns to a far path once the near path's backlog
    /// covers the delay difference, but a buffer of one bandwidth-delay
    /// product (40 ms at 10 Mbit/s) never holds the 80 ms that a 100 ms
    /// path is further away: the far path was used only in bursts, just
    /// before the near buffer overflowed, and sat idle otherwise. With the
    /// delay difference clamped, both paths stay busy (the near one with
    /// about this fraction of its buffer queued) and the resequencer hides
    /// the remaining difference. Queue bookkeeping and the virtual-queue
    /// correction keep the true delays; when no queueing has been observed
    /// on the nearest path yet, nothing is clamped. Off by default: in the
    /// lab (fast-slow, three-paths) it made no difference we could measure
    /// beyond run-to-run variation, since sporadic use of the far path is
    /// what hurts TCP (see `spill_max_lateness`).
    pub delay_horizon: f64,
    /// Packets up to this size may go on a path that has no bandwidth
    /// estimate yet, as if it were infinitely fast (EDPF then compares
    /// only delays and queues). Not in the paper. A direction that carries
    /// only TCP ACKs rarely produces a valid pair sample (its pairs leave
    /// the sender about as far apart as they arrive), so whichever path
    /// happened to get one took every ACK: the lab's downlink sent its ACKs
    /// over a 60 ms path instead of the 10 ms one. For such packets the
    /// service time hardly matters. 0 disables.
    pub small_packet_bytes: u32,
    /// A path whose rate estimate is below this share of the sum of the
    /// usable paths' estimates, while its loss rate is above `thin_loss`
    /// (smoothed, and over the recent window with some confidence:
    /// `sched::pet::thin::THIN_LOSS_Z`, a run of losses counted at most
    /// `path::loss::RUN_CAP` there) and the fastest path is far
    /// (`thin_far_rtt`), carries no
    /// new data: only its probe pairs (`probe_interval`), which keep both
    /// estimates fresh, and small packets, which PET places by delay. The
    /// sender's repairs are placed by their delivery cost, not by PET, and
    /// may still go there (a repair of a path over 200 ms away that loses
    /// packets gets a copy, `sender/repair_copy.rs`). A probe goes only
    /// where it arrives in time (`probe_slack`), so a thin path further
    /// away than the fastest one may get none and stay out until the
    /// fastest path's estimate falls. Not in the paper; it is the case Phatak et al.
    /// (Section 4) warn of, a path that holds more than it adds. Each loss
    /// on the path holds the whole stream in the resequencer until its
    /// repair arrives, and a repair that is lost too reaches the inner TCP
    /// as a loss. Measured on the random sets of `lab/sweep-random.sh`
    /// (15 s, braid-pet, Mbit/s, the thin path's share of the sum):
    /// 11/28 (1.47 Mbit/s at 2 % loss beside 46.4 Mbit/s 288 ms away, 3 %)
    /// 3.17 to 4.04, and over 60 s 24.07 to 31.84; 7/29 (1.71 Mbit/s with
    /// bursty loss beside 37.1 Mbit/s 203 ms away, 4 %) 13.78 to 16.23;
    /// 11/11 (1.86 Mbit/s at 2 % beside 35.0 Mbit/s 149 ms away, 5 %)
    /// 10.22 to 13.19. At 10 % a path adds at most a tenth of the bond,
    /// which the inner TCP loses many times over to one early loss on a far
    /// bond. The path carries data again once its smoothed loss, fed by
    /// the probes alone, falls back under `thin_loss` (one loss lifts it
    /// to at least 1/64; 72 delivered probes, about 36 s at one pair a
    /// second, bring it under 0.5 % again), or its estimate grows past the
    /// share; which is why a lone loss after many clean packets does not
    /// leave it out (`THIN_LOSS_Z`), nor an outage, one run however many
    /// packets it took (`RUN_CAP`). 0 disables.
    pub thin_share: f64,
    /// See `thin_share`: the loss rate (one loss in 200 packets) above
    /// which a thin path carries no data.
    pub thin_loss: f64,
    /// See `thin_share`: the rule applies only while the fastest path's
    /// base round trip is longer than this. What a thin path adds does not
    /// depend on the bond's round trip; what its losses cost the inner TCP
    /// grows with it (a loss that reaches it halves a window that then
    /// grows back by one packet per round trip, and every stall holds a
    /// round trip's worth of the big path's data). On the random sweeps
    /// (`lab/sweep-random.sh 40 7` and `40 11`, 15 s) the rule without this
    /// bound lifted the three sets whose fastest path was 149-288 ms away
    /// one way (7/29, 11/11 and 11/28), and cost 1-6 % on eight sets whose
    /// fastest path was 15-93 ms away, where the thin paths' losses are
    /// repaired within the resequencer's hold and cost less than the path
    /// adds. 200 ms is the hold's margin over one repair round
    /// (`reorder::REPAIR_HOLD_EXTRA`), the same bound as for repair copies.
    pub thin_far_rtt: Duration,
    /// A path nearer than the fastest path counts, for full-size packets
    /// and TCP data (`PacketInfo::stream`), as if it were as far as the
    /// fastest path (`Pet::near_raise`, whose module says why and when),
    /// and gets a probe pair only right behind a packet of the fastest
    /// path (`Pet::near_probe_waits`). Not in the paper. Without it the
    /// inner TCP's round trip grew by the delay difference as its window
    /// moved from the near paths to the fast one, which ended its slow
    /// start (HyStart) with about the near paths' window. False = plain
    /// EDPF.
    pub near_floor: bool,
    /// See `near_floor`: a nearer path counts as far as the fastest only
    /// while the fastest path's recent loss ratio
    /// (`LossEstimator::recent_ratio`) is at most this, unless it is thin
    /// (`thin_near_share`). One loss in 500 packets: a path that loses
    /// 0.5 % is above it from its first loss (within the first 200
    /// packets, on average), and a clean path's rare queue overflow is
    /// not.
    pub near_floor_loss: f64,
    /// See `near_floor`: a nearer path that is not thin counts as far as
    /// the fastest only while the fastest path's rate is at least this
    /// many times its own (the steady averages,
    /// `BandwidthEstimator::steady_bps`). Paths of about equal rate are
    /// left alone: there the lab parted from the simulator
    /// (`sched/pet/near.rs`), 4242/30 (1.04 times) 26.3 -> 16.7 Mbit/s.
    /// The bound was 1.5 while the test used the fast estimates, with
    /// which 7/16 (a lead of 1.32) at a bound of 1.25 measured 26.7-27.0
    /// Mbit/s in two lab runs of six: one odd pair took the lead under the
    /// bound for a moment. On the steady averages, 1.25: 7/16 68.8-73.2
    /// in four runs (62.8-64.3 at 1.5), 2027/28 37.5-38.2 (36.0), 99/20
    /// 20.8-22.8 (20.2-21.5), 4242/31 68.0-68.5 (65.3-70.4), 7/25 and
    /// 11/23 within 2 %. At 1.59-3.8 times (11/27, 4242/39, 11/24, 7/22,
    /// 11/18, 2027/17) it gained in both at either bound.
    pub near_lead: f64,
    /// See `near_floor`: the share of the sum of the rates (the steady
    /// averages, as every rate the near rule reads) below which a nearer
    /// path counts as far as the fastest even when
    /// the fastest path loses packets. Above `thin_share`: in the lab the
    /// estimates of a 4.64 Mbit/s path beside a 46.8 Mbit/s one (9.0 % of
    /// the sum) read 4.6 and 41.2 Mbit/s at a transfer's start, 10.0 %,
    /// and the rule did not act. 0 disables this part.
    pub thin_near_share: f64,
    /// The ramp (`sched/pet/ramp.rs`, which says why): while the rate PET
    /// places, over about the best single path's round trip, is under
    /// this share of that path's rate, paths under `ramp_path_share` of
    /// the bond carry no TCP data or full-size packets. 0 disables.
    pub ramp_share: f64,
    /// See `ramp_share`: the share of the usable paths' rates together
    /// under which a path stays out of the ramp.
    pub ramp_path_share: f64,
}

impl Default for PetConfig {
    fn default() -> Self {
        PetConfig {
            probe_interval: Duration::from_secs(1),
            initial_pairs: 2,
            probe_slack: Duration::from_millis(10),
            first_flight_lateness: Duration::from_millis(100),
            late_probe: Duration::from_millis(50),
            queue_correction: 0.5,
            max_pair_gap: Duration::from_millis(5),
            queue_cap: true,
            spill_backlog: Duration::from_millis(20),
            spill_max_lateness: Duration::from_millis(20),
            delay_horizon: 0.0,
            small_packet_bytes: crate::sched::SMALL_PACKET_BYTES,
            thin_share: 0.10,
            thin_loss: 0.005,
            thin_far_rtt: crate::reorder::REPAIR_HOLD_EXTRA,
            near_floor: true,
            near_floor_loss: 0.002,
            near_lead: 1.25,
            thin_near_share: 0.15,
            ramp_share: 0.9,
            ramp_path_share: 0.2,
        }
    }
}
