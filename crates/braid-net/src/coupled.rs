//! Loss *rates* correlated across paths (MPLOT §IV-E, Fig 8).
//!
//! The paper motivates Fig 8 by paths that "share a lossy link, or their
//! MAC transmissions may interfere, resulting in correlated loss rates
//! across the paths", and reads its result as correlation removing the
//! *diversity gain* of §IV-A, which comes from the paths' 25 %/75 % states
//! averaging out over a block (Fig 3's aggregate-loss std 0.132 -> 0.067).
//! Correlating only the per-packet draws ([`crate::correlated`]) leaves
//! those states independent, so this module couples the states too: a
//! shared lossy link has one state.
//!
//! Construction (a chain of copies, like the per-packet draws): every path
//! `j` has its own chain `X_j` with the common parameters; path 0's state
//! is `Y_0 = X_0`, path `j`'s is `Y_j = Y_{j-1}` while it *follows* its
//! neighbour and `X_j` otherwise. Whether it follows is drawn, with
//! probability `θ`, only at the moments `X_j` and `Y_{j-1}` come to agree,
//! so `Y_j` never jumps because of a redraw: it always moves as the chain it
//! follows does, and every `Y_j` is exactly a chain with the common
//! parameters (its holding times and mean loss are unchanged). For a
//! two-state chain with equal holding means (Fig 8's 25 %/75 %), the
//! agree and disagree spells of `X_j` and `Y_{j-1}` have equal means, so
//! `P(Y_j = Y_{j-1}) = θ + (1 − θ)/2`: the states of neighbouring paths
//! have correlation coefficient `θ`, and, copied along the chain, about
//! `θ^|i−j|` further apart (tested below).
//!
//! Queries may come out of time order across paths (packets leave
//! bottlenecks of different delays); each path's state history is kept for
//! [`HISTORY`] behind the latest instant simulated.

use std::collections::VecDeque;

use braid_core::time::{Duration, Instant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::loss::Markov;
use crate::params::MarkovParams;

/// How far back each path's state history reaches.
pub const HISTORY: Duration = Duration::from_secs(10);

/// Markov-modulated loss states coupled across path indices.
#[derive(Clone, Debug)]
pub struct CoupledStates {
    theta: f64,
    rng: ChaCha8Rng,
    own: Vec<Markov>,
    follow: Vec<bool>,
    /// Per path: `(since, state)` of `Y_j`, oldest first.
    history: Vec<VecDeque<(Instant, usize)>>,
    now: Instant,
}

impl CoupledStates {
    /// `paths` chains of `params`, each starting in a random one of its
    /// first two states, coupled with `θ`.
    pub fn new(params: &MarkovParams, paths: usize, theta: f64, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5747_e5c0_u64);
        let start = Instant::ZERO;
        let own: Vec<Markov> = (0..paths)
            .map(|_| {
                let mut p = params.clone();
                p.initial = rng.gen_range(0..p.states.len().clamp(1, 2));
                let mut m = Markov::new(p);
                m.loss_at(start, &mut rng);
                m
            })
            .collect();
        let theta = theta.clamp(0.0, 1.0);
        let follow: Vec<bool> = (0..paths)
            .map(|j| j > 0 && rng.gen::<f64>() < theta)
            .collect();
        let mut s = CoupledStates {
            theta,
            rng,
            own,
            follow,
            history: vec![VecDeque::new(); paths],
            now: start,
        };
        let y = s.states();
        for (h, y) in s.history.iter_mut().zip(y) {
            h.push_back((start, y));
        }
        s
    }

    /// `Y_j` for every path from the chains' current states.
    fn states(&self) -> Vec<usize> {
        let mut y: Vec<usize> = Vec::with_capacity(self.own.len());
        for j in 0..self.own.len() {
            let v = if self.follow[j] {
                y[j - 1]
            } else {
                self.own[j].state()
            };
            y.push(v);
        }
        y
    }

    /// Simulates every chain up to `t`.
    fn advance(&mut self, t: Instant) {
        loop {
            let next = self
                .own
                .iter()
                .enumerate()
                .filter_map(|(j, m)| m.next_jump().map(|e| (e, j)))
                .min();
            let Some((e, j)) = next.filter(|&(e, _)| e <= t) else {
                break;
            };
            let before = self.states();
            let agreed: Vec<bool> = (1..self.own.len())
                .map(|k| self.own[k].state() == before[k - 1])
                .collect();
            self.own[j].loss_at(e, &mut self.rng);
            // Recompute Y along the chain, redrawing `follow` where X_k and
            // Y_{k-1} have just come to agree.
            let mut y: Vec<usize> = Vec::with_capacity(self.own.len());
            for k in 0..self.own.len() {
                if k > 0 && !agreed[k - 1] && self.own[k].state() == y[k - 1] {
                    self.follow[k] = self.rng.gen::<f64>() < self.theta;
                }
                let v = if self.follow[k] {
                    y[k - 1]
                } else {
                    self.own[k].state()
                };
                y.push(v);
            }
            for (k, v) in y.into_iter().enumerate() {
                if v != before[k] {
                    self.history[k].push_back((e, v));
                }
            }
        }
        self.now = self.now.max(t);
        let keep = self.now.saturating_since(Instant::ZERO);
        if keep > HISTORY {
            let horizon = self.now - HISTORY;
            for h in &mut self.history {
                while h.len() > 1 && h[1].0 <= horizon {
                    h.pop_front();
                }
            }
        }
    }

    /// Path `j`'s state at `t`.
    pub fn state_at(&mut self, j: usize, t: Instant) -> usize {
        if t > self.now {
            self.advance(t);
        }
        let h = &self.history[j];
        let i = h.partition_point(|&(since, _)| since <= t);
        h[i.saturating_sub(1)].1
    }

    /// Path `j`'s loss probability at `t`.
    pub fn loss_at(&mut self, j: usize, t: Instant) -> f64 {
        let s = self.state_at(j, t);
        self.own[j].loss_of(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corr(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let ma = a.iter().sum::<f64>() / n;
        let mb = b.iter().sum::<f64>() / n;
        let cov = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - ma) * (y - mb))
            .sum::<f64>()
            / n;
        let va = a.iter().map(|x| (x - ma).powi(2)).sum::<f64>() / n;
        let vb = b.iter().map(|y| (y - mb).powi(2)).sum::<f64>() / n;
        cov / (va * vb).sqrt()
    }

    /// Neighbours' loss rates correlate as θ, further paths about as θ^d;
    /// every path keeps the 50 % mean and the 250 ms holding time.
    #[test]
    fn states_correlate_as_theta_and_keep_their_chain() {
        let p = MarkovParams::mplot_two_state();
        for theta in [0.05, 0.5, 0.99] {
            let mut c = CoupledStates::new(&p, 3, theta, 11);
            let n = 400_000u64;
            let mut loss: Vec<Vec<f64>> = vec![Vec::new(); 3];
            let mut switches = [0u32; 3];
            let mut last = [0usize; 3];
            for k in 0..n {
                let t = Instant::from_millis(k * 5);
                for j in 0..3 {
                    let s = c.state_at(j, t);
                    if k > 0 && s != last[j] {
                        switches[j] += 1;
                    }
                    last[j] = s;
                    loss[j].push(c.loss_at(j, t));
                }
            }
            let secs = (n * 5) as f64 / 1e3;
            for j in 0..3 {
                let mean = loss[j].iter().sum::<f64>() / n as f64;
                assert!((mean - 0.5).abs() < 0.02, "θ {theta} path {j} mean {mean}");
                let hold_ms = secs * 1e3 / f64::from(switches[j]);
                assert!(
                    (hold_ms - 250.0).abs() < 15.0,
                    "θ {theta} path {j} {hold_ms}"
                );
            }
            let r1 = corr(&loss[0], &loss[1]);
            let r2 = corr(&loss[0], &loss[2]);
            assert!((r1 - theta).abs() < 0.04, "θ {theta}: neighbours {r1}");
            assert!((r2 - theta * theta).abs() < 0.05, "θ {theta}: d = 2 {r2}");
        }
    }

    /// Same seed, same states; queries out of time order see the history.
    #[test]
    fn deterministic_and_queryable_out_of_order() {
        let p = MarkovParams::mplot_two_state();
        let mut a = CoupledStates::new(&p, 2, 0.5, 3);
        let mut b = CoupledStates::new(&p, 2, 0.5, 3);
        let fwd: Vec<usize> = (0..2000)
            .map(|k| a.state_at(k % 2, Instant::from_millis(k as u64)))
            .collect();
        let later = b.state_at(0, Instant::from_millis(3000));
        let back: Vec<usize> = (0..2000)
            .map(|k| b.state_at(k % 2, Instant::from_millis(k as u64)))
            .collect();
        assert_eq!(fwd, back);
        assert_eq!(later, a.state_at(0, Instant::from_millis(3000)));
    }
}
