//! The event loop of the lab modes without the tunnel: TCP directly over
//! one path (`single-best`) or one connection per path (`mptcp`, as
//! uncoupled subflows).

use braid_core::time::Instant;
use braid_lab::config::{Direction, LabConfig};
use braid_net::Link;

use super::cross::CrossFlow;
use super::world::{link_drops, links, secs, Outcome};
use super::{lab_tcp, LabRunOptions};
use crate::event::EventQueue;
use crate::tcp::{Segment, TcpReceiver, TcpSender, TcpSenderStats};

enum Direct {
    Seg(usize, Segment),
    Ack(usize, crate::tcp::Ack),
}

/// TCP directly over paths `paths`, one connection per path (one path:
/// the lab's single-best; all: uncoupled MPTCP subflows).
pub fn run_direct(cfg: &LabConfig, paths: &[usize], opts: &LabRunOptions) -> Outcome {
    let wall = std::time::Instant::now();
    let tcp = lab_tcp(1500, opts);
    let mut up = links(cfg, Direction::Up);
    let mut down = links(cfg, Direction::Down);
    let mut tx: Vec<TcpSender> = (0..paths.len())
        .map(|f| TcpSender::new(tcp.clone(), f as u32, None))
        .collect();
    let mut rx: Vec<TcpReceiver> = (0..paths.len())
        .map(|f| TcpReceiver::new(&tcp, f as u32))
        .collect();
    let mut q: EventQueue<Direct> = EventQueue::default();
    let mut segs = Vec::new();
    let mut packets = 0u64;
    let mut arrived = 0u64;
    let (mut cross, t0) = CrossFlow::with_head_start(opts, &mut up, &mut down);
    let mut now = t0;
    let up0: Vec<u64> = up.iter().map(|l| l.stats.delivered_bytes).collect();
    let send = |now: Instant,
                f: usize,
                segs: &mut Vec<Segment>,
                up: &mut Vec<Link>,
                q: &mut EventQueue<Direct>,
                packets: &mut u64| {
        for mut s in segs.drain(..) {
            *packets += 1;
            if let braid_net::Verdict::Deliver { at, ce } =
                up[paths[f]].offer(now, u64::from(s.wire_bytes), s.ect)
            {
                s.ce |= ce;
                q.push(at, Direct::Seg(f, s));
            }
        }
    };
    for (f, t) in tx.iter_mut().enumerate() {
        t.start(now, &mut segs);
        send(now, f, &mut segs, &mut up, &mut q, &mut packets);
    }
    let omit = t0 + secs(opts.omit_s);
    let end = t0 + secs(opts.duration_s);
    let mut b0: Option<u64> = None;
    let from = opts.from_s.map(|f| t0 + secs(f));
    let mut bf: Option<u64> = None;
    loop {
        let timers = tx
            .iter()
            .filter_map(|t| t.poll_timeout())
            .chain(rx.iter().filter_map(|r| r.poll_timeout()))
            .chain(cross.as_ref().and_then(CrossFlow::poll_timeout));
        let Some(t) = q.peek_time().into_iter().chain(timers).min() else {
            break;
        };
        if b0.is_none() && t > omit {
            b0 = Some(rx.iter().map(|r| r.delivered_bytes()).sum());
            if let Some(c) = cross.as_mut() {
                c.mark_omit(omit);
            }
        }
        if bf.is_none() && from.is_some_and(|f| t > f) {
            bf = Some(rx.iter().map(|r| r.delivered_bytes()).sum());
        }
        if t > end {
            break;
        }
        now = now.max(t);
        while q.peek_time().is_some_and(|t| t <= now) {
            let Some((_, e)) = q.pop() else { break };
            match e {
                Direct::Seg(f, s) => {
                    arrived += 1;
                    if let Some(a) = rx[f].on_segment(now, &s) {
                        packets += 1;
                        if let Some(at) = down[paths[f]]
                            .offer(now, u64::from(a.wire_bytes), false)
                            .delivered_at()
                        {
                            q.push(at, Direct::Ack(f, a));
                        }
                    }
                }
                Direct::Ack(f, a) => {
                    tx[f].on_ack(now, &a, &mut segs);
                    send(now, f, &mut segs, &mut up, &mut q, &mut packets);
                }
            }
        }
        if let Some(c) = cross.as_mut() {
            c.advance(now, &mut up, &mut down);
        }
        for f in 0..tx.len() {
            if tx[f].poll_timeout().is_some_and(|t| t <= now) {
                tx[f].handle_timeout(now, &mut segs);
                send(now, f, &mut segs, &mut up, &mut q, &mut packets);
            }
            if rx[f].poll_timeout().is_some_and(|t| t <= now) {
                if let Some(a) = rx[f].handle_timeout(now) {
                    if let Some(at) = down[paths[f]]
                        .offer(now, u64::from(a.wire_bytes), false)
                        .delivered_at()
                    {
                        q.push(at, Direct::Ack(f, a));
                    }
                }
            }
        }
    }
    let total: u64 = rx.iter().map(|r| r.delivered_bytes()).sum();
    let mut stats = TcpSenderStats::default();
    for t in &tx {
        let s = t.stats();
        stats.segments_sent += s.segments_sent;
        stats.retransmits += s.retransmits;
        stats.dupacks += s.dupacks;
        stats.timeouts += s.timeouts;
        stats.fast_retransmits += s.fast_retransmits;
        stats.packets_acked += s.packets_acked;
    }
    Outcome {
        bytes: total - b0.unwrap_or(total),
        seconds: opts.duration_s - opts.omit_s,
        from: opts
            .from_s
            .map(|f| (total - bf.unwrap_or(total), (opts.duration_s - f).max(0.0))),
        path_bytes: up
            .iter()
            .zip(&up0)
            .map(|(l, b)| l.stats.delivered_bytes - b)
            .collect(),
        path_from_bytes: None,
        transfer_seconds: opts.duration_s,
        segments_sent: stats.segments_sent,
        segments_arrived: arrived,
        segments_outstanding: tx.iter().map(|t| t.snd_max() - t.snd_una()).sum(),
        tcp: stats,
        link_drops: link_drops(&up),
        packets,
        wall_seconds: wall.elapsed().as_secs_f64(),
        sim_seconds: end.as_secs_f64(),
        cross_tcp_mbps: cross.map(|c| c.goodput_mbps(end)),
    }
}
