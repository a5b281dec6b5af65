//! Loss correlated across paths (MPLOT §IV-E, Fig 8).
//!
//! MPLOT asks for `P(loss on j | loss on i) = θ^|i−j|` and generates it
//! with the method of Park, Park and Shin (correlated binary variates).
//! Taken literally this is infeasible for its own setting: with a 50 %
//! marginal loss, θ = 0.05 would demand a conditional loss far below the
//! marginal for neighbouring paths. We keep the structure that matters
//! (correlation that decays geometrically with the distance between path
//! indices, the marginal loss of every path unchanged) with a chain of
//! copies over uniforms:
//!
//! ```text
//! U_0 fresh;  U_j = U_{j−1} with probability θ, else fresh
//! ```
//!
//! Path `j` loses its packet iff `U_j < p_j` (its own loss process gives
//! `p_j`). Each `U_j` is uniform, so marginals are kept, and
//! `P(U_i = U_j) = θ^|i−j|`: the loss indicators of two paths with the
//! same `p` have correlation coefficient exactly `θ^|i−j|`, and
//! `P(loss j | loss i) = θ^|i−j| + (1 − θ^|i−j|) p`.
//!
//! Vectors are drawn per round: the k-th packet offered on each path uses
//! the k-th vector (MPLOT stripes packets over the paths in rounds). A
//! path that falls more than [`MAX_LAG`] vectors behind the busiest one
//! skips ahead, so memory is bounded.
//!
//! Counting rounds per path drifts: after a few seconds the k-th packets
//! of two paths leave far apart in time (one path's timeouts, another's
//! larger window), and correlated draws then land on packets that share
//! neither a block nor a channel state. [`CorrelatedLinks::with_slot`]
//! indexes vectors by time instead: a packet leaving at `t` uses vector
//! `⌊t / slot⌋` (or the next one its path has not used), so packets that
//! cross their channels at the same moment are the correlated ones, as
//! losses on a shared link or interfering channels would be.
//!
//! Correlated draws alone leave each path's loss *rate* (its Markov state)
//! independent of the others'; [`CorrelatedLinks::with_states`] couples
//! the states as well ([`crate::coupled`]).

use std::collections::VecDeque;

use braid_core::time::{Duration, Instant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::coupled::CoupledStates;
use crate::link::{Drop, Link, Verdict};
use crate::params::MarkovParams;

/// How many loss vectors are kept for paths that lag behind.
pub const MAX_LAG: usize = 4096;

/// Links whose loss decisions are correlated across path indices.
#[derive(Clone, Debug)]
pub struct CorrelatedLinks {
    pub links: Vec<Link>,
    theta: f64,
    rng: ChaCha8Rng,
    /// Vectors from index `base` on.
    vectors: VecDeque<Vec<f64>>,
    base: u64,
    next: Vec<u64>,
    /// Index vectors by time in slots of this length (see the module doc).
    slot: Option<Duration>,
    /// Loss states coupled across paths; the links themselves are then
    /// lossless and the loss is decided here.
    states: Option<CoupledStates>,
}

impl CorrelatedLinks {
    pub fn new(links: Vec<Link>, theta: f64, seed: u64) -> Self {
        let n = links.len();
        CorrelatedLinks {
            links,
            theta: theta.clamp(0.0, 1.0),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xc0_11e1_a7ed),
            vectors: VecDeque::new(),
            base: 0,
            next: vec![0; n],
            slot: None,
            states: None,
        }
    }

    /// The paths' loss follows `params` with its states coupled across
    /// paths by the same `θ` ([`CoupledStates`]) instead of each link's own
    /// loss process, which should then be lossless.
    pub fn with_states(mut self, params: &MarkovParams, seed: u64) -> Self {
        self.states = Some(CoupledStates::new(
            params,
            self.links.len(),
            self.theta,
            seed,
        ));
        self
    }

    /// Vectors indexed by time slots of `slot` (at least 1 µs) rather than
    /// by each path's packet count: about one packet's transmission time
    /// at the paths' rate.
    pub fn with_slot(mut self, slot: Duration) -> Self {
        self.slot = Some(slot.max(Duration::from_micros(1)));
        self
    }

    fn draw(&mut self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.links.len());
        for j in 0..self.links.len() {
            let u = if j > 0 && self.rng.gen::<f64>() < self.theta {
                v[j - 1]
            } else {
                self.rng.gen::<f64>()
            };
            v.push(u);
        }
        v
    }

    /// The next uniform of path `j` for a packet crossing at `now`.
    fn uniform(&mut self, j: usize, now: Instant) -> f64 {
        let mut k = self.next[j].max(self.base);
        if let Some(slot) = self.slot {
            let t = (now - Instant::ZERO).as_nanos() / slot.as_nanos().max(1);
            k = k.max(t as u64);
            // Far ahead of every vector kept (an idle spell): start afresh.
            if k > self.base + (self.vectors.len() + MAX_LAG) as u64 {
                self.vectors.clear();
                self.base = k;
            }
        }
        while self.base + self.vectors.len() as u64 <= k {
            let v = self.draw();
            self.vectors.push_back(v);
        }
        let u = self.vectors[(k - self.base) as usize][j];
        self.next[j] = k + 1;
        while self.vectors.len() > MAX_LAG
            || (!self.vectors.is_empty() && self.next.iter().all(|&n| n > self.base))
        {
            self.vectors.pop_front();
            self.base += 1;
        }
        u
    }

    /// Offers a packet to path `j` (see [`Link::offer`]).
    pub fn offer(&mut self, j: usize, now: Instant, ip_bytes: u64, ecn_capable: bool) -> Verdict {
        let u = self.uniform(j, now);
        if let Some(states) = self.states.as_mut() {
            if u < states.loss_at(j, now) {
                let l = &mut self.links[j];
                l.stats.offered += 1;
                l.stats.drops_loss += 1;
                return Verdict::Dropped(Drop::Loss);
            }
        }
        self.links[j].offer_with(now, ip_bytes, ecn_capable, Some(u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::LinkParams;

    fn corr(a: &[bool], b: &[bool]) -> f64 {
        let n = a.len() as f64;
        let ma = a.iter().filter(|&&x| x).count() as f64 / n;
        let mb = b.iter().filter(|&&x| x).count() as f64 / n;
        let both = a.iter().zip(b).filter(|(x, y)| **x && **y).count() as f64 / n;
        (both - ma * mb) / (ma * (1.0 - ma) * mb * (1.0 - mb)).sqrt()
    }

    #[test]
    fn correlation_decays_as_theta_to_the_distance_and_marginals_hold() {
        for theta in [0.05, 0.5, 0.99] {
            let mut p = LinkParams::new(1000.0, 0.0, u64::MAX);
            p.loss = 0.5;
            let links = (0..4).map(|i| Link::new(&p, i, Instant::ZERO)).collect();
            let mut c = CorrelatedLinks::new(links, theta, 42);
            let n = 100_000;
            let mut lost: Vec<Vec<bool>> = (0..4).map(|_| Vec::with_capacity(n)).collect();
            for k in 0..n {
                let now = Instant::from_micros(k as u64 * 100);
                for (j, l) in lost.iter_mut().enumerate() {
                    l.push(c.offer(j, now, 100, false).delivered_at().is_none());
                }
            }
            for (j, l) in lost.iter().enumerate() {
                let m = l.iter().filter(|&&x| x).count() as f64 / n as f64;
                assert!((m - 0.5).abs() < 0.01, "theta {theta} path {j} loss {m}");
            }
            for d in 1..4 {
                let r = corr(&lost[0], &lost[d]);
                let want = theta.powi(d as i32);
                assert!(
                    (r - want).abs() < 0.02,
                    "theta {theta} d {d}: {r} vs {want}"
                );
            }
        }
    }

    /// Indexed by time, packets crossing at the same moment are the
    /// correlated ones, however many packets each path sent before.
    #[test]
    fn time_slots_correlate_packets_that_cross_together() {
        let mut p = LinkParams::new(1000.0, 0.0, u64::MAX);
        p.loss = 0.5;
        let links = (0..2).map(|i| Link::new(&p, i, Instant::ZERO)).collect();
        let slot = Duration::from_micros(100);
        let mut c = CorrelatedLinks::new(links, 0.99, 7).with_slot(slot);
        // Path 1 sends 300 packets alone first: counted per path, its k-th
        // packet would be paired with path 0's (k - 300)-th.
        for k in 0..300u64 {
            c.offer(1, Instant::from_micros(k * 100), 100, false);
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for k in 300..20_300u64 {
            let now = Instant::from_micros(k * 100);
            a.push(c.offer(0, now, 100, false).delivered_at().is_none());
            b.push(c.offer(1, now, 100, false).delivered_at().is_none());
        }
        let r = corr(&a, &b);
        assert!((r - 0.99).abs() < 0.02, "{r}");
    }

    #[test]
    fn an_idle_path_does_not_hold_memory() {
        let p = LinkParams::new(1000.0, 0.0, u64::MAX);
        let links = (0..2).map(|i| Link::new(&p, i, Instant::ZERO)).collect();
        let mut c = CorrelatedLinks::new(links, 0.5, 1);
        for k in 0..20_000u64 {
            c.offer(0, Instant::from_micros(k), 100, false);
        }
        assert!(c.vectors.len() <= MAX_LAG);
        c.offer(1, Instant::from_micros(20_001), 100, false);
    }
}
