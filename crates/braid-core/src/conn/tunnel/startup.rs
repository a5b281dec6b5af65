//! The startup hold: on a tunnel that has not carried an inner packet
//! yet, the client keeps back the first connection's opening packets (a
//! TCP SYN, a DNS query: small, without TCP data) until every configured
//! path is up and has a rate estimate, for at most
//! [`crate::conn::ConnConfig::startup_hold`]; meanwhile a path is probed
//! as soon as it is up if the answer can come back in time (`rate_probe`).
//! The server, which learns of the hold only by the silence, probes its
//! downlink paths the same way from the handshake until the client's
//! first packet (or [`INITIAL_RTO_BUDGET`]), so that a download finds its
//! paths measured too.
//!
//! Why: PET places packets by each path's measured rate, and its near rule
//! (`sched::pet::near`) makes a path nearer than a clean, faster one
//! deliver as late as that one, so that the inner TCP takes the far path's
//! round trip as its smallest and its slow start runs until the whole bond
//! is full. Both need the rates before the first data packet. A transfer
//! started with the tunnel had none: a far path comes up a round trip after
//! the near one, and pairs of data go on it only once the near queues are
//! as long as the delay difference (`PetConfig::first_flight_lateness`). So
//! the inner TCP ran on the near path alone, left slow start on its queue,
//! and CUBIC took most of a minute to grow a window for the far path. Lab
//! set 2027/36 of `lab/sweep-random.sh` (46.8 Mbit/s 213 ms away beside
//! 4.6 Mbit/s 16 ms away) got 24 Mbit/s when iperf3 started with the
//! tunnel, 43-47 once the tunnel had been up for half a second after its
//! paths (`braid lab bench --wait-paths 2 --idle 0.5`), and 41.6 on the
//! far path alone.
//!
//! No packet is held so long that the inner TCP's first retransmission
//! timer could fire: it is 1 s before any round trip is measured (RFC
//! 6298 §2.1; Linux's `TCP_TIMEOUT_INIT`). A held packet goes once its
//! wait plus the nearest path's round trip (a SYN keeps its path's delay,
//! `sched::pet::near`) reaches [`INITIAL_RTO_BUDGET`]. That is also why
//! only opening packets are held: a packet of data may be given the far
//! path's delay, and a stream that starts without a handshake (the
//! simulator's TCP, a UDP flow) could not wait for a far path at all. In
//! the simulator, holding data until the far path was measured let the
//! TCP's first timer fire: a window of one and a threshold of seven, 7/37
//! at 11.8 against 50.6 Mbit/s. So the first packet of data, or a large
//! one, ends the hold, and everything held goes first.
//!
//! What it costs: the first connection over a new tunnel waits about two
//! round trips of the farthest path (up, then one probe pair measured),
//! once per tunnel; a path that never comes up costs the whole bound.
//! Nothing is lost: the held packets go, in order, as soon as the hold
//! ends, and beyond [`STARTUP_HOLD_PACKETS`] the hold ends at once. A tunnel
//! whose data plane restarts later (the server lost its state) does not
//! hold again: it may be carrying connections.

use std::collections::VecDeque;

use super::{Outputs, PathLink, Role, Tunnel};
use crate::sched::{PacketInfo, SchedulerKind};
use crate::time::{Duration, Instant};

/// The most inner packets the hold keeps: beyond it, what arrives is not
/// the opening of a few connections but traffic that should not wait.
pub(crate) const STARTUP_HOLD_PACKETS: usize = 256;

/// How long a held packet's wait plus its round trip may take: the inner
/// TCP's initial retransmission timeout (1 s) less 100 ms for the paths'
/// jitter (module docs).
pub(crate) const INITIAL_RTO_BUDGET: Duration = Duration::from_millis(900);

/// The inner packets held, and until when at the latest.
#[derive(Debug, Default)]
pub(super) struct StartupHold {
    until: Option<Instant>,
    packets: VecDeque<Vec<u8>>,
    /// When the first packet was held.
    first_held: Option<Instant>,
    /// The handshake's round trip: the path it came on is up before its
    /// first keepalive comes back, and no path's round trip is shorter.
    handshake_rtt: Duration,
    /// When the hold (client) or the probe window (server) began.
    armed_at: Option<Instant>,
    /// Server: the first path up in the window (the handshake's).
    first_up: Option<crate::path::PathId>,
    /// Client: when the hold ran out on its deadline after holding a
    /// packet ([`Tunnel::startup_probe_now`]).
    ran_out_at: Option<Instant>,
    /// Client: when a path next becomes ready by the clock alone
    /// ([`Tunnel::startup_wake_at`]).
    wake_at: Option<Instant>,
    /// Client: the early probe pairs' first packets
    /// ([`Tunnel::startup_note_early_pairs`]).
    early_pairs: Vec<u64>,
}

impl Tunnel {
    /// Client, after a handshake: starts the hold if the tunnel has never
    /// carried an inner packet and the scheduler places packets by
    /// measured rates (PET). While it lasts, a path is probed as soon as
    /// it is up if the answer comes back in time.
    pub(crate) fn arm_startup_hold(&mut self, now: Instant, handshake_rtt: Duration) {
        self.startup.handshake_rtt = handshake_rtt;
        self.arm_startup(Role::Client, now, self.cfg.startup_hold);
    }

    /// Server, on a new tunnel's handshake: opens the window in which its
    /// downlink paths are probed as soon as they are up, where the answer
    /// comes back in time: the client holds its first connection's
    /// opening meanwhile, for at most [`INITIAL_RTO_BUDGET`]. The server
    /// holds nothing; the window closes with the first inner packet either
    /// way.
    pub(crate) fn arm_startup_probes(&mut self, now: Instant) {
        let span = self.cfg.startup_hold.min(INITIAL_RTO_BUDGET);
        self.arm_startup(Role::Server, now, span);
    }

    /// Opens the hold or window for `span` on `role`'s side, if the tunnel
    /// has carried nothing, none is open yet, and PET (which places by
    /// measured rates) schedules with the hold configured.
    fn arm_startup(&mut self, role: Role, now: Instant, span: Duration) {
        let fresh = self.counters.packets_sent == 0 && self.counters.packets_delivered == 0;
        let wanted = self.role == role
            && fresh
            && self.startup.until.is_none()
            && self.cfg.scheduler == SchedulerKind::Pet
            && !self.cfg.startup_hold.is_zero();
        if wanted {
            self.startup.until = Some(now + span);
            self.startup.armed_at = Some(now);
        }
    }

    /// A path came up: the server remembers the first in its window.
    pub(super) fn startup_path_up(&mut self, id: crate::path::PathId) {
        if self.startup.until.is_some() && self.startup.first_up.is_none() {
            self.startup.first_up = Some(id);
        }
    }

    /// Server: the client's first packet arrived; the window closes.
    pub(super) fn startup_peer_started(&mut self) {
        if self.role == Role::Server {
            self.startup.until = None;
        }
    }

    /// Whether the hold is on now: armed, not timed out, and some
    /// configured path is not ready ([`Tunnel::startup_path_ready`]). (The
    /// server's window stays open until its end: it learns a path only
    /// when the path comes up.)
    pub(super) fn startup_holding(&self, now: Instant) -> bool {
        let Some(until) = self.startup_deadline() else {
            return false;
        };
        now < until
            && (self.role == Role::Server
                || self.links.iter().any(|l| !self.startup_path_ready(now, l)))
    }

    /// Client: whether path `l` is ready for the first connection: up,
    /// with this side's rate estimate, and, if it came up during the
    /// hold, with the server's about due ([`Tunnel::startup_peer_measured_at`]).
    fn startup_path_ready(&self, now: Instant, l: &PathLink) -> bool {
        l.up && self
            .sender
            .path(l.id)
            .is_some_and(|p| p.bw.estimate_bps().is_some())
            && self.startup_peer_measured_at(l).is_none_or(|t| now >= t)
    }

    /// Client: about when the server has its own rate estimate of path
    /// `l`, which came up during the hold: the server probes a path as it
    /// comes up there (`startup_probe_in_time`), when the keepalive that
    /// brought it up here, a round trip ago, reached it, half a round trip
    /// ago; the answer takes a round trip. `None` for the handshake's path
    /// (the server measures it by the first packets' pairs) and before the
    /// path's round trip is known.
    ///
    /// Why: with the client's early pair (`rate_probe`'s
    /// `probe_paths_coming_up`) the client measures the path as it comes
    /// up, half a round trip before the server does. A
    /// download whose opening the hold released then would start on the
    /// server before the server knew the far path's rate, its first
    /// flight on the near paths alone (`sched::pet::near`).
    pub(super) fn startup_peer_measured_at(&self, l: &PathLink) -> Option<Instant> {
        let armed = self.startup.armed_at?;
        let up = l.up_at.filter(|&t| t > armed)?;
        Some(up + self.measured_rtt(l)? / 2)
    }

    /// Keeps `packet` if the hold is on, has room and the packet is small
    /// without TCP data; false (the caller sends it) otherwise, after
    /// sending whatever was held before it.
    pub(super) fn startup_keep(
        &mut self,
        now: Instant,
        packet: &[u8],
        info: &PacketInfo,
        out: &mut Outputs,
    ) -> bool {
        if self.startup.until.is_none() {
            return false;
        }
        if self.role == Role::Client
            && info.keeps_delays(self.cfg.pet.small_packet_bytes)
            && self.startup_holding(now)
            && self.startup.packets.len() < STARTUP_HOLD_PACKETS
        {
            if self.startup.first_held.is_none() {
                self.startup.first_held = Some(now);
                self.probe_paths_coming_up(now, out);
            }
            self.startup.packets.push_back(packet.to_vec());
            self.counters.startup_held += 1;
            // Its own deadline may be now (the nearest path's round trip
            // close to the budget).
            if !self.startup_holding(now) {
                self.startup_release(now, out);
            }
            return true;
        }
        if self.role == Role::Client && self.startup_holding(now) {
            // Traffic that cannot wait ends the hold early: a stream that
            // starts without a handshake. The early pairs' answers would
            // switch PET's placement under its slow start
            // (`Tunnel::startup_note_early_pairs`).
            for seq in std::mem::take(&mut self.startup.early_pairs) {
                self.sender.unpair(seq);
            }
        }
        self.startup_release(now, out);
        false
    }

    /// Whether the client's hold, or the server's probe window, is open.
    pub(super) fn startup_armed(&self) -> bool {
        self.startup.until.is_some()
    }

    /// Client: the first packets of the pairs `rate_probe` sent on paths
    /// not yet up as the hold kept its first packet
    /// (`Tunnel::probe_paths_coming_up`). If traffic that cannot wait
    /// ends the hold before they are answered, they measure nothing
    /// ([`crate::sender::Sender::unpair`]): the transfer has started on
    /// the paths up, and a far path's rate arriving in its first round
    /// trips switches PET's placement under the inner TCP's slow start
    /// (`sched::pet::near`). Such a path is measured as before, once data
    /// pairs reach it in time or by the busy probe. Measured with such
    /// pairs sent at every handshake, whatever came first: a transfer
    /// that started without a handshake lost to it (`lab/geo.toml` had
    /// one inner timeout; set 11/18 of `lab/sweep-random.sh` fell from
    /// 53.1 to 33.0 Mbit/s, the effect `startup_probe_in_time` notes
    /// too), which is why they go only once the hold keeps a packet and
    /// measure nothing once data overtakes them.
    pub(super) fn startup_note_early_pairs(&mut self, firsts: Vec<u64>) {
        self.startup.early_pairs.extend(firsts);
    }

    /// Whether path `l`, up since `from`, may be probed at once: the hold
    /// is on, and the pair's answer comes back, a round trip of the path
    /// later, before it ends. A later answer would arrive during the
    /// transfer and switch PET's placement under an inner TCP that has
    /// already left slow start on the nearer paths (simulated 11/18 of
    /// `lab/sweep-random.sh`: 41.2 Mbit/s without the hold, 31.0 when
    /// its far path was probed at once and its answer came after the
    /// transfer had started).
    pub(super) fn startup_probe_in_time(&self, from: Instant, l: &PathLink) -> bool {
        let Some(deadline) = self.startup_deadline() else {
            return false;
        };
        // Server: not the first path up, the nearest. It carries the
        // first packets either way, and their pairs measure it; a filler
        // pair put ahead of them only delays them (a transfer the client
        // starts without a handshake to hold: the simulator's TCP, 99/29
        // at 10.64 against 11.44 Mbit/s).
        if self.role == Role::Server && self.startup.first_up == Some(l.id) {
            return false;
        }
        let rtt = match (self.role, self.startup.armed_at, self.measured_rtt(l)) {
            // The server learns a path's round trip only later, from its
            // own keepalives; a path that came up `d` after the handshake
            // is about 2 d farther than the handshake's path.
            (Role::Server, Some(armed), None) => from.saturating_since(armed) * 2,
            _ => self.startup_rtt(l),
        };
        from + rtt <= deadline
    }

    /// Ends the hold if it is over, sending what it kept in order.
    pub(super) fn startup_poll(&mut self, now: Instant, out: &mut Outputs) {
        if self.startup.until.is_some() && !self.startup_holding(now) {
            if self.startup.first_held.is_some() {
                self.startup.ran_out_at = Some(now);
            }
            self.startup_release(now, out);
        }
        // The next moment a path becomes ready without anything arriving
        // (`startup_peer_measured_at`), for `poll_timeout`; always later
        // than `now`, so the timer cannot spin.
        self.startup.wake_at = match (self.role, self.startup.until) {
            (Role::Client, Some(_)) => self
                .links
                .iter()
                .filter_map(|l| self.startup_peer_measured_at(l))
                .filter(|&t| t > now)
                .min(),
            _ => None,
        };
    }

    /// When the hold next needs a look without anything arriving (the
    /// client's wait for the server's estimates), for `poll_timeout`.
    pub(super) fn startup_wake_at(&self) -> Option<Instant> {
        self.startup.wake_at
    }

    /// When path `l` is to be probed regardless of the rules of
    /// `rate_probe`, with a `SKIP` notice: once the client's hold has
    /// kept a packet back, a path is probed as soon as it is up, and
    /// when the hold runs out on its deadline, every path up then that
    /// is still unmeasured is probed at once, and one that comes up
    /// later as it comes up, whatever the tunnel carries.
    ///
    /// Why: a path whose round trip is over about 0.45 s (a
    /// geostationary satellite, or a far path of 228 ms one way that came
    /// up 0.46 s after the near one) cannot be up and measured within the
    /// hold's 0.9 s, so its probe was left until the tunnel idled for
    /// [`super::rate_probe::RATE_PROBE_QUIET`] or until
    /// [`super::rate_probe::BUSY_PROBE_AFTER`]. In the lab, iperf3's
    /// control connection kept the tunnel from idling, and its transfer
    /// began 1.2 s after the hold with the far path unmeasured: set
    /// 2027/25 of `lab/sweep-random.sh` (32.2 Mbit/s 228 ms away beside
    /// 1.43 Mbit/s 23 ms away) ran its first flight on the thin path,
    /// HyStart left slow start at 29 packets on its queue, and the bond
    /// carried 15.7 Mbit/s against 28.7 on the far path alone. The
    /// connection the hold kept back is likely to carry a transfer soon,
    /// so the probe goes now, not once it has started; set 2027/8 (44.9
    /// Mbit/s 300 ms away, up 0.6 s in) had its answer 0.25 s after
    /// iperf3's transfer began when probed at the hold's end, so a path
    /// that comes up during the hold is probed as it comes up. The `SKIP`
    /// notice keeps the filler from holding what follows it in the
    /// resequencer. A hold ended by data (a transfer already under way,
    /// the simulator's TCP) or that held nothing keeps the usual rules:
    /// an answer that comes during a transfer's slow start moves PET's
    /// placement under it (`startup_probe_in_time`).
    ///
    /// A path that comes up after the hold ran out is probed as it comes
    /// up too: the hold's deadline is 0.9 s less the nearest path's round
    /// trip from the first held packet, so a far path beside a far
    /// nearest one can come up just after it. Set 11/28 of
    /// `lab/sweep-random.sh 40 11` (46.4 Mbit/s 288 ms away beside 1.47
    /// Mbit/s 182 ms away at 2 % loss): the hold ran out 0.54 s after it
    /// held the lab's first SYN, the fast path came up 0.05 s later and
    /// was probed only by the busy rule 3 s after that, iperf3's transfer
    /// began on the thin path (the inner TCP's smallest round trip 365
    /// ms), and HyStart left slow start at 51 packets when the window
    /// moved to the fast path (471 ms): 8.77-10.32 Mbit/s in four runs of
    /// six, against 31.24 on the fast path alone; probed as it came up,
    /// 31.22-33.96 in five runs.
    pub(super) fn startup_probe_now(&self, l: &PathLink) -> Option<Instant> {
        let held = self.startup.first_held?;
        let up = l.up_at?;
        match self.startup.ran_out_at {
            Some(at) => Some(up.max(at)),
            None => self.startup.until.map(|_| up.max(held)),
        }
    }

    /// Ends the hold for good and sends what it kept.
    fn startup_release(&mut self, now: Instant, out: &mut Outputs) {
        self.startup.until = None;
        let held = std::mem::take(&mut self.startup.packets);
        for p in held {
            self.send_packet(now, &p, out);
        }
    }

    /// When the hold ends at the latest: the configured bound, or the
    /// first held packet's [`INITIAL_RTO_BUDGET`] less the nearest path's
    /// round trip (module docs). Also for `poll_timeout`.
    pub(super) fn startup_deadline(&self) -> Option<Instant> {
        let until = self.startup.until?;
        let nearest = self
            .links
            .iter()
            .filter(|l| l.up)
            .map(|l| self.startup_rtt(l))
            .min()
            .unwrap_or(self.startup.handshake_rtt);
        let budget = self
            .startup
            .first_held
            .map(|t| t + INITIAL_RTO_BUDGET.saturating_sub(nearest));
        Some(budget.map_or(until, |b| b.min(until)))
    }

    /// Path `l`'s round trip as the hold sees it: the measured one, at
    /// least the handshake's, or the handshake's before any.
    fn startup_rtt(&self, l: &PathLink) -> Duration {
        let floor = self.startup.handshake_rtt;
        self.measured_rtt(l).map_or(floor, |r| r.max(floor))
    }

    /// Path `l`'s round trip from data feedback once there is any, else
    /// from keepalives (a path is measured from them first).
    fn measured_rtt(&self, l: &PathLink) -> Option<Duration> {
        self.sender
            .path(l.id)
            .filter(|p| p.rtt.has_samples())
            .map(|p| p.rtt.srtt())
            .or(l.keepalive_rtt)
    }
}
