//! Building a run: links of the PET/BMP topology, the flows of the
//! scheme under test and of the cross traffic, and the braid endpoints.

use braid_core::flow::RetransmitDetector;
use braid_core::path::{PathId, PathParams};
use braid_core::receiver::{Receiver, ReceiverConfig};
use braid_core::reorder::{ReorderConfig, ReorderMode};
use braid_core::sched::SchedulerKind;
use braid_core::sender::{Sender, SenderConfig};
use braid_core::time::{Duration, Instant};

use super::{Braid, Ev, Flow, FlowRole, World};
use crate::cross::{self, CrossKind};
use crate::event::EventQueue;
use crate::link::{Discipline, Link, LinkSpec};
use crate::packet::{Dst, Packet, Route};
use crate::rng::stream;
use crate::scenario::{Scenario, Scheme};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};

fn kbps_to_bps(k: f64) -> f64 {
    k * 1000.0
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

impl World {
    /// Builds the run of `scheme` (not HBI, which is derived from MTCP).
    pub fn new(sc: &Scenario, scheme: Scheme, seed: u64, cross_index: u32) -> World {
        let tcp = sc.tcp.config();
        let mut links: Vec<Link<Packet>> = Vec::new();
        let mut add = |spec: LinkSpec| {
            links.push(Link::new(spec));
            (links.len() - 1) as u16
        };
        let fifo = |rate_kbps: f64, delay_ms: f64| LinkSpec {
            rate_bps: kbps_to_bps(rate_kbps),
            delay: ms(delay_ms),
            queue_bytes: 1 << 40,
            loss: 0.0,
            discipline: Discipline::Fifo,
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
        for p in &paths {
            l_pb.push(add(fifo(p.wired_rate_kbps, p.wired_delay_ms)));
            l_bp.push(add(fifo(p.wired_rate_kbps, p.wired_delay_ms)));
            l_w.push(add(LinkSpec {
                rate_bps: kbps_to_bps(p.rate_kbps),
                delay: Duration::ZERO,
                queue_bytes: p.queue_bytes,
                loss: p.loss,
                discipline: Discipline::Wfq,
            }));
            l_wu.push(add(fifo(p.uplink_rate_kbps.unwrap_or(p.rate_kbps), 0.0)));
            l_xin.push(add(fifo(10_000.0, cross_delay)));
            l_xout.push(add(fifo(10_000.0, cross_delay)));
        }
        // TCP ACKs of the main connection return over the lowest-delay path.
        let ack_path = (0..paths.len())
            .min_by(|&a, &b| {
                paths[a]
                    .wired_delay_ms
                    .total_cmp(&paths[b].wired_delay_ms)
                    .then(paths[b].rate_kbps.total_cmp(&paths[a].rate_kbps))
            })
            .unwrap_or(0);

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
        };
        let mut braid = None;
        if scheme.tunnelled() {
            let i = 0u32;
            let fwd = Route::new(&[l_sp], Dst::Proxy);
            let rev = Route::new(&[l_wu[ack_path], l_bp[ack_path], l_ps], Dst::Src(i));
            flows.push(mk_flow(
                FlowRole::Main { path: u8::MAX },
                None,
                fwd,
                rev,
                i,
                &tcp,
            ));
            braid = Some(Self::build_braid(
                sc, scheme, &paths, &l_pb, &l_w, &l_wu, &l_bp,
            ));
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
        let mut w = World {
            q: EventQueue::default(),
            links,
            link_rng: stream(seed, &[0x11]),
            flows,
            timers: vec![None; n_nodes],
            braid,
            n_main,
            end: Instant::from_secs_f64(sc.duration_s),
            series: vec![vec![0.0; sc.duration_s.ceil() as usize]; n_paths],
            wireless: l_w,
            scratch: Vec::with_capacity(64),
            cross_spec: sc.cross.clone(),
            mss: tcp.mss_bytes,
        };
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

    fn build_braid(
        sc: &Scenario,
        scheme: Scheme,
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
            Scheme::Mtcp | Scheme::Asi | Scheme::Hbi => unreachable!("not tunnelled"),
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
                    ..Default::default()
                }))
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
            held: Default::default(),
        }
    }
}
