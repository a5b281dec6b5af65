//! Phatak, Goff and Plusquellic's analysis of striping one TCP flow over
//! unequal paths ("IP-in-IP tunneling to enable the simultaneous use of
//! multiple IP interfaces", Computer Networks 2003; `SPECS.md` §3), as
//! pure functions: no I/O, no clock, the same input always gives the same
//! answer. `braid analyze` prints [`analyze`]'s result.
//!
//! - [`split`]: the split of a transfer that finishes soonest (eqs 1–17, 22);
//! - [`rto`]: the bandwidth ratios that stay free of retransmission
//!   timeouts (eqs 19–51);
//! - [`trace`]: the RTO recursion run over sample streams (Figs 2 and 3);
//! - [`dupack`]: the spurious duplicate ACKs striping causes (eqs 52–54).
//!
//! Why braid cares: these bounds say when *plain* striping (packets spread
//! by rate, handed to TCP in arrival order) hurts one TCP flow, which is
//! exactly what braid's resequencer and earliest-delivery scheduling are
//! there to prevent.

pub mod dupack;
pub mod input;
pub mod rto;
pub mod split;
pub mod trace;

use serde::Serialize;

pub use input::{parse_bytes, parse_path, InputError};
pub use rto::RtoParams;

/// TCP's duplicate-ACK threshold for fast retransmit (RFC 5681).
pub const DUPTHRESH: u64 = 3;

/// Samples in the random-striping trace of [`analyze`] (the paper's count).
pub const TRACE_SAMPLES: usize = 100_000;

/// One path as the analysis sees it (eq 1: constant rate and latency, one
/// packet size per path).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathModel {
    /// A label for tables ("path0", or the lab file's name).
    pub name: String,
    pub rate_bps: f64,
    /// One-way propagation and processing delay `c_i`, seconds.
    pub delay_s: f64,
    /// Size of the packets sent on this path, bytes.
    pub packet_bytes: f64,
}

/// Per-path figures of the analysis.
#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    pub name: String,
    pub rate_mbps: f64,
    pub delay_ms: f64,
    pub packet_bytes: f64,
    /// Eq 3: `r_i = p_i/b_i + c_i + Δ_ACK`, ms.
    pub rtt_ms: f64,
    /// Eq 22: share of the packets striped onto this path.
    pub packet_fraction: f64,
}

/// A finite transfer's split (eq 13 in closed form).
#[derive(Clone, Debug, Serialize)]
pub struct FiniteSplit {
    pub transfer_bytes: f64,
    pub fractions: Vec<f64>,
    /// Paths that carry nothing because their delay alone exceeds the
    /// completion time.
    pub dropped: Vec<String>,
    pub completion_ms: f64,
    /// The completion time if split by eq 14 instead (the last path to finish).
    pub completion_ms_eq14: f64,
}

/// A timeout-free bound on the ratio of the slowest to the fastest RTT.
#[derive(Clone, Debug, Serialize)]
pub struct RatioBound {
    /// Which equations the bound comes from.
    pub equation: &'static str,
    /// The largest RTT ratio ρ without timeouts (eq 32 or eq 50).
    pub rho_max: f64,
    /// The same as a bandwidth ratio φ = b_fast/b_slow, scaled by the packet
    /// sizes of the fastest and the slowest path (eq 33 or eq 51).
    pub phi_max: f64,
    /// The paths' RTT ratio ρ = r_max/r_min.
    pub rho: f64,
    /// Whether these paths stay timeout-free (eq 26 with exact means for
    /// random striping; eqs 19–21 run on the SRR sequence in steady state
    /// for periodic striping, which for two paths is eq 41). This accounts
    /// for the paths' delays, which `rho_max` (derived for
    /// bandwidth-dominated paths, where the RTT ratio is also the ratio of
    /// packets sent) does not.
    pub timeout_free: bool,
    /// The slowest path's packets that time out when eqs 19–21 are run
    /// over the striped sample stream (100,000 samples for random
    /// striping), percent.
    pub trace_timeout_pct: f64,
}

/// The duplicate-ACK bound (eqs 52–54).
#[derive(Clone, Debug, Serialize)]
pub struct DupackBound {
    /// Eq 53 (floor form, with the paths' delays): duplicates while one
    /// packet crosses the slowest path.
    pub dupacks: u64,
    /// Right side of eq 53 (bandwidth dominated).
    pub eq53_upper: f64,
    /// Eq 54, for equal packet sizes (`Σ b_i / b_min − 1`; φ for two paths).
    pub eq54_bound: f64,
    pub dupthresh: u64,
    /// `dupacks >= dupthresh`: reordering alone triggers fast retransmits.
    pub spurious_fast_retransmits: bool,
}

/// Whether plain striping is safe, and what braid changes.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// Striping one TCP flow by rate, with packets handed to TCP in
    /// arrival order, neither times out (periodic striping) nor triggers
    /// spurious fast retransmits.
    pub plain_striping_safe: bool,
    pub reasons: Vec<String>,
    pub with_braid: Vec<String>,
}

/// Everything `braid analyze` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub paths: Vec<PathReport>,
    pub rto: RtoParams,
    /// Per-path fractions of the bytes: eq 13 for the given transfer, else
    /// eq 14.
    pub split: Vec<f64>,
    /// Eq 14, the large-transfer limit.
    pub split_asymptotic: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_finite: Option<FiniteSplit>,
    /// φ = b_max / b_min.
    pub bandwidth_ratio: f64,
    pub ratio_bound_random: RatioBound,
    pub ratio_bound_periodic: RatioBound,
    pub dupack_bound: DupackBound,
    pub verdict: Verdict,
}

/// Analyses striping one TCP flow over `paths` (at least one, validated by
/// the caller or by [`input`]). `transfer_bytes` selects eq 13's finite
/// split; `seed` makes the random-striping trace reproducible.
pub fn analyze(
    paths: &[PathModel],
    transfer_bytes: Option<f64>,
    p: RtoParams,
    seed: u64,
) -> Analysis {
    let n = paths.len();
    let rates: Vec<f64> = paths.iter().map(|x| x.rate_bps).collect();
    let delays: Vec<f64> = paths.iter().map(|x| x.delay_s).collect();
    let sizes: Vec<f64> = paths.iter().map(|x| x.packet_bytes).collect();
    // Eq 3: ACKs return over the lowest-latency path (the paper's SYN path).
    let d_ack = delays.iter().copied().fold(f64::INFINITY, f64::min);
    let rtts: Vec<f64> = (0..n)
        .map(|i| sizes[i] * 8.0 / rates[i] + delays[i] + d_ack)
        .collect();
    let pkt_frac = split::packet_fractions(&rates, &sizes);
    let asym = split::asymptotic_split(&rates);
    let finite = transfer_bytes.map(|d| {
        let s = split::finite_split(&rates, &delays, d);
        // Eq 14's split finishes when its slowest path does.
        let eq14 = (0..n)
            .map(|i| d * asym[i] * 8.0 / rates[i] + delays[i])
            .fold(0.0, f64::max);
        FiniteSplit {
            transfer_bytes: d,
            fractions: s.fractions,
            dropped: (0..n)
                .filter(|&i| !s.used[i])
                .map(|i| paths[i].name.clone())
                .collect(),
            completion_ms: s.completion_s * 1e3,
            completion_ms_eq14: eq14 * 1e3,
        }
    });
    let by = |v: &[f64], max: bool| {
        (0..n)
            .max_by(|&a, &b| {
                if max {
                    v[a].total_cmp(&v[b])
                } else {
                    v[b].total_cmp(&v[a])
                }
            })
            .unwrap_or(0)
    };
    let (fast, slow) = (by(&rates, true), by(&rates, false));
    let (r_lo, r_hi) = (by(&rtts, false), by(&rtts, true));
    let rho = rtts[r_hi] / rtts[r_lo];
    let size_scale = sizes[fast] / sizes[slow];

    // Random striping: eq 26 with exact means, and the recursion over a
    // random stream of 100,000 samples.
    let ideal = rto::ideal_timeout_free(&rtts, &pkt_frac, p.k);
    let random = trace::count_timeouts(
        trace::random_samples(&rtts, &pkt_frac, TRACE_SAMPLES, seed),
        n,
        p,
    );
    let pct = |c: (u64, u64)| {
        if c.0 == 0 {
            0.0
        } else {
            100.0 * c.1 as f64 / c.0 as f64
        }
    };
    let rho_random = rto::random_rho_bound(p.k);
    let ratio_bound_random = RatioBound {
        equation: "eqs 26, 32, 33",
        rho_max: rho_random,
        phi_max: rto::phi_bound(rho_random, sizes[fast], sizes[slow]),
        rho,
        timeout_free: ideal.iter().all(|x| *x),
        trace_timeout_pct: pct(random[r_hi]),
    };

    // Periodic striping: SRR order, steady state (second half of the run).
    let order = trace::srr_order(&rates, &sizes, 2 * trace::PERIODIC_SAMPLES);
    let samples = order[trace::PERIODIC_SAMPLES..]
        .iter()
        .map(|&i| trace::Sample {
            path: i,
            rtt: rtts[i],
        });
    // Warm the estimator on the first half, count on the second.
    let warm: Vec<trace::Sample> = order[..trace::PERIODIC_SAMPLES]
        .iter()
        .map(|&i| trace::Sample {
            path: i,
            rtt: rtts[i],
        })
        .collect();
    let periodic = trace::count_timeouts_after(warm, samples, n, p);
    let rho_periodic = rto::periodic_rho_bound(p).unwrap_or(f64::INFINITY);
    let ratio_bound_periodic = RatioBound {
        equation: "eqs 39-41, 49, 50, 51",
        rho_max: rho_periodic,
        phi_max: rho_periodic * size_scale,
        rho,
        timeout_free: periodic.iter().all(|c| c.1 == 0),
        trace_timeout_pct: pct(periodic[r_hi]),
    };

    let d = dupack::dupacks(&rates, &delays, &sizes);
    let dupack_bound = DupackBound {
        dupacks: d,
        eq53_upper: dupack::eq53_upper(&rates, &sizes),
        eq54_bound: dupack::eq54_bound(&rates),
        dupthresh: DUPTHRESH,
        spurious_fast_retransmits: d >= DUPTHRESH,
    };
    let verdict = verdict(&ratio_bound_random, &ratio_bound_periodic, &dupack_bound, n);
    let split = finite
        .as_ref()
        .map_or_else(|| asym.clone(), |f| f.fractions.clone());
    Analysis {
        paths: (0..n)
            .map(|i| PathReport {
                name: paths[i].name.clone(),
                rate_mbps: rates[i] / 1e6,
                delay_ms: delays[i] * 1e3,
                packet_bytes: sizes[i],
                rtt_ms: rtts[i] * 1e3,
                packet_fraction: pkt_frac[i],
            })
            .collect(),
        rto: p,
        split,
        split_asymptotic: asym,
        split_finite: finite,
        bandwidth_ratio: rates[fast] / rates[slow],
        ratio_bound_random,
        ratio_bound_periodic,
        dupack_bound,
        verdict,
    }
}

fn verdict(random: &RatioBound, periodic: &RatioBound, dup: &DupackBound, n: usize) -> Verdict {
    let mut reasons = Vec::new();
    if n == 1 {
        reasons.push("one path: nothing is striped".to_string());
    }
    if dup.spurious_fast_retransmits {
        reasons.push(format!(
            "up to {} duplicate ACKs while a packet crosses the slowest path (eq 53), at or above TCP's threshold of {}: spurious fast retransmits halve the window",
            dup.dupacks, dup.dupthresh
        ));
    } else {
        reasons.push(format!(
            "at most {} duplicate ACKs from reordering (eq 53), below TCP's threshold of {}",
            dup.dupacks, dup.dupthresh
        ));
    }
    // Eq 50's limit assumes bandwidth-dominated paths, where the RTT ratio
    // is also the ratio of packets per period; the trace covers any paths.
    if periodic.timeout_free {
        reasons.push(format!(
            "no timeouts under deterministic striping: eqs 19-21 run on the SRR sequence of these paths (RTT ratio {:.2}; for bandwidth-dominated paths the limit is {:.3}, eq 50)",
            periodic.rho, periodic.rho_max
        ));
    } else {
        reasons.push(format!(
            "{:.1} % of the slowest path's packets time out under deterministic striping: eqs 19-21 run on the SRR sequence of these paths, in steady state (RTT ratio {:.2}; for bandwidth-dominated paths the limit is {:.3}, eq 50)",
            periodic.trace_timeout_pct, periodic.rho, periodic.rho_max
        ));
    }
    if random.trace_timeout_pct > 0.0 {
        reasons.push(format!(
            "random striping times out {:.2} % of the slowest path's packets with smoothed estimates (eq 26 with exact means says {})",
            random.trace_timeout_pct,
            if random.timeout_free { "none" } else { "all" }
        ));
    }
    let safe = n == 1 || (!dup.spurious_fast_retransmits && periodic.timeout_free);
    let with_braid = vec![
        "braid's resequencer (BMP) hands packets to TCP in order, so reordering produces no duplicate ACKs: the eq 53 bound no longer applies".to_string(),
        "TCP then sees each packet's RTT as that of the latest path it waited behind, which narrows the RTT spread that causes timeouts (eqs 19-21)".to_string(),
        "a real loss is declared as soon as a later packet has arrived on every active path, or a later packet on the same path follows it, or after the loss timeout (0.5 s), and TCP retransmits it without waiting for its RTO".to_string(),
        "PET schedules each packet on the path where it arrives earliest, so the resequencer rarely waits, and a path whose delay exceeds the rest of the transfer gets nothing, as eq 13 prescribes".to_string(),
    ];
    Verdict {
        plain_striping_safe: safe,
        reasons,
        with_braid,
    }
}

impl Analysis {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("analysis serialises")
    }

    /// A plain-text report.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<10} {:>10} {:>9} {:>8} {:>9} {:>8} {:>8}",
            "path", "Mbit/s", "delay ms", "pkt B", "RTT ms", "packets", "split"
        );
        for (i, p) in self.paths.iter().enumerate() {
            let _ = writeln!(
                s,
                "{:<10} {:>10.3} {:>9.2} {:>8.0} {:>9.3} {:>7.1}% {:>7.1}%",
                p.name,
                p.rate_mbps,
                p.delay_ms,
                p.packet_bytes,
                p.rtt_ms,
                100.0 * p.packet_fraction,
                100.0 * self.split[i]
            );
        }
        match &self.split_finite {
            Some(f) => {
                let _ = writeln!(
                    s,
                    "split for {} bytes (eq 13): done in {:.3} ms (eq 14's split: {:.3} ms){}",
                    f.transfer_bytes,
                    f.completion_ms,
                    f.completion_ms_eq14,
                    if f.dropped.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; unused, delay exceeds the completion time: {}",
                            f.dropped.join(", ")
                        )
                    }
                );
            }
            None => {
                let _ = writeln!(s, "split by rate (eq 14; give --transfer-bytes for eq 13)");
            }
        }
        let _ = writeln!(
            s,
            "bandwidth ratio {:.2}, RTT ratio {:.2}; RTO K = {}, alpha = {}, beta = {}",
            self.bandwidth_ratio,
            self.ratio_bound_random.rho,
            self.rto.k,
            self.rto.alpha,
            self.rto.beta
        );
        for (label, b) in [
            ("random striping", &self.ratio_bound_random),
            ("periodic striping", &self.ratio_bound_periodic),
        ] {
            let _ = writeln!(
                s,
                "{label:<18} limit: RTT ratio {:.3}, bandwidth ratio {:.3} at these packet sizes ({}); these paths: {}, {:.2} % of the slowest path's packets time out in the eqs 19-21 trace",
                b.rho_max,
                b.phi_max,
                b.equation,
                if b.timeout_free { "no timeouts" } else { "timeouts" },
                b.trace_timeout_pct
            );
        }
        let d = &self.dupack_bound;
        let _ = writeln!(
            s,
            "duplicate ACKs   {} (eq 53; upper {:.2}, eq 54 {:.2}), threshold {}: {}",
            d.dupacks,
            d.eq53_upper,
            d.eq54_bound,
            d.dupthresh,
            if d.spurious_fast_retransmits {
                "spurious fast retransmits"
            } else {
                "none spurious"
            }
        );
        let v = &self.verdict;
        let _ = writeln!(
            s,
            "verdict: plain striping of one TCP flow is {}",
            if v.plain_striping_safe {
                "SAFE"
            } else {
                "NOT SAFE"
            }
        );
        for r in &v.reasons {
            let _ = writeln!(s, "  - {r}");
        }
        let _ = writeln!(s, "with braid:");
        for r in &v.with_braid {
            let _ = writeln!(s, "  - {r}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(spec: &[(f64, f64)]) -> Vec<PathModel> {
        spec.iter()
            .enumerate()
            .map(|(i, &(r, d))| PathModel {
                name: format!("path{i}"),
                rate_bps: r,
                delay_s: d,
                packet_bytes: 1000.0,
            })
            .collect()
    }

    #[test]
    fn equal_paths_are_safe() {
        let a = analyze(
            &paths(&[(10e6, 0.0), (10e6, 0.0)]),
            None,
            RtoParams::default(),
            1,
        );
        assert_eq!(a.split, vec![0.5, 0.5]);
        assert!(a.verdict.plain_striping_safe, "{}", a.to_table());
        assert_eq!(a.dupack_bound.dupacks, 1);
        assert!(a.ratio_bound_random.timeout_free && a.ratio_bound_periodic.timeout_free);
    }

    #[test]
    fn ratio_three_is_unsafe_for_dupacks_only() {
        let a = analyze(
            &paths(&[(15e6, 0.0), (5e6, 0.0)]),
            None,
            RtoParams::default(),
            1,
        );
        assert!(!a.verdict.plain_striping_safe);
        assert_eq!(a.dupack_bound.dupacks, 3);
        assert!(a.ratio_bound_periodic.timeout_free);
        assert!((a.ratio_bound_periodic.rho_max - 4.3868).abs() < 1e-3);
        assert_eq!(a.ratio_bound_random.rho_max, 7.0);
    }

    #[test]
    fn ratio_six_times_out_when_striped_periodically() {
        let a = analyze(
            &paths(&[(6e6, 0.0), (1e6, 0.0)]),
            None,
            RtoParams::default(),
            1,
        );
        assert!(!a.ratio_bound_periodic.timeout_free);
        assert!(a.ratio_bound_periodic.trace_timeout_pct > 99.0);
        // Exact means still say no timeouts below 7 (eq 32).
        assert!(a.ratio_bound_random.timeout_free);
        let json = a.to_json();
        for key in [
            "\"split\"",
            "\"ratio_bound_random\"",
            "\"ratio_bound_periodic\"",
            "\"dupack_bound\"",
        ] {
            assert!(json.contains(key), "{key}");
        }
    }

    #[test]
    fn long_delay_path_is_dropped_from_a_short_transfer() {
        let a = analyze(
            &paths(&[(10e6, 0.01), (10e6, 1.0)]),
            Some(20e3),
            RtoParams::default(),
            1,
        );
        let f = a.split_finite.as_ref().unwrap();
        assert_eq!(f.dropped, vec!["path1".to_string()]);
        assert_eq!(a.split, vec![1.0, 0.0]);
        assert!(f.completion_ms < f.completion_ms_eq14);
        assert!(a.to_table().contains("unused"));
    }

    #[test]
    fn tau_dominated_paths_tolerate_a_large_bandwidth_ratio() {
        // Sec 4.1: 100 and 25 Mbit/s several hops away: p/b is µs, τ is ms.
        let a = analyze(
            &paths(&[(100e6, 0.02), (25e6, 0.02)]),
            None,
            RtoParams::default(),
            1,
        );
        assert!(a.ratio_bound_random.rho < 1.01);
        assert!(a.ratio_bound_periodic.timeout_free && a.ratio_bound_random.timeout_free);
    }
}
