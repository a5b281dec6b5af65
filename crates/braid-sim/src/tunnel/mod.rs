//! Lab files in simulation: the shipped tunnel (`braid_core::conn`'s
//! client [`Connection`](braid_core::conn::Connection) and
//! [`Server`](braid_core::conn::Server), with their handshake, encryption,
//! pacing, feedback batching and path liveness) carries a Linux-like TCP
//! upload over the paths of a lab file, modelled by `braid-net` exactly as
//! the lab's emulator runs them. Only the clock and the network are
//! simulated; the endpoints are driven through
//! [`Endpoint`](braid_core::conn::Endpoint), the contract the daemon uses.
//!
//! Modes are those of `braid lab bench`: `single-best` (TCP alone on the
//! best path), `braid-<scheduler>` (TCP through the tunnel), and `mptcp`,
//! here a simple model of uncoupled subflows (one CUBIC connection per
//! path; upstream Linux MPTCP also runs each subflow's own congestion
//! control, but shares one receive buffer and scheduler, which this model
//! leaves out). The report has the lab bench's JSON shape plus what only
//! a simulation can count exactly.
//!
//! Measurement follows the lab bench: the transfer runs `duration_s`
//! seconds from its start (the end of the handshake through the tunnel),
//! goodput is the TCP payload delivered in order after the first
//! `omit_s`, divided by the time after that, and a mode's share is its
//! goodput over the sum of the configured uplink rates.

pub(crate) mod cross;
pub(crate) mod direct;
pub(crate) mod inner;
pub mod send;
pub(crate) mod world;

use braid_core::sched::SchedulerKind;
use braid_lab::config::{Direction, LabConfig, LossSpec};
use braid_net::{GilbertParams, LinkParams, RlcParams, TraceStep};
use serde::Serialize;

use crate::tcp::TcpConfig;

pub use direct::run_direct;
pub use inner::HEADER_BYTES;
pub use send::run_send;
pub use world::{run_tunnel, Outcome};

/// A mode of `braid sim run lab/NAME.toml`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LabMode {
    SingleBest,
    /// One uncoupled CUBIC subflow per path.
    Mptcp,
    Braid(SchedulerKind),
    /// `braid send` of a file (MPLOT, [`send`]), no tunnel.
    Send,
}

impl LabMode {
    /// Parses a lab bench mode name.
    pub fn parse(s: &str) -> Result<LabMode, String> {
        match s {
            "single-best" => Ok(LabMode::SingleBest),
            "mptcp" => Ok(LabMode::Mptcp),
            "braid-send" => Ok(LabMode::Send),
            _ => s
                .strip_prefix("braid-")
                .and_then(SchedulerKind::parse)
                .map(LabMode::Braid)
                .ok_or_else(|| {
                    let names: Vec<String> = SchedulerKind::ALL
                        .iter()
                        .map(|k| format!("braid-{}", k.as_str()))
                        .collect();
                    format!(
                        "unknown mode `{s}`: use single-best, mptcp, braid-send or one of {}",
                        names.join(", ")
                    )
                }),
        }
    }

    pub fn name(&self) -> String {
        match self {
            LabMode::SingleBest => "single-best".into(),
            LabMode::Mptcp => "mptcp".into(),
            LabMode::Braid(k) => format!("braid-{}", k.as_str()),
            LabMode::Send => "braid-send".into(),
        }
    }
}

/// How long and how a lab file is run.
#[derive(Clone, Debug)]
pub struct LabRunOptions {
    /// Length of the transfer (the lab bench's default: 15 s).
    pub duration_s: f64,
    /// Seconds at the start left out of the goodput (the lab's 2 s).
    pub omit_s: f64,
    /// Seed of the keys and of every random choice in the endpoints; the
    /// links use the lab file's seed, as the emulator does.
    pub seed: u64,
    /// The receive window, packets (Linux autotunes to several MB).
    pub rwnd_pkts: u32,
    /// Also report the goodput from this second of the transfer on (the
    /// lab bench's `--from`): the steady part of a long run next to the
    /// whole, which counts the start-up.
    pub from_s: Option<f64>,
    /// Run a competing TCP flow (CUBIC, directly over the path, as the
    /// lab bench's `--cross-tcp`) on this path, from the start of the
    /// transfer to its end, and report its goodput.
    pub cross_tcp: Option<usize>,
    /// With `cross_tcp`: the competing flow starts this many seconds
    /// before the measured transfer (it already fills its path's queue
    /// when the transfer begins). The lab bench starts both together (0).
    pub cross_lead_s: f64,
    /// Start each braid mode's transfer only once every path of the
    /// tunnel is up, waiting at most this many seconds after the tunnel
    /// is established (0: as soon as it is; the lab bench's transfer
    /// starts with iperf3, by when the paths are usually up). A
    /// bond's paths come up one handshake apart, and a far path hundreds
    /// of milliseconds after a near one; a transfer begun before then has
    /// its first flight on the near paths alone, which sets the inner
    /// TCP's minimum round trip (README, "Random path sets"). A tunnel
    /// that is up before its first transfer, as a bond usually is, starts
    /// with every path measured by its keepalives.
    pub wait_paths_s: f64,
    /// The tunnel idles this many seconds after it is established before
    /// each braid mode's transfer starts (0: it does not). A bond in use
    /// was up before the transfer and has measured its paths' rates with
    /// its rate probes (`braid_core::conn::ConnConfig::rate_probe_pairs`).
    /// The modes without a tunnel start their transfer this late too, so
    /// that a path that changes during the run (a lab file's `trace`)
    /// changes at the same point of every mode's transfer
    /// (`CrossFlow::with_head_start`).
    pub idle_s: f64,
    /// The braid modes' transfer opens with a SYN and a SYN-ACK through
    /// the tunnel, as a real TCP connection does, and starts when the
    /// SYN-ACK arrives (the SYN is sent again after 1 s, 2 s, ...).
    /// Without it the simulated TCP starts sending data at once (ns-2's
    /// one-way TCP has no handshake). What differs: the tunnel's startup
    /// hold keeps a new tunnel's first connection opening back until
    /// every path is up and measured (`braid_core::conn` startup), as in
    /// the lab; a first packet of data ends the hold at once.
    pub handshake: bool,
}

impl Default for LabRunOptions {
    fn default() -> Self {
        LabRunOptions {
            duration_s: 15.0,
            omit_s: 2.0,
            seed: 1,
            rwnd_pkts: 4096,
            from_s: None,
            cross_tcp: None,
            cross_lead_s: 0.0,
            wait_paths_s: 0.0,
            idle_s: 0.0,
            handshake: false,
        }
    }
}

/// One mode's outcome, as the lab bench reports it plus exact counts.
#[derive(Clone, Debug, Serialize)]
pub struct LabResult {
    pub mode: String,
    pub goodput_mbps: f64,
    pub share_of_sum: f64,
    /// With [`LabRunOptions::from_s`]: goodput from that second on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_from_mbps: Option<f64>,
    /// The same as a share of the sum of the path rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_from: Option<f64>,
    /// IP rate each path's uplink delivered during the transfer.
    pub path_mbps: Vec<f64>,
    /// With [`LabRunOptions::from_s`]: the same from that second on (the
    /// tunnel modes; the steady split of the paths, Phatak et al. eq 14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_from_mbps: Option<Vec<f64>>,
    pub retransmits: u64,
    pub dupacks: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    /// Data segments the inner TCP sent that never reached its receiver
    /// (not counting those unacknowledged at the end), over all it sent:
    /// the loss TCP saw through the tunnel or on the path.
    pub residual_loss: f64,
    /// Packets the links dropped (queue, loss, down), uplink.
    pub link_drops: u64,
    /// With [`LabRunOptions::cross_tcp`]: the goodput of the competing
    /// flow, Mbit/s, over the measured interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_tcp_mbps: Option<f64>,
    /// Simulated seconds per wall-clock second.
    #[serde(skip)]
    pub speed: f64,
    /// Datagrams (or packets) carried by the links.
    #[serde(skip)]
    pub packets: u64,
}

/// `{"scenario", "ceiling_share", "sum_mbps", "results": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub struct LabReport {
    pub scenario: String,
    pub ceiling_share: f64,
    pub sum_mbps: f64,
    pub results: Vec<LabResult>,
}

/// The best share the tunnel allows: TCP payload (inner MTU 1438 less
/// 52 bytes of TCP/IP headers) over the 1474 bytes the full-size packet
/// takes on the path with its headers compressed
/// (`braid_core::compress`).
pub fn ceiling_share() -> f64 {
    let inner = braid_core::conn::DEFAULT_INNER_MTU as f64;
    let on_path = 1500.0 - braid_core::compress::header::MAX_GAIN as f64;
    (inner - HEADER_BYTES as f64) / on_path
}

/// The lab emulator's seed for path `i`, direction `dir` (as
/// `braid-lab`'s emulator derives it), so that random loss is the same.
pub fn link_seed(base: u64, i: usize, dir: Direction) -> u64 {
    let k = (i as u64) * 2 + (dir == Direction::Down) as u64;
    base.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(k.wrapping_mul(0xD1B5_4A32_D192_ED03) + 1)
}

/// The shared model's parameters of path `i`, direction `dir`.
pub fn link_params(cfg: &LabConfig, i: usize, dir: Direction) -> LinkParams {
    let d = cfg.resolve(i, dir);
    let mut p = LinkParams::new(d.rate_bps / 1e6, d.delay_s * 1e3, d.queue_bytes);
    p.ecn_mark_bytes = d.ecn_mark_bytes;
    // The lab's retransmission jitter (`rlc` on a path): the same model.
    // `braid_net::Link` seeds it with this seed xor the link's seed and
    // its own constant, which this cancels: the stream is the lab
    // emulator's, the link's seed xor `RLC_STREAM` (`braid_lab::link`).
    p.rlc = d.rlc.map(|r| RlcParams {
        block_error: r.block_error,
        retx_ms: r.retx_ms,
        max_attempts: r.max_attempts,
        seed: braid_lab::link::RLC_STREAM ^ braid_net::link::RLC_SEED_MIX,
        release_gap_ns: braid_lab::link::RLC_RELEASE_GAP.as_nanos() as u64,
    });
    match d.loss {
        LossSpec::None => {}
        LossSpec::Bernoulli(l) => p.loss = l,
        LossSpec::Gilbert(g) => {
            p.gilbert = Some(GilbertParams {
                p_good_bad: g.p_good_bad,
                p_bad_good: g.p_bad_good,
                loss_bad: g.loss_bad,
                loss_good: g.loss_good,
            })
        }
    }
    p.trace = d
        .trace
        .iter()
        .map(|s| TraceStep {
            at_s: s.at_s,
            rate_mbit: s.rate_bps.map(|r| r / 1e6),
            delay_ms: s.delay_s.map(|d| d * 1e3),
            loss: s.loss,
            up: None,
        })
        .collect();
    p
}

/// Runs every mode on the lab file's paths.
pub fn run_lab(cfg: &LabConfig, modes: &[LabMode], opts: &LabRunOptions) -> LabReport {
    let sum = cfg.sum_rate_mbit(Direction::Up);
    let results = modes
        .iter()
        .map(|&m| {
            let out = match m {
                LabMode::SingleBest => {
                    let best = cfg.best_path(Direction::Up);
                    run_direct(cfg, &[best], opts)
                }
                LabMode::Mptcp => {
                    let all: Vec<usize> = (0..cfg.paths.len()).collect();
                    run_direct(cfg, &all, opts)
                }
                LabMode::Braid(kind) => run_tunnel(cfg, kind, opts),
                LabMode::Send => run_send(cfg, opts),
            };
            out.into_result(m.name(), sum)
        })
        .collect();
    LabReport {
        scenario: cfg.name.clone(),
        ceiling_share: ceiling_share(),
        sum_mbps: sum,
        results,
    }
}

/// The TCP the lab's iperf3 runs (see [`TcpConfig::linux`]) for packets
/// of `mtu` bytes.
pub fn lab_tcp(mtu: u32, opts: &LabRunOptions) -> TcpConfig {
    TcpConfig::linux(mtu - HEADER_BYTES, opts.rwnd_pkts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_errors_list_the_choices() {
        assert_eq!(LabMode::parse("single-best"), Ok(LabMode::SingleBest));
        assert_eq!(
            LabMode::parse("braid-pet"),
            Ok(LabMode::Braid(SchedulerKind::Pet))
        );
        let e = LabMode::parse("braid-foo").unwrap_err();
        assert!(e.contains("braid-pet") && e.contains("single-best"), "{e}");
        assert!((ceiling_share() - 1386.0 / 1474.0).abs() < 1e-12);
    }

    fn lab(name: &str) -> LabConfig {
        braid_lab::shipped(name).unwrap()
    }

    /// The simulated paths of `lab/bursty-ecn.toml` mark as the emulator's
    /// do: fed the same arrivals (1428-byte datagrams at 14 Mbit/s into a
    /// 10 Mbit/s path, every other one ECN-capable, for 1.5 s), the shared
    /// model (`braid-net`, seeded as the simulator seeds it) and the lab's
    /// link (seeded as the emulator seeds it) deliver, mark and drop the
    /// same packets at the same instants. Only ECN-capable packets are
    /// marked, only once the queue holds more than `ecn_mark_bytes`, and
    /// the plain `lab/bursty.toml` marks nothing.
    #[test]
    fn marking_queues_of_a_lab_file_mark_as_the_emulator_does() {
        use braid_core::time::Instant;
        use braid_lab::link::{Link as EmuLink, Verdict as EmuVerdict};
        use braid_net::{Link, Verdict};
        let ecn = lab("bursty-ecn");
        let plain = lab("bursty");
        let seed = ecn.seed.unwrap_or(1);
        let t0 = std::time::Instant::now();
        for i in 0..ecn.paths.len() {
            let d = ecn.resolve(i, Direction::Up);
            assert_eq!(d.ecn_mark_bytes, Some(31_250));
            let s = link_seed(seed, i, Direction::Up);
            let mut sim = Link::new(&link_params(&ecn, i, Direction::Up), s, Instant::ZERO);
            let mut emu = EmuLink::new(&d, s, t0);
            let mut unmarked = Link::new(&link_params(&plain, i, Direction::Up), s, Instant::ZERO);
            let gap_ns = (1428.0 * 8.0 / 14e6 * 1e9) as u64;
            let (mut marks, mut drops) = (0u64, 0u64);
            for k in 0..(1_500_000_000 / gap_ns) {
                let at = k * gap_ns;
                let ect = k % 2 == 0;
                let a = sim.offer(Instant::from_nanos(at), 1428, ect);
                let b = emu.offer_ecn(t0 + std::time::Duration::from_nanos(at), 1428, ect);
                match (a, b) {
                    (
                        Verdict::Deliver { at: x, ce },
                        EmuVerdict::Deliver(y) | EmuVerdict::Mark(y),
                    ) => {
                        assert_eq!(ce, matches!(b, EmuVerdict::Mark(_)), "path {i} packet {k}");
                        let y = (y - t0).as_nanos() as u64;
                        assert!(x.as_nanos().abs_diff(y) <= 1, "path {i} packet {k}");
                        assert!(!ce || ect, "a packet that is not ECN-capable was marked");
                        marks += ce as u64;
                    }
                    (Verdict::Dropped(braid_net::Drop::Queue), EmuVerdict::DropQueue)
                    | (Verdict::Dropped(braid_net::Drop::Loss), EmuVerdict::DropLoss) => drops += 1,
                    (a, b) => panic!("path {i} packet {k}: simulated {a:?}, emulated {b:?}"),
                }
                unmarked.offer(Instant::from_nanos(at), 1428, ect);
            }
            assert!(
                marks > 100 && drops > 10,
                "path {i}: {marks} marks, {drops} drops"
            );
            assert_eq!(sim.stats.ce_marks, marks);
            assert_eq!(unmarked.stats.ce_marks, 0, "bursty.toml does not mark");
            // A mark only labels a packet: an open-loop source fills the
            // queue the same, and the same packets overflow it.
            assert_eq!(unmarked.stats.drops_queue, sim.stats.drops_queue);
        }
    }

    /// The simulated paths of `lab/jitter.toml` retransmit as the
    /// emulator's do: fed the same arrivals (1428-byte datagrams at the
    /// path's rate for 2 s), the shared model (`braid-net`, seeded as the
    /// simulator seeds it) and the lab's link (seeded as the emulator seeds
    /// it) deliver every packet at the same instant. The jitter is there:
    /// about one packet in ten is 8 ms or more later than the one before
    /// it left plus the path's delay, a few 16 ms, and deliveries stay in
    /// sequence; no packet is lost to it.
    #[test]
    fn jittery_links_of_a_lab_file_retransmit_as_the_emulator_does() {
        use braid_core::time::Instant;
        use braid_lab::link::{Link as EmuLink, Verdict as EmuVerdict};
        use braid_net::{Link, Verdict};
        let cfg = lab("jitter");
        let seed = cfg.seed.unwrap_or(1);
        let t0 = std::time::Instant::now();
        for i in 0..cfg.paths.len() {
            for dir in Direction::BOTH {
                let d = cfg.resolve(i, dir);
                let r = d.rlc.expect("jitter.toml sets rlc on every path");
                let s = link_seed(seed, i, dir);
                let mut sim = Link::new(&link_params(&cfg, i, dir), s, Instant::ZERO);
                let mut emu = EmuLink::new(&d, s, t0);
                let gap_ns = (1428.0 * 8.0 / d.rate_bps * 1e9) as u64;
                let (mut late, mut later, mut last) = (0u64, 0u64, 0u64);
                let n = 2_000_000_000 / gap_ns;
                for k in 0..n {
                    let at = k * gap_ns;
                    let a = sim.offer(Instant::from_nanos(at), 1428, false);
                    let b = emu.offer_ecn(t0 + std::time::Duration::from_nanos(at), 1428, false);
                    let (Verdict::Deliver { at: x, .. }, EmuVerdict::Deliver(y)) = (a, b) else {
                        panic!("path {i} {dir} packet {k}: simulated {a:?}, emulated {b:?}");
                    };
                    let y = (y - t0).as_nanos() as u64;
                    assert!(x.as_nanos().abs_diff(y) <= 1, "path {i} {dir} packet {k}");
                    assert!(y >= last, "in sequence");
                    last = y;
                    // Its own serialization ends (k + 1) gaps in; past
                    // that and the delay, what is left is retransmission.
                    let base = at + gap_ns + (d.delay_s * 1e9) as u64;
                    let extra = y.saturating_sub(base);
                    late += (extra >= (r.retx_ms * 1e6) as u64 - 1_000) as u64;
                    later += (extra >= (2.0 * r.retx_ms * 1e6) as u64 - 1_000) as u64;
                }
                let (late, later) = (late as f64 / n as f64, later as f64 / n as f64);
                // Own retransmissions (0.1) plus the packets held behind them.
                assert!((0.1..0.5).contains(&late), "path {i} {dir}: {late}");
                assert!(later > 0.005 && later < late, "path {i} {dir}: {later}");
            }
        }
    }
}
