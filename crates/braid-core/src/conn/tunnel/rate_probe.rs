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

use super::Tunnel;
use crate::conn::link::PathLink;
use crate::conn::Outputs;
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

/// Whether an inner packet is the tunnel's filler: IP version 0 (the
/// first byte's high nibble; the tunnel sends zeros).
pub(crate) fn is_filler(packet: &[u8]) -> bool {
    packet.first().is_some_and(|b| b >> 4 == 0)
}

impl Tunnel {
    /// When path `l` is next due a probe pair, if it wants one (up,
    /// usable, without a rate estimate, short of `rate_probe_pairs` since
    /// it came up): once the tunnel is `quiet` ([`Tunnel::quiet_since`])
    /// and [`RATE_PROBE_INTERVAL`] after its last pair.
    fn rate_probe_due_at(&self, quiet: Instant, l: &PathLink) -> Option<Instant> {
        let p = self.sender.path(l.id)?;
        let wants = l.up
            && p.usable
            && p.bw.estimate_bps().is_none()
            && l.rate_probes < self.cfg.rate_probe_pairs;
        // While the client's startup hold lasts, a path whose answer can
        // come back before the hold ends is probed at once (`startup`).
        let quiet = if self.startup_probe_in_time(quiet, l) {
            quiet
        } else {
            quiet + RATE_PROBE_QUIET
        };
        wants.then(|| {
            l.rate_probe_at
                .map_or(quiet, |t| quiet.max(t + RATE_PROBE_INTERVAL))
        })
    }

    /// Sends the probe pairs that are due (see the module docs).
    pub(super) fn send_rate_probes(&mut self, now: Instant, out: &mut Outputs) {
        let Some(quiet) = self.quiet_since() else {
            return;
        };
        let due: Vec<_> = self
            .links
            .iter()
            .filter(|l| self.rate_probe_due_at(quiet, l).is_some_and(|t| now >= t))
            .map(|l| l.id)
            .collect();
        if due.is_empty() {
            return;
        }
        let filler = vec![0u8; usize::from(self.cfg.inner_mtu)];
        let info = PacketInfo {
            len: (filler.len() + crate::conn::OUTER_OVERHEAD) as u32,
            retransmit: false,
            stream: false,
        };
        for id in due {
            if let Some(l) = self.link_mut(id) {
                l.rate_probes += 1;
                l.rate_probe_at = Some(now);
            }
            for role in [PairRole::First, PairRole::Second] {
                match self
                    .sender
                    .send_rate_probe(now, id, role, &info, || filler.clone())
                {
                    SendOutcome::Transmit(tx) => {
                        self.counters.rate_probes_sent += 1;
                        self.emit_data(now, tx, &filler, out);
                    }
                    SendOutcome::Queued { .. } => self.counters.rate_probes_sent += 1,
                    SendOutcome::Dropped | SendOutcome::NoPath => break,
                }
            }
        }
        self.release_paced(now, out);
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
        let quiet = self.quiet_since()?;
        self.links
            .iter()
            .filter_map(|l| self.rate_probe_due_at(quiet, l))
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
