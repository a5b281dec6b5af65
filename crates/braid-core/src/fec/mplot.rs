//! MPLOT's redundancy, rank and block-size formulas (paper 002, Sharma et
//! al.; `SPECS.md` §2.4–2.7), as small pure functions.
//!
//! Everything here is arithmetic on estimates the caller keeps: no state, no
//! clock, no randomness, so the transport (`crate::mplot`), the tunnel's
//! proactive repair and the simulator can share one reading of the paper.
//! Where the paper is vague the choice made is stated on the function, with
//! the reading `SPECS.md` suggests.

/// Packet sizes MPLOT chooses from, largest first, header included
/// (§III-C: "750, 550 or 250 bytes, each including a 50-byte header").
pub const PACKET_SIZES: [usize; 3] = [750, 550, 250];

/// Fewest packets in a block (§III-C: the packet size is the largest that
/// still gives at least five packets per block).
pub const MIN_BLOCK_PACKETS: usize = 5;

/// Most packets in a block, p-block and r-block together: the code is over
/// GF(2^8) (§II-A, `B = F + K ≤ 255`).
pub const MAX_BLOCK_PACKETS: usize = 255;

/// Loss rates are clamped to at most this before they are divided by
/// `1 - p`: eq 9 and 10 have a pole at `p = 1` (a path that is DOWN), and a
/// code rate below 1/10 would make a block mostly redundancy without making
/// it more likely to decode when the aggregate delivers nothing. The paper
/// does not say what to do there; this is braid's choice.
pub const MAX_LOSS_ESTIMATE: f64 = 0.9;

/// Eq 1: the rank of path `i`, its estimated loss-free bandwidth
/// `π_i = w_i (1 - p_i) / RTT_i`, in window units per second.
///
/// `rtt_s` must be positive; a path with no RTT sample should be passed its
/// initial RTT. A non-positive RTT ranks the path last (0).
pub fn rank(window: f64, loss: f64, rtt_s: f64) -> f64 {
    if rtt_s <= 0.0 || !rtt_s.is_finite() {
        return 0.0;
    }
    (window * (1.0 - loss.clamp(0.0, 1.0)) / rtt_s).max(0.0)
}

/// GOOD/BAD classes of §III-D: a path is GOOD when its rank is strictly
/// above the median of all ranks, BAD otherwise.
///
/// With an even number of paths the median is the mean of the two middle
/// ranks, so two paths of different rank split one GOOD, one BAD; equal
/// ranks are all BAD, and the mapping then treats every path alike (the
/// caller spills to the other class when one is empty or full, as `SPECS.md`
/// suggests).
pub fn good_paths(ranks: &[f64]) -> Vec<bool> {
    if ranks.is_empty() {
        return Vec::new();
    }
    let mut sorted: Vec<f64> = ranks.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    ranks.iter().map(|&r| r > median).collect()
}

/// How many of `unrecovered` blocks, oldest first, the GOOD paths serve
/// (§III-D: "the earliest U/2 blocks go to GOOD paths"). Odd `U` rounds up
/// towards GOOD, the reading `SPECS.md` suggests, so that a single block is
/// served by every path.
pub fn good_block_count(unrecovered: usize) -> usize {
    unrecovered.div_ceil(2)
}

/// Eq 2, per path: `p_i,inst = 1 - R_i(b) / S_i(b)`, the share of the
/// block's packets on path `i` that did not arrive. `None` when nothing of
/// the block on that path is resolved yet.
///
/// braid counts in `sent` only packets already *resolved* (acknowledged or
/// deemed lost), not those still in flight, so that a block under way does
/// not read as lossy; the paper leaves this open (`SPECS.md` §2.4).
pub fn path_loss_inst(delivered: u32, sent: u32) -> Option<f64> {
    if sent == 0 {
        return None;
    }
    Some(1.0 - f64::from(delivered.min(sent)) / f64::from(sent))
}

/// Eq 2, aggregate: `p_inst = Σ_i (S_i / Σ_j S_j) p_i,inst`, the loss of the
/// block over all paths weighted by each path's share of its packets, which
/// equals `1 - ΣR / ΣS`. `per_path` holds `(delivered, sent)` per path.
pub fn aggregate_loss_inst(per_path: &[(u32, u32)]) -> Option<f64> {
    let sent: u64 = per_path.iter().map(|&(_, s)| u64::from(s)).sum();
    if sent == 0 {
        return None;
    }
    let delivered: u64 = per_path.iter().map(|&(r, s)| u64::from(r.min(s))).sum();
    Some(1.0 - delivered as f64 / sent as f64)
}

/// The weight of the paper's exponentially weighted moving averages
/// (§III-A: "with a weight of 0.5").
pub const EWMA_WEIGHT: f64 = 0.5;

/// The loss statistics of eqs 2–3: the smoothed aggregate loss `p̂_agg` and
/// its smoothed variance `σ̂²_agg`, updated on every acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LossStats {
    /// `p̂_agg`.
    pub mean: f64,
    /// `σ̂²_agg`.
    pub var: f64,
}

impl LossStats {
    /// Feeds one sample `p_inst`: eq 3's variance sample `(p_inst - p̂_agg)²`
    /// is taken against the mean *before* it moves, then both averages take
    /// the sample with weight 0.5 (§III-A).
    pub fn update(&mut self, p_inst: f64) {
        let p = p_inst.clamp(0.0, 1.0);
        let dev2 = (p - self.mean) * (p - self.mean);
        self.var = ewma(self.var, dev2);
        self.mean = ewma(self.mean, p);
    }

    /// `σ̂_agg`.
    pub fn std(&self) -> f64 {
        self.var.max(0.0).sqrt()
    }
}

/// One step of the paper's EWMA: `old ← 0.5 old + 0.5 sample` (§III-A; also
/// used for the per-path `p̂_i`).
pub fn ewma(old: f64, sample: f64) -> f64 {
    (1.0 - EWMA_WEIGHT) * old + EWMA_WEIGHT * sample
}

/// Eq 4: the aggregate bandwidth `BW = Σ_i w_i / RTT_i`, from
/// `(window, rtt_s)` pairs; paths with a non-positive RTT add nothing.
pub fn aggregate_bandwidth(paths: &[(f64, f64)]) -> f64 {
    paths
        .iter()
        .filter(|&&(_, rtt)| rtt > 0.0 && rtt.is_finite())
        .map(|&(w, rtt)| w / rtt)
        .sum()
}

/// The redundancy ratio `(p + κσ) / (1 - (p + κσ))` shared by eqs 9 and 10,
/// with `p + κσ` clamped to `[0, MAX_LOSS_ESTIMATE]`.
fn redundancy(stats: &LossStats, kappa: f64) -> f64 {
    let q = (stats.mean + kappa * stats.std()).clamp(0.0, MAX_LOSS_ESTIMATE);
    q / (1.0 - q)
}

/// Eq 9: the PFEC ratio `x = k/F = (p̂ + κ1 σ̂) / (1 - (p̂ + κ1 σ̂))`, fixed
/// when a block is created. The paper uses `κ1 = 1` (by Cantelli, a block is
/// recovered in its first round with probability at least 1/2).
pub fn pfec_ratio(stats: &LossStats, kappa1: f64) -> f64 {
    redundancy(stats, kappa1)
}

/// Eq 10: how many new RFEC packets to send when a block still needs `r`
/// more, `⌈(1 + y) r⌉` with `y = (p̂ + κ2 σ̂)/(1 - (p̂ + κ2 σ̂))`; the paper's
/// simulations use `κ2 = 0`.
pub fn rfec_count(needed: usize, stats: &LossStats, kappa2: f64) -> usize {
    if needed == 0 {
        return 0;
    }
    let y = redundancy(stats, kappa2);
    ((1.0 + y) * needed as f64 - 1e-9).ceil().max(needed as f64) as usize
}

/// Eq 12: the p-block size `B^p = Σ_i w_i · RTT_med / RTT_i`, from
/// `(window, rtt_s)` pairs, in the windows' unit (braid counts windows in
/// bytes, so the packet-size rule of §III-C has a byte budget to divide).
/// `RTT_med` is the median of the paths' RTTs (§IV-H speaks of "the 40 ms
/// median RTT of the paths"); with an even count, the mean of the middle two.
pub fn p_block_size(paths: &[(f64, f64)]) -> f64 {
    let mut rtts: Vec<f64> = paths
        .iter()
        .map(|&(_, r)| r)
        .filter(|r| *r > 0.0 && r.is_finite())
        .collect();
    if rtts.is_empty() {
        return 0.0;
    }
    rtts.sort_by(|a, b| a.total_cmp(b));
    let n = rtts.len();
    let med = if n % 2 == 1 {
        rtts[n / 2]
    } else {
        (rtts[n / 2 - 1] + rtts[n / 2]) / 2.0
    };
    aggregate_bandwidth(paths) * med
}

/// The r-block size `K - k` for a p-block of `p_block` packets with `k`
/// PFEC packets. The paper says only "a reasonable size"; braid takes
/// `SPECS.md`'s reading `min(255 - B^p, max(4, ⌈k/2⌉))`.
pub fn r_block_size(p_block: usize, pfec: usize) -> usize {
    MAX_BLOCK_PACKETS
        .saturating_sub(p_block)
        .min(pfec.div_ceil(2).max(4))
}

/// The shape of one block: packet size and counts (§III-C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockShape {
    /// Bytes per packet, header included: one of [`PACKET_SIZES`].
    pub packet_size: usize,
    /// `F`: data packets.
    pub data: usize,
    /// `k`: PFEC packets (sent with the data, the p-block).
    pub pfec: usize,
    /// `K - k`: reserve FEC packets (the r-block, sent only on demand).
    pub reserve: usize,
}

impl BlockShape {
    /// `B^p = F + k`.
    pub fn p_block(&self) -> usize {
        self.data + self.pfec
    }
    /// `B = F + K`, every position the block has.
    pub fn total(&self) -> usize {
        self.data + self.pfec + self.reserve
    }
}

/// Chooses a block's shape from the eq 12 budget `budget_bytes` (B^p in
/// bytes), the eq 9 ratio `x`, and the smallest path MTU.
///
/// - Packet size: the largest of [`PACKET_SIZES`] not above `max_packet`
///   that gives at least [`MIN_BLOCK_PACKETS`] packets from the budget;
///   the smallest allowed one if none does (the block then has 5 packets).
/// - `B^p = budget / size`, at least 5, at most 255 less the r-block.
/// - `F = B^p / (1 + x)` and `k = B^p - F`, with `k ≥ max(1, ⌈x F⌉)` when
///   `x > 0` (eq 6's "⌈Fβ⌉ + 1" asks for at least one) and `F ≥ 1`.
/// - r-block: [`r_block_size`].
///
/// Returns `None` when no size in [`PACKET_SIZES`] fits `max_packet`.
pub fn block_shape(budget_bytes: f64, x: f64, max_packet: usize) -> Option<BlockShape> {
    block_shape_from(&PACKET_SIZES, budget_bytes, x, max_packet)
}

/// [`block_shape`] choosing among `sizes` (largest first) instead of the
/// paper's [`PACKET_SIZES`]: a real sender adds a size near the path MTU
/// in front of them (`SenderConfig::large_packet`).
pub fn block_shape_from(
    sizes: &[usize],
    budget_bytes: f64,
    x: f64,
    max_packet: usize,
) -> Option<BlockShape> {
    let allowed: Vec<usize> = sizes.iter().copied().filter(|&s| s <= max_packet).collect();
    let smallest = *allowed.last()?;
    let budget = if budget_bytes.is_finite() {
        budget_bytes.max(0.0)
    } else {
        0.0
    };
    let packet_size = allowed
        .iter()
        .copied()
        .find(|&s| budget / s as f64 >= MIN_BLOCK_PACKETS as f64)
        .unwrap_or(smallest);
    let x = if x.is_finite() { x.max(0.0) } else { 0.0 };
    // Leave room for at least four reserve packets in 255 (r_block_size's floor).
    let cap = MAX_BLOCK_PACKETS - 4;
    let b_p = ((budget / packet_size as f64).floor() as usize).clamp(MIN_BLOCK_PACKETS, cap);
    let mut data = ((b_p as f64) / (1.0 + x)).floor().max(1.0) as usize;
    let mut pfec = b_p - data.min(b_p);
    if x > 0.0 {
        let want = ((x * data as f64).ceil() as usize).max(1);
        while pfec < want && data > 1 {
            data -= 1;
            pfec += 1;
        }
    }
    let reserve = r_block_size(data + pfec, pfec);
    Some(BlockShape {
        packet_size,
        data,
        pfec,
        reserve,
    })
}

/// Eq 5: `h(i) = C(F+i-1, i) p^i (1-p)^F`, the probability that a block of
/// `F` data packets needs exactly `i` FEC packets on an i.i.d. channel of
/// loss `p` (negative binomial). Computed in logs, so large `F` is fine.
pub fn fec_needed_pmf(data: usize, i: usize, p: f64) -> f64 {
    if !(0.0..1.0).contains(&p) {
        return if p >= 1.0 {
            0.0
        } else {
            f64::from(u8::from(i == 0))
        };
    }
    if p == 0.0 {
        return f64::from(u8::from(i == 0));
    }
    let ln_choose = ln_gamma((data + i) as f64) - ln_gamma((i + 1) as f64) - ln_gamma(data as f64);
    (ln_choose + i as f64 * p.ln() + data as f64 * (1.0 - p).ln()).exp()
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7), enough for eq 5's binomials.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

// ---- The forms the tunnel's FEC uses (conn/tunnel/fec.rs, sender/fec.rs) ----
//
// Eqs 2-3, 9, 10 and 12 again, shaped for a tunnel that codes runs of
// consecutive packets rather than MPLOT's transport blocks: loss as a share
// of the packets each path was sent, a code rate capped at one parity
// packet per data packet, and a p-block split into data and parity counts.

/// κ1 of eq 9: proactive FEC provisions for the mean loss plus one
/// standard deviation, so a block fails its first round with probability
/// at most 1/(1 + κ1²) = 0.5 (Cantelli).
pub const KAPPA_PROACTIVE: f64 = 1.0;
/// κ2 of eq 10, as in MPLOT's simulations: reactive FEC covers the mean.
pub const KAPPA_REACTIVE: f64 = 0.0;
/// Weight of the newest sample in the EWMAs of eqs 2-3.
/// Loss rates are clamped below this in eqs 9-10, which caps the code
/// rate `p/(1−p)` at 1: at most one parity packet per data packet. At
/// p → 1 the rate has no bound; an aggregate loss above one half comes
/// from paths going down rather than random loss, and parity beyond the
/// data's own volume starved the data in the simulator's swarm (seed
/// 193: 5505 parity frames for 2469 data packets, no progress for 13 s).
pub const MAX_LOSS: f64 = 0.5;

/// The median of `v` (mean of the middle two for an even count); 0 for
/// an empty slice.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// eq 2's instantaneous aggregate loss of one block: each path's loss
/// `1 − R_i/S_i` weighted by its share `S_i / Σ S_j` of the block's
/// packets, which is `1 − Σ R_i / Σ S_i`. `sent_delivered` holds
/// `(S_i, R_i)` per path; `None` when nothing was sent.
pub fn block_loss(sent_delivered: &[(u64, u64)]) -> Option<f64> {
    let sent: u64 = sent_delivered.iter().map(|&(s, _)| s).sum();
    if sent == 0 {
        return None;
    }
    let p = sent_delivered
        .iter()
        .filter(|&&(s, _)| s > 0)
        .map(|&(s, r)| {
            let pi = 1.0 - (r.min(s) as f64) / (s as f64);
            (s as f64 / sent as f64) * pi
        })
        .sum::<f64>();
    Some(p.clamp(0.0, 1.0))
}

/// eqs 2-3: the aggregate loss estimate `p̂_agg` and the estimate of its
/// variance `σ̂²_agg`, both EWMAs of weight [`EWMA_WEIGHT`].
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct AggregateLoss {
    mean: f64,
    var: f64,
}

impl AggregateLoss {
    /// Takes one block's instantaneous loss `p_inst` (eq 2). The
    /// deviation of eq 3 is taken against the mean before this update,
    /// the mean the block was provisioned with.
    pub fn update(&mut self, p_inst: f64) {
        let p = p_inst.clamp(0.0, 1.0);
        let dev = (p - self.mean) * (p - self.mean);
        self.mean = (1.0 - EWMA_WEIGHT) * self.mean + EWMA_WEIGHT * p;
        self.var = (1.0 - EWMA_WEIGHT) * self.var + EWMA_WEIGHT * dev;
    }

    /// `p̂_agg`.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// `σ̂_agg`, the square root of eq 3's EWMA.
    pub fn deviation(&self) -> f64 {
        self.var.sqrt()
    }
}

/// `q / (1 − q)` for `q = p + κ σ`, clamped to `[0, MAX_LOSS]`: the
/// extra packets per data packet that a loss rate `q` costs.
fn overhead(p: f64, sigma: f64, kappa: f64) -> f64 {
    let q = (p + kappa * sigma).clamp(0.0, MAX_LOSS);
    q / (1.0 - q)
}

/// eq 9: the proactive code rate `x = k/F` for the aggregate loss mean
/// `p` and deviation `sigma`, with κ1 = [`KAPPA_PROACTIVE`].
pub fn proactive_rate(p: f64, sigma: f64) -> f64 {
    overhead(p, sigma, KAPPA_PROACTIVE)
}

/// eq 10: how many new reactive parity packets to send when `r` more are
/// needed to rebuild a block: `⌈(1 + y) r⌉` with `y` from the mean and
/// κ2 = [`KAPPA_REACTIVE`].
pub fn reactive_count(r: usize, p: f64, sigma: f64) -> usize {
    if r == 0 {
        return 0;
    }
    let y = overhead(p, sigma, KAPPA_REACTIVE);
    ((1.0 + y) * r as f64).ceil() as usize
}

/// eq 12: the p-block size `B^p = Σ_i w_i RTT_med / RTT_i` for paths
/// given as `(w_i, RTT_i)` (ε = 0.5 and the delay bound Δ = RTT_med in
/// eq 11): what the paths carry in one median round trip. Paths with a
/// non-positive RTT are left out; 0 when none is left.
pub fn block_size(paths: &[(f64, f64)]) -> f64 {
    let rtts: Vec<f64> = paths
        .iter()
        .map(|&(_, r)| r)
        .filter(|&r| r > 0.0 && r.is_finite())
        .collect();
    let med = median(&rtts);
    paths
        .iter()
        .filter(|&&(_, r)| r > 0.0 && r.is_finite())
        .map(|&(w, r)| w.max(0.0) * med / r)
        .sum()
}

/// Splits a p-block of `bp` packets at code rate `x` into `(F, k)`:
/// `F = B^p / (1 + x)`, `k = ⌈x F⌉`, with `1 <= F` and `F + k <= max`.
///
/// The spec suggests `k = max(1, ⌈x F⌉)` (matching Table II's "⌈Fβ⌉ + 1");
/// here `k = 0` at `x = 0`: a path measured loss-free gets no parity, so
/// FEC adds nothing on clean paths (the target is at most 1 %),
/// and the first measured loss raises `x` for the next block.
pub fn split_block(bp: f64, x: f64, max: usize) -> (usize, usize) {
    let max = max.max(1);
    let x = x.max(0.0);
    let f = ((bp.max(1.0) / (1.0 + x) + 1e-9).floor() as usize).clamp(1, max);
    let k = parity_for(f, x);
    if f + k <= max {
        return (f, k);
    }
    // Too long for one block: keep the rate, shrink both.
    let f = ((max as f64 / (1.0 + x) + 1e-9).floor() as usize).max(1);
    let k = parity_for(f, x).min(max - f.min(max));
    (f, k)
}

/// `k = ⌈x F⌉` for `F = data` packets at code rate `x` (a product that
/// floating point puts a hair above an integer rounds to that integer).
pub fn parity_for(data: usize, x: f64) -> usize {
    (x.max(0.0) * data as f64 - 1e-9).ceil().max(0.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_is_eq_1() {
        assert!((rank(10.0, 0.5, 0.04) - 125.0).abs() < 1e-9);
        assert_eq!(rank(10.0, 1.0, 0.04), 0.0);
        assert_eq!(rank(10.0, 0.1, 0.0), 0.0);
        assert!(rank(10.0, 0.1, 0.04) > rank(10.0, 0.2, 0.04));
    }

    #[test]
    fn good_is_above_the_median() {
        assert_eq!(good_paths(&[1.0, 2.0, 3.0]), vec![false, false, true]);
        assert_eq!(good_paths(&[1.0, 4.0]), vec![false, true]);
        assert_eq!(good_paths(&[2.0, 2.0, 2.0]), vec![false; 3]);
        assert_eq!(good_paths(&[]), Vec::<bool>::new());
        assert_eq!(good_block_count(1), 1);
        assert_eq!(good_block_count(4), 2);
        assert_eq!(good_block_count(5), 3);
    }

    #[test]
    fn eq_2_losses() {
        assert_eq!(path_loss_inst(3, 4), Some(0.25));
        assert_eq!(path_loss_inst(0, 0), None);
        // Weighted by each path's share of the block = 1 - ΣR/ΣS.
        let agg = aggregate_loss_inst(&[(3, 4), (1, 4)]).unwrap();
        assert!((agg - 0.5).abs() < 1e-12);
        let weighted = (4.0 / 8.0) * 0.25 + (4.0 / 8.0) * 0.75;
        assert!((agg - weighted).abs() < 1e-12);
        assert_eq!(aggregate_loss_inst(&[(0, 0)]), None);
    }

    #[test]
    fn eq_3_statistics() {
        let mut s = LossStats::default();
        s.update(0.5);
        // dev² against the old mean 0: 0.25, halved.
        assert!((s.var - 0.125).abs() < 1e-12);
        assert!((s.mean - 0.25).abs() < 1e-12);
        for _ in 0..60 {
            s.update(0.3);
        }
        assert!((s.mean - 0.3).abs() < 1e-9);
        assert!(s.var < 1e-9, "a constant loss has no variance: {}", s.var);
    }

    #[test]
    fn eq_4_and_12() {
        let paths = [(10.0, 0.04), (20.0, 0.08), (30.0, 0.12)];
        assert!((aggregate_bandwidth(&paths) - 750.0).abs() < 1e-9);
        // Median RTT 0.08: each path contributes w · 0.08 / RTT.
        assert!((p_block_size(&paths) - (20.0 + 20.0 + 20.0)).abs() < 1e-9);
        assert_eq!(p_block_size(&[]), 0.0);
    }

    #[test]
    fn eq_9_and_10() {
        let clean = LossStats::default();
        assert_eq!(pfec_ratio(&clean, 1.0), 0.0);
        assert_eq!(rfec_count(3, &clean, 0.0), 3);
        let s = LossStats {
            mean: 0.2,
            var: 0.01,
        };
        // (0.2 + 0.1) / 0.7
        assert!((pfec_ratio(&s, 1.0) - 0.3 / 0.7).abs() < 1e-12);
        // κ2 = 0: y = 0.25, ⌈1.25 · 4⌉ = 5
        assert_eq!(rfec_count(4, &s, 0.0), 5);
        assert_eq!(rfec_count(0, &s, 0.0), 0);
        // A DOWN estimate is clamped, not infinite.
        let down = LossStats {
            mean: 1.0,
            var: 0.0,
        };
        assert!((pfec_ratio(&down, 1.0) - 9.0).abs() < 1e-9);
    }

    #[test]
    fn shapes_follow_the_packet_size_rule() {
        // 20 KB budget: 750 B gives 26 packets.
        let s = block_shape(20_000.0, 0.0, 1500).unwrap();
        assert_eq!(s.packet_size, 750);
        assert_eq!(s.p_block(), 26);
        assert_eq!(s.pfec, 0);
        assert_eq!(s.reserve, 4);
        // 3 KB: 750 gives 4 packets, 550 gives 5.
        assert_eq!(block_shape(3_000.0, 0.0, 1500).unwrap().packet_size, 550);
        // 1.5 KB: 250 gives 6.
        assert_eq!(block_shape(1_500.0, 0.0, 1500).unwrap().packet_size, 250);
        // Nothing gives 5: the smallest size, 5 packets.
        let tiny = block_shape(100.0, 0.0, 1500).unwrap();
        assert_eq!((tiny.packet_size, tiny.p_block()), (250, 5));
        // The MTU rules out larger sizes.
        assert_eq!(block_shape(1e6, 0.0, 600).unwrap().packet_size, 550);
        assert_eq!(block_shape(1e6, 0.0, 200), None);
    }

    #[test]
    fn a_large_size_in_front_is_taken_when_the_budget_holds_five() {
        let sizes = [1400, 750, 550, 250];
        assert_eq!(
            block_shape_from(&sizes, 100_000.0, 0.0, 1472)
                .unwrap()
                .packet_size,
            1400
        );
        // Fewer than five 1400-byte packets: the paper's sizes as before.
        assert_eq!(
            block_shape_from(&sizes, 6_000.0, 0.0, 1472)
                .unwrap()
                .packet_size,
            750
        );
        // Above the path's largest packet: not chosen.
        assert_eq!(
            block_shape_from(&sizes, 100_000.0, 0.0, 1000)
                .unwrap()
                .packet_size,
            750
        );
    }

    #[test]
    fn shapes_split_by_x_and_stay_in_gf256() {
        let s = block_shape(75_000.0, 1.0, 1500).unwrap();
        assert_eq!(s.p_block(), 100);
        assert_eq!((s.data, s.pfec), (50, 50));
        assert_eq!(s.reserve, 25);
        let big = block_shape(1e9, 9.0, 1500).unwrap();
        assert!(big.total() <= MAX_BLOCK_PACKETS, "{big:?}");
        assert!(big.data >= 1 && big.pfec >= (9 * big.data).min(big.pfec));
        // Any x > 0 gives at least one PFEC packet.
        let small = block_shape(3_750.0, 0.01, 1500).unwrap();
        assert_eq!((small.data, small.pfec), (4, 1));
        for budget in [0.0, 1e3, 1e4, 1e5, 1e6, f64::NAN, f64::INFINITY] {
            for x in [0.0, 0.1, 1.0, 9.0, f64::NAN] {
                let s = block_shape(budget, x, 1500).unwrap();
                assert!(s.total() <= MAX_BLOCK_PACKETS && s.data >= 1);
                assert!(s.p_block() >= MIN_BLOCK_PACKETS);
            }
        }
    }

    #[test]
    fn r_block_reading() {
        assert_eq!(r_block_size(100, 2), 4);
        assert_eq!(r_block_size(100, 30), 15);
        assert_eq!(r_block_size(253, 30), 2);
    }

    #[test]
    fn eq_5_is_a_distribution_with_the_negative_binomial_mean() {
        let (f, p) = (90, 0.3);
        let pmf: Vec<f64> = (0..2000).map(|i| fec_needed_pmf(f, i, p)).collect();
        let total: f64 = pmf.iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let mean: f64 = pmf.iter().enumerate().map(|(i, h)| i as f64 * h).sum();
        // Mean of the negative binomial: F p / (1 - p).
        assert!((mean - f as f64 * p / (1.0 - p)).abs() < 1e-6, "{mean}");
        // Table II: with ε = 0.5, x_min ≈ p/(1-p) (α = 1): the median of h is
        // within a few packets of F p/(1-p).
        let mut acc = 0.0;
        let median = pmf
            .iter()
            .position(|h| {
                acc += h;
                acc >= 0.5
            })
            .unwrap();
        assert!((median as f64 - 38.57).abs() <= 2.0, "{median}");
        assert_eq!(fec_needed_pmf(10, 0, 0.0), 1.0);
        assert_eq!(fec_needed_pmf(10, 1, 0.0), 0.0);
    }
}

#[cfg(test)]
mod tunnel_forms_tests {
    use super::*;

    #[test]
    fn block_loss_weights_paths_by_share() {
        // Path a: 80 sent, 80 delivered; path b: 20 sent, 10 delivered.
        // eq 2: 0.8 * 0 + 0.2 * 0.5 = 0.1.
        let p = block_loss(&[(80, 80), (20, 10)]).unwrap();
        assert!((p - 0.1).abs() < 1e-12);
        assert_eq!(block_loss(&[(0, 0)]), None);
        assert_eq!(block_loss(&[(5, 9)]), Some(0.0), "more reports than sent");
    }

    #[test]
    fn ewma_of_mean_and_deviation() {
        let mut a = AggregateLoss::default();
        a.update(0.2);
        // mean 0.1; deviation against the old mean 0: 0.04, halved.
        assert!((a.mean() - 0.1).abs() < 1e-12);
        assert!((a.deviation() - 0.02f64.sqrt()).abs() < 1e-12);
        for _ in 0..60 {
            a.update(0.05);
        }
        assert!((a.mean() - 0.05).abs() < 1e-9);
        assert!(a.deviation() < 1e-6, "a steady loss has no deviation");
    }

    #[test]
    fn proactive_rate_is_eq_9() {
        // p = 0.05, σ = 0.05: q = 0.1, x = 0.1/0.9.
        assert!((proactive_rate(0.05, 0.05) - 0.1 / 0.9).abs() < 1e-12);
        assert_eq!(proactive_rate(0.0, 0.0), 0.0);
        assert_eq!(
            proactive_rate(1.0, 1.0),
            1.0,
            "capped at one per data packet"
        );
    }

    #[test]
    fn reactive_count_is_eq_10_with_kappa_zero() {
        // y = 0.2/0.8 = 0.25; ⌈1.25 * 3⌉ = 4. σ is ignored (κ2 = 0).
        assert_eq!(reactive_count(3, 0.2, 0.3), 4);
        assert_eq!(reactive_count(3, 0.0, 0.3), 3);
        assert_eq!(reactive_count(0, 0.5, 0.0), 0);
    }

    #[test]
    fn block_size_is_eq_12() {
        // Median RTT 40 ms: 20·40/20 + 10·40/40 + 5·40/80 = 40 + 10 + 2.5.
        let b = block_size(&[(20.0, 0.02), (10.0, 0.04), (5.0, 0.08)]);
        assert!((b - 52.5).abs() < 1e-9);
        assert_eq!(block_size(&[]), 0.0);
        assert_eq!(block_size(&[(10.0, 0.0)]), 0.0);
    }

    #[test]
    fn split_keeps_the_rate_and_the_cap() {
        assert_eq!(split_block(60.0, 0.0, 200), (60, 0), "no parity when clean");
        // x = 0.2: F = 50, k = 10.
        assert_eq!(split_block(60.0, 0.2, 200), (50, 10));
        let (f, k) = split_block(1000.0, 0.5, 255);
        assert!(f + k <= 255 && f >= 1 && k >= 1, "{f} {k}");
        assert!((k as f64 / f as f64 - 0.5).abs() < 0.02);
        assert_eq!(split_block(0.0, 0.1, 255), (1, 1));
    }
}
