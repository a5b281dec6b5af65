//! Rate probes: a path that is up but has no rate estimate gets a packet
//! pair of filler while the tunnel carries nothing, so the scheduler
//! knows every path's rate when the next transfer starts.
//!
//! Why: PET learns a path's rate only from pairs of data packets
//! (PET/BMP Section V-A), and during a transfer it puts pairs only where
//! they arrive in time: a pair on a path 200 ms further than the one
//! carrying the stream holds the stream that long in the resequencer,
//! which the inner TCP, clocked by the near path, takes for a loss
//! (`PetConfig::first_flight_lateness`). So a transfer started on a fresh
//! tunnel ran on the near paths alone until the near queues were deep
//! enough, and when those were thin and the fast path far (1.5 to
//! 4.6 Mbit/s nearby beside 35 to 47 Mbit/s 150 to 290 ms away, on the
//! random sets of `lab/sweep-random.sh`), the inner TCP left slow start
//! with the near paths' window and took tens of seconds to reach the far
//! path's. On an idle tunnel a pair holds nothing.
//!
//! The tunnel probes only after it carried no inner packet either way, and
//! saw no path come up, for [`RATE_PROBE_QUIET`], and with nothing in
//! flight: a pair on a far path holds what follows it in the peer's
//! resequencer. During the client's startup hold (`startup`), which keeps
//! back whatever would follow a pair, a path is probed as soon as it is
//! up if the answer can come back before the hold ends.
//!
//! A filler packet is an inner packet of zeros: IP version 0, which no
//! packet has ([`is_filler`] checks the version nibble). It is numbered, encrypted, paired, reported, repaired
//! and resequenced like data, and the receiving tunnel drops it where it
//! would hand the packet up ([`is_filler`]; counted as
//! `Counters::rate_probe_fillers`; the sender counts them as
//! `rate_probes_sent`, not as `packets_sent`). A lost filler is repaired
//! like data. A pair costs two full-size datagrams
//! on a path, at most [`super::ConnConfig::rate_probe_pairs`] pairs each
//! time the path comes up.
//!
//! Once the client's startup hold has kept a packet back, a path too far
//! to be measured within it is probed as soon as it is up, and one the
//! hold ran out on as the hold ends, with the `SKIP` notice below,
//! whatever the tunnel carries (`Tunnel::startup_probe_now`).
//!
//! A path whose only rate estimate came from pairs of small packets (a
//! handshake's, a control connection's, a direction's TCP ACKs) counts as
//! unmeasured, and is probed at once, busy or not, with the `SKIP` notice:
//! PET already uses it at that estimate, but the sender paces no path on
//! it (`sender/pace_samples.rs`), and the estimate can be far off. Lab set
//! 7/5 of `lab/sweep-random.sh 40 7` (30.74 Mbit/s 103 ms away, 1.33 and
//! 1.81 Mbit/s about 40 ms away, 15 kB queues), downloaded without an
//! idle spell: the server measured its 1.81 Mbit/s path with small pairs
//! as it came up, and the busy probe 3 s later was the first full-size
//! pair on it. Unpaced in the download's slow start, the path took 63
//! packets in 0.5 s, its queue dropped 17, and the thin rule
//! (`sched::pet::thin`) left it out: 29.12-29.41 Mbit/s against 30.04
//! for the fast path alone; probed at once, 31.49-31.51.
//!
//! A tunnel that never idles, whose transfer started as it came up, gets
//! its probes too: a path still without an estimate [`BUSY_PROBE_AFTER`]
//! after it came up gets a filler pair while the tunnel is busy, and the
//! receiver is told at once not to wait for it (the `SKIP` notice that
//! also ends the wait for a loss given up). The pair's reports still
//! measure the path: the receiver reports every arrival before it
//! resequences. Why: with a paced inner TCP the near paths' queues stay
//! short, and PET gives a far path its first pairs only once they are as
//! long as the delay difference (`Pet::arrives_in_time`). Random set
//! 2027/25 of `lab/sweep-random.sh` (32.2 Mbit/s 228 ms away beside 1.43
//! Mbit/s 23 ms away), its transfer started as the tunnel came up: the
//! far path had no estimate after 15 s, and the transfer ran on the thin
//! path at 1.31 Mbit/s, against 28.58 for TCP alone on the far one.
//!
//! A path not up yet when the client's startup hold keeps its first
//! packet gets its pair at once, before it is up
//! (`Tunnel::probe_paths_coming_up`): its keepalive left with the
//! handshake, so the pair's answer comes back about when the path comes
//! up, a round trip sooner than a pair sent then, and the hold can wait
//! for paths 230-300 ms away that it could not before.

use super::{Role, Tunnel};
use crate::conn::link::PathLink;
use crate::conn::Outputs;
use crate::path::PathId;
use crate::sched::{PacketInfo, PairRole};
use crate::sender::SendOutcome;
use crate::time::{Duration, Instant};

/// How long the tunnel must have carried no inner packet, either way, and
/// seen no path come up, before it probes: a pair on a far path holds
/// whatever follows it in the peer's resequencer, so it goes only while
/// nothing is likely to follow (a direction that carries only TCP ACKs is
/// idle between them, and a tunnel that has just come up is likely to
/// carry what it was brought up for).
pub(crate) const RATE_PROBE_QUIET: Duration = Duration::from_millis(500);

/// Least time between two probe pairs on one path: their feedback comes
/// back within a round trip, and a pair whose sample was refused (the two
/// packets were not spaced by the bottleneck) is tried again after it.
pub(crate) const RATE_PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// How long a path may be up without a rate estimate before it gets a
/// probe pair while the tunnel is busy: longer than PET's own first pairs
/// usually take to measure it. At 1 s the static sweeps that idle 3 s
/// first (`lab/sweep-random.sh`, seeds 7, 11, 2027, 4242, 99) lost up to
/// 10 % on sets with a far lossy path (99/20: 23.99 -> 21.57 Mbit/s),
/// which filler measured before its data pairs did; at 3 s they are as
/// they were (4989.9 -> 4990.0 in all), and the sweeps whose transfers
/// start as the tunnel comes up (seeds 7, 2027, 99, `IDLE=0`) go 2709.0
/// -> 2732.2, set 2027/25 1.31 -> 13.82.
pub(crate) const BUSY_PROBE_AFTER: Duration = Duration::from_secs(3);

/// Whether an inner packet is the tunnel's filler: IP version 0 (the
/// first byte's high nibble; the tunnel sends zeros).
pub(crate) fn is_filler(packet: &[u8]) -> bool {
    packet.first().is_some_and(|b| b >> 4 == 0)
}

impl Tunnel {
    /// When path `l` is next due a probe pair, if it wants one (up,
    /// usable, without a rate estimate or with one from small pairs only,
    /// short of `rate_probe_pairs` since it came up), and whether the
    /// tunnel is busy then: once the tunnel is `quiet`
    /// ([`Tunnel::quiet_since`]); while it is not, with a session,
    /// [`BUSY_PROBE_AFTER`] after the path came up, or at once for a path
    /// measured by small pairs only; either way [`RATE_PROBE_INTERVAL`]
    /// after its last pair.
    fn rate_probe_due_at(&self, quiet: Option<Instant>, l: &PathLink) -> Option<(Instant, bool)> {
        let p = self.sender.path(l.id)?;
        // An estimate from pairs of small packets alone does not count:
        // such a path is probed as it comes up (below).
        let small_only = p.bw.estimate_bps().is_some() && !self.sender.full_size_measured(l.id);
        let wants = l.up
            && p.usable
            && (p.bw.estimate_bps().is_none() || small_only)
            && l.rate_probes < self.cfg.rate_probe_pairs;
        if !wants {
            return None;
        }
        let usual = match quiet {
            // While the client's startup hold lasts, a path whose answer
            // can come back before the hold ends is probed at once
            // (`startup`).
            Some(q) if self.startup_probe_in_time(q, l) => Some((q, false)),
            Some(q) => Some((q + RATE_PROBE_QUIET, false)),
            None => self
                .sessions
                .current()
                .and(l.up_at)
                .map(|up| (up + BUSY_PROBE_AFTER, true)),
        };
        // Once the client's hold has kept a packet back, at once
        // (`Tunnel::startup_probe_now`). The earlier of the two, the
        // usual one at the same instant.
        let early = self.startup_probe_now(l).map(|t| (t, true));
        // A path measured by small pairs alone, at once, busy or not: PET
        // already uses it at that estimate (module docs).
        let small = small_only.then_some(l.up_at).flatten().map(|t| (t, true));
        let (from, busy) = usual.into_iter().chain(early).chain(small).min()?;
        let at = l
            .rate_probe_at
            .map_or(from, |t| from.max(t + RATE_PROBE_INTERVAL));
        Some((at, busy))
    }

    /// Sends the probe pairs that are due (see the module docs).
    pub(super) fn send_rate_probes(&mut self, now: Instant, out: &mut Outputs) {
        let quiet = self.quiet_since();
        let due: Vec<_> = self
            .links
            .iter()
            .filter_map(|l| {
                let (at, busy) = self.rate_probe_due_at(quiet, l)?;
                (now >= at).then_some((l.id, busy))
            })
            .collect();
        self.send_probe_pairs(now, &due, out);
    }

    /// Client, as the startup hold keeps its first packet (a
    /// connection's opening, `startup`): a filler pair on each path that
    /// is not up yet and has no rate estimate, at once, so that the pair's
    /// reports come back about when the path comes up (its keepalive left
    /// with the handshake) instead of a round trip after it. Always with
    /// the `SKIP` notice: the hold may end, and data follow, before the
    /// pair arrives; if data ends it before the answer, the pair measures
    /// nothing (`Tunnel::startup_note_early_pairs`). Nothing is sent for a
    /// tunnel whose first packet is data, nor after an idle spell (every
    /// path is up and measured by then).
    ///
    /// Why: a far path comes up a round trip of its own after the
    /// handshake, and was measured only a round trip after that; the
    /// startup hold cannot wait two round trips of a path 300 ms away
    /// (its budget is the inner TCP's first timeout less the near round
    /// trip), so the SYN went with the far path unmeasured, the first
    /// flight on the near paths set the inner TCP's smallest round trip,
    /// and the near rule (`sched::pet::near`) then moved the data to the
    /// far path, whose round trip HyStart took for a queue: slow start
    /// ended at about 40 packets. Random set 2027/8 of
    /// `lab/sweep-random.sh` (44.9 Mbit/s 300 ms away beside 6.98 Mbit/s
    /// 9 ms away), its transfer opening with a SYN as the tunnel came up:
    /// 13.9 Mbit/s in 15 s against 35.1 for the far path alone; 46.2 with
    /// the early pair (README, "Inner header compression", the sweeps
    /// with `--handshake`).
    pub(crate) fn probe_paths_coming_up(&mut self, now: Instant, out: &mut Outputs) {
        if self.role != Role::Client
            || self.cfg.rate_probe_pairs == 0
            || self.sessions.current().is_none()
            || !self.startup_armed()
        {
            return;
        }
        let due: Vec<_> = self
            .links
            .iter()
            .filter(|l| !l.up && l.rate_probes == 0)
            .filter(|l| {
                self.sender
                    .path(l.id)
                    .is_some_and(|p| p.bw.estimate_bps().is_none())
            })
            .map(|l| (l.id, true))
            .collect();
        let firsts = self.send_probe_pairs(now, &due, out);
        self.startup_note_early_pairs(firsts);
    }

    /// A filler pair on each of `due`'s paths; `true` beside a path: data
    /// may follow, so the receiver is told not to wait for the pair.
    /// Returns the numbers of the pairs' first packets.
    fn send_probe_pairs(
        &mut self,
        now: Instant,
        due: &[(PathId, bool)],
        out: &mut Outputs,
    ) -> Vec<u64> {
        let mut firsts = Vec::new();
        if due.is_empty() {
            return firsts;
        }
        let filler = vec![0u8; usize::from(self.cfg.inner_mtu)];
        let info = PacketInfo {
            len: (filler.len() + crate::conn::OUTER_OVERHEAD) as u32,
            retransmit: false,
            stream: false,
        };
        let mut skip = false;
        for &(id, busy) in due {
            if let Some(l) = self.link_mut(id) {
                l.rate_probes += 1;
                l.rate_probe_at = Some(now);
            }
            for role in [PairRole::First, PairRole::Second] {
                let seq = match self
                    .sender
                    .send_rate_probe(now, id, role, &info, || filler.clone())
                {
                    SendOutcome::Transmit(tx) => {
                        self.counters.rate_probes_sent += 1;
                        let seq = tx.seq;
                        self.emit_data(now, tx, &filler, out);
                        seq
                    }
                    SendOutcome::Queued { seq, .. } => {
                        self.counters.rate_probes_sent += 1;
                        seq
                    }
                    SendOutcome::Dropped | SendOutcome::NoPath => break,
                };
                if role == PairRole::First {
                    firsts.push(seq);
                }
                if busy {
                    // Data follows: the receiver must not hold it for this.
                    self.sender.skip_notice(seq);
                    skip = true;
                }
            }
        }
        self.release_paced(now, out);
        if skip {
            self.send_repairs(now, out);
        }
        firsts
    }

    /// Since when the tunnel has carried nothing and seen no path come
    /// up (`None` while it cannot probe: no session, no path up yet, or
    /// packets in flight). Probes go [`RATE_PROBE_QUIET`] after it, or at
    /// once during the startup hold.
    fn quiet_since(&self) -> Option<Instant> {
        if self.sessions.current().is_none() || !self.sender.is_idle() {
            return None;
        }
        self.quiet_from
    }

    /// When a probe pair next falls due, if one may (for `poll_timeout`).
    pub(super) fn rate_probe_timeout(&self) -> Option<Instant> {
        let quiet = self.quiet_since();
        self.links
            .iter()
            .filter_map(|l| self.rate_probe_due_at(quiet, l).map(|(at, _)| at))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_no_ip_packet() {
        assert!(is_filler(&[0u8; 1400]));
        assert!(!is_filler(&[0x45, 0, 0, 20]));
        assert!(!is_filler(&[0x60, 0, 0, 0]));
        assert!(!is_filler(&[]));
    }
}
