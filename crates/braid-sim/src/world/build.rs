//! Building a run: links of the PET/BMP topology, the flows of the
//! scheme under test and of the cross traffic, and the braid endpoints.

use braid_core::flow::RetransmitDetector;
use braid_core::path::{PathId, PathParams};
use braid_core::receiver::{Receiver, ReceiverConfig};
use braid_core::reorder::{ReorderConfig, ReorderMode};
use braid_core::rpc::{Rpc, RpcConfig};
use braid_core::sched::SchedulerKind;
use braid_core::sender::{Sender, SenderConfig};
use braid_core::time::{Duration, Instant};
use braid_net::{Discipline, LinkParams, QueuedLink, RlcParams};
use rand::Rng;

use super::{Braid, Ev, Flow, FlowRole, World};
use crate::cross::{self, CrossKind};
use crate::event::EventQueue;
use crate::packet::{Dst, Packet, Route};
use crate::rng::stream;
use crate::scenario::{RpcMode, Scenario, Scheme};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};

fn kbps_to_bps(k: f64) -> f64 {
    k * 1000.0
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

/// One link of the topology in `braid-net`'s parameters (the scenario
/// files give kbit/s).
fn link(
    rate_kbps: f64,
    delay_ms: f64,
    queue_bytes: u64,
    loss: f64,
    d: Discipline,
) -> QueuedLink<Packet> {
    radio_link(rate_kbps, delay_ms, queue_bytes, loss, d, None)
}

/// [`link`] with the radio link's retransmissions (`rlc`), if any.
fn radio_link(
    rate_kbps: f64,
    delay_ms: f64,
    queue_bytes: u64,
    loss: f64,
    d: Discipline,
    rlc: Option<RlcParams>,
) -> QueuedLink<Packet> {
    let p = LinkParams {
        loss,
        rlc,
        ..LinkParams::new(rate_kbps / 1000.0, delay_ms, queue_bytes)
    };
    QueuedLink::new(&p, d).unwrap_or_else(|e| panic!("{e} (Scenario::validate checks the files)"))
}

impl World {
    /// Builds the run of `scheme` (not HBI, which is derived from MTCP).
    pub fn new(sc: &Scenario, scheme: Scheme, seed: u64, cross_index: u32) -> World {
        let tcp = sc.tcp.config();
        let mut links: Vec<QueuedLink<Packet>> = Vec::new();
        let mut add = |l: QueuedLink<Packet>| {
            links.push(l);
            (links.len() - 1) as u16
        };
        // Wired hops and uplinks: FIFO, never full.
        let fifo = |rate_kbps: f64, delay_ms: f64| {
            link(rate_kbps, delay_ms, u64::MAX, 0.0, Discipline::Fifo)
        };
        let l_sp = add(fifo(sc.server.rate_kbps, sc.server.delay_ms));
        let l_ps = add(fifo(sc.server.rate_kbps, sc.server.delay_ms));

        // ASI replaces the paths by one of the aggregate capacity.
        let paths: Vec<crate::scenario::PathSpec> = if scheme == Scheme::Asi {
            // Template: the path with the shortest wired delay.
            let mut p = sc
                .paths
                .iter()
                .min_by(|a, b| a.wired_delay_ms.total_cmp(&b.wired_delay_ms))
                .expect("validated")
                .clone();
            p.rate_kbps = sc.paths.iter().map(|p| p.rate_kbps).sum();
            p.queue_bytes = sc.paths.iter().map(|p| p.queue_bytes).sum();
            p.uplink_rate_kbps = None;
            vec![p]
        } else {
            sc.paths.clone()
        };
        let (mut l_pb, mut l_bp, mut l_w, mut l_wu, mut l_xin, mut l_xout) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let cross_delay = sc.cross.as_ref().map_or(65.0, |c| c.delay_ms);
        for (k, p) in paths.iter().enumerate() {
            l_pb.push(add(fifo(p.wired_rate_kbps, p.wired_delay_ms)));
            l_bp.push(add(fifo(p.wired_rate_kbps, p.reverse_delay_ms())));
            // The wireless bottleneck: the base station's fair queue, and
            // the member's RLC retransmissions if the file gives them (on
            // a stream of their own, so the other draws stay as they are).
            let rlc = p.rlc.map(|r| RlcParams {
                seed: r.seed ^ stream(seed, &[0x12, k as u64]).gen::<u64>(),
                ..r
            });
            l_w.push(add(radio_link(
                p.rate_kbps,
                0.0,
                p.queue_bytes,
                p.loss,
                Discipline::Wfq,
                rlc,
            )));
            l_wu.push(add(fifo(p.uplink_rate_kbps.unwrap_or(p.rate_kbps), 0.0)));
            l_xin.push(add(fifo(10_000.0, cross_delay)));
            l_xout.push(add(fifo(10_000.0, cross_delay)));
        }
        // TCP ACKs of the main connection return over the path with the
        // shortest way back unless the scenario names one.
        let ack_path = sc
            .prism
            .ack_path
            .filter(|&p| p < paths.len())
            .unwrap_or_else(|| {
                (0..paths.len())
                    .min_by(|&a, &b| {
                        paths[a]
                            .reverse_delay_ms()
                            .total_cmp(&paths[b].reverse_delay_ms())
                            .then(paths[b].rate_kbps.total_cmp(&paths[a].rate_kbps))
                    })
                    .unwrap_or(0)
            });

        let mut flows = Vec::new();
        let mk_flow = |role: FlowRole,
                       total: Option<u64>,
                       fwd: Route,
                       rev: Route,
                       index: u32,
                       cfg: &TcpConfig| Flow {
            tx: TcpSender::new(cfg.clone(), index, total),
            rx: TcpReceiver::new(cfg, index),
            role,
            fwd,
            rev,
            gen: 0,
            started: false,
            web_rng: None,
            delivered_before: 0,
            at_warmup: None,
        };
        let mut braid = None;
        if scheme.tunnelled() {
            let i = 0u32;
            let fwd = Route::new(&[l_sp], Dst::Proxy);
            let (rpc_mode, tcp_prism) = prism_setup(sc, scheme);
            let rev = if rpc_mode == RpcMode::Off {
                Route::new(&[l_wu[ack_path], l_bp[ack_path], l_ps], Dst::Src(i))
            } else {
                // The controller at the proxy sees the ACKs first.
                Route::new(&[l_wu[ack_path], l_bp[ack_path]], Dst::Proxy)
            };
            let mut main_tcp = tcp.clone();
            main_tcp.prism = tcp_prism;
            if scheme == Scheme::VanillaLinux {
                main_tcp.reordering = true;
                main_tcp.timestamps = true;
            }
            flows.push(mk_flow(
                FlowRole::Main { path: u8::MAX },
                None,
                fwd,
                rev,
                i,
                &main_tcp,
            ));
            let mut b = Self::build_braid(sc, scheme, seed, &paths, &l_pb, &l_w, &l_wu, &l_bp);
            b.to_src = Route::new(&[l_ps], Dst::Src(i));
            if rpc_mode != RpcMode::Off {
                let hold = sc.prism.max_hold_ms;
                let mut r = Rpc::new(RpcConfig {
                    capacity: (u64::from(tcp.max_cwnd_pkts) * 4).max(1024),
                    loss_detection: rpc_mode == RpcMode::Full,
                    max_hold: (hold > 0.0 && scheme != Scheme::PrismPartial).then(|| ms(hold)),
                });
                for (k, p) in paths.iter().enumerate() {
                    let joined = p.active_s.is_none_or(|[a, _]| a <= 0.0);
                    r.set_link_rate(PathId(k as u8), joined.then_some(kbps_to_bps(p.rate_kbps)));
                }
                b.rpc = Some(r);
            }
            braid = Some(b);
        } else {
            for (k, _) in paths.iter().enumerate() {
                let i = flows.len() as u32;
                let fwd = Route::new(&[l_sp, l_pb[k], l_w[k]], Dst::Sink(i));
                let rev = Route::new(&[l_wu[k], l_bp[k], l_ps], Dst::Src(i));
                flows.push(mk_flow(
                    FlowRole::Main { path: k as u8 },
                    None,
                    fwd,
                    rev,
                    i,
                    &tcp,
                ));
            }
        }
        let n_main = flows.len();
        if let Some(cs) = &sc.cross {
            for src in cross::draw(
                cs,
                paths.len(),
                cross_index,
                seed,
                sc.duration_s,
                tcp.mss_bytes,
            ) {
                let i = flows.len() as u32;
                let fwd = Route::new(&[l_xin[src.bs], l_w[src.bs]], Dst::Sink(i));
                let rev = Route::new(&[l_wu[src.bs], l_xout[src.bs]], Dst::Src(i));
                let (role, total) = match src.kind {
                    CrossKind::Ftp { packets, start_s } => {
                        (FlowRole::Ftp { start_s }, Some(packets))
                    }
                    CrossKind::Web { stream } => (FlowRole::Web { stream }, Some(1)),
                };
                let mut f = mk_flow(role, total, fwd, rev, i, &tcp);
                if let FlowRole::Web { stream } = f.role {
                    f.web_rng = Some(cross::web_rng(seed, cross_index, stream));
                }
                flows.push(f);
            }
        }
        let n_nodes = 2 * flows.len() + 2;
        let n_paths = paths.len();
        let onoff: Vec<super::prism::OnOff> = sc
            .onoff
            .iter()
            .enumerate()
            .filter(|(_, o)| o.path < paths.len())
            .map(|(k, o)| super::prism::OnOff {
                route: World::onoff_route(l_w[o.path]),
                rng: stream(seed, &[0x0F, k as u64]),
                gap: braid_core::time::tx_time(o.packet_bytes, kbps_to_bps(o.rate_kbps)),
                len: o.packet_bytes,
                on_mean_s: o.on_mean_s,
                shape: o.shape,
                off: Duration::from_secs_f64(o.off_s),
                on_until: None,
            })
            .collect();
        let mut w = World {
            q: EventQueue::default(),
            links,
            link_rng: stream(seed, &[0x11]),
            flows,
            timers: vec![None; n_nodes],
            braid,
            n_main,
            end: Instant::from_secs_f64(sc.duration_s),
            warmup: Instant::from_secs_f64(sc.warmup_s),
            series: vec![vec![0.0; sc.duration_s.ceil() as usize]; n_paths],
            wireless: l_w,
            scratch: Vec::with_capacity(64),
            cross_spec: sc.cross.clone(),
            mss: tcp.mss_bytes,
            onoff,
            path_rates_bps: paths.iter().map(|p| kbps_to_bps(p.rate_kbps)).collect(),
            rcv_high: 0,
            buffer_sum: 0.0,
            buffer_samples: 0,
            goodput_series: vec![0.0; sc.duration_s.ceil() as usize],
        };
        for k in 0..w.onoff.len() {
            // Each source starts with an off period.
            let off = w.onoff[k].off;
            w.q.push(Instant::ZERO + off, Ev::OnOff(k as u16));
        }
        if w.braid.is_some() {
            for (k, p) in paths.iter().enumerate() {
                let Some([join, leave]) = p.active_s else {
                    continue;
                };
                if join > 0.0 {
                    w.path_active(Instant::ZERO, k as u8, false);
                    w.q.push(Instant::from_secs_f64(join), Ev::PathActive(k as u8, true));
                }
                if leave < sc.duration_s {
                    w.q.push(
                        Instant::from_secs_f64(leave),
                        Ev::PathActive(k as u8, false),
                    );
                }
            }
        }
        for i in 0..w.flows.len() {
            let at = match (&w.flows[i].role, sc.cross.as_ref()) {
                (FlowRole::Main { .. }, _) => Instant::ZERO,
                (FlowRole::Ftp { start_s }, _) => Instant::from_secs_f64(*start_s),
                (FlowRole::Web { .. }, Some(cs)) => {
                    let rng = w.flows[i].web_rng.as_mut().unwrap();
                    Instant::from_secs_f64(cross::think_s(rng, cs.web_think_mean_s))
                }
                (FlowRole::Web { .. }, None) => unreachable!("web flows come from a cross spec"),
            };
            w.q.push(at, Ev::Start(i as u32));
        }
        w
    }

    #[allow(clippy::too_many_arguments)]
    fn build_braid(
        sc: &Scenario,
        scheme: Scheme,
        seed: u64,
        paths: &[crate::scenario::PathSpec],
        l_pb: &[u16],
        l_w: &[u16],
        l_wu: &[u16],
        l_bp: &[u16],
    ) -> Braid {
        let (kind, bmp) = match scheme {
            Scheme::Edpf => (SchedulerKind::Edpf, false),
            Scheme::Wrr => (SchedulerKind::WeightedRoundRobin, false),
            Scheme::WrrBmp => (SchedulerKind::WeightedRoundRobin, true),
            Scheme::PetBmp => (SchedulerKind::Pet, true),
            Scheme::Pet => (SchedulerKind::Pet, false),
            Scheme::MinRttBmp => (SchedulerKind::MinRtt, true),
            Scheme::Srr => (SchedulerKind::WeightedRoundRobin, false),
            Scheme::SrrBmp => (SchedulerKind::WeightedRoundRobin, true),
            Scheme::Adas => (SchedulerKind::Adas, false),
            Scheme::AdasBmp => (SchedulerKind::Adas, true),
            Scheme::Prism | Scheme::PrismPartial | Scheme::Vanilla | Scheme::VanillaLinux => {
                (SchedulerKind::Adas, false)
            }
            Scheme::Rr => (SchedulerKind::RoundRobin, false),
            // The Fig 12 baselines are simulator schedulers (below); they
            // are told the nominal rates as ADAS is.
            Scheme::Random | Scheme::HrttOnly | Scheme::UOnly => (SchedulerKind::Adas, false),
            Scheme::Mtcp | Scheme::Asi | Scheme::Hbi | Scheme::NoProxy => {
                unreachable!("not tunnelled")
            }
        };
        let b = &sc.braid;
        let mut scfg = SenderConfig::default();
        scfg.estimators.bw_weight_new = b.bw_weight_new;
        // A pair on a path not yet measured leaves back to back, as in the
        // shipped tunnel (see `SenderConfig::hold_unmeasured_pairs`): a TCP
        // flow clocked at one path's rate otherwise spaces every pair for
        // another path by its own service time, and that path is never
        // measured (Phatak et al. Fig 4, PET-BMP).
        scfg.hold_unmeasured_pairs = b.hold_unmeasured_pairs;
        let sched: Box<dyn braid_core::sched::Scheduler> = match kind {
            SchedulerKind::Pet => {
                Box::new(braid_core::sched::Pet::new(braid_core::sched::PetConfig {
                    probe_interval: ms(b.probe_interval_ms),
                    // The papers' TCP agents have no HyStart, the delay
                    // rise this rule keeps from the inner TCP; with it on,
                    // estimate noise between Table I's equal-delay paths
                    // raised the 50 kbit/s one (14 % of the sum) and cost
                    // PET-BMP 5 % (317 against 334 kbit/s).
                    near_floor: false,
                    ..Default::default()
                }))
            }
            _ if scheme == Scheme::Random => {
                Box::new(crate::prism::RandomLink::new(stream(seed, &[0x5C])))
            }
            _ if scheme == Scheme::HrttOnly => Box::new(crate::prism::HrttOnly),
            _ if scheme == Scheme::UOnly => Box::new(crate::prism::UOnly),
            _ if scheme == Scheme::Wrr && sc.prism.wrr_rounds => {
                Box::new(crate::prism::RoundWrr::default())
            }
            k => k.build(),
        };
        let mut sender = Sender::new(scfg, sched);
        for (i, p) in paths.iter().enumerate() {
            // Only the idealised schemes are told the truth; PET must estimate.
            // ADAS is given the nominal rates it weighs links by (PRISM
            // Section 4.2.1), but not the delays: its hRTT is measured.
            let params = match kind {
                SchedulerKind::Adas => PathParams {
                    rate_bps: Some(kbps_to_bps(p.rate_kbps)),
                    delay: None,
                },
                SchedulerKind::Edpf | SchedulerKind::WeightedRoundRobin => PathParams {
                    rate_bps: Some(kbps_to_bps(p.rate_kbps)),
                    delay: Some(ms(p.wired_delay_ms)),
                },
                _ => PathParams::default(),
            };
            sender.add_path(PathId(i as u8), params);
        }
        let rcfg = ReceiverConfig {
            reorder: ReorderConfig {
                mode: if bmp {
                    ReorderMode::Bmp
                } else {
                    ReorderMode::Off
                },
                loss_timeout: ms(b.loss_timeout_ms),
                pace_fraction: b.pace_fraction,
                max_buffer_bytes: b.max_buffer_bytes,
                ..Default::default()
            },
            feedback_max_entries: b.feedback_max_entries.clamp(1, 4),
            feedback_max_delay: Duration::from_millis(if b.feedback_max_entries > 1 {
                5
            } else {
                0
            }),
            // The paper's model: one bound for every report.
            ..ReceiverConfig::default()
        };
        let mut receiver = Receiver::new(rcfg);
        for i in 0..paths.len() {
            receiver.add_path(Instant::ZERO, PathId(i as u8));
        }
        Braid {
            sender,
            receiver,
            retx: RetransmitDetector::new(1024),
            overhead: b.tunnel_overhead_bytes,
            down: (0..paths.len())
                .map(|i| Route::new(&[l_pb[i], l_w[i]], Dst::Client))
                .collect(),
            up: (0..paths.len())
                .map(|i| Route::new(&[l_wu[i], l_bp[i]], Dst::Proxy))
                .collect(),
            rpc: None,
            to_src: Route::new(&[], Dst::Proxy),
        }
    }
}

/// The reverse-path controller and TCP a scheme runs (PRISM Sections 5-6).
fn prism_setup(sc: &Scenario, scheme: Scheme) -> (RpcMode, bool) {
    match scheme {
        Scheme::Prism => (RpcMode::Full, true),
        Scheme::PrismPartial => (RpcMode::Partial, false),
        Scheme::Vanilla | Scheme::VanillaLinux => (RpcMode::Off, false),
        Scheme::Adas
        | Scheme::Wrr
        | Scheme::Rr
        | Scheme::Random
        | Scheme::HrttOnly
        | Scheme::UOnly => {
            let m = sc.prism.rpc;
            (m, m == RpcMode::Full && sc.prism.tcp_prism)
        }
        _ => (RpcMode::Off, false),
    }
}
