//! Which pair samples pace a path: whether the path is paced at all
//! (`PathSender::pace_ok`), and which samples enter the median it is
//! paced at (`PairSamples`).
//!
//! A path is paced once a pair of full-size packets (at least
//! `SenderConfig::pacing_min_pair_len`) has measured it; every such
//! sample enters the median. A pair of small packets (TCP ACKs, a
//! control connection's messages) can measure a path far under its rate
//! (the lab's downlink once read an 8 Mbit/s path as 1.7 Mbit/s), so it
//! never enters the median, and on most paths it stops the pacing until
//! the next full-size pair: ACKs need no pacing, and pacing them at such
//! a rate would only delay them.
//!
//! A thin path ([`THIN_PACING_SHARE`]) stays paced through small
//! samples, and a small sample under its median enters it, so that a
//! fall still shows. Why: unpaced, a thin path takes what EDPF gives it
//! at once, and next to a far, fast path EDPF fills it with up to the
//! delay difference (`sched::pet::near`), more than a small buffer holds.
//! Lab set 7/5 of `lab/sweep-random.sh 40 7` (30.74 Mbit/s 103 ms away,
//! 1.33 and 1.81 Mbit/s about 40 ms away with 15 kB queues), no idle: a
//! pair of small packets left the 1.81 Mbit/s path unpaced during the
//! inner TCP's slow start, it took 56 packets in 0.28 s (2.4 Mbit/s), its
//! queue dropped 17, and the thin rule (`sched::pet::thin`) left it out
//! for the rest of the run: 29.11-29.25 Mbit/s against 29.67 for the fast
//! path alone; paced, 31.69. Pacing every path through small samples
//! (a build made for the measurement) cost the lab's `jitter.toml`, whose
//! pair samples scatter with the radio retransmissions, 10-16 %
//! (15.31-16.58 against 18.32 Mbit/s); its paths are not thin, and keep
//! the rule above. Without small samples below the median, a thin path
//! whose rate fell stayed paced at its old rate: change set 7/12 of
//! `lab/sweep-changes.sh` (1.23 Mbit/s falling to 0.39 beside 41 Mbit/s)
//! went from 36.91 to 30.51 Mbit/s, below its fast path alone (34.22);
//! with them, 36.34.

use super::Sender;

/// A path whose full-size pair median is under this share of the usable
/// paths' rate estimates together is thin for pacing (module docs): the
/// share under which PET also counts a nearer path as far as the fastest
/// (`PetConfig::thin_near_share`).
pub(super) const THIN_PACING_SHARE: f64 = 0.15;

impl<P> Sender<P> {
    /// Takes a pair sample of `sample` bit/s, from a pair whose second
    /// packet was `len` bytes, for path slot `s`'s pacing (module docs).
    pub(super) fn take_pace_sample(
        &mut self,
        s: usize,
        sample: f64,
        len: u32,
        now: crate::time::Instant,
    ) {
        if len >= self.cfg.pacing_min_pair_len {
            let ps = &mut self.per_path[s];
            ps.pace_ok = true;
            ps.pair_samples.push(sample, now);
            return;
        }
        let keep = self.per_path[s].pace_ok && self.thin_for_pacing(s);
        let ps = &mut self.per_path[s];
        if !keep {
            ps.pace_ok = false;
        } else if ps.pair_samples.median().is_some_and(|m| sample < m) {
            ps.pair_samples.push(sample, now);
        }
    }

    /// Whether path slot `s` is thin for pacing: its full-size pair
    /// median under [`THIN_PACING_SHARE`] of the usable paths' rate
    /// estimates together.
    fn thin_for_pacing(&self, s: usize) -> bool {
        let Some(median) = self.per_path[s].pair_samples.median() else {
            return false;
        };
        median < THIN_PACING_SHARE * self.usable_rate_bps()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::paced_arq_config;
    use super::*;
    use crate::path::{PathId, PathParams};
    use crate::sched::RoundRobin;
    use crate::time::Instant;

    /// Two paths measured by full-size pairs at `rates` bit/s.
    fn bond(rates: [f64; 2]) -> Sender {
        let mut s = Sender::new(paced_arq_config(), Box::new(RoundRobin::default()));
        for (i, &r) in rates.iter().enumerate() {
            s.add_path(PathId(i as u8), PathParams::default());
            let p = s
                .paths
                .iter_mut()
                .find(|p| p.id == PathId(i as u8))
                .unwrap();
            p.bw.on_pair(1500, crate::time::tx_time(1500, r));
            s.take_pace_sample(i, r, 1500, Instant::ZERO);
        }
        s
    }

    /// A small pair stops the pacing of a path that is not thin, and of a
    /// thin one only leaves it paced; neither enters the median above
    /// it, and a thin path's small sample under it moves it down.
    #[test]
    fn a_small_pair_leaves_only_a_thin_path_paced() {
        let mut s = bond([1.8e6, 30e6]);
        let gain = s.cfg.pacing_gain;
        assert!(s.pacing_rate(0).is_some() && s.pacing_rate(1).is_some());
        // ACK pairs: far under both rates.
        for k in 1..=3 {
            s.take_pace_sample(1, 5e6, 80, Instant::from_millis(k));
            s.take_pace_sample(0, 3e6, 80, Instant::from_millis(k));
        }
        assert_eq!(s.pacing_rate(1), None, "the fast path is not thin");
        let thin = s.pacing_rate(0).expect("the thin path stays paced");
        assert!((thin - 1.8e6 * gain).abs() < 1.0, "{thin}");
        // The thin path falls: small samples under its median count.
        for k in 4..=40 {
            s.take_pace_sample(0, 0.4e6, 80, Instant::from_millis(k));
        }
        let fell = s.pacing_rate(0).expect("paced");
        assert!((fell - 0.4e6 * gain).abs() < 1.0, "{fell}");
        // A full-size pair paces the fast path again.
        s.take_pace_sample(1, 30e6, 1500, Instant::from_millis(50));
        assert!(s.pacing_rate(1).is_some());
    }
}
