//! Cross traffic at the base stations (PET/BMP Section III-A and VI-C).
//!
//! A cross-traffic *scenario* fixes how many FTP and web sources each base
//! station has (drawn once per scenario index, uniformly in the configured
//! ranges: the paper's 2-8 FTP and 16-32 web). A *seed* then draws FTP
//! start times (uniform over the run) and sizes (uniform 200-2000 kB), and
//! each web client's sequence of think times and object sizes. The paper
//! used ns-2's contributed web traffic generator, whose CDFs are not
//! reproduced in the paper; we use the common on/off model instead:
//! exponential think times and Pareto object sizes (shape 1.2).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::rng::stream;
use crate::scenario::CrossSpec;

#[derive(Clone, Debug, PartialEq)]
pub enum CrossKind {
    Ftp {
        start_s: f64,
        packets: u64,
    },
    /// A web client; its draws come from its own stream.
    Web {
        stream: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct CrossSource {
    pub bs: usize,
    pub kind: CrossKind,
}

/// The sources at every base station for one (scenario, seed).
pub fn draw(
    spec: &CrossSpec,
    n_bs: usize,
    scenario: u32,
    seed: u64,
    duration_s: f64,
    mss: u32,
) -> Vec<CrossSource> {
    let mut counts = stream(0xC0FFEE, &[scenario as u64]);
    let mut timing = stream(seed, &[0xF7, scenario as u64]);
    let mut out = Vec::new();
    for bs in 0..n_bs {
        let ftp = counts.gen_range(spec.ftp[0]..=spec.ftp[1]);
        let web = counts.gen_range(spec.web[0]..=spec.web[1]);
        for _ in 0..ftp {
            let start_s = timing.gen_range(0.0..duration_s);
            let kb = timing.gen_range(spec.ftp_size_kbytes[0]..=spec.ftp_size_kbytes[1]);
            let packets = ((kb * 1000.0) / mss as f64).ceil().max(1.0) as u64;
            out.push(CrossSource {
                bs,
                kind: CrossKind::Ftp { start_s, packets },
            });
        }
        for w in 0..web {
            let id = ((bs as u64) << 32) | w as u64;
            out.push(CrossSource {
                bs,
                kind: CrossKind::Web { stream: id },
            });
        }
    }
    out
}

/// The random stream of one web client.
pub fn web_rng(seed: u64, scenario: u32, client: u64) -> ChaCha8Rng {
    stream(seed, &[0x3EB, scenario as u64, client])
}

/// Exponential think time, seconds.
pub fn think_s(rng: &mut ChaCha8Rng, mean_s: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    -mean_s * u.ln()
}

/// Pareto object size in packets, with the given mean (kbytes) and shape.
pub fn object_packets(rng: &mut ChaCha8Rng, mean_kb: f64, shape: f64, mss: u32) -> u64 {
    let scale = mean_kb * 1000.0 * (shape - 1.0) / shape;
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let bytes = (scale / u.powf(1.0 / shape)).min(5e6);
    ((bytes / mss as f64).ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CrossSpec {
        toml::from_str("ftp = [2, 8]\nweb = [16, 32]").unwrap()
    }

    #[test]
    fn counts_depend_on_scenario_not_seed() {
        let a = draw(&spec(), 2, 3, 1, 60.0, 1460);
        let b = draw(&spec(), 2, 3, 2, 60.0, 1460);
        let kinds = |v: &[CrossSource]| {
            v.iter()
                .map(|s| (s.bs, matches!(s.kind, CrossKind::Ftp { .. })))
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(&a), kinds(&b));
        assert_ne!(a, b, "start times differ by seed");
        for bs in 0..2 {
            let ftp = a
                .iter()
                .filter(|s| s.bs == bs && matches!(s.kind, CrossKind::Ftp { .. }))
                .count();
            assert!((2..=8).contains(&ftp));
        }
    }

    #[test]
    fn pareto_mean_is_close() {
        let mut r = web_rng(1, 0, 0);
        let n = 200_000;
        let mean: f64 = (0..n)
            .map(|_| object_packets(&mut r, 12.0, 1.2, 1000) as f64)
            .sum::<f64>()
            / n as f64;
        // Heavy tail (and the 5 MB cap): loose bound.
        assert!(mean > 8.0 && mean < 16.0, "mean {mean} packets");
    }
}
