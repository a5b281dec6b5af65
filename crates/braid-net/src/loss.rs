//! Random loss of the channel, decided per packet at its arrival.
//!
//! Bernoulli and Gilbert-Elliott draw from the link's seeded RNG in exactly
//! the order the lab emulator does (`braid-lab` `LossModel::lose`: one
//! draw per packet for Bernoulli; for Gilbert-Elliott a state-flip draw,
//! then the loss draw), so the same seed loses the same packets in both.
//!
//! The Markov-modulated process (MPLOT §IV-A/B) evolves in continuous
//! time: it holds each state for an exponential time and then jumps by the
//! state's row of the jump matrix. A packet arriving at `t` is lost with
//! the loss probability of the state at `t`. A state with loss 1 is the
//! DOWN state of MPLOT §IV-B.

use braid_core::time::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::params::{ms, GilbertParams, LinkParams, MarkovParams};

/// The loss process of one link direction.
#[derive(Clone, Debug)]
pub enum LossProcess {
    None,
    Bernoulli(f64),
    Gilbert { p: GilbertParams, bad: bool },
    Markov(Markov),
}

impl LossProcess {
    /// The process a link's parameters select: `markov` over `gilbert`
    /// over Bernoulli `loss`; none when `loss` is 0.
    pub fn from_params(p: &LinkParams) -> Self {
        if let Some(m) = &p.markov {
            LossProcess::Markov(Markov::new(m.clone()))
        } else if let Some(g) = p.gilbert {
            LossProcess::Gilbert { p: g, bad: false }
        } else if p.loss > 0.0 {
            LossProcess::Bernoulli(p.loss)
        } else {
            LossProcess::None
        }
    }

    /// Decides the fate of a packet arriving at `now`: `true` = lost.
    /// `u`, if given, replaces the final uniform draw (correlated loss
    /// across paths, [`crate::correlated`]); state changes still use `rng`.
    pub fn lose(&mut self, now: Instant, rng: &mut ChaCha8Rng, u: Option<f64>) -> bool {
        let p = match self {
            LossProcess::None => return false,
            LossProcess::Bernoulli(p) => *p,
            LossProcess::Gilbert { p, bad } => {
                let flip = if *bad { p.p_bad_good } else { p.p_good_bad };
                if rng.gen::<f64>() < flip {
                    *bad = !*bad;
                }
                if *bad {
                    p.loss_bad
                } else {
                    p.loss_good
                }
            }
            LossProcess::Markov(m) => m.loss_at(now, rng),
        };
        let u = u.unwrap_or_else(|| rng.gen::<f64>());
        u < p
    }

    /// The loss probability a packet arriving now would face, without
    /// drawing (for reports and tests); Gilbert reports its current state.
    pub fn current_loss(&self) -> f64 {
        match self {
            LossProcess::None => 0.0,
            LossProcess::Bernoulli(p) => *p,
            LossProcess::Gilbert { p, bad } => {
                if *bad {
                    p.loss_bad
                } else {
                    p.loss_good
                }
            }
            LossProcess::Markov(m) => m.params.states[m.state].loss,
        }
    }
}

/// State of a Markov-modulated loss process.
#[derive(Clone, Debug)]
pub struct Markov {
    params: MarkovParams,
    state: usize,
    /// When the current state's holding time ends; `None` until the first
    /// packet fixes the origin.
    until: Option<Instant>,
    /// Time spent in each state so far (for tests and reports).
    pub time_in: Vec<Duration>,
    last: Instant,
}

impl Markov {
    pub fn new(params: MarkovParams) -> Self {
        let n = params.states.len();
        Markov {
            state: params.initial.min(n.saturating_sub(1)),
            params,
            until: None,
            time_in: vec![Duration::ZERO; n],
            last: Instant::ZERO,
        }
    }

    pub fn state(&self) -> usize {
        self.state
    }

    /// When the current state's holding time ends (`None` before the first
    /// call to [`Self::loss_at`]).
    pub fn next_jump(&self) -> Option<Instant> {
        self.until
    }

    /// The loss probability of state `i`.
    pub fn loss_of(&self, i: usize) -> f64 {
        self.params.states[i].loss
    }

    fn holding(&self, rng: &mut ChaCha8Rng) -> Duration {
        // Exponential by inversion; 1 - u is in (0, 1].
        let u: f64 = rng.gen();
        ms(-(1.0 - u).ln() * self.params.states[self.state].mean_holding_ms)
            .max(Duration::from_nanos(1))
    }

    fn jump(&mut self, rng: &mut ChaCha8Rng) {
        let n = self.params.states.len();
        if n < 2 {
            return;
        }
        let i = self.state;
        let weight = |j: usize| -> f64 {
            if j == i {
                0.0
            } else if self.params.jump.is_empty() {
                1.0
            } else {
                self.params.jump[i][j]
            }
        };
        let total: f64 = (0..n).map(weight).sum();
        let mut x = rng.gen::<f64>() * total;
        let mut next = (i + 1) % n;
        for j in 0..n {
            let w = weight(j);
            if w > 0.0 {
                next = j;
                if x < w {
                    break;
                }
                x -= w;
            }
        }
        self.state = next;
    }

    /// Advances the chain to `now` and returns the state's loss probability.
    pub fn loss_at(&mut self, now: Instant, rng: &mut ChaCha8Rng) -> f64 {
        if self.until.is_none() {
            self.last = now;
            self.until = Some(now + self.holding(rng));
        }
        while let Some(end) = self.until.filter(|&e| e <= now) {
            self.time_in[self.state] += end - self.last.min(end);
            self.last = end;
            self.jump(rng);
            self.until = Some(end + self.holding(rng));
        }
        if now > self.last {
            self.time_in[self.state] += now - self.last;
            self.last = now;
        }
        self.params.states[self.state].loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn bernoulli_rate_and_lab_draw_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut l = LossProcess::Bernoulli(0.1);
        let lost = (0..100_000)
            .filter(|_| l.lose(Instant::ZERO, &mut rng, None))
            .count();
        assert!((9_500..10_500).contains(&lost), "{lost}");
        // Same draws as a plain `gen::<f64>() < p` sequence (the lab's).
        let mut a = ChaCha8Rng::seed_from_u64(3);
        let mut b = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..1000 {
            assert_eq!(l.lose(Instant::ZERO, &mut a, None), b.gen::<f64>() < 0.1);
        }
    }

    #[test]
    fn gilbert_mean_and_burstiness() {
        let g = GilbertParams {
            p_good_bad: 0.01,
            p_bad_good: 0.3,
            loss_bad: 0.5,
            loss_good: 0.0,
        };
        let mut l = LossProcess::Gilbert { p: g, bad: false };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 400_000;
        let seq: Vec<bool> = (0..n)
            .map(|_| l.lose(Instant::ZERO, &mut rng, None))
            .collect();
        let lost = seq.iter().filter(|&&x| x).count() as f64;
        let expect = 0.01 / 0.31 * 0.5;
        assert!((lost / n as f64 - expect).abs() < 0.004);
        let pairs = seq.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(pairs / lost > 3.0 * expect);
    }

    /// MPLOT §IV-A: 25 % / 75 % with 250 ms mean holding: half the time in
    /// each, 50 % loss on average, and packets close in time share a state
    /// (loss is correlated over tens of ms, unlike Bernoulli).
    #[test]
    fn markov_two_state_mplot_averages_and_holding_times() {
        let mut l = LossProcess::Markov(Markov::new(MarkovParams::mplot_two_state()));
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let step = Duration::from_millis(1);
        let n = 600_000u64; // 600 s, one packet per ms
        let mut lost = 0u64;
        let mut seq = Vec::with_capacity(n as usize);
        for k in 0..n {
            let x = l.lose(Instant::ZERO + step * k as u32, &mut rng, None);
            lost += x as u64;
            seq.push(x);
        }
        let mean = lost as f64 / n as f64;
        assert!((mean - 0.5).abs() < 0.03, "mean loss {mean}");
        let LossProcess::Markov(m) = &l else { panic!() };
        let t0 = m.time_in[0].as_secs_f64();
        let t1 = m.time_in[1].as_secs_f64();
        assert!((t0 / (t0 + t1) - 0.5).abs() < 0.05, "{t0} {t1}");
        // Conditional loss after a loss: in the same state mostly, so
        // E[p | lost] = (0.25^2 + 0.75^2) / 0.5 = 0.625 > 0.5.
        let after_loss = seq.windows(2).filter(|w| w[0]).count() as f64;
        let both = seq.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        let cond = both / after_loss;
        assert!((cond - 0.62).abs() < 0.03, "P(loss | loss) = {cond}");
    }

    /// MPLOT §IV-B: a DOWN state of mean 1 s entered with probability 5 %
    /// per jump out of ON or OFF. The embedded chain makes 0.05 visits to
    /// DOWN per ON/OFF visit, so DOWN's share of time is
    /// 0.05 * 1000 / (250 + 0.05 * 1000) = 0.1667.
    #[test]
    fn markov_down_state_share() {
        let mut m = Markov::new(MarkovParams::mplot_with_down(0.05));
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut t = Instant::ZERO;
        for _ in 0..2_000_000 {
            t += Duration::from_millis(1);
            m.loss_at(t, &mut rng);
        }
        let total: f64 = m.time_in.iter().map(|d| d.as_secs_f64()).sum();
        let down = m.time_in[2].as_secs_f64() / total;
        assert!((down - 0.1667).abs() < 0.03, "down share {down}");
        assert!((total - 2000.0).abs() < 0.01);
        // With no DOWN probability the DOWN state is never entered.
        let mut m = Markov::new(MarkovParams::mplot_with_down(0.0));
        for k in 0..100_000u32 {
            m.loss_at(Instant::ZERO + Duration::from_millis(k as u64), &mut rng);
        }
        assert_eq!(m.time_in[2], Duration::ZERO);
    }
}
