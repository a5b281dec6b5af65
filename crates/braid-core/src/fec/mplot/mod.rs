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

mod tunnel;
pub use tunnel::*;

#[cfg(test)]
mod tests;
